/*
 * drv_unwind.c - allocations from the places where a stack walk can go
 * wrong, for the fast unwinder (shim/record/walk.c) to be compared with
 * libunwind, frame for frame (tests/integration/test_unwind.py).
 *
 * Usage: drv_unwind
 *
 * Nine allocations of 1 MiB, each freed at once (9 allocations, 9 frees,
 * nothing left), from:
 *   plain     main -> plain()
 *   vla       a frame with a variable-length array (its CFA is its frame
 *             pointer's, not its stack pointer's)
 *   aligned   a frame that realigns its stack for a 64-byte aligned local
 *   deep      300 frames of recursion, deeper than the deepest stack the
 *             shim records (GPUSHIM_STACK_DEPTH=256)
 *   thread    a second thread (another stack and its bounds)
 *   signal    a SIGUSR1 handler run on the thread's stack: the walk meets
 *             the kernel's signal frame, whose unwind information says so
 *             ('S'), and leaves the stack to libunwind
 *   altstack  a SIGUSR2 handler run on a sigaltstack: not the thread's own
 *             stack, so libunwind's
 *   context   a function run by swapcontext on a stack of its own: the same
 *   noreturn  a function that never returns, called as the last instruction
 *             of main: its return address is past main's end, and only the
 *             call before it (pc - 1) is in main; it prints "unwind done"
 *             and exits 0
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "progs.h"

/* After a call, keeps it from being a tail call and a recursion a loop. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

NOINLINE static void alloc_free(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, MiB), GS_CUDA_SUCCESS);
    EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
    KEEP_FRAME();
}

NOINLINE static void plain(void)
{
    alloc_free();
    KEEP_FRAME();
}

NOINLINE static void vla(int n)
{
    volatile char buf[n];
    buf[0] = 1;
    alloc_free();
    buf[n - 1] = buf[0];
}

NOINLINE static void aligned(void)
{
    _Alignas(64) volatile char buf[64];
    buf[0] = 1;
    alloc_free();
    buf[63] = buf[0];
}

NOINLINE static void deep(int n)
{
    if (n == 0)
        alloc_free();
    else
        deep(n - 1);
    KEEP_FRAME();
}

static void *thread_main(void *arg)
{
    (void)arg;
    use_device(0);
    alloc_free();
    return NULL;
}

static void on_signal(int sig)
{
    (void)sig;
    alloc_free();
}

static ucontext_t main_ctx, func_ctx;

static void in_context(void)
{
    alloc_free();
} /* returns to main_ctx through uc_link */

__attribute__((noreturn, noinline)) static void finish(void)
{
    alloc_free();
    puts("unwind done");
    fflush(stdout);
    exit(0);
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    plain();
    vla(1000);
    aligned();
    deep(300);

    pthread_t t;
    EXPECT(pthread_create(&t, NULL, thread_main, NULL), 0);
    EXPECT(pthread_join(t, NULL), 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    EXPECT(sigaction(SIGUSR1, &sa, NULL), 0);
    EXPECT(raise(SIGUSR1), 0);

    static char altstack[256 * 1024];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    EXPECT(sigaltstack(&ss, NULL), 0);
    sa.sa_flags = SA_ONSTACK;
    EXPECT(sigaction(SIGUSR2, &sa, NULL), 0);
    EXPECT(raise(SIGUSR2), 0);

    static char ctx_stack[256 * 1024];
    EXPECT(getcontext(&func_ctx), 0);
    func_ctx.uc_stack.ss_sp = ctx_stack;
    func_ctx.uc_stack.ss_size = sizeof ctx_stack;
    func_ctx.uc_link = &main_ctx;
    makecontext(&func_ctx, in_context, 0);
    EXPECT(swapcontext(&main_ctx, &func_ctx), 0);

    finish();
}
