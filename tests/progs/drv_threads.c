/*
 * drv_threads.c - four threads allocate and free at once.
 *
 * Each thread: 1000 x (alloc 4 KiB, free it), then keeps (index + 1)
 * blocks of 8 KiB. Totals: 4010 allocations, 4000 frees, 10 blocks
 * (80 KiB) unfreed, all from keep_some().
 */
#include <pthread.h>

#include "progs.h"

NOINLINE static void churn(void)
{
    for (int i = 0; i < 1000; i++) {
        gs_cudeviceptr p;
        EXPECT(cuMemAlloc_v2(&p, 4 * KiB), GS_CUDA_SUCCESS);
        EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
    }
}

NOINLINE static void keep_some(long n)
{
    for (long i = 0; i < n; i++) {
        gs_cudeviceptr p;
        EXPECT(cuMemAlloc_v2(&p, 8 * KiB), GS_CUDA_SUCCESS);
    }
}

static void *worker(void *arg)
{
    use_device(0);
    churn();
    keep_some((long)arg + 1);
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    for (long i = 0; i < 4; i++)
        EXPECT(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    puts("threads done");
    return 0;
}
