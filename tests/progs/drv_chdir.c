/*
 * drv_chdir.c - a program that changes directory after its first
 * allocation (the trace's name was relative), then allocates and frees N
 * times (churn) there and leaks 1 MiB (after_chdir). The trace, its ring
 * and any bounded trace's next file must stay in the first directory, and
 * nothing in the second may be touched.
 *
 * Each churn allocation is 4 KiB plus 0 to 255 times 64 bytes, the multiple
 * drawn from a fixed sequence: those 8 bits an allocation that zlib cannot
 * squeeze make the churn's share of the trace a matter of N, not of how
 * many events a microsecond held on the machine that ran it (with one size,
 * 10 M steps took 2.5 to 3.5 MB, astride the point where a 4 MiB bounded
 * trace rotates).
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
    uint64_t x = 88172645463325252ull;
    for (long i = 0; i < n; i++) {
        x ^= x << 13; /* xorshift64 */
        x ^= x >> 7;
        x ^= x << 17;
        gs_cudeviceptr p;
        EXPECT(cuMemAlloc_v2(&p, 4 * KiB + 64 * (x >> 56)), GS_CUDA_SUCCESS);
        EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
    }
    after_chdir();
    return 0;
}
