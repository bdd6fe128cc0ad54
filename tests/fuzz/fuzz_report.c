/*
 * fuzz_report.c - libFuzzer target: a trace read as `gpushim report` and
 * `gpushim report --json` read it (reader.c, replay.c, checkpoints, sites,
 * symbolizer), both reports written to /dev/null. The input is the trace
 * file; its last byte's low bit picks the native view instead of the
 * Python one, so both stack views are covered.
 */
#include <stdint.h>

#include "analyzer/symbols/symbols.h"
#include "analyzer/report/report.h"
#include "analyzer/report/load.h"
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
    struct gs_report rep = {.path = path, .info = &l.info, .stats = &l.st, .replay = &l.r,
                            .sym = l.sym, .opt = &text};
    gs_report_text(fuzz_null(), &rep);
    rep.opt = &json;
    gs_report_json(fuzz_null(), &rep);
    gs_loaded_free(&l);
    return 0;
}
