/*
 * cmd.h - the commands, a file each: run (run.c), report (report.c; over a
 * job's ranks, ranks.c), export (export.c), diff (diff.c), plan (plan.c),
 * whatif (whatif.c), and what their option parsing shares (options.c).
 *
 * Included by: analyzer/main.c (and analyzer/cmd's files).
 */
#ifndef GPUSHIM_CMD_CMD_H
#define GPUSHIM_CMD_CMD_H

#include <stddef.h>
#include <stdio.h>

/* ---- options.c ---- */
/* A count option of cmd's (--top, --frames): 1 to 1000000, else said on
 * stderr ("gpushim CMD: OPT needs a number ...") and -1. */
int gs_opt_count(const char *cmd, const char *opt, const char *s, unsigned *out);
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
