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
#include "analyzer/findings/found.h"

struct gs_trace_info;
struct gs_reader_stats;
struct gs_replay;
struct gs_symbolizer;
struct gs_json;

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
    const struct gs_read_seen *seen; /* what the read saw, for the what-if's read */
    /* the trace's stacks, modules, code objects and threads' names, for the
     * frames and names the screens give (symbols.h); the figures and the
     * judgements are the findings' */
    const struct gs_replay *replay;
    struct gs_symbolizer *sym;
    const struct gs_report_options *opt;
    const struct gs_findings *found; /* findings/found.h: what every screen says */
};

void gs_report_text(FILE *out, const struct gs_report *rep);

void gs_report_json(FILE *out, const struct gs_report *rep);
/* A site's "frames" and "gil", as in the report's SITE (report_json.c). */
void gs_json_frames(struct gs_json *j, const struct gs_replay *r, struct gs_symbolizer *sym,
                    enum gs_stack_view view, uint32_t stack_id);

#endif
