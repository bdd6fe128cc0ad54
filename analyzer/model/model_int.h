/*
 * model_int.h - what the replay model's files share (analyzer/model/):
 * the calls between its parts, in one direction, from the bottom:
 *   state.c     what the trace defines, the live set's lookups, the hooks
 *   timeline.c, marks.c, blocks.c   memory over time, steps, fragmentation
 *   live.c      the live set and its figures: allocations, frees, pools
 *   outcome.c   failed allocations' outcomes (on live.c)
 *   graphs.c    CUDA graphs (on live.c and outcome.c)
 *   replay.c    the dispatch: each event to the parts, init, reset, finish
 *   checkpoint.c  the state as trace records (the writer), on top
 * A file calls only the files above it in this list.
 *
 * Included by: the .c files of analyzer/model alone.
 */
#ifndef GPUSHIM_MODEL_INT_H
#define GPUSHIM_MODEL_INT_H

#include "analyzer/analyzer.h"

/* The live allocation at addr in space (below GS_SPACE_COUNT), or NULL:
 * inline for the hot path (gs_replay_find_live is the same). */
static inline struct gs_live_alloc *gs_live_find(const struct gs_replay *r, uint32_t space,
                                                 uint64_t addr)
{
    uint64_t idx;
    return gs_idmap_get(r->live[space], addr, &idx) == 0 ? &r->allocs[idx] : NULL;
}

/* The name of thread tid, for the replay's events, which come in runs from
 * one thread: the last lookup kept until the tid (or a name) changes. */
static inline uint32_t gs_replay_thread_of_event(struct gs_replay *r, uint32_t tid)
{
    if (!r->last_tid_valid || r->last_tid != tid) {
        r->last_tid = tid;
        r->last_tid_name = gs_replay_thread_of(r, tid);
        r->last_tid_valid = 1;
    }
    return r->last_tid_name;
}

/* live.c: an event applied to the live set and its figures. */
void gs_replay_apply_free_failed(struct gs_replay *r, const struct gs_revent *e);
void gs_replay_apply_ref(struct gs_replay *r, const struct gs_revent *e);
void gs_replay_apply_pool(struct gs_replay *r, const struct gs_revent *e);

/* graphs.c: a FREE applied (gs_replay_apply_free), a graph allocation's
 * bytes going back to its pool and the chains of retries told what its
 * thread freed (outcome.c). */
void gs_graphs_on_free(struct gs_replay *r, const struct gs_revent *e);

#endif
