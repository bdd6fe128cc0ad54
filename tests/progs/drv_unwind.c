/*
 * drv_unwind.c - allocations from the places where a stack walk can go
 * wrong, for the fast unwinder (shim/record/walk.c) to be compared with
 * libunwind, frame for frame (tests/integration/test_unwind.py).
 *
 * Usage: drv_unwind [memo]
 *
 * Ten allocations of 1 MiB, each freed at once (10 allocations, 10 frees,
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
 *   below     below_rsp, whose unwind information says its return address
 *             is 8 bytes below its stack pointer: a step no frame that calls
 *             can have (what lies there is its callee's), left to libunwind
 *   noreturn  a function that never returns, called as the last instruction
 *             of main: its return address is past main's end, and only the
 *             call before it (pc - 1) is in main; it prints "unwind done"
 *             and exits 0
 *
 * With "memo", thirteen allocations instead, for the walk that goes on from
 * the thread's walk before (walk.c's memo: its states, and the words each
 * step loaded, checked instead of walked). Walks 1-7 and 13 are a chain of
 * c frames under main (chain or chain2, from via_g or via_h), then l + 1
 * frames of a leaf function (extra or other), then alloc_free; run with
 * GPUSHIM_STACK_DEPTH=64:
 *   1 via_g, chain 100, extra 10  the first: walked; 64 frames end in chain
 *   2 via_g, chain 100, extra 2   goes on at its second frame in extra,
 *                                 where one of walk 1's stood, and walks
 *                                 on past where walk 1 stopped
 *   3 via_g, chain 100, extra 12  goes on in extra and reaches 64 frames
 *                                 while checking
 *   4 via_g, chain 20, extra 2    its frames stand higher on the stack
 *                                 than any of walk 3's: walked
 *   5 via_h, chain 20, extra 2    goes on in extra; the words hold up to
 *                                 the return address into via_h, not
 *                                 via_g: walked from there
 *   6 via_h, chain 20, other 2    another leaf function: goes on at chain
 *   7 via_h, chain2 20, extra 2   chain2, chain's twin: goes on at via_h
 *   8 lift 4, vla_at, alloc_nofp, leaf_extra, extra 1: goes on at main
 *   9 lift 0, vla_at, alloc_nofp, leaf_other, other 1: vla_at's array
 *     ends where walk 8's did, so alloc_nofp (no frame pointer, rbp not
 *     saved) stands where walk 8's did and the walk goes on there; but
 *     vla_at's CFA is its rbp, 64 bytes higher than walk 8's, and walk 8's
 *     return address into lift is still in the stack below (in this
 *     walk's array): rbp must be compared before that step
 *  10 lift 4, vla_at, alloc_nofp, leaf_other, other 1: goes on at
 *     alloc_free, where walk 9's stood; the words hold up to the rbp that
 *     leaf_other saved, vla_at's, 64 bytes lower than walk 9's (the word
 *     that step loads must be compared too: vla_at's step reads it)
 *  11 lift 0, vla_at, alloc_nofp, leaf_via, other 1: goes on at alloc_free
 *  12 lift 4, vla_at, alloc_nofp, leaf_via, extra 2: alloc_free stands
 *     lower than walk 11's, and extra is not other: it goes on at leaf_via,
 *     whose step loads the rbp it saved, vla_at's, 64 bytes lower than walk
 *     11's: the first step taken on loads a word that differs
 *  13 a thread, via_g, chain 20, extra 2: its own stack and memo: walked
 *  14 rbp_holder(1), rbp_saver, alloc_free: rbp_holder keeps 1 in rbp, as
 *     code without frame pointers keeps any variable, and rbp_saver saves
 *     it: goes on at main
 *  15 the same from the same call site, with 2 in rbp: every step is walk
 *     14's but the one that loads the rbp rbp_saver saved, which no later
 *     step reads (the CFAs are rsp's): the whole walk is checked, none of
 *     it walked
 * It prints "memo done".
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

/* Functions alike but for their names (twins, for memo below: their
 * frames are alike, their return addresses are not). TO_ALLOC(name):
 * n + 1 frames of name, then alloc_free. */
#define TO_ALLOC(name)                                                                             \
    NOINLINE static void name(int n)                                                               \
    {                                                                                              \
        if (n == 0)                                                                                \
            alloc_free();                                                                          \
        else                                                                                       \
            name(n - 1);                                                                           \
        KEEP_FRAME();                                                                              \
    }

TO_ALLOC(deep)

TO_ALLOC(extra)
TO_ALLOC(other)

/* CHAIN(name): n + 1 frames of name, then leaf(l) */
#define CHAIN(name)                                                                                \
    NOINLINE static void name(int n, void (*leaf)(int), int l)                                     \
    {                                                                                              \
        if (n == 0)                                                                                \
            leaf(l);                                                                               \
        else                                                                                       \
            name(n - 1, leaf, l);                                                                  \
        KEEP_FRAME();                                                                              \
    }

CHAIN(chain)
CHAIN(chain2)

typedef void chain_fn(int, void (*)(int), int);

/* VIA(name): one frame of name over the chain c; via_g and via_h have the
 * same frame, so the chains under them stand at the same addresses */
#define VIA(name)                                                                                  \
    NOINLINE static void name(chain_fn *c, int n, void (*leaf)(int), int l)                        \
    {                                                                                              \
        c(n, leaf, l);                                                                             \
        KEEP_FRAME();                                                                              \
    }

VIA(via_g)
VIA(via_h)

/* alloc_nofp: calls memo_leaf from a frame without a frame pointer, rbp
 * neither saved nor changed (the CFA is rsp + 16 throughout) */
void (*volatile memo_leaf)(void);
void alloc_nofp(void);
__asm__(".text\n"
        ".globl alloc_nofp\n"
        ".type alloc_nofp, @function\n"
        "alloc_nofp:\n"
        ".cfi_startproc\n"
        "subq $8, %rsp\n"
        ".cfi_def_cfa_offset 16\n"
        "call *memo_leaf(%rip)\n"
        "addq $8, %rsp\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size alloc_nofp, .-alloc_nofp\n");

/* LEAF(name, f): one frame of name over f(1) */
#define LEAF(name, f)                                                                              \
    NOINLINE static void name(void)                                                                \
    {                                                                                              \
        f(1);                                                                                      \
        KEEP_FRAME();                                                                              \
    }

LEAF(leaf_extra, extra)
LEAF(leaf_other, other)

/* leaf_via: calls memo_inner(memo_inner_n) from one call site */
static void (*volatile memo_inner)(int);
static volatile int memo_inner_n;

NOINLINE static void leaf_via(void)
{
    memo_inner(memo_inner_n);
    KEEP_FRAME();
}

static uintptr_t vla_floor; /* where vla_at's array ends, whoever calls it */

NOINLINE static void vla_at(void)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    volatile char buf[here - vla_floor];
    buf[0] = 1;
    alloc_nofp();
    buf[1] = buf[0];
}

NOINLINE static void lift(int n)
{
    if (n == 0)
        vla_at();
    else
        lift(n - 1);
    KEEP_FRAME();
}

/* rbp_holder(v, f): calls rbp_saver(f) with v in rbp. rbp_saver(f): saves
 * rbp and calls f. Neither has a frame pointer: their CFAs are rsp's. */
void rbp_holder(uint64_t v, void (*f)(void));
void rbp_saver(void (*f)(void));
__asm__(".text\n"
        ".globl rbp_holder\n"
        ".type rbp_holder, @function\n"
        "rbp_holder:\n"
        ".cfi_startproc\n"
        "pushq %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "movq %rdi, %rbp\n"
        "movq %rsi, %rdi\n"
        "call rbp_saver\n"
        "popq %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size rbp_holder, .-rbp_holder\n"
        ".globl rbp_saver\n"
        ".type rbp_saver, @function\n"
        "rbp_saver:\n"
        ".cfi_startproc\n"
        "pushq %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "call *%rdi\n"
        "popq %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size rbp_saver, .-rbp_saver\n");

/* below_rsp(f): calls f, its unwind information saying that its return
 * address is at its CFA - 24, 8 bytes below its rsp at the call: where the
 * call puts f's own return address. libunwind reads what it is told: a
 * return into below_rsp, then, from there, the word at below_rsp's entry,
 * its real return address (into main, whose CFA is its frame pointer's, so
 * the 16 bytes the steps got wrong do not matter there). */
void below_rsp(void (*f)(void));
__asm__(".text\n"
        ".globl below_rsp\n"
        ".type below_rsp, @function\n"
        "below_rsp:\n"
        ".cfi_startproc\n"
        "subq $8, %rsp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rip, -24\n"
        "call *%rdi\n"
        "addq $8, %rsp\n"
        ".cfi_def_cfa_offset 8\n"
        ".cfi_offset %rip, -8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size below_rsp, .-below_rsp\n");

static volatile uint64_t rbp_values = 2;

static void *memo_thread(void *arg)
{
    (void)arg;
    use_device(0);
    via_g(chain, 20, extra, 2);
    return NULL;
}

NOINLINE static int memo(void)
{
    via_g(chain, 100, extra, 10);
    via_g(chain, 100, extra, 2);
    via_g(chain, 100, extra, 12);
    via_g(chain, 20, extra, 2);
    via_h(chain, 20, extra, 2);
    via_h(chain, 20, other, 2);
    via_h(chain2, 20, extra, 2);
    vla_floor = ((uintptr_t)__builtin_frame_address(0) - 8192) & ~(uintptr_t)15;
    memo_leaf = leaf_extra;
    lift(4);
    memo_leaf = leaf_other;
    lift(0);
    lift(4);
    memo_leaf = leaf_via;
    memo_inner = other;
    memo_inner_n = 1;
    lift(0);
    memo_inner = extra;
    memo_inner_n = 2;
    lift(4);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, memo_thread, NULL), 0);
    EXPECT(pthread_join(t, NULL), 0);
    for (uint64_t v = 1; v <= rbp_values; v++) /* one call site: a loop not unrolled */
        rbp_holder(v, alloc_free);
    puts("memo done");
    return 0;
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

int main(int argc, char **argv)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    if (argc > 1 && strcmp(argv[1], "memo") == 0)
        return memo();
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

    below_rsp(alloc_free);
    finish();
}
