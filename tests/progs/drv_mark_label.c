/*
 * drv_mark_label.c - marks with the label its first argument gives (any
 * bytes: reports must show it as text, the HTML export escaped), around
 * one allocation, linked with -lcuda.
 *
 *   mark LABEL                  device 0 MiB
 *   hold: 1 MiB (cuMemAlloc), never freed
 *   mark LABEL                  device 1 MiB
 *   gpushim_flush()
 *
 * One step of LABEL: 0 -> 1 MiB, peak 1 MiB, allocated 1, freed 0, growth
 * +1 MiB. Peak 1 MiB; unfreed at the end: 1 MiB (1), from hold.
 */
#include "gpushim.h"
#include "progs.h"

NOINLINE static void hold(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 1 * MiB), GS_CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    const char *label = argc > 1 ? argv[1] : "step";
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    gpushim_mark(label);
    hold();
    gpushim_mark(label);
    gpushim_flush();
    puts("marked");
    return 0;
}
