/*
 * report.c - gpushim report: one trace read and reported, for people or for
 * programs (report_text.c, report_json.c), its failures' what-if replay
 * (whatif_report.c), the regression gate (--fail-if, gate.c); several
 * traces: the ranks of a job (ranks.c).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/symbols/symbols.h"
#include "analyzer/symbols/symbolize.h"
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
    "\n"
    "options:\n"
    "  --json         print one JSON object (schema in docs/json.md) instead of text\n"
    "  --top N        call sites listed per section (default 10 for text, all for JSON)\n"
    "  --frames N     stack frames shown per call site in text (default 6)\n"
    "  --native       native stacks alone: no Python frames in place of the\n"
    "                 interpreter's (see docs/commands.md, Python frames)\n"
    "  --fail-if LIMIT  exit 3, one line on stderr per limit broken, when the run\n"
    "                 passes LIMIT: 'peak>20GiB' (the device memory peak),\n"
    "                 'unfreed>1GiB' (never freed), 'leak>1MiB' (the fastest leak\n"
    "                 suspect's growth per marked step), 'unrecovered>0' (failed\n"
    "                 allocations nothing like succeeded after); more than once\n"
    "  --symbols DIR  where to find a module that is not at its recorded path, or\n"
    "                 is another build: a sysroot, a folder of copies, or\n"
    "                 DIR/.build-id/ (taken by build id; more than once)\n"
    "  -o, --output FILE  write there, not to standard output (a new file: mode 0600)\n"
    "  --partial      exit 0, not 4, when the report is incomplete (below)\n"
    "  --redact       leave the host and the command line out (to share it)\n"
    "  -h, --help     this text\n"
    "\n"
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

int gs_cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"top", required_argument, NULL, 't'},
                                             {"frames", required_argument, NULL, 'f'},
                                             {"native", no_argument, NULL, 'n'},
                                             {"fail-if", required_argument, NULL, 'F'},
                                             {"symbols", required_argument, NULL, 'S'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct gs_report_options opt = {.top = 0, .frames = 6};
    const char *output = NULL;
    struct gs_gate_limit limits[GS_GATE_LIMITS];
    size_t nlimits = 0;
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'j': json = 1; break;
        case 't': if (gs_opt_count("report", "--top", optarg, &opt.top)) return 2; break;
        case 'f': if (gs_opt_count("report", "--frames", optarg, &opt.frames)) return 2; break;
        case 'n': opt.view = GS_VIEW_NATIVE; break;
        case 'F': if (gs_gate_add("report", optarg, 0, limits, &nlimits)) return 2; break;
        case 'S': if (gs_sym_search_option("report", optarg)) return 2; break;
        case 'h': fputs(usage_report, stdout); return 0;
        default: fputs("Try 'gpushim report --help'.\n", stderr); return 2;
        }
    }
    if (argc - optind < 1) {
        fputs("gpushim report: which trace? (gpushim report TRACE)\n"
              "Try 'gpushim report --help'.\n", stderr);
        return 2;
    }
    if (argc - optind > 1 && nlimits) {
        fputs("gpushim report: --fail-if takes one trace (gpushim diff --fail-if compares two)\n",
              stderr);
        return 2;
    }
    if (argc - optind > 1) {
        FILE *out = gs_cmd_open_output("report", output);
        if (!out)
            return 1;
        int rc = gs_report_ranks(argv + optind, (size_t)(argc - optind), json, out);
        int failed = gs_cmd_close_output("report", out, output);
        return rc ? rc : failed;
    }
    if (!opt.top)
        opt.top = json ? UINT32_MAX : 10;
    const char *path = argv[optind];

    struct gs_loaded l;
    if (gs_load("report", path, &l) != 0)
        return 1;
    struct gs_report rep = {.path = path, .info = &l.info, .stats = &l.st, .replay = &l.r,
                            .sym = l.sym, .opt = &opt};
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
    int rc = out ? gs_cmd_close_output("report", out, output) : 1;
    if (nlimits) { /* after the report, which says what the lines are about */
        struct gs_gate_run g;
        gs_gate_run_of(&l.r, l.sym, opt.view, p.found, &g);
        if (gs_gate_check(stderr, "gpushim report", limits, nlimits, NULL, &g, NULL) && !rc)
            rc = 3;
    }
    gs_prepared_free(&p);
    gs_loaded_free(&l);
    return rc;
}
