/*
 * analyzer.h - the replay model (being moved to analyzer/model/ by issue
 * 16): the replay state and its parts, and the analyses it feeds.
 *
 *   replay.c        one streaming pass: live set, peak, sites, leaks, failures
 *   marks.c         the program's marks (include/gpushim.h): steps between them
 *   growth.c        every site's live bytes, sampled at steps or windows
 *   outcome.c       failed allocations: recovered, probe, refused or unrecovered;
 *                   probes' allocations held apart from the live set
 *   oom.c           failed allocations: what the process held then, what grew before
 *   blocks.c        the program's own allocator's blocks; fragmentation
 *   checkpoint.c    the replay state as trace records, and back (rotated traces)
 *   timeline.c      device memory over time
 *   graphs.c        CUDA graphs
 *
 * The rest of the analyzer has a header per layer: analyzer/util/,
 * analyzer/trace/trace.h, analyzer/read/read.h, analyzer/symbols/,
 * analyzer/findings/findings.h, analyzer/report/, analyzer/export/,
 * analyzer/cmd/.
 *
 * Included by: the model's files, shim/bound.c, and the analyzer's files
 * that use the replay state (until analyzer/model/model.h replaces it).
 */
#ifndef GPUSHIM_ANALYZER_H
#define GPUSHIM_ANALYZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpushim_ring.h"
#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/util/cursor.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/ordmap.h"
#include "analyzer/util/reserve.h"
#include "analyzer/util/text.h"

/* ---- replay.c ---- */
#define GS_MAX_DEVICES 64
#define GS_RECENT_FREES 256 /* frees a FREE_FAILED may still undo */
#define GS_MAX_FAILURES 10000 /* failed allocations kept with their details */

#define GS_SITE_THREADS GS_CKPT_SITE_THREADS /* thread names a site counts apart */

struct gs_site {
    uint32_t stack_id;
    uint32_t kind;
    uint32_t api; /* of its first allocation */
    uint64_t allocs, alloc_bytes;
    uint64_t live_bytes, live_count;  /* now (at the end: unfreed) */
    uint64_t peak_bytes, peak_count;  /* at the process's device peak */
    uint64_t saved_bytes, saved_count;
    uint64_t saved_epoch;
    /* the threads that allocated there, by name: the first GS_SITE_THREADS
     * names, each with its allocations, then those of any other name;
     * allocations of threads the trace never named are not counted */
    uint32_t thread[GS_SITE_THREADS]; /* a name (gs_replay_thread_name); 0: none */
    uint64_t thread_allocs[GS_SITE_THREADS];
    uint64_t other_thread_allocs;
};

/* What became of a failed allocation (outcome.c, docs/commands.md
 * "Failed allocations: what became of each"). */
enum gs_outcome {
    GS_OUTCOME_PENDING = 0, /* not decided yet: its thread may still retry */
    GS_OUTCOME_UNRECOVERED, /* nothing like it succeeded afterwards */
    GS_OUTCOME_RECOVERED,   /* its call site got the memory afterwards */
    GS_OUTCOME_PROBE,       /* a request made to learn what fits */
    GS_OUTCOME_REFUSED,     /* not a shortage: any result but CUDA_ERROR_OUT_OF_MEMORY */
    GS_OUTCOME_COUNT
};

struct gs_failure {
    uint64_t time_ns;
    uint32_t api, result;
    int32_t device;
    uint64_t requested, free_bytes, total_bytes;
    uint64_t process_live_bytes; /* device bytes this process held then, on that device */
    uint32_t stack_id;
    uint32_t thread; /* the name of its thread (gs_replay_thread_name); 0: not known */
    uint32_t outcome;    /* enum gs_outcome */
    uint32_t chain_prev; /* pending: the failure before it in its chain of retries
                          * (index + 1; 0: none kept) */
    /* recovered, probe: what it took */
    uint64_t retry_ns;    /* from it to the allocation that succeeded */
    uint64_t retry_bytes; /* the size that succeeded */
    uint64_t freed_bytes, frees; /* device bytes its thread freed from it to then, in so
                                  * many frees (pending: the chain's counts when it failed) */
    uint32_t postmortem;  /* its slot in gs_replay.postmortems + 1; 0: none (oom.c) */
};

/* A thread's failed allocations whose outcome waits on its next attempt
 * (outcome.c): the chain of its retries so far. */
#define GS_MAX_CHAINS 256 /* threads with a chain open at once; a failure past them is
                           * decided at once */
enum gs_chain_state {
    GS_CHAIN_OPEN = 0, /* its latest attempt failed */
    GS_CHAIN_HELD,     /* a probe's allocation succeeded and is held apart, until the
                        * thread's next event says whether it is freed at once */
};
struct gs_chain {
    uint32_t tid;
    int32_t device;
    uint32_t stack_id;   /* of its latest attempt */
    uint32_t state;      /* enum gs_chain_state */
    uint32_t probe;      /* its first failure asked for all the device's free memory or
                          * more, and each attempt since for at most half the one before */
    uint32_t last;       /* its latest failure kept: index + 1 in failures; 0: none kept */
    uint64_t last_size;  /* its latest attempt's request */
    uint64_t first_ns;   /* its first failure */
    uint64_t failures;   /* failures in it, kept or not */
    uint64_t freed_bytes, frees; /* device bytes its thread freed since its first failure */
    struct gs_revent held; /* GS_CHAIN_HELD: the allocation held apart (label NULL) */
};

/* The outcomes, all failures counted (those past GS_MAX_FAILURES too). */
struct gs_outcomes {
    uint64_t count[GS_OUTCOME_COUNT]; /* [PENDING] unused: a failure is counted once decided */
    uint64_t retries;                 /* recovered chains: retries that succeeded */
    uint64_t retry_ns;                /* from each one's first failure to its success */
    uint64_t retry_freed_bytes, retry_frees; /* what their threads freed before succeeding */
    uint64_t probes;                  /* probes' allocations, held apart */
    uint64_t probe_bytes;             /* all of them together */
    uint64_t probe_largest, probe_largest_ns; /* the largest, and when */
};

struct gs_device_usage {
    int present;
    uint64_t live_bytes, peak_bytes, peak_time_ns;
    uint64_t allocs;
};

struct gs_kind_usage {
    uint64_t live_bytes, peak_bytes, allocs;
};

/* A stream-ordered pool, from its samples. */
struct gs_pool_usage {
    uint64_t pool;
    int32_t device;
    uint64_t reserved, used;           /* at its last sample */
    uint64_t peak_reserved, peak_used; /* the largest sampled */
    uint64_t peak_unused;              /* the most it held beyond use */
    uint64_t samples;
};

struct gs_stack {
    uint32_t id;
    unsigned n;
    uint64_t *pcs;
};

struct gs_module {
    uint32_t id;
    uint64_t bias, lo, span;
    char *path;
    uint8_t build_id[GS_MAX_BUILD_ID];
    size_t build_id_len;
    int is_runtime; /* the shim or a CUDA library: trimmed from call sites */
};

/* A thread the trace named (GS_REC_THREAD), with its latest name. */
struct gs_thread {
    uint32_t tid;
    uint32_t name; /* gs_replay_thread_name */
};

/* A Python code object the stacks name (GS_REC_PYCODE). */
struct gs_pycode {
    uint32_t id;
    uint32_t first_line;
    char *file, *function;
};

/* ---- graphs.c: CUDA graphs (docs/design.md "CUDA graphs") ---- */
/* A memory node, as recorded. */
struct gs_graph_node {
    uint64_t addr, size; /* size: allocation nodes */
    uint32_t stack_id, api;
    int32_t device;
    uint32_t is_free;
};
enum gs_graph_which { GS_GRAPH_OBJ_GRAPH = 0, GS_GRAPH_OBJ_EXEC, GS_GRAPH_OBJ_CAPTURE };
/* A graph, an executable (with the nodes of its graph when instantiated) or
 * a capture under way (by its stream). */
struct gs_graph_obj {
    uint32_t which;   /* enum gs_graph_which */
    uint64_t handle;  /* CUgraph, CUgraphExec, or the capturing stream */
    uint64_t graph;   /* an executable's graph */
    uint64_t flags;   /* an executable's instantiation flags */
    int32_t device;   /* of its first node (-1: none) */
    uint64_t launches;
    struct gs_graph_node *nodes;
    size_t n, cap;
};
/* A device's graph memory pool (index GS_MAX_DEVICES: an unknown device). */
struct gs_graph_pool {
    int seen;
    uint64_t reserved;    /* what it holds, as the replay follows it */
    uint64_t live;        /* bytes of graph allocations live */
    uint64_t sampled_reserved, sampled_used, samples; /* the driver's, at the last sample */
    uint64_t peak_reserved;
    uint64_t launches, launches_failed;
    uint32_t stack_id, api; /* the call that last grew it (its reserve is held there) */
    uint64_t prev_reserved; /* reserved when the reserve was last set */
};
struct gs_graphs {
    int seen; /* any graph record */
    struct gs_graph_obj *objs;
    size_t nobjs, objs_cap;
    struct gs_graph_pool pools[GS_MAX_DEVICES + 1];
    struct gs_idmap *live; /* graph allocation address -> device + 1 */
    uint64_t nodes;        /* memory nodes recorded */
    uint64_t execs_made;   /* executables instantiated */
    /* a launch that failed for memory, whose failed allocation comes next */
    int pending;
    uint32_t pending_tid;
    uint64_t pending_exec;
};

/* A live allocation. */
struct gs_live_alloc {
    uint64_t addr, size, time_ns;
    uint32_t site; /* index in gs_replay.sites */
    int32_t device;
    uint32_t kind;
    uint32_t space;
    uint32_t tid;
    uint32_t refs;   /* a FREE drops one; the allocation ends at 0 */
    uint64_t parent; /* a mapping's physical memory (a handle), which it holds a reference to */
};

/* A FREE that a FREE_FAILED may undo: the allocation it ended (removed), the
 * reference it dropped from one that lives on, or nothing (the address was
 * not live: a double free, whose refusal must not revive an older one). */
struct gs_recent_free {
    struct gs_live_alloc a;
    uint32_t tid;
    int valid, removed, nothing;
};

/* ---- marks.c: the program's marks, and the steps between them ---- */
#define GS_MARK_LABELS 256  /* distinct labels followed; further ones are counted only */
#define GS_MARKS_KEPT 1000  /* the most recent marks kept, with their figures */
#define GS_STEPS_KEPT 1000  /* the most recent steps kept, with their figures */
#define GS_MARK_OTHER UINT32_MAX /* the label of a mark past the GS_MARK_LABELS limit */

/* A label, and the steps between its consecutive marks. Device bytes are
 * the process's live device memory (as the peak counts it). */
struct gs_mark_label {
    char label[GS_MAX_LABEL + 1]; /* NUL-terminated, control bytes as '?' */
    uint32_t stack_id;            /* of its first mark */
    uint64_t marks, steps;
    uint64_t first_ns, last_ns;   /* its first and last mark */
    /* the step open since its last mark */
    uint64_t start_bytes;         /* device bytes at its start */
    uint64_t start_in, start_out; /* gs_marks.bytes_in and bytes_out then */
    uint64_t step_peak;           /* the most device bytes in it so far */
    /* its completed steps */
    uint64_t max_peak, max_peak_end_ns; /* the largest peak of one, and when that step ended */
    uint64_t allocated, freed;          /* device bytes made live and ended in them */
    int64_t growth;                     /* the device bytes they added, all together */
    int64_t max_growth;                 /* the most one step added */
    uint64_t growing;                   /* steps that ended with more than they began with */
};

struct gs_mark_item {
    uint32_t label;        /* index in gs_marks.labels, or GS_MARK_OTHER */
    uint64_t time_ns;
    uint64_t device_bytes; /* live then */
    uint64_t block_bytes;  /* in live blocks then */
};

/* From one mark to the next mark of the same label. */
struct gs_step {
    uint32_t label;
    uint64_t start_ns, end_ns;
    uint64_t peak_bytes;      /* the most device bytes live during it */
    uint64_t allocated_bytes; /* device bytes that became live during it */
    uint64_t freed_bytes;     /* device bytes that stopped being live during it */
    int64_t growth_bytes;     /* device bytes at its end less at its start */
};

struct gs_marks {
    struct gs_mark_label *labels; /* room for GS_MARK_LABELS, made on the first mark */
    size_t nlabels;
    struct gs_mark_item *recent;  /* the last GS_MARKS_KEPT marks, a ring */
    struct gs_step *steps;        /* the last GS_STEPS_KEPT steps, a ring */
    uint64_t marks, nsteps;       /* all of them: the next ring slot is the count's */
    uint64_t labels_dropped;      /* marks whose label came past GS_MARK_LABELS */
    uint64_t bytes_in, bytes_out; /* device bytes made live and ended, the whole run */
    uint64_t since_peak;          /* the most device bytes live since the last mark */
};

/* ---- blocks.c: the program's own allocator's blocks, and fragmentation ---- */

/* Fragmentation inside driver allocations at one moment (docs/api.md
 * "Fragmentation"). A segment is a live device allocation at an address
 * (cuMemAlloc*, stream-ordered, the pluggable allocator's); a block is in
 * the segment that holds its first byte. */
struct gs_frag {
    int present;              /* the run had given blocks by then */
    uint64_t time_ns;
    int32_t device;           /* the device it is about; -1: all of them */
    uint64_t segments;        /* segments that hold at least one block */
    uint64_t segment_bytes;   /* their bytes */
    uint64_t block_bytes;     /* their bytes inside blocks (overlaps counted once) */
    uint64_t largest_free;    /* the largest run of their bytes outside blocks */
    uint64_t outside_bytes;   /* bytes of blocks that start in no segment */
};

/* A live block. */
struct gs_block {
    uint64_t addr, size, time_ns;
    uint32_t site; /* index in gs_blocks.sites */
    uint32_t tid;
};

/* A segment as the fragmentation figures keep it (blocks.c). */
struct gs_seg;

struct gs_blocks {
    int seen;                        /* a block event came */
    struct gs_block *blocks;         /* the live blocks, free slots threaded through addr */
    size_t nblocks, blocks_cap, free_slot;
    struct gs_idmap *by_addr;        /* addr -> index in blocks */
    struct gs_site *sites;           /* by call site of gpushim_block_alloc (kind 0) */
    size_t nsites, sites_cap;
    struct gs_idmap *sites_by_stack; /* stack id -> index in sites */
    uint64_t allocs, frees, frees_unknown;
    uint64_t live_bytes, live_count;
    uint64_t peak_bytes, peak_time_ns, peak_epoch;
    /* fragmentation: at the device peak, and at each failure kept */
    int peak_pending;                /* the device peak's figures are still to be taken */
    struct gs_frag at_peak;
    struct gs_frag *at_failure;      /* one per gs_replay.failures entry */
    size_t at_failure_cap;
    /* a cache of the segments and blocks in address order, built when first
     * needed (never checkpointed: it is made again from the live sets) */
    int indexed;
    struct gs_ordmap *seg_map;       /* start -> index in segs */
    struct gs_ordmap *block_map;     /* addr -> index in blocks */
    struct gs_seg *segs;
    size_t nsegs, segs_cap, seg_free;
    uint32_t *dirty;                 /* segments whose blocks changed */
    size_t ndirty, dirty_cap;
    uint64_t sum_bytes, sum_covered, sum_inside, sum_segments; /* segments with blocks */
    uint64_t max_gap;
    size_t max_gap_seg;
    int max_valid;
};

/* The checkpoint a rotated trace starts with (checkpoint.c). */
struct gs_checkpoint_state {
    int present;             /* one was loaded: the history before it is summarized */
    int open;                /* its BEGIN record was read, its END and events not yet */
    uint64_t time_ns;        /* the time it was taken (its last event's) */
    uint64_t events;         /* events it summarizes */
    uint64_t loaded[GS_REC_CKPT_LAST - GS_REC_CKPT_FIRST + 1]; /* records, by type */
    uint64_t api_loaded[GS_REC_CKPT_API_LAST - GS_REC_CKPT_API_FIRST + 1]; /* the same, of
                                                                            * marks and blocks */
    uint64_t api_items[3]; /* CKPT_API_ITEM records: recent marks, steps, failure figures */
};

/* timeline.c: device memory over time (all devices), in buckets that widen
 * as the run goes on. */
#define GS_TIMELINE_BUCKETS 64
struct gs_timeline {
    uint64_t width_ns;                /* of a bucket; 0 before the first change */
    unsigned n;                       /* buckets in use */
    uint64_t hi[GS_TIMELINE_BUCKETS];  /* the most live in each */
    uint64_t end[GS_TIMELINE_BUCKETS]; /* live after its last change */
};
void gs_timeline_note(struct gs_timeline *t, uint64_t time_ns, uint64_t live_bytes);

/* growth.c: every site's live device bytes, sampled at steps (the marks of
 * the label marked most often) or, without marks, at windows of time or of
 * events, whichever ends first. */
#define GS_GROWTH_SAMPLES 64
#define GS_GROWTH_WINDOW_NS 1000000ull /* the first windows: 1 ms; they widen */
#define GS_GROWTH_WINDOW_EVENTS 4      /* ... or 4 events; they widen too */
#define GS_GROWTH_QUIET_TAKES 8        /* a window's state taken at most so often */
struct gs_growth {
    int enabled;         /* the analyzer's replay follows growth; the shim's does not */
    int by_steps;        /* samples are taken at marks of step_label; else at windows */
    uint32_t step_label; /* index in gs_marks.labels */
    uint64_t every;      /* steps (or ns of a window) from one sample to the next */
    uint64_t every_events; /* windows: the most events in one */
    uint64_t events;     /* windows: events in this one so far */
    uint64_t next_ns;    /* windows: when the next sample is due */
    int quiet;           /* windows: slot n holds the window's quietest moment so far */
    unsigned quiet_takes;
    uint64_t quiet_bytes; /* the device bytes live then */
    uint64_t steps;      /* marks of step_label since sampling by steps began */
    unsigned n;          /* samples kept */
    uint64_t time_ns[GS_GROWTH_SAMPLES];
    uint64_t step[GS_GROWTH_SAMPLES]; /* by steps: the count of step marks then */
    /* the two layers at each sample: blocks in segments (all devices), pools */
    struct gs_layers {
        uint64_t segment_bytes, block_bytes, largest_free;
        uint64_t pool_reserved, pool_used;
    } layers[GS_GROWTH_SAMPLES];
    uint64_t *live;      /* live[site * GS_GROWTH_SAMPLES + k]: site's live bytes at sample k */
    uint64_t *first_ns;  /* per site: the time of its first allocation (UINT64_MAX: none) */
    size_t nsites;       /* sites the arrays have room for */
};

/* oom.c: what a failed allocation found, taken when it failed (the first
 * GS_POSTMORTEMS failures). */
#define GS_POSTMORTEMS 16
#define GS_POSTMORTEM_SITES 5
struct gs_postmortem {
    int present;
    uint64_t pool_unused;            /* bytes its device's pools held beyond use */
    unsigned nheld;                  /* the raw sites holding most on its device */
    uint32_t held_site[GS_POSTMORTEM_SITES];
    uint64_t held_bytes[GS_POSTMORTEM_SITES], held_count[GS_POSTMORTEM_SITES];
    unsigned ngrew;                  /* the raw sites that grew most before it */
    uint32_t grew_site[GS_POSTMORTEM_SITES];
    uint64_t grew_bytes[GS_POSTMORTEM_SITES];
    uint64_t grew_from_ns, grew_from_step; /* since which sample (step 0: by time) */
    int grew_by_steps;
};

struct gs_replay {
    /* what the trace holds */
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
    uint32_t last_tid, last_tid_name; /* the replay's latest lookup, while no name changes */
    int last_tid_valid;

    /* the live set and the sites */
    struct gs_idmap *live[GS_SPACE_COUNT]; /* address (handle, ...) -> index in allocs */
    struct gs_live_alloc *allocs;
    size_t nallocs, allocs_cap, free_slot;
    struct gs_idmap *sites_by_key;
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
    struct gs_checkpoint_state checkpoint;
    struct gs_marks marks;   /* marks.c */
    struct gs_blocks blocks; /* blocks.c */
    struct gs_timeline timeline; /* timeline.c: device memory over time */
    struct gs_growth growth;     /* growth.c: live bytes by site over the run */
    struct gs_postmortem *postmortems; /* oom.c: one per failure, the first GS_POSTMORTEMS */
    struct gs_timeline *device_timelines[GS_MAX_DEVICES + 1]; /* the same per device, made
                                                              * on its first change */
    struct gs_graphs graphs; /* graphs.c: CUDA graphs */
};

/* What the device's page size adds to an allocation of size bytes: the
 * driver maps device memory in 2 MiB pages, so one of 2 MiB or more takes
 * whole pages; smaller ones share pages and count nothing (docs/api.md,
 * "Fragmentation"). */
#define GS_DEVICE_PAGE (2ull << 20)
static inline uint64_t gs_rounding_waste(uint64_t size)
{
    return size < GS_DEVICE_PAGE ? 0 : (GS_DEVICE_PAGE - size % GS_DEVICE_PAGE) % GS_DEVICE_PAGE;
}

void gs_replay_init(struct gs_replay *r);
void gs_replay_free(struct gs_replay *r);
extern const struct gs_reader_ops gs_replay_ops; /* ctx: struct gs_replay * */
/* Applies one event (exposed for tests; gs_replay_ops calls it). */
void gs_replay_event(struct gs_replay *r, const struct gs_revent *e);
/* Bytes a site held at the process's device peak (valid at any point). */
uint64_t gs_site_peak_bytes(const struct gs_replay *r, const struct gs_site *s, uint64_t *count);
/* Device bytes and allocations live now (at the end of the trace: unfreed). */
uint64_t gs_replay_leaks(const struct gs_replay *r, uint64_t *count);
const struct gs_stack *gs_replay_stack(const struct gs_replay *r, uint32_t id);
const struct gs_module *gs_replay_module_at(const struct gs_replay *r, uint64_t pc);
const struct gs_pycode *gs_replay_pycode(const struct gs_replay *r, uint32_t id);
/* Thread names. A name is a number from 1 (0: none), the same for every
 * thread that had it; gs_replay_thread_name gives its text (NULL for 0 or
 * an unknown number). */
const char *gs_replay_thread_name(const struct gs_replay *r, uint32_t name);
/* The name of thread tid now (0: the trace never named it). */
uint32_t gs_replay_thread_of(const struct gs_replay *r, uint32_t tid);
/* The name text (at most GS_MAX_THREAD_NAME bytes are kept), made if new: 0
 * when memory ran out. */
uint32_t gs_replay_thread_intern(struct gs_replay *r, const char *text);
/* Thread tid has the name text from now on. */
void gs_replay_thread_named(struct gs_replay *r, uint32_t tid, const char *text);
/* One more allocation at site s by a thread of that name (0: ignored). */
void gs_site_count_thread(struct gs_site *s, uint32_t name);

/* The parts of replay.c that checkpoint.c builds a replay state with. */
/* Forgets the live set, the sites, the totals, pools, failures and recent
 * frees; keeps the modules, stacks and Python code objects. */
void gs_replay_reset(struct gs_replay *r);
/* The site (stack_id, kind); made (zeroed) when make is set and there is
 * none. NULL: none, or no memory. kind must be below GS_KIND_COUNT. */
struct gs_site *gs_replay_site(struct gs_replay *r, uint32_t stack_id, uint32_t kind, int make);
/* The live allocation at addr in space (below GS_SPACE_COUNT), or NULL. */
struct gs_live_alloc *gs_replay_find_live(const struct gs_replay *r, uint32_t space,
                                          uint64_t addr);
/* Whether allocs[idx] holds a live allocation (not a free slot). */
int gs_replay_slot_live(const struct gs_replay *r, size_t idx);
/* Adds a to the live set as is, touching no totals: 0, or -1 on no memory. */
int gs_replay_insert(struct gs_replay *r, const struct gs_live_alloc *a);
/* The pool with this id; made (zeroed but for its id and device) when make
 * is set and there is none. NULL: none, or no memory. */
struct gs_pool_usage *gs_replay_pool(struct gs_replay *r, uint64_t pool, int32_t device, int make);

/* Takes what a report reads that is still pending (the fragmentation at
 * the device peak): call once the last event is in, before reporting. */
void gs_replay_finish(struct gs_replay *r);

/* ---- marks.c and blocks.c, called by replay.c ---- */
void gs_marks_init(struct gs_marks *m);
void gs_marks_free(struct gs_marks *m);
void gs_marks_on_mark(struct gs_replay *r, const struct gs_revent *e);
/* The process's device bytes changed by delta (after the change). */
void gs_marks_device_added(struct gs_replay *r, uint64_t size);
void gs_marks_device_removed(struct gs_replay *r, uint64_t size);
/* A label's index, made if make and there is room; GS_MARK_OTHER if none. */
uint32_t gs_marks_label(struct gs_marks *m, const char *label, size_t len, int make);

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
/* Builds the address-ordered cache of segments and blocks from the live
 * sets, if it is not there: 0, or -1 on no memory. */
int gs_blocks_index(struct gs_replay *r);
/* The fragmentation now, on device (-1: all devices). */
void gs_blocks_fragmentation(struct gs_replay *r, int32_t device, struct gs_frag *out);
/* After failures[idx] was added: its fragmentation. */
void gs_blocks_on_failure(struct gs_replay *r, size_t idx);
/* Room for at_failure[idx] (new entries zeroed): 0, or -1 on no memory. */
int gs_blocks_failure_room(struct gs_blocks *b, size_t idx);
void gs_blocks_finish(struct gs_replay *r);
/* The block site of a stack; made (zeroed) when make. NULL: none, or no memory. */
struct gs_site *gs_blocks_site(struct gs_blocks *b, uint32_t stack_id, int make);
/* Bytes a block site held at the block peak. */
uint64_t gs_block_site_peak_bytes(const struct gs_blocks *b, const struct gs_site *s,
                                  uint64_t *count);
/* Adds a live block as it is (checkpoint.c): 0, or -1 on no memory or a
 * block already live at its address. */
int gs_blocks_insert(struct gs_blocks *b, const struct gs_block *blk);
/* Whether blocks[idx] holds a live block. */
int gs_blocks_slot_live(const struct gs_blocks *b, size_t idx);

/* ---- checkpoint.c ---- */
/* Writes the whole of r as complete trace records (u8 type, varint payload
 * length, payload; each at most GS_MAX_RECORD bytes), one put call each:
 * the MODULE, PYCODE and STACK records of every module, Python code object
 * and stack r knows, then the
 * checkpoint records (include/gpushim_trace.h). Replaying them into a fresh
 * replay, then the events that follow, reports what replaying every event
 * would. put returns 0, or -1 to stop. Returns 0, or -1 when put failed. */
int gs_checkpoint_write(const struct gs_replay *r,
                        int (*put)(void *ctx, const uint8_t *rec, size_t len), void *ctx);
/* Loads one checkpoint record into r (gs_replay_ops' checkpoint callback).
 * BEGIN starts the state over (modules and stacks stay). The payload is
 * untrusted: returns -1 for one that is damaged, out of range, or out of
 * place (before BEGIN, after END or an event), changing nothing but the
 * checkpoint's openness (an END is the last record, whole or not). */
int gs_checkpoint_load(struct gs_replay *r, uint8_t type, const uint8_t *payload, size_t len);

/* ---- growth.c ---- */
void gs_growth_free(struct gs_growth *g);
/* Called by replay.c: before and after each event, at each allocation, at
 * each mark (after marks.c counted it). */
void gs_growth_before_event(struct gs_replay *r, uint64_t time_ns);
void gs_growth_on_alloc(struct gs_replay *r, size_t site, uint64_t time_ns);
void gs_growth_on_mark(struct gs_replay *r, uint32_t label, uint64_t time_ns);
void gs_growth_after_event(struct gs_replay *r, uint64_t time_ns);
/* The last window's sample: once the last event is in (gs_replay_finish). */
void gs_growth_finish(struct gs_replay *r);

/* ---- oom.c ---- */
/* After failures[idx] was added: what the process held and what grew, in a
 * free slot of postmortems (none for a refused one, or when all are taken). */
void gs_oom_on_failure(struct gs_replay *r, size_t idx);
/* failures[idx]'s post-mortem, or NULL. */
const struct gs_postmortem *gs_failure_postmortem(const struct gs_replay *r, size_t idx);

/* ---- outcome.c ---- */
/* Before the replay applies e: ends a chain e shows the outcome of. Returns
 * 1 when the replay must not apply e (a probe's allocation, held apart; the
 * free of one), else 0. */
int gs_outcome_event(struct gs_replay *r, const struct gs_revent *e);
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
const char *gs_outcome_name(uint32_t outcome);
/* Failures that were not recovered from: all failed allocations less the
 * recovered, probes and refused (so a trace from before outcomes counts
 * them all). */
uint64_t gs_outcome_unrecovered(const struct gs_replay *r);
/* The replay's own handling of an allocation (replay.c), for one held apart. */
void gs_replay_apply_alloc(struct gs_replay *r, const struct gs_revent *e);
/* And of a free (for a graph's free node). */
void gs_replay_apply_free(struct gs_replay *r, const struct gs_revent *e);
/* Sets the analyzer's own device allocation at (space, addr) to size bytes
 * at site (0 bytes: ends it), counted in no allocation total: a graph
 * pool's reserve beyond its live allocations. */
void gs_replay_set_held(struct gs_replay *r, uint32_t space, uint64_t addr, uint64_t size,
                        uint32_t site, int32_t device, uint64_t now);

/* ---- graphs.c ---- */
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
/* A GS_REC_CKPT_GRAPH record (checkpoint.c writes them): 0, or -1 if bad. */
int gs_graphs_load(struct gs_replay *r, struct gs_cursor *c);
/* The number of graphs, executables alive. */
size_t gs_graphs_count(const struct gs_graphs *g, enum gs_graph_which which);

/* ---- timeline.c: per device, and as charts read it ---- */
/* Device memory of one device (index as gs_replay.devices) changed: its
 * timeline, made on the first change (none if there is no memory). */
void gs_timeline_device_note(struct gs_replay *r, unsigned device_index, uint64_t time_ns,
                             uint64_t live_bytes);
void gs_timelines_free(struct gs_replay *r);
/* The common bucket width and count of a report: the widest timeline's. */
void gs_timeline_span(const struct gs_replay *r, uint64_t *width_ns, unsigned *n);
/* src's buckets merged up to width_ns (a power-of-two multiple of its own)
 * and carried to n buckets with the value its last change left; a NULL src
 * reads as no memory at any time. */
void gs_timeline_aligned(const struct gs_timeline *src, uint64_t width_ns, unsigned n,
                         struct gs_timeline *out);

#endif
