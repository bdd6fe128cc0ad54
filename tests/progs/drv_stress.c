/*
 * drv_stress.c - 16 threads x 100 000 events: each thread allocates and
 * frees 50 000 times (sizes 1..64 KiB), so 800 000 allocations and 800 000
 * frees in all, and none may be lost or counted twice. Threads start and
 * end while others run (two waves of 8).
 */
#include <pthread.h>

#include "progs.h"

#define THREADS 16
#define ROUNDS 50000

static void *worker(void *arg)
{
    long id = (long)arg;
    use_device(0);
    for (int i = 0; i < ROUNDS; i++) {
        gs_cudeviceptr p;
        EXPECT(cuMemAlloc_v2(&p, (size_t)((i + id) % 64 + 1) * KiB), GS_CUDA_SUCCESS);
        EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    for (long wave = 0; wave < 2; wave++) {
        for (long i = 0; i < THREADS / 2; i++)
            EXPECT(pthread_create(&t[wave * 8 + i], NULL, worker, (void *)(wave * 8 + i)), 0);
        for (long i = 0; i < THREADS / 2; i++)
            pthread_join(t[wave * 8 + i], NULL);
    }
    puts("stress done");
    return 0;
}
