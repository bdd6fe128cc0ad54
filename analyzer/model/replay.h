/*
 * replay.h - the replay model's struct (struct gs_replay): what the trace
 * defines (modules, stacks, code objects, threads' names), what a replay
 * builds (the live set, sites, totals, devices, kinds, pools, failures,
 * marks, blocks, timelines, graphs), and the analyses attached. The
 * model's calls and its parts' structs are model.h's.
 *
 * Included by: the model's own files (through model_int.h), the analyses
 * that follow events (analyzer/findings, analyzer/whatif), the loaders
 * (analyzer/read, analyzer/report/load.c), the symbolizer's call sites
 * (analyzer/symbols), the exports of events over time (perfetto.c,
 * torch_snapshot.c), plan's and whatif's commands, the shim's bound;
 * tests. Never by a screen of the findings: make layering checks it
 * (tests/layering/check_layers.py, SCREENS).
 */
#ifndef GPUSHIM_MODEL_REPLAY_H
#define GPUSHIM_MODEL_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/model/model.h"

/* What the trace defines (modules, stacks, code objects, threads' names):
 * the names a replay's figures are given in, kept across gs_replay_reset. */
struct gs_replay_trace {
    struct gs_module *modules;
    size_t nmodules, modules_cap;
    struct gs_idmap *modules_by_id; /* id -> index in modules */
    struct gs_idmap *stacks_by_id; /* id -> index in stacks */
    struct gs_stack *stacks;
    size_t nstacks, stacks_cap;
    struct gs_idmap *pycodes_by_id; /* id -> index in pycodes */
    struct gs_pycode *pycodes;
    size_t npycodes, pycodes_cap;
    char **thread_names;            /* each distinct name once, in the order first seen */
    size_t nthread_names, thread_names_cap;
    struct gs_idmap *thread_names_by_hash; /* a name's hash -> index in thread_names */
    struct gs_thread *threads;      /* every thread named, by its latest name */
    size_t nthreads, threads_cap;
    struct gs_idmap *threads_by_tid; /* tid -> index in threads */
};

struct gs_replay {
    /* what the trace defines; then what a replay builds, from last_tid to
     * hook, which gs_replay_reset clears in one; then the analyses */
    struct gs_replay_trace trace;
    uint32_t last_tid, last_tid_name; /* the replay's latest lookup, while no name changes */
    int last_tid_valid;

    /* the live set and the sites */
    struct gs_idmap *live[GS_SPACE_COUNT]; /* address (handle, ...) -> index in allocs */
    struct gs_live_alloc *allocs;
    size_t nallocs, allocs_cap, free_slot;
    struct gs_idmap *sites_by_key;
    /* the sites looked up lately, by (stack, kind) (live.c); key + 1, 0: none */
    struct {
        uint64_t key_1;
        size_t idx;
    } site_cache[GS_SITE_CACHE];
    struct gs_site *sites;
    size_t nsites, sites_cap;
    struct gs_recent_free *recent; /* for FREE_FAILED */
    size_t recent_next;

    /* totals */
    uint64_t allocations, frees, failed, frees_unknown, frees_undone, refs;
    uint64_t last_time_ns;
    uint64_t live_bytes, peak_bytes, peak_time_ns, peak_epoch;
    uint64_t rounding_live, rounding_at_peak; /* device bytes lost to the page size (below) */
    uint64_t nthreads_hint;
    struct gs_device_usage devices[GS_MAX_DEVICES + 1]; /* [GS_MAX_DEVICES]: unknown */
    struct gs_kind_usage kinds[GS_KIND_COUNT];
    struct gs_idmap *pools_by_id;
    struct gs_pool_usage *pools;
    size_t npools, pools_cap;
    uint64_t pool_reserved, pool_used;           /* all pools, at their last samples */
    uint64_t peak_pool_reserved, peak_pool_used; /* the same at the device peak */
    struct gs_failure *failures;
    size_t nfailures, failures_cap;
    uint64_t failures_dropped;
    struct gs_chain *chains; /* outcome.c: the chains open, one per thread at most */
    size_t nchains, chains_cap;
    struct gs_outcomes outcomes;
    uint64_t events; /* events replayed, with those a checkpoint summarizes */
    uint64_t allocated_bytes; /* the sizes of every allocation replayed, summed */
    struct gs_implausible implausible; /* events not replayed: see GS_PLAUSIBLE_NS */
    uint32_t event_tid; /* the thread of the event being replayed (a hook's free's) */
    struct gs_checkpoint_state checkpoint;
    struct gs_marks marks;   /* marks.c */
    struct gs_blocks blocks; /* blocks.c */
    struct gs_timeline timeline; /* timeline.c: device memory over time */
    /* the same per device, made on its first change; read with gs_device_timeline,
     * since the one device of a run that has used one alone has none of its own:
     * timeline_alone is its index + 1 (0 before any change, UINT32_MAX after) */
    struct gs_timeline *device_timelines[GS_MAX_DEVICES + 1];
    uint32_t timeline_alone;
    struct gs_graphs graphs; /* graphs.c: CUDA graphs */
    /* the analyses attached (gs_replay_attach): kept across gs_replay_reset */
    const struct gs_replay_hook *hook[GS_REPLAY_HOOKS];
    void *hook_ctx[GS_REPLAY_HOOKS];
    unsigned nhooks;
    struct gs_replay_hook_lists with; /* by callback: what GS_REPLAY_HOOKS_CALL calls */
};

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

#endif
