/*
 * export.c - gpushim export: its options, the format chosen, the trace
 * loaded and handed to that format's writer (analyzer/export/), the output
 * made new with mode 0600 (-o).
 */
#include <errno.h>
#include <getopt.h> /* optind */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/symbols/symbols.h"
#include "analyzer/report/report.h"
#include "analyzer/report/load.h"
#include "analyzer/export/export.h"
#include "analyzer/cmd/cmd.h"

static const char usage_export[] =
    "usage: gpushim export --format=FMT [options] TRACE\n"
    "\n"
    "Writes a recorded run in a format other tools read.\n"
    "\n"
    "formats:\n"
    "  json      the report's JSON (as `gpushim report --json`)\n"
    "  folded    folded stacks for flame graphs (flamegraph.pl, inferno,\n"
    "            speedscope): a line per call site, its frames outermost\n"
    "            first joined by ';', a space, and its bytes\n"
    "  pprof     a gzipped pprof profile (go tool pprof, speedscope): a\n"
    "            sample per call site with inuse_space, inuse_objects\n"
    "            (never freed, or at the peak with --metric=peak),\n"
    "            alloc_space and alloc_objects (all the run allocated);\n"
    "            binary: never written to a terminal\n"
    "  html      one self-contained page for a browser (nothing loaded from\n"
    "            the network): the summary, a chart of memory over time per\n"
    "            device, sortable tables of the sites at the peak, the sites\n"
    "            never freed and the failed allocations\n"
    "  perfetto  Chrome's trace-event JSON for ui.perfetto.dev and\n"
    "            chrome://tracing: each device's memory over time, the\n"
    "            marks, the failed allocations\n"
    "  torch-snapshot\n"
    "            PyTorch's memory snapshot (a pickle) for\n"
    "            pytorch.org/memory_viz: segments and blocks at the end,\n"
    "            each device's allocations and frees in order\n"
    "\n";

static const char closing_export[] =
    "Exit status: 0 when written, 1 when the trace could not be read or the\n"
    "output not written, 2 for a usage error, 4 when the trace is incomplete.\n";

static const struct gs_command command = {.name = "export", .usage = usage_export,
                                          .closing = closing_export, .reads_traces = 1};

/* The formats of the events over time: written as the trace is read, so
 * the output is opened first (and removed when the trace cannot be read). */
static int export_events(const char *format, const char *path, const char *output,
                         enum gs_stack_view view, uint64_t max_entries)
{
    FILE *out = gs_cmd_open_output("export", output);
    if (!out)
        return 1;
    int rc = !strcmp(format, "perfetto") ? gs_export_perfetto(out, path)
                                         : gs_export_torch_snapshot(out, path, view, max_entries);
    if (rc == 0)
        return gs_cmd_close_output("export", out, output);
    if (output)
        fclose(out);
    struct stat sb; /* nothing half written left behind (a plain file: not /dev/null) */
    if (output && lstat(output, &sb) == 0 && S_ISREG(sb.st_mode))
        remove(output);
    return 1;
}

/* --metric M: what it counts, and that it was given (to: a struct metric). */
struct metric {
    enum gs_site_metric m;
    int given;
};

static int take_metric(void *to, const char *cmd, const char *arg)
{
    struct metric *metric = to;
    metric->given = 1;
    if (!strcmp(arg, "peak"))
        metric->m = GS_METRIC_PEAK;
    else if (!strcmp(arg, "leaked"))
        metric->m = GS_METRIC_LEAK;
    else if (!strcmp(arg, "allocated"))
        metric->m = GS_METRIC_ALLOCATED;
    else {
        fprintf(stderr, "gpushim %s: --metric is peak, leaked or allocated, not '%s'\n", cmd, arg);
        return -1;
    }
    return 0;
}

/* --max-entries N (to: a uint64_t): 0 and up. */
static int take_max_entries(void *to, const char *cmd, const char *arg)
{
    char *end;
    errno = 0;
    *(uint64_t *)to = strtoull(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-') {
        fprintf(stderr, "gpushim %s: --max-entries is a count, not '%s'\n", cmd, arg);
        return -1;
    }
    return 0;
}

int gs_cmd_export(int argc, char **argv)
{
    const char *format = NULL, *output = NULL;
    struct metric metric = {.m = GS_METRIC_PEAK};
    uint64_t max_entries = GS_TORCH_MAX_ENTRIES;
    struct gs_report_options opt = {.top = UINT32_MAX, .frames = UINT32_MAX};
    const struct gs_opt opts[] = {
        {.name = "format", .letter = 'f', .arg = "FMT", .kind = GS_OPT_STRING, .to = &format,
         .help = "one of the formats above (this or --json is required)"},
        GS_OPT_JSON_FORMAT(&format),
        GS_OPT_OUTPUT(&output),
        {.name = "metric", .arg = "M", .kind = GS_OPT_CALL, .to = &metric, .fn = take_metric,
         .help = "folded: peak (device memory live at the peak, default), leaked (never "
                 "freed), or allocated (all bytes allocated over the run); pprof: what "
                 "inuse_* count, leaked (live at the end, default) or peak"},
        {.name = "max-entries", .arg = "N", .kind = GS_OPT_CALL, .to = &max_entries,
         .fn = take_max_entries,
         .help = "torch-snapshot: each device's last N events, as PyTorch's recorder keeps its "
                 "last max_entries (default 100000; 0: all of them)"},
        {.name = "native", .kind = GS_OPT_CALL, .to = &opt.view, .fn = gs_opt_native,
         .help = "native stacks alone (no Python frames)"},
        GS_OPT_SYMBOLS,
    };
    int rc = gs_opt_parse(&command, opts, sizeof opts / sizeof opts[0], argc, argv);
    if (rc != GS_OPT_GO)
        return rc;
    static const char *const formats[] = {"json", "folded", "pprof", "html", "perfetto",
                                          "torch-snapshot"};
    static const char names[] = "json, folded, pprof, html, perfetto or torch-snapshot";
    size_t known = 0;
    while (format && known < sizeof formats / sizeof formats[0] && strcmp(format, formats[known]))
        known++;
    if (!format || known == sizeof formats / sizeof formats[0]) {
        if (format)
            fprintf(stderr, "gpushim export: no format '%s' (%s)\n", format, names);
        else
            fprintf(stderr, "gpushim export: which format? (--format=%s)\n", names);
        fputs("Try 'gpushim export --help'.\n", stderr);
        return 2;
    }
    int pprof = !strcmp(format, "pprof");
    if (pprof && metric.given && metric.m == GS_METRIC_ALLOCATED) {
        fputs("gpushim export: --metric for pprof is leaked or peak (what inuse_* count; "
              "alloc_* are always there)\n",
              stderr);
        return 2;
    }
    if (argc - optind != 1) {
        fprintf(stderr, "gpushim export: %s\nTry 'gpushim export --help'.\n",
                argc - optind ? "one trace at a time" : "which trace? (gpushim export ... TRACE)");
        return 2;
    }
    const char *path = argv[optind];
    if (!strcmp(format, "perfetto") || !strcmp(format, "torch-snapshot"))
        return export_events(format, path, output, opt.view, max_entries);
    if (pprof && !output && isatty(STDOUT_FILENO)) {
        fputs("gpushim export: pprof is binary (gzipped protobuf); not writing it to a "
              "terminal: give -o FILE or redirect the output\n",
              stderr);
        return 2;
    }
    struct gs_loaded l;
    if (gs_load("export", path, &l) != 0)
        return 1;
    FILE *out = gs_cmd_open_output("export", output);
    if (!out) {
        gs_loaded_free(&l);
        return 1;
    }
    struct gs_report rep = {.path = path, .info = &l.info, .stats = &l.st, .seen = &l.seen,
                            .replay = &l.r, .sym = l.sym, .opt = &opt};
    /* the findings; and for the formats that give a failure's verdicts, the
     * what-if replay for its allocator verdict, as the report works them out */
    struct gs_prepared p;
    if (gs_report_prepare("export", &rep, &p, !strcmp(format, "json") || !strcmp(format, "html"))) {
        gs_cmd_close_output("export", out, output);
        gs_loaded_free(&l);
        return 1;
    }
    char err[256];
    int built = 0;
    if (!strcmp(format, "json"))
        gs_report_json(out, &rep);
    else if (!strcmp(format, "html"))
        gs_export_html(out, &rep);
    else if (pprof)
        built = gs_export_pprof(out, &rep,
                                metric.given && metric.m == GS_METRIC_PEAK ? GS_PPROF_INUSE_PEAK
                                                                         : GS_PPROF_INUSE_END,
                                err, sizeof err);
    else
        gs_export_folded(out, &rep, metric.m);
    gs_prepared_free(&p);
    gs_loaded_free(&l);
    if (built != 0) { /* said alone: nothing worth writing was written */
        if (output)
            fclose(out);
        fprintf(stderr, "gpushim export: %s\n", err);
        return 1;
    }
    return gs_cmd_close_output("export", out, output);
}
