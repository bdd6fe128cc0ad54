/*
 * hooks_driver.c - the driver's allocation functions, as the program sees them.
 *
 * Every allocation path of every framework ends in one of these (docs/design.md,
 * "Interception at the driver").
 * Each wrapper calls the real function with the caller's arguments and
 * returns exactly what it returned; recording happens around the call and
 * keeps errno.
 *
 * Frees are recorded before the real call: once the driver has the address
 * back, another thread may be handed it by a new allocation, and the free
 * must come first in the trace. A free the driver refuses is followed by a
 * FREE_FAILED record that undoes it.
 *
 * The helpers every hook file uses (gs_missing, gs_after_alloc,
 * gs_after_free) are in hooks_common.c; the other kinds of memory have files
 * of their own: hooks_vmm.c, hooks_host.c, hooks_arrays.c, hooks_pools.c,
 * and CUDA graphs hooks_graphs.c (a stream-ordered call on a stream that
 * captures is a graph node, not memory).
 */
#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks_int.h"

static void after_alloc(enum gs_api api, enum gs_kind kind, int32_t device, gs_curesult r,
                        gs_cudeviceptr *dptr, uint64_t size, gs_custream stream)
{
    gs_after_alloc(api, kind, GS_SPACE_ADDRESS, device, r, dptr, size, stream);
}

/* A stream-ordered allocation: on a stream that captures, a node of the
 * graph (hooks_graphs.c), not memory. */
static void after_async(enum gs_api api, enum gs_kind kind, int32_t device, gs_curesult r,
                        gs_cudeviceptr *dptr, uint64_t size, gs_custream stream,
                        gs_cumempool pool)
{
    if (r == GS_CUDA_SUCCESS && dptr && gs_graph_capturing(stream)) {
        gs_record_graph_node(api, device, *dptr, size, stream, 0, 0); /* no pool asked */
        return;
    }
    gs_pool_note(pool, device, r != GS_CUDA_SUCCESS); /* first: the event sees the pool after it */
    after_alloc(api, kind, device, r, dptr, size, stream);
}

/* Not an allocation: what it answers is noted, for the thread's next one
 * (gs_note_free_memory). */
GS_EXPORT gs_curesult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    GS_REAL_OR_MISSING(cuMemGetInfo_v2);
    gs_curesult r = real(free, total);
    if (r == GS_CUDA_SUCCESS && free)
        gs_note_free_memory(*free);
    return r;
}

GS_EXPORT gs_curesult cuMemAlloc_v2(gs_cudeviceptr *dptr, size_t bytesize)
{
    GS_REAL_OR_MISSING(cuMemAlloc_v2);
    gs_curesult r = real(dptr, bytesize);
    after_alloc(GS_API_cuMemAlloc_v2, GS_KIND_DEVICE, GS_DEVICE_CURRENT, r, dptr, bytesize, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocPitch_v2(gs_cudeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                         size_t Height, unsigned int ElementSizeBytes)
{
    GS_REAL_OR_MISSING(cuMemAllocPitch_v2);
    gs_curesult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    /* The program holds pitch x height bytes; before the call only the
     * width is known, so a failure reports width x height. */
    uint64_t size = (uint64_t)WidthInBytes * Height;
    if (r == GS_CUDA_SUCCESS && pPitch)
        size = (uint64_t)*pPitch * Height;
    after_alloc(GS_API_cuMemAllocPitch_v2, GS_KIND_DEVICE, GS_DEVICE_CURRENT, r, dptr, size, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocManaged(gs_cudeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    GS_REAL_OR_MISSING(cuMemAllocManaged);
    gs_curesult r = real(dptr, bytesize, flags);
    after_alloc(GS_API_cuMemAllocManaged, GS_KIND_MANAGED, GS_DEVICE_CURRENT, r, dptr, bytesize, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocAsync(gs_cudeviceptr *dptr, size_t bytesize, gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuMemAllocAsync);
    gs_curesult r = real(dptr, bytesize, hStream);
    int32_t device = gs_stream_device(hStream);
    after_async(GS_API_cuMemAllocAsync, GS_KIND_DEVICE, device, r, dptr, bytesize, hStream, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                           gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuMemAllocAsync_ptsz);
    gs_curesult r = real(dptr, bytesize, hStream);
    int32_t device = gs_stream_device(hStream);
    after_async(GS_API_cuMemAllocAsync_ptsz, GS_KIND_DEVICE, device, r, dptr, bytesize, hStream, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocFromPoolAsync(gs_cudeviceptr *dptr, size_t bytesize,
                                              gs_cumempool pool, gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuMemAllocFromPoolAsync);
    gs_curesult r = real(dptr, bytesize, pool, hStream);
    enum gs_kind kind;
    int32_t device = gs_pool_device(pool, hStream, &kind);
    after_async(GS_API_cuMemAllocFromPoolAsync, kind, device, r, dptr, bytesize, hStream, pool);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocFromPoolAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                                   gs_cumempool pool, gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuMemAllocFromPoolAsync_ptsz);
    gs_curesult r = real(dptr, bytesize, pool, hStream);
    enum gs_kind kind;
    int32_t device = gs_pool_device(pool, hStream, &kind);
    after_async(GS_API_cuMemAllocFromPoolAsync_ptsz, kind, device, r, dptr, bytesize, hStream, pool);
    return r;
}

/* Frees: recorded first, undone if the driver refuses. Freeing 0 is a no-op
 * for the driver and is not recorded. cuMemFree also frees stream-ordered
 * memory (NCCL's reclaimPlan cudaFrees its pool's work buffers): once a pool
 * has been seen, the pools are sampled after it as after a cuMemFreeAsync. */
GS_EXPORT gs_curesult cuMemFree_v2(gs_cudeviceptr dptr)
{
    GS_REAL_OR_MISSING(cuMemFree_v2);
    gs_record_free(GS_API_cuMemFree_v2, GS_SPACE_ADDRESS, dptr, NULL);
    gs_curesult r = real(dptr);
    gs_after_free(GS_API_cuMemFree_v2, GS_SPACE_ADDRESS, dptr, NULL, r);
    if (r == GS_CUDA_SUCCESS && gs_pools_seen())
        gs_pool_note_free(gs_stream_device(NULL));
    return r;
}

static gs_curesult free_async(enum gs_api api, gs_pfn_cuMemFreeAsync real, gs_cudeviceptr dptr,
                              gs_custream stream)
{
    if (dptr && gs_graph_capturing(stream)) { /* a free node: nothing is freed now */
        gs_curesult r = real(dptr, stream);
        if (r == GS_CUDA_SUCCESS)
            gs_record_graph_node(api, gs_stream_device(stream), dptr, 0, stream, 0, 1);
        return r;
    }
    gs_record_free(api, GS_SPACE_ADDRESS, dptr, stream);
    gs_curesult r = real(dptr, stream);
    gs_after_free(api, GS_SPACE_ADDRESS, dptr, stream, r);
    gs_pool_note_free(gs_stream_device(stream));
    return r;
}

GS_EXPORT gs_curesult cuMemFreeAsync(gs_cudeviceptr dptr, gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuMemFreeAsync);
    return free_async(GS_API_cuMemFreeAsync, real, dptr, hStream);
}

GS_EXPORT gs_curesult cuMemFreeAsync_ptsz(gs_cudeviceptr dptr, gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuMemFreeAsync_ptsz);
    return free_async(GS_API_cuMemFreeAsync_ptsz, real, dptr, hStream);
}
