/*
 * drv_api_longrun.c - a long training loop that marks its steps and carves
 * its blocks from one segment (include/gpushim.h), for traces bounded by
 * GPUSHIM_MAX_BYTES: the marks, steps, blocks and fragmentation must come
 * out of a rotated trace as out of a whole one. Linked with -lcuda.
 * Argument: the steps N, a multiple of 1000.
 *
 *   S: a 64 MiB segment (pool), then mark "run"
 *   each step: mark "step"; blocks a [0, 1 MiB) and b [2 MiB, 2.5 MiB) of S;
 *              a 1 MiB scratch allocation, freed; every 1000th step (the
 *              last of each thousand) a 4 KiB block at 8 MiB + 4 KiB x k,
 *              kept (k = 0, 1, ...); a and b taken back
 *   then a step end of "step" and of "run", and a 1 TiB allocation that
 *   fails (after the ends: in no step)
 *
 * Device peak 65 MiB, at the first step's scratch allocation, when S held
 * a and b: 2.5 MiB... of which 1.5 MiB in blocks, gaps [1, 2) and
 * [2.5, 64) MiB: the largest 61.5 MiB. Each step: peak 65 MiB, 1 MiB
 * allocated and freed, no growth. Blocks: 2N + N/1000 given, 2N taken back,
 * peak 1.5 MiB + N/1000 x 4 KiB; at the failure S holds only the kept
 * blocks [8 MiB, 8 MiB + N/1000 x 4 KiB).
 */
#include <stdlib.h>

#include "gpushim.h"
#include "progs.h"

NOINLINE static gs_cudeviceptr pool(void)
{
    gs_cudeviceptr s;
    EXPECT(cuMemAlloc_v2(&s, 64 * MiB), GS_CUDA_SUCCESS);
    return s;
}

NOINLINE static void carve(gs_cudeviceptr p, size_t size)
{
    gpushim_block_alloc((const void *)(uintptr_t)p, size);
}

NOINLINE static void scratch(void)
{
    gs_cudeviceptr t;
    EXPECT(cuMemAlloc_v2(&t, 1 * MiB), GS_CUDA_SUCCESS);
    EXPECT(cuMemFree_v2(t), GS_CUDA_SUCCESS);
}

NOINLINE static void too_much(void)
{
    gs_cudeviceptr t;
    EXPECT(cuMemAlloc_v2(&t, (size_t)1 << 40), GS_CUDA_ERROR_OUT_OF_MEMORY);
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 1000;
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    gs_cudeviceptr s = pool();
    gpushim_mark("run");
    for (long step = 0; step < steps; step++) {
        gpushim_mark("step");
        carve(s, 1 * MiB);
        carve(s + 2 * MiB, 512 * KiB);
        scratch();
        if (step % 1000 == 999)
            carve(s + 8 * MiB + (uint64_t)(step / 1000) * 4 * KiB, 4 * KiB);
        gpushim_block_free((const void *)(uintptr_t)s);
        gpushim_block_free((const void *)(uintptr_t)(s + 2 * MiB));
    }
    gpushim_step_end("step");
    gpushim_step_end("run");
    too_much();
    puts("done");
    return 0;
}
