/*
 * fuzz_recover.c - libFuzzer target: the ring file of a trace whose process
 * died (recover.c), read as `gpushim report --json` reads it. The input is a
 * u32 little-endian length N, a trace of N bytes (written as "t") and the
 * rest, its ring file (written beside it as "t.ring").
 */
#include <stdint.h>

#include "analyzer/report/report.h"
#include "analyzer/report/load.h"
#include "analyzer/report/incomplete.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *trace, *ring;
    size_t tlen, rlen;
    if (fuzz_split(data, size, &trace, &tlen, &ring, &rlen) != 0)
        return 0;
    fuzz_pick_reader(size);
    fuzz_file("t.ring", ring, rlen);
    const char *path = fuzz_file("t", trace, tlen);
    struct gs_loaded l;
    if (gs_load("report", path, &l) != 0)
        return 0;
    struct gs_report_options opt = {.top = UINT32_MAX, .frames = 6};
    struct gs_findings found;
    gs_findings_make(&found, &l.info, &l.st, &l.r, l.sym, opt.view, NULL);
    struct gs_report rep = {.path = path, .info = &l.info, .stats = &l.st, .replay = &l.r,
                            .sym = l.sym, .opt = &opt, .found = &found};
    gs_report_json(fuzz_null(), &rep);
    gs_findings_free(&found);
    gs_loaded_free(&l);
    gs_incomplete_forget(); /* its warnings: a command says them at its end */
    return 0;
}
