/*
 * bench_workload.c - the workload `make bench` records (tests/bench/bench.py).
 *
 * Usage: bench_workload [N [FRAMES]]   (N events, default 1000000; FRAMES
 *        deep, 4 to 1000, default 20)
 *
 * Makes about N/2 cuMemAlloc_v2 and N/2 cuMemFree_v2 calls, N in all,
 * through the driver it is linked with (the simulated one in tests), from 16
 * call sites FRAMES frames deep: main, a recursive chain of FRAMES - 3
 * frames, one of 16 site functions, then step(), which calls the driver
 * (20 frames: the bench's first rows; 100: a training job's depth, PyTorch's
 * dispatch under the interpreter).
 * The live set stays small: each allocation goes into a random one of SLOTS
 * slots and the block it replaces is freed, so blocks live a few dozen
 * steps. Sizes vary with the site and the step. LEAKS blocks, spread over
 * the run, are never freed (so there are allocations n/2 + LEAKS/2, frees
 * n/2 - LEAKS/2).
 *
 * Everything is deterministic (a fixed-seed xorshift), and the only output
 * is the final "bench_workload: N events" line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpushim_cuda.h"

#define NOINLINE __attribute__((noinline))
/* After a call, keeps it from being a tail call (a jump, with no frame of
 * its own) and a self-recursion from becoming a loop. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

#define SITES 16
#define FRAMES 20 /* by default: main + 17 recursive + site + step */
#define SLOTS 64 /* live allocations at a time */
#define LEAKS 64 /* allocations never freed */

gs_curesult cuInit(unsigned int flags);
gs_curesult cuDevicePrimaryCtxRetain(gs_cucontext *ctx, gs_cudevice dev);
gs_curesult cuCtxSetCurrent(gs_cucontext ctx);
gs_curesult cuMemAlloc_v2(gs_cudeviceptr *dptr, size_t bytesize);
gs_curesult cuMemFree_v2(gs_cudeviceptr dptr);

static gs_cudeviceptr slots[SLOTS];
static unsigned long allocs, frees;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void check(gs_curesult r, const char *what)
{
    if (r != GS_CUDA_SUCCESS) {
        fprintf(stderr, "bench_workload: %s failed (%d)\n", what, r);
        exit(1);
    }
}

/* Frees (or, when leak is set, drops) what the slot holds, then allocates
 * size bytes into it. */
static NOINLINE void step(unsigned slot, size_t size, int leak)
{
    if (slots[slot] && !leak) {
        check(cuMemFree_v2(slots[slot]), "cuMemFree_v2");
        frees++;
    }
    slots[slot] = 0;
    check(cuMemAlloc_v2(&slots[slot], size), "cuMemAlloc_v2");
    allocs++;
}

/* The 16 call sites: one function each, so each has its own frames, and
 * its own size range (4 KiB * (i + 1) plus up to 1 MiB). */
#define SITE(i)                                                                    \
    static NOINLINE void site_##i(unsigned slot, uint64_t r, int leak)             \
    {                                                                              \
        step(slot, (size_t)((i) + 1) * 4096u + (size_t)(r % 65536u) * 16u, leak); \
        KEEP_FRAME();                                                              \
    }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
SITE(8) SITE(9) SITE(10) SITE(11) SITE(12) SITE(13) SITE(14) SITE(15)
#undef SITE

typedef void (*site_fn)(unsigned, uint64_t, int);
static site_fn const sites[SITES] = {
    site_0, site_1, site_2,  site_3,  site_4,  site_5,  site_6,  site_7,
    site_8, site_9, site_10, site_11, site_12, site_13, site_14, site_15,
};

/* depth + 1 frames of recursion above the site. */
static NOINLINE void descend(unsigned depth, unsigned site, unsigned slot, uint64_t r, int leak)
{
    if (depth == 0)
        sites[site](slot, r, leak);
    else
        descend(depth - 1, site, slot, r, leak);
    KEEP_FRAME();
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000ul;
    unsigned long frames = argc > 2 ? strtoul(argv[2], NULL, 10) : FRAMES;
    gs_cucontext ctx;
    if (frames < 4 || frames > 1000) {
        fprintf(stderr, "bench_workload: FRAMES is 4 to 1000, not %lu\n", frames);
        return 2;
    }
    unsigned depth = (unsigned)frames - 4; /* descend(depth) is depth + 1 frames */

    check(cuInit(0), "cuInit");
    check(cuDevicePrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

    /* n events = a allocations + (a - leaks) frees. */
    unsigned long leaks = LEAKS;
    if (leaks > n / 4)
        leaks = n / 4;
    if ((n + leaks) % 2)
        leaks++;
    unsigned long a = (n + leaks) / 2;
    unsigned long stride = a / (leaks + 1) + 1, leaked = 0;

    for (unsigned long i = 0; i < a; i++) {
        uint64_t r = next_random();
        /* Random slots: lifetimes vary, averaging SLOTS allocations. */
        unsigned slot = (unsigned)(r >> 48) % SLOTS;
        /* Skewed toward the low sites, as real hot spots are. */
        unsigned site = (unsigned)(((r >> 32) % SITES) * ((r >> 40) % SITES + 1) / SITES);
        int leak = slots[slot] && leaked < leaks && i % stride == stride - 1;
        leaked += (unsigned long)leak;
        descend(depth, site, slot, r, leak);
    }
    /* The live set ends freed, but for the leaks still owed. */
    for (unsigned s = 0; s < SLOTS; s++) {
        if (!slots[s])
            continue;
        if (leaked < leaks) {
            leaked++;
            continue;
        }
        check(cuMemFree_v2(slots[s]), "cuMemFree_v2");
        frees++;
    }
    printf("bench_workload: %lu events\n", allocs + frees);
    return allocs + frees == n ? 0 : 1;
}
