/*
 * gate.h - the regression gate of `gpushim report --fail-if` and `gpushim
 * diff --fail-if` (gate.c): limits on a run's findings (its peak, what it
 * never freed, its leak per step, its unrecovered failures, its memory by
 * role at the peak), read from the command line, checked against one run
 * or against the change from one run to another, one line per limit
 * broken.
 *
 * Included by: analyzer/cmd/report.c, diff.c and options.c; tests/unit/test_gate.c and
 * test_options.c.
 */
#ifndef GPUSHIM_FINDINGS_GATE_H
#define GPUSHIM_FINDINGS_GATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/symbols/symbols.h"

struct gs_replay;
struct gs_symbolizer;
struct gs_trace_info;

enum gs_gate_metric {
    GS_GATE_PEAK,        /* "peak": the process's device memory at its peak, bytes */
    GS_GATE_UNFREED,     /* "unfreed": device memory never freed, bytes */
    GS_GATE_LEAK,        /* "leak": the fastest leak suspect's growth per step, bytes */
    GS_GATE_UNRECOVERED, /* "unrecovered": failed allocations nothing like succeeded after */
    GS_GATE_ROLE,        /* then one per role (enum gs_role, roles.h), by its JSON key
                          * ("activations", "optimizer_state"): its bytes at the peak */
    GS_GATE_METRICS = GS_GATE_ROLE + 9
};

#define GS_GATE_LIMITS 16 /* --fail-if options at most */

/* A limit, METRIC>VALUE: the run's own figure over VALUE, or (diff only)
 * METRIC>+VALUE, its change from run A over VALUE, or METRIC>+P%, over P
 * percent of A's. */
struct gs_gate_limit {
    char text[64]; /* as given */
    enum gs_gate_metric metric;
    int change;    /* +: from run A */
    int percent;   /* value is a percentage of A's figure */
    double value;  /* bytes, a count, or a percentage */
};

/* Reads a limit. 0, or -1 with why in err. */
int gs_gate_parse(const char *text, struct gs_gate_limit *l, char *err, size_t errsz);
/* Reads a --fail-if of command cmd onto limits[*n] (at most
 * GS_GATE_LIMITS); a change only with two_runs. 0, or -1 having said why
 * on stderr. */
int gs_gate_add(const char *cmd, const char *text, int two_runs, struct gs_gate_limit *limits,
                size_t *n);

/* One run's figures for the gate, each with the call site behind it. */
struct gs_gate_run {
    uint64_t v[GS_GATE_METRICS];
    int known[GS_GATE_METRICS]; /* leak: only with steps marked; roles: where told */
    const char *unknown_why[GS_GATE_METRICS]; /* why a role is not (roles.c) */
    char site[GS_GATE_METRICS][256]; /* "" when none */
};

/* The figures of a replayed run, from its findings (found.h: made for r
 * in view): the peak and its largest site, what is still live and its
 * largest site, the leak suspect growing fastest per step, the first
 * unrecovered failure's site, and the bytes of each role at the peak with
 * the largest site of it. */
struct gs_findings;
void gs_gate_run_of(const struct gs_replay *r, struct gs_symbolizer *sym,
                    enum gs_stack_view view, const struct gs_findings *f,
                    struct gs_gate_run *g);

/* Checks each limit against run b, or its change from a (NULL: one run;
 * a change is then refused, which gs_gate_parse's caller should have
 * said). A broken limit, or one that cannot be checked (no steps marked
 * for the leak), is a line on out: "CMD: --fail-if 'LIMIT' broken: WHAT;
 * SITE", the site being grew[metric] when given (diff: the one that grew
 * most), else b's. Returns how many lines it wrote. */
size_t gs_gate_check(FILE *out, const char *cmd, const struct gs_gate_limit *l, size_t n,
                     const struct gs_gate_run *a, const struct gs_gate_run *b,
                     const char *const grew[GS_GATE_METRICS]);

#endif
