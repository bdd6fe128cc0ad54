/*
 * oom.c - what a failed allocation found, taken in the replay's one pass
 * when it failed (GS_POSTMORTEMS of them at a time: a failure refused takes
 * none, and one decided recovered or a probe gives its slot back, so the
 * first 16 that may matter get one, outcome.c): the call sites
 * holding most on its device, the sites that grew most over the last few
 * growth samples (growth.c), and what its device's stream-ordered pools
 * held beyond use. verdict.c judges it once the pass is done. Attached to
 * the replay as a hook (gs_oom_attach): the analyzer's alone.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"

/* Keeps the k largest (value, site) pairs, largest first. */
static void top_insert(uint32_t *sites, uint64_t *vals, uint64_t *counts, unsigned *n,
                       uint32_t site, uint64_t val, uint64_t count)
{
    if (!val || (*n == GS_POSTMORTEM_SITES && val <= vals[*n - 1]))
        return;
    unsigned at = *n < GS_POSTMORTEM_SITES ? (*n)++ : GS_POSTMORTEM_SITES - 1;
    while (at > 0 && vals[at - 1] < val) {
        sites[at] = sites[at - 1];
        vals[at] = vals[at - 1];
        if (counts)
            counts[at] = counts[at - 1];
        at--;
    }
    sites[at] = site;
    vals[at] = val;
    if (counts)
        counts[at] = count;
}

static const struct gs_replay_hook oom_hook;

/* The hook's context: GS_POSTMORTEMS slots, a failure's postmortem field
 * naming its slot + 1. */
const struct gs_postmortem *gs_failure_postmortem(const struct gs_replay *r, size_t idx)
{
    const struct gs_postmortem *pms = gs_replay_hook_ctx(r, &oom_hook);
    uint32_t slot = idx < r->nfailures ? r->failures[idx].postmortem : 0;
    return slot && slot <= GS_POSTMORTEMS && pms && pms[slot - 1].present ? &pms[slot - 1]
                                                                            : NULL;
}

static void oom_on_failure(void *ctx, struct gs_replay *r, size_t idx)
{
    struct gs_postmortem *pms = ctx;
    struct gs_failure *f = &r->failures[idx];
    if (f->outcome == GS_OUTCOME_REFUSED)
        return;
    /* a slot a failure decided since as recovered or a probe gave back */
    unsigned slot = 0;
    while (slot < GS_POSTMORTEMS && pms[slot].present)
        slot++;
    if (slot == GS_POSTMORTEMS)
        return;
    struct gs_postmortem *pm = &pms[slot];
    memset(pm, 0, sizeof *pm);
    pm->present = 1;
    f->postmortem = slot + 1;
    for (size_t i = 0; i < r->npools; i++)
        if ((f->device < 0 || r->pools[i].device == f->device) &&
            r->pools[i].reserved > r->pools[i].used)
            pm->pool_unused += r->pools[i].reserved - r->pools[i].used;

    /* what each site held on its device */
    uint64_t *bytes = calloc(r->nsites ? r->nsites : 1, 2 * sizeof *bytes);
    if (bytes) {
        uint64_t *count = bytes + r->nsites;
        for (size_t i = 0; i < r->nallocs; i++) {
            const struct gs_live_alloc *a = &r->allocs[i];
            if (!gs_replay_slot_live(r, i) || a->kind != GS_KIND_DEVICE ||
                (f->device >= 0 && a->device != f->device) || a->site >= r->nsites)
                continue;
            bytes[a->site] += a->size;
            count[a->site]++;
        }
        for (size_t s = 0; s < r->nsites; s++)
            top_insert(pm->held_site, pm->held_bytes, pm->held_count, &pm->nheld, (uint32_t)s,
                       bytes[s], count[s]);
        free(bytes);
    }

    /* what grew since the fourth sample back (all devices) */
    const struct gs_growth *g = gs_growth_of(r);
    if (!g->n)
        return;
    unsigned k0 = g->n > 4 ? g->n - 4 : 0;
    pm->grew_from_ns = g->time_ns[k0];
    pm->grew_from_step = g->step[k0];
    pm->grew_by_steps = g->by_steps;
    for (size_t s = 0; s < r->nsites && s < g->nsites; s++) {
        uint64_t then = g->live[s * GS_GROWTH_SAMPLES + k0], now = r->sites[s].live_bytes;
        if (r->sites[s].kind == GS_KIND_DEVICE && now > then)
            top_insert(pm->grew_site, pm->grew_bytes, NULL, &pm->ngrew, (uint32_t)s, now - then, 0);
    }
}

/* Failure idx was decided recovered or a probe: its slot goes back. */
static void oom_on_settled(void *ctx, struct gs_replay *r, size_t idx)
{
    struct gs_postmortem *pms = ctx;
    uint32_t slot = r->failures[idx].postmortem;
    if (slot && slot <= GS_POSTMORTEMS)
        pms[slot - 1].present = 0;
}

static void oom_reset(void *ctx, struct gs_replay *r)
{
    (void)r;
    memset(ctx, 0, GS_POSTMORTEMS * sizeof(struct gs_postmortem));
}

static const struct gs_replay_hook oom_hook = {
    .on_failure = oom_on_failure,
    .on_settled = oom_on_settled,
    .reset = oom_reset,
};

int gs_oom_attach(struct gs_replay *r)
{
    size_t size = GS_POSTMORTEMS * sizeof(struct gs_postmortem);
    return gs_replay_attach(r, &oom_hook, size) ? 0 : -1;
}
