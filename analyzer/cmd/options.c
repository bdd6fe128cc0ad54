/*
 * options.c - the commands' one option parser (cmd.h): a command's table of
 * options read by getopt_long, each option's action taken, the command's
 * --help written from the table, and the options it adds (--partial and
 * --redact of a command that reads traces, every command's -h, --help); the
 * options several commands share (--fail-if, --symbols, --native, --json for
 * --format json); where a command writes (-o).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/output.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/findings/gate.h"
#include "analyzer/cmd/cmd.h"

#define HELP_WIDTH 80 /* the longest line of an option's help */
#define LONG_ONLY 256 /* getopt_long's value for the long-only option i: LONG_ONLY + i */

/* A count option (--top, --frames): 1 to 1000000, else said on stderr. */
static int count(const char *cmd, const char *name, const char *s, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || !*s || *s == '-' || v == 0 || v > 1000000) {
        fprintf(stderr, "gpushim %s: --%s needs a number from 1 to 1000000, not '%s'\n", cmd, name,
                s);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

int gs_opt_fail_if(void *to, const char *cmd, const char *arg)
{
    struct gs_opt_limits *l = to;
    return gs_gate_add(cmd, arg, l->two_runs, l->v, &l->n);
}

int gs_opt_symbols(void *to, const char *cmd, const char *arg)
{
    (void)to;
    return gs_sym_search_option(cmd, arg);
}

int gs_opt_native(void *to, const char *cmd, const char *arg)
{
    (void)cmd;
    (void)arg;
    *(enum gs_stack_view *)to = GS_VIEW_NATIVE;
    return 0;
}

int gs_opt_json_format(void *to, const char *cmd, const char *arg)
{
    (void)cmd;
    (void)arg;
    *(const char **)to = "json";
    return 0;
}

/* "-o, --output FILE": how option o is written in help; its length. */
static int spelling(const struct gs_opt *o, char *buf, size_t sz)
{
    int n = o->letter ? snprintf(buf, sz, "-%c, ", o->letter) : 0;
    return n + snprintf(buf + n, sz - (size_t)n, "--%s%s%s", o->name, o->arg ? " " : "",
                        o->arg ? o->arg : "");
}

/* help's words from column at (the line begun) to HELP_WIDTH, the lines
 * after at column col; a '\n' in help begins a line of a list, at col, its
 * own further lines two columns in. */
static void wrap(FILE *out, const char *help, size_t at, size_t col)
{
    size_t indent = col;
    int fresh = 1; /* no word on this line yet */
    for (const char *p = help; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        if (*p == '\n') {
            fprintf(out, "\n%*s", (int)col, "");
            at = col;
            indent = col + 2;
            fresh = 1;
            p++;
            continue;
        }
        size_t len = strcspn(p, " \n");
        if (!fresh && at + 1 + len > HELP_WIDTH) {
            fprintf(out, "\n%*s", (int)indent, "");
            at = indent;
            fresh = 1;
        }
        if (!fresh) {
            fputc(' ', out);
            at++;
        }
        fwrite(p, 1, len, out);
        at += len;
        fresh = 0;
        p += len;
    }
    fputc('\n', out);
}

/* What the parser adds after a command's table: --partial and --redact,
 * of a command that reads traces (analyzer/main.c takes them out of argv
 * before the command sees it), then every command's -h, --help. */
static const struct gs_opt added[] = {
    {.name = "partial", .kind = GS_OPT_MAIN,
     .help = "exit 0, not 4, when a trace read is incomplete (each warning is said on stderr "
             "all the same)"},
    {.name = "redact", .kind = GS_OPT_MAIN,
     .help = "leave the host and the command line out (to share it)"},
    {.name = "help", .letter = 'h', .kind = GS_OPT_HELP, .help = "this text"},
};
#define ADDED (sizeof added / sizeof added[0])

/* c's options into all (room for n + ADDED): the table opts of n, then
 * those added; how many. */
static size_t gather(const struct gs_command *c, const struct gs_opt *opts, size_t n,
                     struct gs_opt *all)
{
    size_t from = c->reads_traces ? 0 : ADDED - 1;
    memcpy(all, opts, n * sizeof *opts);
    memcpy(all + n, added + from, (ADDED - from) * sizeof *added);
    return n + ADDED - from;
}

/* The help of c, whose options are all, n of them. */
static void help(FILE *out, const struct gs_command *c, const struct gs_opt *all, size_t n)
{
    char buf[128];
    size_t col = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = (size_t)spelling(&all[i], buf, sizeof buf);
        if (len + 4 > col)
            col = len + 4;
    }
    fputs(c->usage, out);
    fputs("options:\n", out);
    for (size_t i = 0; i < n; i++) {
        int len = spelling(&all[i], buf, sizeof buf);
        fprintf(out, "  %s%*s", buf, (int)col - len - 2, "");
        wrap(out, all[i].help, col, col);
    }
    fputc('\n', out);
    fputs(c->closing, out);
}

void gs_opt_help(FILE *out, const struct gs_command *c, const struct gs_opt *opts, size_t n)
{
    struct gs_opt all[n + ADDED];
    help(out, c, all, gather(c, opts, n, all));
}

/* Takes option o of c's options all (n of them), its argument in getopt's
 * optarg: GS_OPT_GO, or the exit status (0 after the help, 2 for a usage
 * error said on stderr). */
static int take(const struct gs_command *c, const struct gs_opt *all, size_t n,
                const struct gs_opt *o)
{
    switch (o->kind) {
    case GS_OPT_FLAG:
        *(int *)o->to = 1;
        return GS_OPT_GO;
    case GS_OPT_STRING:
        *(const char **)o->to = optarg;
        return GS_OPT_GO;
    case GS_OPT_COUNT:
        return count(c->name, o->name, optarg, o->to) ? 2 : GS_OPT_GO;
    case GS_OPT_LIST:
        if (*o->n == o->max) {
            fprintf(stderr, "gpushim %s: %s\n", c->name, o->full);
            return 2;
        }
        ((const char **)o->to)[(*o->n)++] = optarg;
        return GS_OPT_GO;
    case GS_OPT_CALL:
        return o->fn(o->to, c->name, optarg) ? 2 : GS_OPT_GO;
    case GS_OPT_HELP:
        help(stdout, c, all, n);
        return 0;
    case GS_OPT_MAIN: /* never handed to getopt_long */
        break;
    }
    return 2;
}

int gs_opt_parse(const struct gs_command *c, const struct gs_opt *opts, size_t n, int argc,
                 char **argv)
{
    struct gs_opt all[n + ADDED];
    struct option longopts[n + ADDED + 1];
    char shorts[2 * (n + ADDED) + 2];
    size_t nall = gather(c, opts, n, all), nlong = 0, nshort = 0;
    if (!c->permute)
        shorts[nshort++] = '+';
    for (size_t i = 0; i < nall; i++) {
        const struct gs_opt *o = &all[i];
        if (o->kind == GS_OPT_MAIN)
            continue;
        longopts[nlong++] = (struct option){o->name, o->arg ? required_argument : no_argument,
                                            NULL, o->letter ? o->letter : LONG_ONLY + (int)i};
        if (o->letter) {
            shorts[nshort++] = o->letter;
            if (o->arg)
                shorts[nshort++] = ':';
        }
    }
    longopts[nlong] = (struct option){NULL, 0, NULL, 0};
    shorts[nshort] = 0;
    optind = 0; /* getopt begun afresh: another table than last time, maybe */
    for (int v, rc; (v = getopt_long(argc, argv, shorts, longopts, NULL)) != -1;) {
        const struct gs_opt *o = v >= LONG_ONLY ? &all[v - LONG_ONLY] : NULL;
        for (size_t i = 0; !o && i < nall; i++)
            if (all[i].letter == v)
                o = &all[i];
        if (!o) { /* '?': getopt_long has said what was wrong */
            fprintf(stderr, "Try 'gpushim %s --help'.\n", c->name);
            return 2;
        }
        if ((rc = take(c, all, nall, o)) != GS_OPT_GO)
            return rc;
    }
    return GS_OPT_GO;
}

FILE *gs_cmd_open_output(const char *cmd, const char *path)
{
    if (path == NULL)
        return stdout;
    FILE *out = gs_open_output(path);
    if (out == NULL)
        fprintf(stderr, "gpushim %s: cannot write %s: %s\n", cmd, path, strerror(errno));
    return out;
}

int gs_cmd_close_output(const char *cmd, FILE *out, const char *path)
{
    int failed = ferror(out) | (path ? fclose(out) : fflush(out));
    if (failed)
        fprintf(stderr, "gpushim %s: cannot write %s\n", cmd, path ? path : "the output");
    return failed ? 1 : 0;
}
