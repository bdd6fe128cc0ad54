/*
 * drv_api_blocks.c - a caching allocator of its own, as PyTorch's or XLA's:
 * it takes segments from cuMemAlloc and carves blocks from them, and tells
 * gpushim about each block (include/gpushim.h). Linked with -lcuda; runs
 * the same with and without the shim. Run with SIMCUDA_MEMORY=13M.
 *
 * Offsets in MiB inside each segment:
 *
 *   S1 = 8 MiB segment; carve b1 [0,2), b2 [2,3), b3 [4,6)
 *   S2 = 4 MiB segment: the device peak, 12 MiB. Then S1 holds 5 MiB of
 *        blocks in 8: 3 MiB free, gaps [3,4) and [6,8), the largest 2 MiB:
 *        fragmentation 1 - 2/3. S2 holds no block yet and does not count.
 *   carve b4 [1,2) of S2                      blocks 6 MiB: the block peak
 *   b2 back                                   S1 gaps [2,4) and [6,8)
 *   b5: 64 KiB of host memory (staging), a block in no segment
 *   a block taken back that was never given (counted, nothing else)
 *   three segment requests fail (1 MiB of the 13 is left on the device):
 *     3 MiB: free inside segments 8+4 - (4+1) = 7 MiB, the largest gap
 *            2 MiB: it would fit in the free space, in no one gap
 *     2 MiB: it would fit in a gap
 *     8 MiB: it would not fit even in all the free space
 *   b1, b3 back; S2 freed with b4 still in it (b4 then lies in no segment)
 *
 * Blocks: 5 given, 3 taken back, 1 unknown taken back; peak 6 MiB in 4
 * blocks from carve; never taken back: b4 (carve, 1 MiB) and b5
 * (host_staging, 64 KiB). Device: 2 allocations, 1 free, 3 failed; peak
 * 12 MiB; S1 (8 MiB, from grow) unfreed.
 */
#include "gpushim.h"
#include "progs.h"

static unsigned char staging[64 * KiB];

NOINLINE static gs_cudeviceptr grow(size_t size)
{
    gs_cudeviceptr seg;
    EXPECT(cuMemAlloc_v2(&seg, size), GS_CUDA_SUCCESS);
    return seg;
}

NOINLINE static void grow_fails(size_t size)
{
    gs_cudeviceptr seg;
    EXPECT(cuMemAlloc_v2(&seg, size), GS_CUDA_ERROR_OUT_OF_MEMORY);
}

NOINLINE static gs_cudeviceptr carve(gs_cudeviceptr seg, size_t offset, size_t size)
{
    gs_cudeviceptr p = seg + offset;
    gpushim_block_alloc((const void *)(uintptr_t)p, size);
    return p;
}

NOINLINE static void give_back(gs_cudeviceptr p) { gpushim_block_free((const void *)(uintptr_t)p); }

NOINLINE static void host_staging(void) { gpushim_block_alloc(staging, sizeof staging); }

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    gs_cudeviceptr s1 = grow(8 * MiB);
    gs_cudeviceptr b1 = carve(s1, 0, 2 * MiB);
    gs_cudeviceptr b2 = carve(s1, 2 * MiB, 1 * MiB);
    gs_cudeviceptr b3 = carve(s1, 4 * MiB, 2 * MiB);
    gs_cudeviceptr s2 = grow(4 * MiB);
    carve(s2, 1 * MiB, 1 * MiB);
    give_back(b2);
    host_staging();
    give_back(s1 + 7 * MiB); /* never given */
    grow_fails(3 * MiB);
    grow_fails(2 * MiB);
    grow_fails(8 * MiB);
    give_back(b1);
    give_back(b3);
    EXPECT(cuMemFree_v2(s2), GS_CUDA_SUCCESS);
    puts("allocator done");
    return 0;
}
