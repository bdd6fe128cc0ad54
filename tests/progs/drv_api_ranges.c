/*
 * drv_api_ranges.c - ranges through the public API (include/gpushim.h:
 * gpushim_range_push/_pop), linked with -lcuda, never with the shim: it
 * runs the same with and without it (the depths it checks are -1 without).
 *
 *   range "step" (the thread's first: also a mark)
 *     range "forward": 2 MiB kept                          depth 1
 *   pop, pop; one pop more: nothing open, -1
 *   another thread: range "loader": 1 MiB, freed           its own top
 *
 *   step     peak 2 MiB, made 2, kept 2
 *   forward  peak 2 MiB, made 2, kept 2
 *   loader   peak 3 MiB, made 1, kept 0
 */
#include <pthread.h>

#include "gpushim.h"
#include "progs.h"

static int on;

static void *loader(void *arg)
{
    (void)arg;
    use_device(0);
    EXPECT(gpushim_range_push("loader"), on ? 0 : -1);
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 1 * MiB), GS_CUDA_SUCCESS);
    EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
    EXPECT(gpushim_range_pop(), on ? 0 : -1);
    return NULL;
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    on = gpushim_loaded();
    EXPECT(gpushim_range_push("step"), on ? 0 : -1);
    EXPECT(gpushim_range_push("forward"), on ? 1 : -1);
    gs_cudeviceptr kept;
    EXPECT(cuMemAlloc_v2(&kept, 2 * MiB), GS_CUDA_SUCCESS);
    EXPECT(gpushim_range_pop(), on ? 1 : -1);
    EXPECT(gpushim_range_pop(), on ? 0 : -1);
    EXPECT(gpushim_range_pop(), -1); /* nothing open */
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, loader, NULL), 0);
    EXPECT(pthread_join(t, NULL), 0);
    puts("ranges done");
    return 0;
}
