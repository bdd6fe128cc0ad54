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
 * Included by: the .c files of analyzer/model alone (and unit tests).
 */
#ifndef GPUSHIM_MODEL_INT_H
#define GPUSHIM_MODEL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/ordmap.h"
#include "analyzer/util/reserve.h"
#include "analyzer/util/text.h"

/* The hooks' callback cb, for each hook that has one, in the order attached:
 * the list gs_replay_attach made of them (a hook without cb costs nothing). */
#define GS_REPLAY_HOOKS_CALL(r, cb, ...)                                             \
    do {                                                                             \
        for (unsigned gs_h_ = 0; gs_h_ < (r)->with.cb.n; gs_h_++)                    \
            (r)->with.cb.fn[gs_h_]((r)->with.cb.ctx[gs_h_], (r), ##__VA_ARGS__);      \
    } while (0)

/* One more allocation at site s by a thread of that name (0: ignored). */
void gs_site_count_thread(struct gs_site *s, uint32_t name);

/* ---- timeline.c, called by live.c and replay.c ---- */
void gs_timeline_note(struct gs_timeline *t, uint64_t time_ns, uint64_t live_bytes);
/* Device memory of one device (index as gs_replay.devices) changed to
 * device_bytes, after r->live_bytes did: the process's timeline and the
 * device's (made on its first change; none if there is no memory). */
void gs_timelines_note(struct gs_replay *r, unsigned device_index, uint64_t time_ns,
                       uint64_t device_bytes);
void gs_timelines_free(struct gs_replay *r);

/* ---- marks.c and blocks.c, called by live.c and replay.c ---- */
void gs_marks_init(struct gs_marks *m);
void gs_marks_free(struct gs_marks *m);
void gs_marks_on_mark(struct gs_replay *r, const struct gs_revent *e);
/* A range event: an outermost one's opening is a mark, its end a step's. */
void gs_marks_on_range(struct gs_replay *r, const struct gs_revent *e);
/* The end of the run: a step open since a mark ends here. */
void gs_marks_finish(struct gs_replay *r);
/* The process's device bytes changed by delta (after the change). */
void gs_marks_device_added(struct gs_replay *r, uint64_t size);
void gs_marks_device_removed(struct gs_replay *r, uint64_t size);
void gs_blocks_init(struct gs_blocks *b);
void gs_blocks_free(struct gs_blocks *b);
void gs_blocks_on_alloc(struct gs_replay *r, const struct gs_revent *e);
void gs_blocks_on_free(struct gs_replay *r, const struct gs_revent *e);
/* A live allocation a is about to be added (new_peak: it makes a device
 * peak) or has just been removed: segments and the peak's figures. */
void gs_blocks_before_add(struct gs_replay *r, const struct gs_live_alloc *a, int new_peak);
void gs_blocks_after_add(struct gs_replay *r, const struct gs_live_alloc *a);
void gs_blocks_before_remove(struct gs_replay *r, const struct gs_live_alloc *a);
void gs_blocks_after_remove(struct gs_replay *r, const struct gs_live_alloc *a);
/* A new device peak: its fragmentation is taken at the next change. */
void gs_blocks_new_peak(struct gs_replay *r);
/* After failures[idx] was added: its fragmentation. */
void gs_blocks_on_failure(struct gs_replay *r, size_t idx);
void gs_blocks_finish(struct gs_replay *r);

/* ---- outcome.c, called by replay.c and graphs.c; live.c's, called by them ---- */
/* Before the replay applies e: ends a chain e shows the outcome of. Returns
 * 1 when the replay must not apply e (a probe's allocation, held apart; the
 * free of one), else 0. */
int gs_outcome_event(struct gs_replay *r, const struct gs_revent *e);
/* Whether gs_outcome_event has anything to do with e (it returns 0 and
 * changes nothing if not): inline, since most events are none of its. */
static inline int gs_outcome_sees(const struct gs_replay *r, const struct gs_revent *e)
{
    return r->nchains || (e->type == GS_REC_ALLOC && e->all_free);
}
/* A failed allocation e, kept as failures[idx] (SIZE_MAX: dropped past the
 * cap): refused at once, or a link of its thread's chain. */
void gs_outcome_on_failure(struct gs_replay *r, const struct gs_revent *e, size_t idx);
/* Thread tid's FREE ended bytes of device memory. */
void gs_outcome_on_freed(struct gs_replay *r, uint32_t tid, uint64_t bytes);
/* The end of the events: every chain open is decided. */
void gs_outcome_finish(struct gs_replay *r);
/* Whether stacks a and b are one call site for a retry: the same, or of the
 * same depth and different in one frame alone. */
int gs_outcome_same_site(const struct gs_replay *r, uint32_t a, uint32_t b);
/* The replay's own handling of an allocation (live.c), for one held apart. */
void gs_replay_apply_alloc(struct gs_replay *r, const struct gs_revent *e);
/* And of a free: the live set's part (gs_graphs_on_free adds what graph pools
 * and the chains of retries see, and calls this). */
void gs_replay_apply_free(struct gs_replay *r, const struct gs_revent *e);
/* Sets the analyzer's own device allocation at (space, addr) to size bytes
 * at site (0 bytes: ends it), counted in no allocation total: a graph
 * pool's reserve beyond its live allocations. */
void gs_replay_set_held(struct gs_replay *r, uint32_t space, uint64_t addr, uint64_t size,
                        uint32_t site, int32_t device, uint64_t now);

/* ---- graphs.c, called by replay.c ---- */
void gs_graphs_init(struct gs_graphs *g);
void gs_graphs_free(struct gs_graphs *g);
/* A GS_REC_GRAPH_NODE or GS_REC_GRAPH event. */
void gs_graphs_event(struct gs_replay *r, const struct gs_revent *e);
/* A failed allocation: that of a launch that failed for memory is tied to
 * the graph's allocation node that did not fit (*out, returned), else e. */
const struct gs_revent *gs_graphs_failure(struct gs_replay *r, const struct gs_revent *e,
                                          struct gs_revent *out);
/* Around a free of a device address: a graph allocation's bytes go back to
 * its pool (taken before the free, returned after it). */
int gs_graphs_take(struct gs_replay *r, uint64_t addr, int32_t *device);
void gs_graphs_returned(struct gs_replay *r, int32_t device, uint64_t size, uint64_t now);

/* The live allocation at addr in space (below GS_SPACE_COUNT), or NULL:
 * inline for the hot path (gs_replay_find_live is the same). */
static inline struct gs_live_alloc *gs_live_find(const struct gs_replay *r, uint32_t space,
                                                 uint64_t addr)
{
    uint64_t idx;
    return gs_idmap_get(r->live[space], addr, &idx) == 0 ? &r->allocs[idx] : NULL;
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
