/*
 * sig_handlers.c - a program with its own signal handlers, to show that the
 * shim leaves signal handling alone. Prints what it sees and what ran, so
 * that its output under the shim can be compared with its output without.
 *
 * Usage: sig_handlers handlers | term_exit
 *
 * handlers:  prints the disposition of every signal and the blocked mask as
 *            main() finds them; installs its own SIGSEGV (SA_SIGINFO) and
 *            SIGTERM handlers; allocates 1 MiB (alloc_kept) and 2 MiB
 *            (alloc_temp, freed); checks with sigaction that both handlers
 *            are still its own and that nothing else changed; stores through
 *            a NULL pointer (its SIGSEGV handler siglongjmps back); raises
 *            SIGTERM, then sends it to the whole process with kill(); then
 *            allocates 4 MiB (alloc_after) and returns 0.
 *            Trace: 3 allocations, 1 free, 5 MiB in 2 unfreed.
 * term_exit: a SIGTERM handler that calls exit(7), as many jobs' handlers
 *            do; allocates 1 MiB (alloc_kept), says "allocated", sends
 *            itself SIGTERM and waits. Trace: 1 allocation, 1 MiB unfreed,
 *            finished.
 *
 * The driver is dlopened (the Makefile links -lcuda into drv_* only).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

typedef gs_curesult (*init_fn)(unsigned);
typedef gs_curesult (*retain_fn)(gs_cucontext *, gs_cudevice);
typedef gs_curesult (*set_fn)(gs_cucontext);

static gs_pfn_cuMemAlloc_v2 mem_alloc;
static gs_pfn_cuMemFree_v2 mem_free;

static sigjmp_buf segv_return;
static volatile sig_atomic_t segv_ran, segv_addr_null, term_ran, term_in_main;
static pid_t main_tid;

static void say(const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(1, s, n);
        if (w <= 0)
            _exit(98);
        s += w;
        n -= (size_t)w;
    }
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    segv_ran++;
    segv_addr_null = si->si_addr == NULL;
    siglongjmp(segv_return, 1);
}

static void on_term(int sig)
{
    (void)sig;
    term_ran++;
    term_in_main = gettid() == main_tid;
}

static void on_term_exit(int sig)
{
    (void)sig;
    exit(7);
}

/* One character per signal 1..31: D default, I ignored, H a handler. */
static void dispositions(char *out)
{
    for (int s = 1; s < 32; s++) {
        struct sigaction sa;
        if (sigaction(s, NULL, &sa)) {
            out[s - 1] = '?';
            continue;
        }
        void (*h)(int) = sa.sa_handler; /* same storage as sa_sigaction */
        out[s - 1] = h == SIG_DFL ? 'D' : h == SIG_IGN ? 'I' : 'H';
    }
    out[31] = 0;
}

static void blocked(char *out, size_t len)
{
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    size_t n = 0;
    out[0] = 0;
    for (int s = 1; s < 65 && n + 8 < len; s++)
        if (sigismember(&cur, s) == 1)
            n += (size_t)snprintf(out + n, len - n, " %d", s);
    if (!n)
        snprintf(out, len, " none");
}

static void open_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(99);
    }
    init_fn init = (init_fn)dlsym(h, "cuInit");
    retain_fn retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    set_fn set = (set_fn)dlsym(h, "cuCtxSetCurrent");
    mem_alloc = (gs_pfn_cuMemAlloc_v2)dlsym(h, "cuMemAlloc_v2");
    mem_free = (gs_pfn_cuMemFree_v2)dlsym(h, "cuMemFree_v2");
    if (!init || !retain || !set || !mem_alloc || !mem_free)
        exit(98);
    gs_cucontext ctx;
    EXPECT(init(0), GS_CUDA_SUCCESS);
    EXPECT(retain(&ctx, 0), GS_CUDA_SUCCESS);
    EXPECT(set(ctx), GS_CUDA_SUCCESS);
}

NOINLINE static void alloc_kept(void)
{
    gs_cudeviceptr p;
    EXPECT(mem_alloc(&p, MiB), GS_CUDA_SUCCESS);
}

NOINLINE static void alloc_temp(void)
{
    gs_cudeviceptr p;
    EXPECT(mem_alloc(&p, 2 * MiB), GS_CUDA_SUCCESS);
    EXPECT(mem_free(p), GS_CUDA_SUCCESS);
}

NOINLINE static void alloc_after(void)
{
    gs_cudeviceptr p;
    EXPECT(mem_alloc(&p, 4 * MiB), GS_CUDA_SUCCESS);
}

/* A store through NULL; UBSan (sanitized builds) would stop it first. */
__attribute__((no_sanitize("null"))) NOINLINE static void store_to_null(void)
{
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
}

static int is_own(int sig, void *handler, int siginfo)
{
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa))
        return 0;
    void *h = siginfo ? (void *)sa.sa_sigaction : (void *)sa.sa_handler;
    return h == handler && !!(sa.sa_flags & SA_SIGINFO) == siginfo;
}

static int handlers(void)
{
    char line[256], start[32], now[32], mask[160], mask_now[160];
    dispositions(start);
    blocked(mask, sizeof mask);
    snprintf(line, sizeof line, "at start: dispositions %s, blocked%s\n", start, mask);
    say(line);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    EXPECT(sigaction(SIGSEGV, &sa, NULL), 0);
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_term;
    EXPECT(sigaction(SIGTERM, &sa, NULL), 0);
    start[SIGSEGV - 1] = start[SIGTERM - 1] = 'H';

    open_driver();
    alloc_kept();
    alloc_temp();

    say(is_own(SIGSEGV, (void *)on_segv, 1) ? "after allocating: the SIGSEGV handler is ours\n"
                                              : "after allocating: the SIGSEGV handler is NOT ours\n");
    say(is_own(SIGTERM, (void *)on_term, 0) ? "after allocating: the SIGTERM handler is ours\n"
                                              : "after allocating: the SIGTERM handler is NOT ours\n");
    dispositions(now);
    blocked(mask_now, sizeof mask_now);
    if (strcmp(now, start) || strcmp(mask_now, mask)) {
        snprintf(line, sizeof line, "after allocating: CHANGED: dispositions %s, blocked%s\n", now,
                 mask_now);
        say(line);
    } else {
        say("after allocating: no other disposition and no blocked signal changed\n");
    }

    if (sigsetjmp(segv_return, 1) == 0) {
        store_to_null();
        say("the store through NULL did not fault\n");
    }
    snprintf(line, sizeof line, "SIGSEGV handler ran %d time(s), fault address %s\n",
             (int)segv_ran, segv_addr_null ? "NULL" : "not NULL");
    say(line);

    raise(SIGTERM);
    snprintf(line, sizeof line, "raise(SIGTERM): handler ran %d time(s), in the main thread: %s\n",
             (int)term_ran, term_in_main ? "yes" : "no");
    say(line);

    term_in_main = 0;
    kill(getpid(), SIGTERM);
    for (int i = 0; i < 5000 && term_ran < 2; i++) { /* another thread may take it */
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    snprintf(line, sizeof line, "kill(getpid(), SIGTERM): handler ran %d time(s), in the main thread: %s\n",
             (int)term_ran, term_in_main ? "yes" : "no");
    say(line);

    alloc_after();
    say(is_own(SIGSEGV, (void *)on_segv, 1) && is_own(SIGTERM, (void *)on_term, 0)
            ? "at the end: both handlers are still ours\n"
            : "at the end: a handler is NOT ours\n");
    return 0;
}

static int term_exit(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_term_exit;
    EXPECT(sigaction(SIGTERM, &sa, NULL), 0);
    open_driver();
    alloc_kept();
    say("allocated\n");
    kill(getpid(), SIGTERM);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    main_tid = gettid();
    if (argc == 2 && !strcmp(argv[1], "handlers"))
        return handlers();
    if (argc == 2 && !strcmp(argv[1], "term_exit"))
        return term_exit();
    fprintf(stderr, "usage: sig_handlers handlers | term_exit\n");
    return 2;
}
