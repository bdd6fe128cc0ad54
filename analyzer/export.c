/*
 * export.c - gpushim export: a recorded run in the formats other tools
 * read. json is the report's JSON; folded is one line per call site,
 * "outermost;...;innermost bytes", which flamegraph.pl, inferno and
 * speedscope draw as a flame graph of what held memory at the peak, what
 * was never freed, or what was allocated over the run (--metric). The
 * formats of the events over time have files of their own: perfetto
 * (perfetto.c) and torch-snapshot (torch_snapshot.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyzer.h"
#include "symbolize.h"

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
    "  perfetto  Chrome's trace-event JSON for ui.perfetto.dev and\n"
    "            chrome://tracing: each device's memory over time, the\n"
    "            marks, the failed allocations\n"
    "  torch-snapshot\n"
    "            PyTorch's memory snapshot (a pickle) for\n"
    "            pytorch.org/memory_viz: segments and blocks at the end,\n"
    "            each device's allocations and frees in order\n"
    "\n"
    "options:\n"
    "  -f, --format FMT    json, folded, perfetto or torch-snapshot (required)\n"
    "  -o, --output FILE   write there instead of standard output\n"
    "  --metric M          folded: peak (device memory live at the peak,\n"
    "                      default), leaked (never freed), or allocated (all\n"
    "                      bytes allocated over the run)\n"
    "  --max-entries N     torch-snapshot: each device's last N events, as\n"
    "                      PyTorch's recorder keeps its last max_entries\n"
    "                      (default 100000; 0: all of them)\n"
    "  --native            native stacks alone (no Python frames)\n"
    "  -h, --help          this text\n"
    "\n"
    "Exit status: 0 when written, 1 when the trace could not be read or the\n"
    "output not written, 2 for a usage error.\n";

struct frames {
    char **names;
    unsigned n, cap;
};

/* A frame's name in a folded line: "function (file:line)", or the address
 * and module when the function is unknown; never a ';' or a line break,
 * which the format reserves. */
static char *frame_name(const struct gs_frame *f)
{
    char buf[1024];
    const char *base = f->file ? strrchr(f->file, '/') : NULL;
    base = base ? base + 1 : f->file;
    if (f->function && base)
        snprintf(buf, sizeof buf, "%s (%s:%d)", f->function, base, f->line);
    else if (f->function)
        snprintf(buf, sizeof buf, "%s", f->function);
    else
        snprintf(buf, sizeof buf, "0x%" PRIx64 " (%s)", f->pc, f->module ? f->module : "?");
    for (char *p = buf; *p; p++)
        if (*p == ';' || *p == '\n' || *p == '\r')
            *p = ':';
    return strdup(buf);
}

static void collect(void *ctx, const struct gs_frame *f, unsigned index)
{
    (void)index;
    struct frames *fr = ctx;
    if (fr->n == fr->cap) {
        unsigned cap = fr->cap ? fr->cap * 2 : 32;
        char **names = realloc(fr->names, cap * sizeof *names);
        if (!names)
            return;
        fr->names = names;
        fr->cap = cap;
    }
    char *name = frame_name(f);
    if (name)
        fr->names[fr->n++] = name;
}

void gs_export_folded(FILE *out, const struct gs_report *rep, enum gs_site_metric metric)
{
    struct gs_report_site *sites;
    size_t n = gs_rank_sites(rep->replay, rep->sym, rep->opt->view, metric, &sites);
    for (size_t i = 0; i < n; i++) {
        struct frames fr = {0};
        gs_site_frames(rep->replay, rep->sym, sites[i].stack_id, rep->opt->view, UINT32_MAX,
                       collect, &fr);
        if (!fr.n)
            fputs("[unknown]", out);
        for (unsigned k = fr.n; k-- > 0;) /* outermost first */
            fprintf(out, "%s%s", fr.names[k], k ? ";" : "");
        fprintf(out, " %" PRIu64 "\n", sites[i].bytes);
        for (unsigned k = 0; k < fr.n; k++)
            free(fr.names[k]);
        free(fr.names);
    }
    free(sites);
}

/* The formats of the events over time: written as the trace is read, so
 * the output is opened first (and removed when the trace cannot be read). */
static int export_events(const char *format, const char *path, const char *output,
                         enum gs_stack_view view, uint64_t max_entries)
{
    FILE *out = output ? fopen(output, "w") : stdout;
    if (!out) {
        fprintf(stderr, "gpushim export: cannot write %s: %s\n", output, strerror(errno));
        return 1;
    }
    int rc = !strcmp(format, "perfetto") ? gs_export_perfetto(out, path)
                                         : gs_export_torch_snapshot(out, path, view, max_entries);
    int failed = ferror(out) | (output ? fclose(out) : fflush(out));
    if (rc != 0) {
        struct stat sb; /* nothing half written left behind (a plain file: not /dev/null) */
        if (output && lstat(output, &sb) == 0 && S_ISREG(sb.st_mode))
            remove(output);
        return 1;
    }
    if (failed) {
        fprintf(stderr, "gpushim export: cannot write %s\n", output ? output : "the output");
        return 1;
    }
    return 0;
}

int gs_cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {{"format", required_argument, NULL, 'f'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"metric", required_argument, NULL, 'm'},
                                             {"native", no_argument, NULL, 'n'},
                                             {"max-entries", required_argument, NULL, 'x'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *format = NULL, *output = NULL;
    enum gs_site_metric metric = GS_METRIC_PEAK;
    uint64_t max_entries = GS_TORCH_MAX_ENTRIES;
    struct gs_report_options opt = {.top = UINT32_MAX, .frames = UINT32_MAX};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+f:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'o': output = optarg; break;
        case 'm':
            if (!strcmp(optarg, "peak"))
                metric = GS_METRIC_PEAK;
            else if (!strcmp(optarg, "leaked"))
                metric = GS_METRIC_LEAK;
            else if (!strcmp(optarg, "allocated"))
                metric = GS_METRIC_ALLOCATED;
            else {
                fprintf(stderr, "gpushim export: --metric is peak, leaked or allocated, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'n': opt.view = GS_VIEW_NATIVE; break;
        case 'x': {
            char *end;
            errno = 0;
            max_entries = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-') {
                fprintf(stderr, "gpushim export: --max-entries is a count, not '%s'\n", optarg);
                return 2;
            }
            break;
        }
        case 'h': fputs(usage_export, stdout); return 0;
        default: fputs("Try 'gpushim export --help'.\n", stderr); return 2;
        }
    }
    if (!format || (strcmp(format, "json") && strcmp(format, "folded") &&
                    strcmp(format, "perfetto") && strcmp(format, "torch-snapshot"))) {
        fprintf(stderr, "gpushim export: %s%s%s\nTry 'gpushim export --help'.\n",
                format ? "no format '" : "which format? (--format=json, folded, perfetto or "
                                         "torch-snapshot)",
                format ? format : "",
                format ? "' (json, folded, perfetto or torch-snapshot)" : "");
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
    struct gs_loaded l;
    if (gs_load("export", path, &l) != 0)
        return 1;
    FILE *out = output ? fopen(output, "w") : stdout;
    if (!out) {
        fprintf(stderr, "gpushim export: cannot write %s: %s\n", output, strerror(errno));
        gs_loaded_free(&l);
        return 1;
    }
    struct gs_report rep = {.path = path, .info = &l.info, .stats = &l.st, .replay = &l.r,
                            .sym = l.sym, .opt = &opt};
    if (!strcmp(format, "json"))
        gs_report_json(out, &rep);
    else
        gs_export_folded(out, &rep, metric);
    int failed = ferror(out) | (output ? fclose(out) : fflush(out));
    gs_loaded_free(&l);
    if (failed) {
        fprintf(stderr, "gpushim export: cannot write %s\n", output ? output : "the output");
        return 1;
    }
    return 0;
}
