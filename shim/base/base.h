/*
 * base.h - the bottom of the shim (shim/base/): its settings (config.c),
 * the real functions it forwards to (real.c), CUDA's and glibc's, and
 * whether this process is the one its state belongs to (lineage.c).
 *
 * Included by: every file of the shim (each folder of shim/), and the unit
 * tests.
 *
 * The layers of libgpushim.so, from the bottom (docs/architecture.md), each
 * a folder with a header of its own that may use only those below it:
 *   base/    base.h     settings, the real functions
 *   file/    file.h     the trace file, the ring of entries
 *   bound/   bound.h    GPUSHIM_MAX_BYTES (the one seam to analyzer/model)
 *   writer/  writer.h   the trace's life: ring -> chunks -> file
 *   record/  record.h   one event: device, stack, Python frames, modules
 *   hooks/   hooks.h    the wrapped functions
 *   entry/   entry.h    how callers reach the hooks (dlsym, the getters),
 *                       exec and fork
 * Lock order (take only in this order): the unwinding gate, runtime call
 * sites, pools, stack table, Python code objects, modules, writer, ring
 * (entry/fork.c takes them all).
 */
#ifndef GPUSHIM_SHIM_BASE_H
#define GPUSHIM_SHIM_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct link_map;

#include "gpushim_cuda.h"

#define GS_EXPORT __attribute__((visibility("default")))

/* ---- lineage.c: a child that no fork handler ran in ---- */
extern uint8_t *gs_lineage_page; /* 1 in this process; 0 in such a child */
/* Maps the page; on_unseen_child is what fork's child handler does. */
void gs_lineage_init(void (*on_unseen_child)(void));
void gs_lineage_unseen_child(void);
void gs_lineage_mark_ours(void); /* the end of a child's reset: the page is ours */
/* At every recorded call, before any lock: a child made by clone() without
 * CLONE_VM, which ran no fork handler, lets go of its parent's trace here. */
static inline void gs_lineage_check(void)
{
    if (__builtin_expect(gs_lineage_page != NULL &&
                             __atomic_load_n(gs_lineage_page, __ATOMIC_ACQUIRE) != 1, 0))
        gs_lineage_unseen_child();
}

/* ---- config.c: settings from the environment, read once ---- */
enum gs_unwind_mode {
    GS_UNWIND_FAST,      /* "fast" (default): walk.c, libunwind where it cannot be sure */
    GS_UNWIND_LIBUNWIND, /* "libunwind": libunwind alone */
    GS_UNWIND_CHECK      /* "check": both, compared; libunwind's frames recorded */
};
struct gs_config {
    const char *output;   /* GPUSHIM_OUTPUT, default "gpushim.%p.trace" */
    unsigned stack_depth; /* GPUSHIM_STACK_DEPTH, 1..GS_MAX_FRAMES, default 64 */
    unsigned flush_ms;    /* GPUSHIM_FLUSH_MS, 10..10000, default 100 */
    unsigned pool_sample_ms; /* GPUSHIM_POOL_SAMPLE_MS, 0..60000, default 10 */
    unsigned buffer_mb;   /* GPUSHIM_BUFFER_MB, 1..1024, default 8: the ring's size */
    uint64_t max_bytes;   /* GPUSHIM_MAX_BYTES, 0 (default: no bound) or at least 4 MiB */
    unsigned python;      /* GPUSHIM_PYTHON: 1 (default: Python frames, read from memory
                           * where the layout is known), 2 (only through the API,
                           * where a thread holds the GIL) or 0 (none) */
    unsigned unwind;      /* GPUSHIM_UNWIND: enum gs_unwind_mode */
    int verbose;          /* GPUSHIM_VERBOSE=1: say where the trace goes */
    unsigned command;     /* GPUSHIM_COMMAND: enum gs_command_kept */
    const char *handoff;  /* GPUSHIM_HANDOFF: more hand-off functions (handoff.c), or NULL */
};
/* How much of the command line the trace keeps (GS_REC_CMDLINE). */
enum gs_command_kept { GS_COMMAND_NONE, GS_COMMAND_NAME, GS_COMMAND_ALL };
const struct gs_config *gs_config(void);
/* Says something on stderr, prefixed "gpushim: ", once per distinct call site
 * (pass a static int as *once). Never fails, never allocates. */
void gs_warn_once(int *once, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gs_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline uint64_t gs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- real.c: the functions the hooks forward to ---- */
enum gs_fn {
#define GS_FN_ENUM(name, ret, params) GS_FN_##name,
    GS_DRIVER_HOOKED(GS_FN_ENUM) GS_DRIVER_GETTERS(GS_FN_ENUM) GS_DRIVER_USED(GS_FN_ENUM)
        GS_RUNTIME_HOOKED(GS_FN_ENUM)
#undef GS_FN_ENUM
        GS_FN_COUNT
};
/* The real function for fn, resolved on first use: the pointer a lookup of
 * the program's handed us, else the next definition after the shim, else the
 * driver already loaded in the process. NULL when there is none. Once found,
 * it is one load (every hooked call makes one or two). */
extern void *gs_real_fns[GS_FN_COUNT];
void *gs_real_find(enum gs_fn fn);
static inline void *gs_real(enum gs_fn fn)
{
    void *p = __atomic_load_n(&gs_real_fns[fn], __ATOMIC_ACQUIRE);
    return p ? p : gs_real_find(fn);
}
const char *gs_fn_name(enum gs_fn fn);
/* Offers real as fn's real function: the slot keeps it if it was empty.
 * Returns what the slot holds now (real, or the one found before). */
void *gs_real_offer(enum gs_fn fn, void *real);
/* Index of the exported function called name that the shim wraps, or -1. */
int gs_fn_by_name(const char *name);
/* The next definition of name after the shim (glibc's), looked up once into
 * *cache; errno as it was. */
void *gs_real_next(void **cache, const char *name);
/* The real dlsym, from glibc; never our own. */
void *gs_real_dlsym(void *handle, const char *name);
/* True when addr lies inside libgpushim.so's own image. */
int gs_in_shim(const void *addr);
/* The loaded object that holds addr, or NULL. */
struct link_map *gs_link_map_of(const void *addr);
/* name as a lookup in the scope of the loaded object l finds it (l, then its
 * dependencies; for the program, the global scope): never loads anything. */
void *gs_lookup_in_scope(struct link_map *l, const char *name);

#endif
