/*
 * fuzz_export.c - libFuzzer target: every `gpushim export` format over a
 * trace, written to /dev/null. The input is a selector byte and the trace
 * file: the selector's value modulo 10 picks the format and its option
 * (below), its top bit the native view instead of the Python one.
 */
#include <stdint.h>

#include "analyzer/symbols/symbols.h"
#include "analyzer/report/report.h"
#include "analyzer/report/load.h"
#include "analyzer/export/export.h"
#include "analyzer/report/incomplete.h"
#include "fuzz_file.h"

enum { JSON, FOLDED_PEAK, FOLDED_LEAK, FOLDED_ALLOCATED, PPROF_END, PPROF_PEAK, HTML, PERFETTO,
       TORCH, TORCH_LAST_3, NFORMATS };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fuzz_pick_reader(size);
    unsigned format = data[0] % NFORMATS;
    enum gs_stack_view view = data[0] & 0x80 ? GS_VIEW_NATIVE : GS_VIEW_MERGED;
    const char *path = fuzz_file("trace", data + 1, size - 1);
    FILE *out = fuzz_null();
    if (format == PERFETTO) {
        gs_export_perfetto(out, path);
        return 0;
    }
    if (format == TORCH || format == TORCH_LAST_3) {
        gs_export_torch_snapshot(out, path, view, format == TORCH ? GS_TORCH_MAX_ENTRIES : 3);
        return 0;
    }
    struct gs_loaded l;
    if (gs_load("export", path, &l) != 0)
        return 0;
    struct gs_report_options opt = {.top = UINT32_MAX, .frames = UINT32_MAX, .view = view};
    struct gs_findings found; /* as gs_report_prepare makes them, less the what-if replay */
    gs_findings_make(&found, &l.info, &l.st, &l.r, l.sym, view, NULL);
    struct gs_report rep = {.path = path, .info = &l.info, .stats = &l.st, .replay = &l.r,
                            .sym = l.sym, .opt = &opt, .found = &found};
    char err[256];
    switch (format) {
    case JSON: gs_report_json(out, &rep); break;
    case FOLDED_PEAK: gs_export_folded(out, &rep, GS_METRIC_PEAK); break;
    case FOLDED_LEAK: gs_export_folded(out, &rep, GS_METRIC_LEAK); break;
    case FOLDED_ALLOCATED: gs_export_folded(out, &rep, GS_METRIC_ALLOCATED); break;
    case PPROF_END: gs_export_pprof(out, &rep, GS_PPROF_INUSE_END, err, sizeof err); break;
    case PPROF_PEAK: gs_export_pprof(out, &rep, GS_PPROF_INUSE_PEAK, err, sizeof err); break;
    default: gs_export_html(out, &rep); break;
    }
    gs_findings_free(&found);
    gs_loaded_free(&l);
    gs_incomplete_forget(); /* its warnings: a command says them at its end */
    return 0;
}
