/*
 * hooks.h - the analyses that follow the replay (struct gs_replay_hook,
 * attached with gs_replay_attach: analyzer/model/state.c), and the lists,
 * one per callback, that the replay calls them from.
 *
 * Included by: analyzer/model/model.h (which the others include)
 */
#ifndef GPUSHIM_MODEL_HOOKS_H
#define GPUSHIM_MODEL_HOOKS_H

#include <stddef.h>
#include <stdint.h>

struct gs_replay;
struct gs_live_alloc;
struct gs_revent;

/* An analysis that follows the replay: attached with gs_replay_attach (the
 * analyzer's growth and oom attach theirs, analyzer/findings/; the shim's
 * bounded model attaches none). Each callback may be NULL; ctx is the
 * context gs_replay_attach made for it. Called in the order attached. A
 * hook reads the replay's state and changes none of it: what an analysis
 * keeps on an allocation it keeps in its own context, by the allocation's
 * slot (roles.c's notes). */
struct gs_replay_hook {
    /* before and after each event the replay applies (a probe's held apart too) */
    void (*before_event)(void *ctx, struct gs_replay *r, uint64_t time_ns);
    void (*after_event)(void *ctx, struct gs_replay *r, uint64_t time_ns);
    /* a device allocation at sites[site], before it joins the live set */
    void (*on_alloc)(void *ctx, struct gs_replay *r, size_t site, uint64_t time_ns);
    /* a mark of label (index in gs_marks.labels, or GS_MARK_OTHER), once marks.c counted it */
    void (*on_mark)(void *ctx, struct gs_replay *r, uint32_t label, uint64_t time_ns);
    /* an NVTX range event (GS_REC_RANGE), after a top-level one counted as a mark */
    void (*on_range)(void *ctx, struct gs_replay *r, const struct gs_revent *e);
    /* device memory a (GS_KIND_DEVICE) became live or stopped being live
     * (how: enum gs_device_change); r->live_bytes already counts the change.
     * idx: its slot in r->allocs (GS_DEVICE_GONE: the slot it left, free
     * now), by which an analysis keeps what it notes on an allocation. A
     * refused free gives an allocation back in a slot of its own, its seq
     * the same */
    void (*on_device)(void *ctx, struct gs_replay *r, const struct gs_live_alloc *a, size_t idx,
                      int how);
    /* failures[idx] was added (its outcome and fragmentation taken) */
    void (*on_failure)(void *ctx, struct gs_replay *r, size_t idx);
    /* failures[idx] was decided recovered or a probe: what was kept for it may go */
    void (*on_settled)(void *ctx, struct gs_replay *r, size_t idx);
    /* the last event is in (gs_replay_finish) */
    void (*finish)(void *ctx, struct gs_replay *r);
    /* the replay's state starts over (gs_replay_reset: a checkpoint loaded) */
    void (*reset)(void *ctx, struct gs_replay *r);
    /* the replay is freed: what ctx holds may go (the replay frees ctx itself,
     * which gs_replay_attach made) */
    void (*free)(void *ctx);
};
#define GS_REPLAY_HOOKS 8

/* The callbacks of struct gs_replay_hook that events call, each X(name):
 * the one list of them, from which the lists below and gs_replay_attach
 * (state.c) are made; a callback added to struct gs_replay_hook is added
 * here too (GS_REPLAY_HOOKS_CALL of one left out does not compile;
 * test_replay.c calls each). free is called by replay.c alone. */
#define GS_REPLAY_HOOK_CALLBACKS(X)                                                  \
    X(before_event) X(after_event) X(on_alloc) X(on_mark) X(on_range) X(on_device)   \
    X(on_failure) X(on_settled) X(finish) X(reset)

/* For one callback, the hooks that have it, in the order attached: its
 * function and context each (gs_replay_attach fills it), so that an event
 * calls what is there without asking every hook. */
#define GS_REPLAY_HOOK_LIST(cb)                                                      \
    struct {                                                                         \
        unsigned n;                                                                  \
        __typeof__(((struct gs_replay_hook *)0)->cb) fn[GS_REPLAY_HOOKS];             \
        void *ctx[GS_REPLAY_HOOKS];                                                  \
    } cb;
struct gs_replay_hook_lists {
    GS_REPLAY_HOOK_CALLBACKS(GS_REPLAY_HOOK_LIST)
};

#endif
