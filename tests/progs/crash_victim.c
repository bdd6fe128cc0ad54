/*
 * crash_victim.c - a program that dies in the middle of its work, and says
 * in a log, as it goes, which of its allocations and frees had returned
 * before it died (test_crash.py compares that log with the trace).
 *
 * Usage: crash_victim LOG MODE SEED THREADS DIE_AT
 *
 * THREADS threads (1..4) each follow their own pseudo-random schedule
 * (xorshift64*, seeded from SEED and the thread's index): cuMemAlloc_v2 of
 * 4 KiB..1 MiB (a multiple of 4 KiB) from alloc_weights, alloc_activations
 * or alloc_scratch, or cuMemFree_v2, from free_tensor or release_buffer, of
 * one of the thread's own live allocations (at most 48 live per thread).
 * Around each call the thread appends a line to LOG with one write(2), so
 * the line is in the file the moment it is written:
 *
 *   B <tid> <op> <func> <size>          before the call
 *   E <tid> <op> <func> <size> <addr>   after it returned
 *
 * op is A or F; for F, size and func are the freed allocation's size and
 * allocating function. A call with an E line had returned to the program;
 * one with only a B line (at most one per thread) was in flight.
 *
 * The threads never stop by themselves. DIE_AT counts completed calls,
 * all threads together; the thread whose call is number DIE_AT logs its E
 * line and dies by MODE while the others keep going:
 *
 *   sigkill     raise(SIGKILL)
 *   segv        a store through a NULL pointer
 *   abort       abort()
 *   _exit       _exit(3): no atexit handler or destructor runs
 *   exit_group  syscall(SYS_exit_group, 4)
 *   ext         never dies by itself (DIE_AT ignored): killed from outside
 *   exit        exit(0), the control: the other threads are first parked
 *               between calls, so nothing is in flight
 *
 * Writes no core file (RLIMIT_CORE 0) and nothing on stdout. The driver is
 * dlopened (the Makefile links -lcuda into drv_* programs only), so its
 * calls reach the shim through its dlsym hook.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "progs.h"

#define MAX_THREADS 4
#define MAX_LIVE 48

typedef gs_curesult (*init_fn)(unsigned);
typedef gs_curesult (*retain_fn)(gs_cucontext *, gs_cudevice);
typedef gs_curesult (*set_fn)(gs_cucontext);

static gs_pfn_cuMemAlloc_v2 mem_alloc;
static gs_pfn_cuMemFree_v2 mem_free;
static retain_fn ctx_retain;
static set_fn ctx_set;

enum mode { M_SIGKILL, M_SEGV, M_ABORT, M_UEXIT, M_EXIT_GROUP, M_EXT, M_EXIT };
static const char *const mode_names[] = {"sigkill", "segv", "abort", "_exit",
                                         "exit_group", "ext", "exit"};

static enum mode mode;
static int log_fd;
static int nthreads;
static unsigned long long die_at;
static atomic_ullong completed;
static atomic_int stopping, parked;

struct block {
    gs_cudeviceptr addr;
    size_t size;
    const char *func; /* the allocating function */
};

struct worker {
    int tid;
    uint64_t rng;
    int nlive;
    struct block live[MAX_LIVE];
    pthread_t thread;
};

static struct worker workers[MAX_THREADS];

static uint64_t next_random(struct worker *w)
{
    uint64_t x = w->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    w->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* One line, one write(2); O_APPEND keeps the threads' lines whole. */
static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        abort();
    ssize_t w;
    do
        w = write(log_fd, buf, (size_t)n);
    while (w < 0 && errno == EINTR);
    if (w != n) {
        fprintf(stderr, "crash_victim: log write: %s\n", strerror(errno));
        exit(98);
    }
}

/* A store through NULL; UBSan (sanitized builds) would stop it first. */
__attribute__((no_sanitize("null"))) NOINLINE static void store_to_null(void)
{
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
}

static void die(void)
{
    switch (mode) {
    case M_SIGKILL:
        raise(SIGKILL);
        break;
    case M_SEGV:
        store_to_null();
        break;
    case M_ABORT:
        abort();
    case M_UEXIT:
        _exit(3);
    case M_EXIT_GROUP:
        syscall(SYS_exit_group, 4);
        break;
    case M_EXIT:
        atomic_store(&stopping, 1);
        while (atomic_load(&parked) < nthreads - 1)
            usleep(100);
        exit(0);
    case M_EXT:
        return;
    }
    fprintf(stderr, "crash_victim: still alive after dying by %s\n", mode_names[mode]);
    _exit(97);
}

/* After a call's E line: the call counts; the one numbered DIE_AT dies. */
static void completed_call(void)
{
    if (atomic_fetch_add(&completed, 1) + 1 == die_at && mode != M_EXT)
        die();
}

/* A macro, not an inline function: the call is made from the allocating
 * function itself, and its debug information names no inlined frame. */
#define ALLOC_FROM(w, func, size)                                                                  \
    do {                                                                                           \
        gs_cudeviceptr p_;                                                                         \
        log_line("B %d A %s %zu\n", (w)->tid, func, size);                                        \
        EXPECT(mem_alloc(&p_, size), GS_CUDA_SUCCESS);                                             \
        log_line("E %d A %s %zu 0x%llx\n", (w)->tid, func, size, (unsigned long long)p_);        \
        (w)->live[(w)->nlive++] = (struct block){p_, size, func};                                  \
        completed_call();                                                                          \
    } while (0)

NOINLINE static void alloc_weights(struct worker *w, size_t size)
{
    ALLOC_FROM(w, "alloc_weights", size);
}

NOINLINE static void alloc_activations(struct worker *w, size_t size)
{
    ALLOC_FROM(w, "alloc_activations", size);
}

NOINLINE static void alloc_scratch(struct worker *w, size_t size)
{
    ALLOC_FROM(w, "alloc_scratch", size);
}

#define FREE_FROM(w, i)                                                                            \
    do {                                                                                           \
        struct block b_ = (w)->live[i];                                                            \
        log_line("B %d F %s %zu\n", (w)->tid, b_.func, b_.size);                                  \
        EXPECT(mem_free(b_.addr), GS_CUDA_SUCCESS);                                                \
        log_line("E %d F %s %zu 0x%llx\n", (w)->tid, b_.func, b_.size,                           \
                 (unsigned long long)b_.addr);                                                     \
        (w)->live[i] = (w)->live[--(w)->nlive];                                                    \
        completed_call();                                                                          \
    } while (0)

NOINLINE static void free_tensor(struct worker *w, int i)
{
    FREE_FROM(w, i);
}

NOINLINE static void release_buffer(struct worker *w, int i)
{
    FREE_FROM(w, i);
}

static void *run_worker(void *arg)
{
    struct worker *w = arg;
    gs_cucontext ctx;
    EXPECT(ctx_retain(&ctx, 0), GS_CUDA_SUCCESS);
    EXPECT(ctx_set(ctx), GS_CUDA_SUCCESS);
    for (;;) {
        if (atomic_load(&stopping)) {
            atomic_fetch_add(&parked, 1);
            for (;;)
                pause();
        }
        uint64_t r = next_random(w);
        int alloc = w->nlive == 0 || (w->nlive < MAX_LIVE && r % 2 == 0);
        r >>= 1;
        if (alloc) {
            size_t size = (size_t)(r % 256 + 1) * 4 * KiB;
            switch ((r >> 8) % 3) {
            case 0: alloc_weights(w, size); break;
            case 1: alloc_activations(w, size); break;
            default: alloc_scratch(w, size); break;
            }
        } else {
            int i = (int)(r % (uint64_t)w->nlive);
            if ((r >> 8) % 2)
                free_tensor(w, i);
            else
                release_buffer(w, i);
        }
    }
    return NULL;
}

static unsigned long long number(const char *s, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end) {
        fprintf(stderr, "crash_victim: bad %s: %s\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: crash_victim LOG MODE SEED THREADS DIE_AT\n");
        return 2;
    }
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);

    size_t m = 0;
    while (m < sizeof mode_names / sizeof *mode_names && strcmp(argv[2], mode_names[m]))
        m++;
    if (m == sizeof mode_names / sizeof *mode_names) {
        fprintf(stderr, "crash_victim: unknown mode %s\n", argv[2]);
        return 2;
    }
    mode = (enum mode)m;
    uint64_t seed = number(argv[3], "SEED");
    nthreads = (int)number(argv[4], "THREADS");
    die_at = number(argv[5], "DIE_AT");
    if (nthreads < 1 || nthreads > MAX_THREADS || (mode != M_EXT && die_at < 1)) {
        fprintf(stderr, "crash_victim: THREADS is 1..4, DIE_AT at least 1\n");
        return 2;
    }
    log_fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        fprintf(stderr, "crash_victim: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }

    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 99;
    }
    init_fn init = (init_fn)dlsym(h, "cuInit");
    ctx_retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    ctx_set = (set_fn)dlsym(h, "cuCtxSetCurrent");
    mem_alloc = (gs_pfn_cuMemAlloc_v2)dlsym(h, "cuMemAlloc_v2");
    mem_free = (gs_pfn_cuMemFree_v2)dlsym(h, "cuMemFree_v2");
    if (!init || !ctx_retain || !ctx_set || !mem_alloc || !mem_free)
        return 98;
    EXPECT(init(0), GS_CUDA_SUCCESS);

    for (int i = 0; i < nthreads; i++) {
        workers[i].tid = i;
        workers[i].rng = splitmix(seed * 4 + (uint64_t)i) | 1;
        EXPECT(pthread_create(&workers[i].thread, NULL, run_worker, &workers[i]), 0);
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(workers[i].thread, NULL);
    return 0;
}
