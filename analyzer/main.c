/*
 * main.c - the gpushim command: hands each subcommand to its file in
 * analyzer/cmd/ (run.c, report.c, export.c, diff.c, plan.c, whatif.c), the
 * options every command that reads traces takes (--partial, --redact) taken
 * here, and its exit status as incomplete.c says; help and the version.
 */
#include <stdio.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/report/load.h"
#include "analyzer/cmd/cmd.h"
#include "analyzer/report/incomplete.h"

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

/* Takes every flag out of the command's arguments (before any "--"), the
 * others kept in order: how many there were. The commands that read traces
 * take --partial (incomplete.h) and --redact (load.h) alike. */
static int take_flag(const char *flag, int argc, char **argv)
{
    int to = 1, end = 0;
    for (int i = 1; i < argc; i++) {
        end |= !strcmp(argv[i], "--");
        if (end || strcmp(argv[i], flag))
            argv[to++] = argv[i];
    }
    argv[to] = NULL;
    return argc - to;
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
    } reading[] = {{"report", gs_cmd_report}, {"export", gs_cmd_export}, {"diff", gs_cmd_diff},
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
            return gs_cmd_report(2, (char *[]){"report", "--help", NULL});
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
