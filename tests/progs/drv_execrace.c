/*
 * drv_execrace.c - exec attempts that fail while other threads allocate, as
 * os.execvp makes them (one execve per PATH entry): 4 threads allocate and
 * free 4 KiB (churn) while the main thread calls execl on a missing program
 * 200 times, letting the threads make at least 50 allocations between two
 * attempts. Each failed exec finishes the trace and takes it up again; the
 * threads must never notice. Then the threads stop and the program exits.
 * Prints the allocations made (threads x rounds).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "progs.h"

#define THREADS 4

static atomic_int stop;
static atomic_long made;

NOINLINE static void *churn(void *arg)
{
    (void)arg;
    use_device(0);
    while (!atomic_load(&stop)) {
        gs_cudeviceptr p;
        EXPECT(cuMemAlloc_v2(&p, 4 * KiB), GS_CUDA_SUCCESS);
        EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
        atomic_fetch_add(&made, 1);
    }
    return NULL;
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, churn, NULL), 0);
    for (int i = 0; i < 200; i++) {
        long before = atomic_load(&made);
        EXPECT(execl("/nonexistent/program", "x", (char *)NULL), -1);
        EXPECT(errno, ENOENT);
        while (atomic_load(&made) < before + 50) /* the threads run between attempts */
            sched_yield();
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        EXPECT(pthread_join(t[i], NULL), 0);
    printf("%ld\n", atomic_load(&made));
    return 0;
}
