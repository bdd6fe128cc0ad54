/*
 * warnings.c - what a report lacks (warnings.h): its sentences, made here
 * once for every screen.
 */
#include "analyzer/findings/warnings.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/read/read.h"
#include "analyzer/util/bytes.h"
#include "analyzer/util/nomem.h"
#include "analyzer/util/text.h"

const char *gs_warning_kind_name(enum gs_warning_kind kind)
{
    switch (kind) {
    case GS_WARNING_TRACE: return "trace";
    case GS_WARNING_MEMORY: return "memory";
    case GS_WARNING_IMPLAUSIBLE: return "implausible";
    }
    return "?";
}

/* Appends a clause to buf (", " between clauses). */
static void clause(char *buf, size_t sz, const char *fmt, ...)
{
    size_t n = strlen(buf);
    if (n && n + 2 < sz)
        memcpy(buf + n, "; ", 3), n += 2;
    if (n >= sz)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sz - n, fmt, ap);
    va_end(ap);
}

static const char *s_(uint64_t n) { return n == 1 ? "" : "s"; }

static void trace_warning(const struct gs_trace_info *info, const struct gs_reader_stats *st,
                          char *buf, size_t sz)
{
    char why[sizeof ((struct gs_warning *)0)->text - 64] = "";
    int ring = st->ring_use == GS_RING_READ;
    if (st->damaged_chunks)
        clause(why, sizeof why, "%" PRIu64 " damaged chunk%s skipped", st->damaged_chunks,
               s_(st->damaged_chunks));
    if (st->damaged_records)
        clause(why, sizeof why, "%" PRIu64 " damaged record%s skipped", st->damaged_records,
               s_(st->damaged_records));
    if (st->write_failed)
        clause(why, sizeof why, "the shim could not write it past byte %" PRIu64 " at %.3f s (%s)",
               st->fail_offset, (double)st->fail_time_ns / 1e9, strerror(st->fail_errno));
    if (st->ring_lost || st->end_lost)
        clause(why, sizeof why, "%" PRIu64 " event%s lost: %s", st->ring_lost + st->end_lost,
               s_(st->ring_lost + st->end_lost),
               st->write_failed && st->ring_use == GS_RING_NONE
                   ? "not in the trace, and no ring file kept them"
                   : "the ring was full");
    if (st->ring_gap)
        clause(why, sizeof why, "events are missing before the ones from its ring file");
    if (!ring && st->truncated_at)
        clause(why, sizeof why, "cut off at byte %" PRIu64, st->truncated_at);
    if (!ring && !st->end_seen && !st->write_failed) {
        char problem[sizeof st->ring_problem];
        gs_text_copy(problem, sizeof problem, st->ring_problem, strlen(st->ring_problem));
        int live = !strcmp(gs_trace_ending(info, st), "live");
        if (st->ring_use == GS_RING_MISSING || st->ring_use == GS_RING_UNUSABLE)
            clause(why, sizeof why,
                   "the process %s, and its ring file, which holds the last events, could not be "
                   "read (%s)",
                   live ? "is still running" : "did not finish it (killed or crashed)", problem);
        else
            clause(why, sizeof why, "the process %s, and no ring file holds the last events",
                   live ? "is still running" : "did not finish it (killed or crashed)");
    }
    snprintf(buf, sz, "the trace is incomplete: %s", why[0] ? why : "events are missing");
}

static void implausible_warning(const struct gs_implausible *im, char *buf, size_t sz)
{
    char v[32], first[96];
    switch (im->first_what) {
    case GS_IMPLAUSIBLE_TIME:
        snprintf(first, sizeof first, "an event %.1f years after the start",
                 (double)im->first_value / 1e9 / (365.25 * 86400));
        break;
    case GS_IMPLAUSIBLE_TOTAL:
        snprintf(first, sizeof first, "%s allocated in all", gs_human_bytes(im->first_value, v, sizeof v));
        break;
    default:
        snprintf(first, sizeof first, "a size of %s", gs_human_bytes(im->first_value, v, sizeof v));
        break;
    }
    snprintf(buf, sz,
             "%" PRIu64 " event%s with values no run has (the first: %s) not counted: the trace "
             "is damaged or was not written by gpushim",
             im->events, s_(im->events), first);
}

void gs_warnings_of(const struct gs_trace_info *info, const struct gs_reader_stats *st,
                    const struct gs_replay *r, struct gs_warnings *out)
{
    out->n = 0;
    if (st && !gs_trace_complete(st)) {
        out->w[out->n].kind = GS_WARNING_TRACE;
        trace_warning(info, st, out->w[out->n].text, sizeof out->w[out->n].text);
        out->n++;
    }
    uint64_t nomem = gs_nomem_count();
    if (nomem) {
        out->w[out->n].kind = GS_WARNING_MEMORY;
        snprintf(out->w[out->n].text, sizeof out->w[out->n].text,
                 "out of memory: %" PRIu64 " of the analyzer's allocations failed, and what they "
                 "would have held is missing from the figures (give it more memory: ulimit -v, "
                 "the container's limit)",
                 nomem);
        out->n++;
    }
    if (r && r->implausible.events) {
        out->w[out->n].kind = GS_WARNING_IMPLAUSIBLE;
        implausible_warning(&r->implausible, out->w[out->n].text, sizeof out->w[out->n].text);
        out->n++;
    }
}
