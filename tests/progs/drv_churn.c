/*
 * drv_churn.c - the shim under stress: threads that start and stop in
 * waves, allocate, mark, give blocks and fork, all at once.
 *
 * main: main_alloc keeps 1 MiB; then 8 waves, wave w (0..7) starting w + 1
 * threads and joining them all before the next; main marks "wave" before
 * each. Thread i of wave w (36 threads in all), each:
 *   marks "thread";
 *   churn(): 100 x (cuMemAlloc_v2 of 4 KiB x (i + 1), cuMemFree_v2 of it);
 *   keep_one(): one allocation of 8 KiB, kept;
 *   give_blocks(): two blocks of 1 KiB carved from it (gpushim_block_alloc),
 *   the first taken back (gpushim_block_free).
 * Thread 0 of waves 3 and 6 (while 3 and 6 other threads run) forks after 50
 * of its churn pairs and waits for the child. The child (one thread) makes
 * one more churn allocation, from the very call site its parent's thread
 * used 50 times (churn_pair: a stack the shim knew in the parent, which the
 * child's trace must define again), and keeps it; then child_alloc(): 3 x 16 KiB,
 * the first freed; then ends with exit(0) (wave 3) or _exit(0) (wave 6).
 *
 * The parent's trace: 3637 allocations (1 + 3600 + 36), 3600 frees, none
 * failed; unfreed 1 MiB + 288 KiB in 37: main_alloc 1 MiB, keep_one 36 x
 * 8 KiB. Marks: 8 "wave" and 36 "thread". Blocks: 72 given, 36 taken
 * back, 36 x 1 KiB never taken back, all from give_blocks.
 * Each child's trace: 4 allocations, 1 free, unfreed 32 KiB in 2 from
 * child_alloc and 4 KiB in 1 from churn_pair; no marks, no blocks.
 * Prints "waves 8 threads 36 children 2" (children that exited with 0).
 *
 * drv_churn PAIRS: PAIRS churn pairs per thread in place of 100 (the fork
 * after PAIRS / 2): the parent's allocations 1 + 36 x PAIRS + 36, frees
 * 36 x PAIRS; the rest the same. drv_churn PAIRS varied: the same, but the
 * size of each pair the parent makes and frees is 0 to 1023 x 64 bytes more,
 * from a hash of the thread and the pair (varied_size), so that its trace
 * does not compress to almost nothing however the threads interleave.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpushim.h"
#include "progs.h"

#define WAVES 8

static int pairs = 100, varied;
static atomic_int threads_run, children_ok;

struct job {
    int wave, index;
};

NOINLINE static void main_alloc(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, MiB), GS_CUDA_SUCCESS);
}

NOINLINE static void child_alloc(void)
{
    use_device(0);
    gs_cudeviceptr p[3];
    for (int i = 0; i < 3; i++)
        EXPECT(cuMemAlloc_v2(&p[i], 16 * KiB), GS_CUDA_SUCCESS);
    EXPECT(cuMemFree_v2(p[0]), GS_CUDA_SUCCESS);
}

/* Forks; the parent waits for the child and returns 0, the child returns 1. */
static int fork_child(void)
{
    pid_t pid = fork();
    EXPECT(pid >= 0, 1);
    if (pid == 0)
        return 1;
    int status;
    EXPECT(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        atomic_fetch_add(&children_ok, 1);
    return 0;
}

static void child_end(int wave)
{
    child_alloc();
    if (wave == 3)
        exit(0);
    _exit(0);
}

/* One allocation and its free; in a child (child_wave >= 0), the allocation
 * is kept and the child ends. One call site for both, which the compiler
 * cannot duplicate: its own function, called from one place. */
NOINLINE static void churn_pair(size_t size, int child_wave)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, size), GS_CUDA_SUCCESS);
    if (child_wave >= 0)
        child_end(child_wave); /* keeps p */
    EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
}

/* "varied": a pair's size, 4 KiB x (index + 1) and 0 to 1023 x 64 bytes
 * more, from a hash of the thread and the pair. */
static size_t varied_size(const struct job *j, int k)
{
    uint32_t h = (uint32_t)k * 2654435761u ^ (uint32_t)(j->wave * 8 + j->index) * 40503u;
    h ^= h >> 15;
    return 4 * KiB * (size_t)(j->index + 1) + 64 * (size_t)(h % 1024);
}

NOINLINE static void churn(const struct job *j)
{
    size_t size = 4 * KiB * (size_t)(j->index + 1);
    for (int k = 0; k < pairs; k++) {
        int child = 0;
        if (k == pairs / 2 && j->index == 0 && (j->wave == 3 || j->wave == 6))
            child = fork_child();
        churn_pair(varied && !child ? varied_size(j, k) : size, child ? j->wave : -1);
    }
}

NOINLINE static gs_cudeviceptr keep_one(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 8 * KiB), GS_CUDA_SUCCESS);
    return p;
}

NOINLINE static void give_blocks(gs_cudeviceptr seg)
{
    const char *base = (const char *)(uintptr_t)seg;
    gpushim_block_alloc(base, KiB);
    gpushim_block_alloc(base + KiB, KiB);
    gpushim_block_free(base);
}

static void *worker(void *arg)
{
    const struct job *j = arg;
    use_device(0);
    gpushim_mark("thread");
    churn(j);
    give_blocks(keep_one());
    atomic_fetch_add(&threads_run, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        pairs = atoi(argv[1]);
    varied = argc > 2 && strcmp(argv[2], "varied") == 0;
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    main_alloc();
    for (int w = 0; w < WAVES; w++) {
        gpushim_mark("wave");
        pthread_t t[WAVES];
        struct job jobs[WAVES];
        for (int i = 0; i <= w; i++) {
            jobs[i] = (struct job){.wave = w, .index = i};
            EXPECT(pthread_create(&t[i], NULL, worker, &jobs[i]), 0);
        }
        for (int i = 0; i <= w; i++)
            EXPECT(pthread_join(t[i], NULL), 0);
    }
    printf("waves %d threads %d children %d\n", WAVES, atomic_load(&threads_run),
           atomic_load(&children_ok));
    return 0;
}
