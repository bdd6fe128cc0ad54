/*
 * outcome.c - what became of each failed allocation (docs/commands.md
 * "Failed allocations: what became of each"), decided in the replay's one pass as
 * later events show it, and the probes' allocations kept apart from the
 * live set.
 *
 *   refused      any result but CUDA_ERROR_OUT_OF_MEMORY: not a shortage (a
 *                FABRIC handle type on a machine without fabric, which NCCL,
 *                PyTorch and XLA ask for first; CUDA_ERROR_NOT_PERMITTED,
 *                _NOT_SUPPORTED, _INVALID_VALUE); decided at once.
 *   recovered    the thread's next allocation attempt came from the same call
 *                site and device for as much or less, and succeeded, or failed
 *                and is itself recovered: PyTorch's caching allocator frees
 *                its cached segments and calls alloc_block again for the same
 *                size; cuDNN's benchmark halves its workspace after a caught
 *                out-of-memory error; XLA's BFC allocator backs off to 0.9x.
 *   probe        such a chain that asked to learn what fits: its first
 *                failure asked for at least the device's free memory then,
 *                each attempt since for at most half the one before, and the
 *                allocation that succeeded was freed before its thread did
 *                anything else (PyTorch's cudaMallocAsync backend, in
 *                cacheInfo, which cuDNN calls: all free memory, halved until
 *                it fits, freed at once).
 *   unrecovered  anything else: the thread's next attempt came from elsewhere,
 *                or never came.
 *
 * A chain is a thread's failed attempts from one call site, each the
 * thread's next allocation attempt after the one before (frees may come
 * between: PyTorch empties its cache there); it stays open until the
 * thread's next attempt, which decides every failure in it. Attempts are
 * allocations of memory (reservations of address space and mappings are
 * not) and out-of-memory failures; refused failures leave a chain as it is.
 * "The same call site": the same stack, or one of the same depth that
 * differs in one frame alone, as a retry from another line of the same
 * function does (PyTorch's malloc calls alloc_block again after
 * release_cached_blocks; XLA's BFC Extend calls its sub-allocator again in
 * its backpedal loop).
 *
 * A probe whose first guess fits fails nothing: the shim marks an
 * allocation that asked for exactly the free memory its thread's last
 * cuMemGetInfo answered (all_free; cacheInfo asks cudaMemGetInfo first), and
 * such an allocation, with no chain open on its thread, opens one already
 * held, without failures: a probe if its thread's next event frees it,
 * else an allocation like any other (no retry counted).
 *
 * The allocation that ends a probe chain is held apart: the replay does not
 * apply it until the thread's next event. If that event frees it, neither
 * is applied (the probe never joins the peak, the leaks or the fit, and is
 * counted apart); otherwise the chain is recovered and the allocation joins
 * the live set then, before that event.
 *
 * Chains open when a checkpoint is taken are written into it (checkpoint.c),
 * with each pending failure's link, so that a rotated trace decides them as
 * the whole history would.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model_int.h"
#include "gpushim_cuda.h"

const char *gs_outcome_name(uint32_t outcome)
{
    switch (outcome) {
    case GS_OUTCOME_UNRECOVERED: return "unrecovered";
    case GS_OUTCOME_RECOVERED: return "recovered";
    case GS_OUTCOME_PROBE: return "probe";
    case GS_OUTCOME_REFUSED: return "refused";
    default: return "pending";
    }
}

uint64_t gs_outcome_unrecovered(const struct gs_replay *r)
{
    const struct gs_outcomes *o = &r->outcomes;
    uint64_t others = o->count[GS_OUTCOME_RECOVERED] + o->count[GS_OUTCOME_PROBE] +
                      o->count[GS_OUTCOME_REFUSED];
    return r->failed > others ? r->failed - others : 0;
}

int gs_outcome_same_site(const struct gs_replay *r, uint32_t a, uint32_t b)
{
    if (a == b)
        return 1;
    const struct gs_stack *x = gs_replay_stack(r, a), *y = gs_replay_stack(r, b);
    if (!x || !y || x->n != y->n)
        return 0;
    unsigned differ = 0;
    for (unsigned i = 0; i < x->n && differ <= 1; i++)
        differ += x->pcs[i] != y->pcs[i];
    return differ <= 1;
}

static struct gs_chain *chain_of(struct gs_replay *r, uint32_t tid)
{
    for (size_t i = 0; i < r->nchains; i++)
        if (r->chains[i].tid == tid)
            return &r->chains[i];
    return NULL;
}

/* An allocation attempt: memory asked of the driver, which a retry repeats. */
static int attempt(const struct gs_revent *e)
{
    if (e->type == GS_REC_ALLOC)
        return e->kind != GS_KIND_ADDRESS_SPACE && e->kind != GS_KIND_MAPPED;
    return e->type == GS_REC_ALLOC_FAILED && e->result == GS_CUDA_ERROR_OUT_OF_MEMORY;
}

/* What an analysis kept for f (a post-mortem, analyzer/findings/oom.c) may go. */
static void release_postmortem(struct gs_replay *r, struct gs_failure *f)
{
    if (f->postmortem)
        GS_REPLAY_HOOKS_CALL(r, on_settled, (size_t)(f - r->failures));
    f->postmortem = 0;
}

/* Decides every failure of chain c (which then ends): o, after an
 * allocation of bytes at time when for recovered and probe. */
static void decide(struct gs_replay *r, struct gs_chain *c, enum gs_outcome o, uint64_t when,
                   uint64_t bytes)
{
    int got = o == GS_OUTCOME_RECOVERED || o == GS_OUTCOME_PROBE;
    /* Links point to earlier failures, checked when loaded: the walk ends. */
    for (uint32_t at = c->last; at && at <= r->nfailures;) {
        struct gs_failure *f = &r->failures[at - 1];
        uint32_t prev = f->chain_prev;
        f->outcome = o;
        f->chain_prev = 0;
        f->retry_ns = got && when > f->time_ns ? when - f->time_ns : 0;
        f->retry_bytes = got ? bytes : 0;
        f->freed_bytes = got && c->freed_bytes > f->freed_bytes ? c->freed_bytes - f->freed_bytes : 0;
        f->frees = got && c->frees > f->frees ? c->frees - f->frees : 0;
        if (o != GS_OUTCOME_UNRECOVERED)
            release_postmortem(r, f);
        at = prev < at ? prev : 0;
    }
    struct gs_outcomes *out = &r->outcomes;
    out->count[o] += c->failures;
    if (o == GS_OUTCOME_RECOVERED && c->failures) { /* none: a first guess kept */
        out->retries++;
        out->retry_ns += when > c->first_ns ? when - c->first_ns : 0;
        out->retry_freed_bytes += c->freed_bytes;
        out->retry_frees += c->frees;
    } else if (o == GS_OUTCOME_PROBE) {
        out->probes++;
        out->probe_bytes += bytes;
        if (bytes > out->probe_largest) {
            out->probe_largest = bytes;
            out->probe_largest_ns = when;
        }
    }
    *c = r->chains[--r->nchains]; /* c's slot takes the last chain */
}

/* A held probe allocation that turned out not to be one: the chain is
 * recovered, and the allocation joins the live set now. */
static void release_held(struct gs_replay *r, struct gs_chain *c)
{
    struct gs_revent held = c->held;
    decide(r, c, GS_OUTCOME_RECOVERED, held.time_ns, held.size);
    gs_replay_apply_alloc(r, &held);
}

static int continues(const struct gs_replay *r, const struct gs_chain *c,
                     const struct gs_revent *e)
{
    return e->device == c->device && e->size <= c->last_size &&
           gs_outcome_same_site(r, c->stack_id, e->stack_id);
}

/* Holds e apart: the allocation that ends a probe chain, or a first guess
 * (a chain of its own, without failures). */
static void hold(struct gs_chain *c, const struct gs_revent *e)
{
    c->state = GS_CHAIN_HELD;
    c->held = *e;
    c->held.label = NULL;
    c->held.label_len = 0;
}

/* e asked for all free memory and its thread has no chain: held apart as a
 * probe's first guess that fit. 0: not held (no room for a chain). */
static int first_guess(struct gs_replay *r, const struct gs_revent *e)
{
    if (e->space >= GS_SPACE_COUNT || r->nchains >= GS_MAX_CHAINS ||
        gs_reserve((void **)&r->chains, &r->chains_cap, r->nchains, sizeof *r->chains) != 0)
        return 0;
    struct gs_chain *c = &r->chains[r->nchains++];
    memset(c, 0, sizeof *c);
    c->tid = e->tid;
    c->device = e->device;
    c->stack_id = e->stack_id;
    c->probe = 1;
    c->last_size = e->size;
    c->first_ns = e->time_ns;
    hold(c, e);
    return 1;
}

int gs_outcome_event(struct gs_replay *r, const struct gs_revent *e)
{
    if (e->type == GS_REC_ALLOC && e->all_free && !chain_of(r, e->tid))
        return first_guess(r, e);
    if (!r->nchains || e->type == GS_REC_POOL) /* pool samples are the shim's, not the thread's */
        return 0;
    struct gs_chain *c = chain_of(r, e->tid);
    if (!c)
        return 0;
    if (c->state == GS_CHAIN_HELD) {
        if (e->type == GS_REC_FREE && e->space == c->held.space && e->addr == c->held.addr) {
            decide(r, c, GS_OUTCOME_PROBE, c->held.time_ns, c->held.size);
            return 1; /* the probe's free: its allocation never joined the live set */
        }
        release_held(r, c);
        return 0;
    }
    if (!attempt(e))
        return 0;
    if (!continues(r, c, e)) {
        decide(r, c, GS_OUTCOME_UNRECOVERED, 0, 0);
        return 0;
    }
    if (e->type == GS_REC_ALLOC_FAILED)
        return 0; /* a link more: gs_outcome_on_failure */
    if (c->probe && e->size <= c->last_size / 2 && e->space < GS_SPACE_COUNT) {
        hold(c, e);
        return 1;
    }
    decide(r, c, GS_OUTCOME_RECOVERED, e->time_ns, e->size);
    return 0;
}

void gs_outcome_on_failure(struct gs_replay *r, const struct gs_revent *e, size_t idx)
{
    struct gs_failure *f = idx < r->nfailures ? &r->failures[idx] : NULL;
    if (e->result != GS_CUDA_ERROR_OUT_OF_MEMORY) {
        if (f)
            f->outcome = GS_OUTCOME_REFUSED;
        r->outcomes.count[GS_OUTCOME_REFUSED]++;
        return;
    }
    struct gs_chain *c = chain_of(r, e->tid); /* one left open continues (gs_outcome_event) */
    if (!c) {
        if (r->nchains >= GS_MAX_CHAINS ||
            gs_reserve((void **)&r->chains, &r->chains_cap, r->nchains, sizeof *r->chains) != 0) {
            if (f)
                f->outcome = GS_OUTCOME_UNRECOVERED;
            r->outcomes.count[GS_OUTCOME_UNRECOVERED]++;
            return;
        }
        c = &r->chains[r->nchains++];
        memset(c, 0, sizeof *c);
        c->tid = e->tid;
        c->device = e->device;
        c->first_ns = e->time_ns;
        c->probe = e->free_bytes != UINT64_MAX && e->size >= e->free_bytes;
    } else {
        c->probe = c->probe && e->size <= c->last_size / 2;
    }
    c->stack_id = e->stack_id;
    c->last_size = e->size;
    c->failures++;
    if (f) {
        f->outcome = GS_OUTCOME_PENDING;
        f->chain_prev = c->last;
        f->freed_bytes = c->freed_bytes;
        f->frees = c->frees;
        c->last = (uint32_t)idx + 1;
    }
}

void gs_outcome_on_freed(struct gs_replay *r, uint32_t tid, uint64_t bytes)
{
    struct gs_chain *c = r->nchains && bytes ? chain_of(r, tid) : NULL;
    if (c && c->state == GS_CHAIN_OPEN) {
        c->freed_bytes += bytes;
        c->frees++;
    }
}

void gs_outcome_finish(struct gs_replay *r)
{
    while (r->nchains) {
        struct gs_chain *c = &r->chains[r->nchains - 1];
        if (c->state == GS_CHAIN_HELD)
            release_held(r, c); /* never freed: it was held to the end */
        else
            decide(r, c, GS_OUTCOME_UNRECOVERED, 0, 0);
    }
    /* a failure left pending by a damaged checkpoint (no chain names it) */
    for (size_t i = 0; i < r->nfailures; i++) {
        struct gs_failure *f = &r->failures[i];
        if (f->outcome == GS_OUTCOME_PENDING) {
            f->outcome = GS_OUTCOME_UNRECOVERED;
            f->chain_prev = 0;
            f->freed_bytes = f->frees = 0;
            r->outcomes.count[GS_OUTCOME_UNRECOVERED]++;
        }
    }
}
