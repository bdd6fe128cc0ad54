/*
 * drv_oom.c - allocates 4 MiB blocks until the device is full.
 *
 * Run with SIMCUDA_MEMORY=16M: four succeed, the fifth fails with
 * CUDA_ERROR_OUT_OF_MEMORY while the device has 0 bytes free of 16 MiB.
 * Then everything is freed: no leaks.
 */
#include "progs.h"

static gs_cudeviceptr blocks[16];

NOINLINE static int grow_until_oom(void)
{
    int n = 0;
    while (n < 16) {
        gs_curesult r = cuMemAlloc_v2(&blocks[n], 4 * MiB);
        if (r == GS_CUDA_ERROR_OUT_OF_MEMORY)
            return n;
        EXPECT(r, GS_CUDA_SUCCESS);
        n++;
    }
    return n;
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    int n = grow_until_oom();
    size_t free_b = 1, total_b = 0;
    EXPECT(cuMemGetInfo_v2(&free_b, &total_b), GS_CUDA_SUCCESS);
    EXPECT(cuMemGetInfo_v2(NULL, NULL), GS_CUDA_SUCCESS);
    printf("%d blocks before out of memory; %zu of %zu free\n", n, free_b, total_b);
    for (int i = 0; i < n; i++)
        EXPECT(cuMemFree_v2(blocks[i]), GS_CUDA_SUCCESS);
    return 0;
}
