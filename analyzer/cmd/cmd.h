/*
 * cmd.h - the commands, a file each: run (run.c), report (report.c; over a
 * job's ranks, ranks.c), export (export.c), diff (diff.c), plan (plan.c),
 * whatif (whatif.c), and their one option parser (options.c).
 *
 * Included by: analyzer/main.c, analyzer/cmd's files, tests/unit/test_options.c.
 */
#ifndef GPUSHIM_CMD_CMD_H
#define GPUSHIM_CMD_CMD_H

#include <stddef.h>
#include <stdio.h>

/* ---- options.c: the one option parser ---- */
/* What an option does when given. */
enum gs_opt_kind {
    GS_OPT_FLAG,   /* *(int *)to = 1 */
    GS_OPT_STRING, /* *(const char **)to = its argument (the last one given) */
    GS_OPT_COUNT,  /* *(unsigned *)to = its argument, 1 to 1000000, else said on stderr
                    * ("gpushim CMD: --NAME needs a number ...") and exit status 2 */
    GS_OPT_LIST,   /* ((const char **)to)[(*n)++] = its argument; given once more
                    * than max: "gpushim CMD: FULL" on stderr and exit status 2 */
    GS_OPT_CALL,   /* fn(to, cmd, its argument): nonzero (fn has said why): exit 2 */
    GS_OPT_HELP,   /* the parser's -h, --help: the command's help on standard output,
                    * exit status 0 */
    GS_OPT_MAIN,   /* the parser's --partial and --redact, taken out of argv by
                    * analyzer/main.c before the command sees it: in the help only */
};

/* An option of a command's table. */
struct gs_opt {
    const char *name;  /* --name */
    char letter;       /* -l, or 0 for none */
    const char *arg;   /* the name of its argument in the help (FILE, N); NULL: none */
    const char *help;  /* what it does: wrapped to the help's width; a '\n' begins a
                        * line of a list */
    enum gs_opt_kind kind;
    void *to;
    size_t *n, max;    /* GS_OPT_LIST: how many are in to, at most */
    const char *full;  /* GS_OPT_LIST: said past max */
    int (*fn)(void *to, const char *cmd, const char *arg); /* GS_OPT_CALL */
};

/* A command, for the parser and its help. */
struct gs_command {
    const char *name;    /* report: "gpushim report: ..." */
    const char *usage;   /* the usage lines and what it does, to a blank line */
    const char *closing; /* what the help says after the options (the exit status) */
    int permute;         /* options after operands too; else the first operand ends them */
    int reads_traces;    /* it takes --partial and --redact (analyzer/main.c takes them out
                          * of argv): the parser lists them in its help, after its table,
                          * and -h, --help, which every command takes, last */
};

/* --fail-if LIMIT, its to: the limits read (gs_gate_add, analyzer/findings/gate.h). */
struct gs_gate_limit;
struct gs_opt_limits {
    struct gs_gate_limit *v; /* room for GS_GATE_LIMITS */
    size_t n;
    int two_runs; /* diff's: a change from run A may be limited */
};
int gs_opt_fail_if(void *to, const char *cmd, const char *arg);
/* --symbols DIR: gs_sym_search_option (analyzer/symbols/symbolize.h). */
int gs_opt_symbols(void *to, const char *cmd, const char *arg);
/* --native (no argument; to: an enum gs_stack_view): GS_VIEW_NATIVE. */
int gs_opt_native(void *to, const char *cmd, const char *arg);
/* --json where --format chooses (to: the format): *(const char **)to = "json". */
int gs_opt_json_format(void *to, const char *cmd, const char *arg);

/* The options commands share, each spelled and explained alike in all:
 * -o, --output FILE; --json, of a command whose output is text or JSON, or
 * of one whose --format chooses; --symbols DIR. The parser adds the others
 * (struct gs_command). */
#define GS_OPT_OUTPUT(path)                                                                   \
    {.name = "output", .letter = 'o', .arg = "FILE", .kind = GS_OPT_STRING, .to = (path),     \
     .help = "write there, not to standard output (a new file: mode 0600)"}
#define GS_OPT_JSON(flag)                                                                     \
    {.name = "json", .kind = GS_OPT_FLAG, .to = (flag),                                       \
     .help = "print one JSON object (schema in docs/json.md), not text"}
#define GS_OPT_JSON_FORMAT(format)                                                            \
    {.name = "json", .kind = GS_OPT_CALL, .to = (format), .fn = gs_opt_json_format,           \
     .help = "the same as --format json"}
#define GS_OPT_SYMBOLS                                                                        \
    {.name = "symbols", .arg = "DIR", .kind = GS_OPT_CALL, .fn = gs_opt_symbols,              \
     .help = "where to find a module that is not at its recorded path, or is another build: " \
             "a sysroot, a folder of copies, or DIR/.build-id/ (taken by build id; more "     \
             "than once)"}
#define GS_OPT_GO (-1) /* gs_opt_parse: the options read; the operands from optind */
/* Reads argv's options by command c's table of n options and those the
 * parser adds (getopt_long, optind left at the first operand), each one's action
 * taken: GS_OPT_GO, or the command's exit status: 0 after --help, 2 after a
 * usage error said on stderr (an unknown option: getopt_long's words, then
 * "Try 'gpushim CMD --help'."). */
int gs_opt_parse(const struct gs_command *c, const struct gs_opt *opts, size_t n, int argc,
                 char **argv);
/* c's help: its usage, "options:" and a line or more an option of opts
 * (its spelling, its help), then those the parser adds, then c's closing
 * words. */
void gs_opt_help(FILE *out, const struct gs_command *c, const struct gs_opt *opts, size_t n);

/* Where a command writes (-o): standard output for path NULL, else the file,
 * made new with mode 0600 (util/output.h); NULL, said on stderr, when it
 * cannot be opened. */
FILE *gs_cmd_open_output(const char *cmd, const char *path);
/* Flushes out, and closes it when it is path's: 0, or 1 said on stderr. */
int gs_cmd_close_output(const char *cmd, FILE *out, const char *path);

/* ---- run.c: gpushim run ---- */
int gs_cmd_run(int argc, char **argv);

/* ---- prepare.c ---- */
struct gs_report;
struct gs_findings;
struct gs_wi_answer;
/* What report and export work out once for the screens of one trace. */
struct gs_prepared {
    struct gs_findings *found;  /* NULL: out of memory (said) */
    struct gs_wi_answer *whatif; /* the failures' what-if replay, or NULL */
};
/* The findings of rep (whose path, info, stats, replay, sym and opt are
 * set) into p, rep->found pointing at them; with whatif, the failures'
 * what-if replay for their allocator verdicts first. 0, or -1 when out of
 * memory (said on stderr as command cmd's). gs_prepared_free. */
int gs_report_prepare(const char *cmd, struct gs_report *rep, struct gs_prepared *p, int whatif);
void gs_prepared_free(struct gs_prepared *p);

/* ---- report.c: gpushim report ---- */
int gs_cmd_report(int argc, char **argv);

/* ---- export.c: gpushim export ---- */
int gs_cmd_export(int argc, char **argv);

/* ---- diff.c: gpushim diff ---- */
int gs_cmd_diff(int argc, char **argv);

/* ---- ranks.c: gpushim report over the traces of a job's ranks ---- */
/* Reads each trace and prints the table of ranks; the exit status. */
int gs_report_ranks(char **paths, size_t n, int json, FILE *out);

/* ---- plan.c: gpushim plan ---- */
int gs_cmd_plan(int argc, char **argv);

/* ---- whatif.c: gpushim whatif ---- */
int gs_cmd_whatif(int argc, char **argv);

#endif
