/*
 * replay.c - the analyzer's one streaming pass over the events (and the
 * shim's bounded model's): the dispatch at the top of the replay model,
 * which hands each event to the part it is about and keeps the state's
 * life (init, reset, free, finish).
 *
 * The state keeps only what grows with the live set and with distinct
 * stacks: the live allocations (by address), one site per (stack, kind of
 * memory) with its totals, per-device and per-kind usage, and the failed
 * allocations (live.c, on state.c). Nothing grows with the number of
 * events.
 *
 * Each failed allocation's outcome, and the probes' allocations that never
 * join the live set, are outcome.c's: it sees each event first. A free goes
 * through graphs.c, whose pools keep the bytes of graph allocations.
 *
 * A rotated trace starts with a checkpoint (checkpoint.c writes it, the
 * analyzer's analyzer/read/checkpoint_load.c loads it): this state as it
 * stood, loaded in place of the events it summarizes; the events after it
 * replay as usual.
 *
 * What the program says through the public API has files of its own, called
 * from here: marks and steps (marks.c), its own allocator's blocks and the
 * fragmentation of driver allocations (blocks.c).
 *
 * Analyses attached with gs_replay_attach (the analyzer's growth and
 * post-mortems) are called around each event, at allocations, marks and
 * failures: the model knows them only as hooks.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model_int.h"

#define RECENT_FREES GS_RECENT_FREES
#define MAX_FAILURES GS_MAX_FAILURES

/* The state the events build, apart from what the trace defines (modules
 * and stacks): a checkpoint replaces the one and keeps the other. */
static void init_state(struct gs_replay *r)
{
    for (int s = 0; s < GS_SPACE_COUNT; s++)
        r->live[s] = gs_idmap_new();
    r->pools_by_id = gs_idmap_new();
    r->sites_by_key = gs_idmap_new();
    r->recent = calloc(RECENT_FREES, sizeof *r->recent);
    r->free_slot = SIZE_MAX;
    gs_marks_init(&r->marks);
    gs_blocks_init(&r->blocks);
    gs_graphs_init(&r->graphs);
}

static void free_state(struct gs_replay *r)
{
    free(r->allocs);
    free(r->sites);
    free(r->failures);
    free(r->chains);
    free(r->recent);
    free(r->pools);
    for (int s = 0; s < GS_SPACE_COUNT; s++)
        gs_idmap_free(r->live[s]);
    gs_idmap_free(r->pools_by_id);
    gs_idmap_free(r->sites_by_key);
    gs_marks_free(&r->marks);
    gs_blocks_free(&r->blocks);
    gs_graphs_free(&r->graphs);
    gs_timelines_free(r);
}

void gs_replay_init(struct gs_replay *r)
{
    struct gs_replay_trace *t = &r->trace;
    memset(r, 0, sizeof *r);
    t->modules_by_id = gs_idmap_new();
    t->stacks_by_id = gs_idmap_new();
    t->pycodes_by_id = gs_idmap_new();
    t->thread_names_by_hash = gs_idmap_new();
    t->threads_by_tid = gs_idmap_new();
    init_state(r);
}

void gs_replay_free(struct gs_replay *r)
{
    struct gs_replay_trace *t = &r->trace;
    for (size_t i = 0; i < t->nmodules; i++)
        free(t->modules[i].path);
    for (size_t i = 0; i < t->nstacks; i++)
        free(t->stacks[i].pcs);
    for (size_t i = 0; i < t->npycodes; i++) {
        free(t->pycodes[i].file);
        free(t->pycodes[i].function);
    }
    for (size_t i = 0; i < t->nthread_names; i++)
        free(t->thread_names[i]);
    free(t->modules);
    free(t->stacks);
    free(t->pycodes);
    free(t->thread_names);
    free(t->threads);
    gs_idmap_free(t->modules_by_id);
    gs_idmap_free(t->stacks_by_id);
    gs_idmap_free(t->pycodes_by_id);
    gs_idmap_free(t->thread_names_by_hash);
    gs_idmap_free(t->threads_by_tid);
    free_state(r);
    for (unsigned i = 0; i < r->nhooks; i++) {
        if (r->hook[i]->free)
            r->hook[i]->free(r->hook_ctx[i]);
        free(r->hook_ctx[i]); /* gs_replay_attach made it */
    }
    memset(r, 0, sizeof *r);
}

/* gs_replay_reset's three parts, in replay.h's order: what the trace
 * defines (trace) ends before last_tid, and the analyses attached
 * (hook .. with) end it */
_Static_assert(offsetof(struct gs_replay, trace) == 0 &&
                   sizeof(struct gs_replay_trace) <= offsetof(struct gs_replay, last_tid),
               "what the trace defines comes first");
_Static_assert(offsetof(struct gs_replay, hook) < offsetof(struct gs_replay, with) &&
                   sizeof(struct gs_replay) - offsetof(struct gs_replay, with) -
                           sizeof(((struct gs_replay *)0)->with) < 8,
               "the analyses attached come last");

void gs_replay_reset(struct gs_replay *r)
{
    /* what a replay builds lies between what the trace defines and the
     * analyses attached (replay.h): cleared in one, the two others kept */
    free_state(r);
    size_t from = offsetof(struct gs_replay, last_tid), to = offsetof(struct gs_replay, hook);
    memset((char *)r + from, 0, to - from);
    init_state(r);
    GS_REPLAY_HOOKS_CALL(r, reset);
}

static void on_alloc_failed(struct gs_replay *r, const struct gs_revent *e)
{
    r->failed++;
    if (r->nfailures >= MAX_FAILURES || gs_reserve((void **)&r->failures, &r->failures_cap,
                                                   r->nfailures, sizeof *r->failures) != 0) {
        r->failures_dropped++;
        gs_outcome_on_failure(r, e, SIZE_MAX);
        return;
    }
    r->failures[r->nfailures++] = (struct gs_failure){.time_ns = e->time_ns,
                                                      .api = e->api,
                                                      .result = e->result,
                                                      .device = e->device,
                                                      .requested = e->size,
                                                      .free_bytes = e->free_bytes,
                                                      .total_bytes = e->total_bytes,
                                                      .process_live_bytes =
                                                          e->device >= 0 && e->device < GS_MAX_DEVICES
                                                              ? r->devices[e->device].live_bytes
                                                              : r->live_bytes,
                                                      .stack_id = e->stack_id,
                                                      .thread = gs_replay_thread_of_event(r, e->tid),
                                                      .tid = e->tid};
    gs_outcome_on_failure(r, e, r->nfailures - 1);
    gs_blocks_on_failure(r, r->nfailures - 1);
    GS_REPLAY_HOOKS_CALL(r, on_failure, r->nfailures - 1);
}

/* Which of the limits above e passes (enum gs_implausible_what), 0: none. */
static inline uint32_t implausible(const struct gs_replay *r, const struct gs_revent *e,
                                   uint64_t *value)
{
    if (e->time_ns > GS_PLAUSIBLE_NS)
        return *value = e->time_ns, GS_IMPLAUSIBLE_TIME;
    uint64_t size = 0;
    switch (e->type) {
    case GS_REC_ALLOC:
        if (e->size <= GS_PLAUSIBLE_SIZE && r->allocated_bytes + e->size > GS_PLAUSIBLE_TOTAL)
            return *value = r->allocated_bytes + e->size, GS_IMPLAUSIBLE_TOTAL;
        /* fall through */
    case GS_REC_BLOCK_ALLOC:
        size = e->size;
        break;
    case GS_REC_POOL:
    case GS_REC_GRAPH:
        size = e->reserved > e->used ? e->reserved : e->used;
        break;
    default:
        break;
    }
    return size > GS_PLAUSIBLE_SIZE ? (*value = size, GS_IMPLAUSIBLE_SIZE) : 0;
}

/* Counts e as implausible, the first one kept to be said. */
static __attribute__((noinline)) void not_plausible(struct gs_replay *r, uint32_t what,
                                                    uint64_t value)
{
    if (r->implausible.events++ == 0) {
        r->implausible.first_what = what;
        r->implausible.first_value = value;
    }
}

static inline __attribute__((always_inline)) void apply(struct gs_replay *r,
                                                        const struct gs_revent *e)
{
    uint64_t value;
    uint32_t what = implausible(r, e, &value);
    if (__builtin_expect(what != 0, 0)) {
        not_plausible(r, what, value);
        return;
    }
    if (e->type == GS_REC_ALLOC)
        r->allocated_bytes += e->size;
    r->events++;
    r->event_tid = e->tid;
    r->checkpoint.open = 0; /* its records all come before any event */
    GS_REPLAY_HOOKS_CALL(r, before_event, e->time_ns);
    if (e->time_ns > r->last_time_ns)
        r->last_time_ns = e->time_ns;
    /* a probe's allocation, or its free: held apart */
    if (gs_outcome_sees(r, e) && gs_outcome_event(r, e)) {
        GS_REPLAY_HOOKS_CALL(r, after_event, e->time_ns);
        return;
    }
    switch (e->type) {
    case GS_REC_ALLOC:
        gs_replay_apply_alloc(r, e);
        break;
    case GS_REC_FREE:
        gs_graphs_on_free(r, e);
        break;
    case GS_REC_FREE_FAILED:
        gs_replay_apply_free_failed(r, e);
        break;
    case GS_REC_ALLOC_FAILED:
        on_alloc_failed(r, e);
        break;
    case GS_REC_REF:
        gs_replay_apply_ref(r, e);
        break;
    case GS_REC_POOL:
        gs_replay_apply_pool(r, e);
        break;
    case GS_REC_MARK:
        gs_marks_on_mark(r, e);
        break;
    case GS_REC_RANGE:
        /* a range its thread opens outside any other is a mark of its label,
         * and its end ends that step (docs/api.md "Marks and steps") */
        if ((e->flags & GS_RANGE_TOP) || e->op == GS_RANGE_END)
            gs_marks_on_range(r, e);
        GS_REPLAY_HOOKS_CALL(r, on_range, e);
        break;
    case GS_REC_BLOCK_ALLOC:
        gs_blocks_on_alloc(r, e);
        break;
    case GS_REC_BLOCK_FREE:
        gs_blocks_on_free(r, e);
        break;
    case GS_REC_GRAPH_NODE:
    case GS_REC_GRAPH:
        gs_graphs_event(r, e);
        break;
    default:
        break;
    }
    GS_REPLAY_HOOKS_CALL(r, after_event, e->time_ns);
}

/* A failed allocation while graphs wait to launch, apart: the copy it may be
 * replaced with is no cost to every other event. */
static __attribute__((noinline)) void apply_failure(struct gs_replay *r,
                                                    const struct gs_revent *e)
{
    struct gs_revent launch_failure;
    apply(r, gs_graphs_failure(r, e, &launch_failure));
}

void gs_replay_event(struct gs_replay *r, const struct gs_revent *e)
{
    if (e->type == GS_REC_ALLOC_FAILED && r->graphs.pending)
        apply_failure(r, e);
    else
        apply(r, e);
}

void gs_replay_finish(struct gs_replay *r)
{
    gs_outcome_finish(r);
    gs_blocks_finish(r);
    gs_marks_finish(r);
    GS_REPLAY_HOOKS_CALL(r, finish);
}

void gs_replay_on_event(void *ctx, const struct gs_revent *e) { gs_replay_event(ctx, e); }

/* Checkpoints are the analyzer's to load (analyzer/read/checkpoint_load.c:
 * gs_replay_ops); the shim's model never reads one. */
const struct gs_reader_ops gs_model_ops = {
    .module = gs_replay_on_module,
    .stack = gs_replay_on_stack,
    .pycode = gs_replay_on_pycode,
    .event = gs_replay_on_event,
    .thread = gs_replay_on_thread,
};
