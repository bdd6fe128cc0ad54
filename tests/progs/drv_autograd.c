/*
 * drv_autograd.c - threads that never ran Python, named as PyTorch names
 * its autograd engine's ("pt_autograd_<device>", Engine::thread_init in
 * torch/csrc/autograd/engine.cpp, through pthread_setname_np), running
 * backward nodes through functions that carry PyTorch's real symbols for
 * the generated nodes' apply, and a C pool thread of its own name.
 *
 * The engine threads share thread_main(), which runs its tasks as PyTorch's
 * engine does (evaluate_function, then the node's apply through a pointer),
 * so their allocations have the same stack whichever thread makes them.
 * One thread runs at a time, in this order (each joined before the next):
 *   main ("drv_autograd"): forward() keeps 4 MiB.
 *   pt_autograd_0 (names itself, as c10::setThreadName does): MulBackward0,
 *     MulBackward0, AddmmBackward0; with an argument N, N pairs of 4 to
 *     68 KiB (progs.h's churn_size) allocated and freed from churn() before
 *     its second MulBackward0 (so a trace bounded by GPUSHIM_MAX_BYTES
 *     rotates in between).
 *   pt_autograd_1 (named by main before it starts): MulBackward0, then it
 *     renames itself "renamed_1" with prctl(PR_SET_NAME), MulBackward0.
 *   loader (names itself): stage_batch() keeps 2 MiB.
 *   main: MulBackward0 (the CPU's backward runs on the calling thread).
 * MulBackward0 keeps 1 MiB (grad_alloc), AddmmBackward0 2 MiB
 * (grad_alloc_2mib). Device memory kept: 13 MiB, all unfreed, the peak at
 * the end. Sites: grad_alloc from thread_main, 4 MiB in 4 (pt_autograd_0
 * twice, pt_autograd_1 and renamed_1 once each: one site); forward, 4 MiB;
 * grad_alloc_2mib, 2 MiB (pt_autograd_0); stage_batch, 2 MiB (loader);
 * grad_alloc from main, 1 MiB (drv_autograd). A second argument "die":
 * the program kills itself with SIGKILL at the end instead of printing
 * (with GPUSHIM_FLUSH_MS=10000 its trace is then all in its ring file).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "progs.h"

static long churn_pairs;

NOINLINE static void keep(size_t bytes)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, bytes), GS_CUDA_SUCCESS);
}

NOINLINE static void grad_alloc(void) { keep(1 * MiB); }
NOINLINE static void grad_alloc_2mib(void) { keep(2 * MiB); }

/* torch::autograd::generated::MulBackward0::apply(std::vector<at::Tensor>&&)
 * and AddmmBackward0's, by their linkage names; the argument stands in for
 * the grads. */
NOINLINE void *mul_backward(void *grads)
    __asm__("_ZN5torch8autograd9generated12MulBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE");
NOINLINE void *mul_backward(void *grads)
{
    grad_alloc();
    __asm__ volatile("" ::: "memory"); /* not a tail call: it stays on the stack */
    return grads;
}

NOINLINE void *addmm_backward(void *grads)
    __asm__("_ZN5torch8autograd9generated14AddmmBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE");
NOINLINE void *addmm_backward(void *grads)
{
    grad_alloc_2mib();
    __asm__ volatile("" ::: "memory");
    return grads;
}

struct node {
    void *(*apply)(void *grads);
};
static const struct node mul_node = {mul_backward}, addmm_node = {addmm_backward};

NOINLINE static void evaluate_function(const struct node *fn)
{
    fn->apply(NULL);
    __asm__ volatile("" ::: "memory");
}

NOINLINE static void forward(void) { keep(4 * MiB); }
NOINLINE static void stage_batch(void) { keep(2 * MiB); }

NOINLINE static void churn(long pairs)
{
    unsigned long long sizes = CHURN_SEED;
    for (long i = 0; i < pairs; i++) {
        gs_cudeviceptr p;
        EXPECT(cuMemAlloc_v2(&p, churn_size(&sizes)), GS_CUDA_SUCCESS);
        EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
    }
}

/* An engine thread: its name (NULL: main names it), its tasks, and before
 * which task it churns and renames itself (-1: never). */
struct worker {
    const char *name;
    const struct node *tasks[3];
    int ntasks, churn_at, rename_at;
};

static sem_t named;

static void *thread_main(void *arg)
{
    const struct worker *w = arg;
    if (w->name)
        EXPECT(pthread_setname_np(pthread_self(), w->name), 0);
    else
        EXPECT(sem_wait(&named), 0);
    use_device(0);
    for (int i = 0; i < w->ntasks; i++) {
        if (i == w->churn_at)
            churn(churn_pairs);
        if (i == w->rename_at)
            EXPECT(prctl(PR_SET_NAME, "renamed_1", 0, 0, 0), 0);
        evaluate_function(w->tasks[i]);
    }
    return NULL;
}

static void *loader(void *arg)
{
    (void)arg;
    EXPECT(pthread_setname_np(pthread_self(), "loader"), 0);
    use_device(0);
    stage_batch();
    return NULL;
}

/* Runs fn(arg) on a thread of its own to the end; named: main names it. */
static void run(void *(*fn)(void *), void *arg, const char *named_by_main)
{
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, fn, arg), 0);
    if (named_by_main) {
        EXPECT(pthread_setname_np(t, named_by_main), 0);
        EXPECT(sem_post(&named), 0);
    }
    EXPECT(pthread_join(t, NULL), 0);
}

int main(int argc, char **argv)
{
    struct worker device0 = {"pt_autograd_0", {&mul_node, &mul_node, &addmm_node}, 3, 1, -1};
    struct worker device1 = {NULL, {&mul_node, &mul_node}, 2, -1, 1};
    churn_pairs = argc > 1 ? atol(argv[1]) : 0;
    EXPECT(sem_init(&named, 0, 0), 0);
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    forward();
    run(thread_main, &device0, NULL);
    run(thread_main, &device1, "pt_autograd_1");
    run(loader, NULL, NULL);
    evaluate_function(&mul_node);
    if (argc > 2 && strcmp(argv[2], "die") == 0)
        kill(getpid(), SIGKILL);
    puts("backward done");
    return 0;
}
