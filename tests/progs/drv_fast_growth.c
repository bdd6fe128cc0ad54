/*
 * drv_fast_growth.c - a short, fast loop with a leak and no marks, as a
 * Python training loop that leaks would make in a few milliseconds: growth
 * sampling must follow its events, not the clock alone.
 *
 *   20 steps, each, as fast as it can go:
 *     keep_grad: 1 MiB, kept (the leak)
 *     scratch:   a 4 MiB buffer, freed again at once
 *   live at the end: the leak's 20 MiB in 20 allocations (never freed)
 *
 * The leak holds 1 MiB at the first moment sampling can see (after its
 * first allocation) and 20 MiB at the end: it grew 19 MiB. scratch is back
 * at 0 after each step.
 */
#include "progs.h"

static gs_cudeviceptr kept[20];

NOINLINE static void keep_grad(int i) { EXPECT(cuMemAlloc_v2(&kept[i], 1 * MiB), 0); }

NOINLINE static void scratch(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 4 * MiB), 0);
    EXPECT(cuMemFree_v2(p), 0);
}

int main(void)
{
    EXPECT(cuInit(0), 0);
    use_device(0);
    for (int step = 0; step < 20; step++) {
        keep_grad(step);
        scratch();
    }
    return 0;
}
