/*
 * gpushim.h - what a program may tell gpushim, if it wants to.
 *
 * gpushim records a program without any change to it. A program that wants
 * its report to speak in its own terms includes this header and calls:
 *
 *   gpushim_mark("step")         a step begins: the report splits the run
 *                                at the marks (a step runs from one mark to
 *                                the next mark of the same label, the last to
 *                                the end of the run)
 *   gpushim_step_end("step")     a step ends, for marks made after each step
 *                                (an optimizer's post-step hook): a step runs
 *                                from one end to the next, the first from the
 *                                start of the run
 *   gpushim_block_alloc(p, n)    its own allocator handed out the block
 *   gpushim_block_free(p)        [p, p+n), usually carved from a driver
 *                                allocation, and took it back: the report
 *                                then shows both layers, and how fragmented
 *                                the driver allocations are
 *   gpushim_range_push("fwd")    a range that nests on its thread, until the
 *   gpushim_range_pop()          matching pop: the report shows memory by range
 *                                (what NVTX's nvtxRangePushA/Pop give it too)
 *   gpushim_flush()              the trace file gets every event so far, now
 *   gpushim_loaded()             whether the shim's entry points can be found
 *                                (it is preloaded, as `gpushim run` does)
 *
 * The functions are static inline wrappers: each looks up the shim's entry
 * point once (dlsym(RTLD_DEFAULT, ...)) and does nothing when it is absent,
 * so a program built with this header runs unchanged, with the same results,
 * whether or not libgpushim.so is loaded, and needs no link against it.
 * dlsym is in glibc's libc from 2.34 on; older glibc needs -ldl.
 *
 * Each call records its call stack (marks and blocks are reported by call
 * site), so a mark costs about what a recorded allocation does: a few
 * microseconds. Every argument may be NULL or wrong: a NULL label is the
 * empty label, labels are cut at GPUSHIM_MAX_LABEL bytes, and a NULL block
 * is ignored. The functions keep errno and are thread-safe, but not
 * async-signal-safe (do not call them from a signal handler). From C, C++
 * (extern "C" inside) or, through ctypes, Python: docs/api.md.
 */
#ifndef GPUSHIM_H
#define GPUSHIM_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The version of the entry points below. A later, incompatible version
 * gets entry points of new names; the shim keeps exporting the old ones. */
#define GPUSHIM_API_VERSION 1

/* The names libgpushim.so exports, for this version. */
#define GPUSHIM_API_MARK "gpushim_api_v1_mark"               /* void (const char *) */
#define GPUSHIM_API_BLOCK_ALLOC "gpushim_api_v1_block_alloc" /* void (const void *, size_t) */
#define GPUSHIM_API_BLOCK_FREE "gpushim_api_v1_block_free"   /* void (const void *) */
#define GPUSHIM_API_FLUSH "gpushim_api_v1_flush"             /* void (void) */
#define GPUSHIM_API_RANGE_PUSH "gpushim_api_v1_range_push"   /* int (const char *) */
#define GPUSHIM_API_RANGE_POP "gpushim_api_v1_range_pop"     /* int (void) */
#define GPUSHIM_API_STEP_END "gpushim_api_v1_step_end"       /* void (const char *) */

#define GPUSHIM_MAX_LABEL 255 /* bytes of a mark's label that are kept */

#ifdef __cplusplus
extern "C" {
#endif

/* glibc defines RTLD_DEFAULT only under _GNU_SOURCE; it is null there. */
#ifdef RTLD_DEFAULT
#define GPUSHIM_RTLD_DEFAULT_ RTLD_DEFAULT
#else
#define GPUSHIM_RTLD_DEFAULT_ ((void *)0)
#endif

/* The entry point called name, looked up once per translation unit; NULL
 * when the shim is not loaded. *slot: 0 not yet looked up, 1 absent, else
 * the function. Keeps errno and the program's dlerror(). */
static inline void *gpushim_lookup_(uintptr_t *slot, const char *name)
{
    uintptr_t v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!v) {
        int saved = errno;
        void *p = dlsym(GPUSHIM_RTLD_DEFAULT_, name);
        if (!p)
            (void)dlerror(); /* our lookup's error is not the program's */
        errno = saved;
        v = p ? (uintptr_t)p : 1;
        __atomic_store_n(slot, v, __ATOMIC_RELEASE);
    }
    return v == 1 ? NULL : (void *)v;
}

/* Calls through a function pointer made from what dlsym returned (copied,
 * since C and C++ do not convert object pointers to function pointers);
 * keep is empty, or "result =" to keep what it returns. */
#define GPUSHIM_CALL_(name, type, args, keep)                                                      \
    do {                                                                                           \
        static uintptr_t slot_;                                                                    \
        void *p_ = gpushim_lookup_(&slot_, name);                                                  \
        if (p_) {                                                                                  \
            type fn_;                                                                              \
            memcpy(&fn_, &p_, sizeof fn_);                                                         \
            keep fn_ args;                                                                         \
        }                                                                                          \
    } while (0)

typedef void (*gpushim_mark_fn_)(const char *);
typedef void (*gpushim_block_alloc_fn_)(const void *, size_t);
typedef void (*gpushim_block_free_fn_)(const void *);
typedef void (*gpushim_flush_fn_)(void);
typedef int (*gpushim_range_push_fn_)(const char *);
typedef int (*gpushim_range_pop_fn_)(void);

/* A step of label ("step", "epoch", "eval") begins here: made before each
 * step, as at the top of a training loop's body. */
static inline void gpushim_mark(const char *label)
{
    GPUSHIM_CALL_(GPUSHIM_API_MARK, gpushim_mark_fn_, (label), );
}

/* The step of label running ends here: made after each step, as an
 * optimizer's post-step hook is. The first step runs from the start of the
 * run, and what follows the last end is no step. (A shim of before this
 * entry point records nothing for it.) */
static inline void gpushim_step_end(const char *label)
{
    GPUSHIM_CALL_(GPUSHIM_API_STEP_END, gpushim_mark_fn_, (label), );
}

/* The program's allocator handed out [ptr, ptr+size). */
static inline void gpushim_block_alloc(const void *ptr, size_t size)
{
    GPUSHIM_CALL_(GPUSHIM_API_BLOCK_ALLOC, gpushim_block_alloc_fn_, (ptr, size), );
}

/* The program's allocator took back the block at ptr. */
static inline void gpushim_block_free(const void *ptr)
{
    GPUSHIM_CALL_(GPUSHIM_API_BLOCK_FREE, gpushim_block_free_fn_, (ptr), );
}

/* Writes every event recorded so far to the trace file before it returns
 * (written, not synced to disk). Does nothing before the first event. */
static inline void gpushim_flush(void)
{
    GPUSHIM_CALL_(GPUSHIM_API_FLUSH, gpushim_flush_fn_, (), );
}

/* A range named label opens on this thread, inside the ranges it has open:
 * the report shows the memory inside it (docs/api.md "NVTX"; the same as
 * nvtxRangePushA, and nested with NVTX's ranges of the default domain).
 * Returns its depth from 0, or -1 when the shim is not loaded. */
static inline int gpushim_range_push(const char *label)
{
    int depth = -1;
    GPUSHIM_CALL_(GPUSHIM_API_RANGE_PUSH, gpushim_range_push_fn_, (label), depth =);
    return depth;
}

/* The thread's innermost range closes. Returns the depth left, or -1 when
 * none was open or the shim is not loaded. */
static inline int gpushim_range_pop(void)
{
    int depth = -1;
    GPUSHIM_CALL_(GPUSHIM_API_RANGE_POP, gpushim_range_pop_fn_, (), depth =);
    return depth;
}

/* 1 when libgpushim.so's entry points can be found (it is preloaded, as
 * gpushim run does, so that they are in the global scope), else 0. */
static inline int gpushim_loaded(void)
{
    static uintptr_t slot_;
    return gpushim_lookup_(&slot_, GPUSHIM_API_MARK) != NULL;
}

#ifdef __cplusplus
}
#endif

#endif
