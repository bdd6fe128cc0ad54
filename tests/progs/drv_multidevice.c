/*
 * drv_multidevice.c - two devices (run with SIMCUDA_DEVICES=2), and a
 * stream-ordered allocation on a stream of device 1 made while device 0's
 * context is current: it belongs to device 1.
 *
 *   device 0: 3 MiB + 1 MiB (cuMemAlloc), the 1 MiB freed
 *   device 1: 8 MiB (cuMemAlloc, from a thread with device 1 current), and
 *             2 MiB (cuMemAllocAsync on device 1's stream, from device 0's
 *             context), both kept
 * Per device: 0 peaks at 4 MiB and ends with 3 MiB; 1 peaks at 10 MiB and
 * ends with 10 MiB. The process peaks at 14 MiB.
 */
#include <pthread.h>

#include "progs.h"

static gs_custream stream1;

NOINLINE static void *on_device1(void *arg)
{
    (void)arg;
    use_device(1);
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 8 * MiB), GS_CUDA_SUCCESS);
    EXPECT(cuStreamCreate(&stream1, 0), GS_CUDA_SUCCESS);
    return NULL;
}

NOINLINE static void async_on_stream1(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAllocAsync(&p, 2 * MiB, stream1), GS_CUDA_SUCCESS);
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    gs_cudeviceptr a, b;
    EXPECT(cuMemAlloc_v2(&a, 3 * MiB), GS_CUDA_SUCCESS);
    EXPECT(cuMemAlloc_v2(&b, 1 * MiB), GS_CUDA_SUCCESS);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, on_device1, NULL), 0);
    pthread_join(t, NULL);
    async_on_stream1();
    EXPECT(cuMemFree_v2(b), GS_CUDA_SUCCESS);
    puts("two devices done");
    return 0;
}
