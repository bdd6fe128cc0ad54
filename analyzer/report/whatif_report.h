/*
 * whatif_report.h - gpushim whatif's answer for people (text) and programs
 * (JSON, schema in docs/json.md "whatif"), in whatif_report.c; the HTML
 * page is analyzer/export/whatif_html.c's.
 *
 * Included by: analyzer/report, analyzer/export, analyzer/cmd.
 */
#ifndef GPUSHIM_REPORT_WHATIF_REPORT_H
#define GPUSHIM_REPORT_WHATIF_REPORT_H

#include <stdio.h>

#include "analyzer/symbols/symbols.h"
#include "analyzer/whatif/answer.h"

struct gs_replay;
struct gs_symbolizer;

struct gs_wi_report {
    const char *path;
    const struct gs_wi_answer *a;
    const struct gs_replay *r;   /* the trace read (names of call sites) */
    struct gs_symbolizer *sym;
    enum gs_stack_view view;
    int torch_approx;            /* --torch named a version the model reads as another */
    const char *torch_asked;     /* the version asked for, or NULL */
};

/* The model the answer replayed through, in a few words. */
const char *gs_wi_model_name(const struct gs_wi_answer *a);
/* What the replay took as tensors, in a few words. */
const char *gs_wi_source_text(enum gs_wi_source s);
/* Where a case ran out, in a few words: "step 37 (step): 300.00 MiB at
 * f (a.c:3) from g (a.c:9)". */
void gs_wi_oom_text(const struct gs_wi_report *rep, const struct gs_wi_oom *o, char *buf,
                    size_t sz);
/* A setting's outcome on card c (c == ncards: no limit), in a few words:
 * where it runs out, "fits" (and whether it serves the run's failed
 * request), or "-" with no limit. */
void gs_wi_outcome_text(const struct gs_wi_report *rep, size_t c, const struct gs_wi_outcome *o,
                        char *buf, size_t sz);
void gs_whatif_text(FILE *out, const struct gs_wi_report *rep);
/* For the OOM verdicts of a report: when the trace read into r (from path)
 * is a PyTorch run recorded per tensor (or reporting its blocks), or a JAX
 * run with XLA_PYTHON_CLIENT_ALLOCATOR=platform, with a failure it did not
 * recover from, replays it on the run's card under the settings compared by
 * default and returns 1 with a filled; else 0. */
struct gs_trace_info;
struct gs_read_seen;
int gs_report_whatif(const char *path, const struct gs_read_seen *seen,
                     const struct gs_trace_info *info, const struct gs_replay *r,
                     struct gs_wi_answer *a);
void gs_whatif_json(FILE *out, const struct gs_wi_report *rep);

#endif
