/*
 * unwind.c - captures the calling thread's stack: with the fast unwinder
 * (walk.c) where it can be sure, else with libunwind, the reference; and,
 * with GPUSHIM_UNWIND=check, with both, counting every stack where they
 * differ (tests/integration/test_unwind.py).
 *
 * libunwind is opened with dlopen(RTLD_LOCAL) on the first capture it
 * makes, not linked: its shared library exports _Unwind_* and backtrace,
 * and as a dependency of a preloaded library it would stand in front of
 * libgcc's and glibc's for the whole process. Opened locally it changes
 * nothing the program sees. Its per-thread cache makes repeated stacks
 * cheap. Without it, glibc's backtrace() stands in.
 *
 * libunwind has locks of its own that a fork would leave held in the child
 * if another thread were unwinding at that moment. So every capture of
 * libunwind's holds a read lock of a gate that fork takes for writing
 * (fork.c's handlers): nobody is inside libunwind when the process forks.
 * The fast unwinder takes no lock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>

#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/record/record_int.h"

typedef int (*unw_backtrace_fn)(void **, int);
typedef int (*unw_caching_fn)(void *, int);

static unw_backtrace_fn unw_bt;

/* Under ThreadSanitizer, libunwind's per-thread trace cache is freed by a
 * key destructor that runs after the sanitizer has let the exiting thread go
 * and crashes in its mutex interceptor: glibc's backtrace there. */
#if defined(__SANITIZE_THREAD__)
#define NO_LIBUNWIND 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NO_LIBUNWIND 1
#endif
#endif

static void unwind_init(void)
{
#ifdef NO_LIBUNWIND
    return;
#endif
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        static int once;
        gs_warn_once(&once, "libunwind.so.8 not found; using glibc's backtrace (slower)");
        return;
    }
    unw_bt = (unw_backtrace_fn)gs_real_dlsym(h, "unw_backtrace");
    unw_caching_fn caching = (unw_caching_fn)gs_real_dlsym(h, "_ULx86_64_set_caching_policy");
    void **space = (void **)gs_real_dlsym(h, "_ULx86_64_local_addr_space");
    if (caching && space)
        caching(*space, 2 /* UNW_CACHE_PER_THREAD */);
}

static pthread_rwlock_t gate;
static pthread_once_t gate_once = PTHREAD_ONCE_INIT;

static void gate_init(void)
{
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* a fork waits for the captures under way, not for every one to come */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&gate, &attr);
    pthread_rwlockattr_destroy(&attr);
}

void gs_unwind_lock(void)
{
    pthread_once(&gate_once, gate_init);
    pthread_rwlock_wrlock(&gate);
}

void gs_unwind_unlock(void) { pthread_rwlock_unlock(&gate); }

void gs_unwind_reset_after_fork(void)
{
    gate_init(); /* the child's only thread held it for writing */
}

/* libunwind is opened by the first capture. That takes the loader's lock,
 * which a thread inside dlopen holds while a library's constructor runs; if
 * that constructor allocates, its capture must not wait for ours: a thread
 * that finds the opening under way uses glibc's backtrace this once. */
static int unwind_ready(void)
{
    static int state; /* 0 not opened, 1 being opened, 2 opened */
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == 2)
        return 1;
    int expected = 0;
    if (s == 0 && __atomic_compare_exchange_n(&state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE)) {
        unwind_init();
        __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
        return 1;
    }
    return 0;
}

static unsigned libunwind_stack(uint64_t *pcs, unsigned max)
{
    int ready = unwind_ready();
    pthread_once(&gate_once, gate_init);
    void *raw[GS_MAX_FRAMES + 16];
    int want = (int)max + 16; /* room for the shim's own frames, dropped below */
    pthread_rwlock_rdlock(&gate);
    int got = ready && unw_bt ? unw_bt(raw, want) : backtrace(raw, want);
    pthread_rwlock_unlock(&gate);
    /* The first frames are the unwinder's and the shim's: skip up to the
     * first shim frame (glibc's backtrace may sit under an interceptor, such
     * as a sanitizer's), then past the shim's. */
    int first = 0;
    while (first < got && !gs_in_shim(raw[first]))
        first++;
    if (first == got)
        first = 0;
    while (first < got && gs_in_shim(raw[first]))
        first++;
    unsigned n = 0;
    for (int i = first; i < got && n < max; i++)
        pcs[n++] = (uint64_t)(uintptr_t)raw[i];
    return n;
}

/* GPUSHIM_UNWIND=check: stacks compared, walked by walk.c (went_on of them
 * going on from the thread's walk before, all_checked of those taking
 * every step from it), differing. */
static unsigned long checked, walked, went_on, all_checked, differed;
static int told_difference;

static void check(const uint64_t *fast, int nfast, const uint64_t *ref, unsigned nref)
{
    __atomic_add_fetch(&checked, 1, __ATOMIC_RELAXED);
    if (nfast < 0)
        return; /* it fell back to libunwind */
    __atomic_add_fetch(&walked, 1, __ATOMIC_RELAXED);
    enum gs_walk_memo memo = gs_walk_memo();
    if (memo != GS_WALK_NEW)
        __atomic_add_fetch(&went_on, 1, __ATOMIC_RELAXED);
    if (memo == GS_WALK_CHECKED)
        __atomic_add_fetch(&all_checked, 1, __ATOMIC_RELAXED);
    unsigned i = 0;
    while (i < (unsigned)nfast && i < nref && fast[i] == ref[i])
        i++;
    if (i == (unsigned)nfast && i == nref)
        return;
    __atomic_add_fetch(&differed, 1, __ATOMIC_RELAXED);
    gs_warn_once(&told_difference,
                 "unwind check: a stack differs from libunwind's at frame %u of %d (libunwind's "
                 "has %u): %#llx, libunwind %#llx",
                 i, nfast, nref, i < (unsigned)nfast ? (unsigned long long)fast[i] : 0ull,
                 i < nref ? (unsigned long long)ref[i] : 0ull);
}

__attribute__((destructor)) static void check_report(void)
{
    if (gs_config()->unwind == GS_UNWIND_CHECK && checked)
        gs_say("unwind check: %lu stacks, %lu walked (%lu going on from the walk before, %lu of "
               "them checked to the end), %lu by libunwind alone, %lu differed",
               checked, walked, went_on, all_checked, checked - walked, differed);
}

unsigned gs_capture_stack(uint64_t *pcs, unsigned max)
{
    unsigned mode = gs_config()->unwind;
    if (mode == GS_UNWIND_FAST) {
        int n = gs_walk_stack(pcs, max);
        if (n >= 0)
            return (unsigned)n;
    }
    if (mode != GS_UNWIND_CHECK)
        return libunwind_stack(pcs, max);
    /* as deep as asked (64 frames by default), not GS_MAX_FRAMES: the
     * calling thread's stack may be a small one */
    uint64_t fast[max > GS_MAX_FRAMES ? GS_MAX_FRAMES : max ? max : 1];
    int nfast = gs_walk_stack(fast, max > GS_MAX_FRAMES ? GS_MAX_FRAMES : max);
    unsigned n = libunwind_stack(pcs, max);
    check(fast, nfast, pcs, n);
    return n;
}
