/*
 * cmd.h - the commands over traces (besides report and export): run (run.c),
 * diff (diff.c), report over a job's ranks (ranks.c), plan (plan.c), whatif
 * (whatif.c).
 *
 * Included by: analyzer/main.c (and analyzer/cmd's files).
 */
#ifndef GPUSHIM_CMD_CMD_H
#define GPUSHIM_CMD_CMD_H

#include <stddef.h>

/* ---- run.c: gpushim run ---- */
int gs_cmd_run(int argc, char **argv);

/* ---- diff.c: gpushim diff ---- */
int gs_cmd_diff(int argc, char **argv);

/* ---- ranks.c: gpushim report over the traces of a job's ranks ---- */
/* Reads each trace and prints the table of ranks; the exit status. */
int gs_report_ranks(char **paths, size_t n, int json);

/* ---- plan.c: gpushim plan ---- */
int gs_cmd_plan(int argc, char **argv);

/* ---- whatif.c: gpushim whatif ---- */
int gs_cmd_whatif(int argc, char **argv);

#endif
