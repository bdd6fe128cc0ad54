/*
 * main.c - the gpushim command: parses the command line and hands each
 * subcommand to its file (run.c; report: reader.c -> replay.c -> reports;
 * report over several traces: ranks.c; export.c, diff.c, plan.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/report/report.h"
#include "analyzer/report/load.h"
#include "analyzer/report/whatif_report.h"
#include "analyzer/export/export.h"
#include "analyzer/findings/gate.h"
#include "analyzer/cmd/cmd.h"
#include "analyzer/report/incomplete.h"
#include "analyzer/report/load.h"

#define GPUSHIM_VERSION "0.1.0"

static const char usage_main[] =
    "usage: gpushim <command> [options]\n"
    "\n"
    "Records every GPU memory allocation of a CUDA program and explains it afterwards.\n"
    "\n"
    "commands:\n"
    "  run [-o FILE] -- CMD [ARGS...]   run CMD with the recorder preloaded\n"
    "  report [--json] TRACE            peak, leak suspects, failed allocations and why\n"
    "  report [--json] TRACE TRACE...   the ranks of a distributed job side by side\n"
    "  export --format=FMT TRACE        the same for other tools: json, folded (flame\n"
    "                                   graphs), pprof, html, perfetto, torch-snapshot\n"
    "  diff [--json] A B                what grew from run A to run B, by call site\n"
    "  plan [--json] TRACE:N TRACE:M... the largest batch that fits a card, from runs of\n"
    "                                   different batch sizes\n"
    "  whatif [--card SIZE] TRACE       the run under other PyTorch allocator settings:\n"
    "                                   which fits, at what peak, at what cost\n"
    "  help [COMMAND]                   this text, or a command's own\n"
    "\n"
    "  gpushim --version                the version\n"
    "\n"
    "report, export, diff, plan and whatif exit 4 when what they read is incomplete\n"
    "(a damaged or cut trace, events lost, values no run has, the analyzer out of\n"
    "memory), each warning said on stderr; --partial: exit 0 then. --redact: the\n"
    "host and the command line left out of what they write.\n"
    "\n"
    "Without the launcher: LD_PRELOAD=/path/to/libgpushim.so CMD [ARGS...]\n"
    "writes gpushim.<pid>.trace in the working directory (see GPUSHIM_OUTPUT in\n"
    "`gpushim help run`).\n";

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

static int parse_count(const char *opt, const char *s, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || !*s || v == 0 || v > 1000000) {
        fprintf(stderr, "gpushim report: %s needs a number from 1 to 1000000, not '%s'\n", opt, s);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

static int cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"top", required_argument, NULL, 't'},
                                             {"frames", required_argument, NULL, 'f'},
                                             {"native", no_argument, NULL, 'n'},
                                             {"fail-if", required_argument, NULL, 'F'},
                                             {"symbols", required_argument, NULL, 'S'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct gs_report_options opt = {.top = 0, .frames = 6};
    struct gs_gate_limit limits[GS_GATE_LIMITS];
    size_t nlimits = 0;
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 't': if (parse_count("--top", optarg, &opt.top)) return 2; break;
        case 'f': if (parse_count("--frames", optarg, &opt.frames)) return 2; break;
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
    if (argc - optind > 1)
        return gs_report_ranks(argv + optind, (size_t)(argc - optind), json);
    if (!opt.top)
        opt.top = json ? UINT32_MAX : 10;
    const char *path = argv[optind];

    struct gs_loaded l;
    if (gs_load("report", path, &l) != 0)
        return 1;
    struct gs_report rep = {.path = path, .info = &l.info, .stats = &l.st, .replay = &l.r,
                            .sym = l.sym, .opt = &opt};
    static struct gs_wi_answer whatif; /* large: not on the stack */
    if (gs_report_whatif(path, &l.info, &l.r, &whatif))
        rep.whatif = &whatif;
    struct gs_warnings warnings;
    gs_warnings_of(&l.info, &l.st, &l.r, &warnings);
    rep.warnings = &warnings;
    if (json)
        gs_report_json(stdout, &rep);
    else
        gs_report_text(stdout, &rep);
    if (rep.whatif)
        gs_wi_answer_free(&whatif);
    int rc = fflush(stdout) == 0 ? 0 : 1;
    if (nlimits) { /* after the report, which says what the lines are about */
        struct gs_gate_run g;
        gs_gate_run_of(&l.info, &l.r, l.sym, opt.view, &g);
        if (gs_gate_check(stderr, "gpushim report", limits, nlimits, NULL, &g, NULL) && !rc)
            rc = 3;
    }
    gs_loaded_free(&l);
    return rc;
}

/* Takes every flag out of the command's arguments (before any "--"), the
 * others kept in order: how many there were. The commands that read traces
 * take --partial (incomplete.h) and --redact (load.h) alike. */
static int take_flag(const char *flag, int argc, char **argv)
{
    int found = 0, to = 1, end = 0;
    for (int i = 1; i < argc; i++) {
        end |= !strcmp(argv[i], "--");
        if (!end && !strcmp(argv[i], flag))
            found = 1;
        else
            argv[to++] = argv[i];
    }
    argv[to] = NULL;
    return found ? argc - to : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run"))
        return gs_cmd_run(argc - 1, argv + 1);
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } reading[] = {{"report", cmd_report}, {"export", gs_cmd_export}, {"diff", gs_cmd_diff},
                   {"plan", gs_cmd_plan},   {"whatif", gs_cmd_whatif}};
    for (size_t i = 0; i < sizeof reading / sizeof reading[0]; i++)
        if (!strcmp(cmd, reading[i].name)) {
            int partial = take_flag("--partial", argc - 1, argv + 1);
            argc -= partial;
            int redact = take_flag("--redact", argc - 1, argv + 1);
            argc -= redact;
            if (redact)
                gs_load_redact();
            return gs_incomplete_exit(cmd, reading[i].run(argc - 1, argv + 1), partial);
        }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("gpushim %s (trace format %u)\n", GPUSHIM_VERSION, GS_TRACE_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        const char *topic = argc > 2 ? argv[2] : "";
        if (!strcmp(topic, "report"))
            fputs(usage_report, stdout);
        else if (!strcmp(topic, "run"))
            return gs_cmd_run(2, (char *[]){"run", "--help", NULL});
        else if (!strcmp(topic, "export"))
            return gs_cmd_export(2, (char *[]){"export", "--help", NULL});
        else if (!strcmp(topic, "diff"))
            return gs_cmd_diff(2, (char *[]){"diff", "--help", NULL});
        else if (!strcmp(topic, "plan"))
            return gs_cmd_plan(2, (char *[]){"plan", "--help", NULL});
        else if (!strcmp(topic, "whatif"))
            return gs_cmd_whatif(2, (char *[]){"whatif", "--help", NULL});
        else if (!topic[0])
            fputs(usage_main, stdout);
        else {
            fprintf(stderr, "gpushim help: no command '%s' (commands: run, report, export, "
                            "diff, plan, whatif)\n", topic);
            return 2;
        }
        return 0;
    }
    fprintf(stderr, "gpushim: no command '%s'\n\n%s", cmd, usage_main);
    return 2;
}
