/*
 * rt_whatif_loop.c - the schedule of pytorch/pytorch#123548 (PR #193400's
 * reproducer), one tensor per cudaMalloc as PyTorch makes them with
 * PYTORCH_NO_CUDA_MEMORY_CACHING=1, for gpushim whatif to replay through its
 * model of the caching allocator: 101 cycles, each a step
 * (gpushim_mark("step")) of A = 91 MiB, B = 45.5 MiB, a 2 MiB tensor kept,
 * then A and B freed. What the allocator makes of it under each setting is
 * worked out in tests/integration/test_whatif.py.
 *
 * With argv[1] "fail", a last request of argv[2] MiB (default 900) follows,
 * which a small simulated device refuses: the run's failure, whose free
 * memory tells the replay the run's card.
 */
#include <stdlib.h>
#include <string.h>

#include "gpushim.h"
#include "progs.h"

gs_cudaerror cudaMalloc(void **p, size_t size);
gs_cudaerror cudaFree(void *p);

#define CYCLES 101

static void *kept[CYCLES];

__attribute__((noinline)) static void *tensor_a(void)
{
    void *p = NULL;
    EXPECT(cudaMalloc(&p, 91 * MiB), 0);
    return p;
}

__attribute__((noinline)) static void *tensor_b(void)
{
    void *p = NULL;
    EXPECT(cudaMalloc(&p, 45 * MiB + 512 * KiB), 0);
    return p;
}

__attribute__((noinline)) static void keep(int cycle)
{
    EXPECT(cudaMalloc(&kept[cycle], 2 * MiB), 0);
}

__attribute__((noinline)) static int last_request(size_t mib)
{
    void *p = NULL;
    return cudaMalloc(&p, mib * MiB) == 0;
}

int main(int argc, char **argv)
{
    for (int cycle = 0; cycle < CYCLES; cycle++) {
        gpushim_mark("step");
        void *a = tensor_a(), *b = tensor_b();
        keep(cycle);
        EXPECT(cudaFree(a), 0);
        EXPECT(cudaFree(b), 0);
    }
    if (argc > 1 && !strcmp(argv[1], "fail")) {
        size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 900;
        if (last_request(mib)) {
            fprintf(stderr, "the last request of %zu MiB did not fail\n", mib);
            return 99;
        }
        printf("out of memory for the last request\n");
        return 1;
    }
    for (int cycle = 0; cycle < CYCLES; cycle++)
        EXPECT(cudaFree(kept[cycle]), 0);
    return 0;
}
