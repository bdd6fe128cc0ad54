/*
 * fuzz_multi.c - libFuzzer target: the commands over two traces, `gpushim
 * diff`, `gpushim plan` and `gpushim report` with two traces (ranks.c), as
 * the command line runs them, their output to /dev/null. The input is a
 * selector byte (its value modulo 3: diff, plan, ranks; its top bit:
 * --json, and for plan the batch sizes read from the marks), then a u32
 * little-endian length N, trace A (N bytes) and trace B (the rest).
 */
#include <stdint.h>

#include "analyzer/cmd/cmd.h"
#include "analyzer/report/incomplete.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *a, *b;
    size_t alen, blen;
    if (size < 1 || fuzz_split(data + 1, size - 1, &a, &alen, &b, &blen) != 0)
        return 0;
    fuzz_pick_reader(size);
    unsigned what = data[0] % 3;
    int json = data[0] >> 7;
    char pa[400], pb[400];
    snprintf(pa, sizeof pa, "%s", fuzz_file("a", a, alen));
    snprintf(pb, sizeof pb, "%s", fuzz_file("b", b, blen));
    if (what == 0) {
        char *argv[] = {"diff", json ? "--json" : "--top=5", pa, pb, NULL};
        gs_cmd_diff(4, argv);
    } else if (what == 1) {
        char sa[420], sb[420]; /* with --json the batch sizes come from the marks */
        snprintf(sa, sizeof sa, "%s%s", pa, json ? "" : ":4");
        snprintf(sb, sizeof sb, "%s%s", pb, json ? "" : ":8");
        char *argv[] = {"plan", json ? "--json" : "--card=80GB", sa, sb, NULL};
        gs_cmd_plan(4, argv);
    } else {
        char *paths[] = {pa, pb};
        gs_report_ranks(paths, 2, json, fuzz_null());
    }
    fflush(stdout);
    gs_incomplete_forget(); /* the traces' warnings: a command says them at its end */
    return 0;
}
