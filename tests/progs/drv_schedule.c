/*
 * drv_schedule.c - a known schedule through the driver, linked with -lcuda.
 *
 * weights: 4 x 1 MiB, kept to the end
 * 3 steps: two 2 MiB activations, one 256 KiB entry in a cache that is
 *          never emptied (the leak), then the activations are freed
 * then:    a free of an address never allocated (the driver refuses it)
 *
 * Peak: 4 MiB + 3 x 256 KiB + 4 MiB = 8.75 MiB, during step 3.
 * Unfreed at the end: weights 4 MiB (4), cache 768 KiB (3).
 * tests/integration/run_tests.py checks these numbers exactly.
 */
#include "progs.h"

static gs_cudeviceptr weights[4], cache[3];

NOINLINE static void load_weights(void)
{
    for (int i = 0; i < 4; i++)
        EXPECT(cuMemAlloc_v2(&weights[i], 1 * MiB), GS_CUDA_SUCCESS);
}

NOINLINE static gs_cudeviceptr make_activation(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 2 * MiB), GS_CUDA_SUCCESS);
    return p;
}

NOINLINE static void remember_in_cache(int step)
{
    EXPECT(cuMemAlloc_v2(&cache[step], 256 * KiB), GS_CUDA_SUCCESS);
}

NOINLINE static void train_step(int step)
{
    gs_cudeviceptr a = make_activation(), b = make_activation();
    remember_in_cache(step);
    EXPECT(cuMemFree_v2(a), GS_CUDA_SUCCESS);
    EXPECT(cuMemFree_v2(b), GS_CUDA_SUCCESS);
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    load_weights();
    for (int step = 0; step < 3; step++)
        train_step(step);
    EXPECT(cuMemFree_v2(0x1000), GS_CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemFree_v2(0), GS_CUDA_SUCCESS);
    puts("schedule done");
    return 0;
}
