/*
 * drv_diskfull.c - the disk fills up in the middle of a run: after its first
 * allocation (which makes the trace and its ring) the program lowers
 * RLIMIT_FSIZE to 0 with SIGXFSZ ignored, so every later write that would
 * grow a file fails with EFBIG, as on a full disk. Then it allocates N
 * times (each 4 KiB, from fill_after) and frees every second one, and
 * says "done" - it must never notice.
 *
 * usage: drv_diskfull N
 */
#include <signal.h>
#include <sys/resource.h>

#include "progs.h"

NOINLINE static void first_alloc(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, MiB), GS_CUDA_SUCCESS);
}

NOINLINE static gs_cudeviceptr fill_after(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 4 * KiB), GS_CUDA_SUCCESS);
    return p;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100;
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    first_alloc();
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {0, 0};
    EXPECT(setrlimit(RLIMIT_FSIZE, &lim), 0);
    for (long i = 0; i < n; i++) {
        gs_cudeviceptr p = fill_after();
        if (i % 2)
            EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
    }
    puts("done");
    return 0;
}
