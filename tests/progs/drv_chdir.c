/*
 * drv_chdir.c - a program that changes directory after its first
 * allocation (the trace's name was relative), then allocates and frees N
 * times (churn) there and leaks 1 MiB (after_chdir). The trace, its ring
 * and any bounded trace's next file must stay in the first directory, and
 * nothing in the second may be touched.
 * The churn's sizes are progs.h's churn_size(), so that a 4 MiB bounded
 * trace rotates within it on any machine.
 *
 * usage: drv_chdir DIR N
 */
#include <unistd.h>

#include "progs.h"

NOINLINE static void before_chdir(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 2 * MiB), GS_CUDA_SUCCESS);
}

NOINLINE static void after_chdir(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, MiB), GS_CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long n = atol(argv[2]);
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    before_chdir();
    EXPECT(chdir(argv[1]), 0);
    unsigned long long sizes = CHURN_SEED;
    for (long i = 0; i < n; i++) {
        gs_cudeviceptr p;
        EXPECT(cuMemAlloc_v2(&p, churn_size(&sizes)), GS_CUDA_SUCCESS);
        EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
    }
    after_chdir();
    return 0;
}
