/*
 * model.h - the replay model: one streaming pass over a trace's events
 * that keeps the live set, sites, devices, kinds, pools, failures and their
 * outcomes, marks and steps, the program's blocks and fragmentation,
 * memory over time and CUDA graphs (struct gs_replay), and the hooks
 * analyses attach to it (struct gs_replay_hook): the model's face, its
 * calls and the structs of its parts (here and in the headers it includes:
 * outcome.h, graphs.h, marks.h, blocks.h, timeline.h, checkpoint.h,
 * hooks.h). struct gs_replay itself, its fields, is replay.h's: for the
 * model, the analyses that follow events, and the loaders; the screens
 * read the findings (analyzer/findings/found.h) and never include it
 * (make layering). What the model's files share is model_int.h.
 *
 * Included by: the shim's bounded trace (shim/bound, the one seam on the
 * shim's side), the model's own files (through model_int.h), and every
 * analyzer layer (read and up); tests.
 */
#ifndef GPUSHIM_MODEL_MODEL_H
#define GPUSHIM_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/outcome.h"
#include "analyzer/model/graphs.h"
#include "analyzer/model/marks.h"
#include "analyzer/model/blocks.h"
#include "analyzer/model/timeline.h"
#include "analyzer/model/checkpoint.h"
#include "analyzer/model/hooks.h"

struct gs_idmap;
struct gs_replay; /* its fields: analyzer/model/replay.h */

/* GS_MAX_DEVICES: analyzer/trace/trace.h */
#define GS_SITE_CACHE 256   /* sites by (stack, kind) kept in front of their map */
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

/* A live allocation. */
struct gs_live_alloc {
    uint64_t addr, size, time_ns;
    uint32_t site; /* index in gs_replay.sites */
    int32_t device;
    uint32_t kind;
    uint32_t space;
    uint32_t tid;
    uint32_t refs;   /* a FREE drops one; the allocation ends at 0 */
    uint64_t seq;    /* its number among the run's allocations, from 1 (0: from a checkpoint) */
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

/* What became of device memory, for gs_replay_hook.on_device. */
enum gs_device_change {
    GS_DEVICE_GONE = 0, /* freed */
    GS_DEVICE_NEW = 1,  /* allocated */
    GS_DEVICE_BACK = 2, /* live again: the driver refused its free */
};

/* Events with a value past GS_PLAUSIBLE_* (trace.h) are counted here and
 * not replayed, so that no figure is made of them and no sum wraps (each
 * total stays below 2^62); the report says so (findings/warnings.c). A
 * failed allocation may ask for any size (a program may ask for -1 bytes):
 * it is replayed, its sums saturated. */
enum gs_implausible_what { GS_IMPLAUSIBLE_TIME = 1, GS_IMPLAUSIBLE_SIZE, GS_IMPLAUSIBLE_TOTAL };
struct gs_implausible {
    uint64_t events;
    uint32_t first_what;  /* enum gs_implausible_what of the first */
    uint64_t first_value; /* its time or size */
};


/* Attaches an analysis: h's callbacks are called from now on with a context
 * of ctx_size bytes, zeroed, made here, handed to h->free at the end (for
 * what it holds) and freed here after that. h
 * must outlive r. Returns the context, or NULL when out of memory or
 * GS_REPLAY_HOOKS are attached (nothing is attached then). */
void *gs_replay_attach(struct gs_replay *r, const struct gs_replay_hook *h, size_t ctx_size);
/* The context attached with h, or NULL (an analysis finds its state). */
void *gs_replay_hook_ctx(const struct gs_replay *r, const struct gs_replay_hook *h);

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
/* The replay's reader callbacks, less checkpoints (the shim's bounded
 * model; the analyzer's gs_replay_ops adds the loader): ctx: struct gs_replay *. */
extern const struct gs_reader_ops gs_model_ops;
void gs_replay_on_module(void *ctx, const struct gs_rmodule *m);
void gs_replay_on_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n);
void gs_replay_on_pycode(void *ctx, const struct gs_rpycode *c);
void gs_replay_on_event(void *ctx, const struct gs_revent *e);
void gs_replay_on_thread(void *ctx, uint32_t tid, const char *name);
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
/* The live allocation at addr in space (below GS_SPACE_COUNT), or NULL. */
struct gs_live_alloc *gs_replay_find_live(const struct gs_replay *r, uint32_t space,
                                          uint64_t addr);
/* Whether allocs[idx] holds a live allocation (not a free slot). */
int gs_replay_slot_live(const struct gs_replay *r, size_t idx);

/* Takes what a report reads that is still pending (the fragmentation at
 * the device peak): call once the last event is in, before reporting. */
void gs_replay_finish(struct gs_replay *r);

#endif
