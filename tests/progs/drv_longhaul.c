/*
 * drv_longhaul.c - a long training run in miniature, for GPUSHIM_MAX_BYTES:
 * STEPS steps of 8 activations (sizes 64 KiB x 1..8, from make_activation)
 * allocated then freed in reverse, 16 events a step. Before the first step
 * load_weights takes 100 MiB, never freed. Every 1000th step leak_per_step
 * keeps 4 KiB. At step STEPS/10 (early: in the history a bounded trace
 * summarizes) peak_burst takes 64 MiB while the step's activations are
 * live, and frees it after them: that is the run's peak.
 *
 * With STEPS = 6 250 000: 50 006 252 allocations and 50 000 001 frees.
 * Peak, at step 625 000: 100 MiB + 626 leaks of 4 KiB (steps 0, 1000, ...,
 * 625 000) + 36 x 64 KiB + 64 MiB. Unfreed at the end: 100 MiB + 6250 x 4 KiB.
 *
 * Last, out_of_memory asks for 64 GiB, which the simulated device (16 GiB)
 * refuses: the failure must be explained (what this process held, by site)
 * from a trace whose early history was summarized.
 *
 * usage: drv_longhaul STEPS
 */
#include "progs.h"

#define ACTS 8

NOINLINE static void load_weights(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 100 * MiB), GS_CUDA_SUCCESS);
}

NOINLINE static gs_cudeviceptr make_activation(int i)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, (size_t)(i + 1) * 64 * KiB), GS_CUDA_SUCCESS);
    return p;
}

NOINLINE static void leak_per_step(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 4 * KiB), GS_CUDA_SUCCESS);
}

NOINLINE static gs_cudeviceptr peak_burst(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 64 * MiB), GS_CUDA_SUCCESS);
    return p;
}

NOINLINE static void out_of_memory(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 64ull << 30), GS_CUDA_ERROR_OUT_OF_MEMORY);
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 1000;
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    load_weights();
    for (long s = 0; s < steps; s++) {
        if (s % 1000 == 0)
            leak_per_step();
        gs_cudeviceptr act[ACTS], burst = 0;
        for (int i = 0; i < ACTS; i++)
            act[i] = make_activation(i);
        if (s == steps / 10)
            burst = peak_burst();
        for (int i = ACTS - 1; i >= 0; i--)
            EXPECT(cuMemFree_v2(act[i]), GS_CUDA_SUCCESS);
        if (burst)
            EXPECT(cuMemFree_v2(burst), GS_CUDA_SUCCESS);
    }
    out_of_memory();
    puts("done");
    return 0;
}
