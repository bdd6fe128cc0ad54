/*
 * test_options.c - analyzer/cmd/options.c: the commands' one option parser
 * (each action: a flag, a string, a count, a list, a call; an option given
 * again; options ending at the first operand or not), what it says of a bad
 * count and of an option it does not know (exit status 2, word for word),
 * the options it adds (--partial, --redact, --help), and the help written
 * from a table: every option in it, the lines wrapped.
 */
#include <criterion/criterion.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/gate.h"
#include "analyzer/cmd/cmd.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- what was written on a file descriptor (2: stderr, 1: stdout) ---- */

static FILE *caught_file;
static int saved_fd = -1;

static void catch(int fd)
{
    fflush(fd == 1 ? stdout : stderr);
    caught_file = tmpfile();
    cr_assert_not_null(caught_file);
    saved_fd = dup(fd);
    dup2(fileno(caught_file), fd);
}

/* What was written since catch(fd), as a string to free. */
static char *caught(int fd)
{
    fflush(fd == 1 ? stdout : stderr);
    dup2(saved_fd, fd);
    close(saved_fd);
    long len = ftell(caught_file);
    char *s = calloc(1, (size_t)len + 1);
    rewind(caught_file);
    cr_assert_eq(fread(s, 1, (size_t)len, caught_file), (size_t)len);
    fclose(caught_file);
    return s;
}

/* ---- a command of every kind of option ---- */

struct seen {
    int json, verbose;
    const char *output, *name;
    unsigned top;
    const char *dirs[2];
    size_t ndirs;
    int calls;
    char last[32];
};

static int call(void *to, const char *cmd, const char *arg)
{
    struct seen *s = to;
    s->calls++;
    snprintf(s->last, sizeof s->last, "%s", arg);
    if (!strcmp(arg, "bad")) {
        fprintf(stderr, "gpushim %s: --call cannot take '%s'\n", cmd, arg);
        return -1;
    }
    return 0;
}

static const char usage[] = "usage: gpushim t [options] OPERAND\n\nTries the parser.\n\n";
static const char closing[] = "Exit status: 0, or 2 for a usage error.\n";
static const struct gs_command in_order = {.name = "t", .usage = usage, .closing = closing,
                                           .reads_traces = 1};
static const struct gs_command permuted = {.name = "t", .usage = usage, .closing = closing,
                                           .permute = 1};

/* The table, its options' actions onto s. */
static size_t table(struct seen *s, struct gs_opt *opts)
{
    const struct gs_opt t[] = {
        GS_OPT_JSON(&s->json),
        {.name = "verbose", .letter = 'v', .kind = GS_OPT_FLAG, .to = &s->verbose,
         .help = "say more"},
        {.name = "name", .arg = "NAME", .kind = GS_OPT_STRING, .to = &s->name,
         .help = "a name; the last one given counts"},
        {.name = "top", .arg = "N", .kind = GS_OPT_COUNT, .to = &s->top, .help = "how many"},
        {.name = "dir", .letter = 'd', .arg = "DIR", .kind = GS_OPT_LIST, .to = s->dirs,
         .n = &s->ndirs, .max = 2, .full = "at most 2 dirs",
         .help = "a folder, more than once: a long help that the help wraps at its width, "
                 "each further line at the column of the first, as wide as the others\n"
                 "a line of a list, long enough to be wrapped two columns further in than the "
                 "line it continues\nanother"},
        {.name = "call", .arg = "X", .kind = GS_OPT_CALL, .to = s, .fn = call,
         .help = "handed to a function"},
        GS_OPT_OUTPUT(&s->output),
    };
    memcpy(opts, t, sizeof t);
    return N(t);
}

/* Parses argv (NULL-terminated) with the table; the status. */
static int parse(struct seen *s, int permute, char **argv)
{
    struct gs_opt opts[16];
    int argc = 0;
    while (argv[argc])
        argc++;
    memset(s, 0, sizeof *s);
    size_t n = table(s, opts);
    return gs_opt_parse(permute ? &permuted : &in_order, opts, n, argc, argv);
}

Test(options, each_action_taken)
{
    struct seen s;
    char *argv[] = {"t", "--json", "-v", "--name", "a", "--top=12", "-d", "x", "--call", "y",
                    "-oout.txt", "operand", NULL};
    cr_assert_eq(parse(&s, 0, argv), GS_OPT_GO);
    cr_assert_eq(s.json, 1);
    cr_assert_eq(s.verbose, 1);
    cr_assert_str_eq(s.name, "a");
    cr_assert_eq(s.top, 12);
    cr_assert_eq(s.ndirs, 1);
    cr_assert_str_eq(s.dirs[0], "x");
    cr_assert_eq(s.calls, 1);
    cr_assert_str_eq(s.last, "y");
    cr_assert_str_eq(s.output, "out.txt");
    cr_assert_eq(optind, 11);
    cr_assert_str_eq(argv[optind], "operand");
}

Test(options, given_again)
{
    struct seen s;
    char *argv[] = {"t", "--name", "a", "-d", "x", "--call", "1", "--dir=y", "--name", "b",
                    "--call", "2", "--top", "3", "--top", "4", NULL};
    cr_assert_eq(parse(&s, 0, argv), GS_OPT_GO);
    cr_assert_str_eq(s.name, "b", "the last string counts");
    cr_assert_eq(s.ndirs, 2);
    cr_assert_str_eq(s.dirs[0], "x");
    cr_assert_str_eq(s.dirs[1], "y");
    cr_assert_eq(s.calls, 2);
    cr_assert_str_eq(s.last, "2");
    cr_assert_eq(s.top, 4);

    char *full[] = {"t", "-d", "x", "-d", "y", "-d", "z", NULL};
    catch(2);
    cr_assert_eq(parse(&s, 0, full), 2);
    char *err = caught(2);
    cr_assert_str_eq(err, "gpushim t: at most 2 dirs\n");
    free(err);
}

Test(options, operands_end_the_options_or_not)
{
    struct seen s;
    char *ordered[] = {"t", "-v", "operand", "--json", NULL};
    cr_assert_eq(parse(&s, 0, ordered), GS_OPT_GO);
    cr_assert(s.verbose && !s.json, "the first operand ends the options");
    cr_assert_eq(optind, 2);

    char *mixed[] = {"t", "-v", "operand", "--json", NULL};
    cr_assert_eq(parse(&s, 1, mixed), GS_OPT_GO, "permuted, after a parse in order");
    cr_assert(s.verbose && s.json, "options after the operand too");
    cr_assert_eq(optind, 3);
    cr_assert_str_eq(mixed[optind], "operand");

    char *dashes[] = {"t", "--", "--json", NULL};
    cr_assert_eq(parse(&s, 1, dashes), GS_OPT_GO);
    cr_assert(!s.json);
    cr_assert_str_eq(dashes[optind], "--json");
}

Test(options, a_bad_count)
{
    static const char *const bad[] = {"0", "1000001", "-1", "x", "", "12x"};
    for (size_t i = 0; i < N(bad); i++) {
        struct seen s;
        char *argv[] = {"t", "--top", (char *)bad[i], "operand", NULL};
        catch(2);
        cr_assert_eq(parse(&s, 0, argv), 2, "--top '%s'", bad[i]);
        char *err = caught(2), want[128];
        snprintf(want, sizeof want,
                 "gpushim t: --top needs a number from 1 to 1000000, not '%s'\n", bad[i]);
        cr_assert_str_eq(err, want);
        free(err);
    }
    struct seen s;
    char *most[] = {"t", "--top", "1000000", NULL};
    cr_assert_eq(parse(&s, 0, most), GS_OPT_GO);
    cr_assert_eq(s.top, 1000000);
}

Test(options, what_it_does_not_know)
{
    static const struct {
        const char *arg, *says;
    } cases[] = {
        {"--nope", "t: unrecognized option '--nope'\n"},
        {"-x", "t: invalid option -- 'x'\n"},
        {"--top", "t: option '--top' requires an argument\n"},
        {"--json=1", "t: option '--json' doesn't allow an argument\n"},
        /* main.c takes it out of argv: the parser never does */
        {"--partial", "t: unrecognized option '--partial'\n"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        struct seen s;
        char *argv[] = {"t", (char *)cases[i].arg, NULL};
        catch(2);
        cr_assert_eq(parse(&s, 0, argv), 2, "%s", cases[i].arg);
        char *err = caught(2), want[160];
        snprintf(want, sizeof want, "%sTry 'gpushim t --help'.\n", cases[i].says);
        cr_assert_str_eq(err, want);
        free(err);
    }
}

Test(options, a_call_that_refuses)
{
    struct seen s;
    char *argv[] = {"t", "--call", "bad", "-v", NULL};
    catch(2);
    cr_assert_eq(parse(&s, 0, argv), 2);
    char *err = caught(2);
    cr_assert_str_eq(err, "gpushim t: --call cannot take 'bad'\n");
    free(err);
    cr_assert(!s.verbose, "nothing read after it");
}

Test(options, shared_options)
{
    struct gs_gate_limit limits[GS_GATE_LIMITS];
    struct gs_opt_limits gates = {.v = limits, .two_runs = 0};
    const char *format = "text";
    enum gs_stack_view view = GS_VIEW_MERGED;
    const struct gs_opt opts[] = {
        {.name = "format", .arg = "FMT", .kind = GS_OPT_STRING, .to = &format, .help = "a format"},
        GS_OPT_JSON_FORMAT(&format),
        {.name = "fail-if", .arg = "LIMIT", .kind = GS_OPT_CALL, .to = &gates,
         .fn = gs_opt_fail_if, .help = "a limit"},
        GS_OPT_SYMBOLS,
        {.name = "native", .kind = GS_OPT_CALL, .to = &view, .fn = gs_opt_native,
         .help = "native frames"},
    };
    char *argv[] = {"t", "--format", "html", "--json", "--fail-if", "peak>1GiB",
                    "--fail-if", "unfreed>0", "--native", NULL};
    cr_assert_eq(gs_opt_parse(&in_order, opts, N(opts), 9, argv), GS_OPT_GO);
    cr_assert_str_eq(format, "json");
    cr_assert_eq(view, GS_VIEW_NATIVE);
    cr_assert_eq(gates.n, 2);
    cr_assert_str_eq(limits[1].text, "unfreed>0");
    char *again[] = {"t", "--json", "--format", "html", NULL};
    cr_assert_eq(gs_opt_parse(&in_order, opts, N(opts), 4, again), GS_OPT_GO);
    cr_assert_str_eq(format, "html", "the last one given counts");

    char *change[] = {"t", "--fail-if", "peak>+5%", NULL};
    catch(2);
    cr_assert_eq(gs_opt_parse(&in_order, opts, N(opts), 3, change), 2);
    char *err = caught(2);
    cr_assert(strstr(err, "gpushim t: --fail-if 'peak>+5%': a change needs two runs"), "%s", err);
    free(err);
    char *symbols[] = {"t", "--symbols", "/nonexistent/gs_options", NULL};
    catch(2);
    cr_assert_eq(gs_opt_parse(&in_order, opts, N(opts), 3, symbols), 2);
    err = caught(2);
    cr_assert(strstr(err, "gpushim t: --symbols /nonexistent/gs_options: "), "%s", err);
    free(err);
}

Test(options, help_from_the_table)
{
    struct seen s;
    struct gs_opt opts[16];
    size_t n = table(&s, opts);
    char *help = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&help, &len);
    gs_opt_help(out, &in_order, opts, n);
    fclose(out);
    cr_assert_eq(strncmp(help, usage, strlen(usage)), 0, "the usage first");
    cr_assert_eq(strncmp(help + strlen(usage), "options:\n", 9), 0, "then the options");
    cr_assert_str_eq(help + len - strlen(closing) - 1,
                     "\nExit status: 0, or 2 for a usage error.\n",
                     "the closing words last, after a blank line");
    static const char *const lines[] = { /* an option's lines, in parentheses where several */
        "\n  --json             print one JSON object (schema in docs/json.md), not text\n",
        "\n  -v, --verbose      say more\n",
        "\n  --name NAME        a name; the last one given counts\n",
        "\n  --top N            how many\n",
        ("\n  -d, --dir DIR      a folder, more than once: a long help that the help wraps\n"
         "                     at its width, each further line at the column of the first,\n"
         "                     as wide as the others\n"
         "                     a line of a list, long enough to be wrapped two columns\n"
         "                       further in than the line it continues\n"
         "                     another\n"),
        "\n  --call X           handed to a function\n",
        "\n  -o, --output FILE  write there, not to standard output (a new file: mode 0600)\n",
        /* those the parser adds: of a command that reads traces, */
        ("\n  --partial          exit 0, not 4, when a trace read is incomplete (each\n"
         "                     warning is said on stderr all the same)\n"),
        "\n  --redact           leave the host and the command line out (to share it)\n",
        "\n  -h, --help         this text\n", /* and every command's */
    };
    cr_assert_eq(N(lines), n + 3, "a line for every option, and those added");
    for (size_t i = 0; i < N(lines); i++)
        cr_assert(strstr(help, lines[i]), "%s not in:\n%s", lines[i], help);
    for (char *p = help, *end; *p; p = end + 1) {
        end = strchr(p, '\n');
        cr_assert_leq(end - p, 80, "a line of 80 columns at most: %.*s", (int)(end - p), p);
    }
    free(help);

    out = open_memstream(&help, &len);
    gs_opt_help(out, &permuted, opts, n);
    fclose(out);
    cr_assert(!strstr(help, "--partial") && !strstr(help, "--redact"),
              "a command that reads no trace: %s", help);
    cr_assert(strstr(help, "\n  -h, --help         this text\n\nExit status"), "%s", help);
    free(help);

    char *argv[] = {"t", "-v", "--help", "--nope", NULL};
    catch(1);
    cr_assert_eq(parse(&s, 0, argv), 0, "--help: exit status 0");
    char *printed = caught(1);
    out = open_memstream(&help, &len);
    gs_opt_help(out, &in_order, opts, n);
    fclose(out);
    cr_assert_str_eq(printed, help, "--help prints the help on stdout");
    free(printed);
    free(help);
}
