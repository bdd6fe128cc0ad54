/*
 * fuzz_report.c - libFuzzer target: a trace read as `gpushim report` and
 * `gpushim report --json` read it (reader.c, replay.c, checkpoints, sites,
 * symbolizer), both reports written to /dev/null, then its what-if replay
 * (analyzer/whatif: the models of PyTorch's and, by the last byte's second
 * bit, XLA's allocator on a small card and the run's, as gpushim whatif and
 * the verdict run it). The input is the trace file; its last byte's low bit
 * picks the native view instead of the Python one, so both stack views are
 * covered.
 */
#include <stdint.h>
#include <string.h>

#include "analyzer/symbols/symbols.h"
#include "analyzer/report/report.h"
#include "analyzer/report/load.h"
#include "analyzer/report/whatif_report.h"
#include "analyzer/report/incomplete.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_pick_reader(size);
    const char *path = fuzz_file("trace", data, size);
    struct gs_loaded l;
    if (gs_load("report", path, &l) != 0)
        return 0;
    struct gs_report_options text = {.top = 10, .frames = 6};
    struct gs_report_options json = {.top = UINT32_MAX, .frames = 6};
    if (size && (data[size - 1] & 1))
        text.view = json.view = GS_VIEW_NATIVE;
    struct gs_findings found; /* as gs_report_prepare makes them, less the what-if replay */
    gs_findings_make(&found, &l.info, &l.st, &l.r, l.sym, text.view, NULL);
    struct gs_report rep = {.path = path, .info = &l.info, .stats = &l.st, .replay = &l.r,
                            .sym = l.sym, .opt = &text, .found = &found};
    gs_report_text(fuzz_null(), &rep);
    rep.opt = &json;
    gs_report_json(fuzz_null(), &rep);

    static struct gs_wi_question q;
    static struct gs_wi_answer a;
    memset(&q, 0, sizeof q);
    q.allocator = size && (data[size - 1] & 2) ? GS_WI_XLA : GS_WI_TORCH;
    q.ncards = 2;
    q.cards[0].run = 1;
    q.cards[1].bytes = 64ull << 20;
    char err[256];
    if (gs_wi_answer(path, &l.seen, &l.info, &l.r, &q, &a, err, sizeof err) == 0) {
        struct gs_wi_report wr = {.path = path, .a = &a, .r = &l.r, .sym = l.sym,
                                  .view = text.view};
        gs_whatif_text(fuzz_null(), &wr);
        gs_whatif_json(fuzz_null(), &wr);
        gs_wi_answer_free(&a);
    }
    gs_findings_free(&found);
    gs_loaded_free(&l);
    gs_incomplete_forget(); /* its warnings: a command says them at its end */
    return 0;
}
