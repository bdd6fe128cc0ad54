/*
 * drv_longrun.c - a job still running: allocates 1 MiB (early_alloc), says
 * "allocated", then waits for a signal. On SIGTERM its handler calls exit(),
 * as many jobs' handlers do, and the trace is finished.
 */
#include <signal.h>
#include <unistd.h>

#include "progs.h"

static void on_term(int sig)
{
    (void)sig;
    exit(0);
}

NOINLINE static void early_alloc(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, MiB), GS_CUDA_SUCCESS);
}

int main(void)
{
    signal(SIGTERM, on_term);
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    early_alloc();
    puts("allocated");
    fflush(stdout);
    for (;;)
        pause();
}
