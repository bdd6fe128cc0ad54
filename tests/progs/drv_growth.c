/*
 * drv_growth.c - a training loop with one leak among things that grow and
 * then stop, and a last allocation that fails for a reason chosen on the
 * command line: drv_growth MODE CAUSE.
 *
 *   load_weights: 8 MiB, kept
 *   12 steps, each:
 *     mark "step" (MODE "marks"; and "eval" before steps 4, 8 and 12)
 *     step 1: init_optimizer: 4 MiB, kept
 *     steps 1 to 3: fill_cache: 1 MiB each, kept (the cache is then full)
 *     forward: a 6 MiB activation
 *     log_loss: 512 KiB, kept: the leak (not with CAUSE "large", "other", "frag")
 *     the activation freed; MODE "time": then 3 ms asleep
 *   mark "step" (MODE "marks")
 *   live now: 15 MiB, and the leak's 6 MiB in 12 allocations
 *
 * With marks the leak holds 0 at the first mark and 512 KiB more at each
 * next one: growth 6 MiB, 512 KiB a step, since the first mark. The cache
 * is flat from the fourth mark on, the rest flat or back at 0 at marks.
 *
 * The most live during a step is 21 MiB, and 27 MiB with the leak (step 12).
 *
 * Then last_request, by CAUSE (run with the SIMCUDA_MEMORY and
 * SIMCUDA_OTHER given):
 *   leak    SIMCUDA_MEMORY=28M: 8 MiB asked, 7 MiB free: 1 MiB short, and
 *           the leak grew 6 MiB
 *   large   SIMCUDA_MEMORY=24M: 16 MiB asked, 9 MiB free: 7 MiB short
 *   other   SIMCUDA_MEMORY=36M SIMCUDA_OTHER=12M: 16 MiB asked, 9 MiB free:
 *           7 MiB short, 12 MiB held by others
 *   frag    SIMCUDA_MEMORY=32M: make_arena takes a 17 MiB segment (1 MiB
 *           past a 2 MiB page: 1 MiB of rounding) and gives four 4 MiB
 *           blocks of it (gpushim_block_alloc), takes back the second and
 *           the fourth: 9 MiB free in it, at most 5 MiB in one piece (the
 *           fourth block's and the tail); mark "step" (MODE "marks"); then
 *           6 MiB asked, 0 free
 *   none    nothing more
 * The failure is CUDA_ERROR_OUT_OF_MEMORY; everything is then freed.
 */
#include <string.h>
#include <unistd.h>

#include "gpushim.h"
#include "progs.h"

static gs_cudeviceptr weights, optimizer, cache[3], leak[12], arena, extra;
static int marks, leaking;

NOINLINE static void load_weights(void) { EXPECT(cuMemAlloc_v2(&weights, 8 * MiB), 0); }
NOINLINE static void init_optimizer(void) { EXPECT(cuMemAlloc_v2(&optimizer, 4 * MiB), 0); }
NOINLINE static void fill_cache(int i) { EXPECT(cuMemAlloc_v2(&cache[i], 1 * MiB), 0); }
NOINLINE static void log_loss(int i) { EXPECT(cuMemAlloc_v2(&leak[i], 512 * KiB), 0); }

NOINLINE static gs_cudeviceptr forward(void)
{
    gs_cudeviceptr act;
    EXPECT(cuMemAlloc_v2(&act, 6 * MiB), 0);
    return act;
}

NOINLINE static void train_step(int step)
{
    if (marks) {
        if (step % 4 == 3)
            gpushim_mark("eval");
        gpushim_mark("step");
    }
    if (step == 0)
        init_optimizer();
    if (step < 3)
        fill_cache(step);
    gs_cudeviceptr act = forward();
    if (leaking)
        log_loss(step);
    EXPECT(cuMemFree_v2(act), 0);
    if (!marks)
        usleep(3000);
}

NOINLINE static void make_arena(void)
{
    EXPECT(cuMemAlloc_v2(&arena, 17 * MiB), 0);
    for (int i = 0; i < 4; i++)
        gpushim_block_alloc((void *)(arena + (gs_cudeviceptr)i * 4 * MiB), 4 * MiB);
    gpushim_block_free((void *)(arena + 4 * MiB));
    gpushim_block_free((void *)(arena + 12 * MiB));
}

NOINLINE static void last_request(size_t size)
{
    EXPECT(cuMemAlloc_v2(&extra, size), GS_CUDA_ERROR_OUT_OF_MEMORY);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: drv_growth marks|time leak|large|other|frag|none\n");
        return 2;
    }
    const char *cause = argv[2];
    marks = strcmp(argv[1], "marks") == 0;
    leaking = strcmp(cause, "leak") == 0 || strcmp(cause, "none") == 0;
    EXPECT(cuInit(0), 0);
    use_device(0);
    load_weights();
    for (int step = 0; step < 12; step++)
        train_step(step);
    if (marks)
        gpushim_mark("step");
    if (!strcmp(cause, "leak"))
        last_request(8 * MiB);
    else if (!strcmp(cause, "large") || !strcmp(cause, "other"))
        last_request(16 * MiB);
    else if (!strcmp(cause, "frag")) {
        make_arena();
        if (marks)
            gpushim_mark("step");
        last_request(6 * MiB);
    }
    if (arena) {
        gpushim_block_free((void *)arena);
        gpushim_block_free((void *)(arena + 8 * MiB));
        EXPECT(cuMemFree_v2(arena), 0);
    }
    EXPECT(cuMemFree_v2(weights), 0);
    EXPECT(cuMemFree_v2(optimizer), 0);
    for (int i = 0; i < 3; i++)
        EXPECT(cuMemFree_v2(cache[i]), 0);
    for (int i = 0; i < 12 && leaking; i++)
        EXPECT(cuMemFree_v2(leak[i]), 0);
    return 0;
}
