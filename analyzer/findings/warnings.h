/*
 * warnings.h - whether a report is whole, and what it lacks if not
 * (warnings.c): the trace is incomplete (damaged, cut off, events lost),
 * the analyzer ran out of memory, or the trace holds values no run has.
 * Every screen says the same warnings (text, JSON, HTML, stderr), and every
 * command exits 4 with them unless told --partial (report/incomplete.c).
 *
 * Included by: the analyzer's layers from report up.
 */
#ifndef GPUSHIM_FINDINGS_WARNINGS_H
#define GPUSHIM_FINDINGS_WARNINGS_H

#include <stddef.h>

struct gs_reader_stats;
struct gs_trace_info;
struct gs_replay;

enum gs_warning_kind { GS_WARNING_TRACE, GS_WARNING_MEMORY, GS_WARNING_IMPLAUSIBLE };
struct gs_warning {
    enum gs_warning_kind kind;
    char text[512]; /* one sentence, no control bytes */
};
struct gs_warnings {
    size_t n; /* 0: the report is whole */
    struct gs_warning w[3];
};

/* The warnings of a trace read (info, st) and replayed (r), and of the
 * analyzer's own allocations so far (util/nomem.h). */
void gs_warnings_of(const struct gs_trace_info *info, const struct gs_reader_stats *st,
                    const struct gs_replay *r, struct gs_warnings *out);
/* "trace", "memory", "implausible": the JSON's kind. */
const char *gs_warning_kind_name(enum gs_warning_kind kind);

#endif
