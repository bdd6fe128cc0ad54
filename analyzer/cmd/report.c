/*
 * report.c - gpushim report: one trace read and reported, for people or for
 * programs (report_text.c, report_json.c), its failures' what-if replay
 * (whatif_report.c), the regression gate (--fail-if, gate.c); several
 * traces: the ranks of a job (ranks.c).
 */
#include <getopt.h> /* optind */
#include <stdint.h>
#include <stdio.h>

#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/gate.h"
#include "analyzer/report/report.h"
#include "analyzer/report/load.h"
#include "analyzer/cmd/cmd.h"

static const char usage_report[] =
    "usage: gpushim report [options] TRACE\n"
    "       gpushim report [--json] TRACE TRACE...\n"
    "\n"
    "Reads a trace written by libgpushim.so and reports, for people (default)\n"
    "or for programs (--json): the process and how long it ran, each device's\n"
    "peak, the peak of device memory and the call sites that held it then, the\n"
    "allocations never freed by call site, and every failed allocation with the\n"
    "device's free and total memory at that moment.\n"
    "\n";

static const char closing_report[] =
    "A trace that was cut short (the process was killed) or damaged is reported\n"
    "as far as it can be read and marked incomplete, and so is a report the\n"
    "analyzer ran out of memory for or whose trace holds values no run has: each\n"
    "warning is said on stderr too.\n"
    "\n"
    "With several traces, one per rank of a distributed job: a table of the\n"
    "ranks (rank, host, pid, peak per device, the rank's largest peak,\n"
    "failures, whether the trace is complete), the imbalance (the largest peak\n"
    "over the mean of the ranks' peaks) and which rank failed an allocation\n"
    "first. Ranks are as each trace recorded them (RANK, OMPI_COMM_WORLD_RANK,\n"
    "SLURM_PROCID or PMI_RANK), else the order given. --json applies; the\n"
    "options about call sites do not.\n"
    "\n"
    "Exit status: 0 when the traces were read whole, 1 when one could not be\n"
    "read, 2 for a usage error, 3 when a --fail-if limit was broken, 4 when\n"
    "the report is incomplete.\n";

static const struct gs_command command = {.name = "report", .usage = usage_report,
                                          .closing = closing_report, .reads_traces = 1};

int gs_cmd_report(int argc, char **argv)
{
    struct gs_report_options opt = {.top = 0, .frames = 6};
    const char *output = NULL;
    struct gs_gate_limit limits[GS_GATE_LIMITS];
    struct gs_opt_limits gates = {.v = limits, .two_runs = 0};
    int json = 0;
    const struct gs_opt opts[] = {
        GS_OPT_JSON(&json),
        {.name = "top", .arg = "N", .kind = GS_OPT_COUNT, .to = &opt.top,
         .help = "call sites per section (default 10 for text, all for JSON)"},
        {.name = "frames", .arg = "N", .kind = GS_OPT_COUNT, .to = &opt.frames,
         .help = "stack frames shown per call site in text (default 6)"},
        {.name = "native", .kind = GS_OPT_CALL, .to = &opt.view, .fn = gs_opt_native,
         .help = "native stacks alone: no Python frames in place of the interpreter's (see "
                 "docs/commands.md, Python frames)"},
        {.name = "fail-if", .arg = "LIMIT", .kind = GS_OPT_CALL, .to = &gates, .fn = gs_opt_fail_if,
         .help = "exit 3, one line on stderr per limit broken, when the run passes LIMIT: "
                 "'peak>20GiB' (the device memory peak), 'unfreed>1GiB' (never freed), "
                 "'leak>1MiB' (the fastest leak suspect's growth per marked step), "
                 "'unrecovered>0' (failed allocations nothing like succeeded after); more "
                 "than once"},
        GS_OPT_SYMBOLS,
        GS_OPT_OUTPUT(&output),
    };
    int rc = gs_opt_parse(&command, opts, sizeof opts / sizeof opts[0], argc, argv);
    if (rc != GS_OPT_GO)
        return rc;
    if (argc - optind < 1) {
        fputs("gpushim report: which trace? (gpushim report TRACE)\n"
              "Try 'gpushim report --help'.\n", stderr);
        return 2;
    }
    if (argc - optind > 1 && gates.n) {
        fputs("gpushim report: --fail-if takes one trace (gpushim diff --fail-if compares two)\n",
              stderr);
        return 2;
    }
    if (argc - optind > 1) {
        FILE *out = gs_cmd_open_output("report", output);
        if (!out)
            return 1;
        rc = gs_report_ranks(argv + optind, (size_t)(argc - optind), json, out);
        int failed = gs_cmd_close_output("report", out, output);
        return rc ? rc : failed;
    }
    if (!opt.top)
        opt.top = json ? UINT32_MAX : 10;
    const char *path = argv[optind];

    struct gs_loaded l;
    if (gs_load("report", path, &l) != 0)
        return 1;
    struct gs_report rep = {.path = path, .info = &l.info, .stats = &l.st, .seen = &l.seen,
                            .replay = &l.r, .sym = l.sym, .opt = &opt};
    struct gs_prepared p; /* the findings, once for the screen and the gate */
    if (gs_report_prepare("report", &rep, &p, 1) != 0) {
        gs_loaded_free(&l);
        return 1;
    }
    FILE *out = gs_cmd_open_output("report", output);
    if (out && json)
        gs_report_json(out, &rep);
    else if (out)
        gs_report_text(out, &rep);
    rc = out ? gs_cmd_close_output("report", out, output) : 1;
    if (gates.n) { /* after the report, which says what the lines are about */
        struct gs_gate_run g;
        gs_gate_run_of(&l.r, l.sym, opt.view, p.found, &g);
        if (gs_gate_check(stderr, "gpushim report", limits, gates.n, NULL, &g, NULL) && !rc)
            rc = 3;
    }
    gs_prepared_free(&p);
    gs_loaded_free(&l);
    return rc;
}
