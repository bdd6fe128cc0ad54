/*
 * drv_fork.c - fork, as data loaders and launchers do.
 *
 * The parent allocates 1 MiB (parent_alloc) and keeps it. While a second
 * thread of the parent allocates and frees in a loop (so a shim lock is
 * often held at the moment of a fork), the parent forks 20 children:
 * odd ones allocate 64 KiB each in child_alloc and exit(); even ones never
 * touch CUDA (a data-loader worker) and _exit(). Each child's trace holds its
 * own one allocation only; even children leave no file; the parent's trace
 * is not damaged. The parent prints how many children it reaped.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

static atomic_int stop;
static long churned;

static void *churn(void *arg)
{
    (void)arg;
    use_device(0);
    while (!atomic_load(&stop)) {
        gs_cudeviceptr p;
        EXPECT(cuMemAlloc_v2(&p, 4096), GS_CUDA_SUCCESS);
        EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
        churned++;
    }
    return NULL;
}

NOINLINE static void parent_alloc(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, MiB), GS_CUDA_SUCCESS);
}

NOINLINE static void child_alloc(void)
{
    use_device(0);
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 64 * KiB), GS_CUDA_SUCCESS);
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    parent_alloc();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, churn, NULL), 0);
    int reaped = 0;
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            if (i % 2) {
                child_alloc();
                exit(0);
            }
            _exit(0);
        }
        int status;
        EXPECT(waitpid(pid, &status, 0), pid);
        reaped += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("reaped %d children\n", reaped);
    return 0;
}
