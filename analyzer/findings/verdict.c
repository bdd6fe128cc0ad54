/*
 * verdict.c - why an allocation failed, in one sentence with its evidence
 * (docs/commands.md, "Out of memory"): from what oom.c took at the failure, the
 * fragmentation blocks.c took then, and the leak suspects (suspects.c).
 * The verdict is the first cause that explains the shortfall (the request
 * less the device's free memory):
 *   fragmentation   the process held free memory of its own (in its
 *                   segments' gaps, in its pools) that would have held it;
 *   leak            the suspects' growth up to the failure is at least the
 *                   shortfall: without it the request would have fit;
 *   other process   what the process did not hold (total - free - held:
 *                   other processes, the CUDA context) is at least the
 *                   shortfall and a tenth of the device;
 *   too large       none of those: what the process itself needed does not
 *                   fit the device.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/findings.h"

const char *gs_oom_cause_name(enum gs_oom_cause c)
{
    switch (c) {
    case GS_OOM_FRAGMENTATION: return "fragmentation";
    case GS_OOM_LEAK: return "leak";
    case GS_OOM_OTHER_PROCESS: return "other_process";
    case GS_OOM_TOO_LARGE: return "too_large";
    default: return "unknown";
    }
}

/* What a suspect had grown by time t: its value at the last point at or
 * before t, less the least before it. */
static uint64_t growth_until(const struct gs_replay *r, const struct gs_suspect *s, uint64_t t)
{
    const struct gs_growth *g = gs_growth_of(r);
    uint64_t low = UINT64_MAX, at = 0;
    int any = 0;
    for (unsigned k = 0; k < s->npoints; k++) {
        uint64_t when = k < g->n ? g->time_ns[k] : r->last_time_ns;
        if (when > t)
            break;
        if (s->v[k] < low)
            low = s->v[k];
        at = s->v[k];
        any = 1;
    }
    return any ? at - low : 0;
}

/* The free memory the process held on the failure's device: in the gaps of
 * its segments (blocks.c), and in its pools beyond use (oom.c). */
static void held_free(const struct gs_replay *r, size_t idx, struct gs_oom_verdict *v)
{
    const struct gs_blocks *b = &r->blocks;
    if (idx < b->at_failure_cap && b->at_failure[idx].present) {
        const struct gs_frag *fr = &b->at_failure[idx];
        if (fr->segment_bytes > fr->block_bytes) {
            v->held_free = fr->segment_bytes - fr->block_bytes;
            v->largest_free = fr->largest_free;
        }
    }
    const struct gs_postmortem *pm = gs_failure_postmortem(r, idx);
    if (pm) {
        uint64_t pool = pm->pool_unused;
        v->held_free += pool;
        if (pool > v->largest_free)
            v->largest_free = pool; /* a pool's free bytes: one piece at best */
    }
}

void gs_oom_verdict(const struct gs_replay *r, size_t idx, const struct gs_suspect *sus,
                    size_t nsus, struct gs_symbolizer *sym, enum gs_stack_view view,
                    struct gs_oom_verdict *v)
{
    const struct gs_failure *f = &r->failures[idx];
    char a[32], b[32], c[32], d[32], e[32];
    memset(v, 0, sizeof *v);
    int known = f->total_bytes != UINT64_MAX && f->free_bytes != UINT64_MAX &&
                f->total_bytes > 0 && f->total_bytes >= f->free_bytes;
    v->known = known;
    v->shortfall = known && f->requested > f->free_bytes ? f->requested - f->free_bytes : 0;
    uint64_t used = known ? f->total_bytes - f->free_bytes : 0, live = f->process_live_bytes;
    v->other_bytes = used >= live ? (used - live > (uint64_t)INT64_MAX ? INT64_MAX
                                                                         : (int64_t)(used - live))
                     : live - used > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)(live - used);
    held_free(r, idx, v);
    for (size_t i = 0; i < nsus; i++) {
        uint64_t grew = growth_until(r, &sus[i], f->time_ns);
        v->leak_growth += grew;
        if (grew > v->leak_site_growth) {
            v->leak_site_growth = grew;
            v->leak_stack = sus[i].stack_id;
        }
    }
    if (v->held_free && f->requested <= v->held_free) {
        v->cause = GS_OOM_FRAGMENTATION;
        if (f->requested <= v->largest_free)
            snprintf(v->sentence, sizeof v->sentence,
                     "Fragmentation: the process already held %s free inside its own "
                     "allocations, with a free piece of %s that would have held the %s "
                     "request, yet asked the device for more.",
                     gs_human_bytes(v->held_free, a, sizeof a),
                     gs_human_bytes(v->largest_free, b, sizeof b),
                     gs_human_bytes(f->requested, c, sizeof c));
        else
            snprintf(v->sentence, sizeof v->sentence,
                     "Fragmentation: the process held %s free inside its own allocations, "
                     "enough for the %s request, but its largest free piece was %s.",
                     gs_human_bytes(v->held_free, a, sizeof a),
                     gs_human_bytes(f->requested, b, sizeof b),
                     gs_human_bytes(v->largest_free, c, sizeof c));
    } else if (!known) {
        v->cause = GS_OOM_UNKNOWN;
        snprintf(v->sentence, sizeof v->sentence,
                 "No verdict: the device's free and total memory at the failure are unknown; "
                 "the process held %s and asked for %s.",
                 gs_human_bytes(f->process_live_bytes, a, sizeof a),
                 gs_human_bytes(f->requested, b, sizeof b));
    } else if (v->leak_growth && v->leak_growth >= v->shortfall) {
        v->cause = GS_OOM_LEAK;
        char where[256], all[96] = "";
        gs_site_where(r, sym, view, v->leak_stack, where, sizeof where);
        if (v->leak_growth > v->leak_site_growth)
            snprintf(all, sizeof all, " (%s from all leak suspects)",
                     gs_human_bytes(v->leak_growth, b, sizeof b));
        snprintf(v->sentence, sizeof v->sentence,
                 "A leak: %s kept growing, by %s up to the failure%s, and without that growth "
                 "the %s request would have fit (it was %s short).",
                 where, gs_human_bytes(v->leak_site_growth, a, sizeof a), all,
                 gs_human_bytes(f->requested, c, sizeof c),
                 gs_human_bytes(v->shortfall, d, sizeof d));
    } else if (v->other_bytes > 0 && (uint64_t)v->other_bytes >= v->shortfall &&
               (uint64_t)v->other_bytes >= f->total_bytes / 10) {
        v->cause = GS_OOM_OTHER_PROCESS;
        snprintf(v->sentence, sizeof v->sentence,
                 "Another process: %s of the %s device was held by others (other processes, "
                 "the CUDA context), more than the %s the request was short; this process "
                 "held %s.",
                 gs_human_bytes((uint64_t)v->other_bytes, a, sizeof a),
                 gs_human_bytes(f->total_bytes, b, sizeof b),
                 gs_human_bytes(v->shortfall, c, sizeof c),
                 gs_human_bytes(f->process_live_bytes, d, sizeof d));
    } else {
        v->cause = GS_OOM_TOO_LARGE;
        snprintf(v->sentence, sizeof v->sentence,
                 "Too large for the device: the process held %s and asked for %s more, %s in "
                 "all, and the %s device had %s free; no leak or fragmentation explains it.",
                 gs_human_bytes(f->process_live_bytes, a, sizeof a),
                 gs_human_bytes(f->requested, b, sizeof b),
                 gs_human_bytes(f->process_live_bytes + f->requested, c, sizeof c),
                 gs_human_bytes(f->total_bytes, d, sizeof d),
                 gs_human_bytes(f->free_bytes, e, sizeof e));
    }
}
