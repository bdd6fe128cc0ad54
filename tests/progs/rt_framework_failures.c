/*
 * rt_framework_failures.c - failed allocations as frameworks make them,
 * through the runtime (the simulated libcudart) as PyTorch calls it. Each
 * phase named on the command line follows one framework's code, read in
 * pytorch/pytorch (the functions and statements are quoted below, so that
 * they can be found again in any recent version); they share one process
 * only so that one report holds every outcome (docs/commands.md
 * "Failed allocations: what became of each"). A real process would use one
 * PyTorch allocator backend, not both.
 *
 *   retry   c10/cuda/CUDACachingAllocator.cpp, the native caching allocator
 *           near capacity. DeviceCachingAllocator::malloc: a request the
 *           cache cannot serve goes to
 *             alloc_block(params, false, context, lock)
 *             || (release_available_cached_blocks(params, context) &&
 *                 alloc_block(params, false, context, lock))
 *             || (C10_LIKELY(captures_underway.empty()) &&
 *                 release_cached_blocks(context, {0, 0}) &&
 *                 alloc_block(params, true, context, lock));
 *           release_available_cached_blocks returns false at once with the
 *           default max_split_size (SIZE_MAX); alloc_block calls
 *           cudaMallocMaybeCapturing (cudaMalloc outside capture) for
 *           get_allocation_size(size) (2 MiB multiples from kMinLargeAlloc,
 *           10 MiB) and, on cudaErrorMemoryAllocation, clears the error
 *           (cudaGetLastError) and returns false; release_cached_blocks
 *           calls synchronize_and_free_events, then release_blocks on the
 *           large and small pools, whose release_block does
 *           C10_CUDA_CHECK(cudaFree((void*)block->ptr)) for each segment
 *           that is not split. Here: weights (20 MiB) and two activations'
 *           segments (20 MiB each), freed to the cache; then a 24 MiB
 *           request fails with 3 MiB free, the two cached segments are
 *           freed, the device synchronised, and the retry succeeds. The
 *           step ends: its tensor goes back to the cache (no driver call).
 *   fabric  the same file, ExpandableSegment (expandable_segments:True, the
 *           small pool's 2 MiB pages): its constructor reserves
 *           segment_size_ * max_handles_, max_handles_ being enough pages
 *           for the device's memory and an eighth (cuMemAddressReserve_);
 *           map() with the handle type UNSPECIFIED sets FABRIC_HANDLE and
 *           calls map(range) again, whose cuMemCreate_ with
 *           CU_MEM_HANDLE_TYPE_FABRIC fails with a result other than
 *           CUDA_ERROR_OUT_OF_MEMORY, "so we should not return an error
 *           here" (return SegmentRange(nullptr, 0)); it sets POSIX_FD and
 *           calls map(range) once more: cuMemCreate_ with
 *           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, then mapAndSetAccess
 *           (cuMemMap_, cuMemSetAccess_). The driver functions come from
 *           cudaGetDriverEntryPointByVersion (c10/cuda/driver_api.cpp).
 *   probe   c10/cuda/CUDAMallocAsyncAllocator.cpp (backend:cudaMallocAsync),
 *           CudaMallocAsyncAllocator::cacheInfo, which cuDNN's
 *           getMaxWorkspaceSize calls (aten/src/ATen/native/cudnn/
 *           Conv_v7.cpp; Conv_v8.cpp's get_available_workspace likewise):
 *             C10_CUDA_CHECK(cudaMemGetInfo(&free_upper_bound, &device_total));
 *             guess = std::min(free_upper_bound, pytorch_memory_limits[device]
 *                              - pytorch_used_bytes[device]);
 *             while (true) { err = cudaMallocAsync(&dummy, guess, stream);
 *               if (err == cudaSuccess) { cudaFreeAsync(dummy, stream);
 *                 *maxWorkspaceGuess = guess; return; }
 *               else if (err == cudaErrorMemoryAllocation) {
 *                 (void)cudaGetLastError(); guess >>= 1; } ... }
 *           (no memory fraction set: the limit is UINT64_MAX). Then cuDNN
 *           allocates its workspace (8 MiB, within the guess) through
 *           mallocAsync, uses it for the benchmark and frees it
 *           (cudaFreeAsync), and the stream is synchronised. The pool's
 *           release threshold, which lazy_init_device sets to UINT64_MAX,
 *           is left at the simulated driver's 0.
 *   oom     the native allocator again: a 48 MiB request; alloc_block fails,
 *           release_cached_blocks frees the cached 24 MiB segment, the
 *           retry fails too, and malloc raises OutOfMemoryError
 *           (TORCH_CHECK_WITH after cudaMemGetInfo), which nobody catches:
 *           the process exits with status 1.
 *
 * Run with SIMCUDA_MEMORY=64M SIMCUDA_OTHER=1M (1 MiB held by another
 * process, as a CUDA context would be, so that cacheInfo's first guess is
 * not a whole number of the pool's 2 MiB chunks, as on a real GPU, where
 * all the free memory never fits). In order, the four phases make: a
 * recovered failure (24 MiB, 3 MiB free, after freeing 40 MiB in 2 frees),
 * a refused one (cuMemCreate of 2 MiB: CUDA_ERROR_NOT_SUPPORTED), a probe
 * (17 MiB asked, 8.5 MiB fit and freed at once) and two unrecovered ones
 * (48 MiB, with 17 then 41 MiB free). The device peak is 60 MiB, the
 * weights and both cached segments; the probe alone, "probe", peaks at the
 * 8 MiB workspace, not at the 31.5 MiB that fit.
 */
#include <stdint.h>
#include <string.h>

#include "progs.h"

gs_cudaerror cudaMalloc(void **p, size_t size);
gs_cudaerror cudaFree(void *p);
gs_cudaerror cudaMallocAsync(void **p, size_t size, gs_custream stream);
gs_cudaerror cudaFreeAsync(void *p, gs_custream stream);
gs_cudaerror cudaMemGetInfo(size_t *free_bytes, size_t *total);
gs_cudaerror cudaGetLastError(void);
gs_cudaerror cudaDeviceSynchronize(void);
gs_cudaerror cudaStreamSynchronize(gs_custream stream);
gs_cudaerror cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                              unsigned long long flags, int *status);

/* ---- the native caching allocator ---- */

#define CACHED 8
static void *cached[CACHED]; /* segments whose blocks are all free, kept for reuse */
static size_t ncached;

/* DeviceCachingAllocator::alloc_block: one cudaMalloc of the segment. */
NOINLINE static int alloc_block(void **ptr, size_t size)
{
    gs_cudaerror err = cudaMalloc(ptr, size);
    if (err == GS_cudaErrorMemoryAllocation) {
        cudaGetLastError(); /* forgiven: malloc retries, or raises */
        return 0;
    }
    EXPECT(err, GS_cudaSuccess);
    return 1;
}

/* release_cached_blocks: synchronize_and_free_events, then release_block
 * (cudaFree) of every segment not split. */
NOINLINE static void release_cached_blocks(void)
{
    EXPECT(cudaDeviceSynchronize(), GS_cudaSuccess);
    while (ncached)
        EXPECT(cudaFree(cached[--ncached]), GS_cudaSuccess);
}

/* DeviceCachingAllocator::malloc for a request no cached block serves. */
NOINLINE static void *caching_malloc(size_t size)
{
    void *p = NULL;
    int found = alloc_block(&p, size)
                /* release_available_cached_blocks: false with the default max_split_size */
                || (release_cached_blocks(), alloc_block(&p, size));
    if (!found) {
        size_t free_b = 0, total = 0;
        EXPECT(cudaMemGetInfo(&free_b, &total), GS_cudaSuccess);
        fprintf(stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %zu.00 "
                        "MiB. GPU 0 has a total capacity of %zu.00 MiB of which %zu.00 MiB is "
                        "free.\n",
                size / MiB, total / MiB, free_b / MiB);
        exit(1);
    }
    return p;
}

/* A tensor freed: its segment stays, cached. */
static void to_cache(void *segment)
{
    if (ncached < CACHED)
        cached[ncached++] = segment;
}

NOINLINE static void retry(void)
{
    caching_malloc(20 * MiB); /* the weights, live to the end */
    void *a1 = caching_malloc(20 * MiB), *a2 = caching_malloc(20 * MiB); /* two activations */
    to_cache(a1);
    to_cache(a2);
    to_cache(caching_malloc(24 * MiB)); /* 3 MiB free: fails, frees 40 MiB, retries */
}

NOINLINE static void oom(void)
{
    caching_malloc(48 * MiB); /* never returns */
}

/* ---- expandable segments ---- */

static gs_pfn_cuMemCreate mem_create;
static gs_pfn_cuMemMap mem_map;
static gs_pfn_cuMemAddressReserve addr_reserve;
static gs_curesult (*set_access)(gs_cudeviceptr ptr, size_t size, const void *desc, size_t n);

enum handle_type { UNSPECIFIED, FABRIC_HANDLE, POSIX_FD };
static enum handle_type handle_type = UNSPECIFIED;
static gs_cudeviceptr segment;

static void *entry(const char *name)
{
    void *fn = NULL;
    int status = -1;
    EXPECT(cudaGetDriverEntryPointByVersion(name, &fn, 12000, 0, &status), GS_cudaSuccess);
    EXPECT(status, 0);
    return fn;
}

/* ExpandableSegment::map of one page at begin; 0 when the handle type is
 * not supported (the caller tries the next). */
NOINLINE static int expandable_map(size_t begin, size_t page)
{
    if (handle_type == UNSPECIFIED) {
        handle_type = FABRIC_HANDLE;
        if (expandable_map(begin, page))
            return 1;
        handle_type = POSIX_FD; /* "if fabric handle is not supported, use posix file handle" */
        return expandable_map(begin, page);
    }
    gs_cumemallocationprop prop = {.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED,
                                   .location = {GS_CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    prop.requestedHandleTypes = handle_type == FABRIC_HANDLE
                                    ? GS_CU_MEM_HANDLE_TYPE_FABRIC
                                    : GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    gs_cumemhandle handle;
    gs_curesult status = mem_create(&handle, page, &prop, 0);
    if (status != GS_CUDA_SUCCESS) {
        if (status == GS_CUDA_ERROR_OUT_OF_MEMORY)
            return 0;
        if (handle_type == FABRIC_HANDLE)
            return 0; /* any error but out of memory: the handle type is not supported */
        EXPECT(status, GS_CUDA_SUCCESS);
    }
    EXPECT(mem_map(segment + begin, page, 0, handle, 0), GS_CUDA_SUCCESS);
    struct {
        gs_cumemlocation location;
        int flags;
    } desc = {{GS_CU_MEM_LOCATION_TYPE_DEVICE, 0}, 3 /* PROT_READWRITE */};
    EXPECT(set_access(segment + begin, page, &desc, 1), GS_CUDA_SUCCESS);
    return 1;
}

NOINLINE static void fabric(void)
{
    size_t free_b, total, page = 2 * MiB;
    mem_create = entry("cuMemCreate");
    mem_map = entry("cuMemMap");
    addr_reserve = entry("cuMemAddressReserve");
    set_access = entry("cuMemSetAccess");
    EXPECT(cudaMemGetInfo(&free_b, &total), GS_cudaSuccess);
    size_t max_handles = (total + total / 8 + page - 1) / page;
    EXPECT(addr_reserve(&segment, page * max_handles, 0, 0, 0), GS_CUDA_SUCCESS);
    EXPECT(expandable_map(0, page), 1);
}

/* ---- backend:cudaMallocAsync ---- */

/* CudaMallocAsyncAllocator::cacheInfo */
NOINLINE static size_t cache_info(void)
{
    size_t free_upper_bound = 0, device_total = 0;
    EXPECT(cudaMemGetInfo(&free_upper_bound, &device_total), GS_cudaSuccess);
    size_t guess = free_upper_bound; /* pytorch_memory_limits: UINT64_MAX */
    void *dummy;
    while (1) {
        gs_cudaerror err = cudaMallocAsync(&dummy, guess, NULL);
        if (err == GS_cudaSuccess) {
            cudaFreeAsync(dummy, NULL);
            return guess;
        }
        EXPECT(err, GS_cudaErrorMemoryAllocation);
        (void)cudaGetLastError();
        guess >>= 1;
    }
}

/* cuDNN's getMaxWorkspaceSize, then its benchmark with the workspace. */
NOINLINE static void probe(void)
{
    size_t guess = cache_info();
    size_t workspace = 8 * MiB;
    EXPECT(workspace <= guess, 1);
    void *ws;
    EXPECT(cudaMallocAsync(&ws, workspace, NULL), GS_cudaSuccess);
    EXPECT(cudaFreeAsync(ws, NULL), GS_cudaSuccess);
    EXPECT(cudaStreamSynchronize(NULL), GS_cudaSuccess);
}

int main(int argc, char **argv)
{
    EXPECT(cudaFree(NULL), GS_cudaSuccess); /* the runtime's start, as PyTorch's lazy init */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "retry"))
            retry();
        else if (!strcmp(argv[i], "fabric"))
            fabric();
        else if (!strcmp(argv[i], "probe"))
            probe();
        else if (!strcmp(argv[i], "oom"))
            oom();
        else
            EXPECT(argv[i][0], 0); /* a phase it does not know */
    }
    puts("framework failures done");
    return 0;
}
