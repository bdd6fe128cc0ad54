/*
 * report.h - the report of a trace (struct gs_report), for people
 * (report_text.c) and for programs (report_json.c).
 *
 * Included by: the analyzer's layers from report up (report, export, cmd,
 * main.c).
 */
#ifndef GPUSHIM_REPORT_REPORT_H
#define GPUSHIM_REPORT_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/findings.h" /* struct gs_fit, struct gs_suspect */
#include "analyzer/findings/warnings.h"

struct gs_trace_info;
struct gs_reader_stats;
struct gs_replay;
struct gs_symbolizer;
struct gs_json;
struct gs_wi_answer;

struct gs_report_options {
    unsigned top;    /* sites listed per section */
    unsigned frames; /* frames shown per site in the text report */
    int color;
    enum gs_stack_view view; /* --native: GS_VIEW_NATIVE */
};

struct gs_report {
    const char *path;
    const struct gs_trace_info *info;
    const struct gs_reader_stats *stats;
    const struct gs_replay *replay;
    struct gs_symbolizer *sym;
    const struct gs_report_options *opt;
    /* the what-if replay on the run's card, for the verdicts on failures
     * (gs_report_whatif); NULL: none */
    const struct gs_wi_answer *whatif;
    /* what the report lacks (findings/warnings.h); NULL: nothing said */
    const struct gs_warnings *warnings;
    /* the judgements every screen gives (gs_report_find); NULL: each screen
     * works them out for itself */
    const struct gs_found *found;
};

/* ---- found.c: the judgements of a report, worked out once for every
 * screen that shows them ---- */
struct gs_found {
    struct gs_suspect *suspects; /* leak suspects, fastest first */
    size_t nsuspects;
    struct gs_fit fit; /* the cards the run fits on, the suspects' rise counted */
    struct gs_wi_answer *whatif; /* the what-if replay for the failures' verdicts, or NULL */
    struct gs_warnings warnings; /* what the report lacks */
};
/* The suspects and the fit into f (its other fields left as they are);
 * the rest is gs_report_prepare's (analyzer/cmd/cmd.h). */
void gs_report_find(const struct gs_report *rep, struct gs_found *f);
/* Frees what f holds (the suspects, the what-if replay). */
void gs_found_free(struct gs_found *f);
/* rep's, or, where it has none, *local worked out now (free it with
 * gs_found_free when the result is local). */
const struct gs_found *gs_report_found(const struct gs_report *rep, struct gs_found *local);

void gs_report_text(FILE *out, const struct gs_report *rep);
/* What became of the failed allocations, in a few words ("1 unrecovered;
 * 2 recovered, 1 probe"), when they were not all unrecovered: 1 and the
 * words in buf (report_text.c), else 0 and "". */
int gs_report_outcomes(const struct gs_replay *r, char *buf, size_t sz);

void gs_report_json(FILE *out, const struct gs_report *rep);
/* A site's "frames" and "gil", as in the report's SITE (report_json.c). */
void gs_json_frames(struct gs_json *j, const struct gs_replay *r, struct gs_symbolizer *sym,
                    enum gs_stack_view view, uint32_t stack_id);

#endif
