/*
 * hooks_driver.c - the driver's allocation functions, as the program sees them.
 *
 * Every allocation path of every framework ends in one of these (DESIGN.md).
 * Each wrapper calls the real function with the caller's arguments and
 * returns exactly what it returned; recording happens around the call and
 * keeps errno.
 *
 * Frees are recorded before the real call: once the driver has the address
 * back, another thread may be handed it by a new allocation, and the free
 * must come first in the trace. A free the driver refuses is followed by a
 * FREE_FAILED record that undoes it.
 */
#include "shim.h"

/* A hooked function whose real one cannot be found: only possible when the
 * program calls our export without any driver loaded. */
static gs_curesult missing(enum gs_fn fn)
{
    static int once;
    gs_warn_once(&once, "%s called but no CUDA driver is loaded", gs_fn_name(fn));
    return GS_CUDA_ERROR_NOT_INITIALIZED;
}

static void after_alloc(enum gs_api api, enum gs_kind kind, gs_curesult r, gs_cudeviceptr *dptr,
                        uint64_t size, gs_custream stream)
{
    if (r == GS_CUDA_SUCCESS && dptr && *dptr)
        gs_record_alloc(api, kind, *dptr, size, stream);
    else if (r != GS_CUDA_SUCCESS)
        gs_record_alloc_failed(api, size, stream, r);
}

#define REAL_OR_MISSING(name)                                                                      \
    gs_pfn_##name real = (gs_pfn_##name)gs_real(GS_FN_##name);                                     \
    if (!real)                                                                                     \
        return missing(GS_FN_##name);

GS_EXPORT gs_curesult cuMemAlloc_v2(gs_cudeviceptr *dptr, size_t bytesize)
{
    REAL_OR_MISSING(cuMemAlloc_v2);
    gs_curesult r = real(dptr, bytesize);
    after_alloc(GS_API_cuMemAlloc_v2, GS_KIND_DEVICE, r, dptr, bytesize, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocPitch_v2(gs_cudeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                         size_t Height, unsigned int ElementSizeBytes)
{
    REAL_OR_MISSING(cuMemAllocPitch_v2);
    gs_curesult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    /* The program holds pitch x height bytes; before the call only the
     * width is known, so a failure reports width x height. */
    uint64_t size = (uint64_t)WidthInBytes * Height;
    if (r == GS_CUDA_SUCCESS && pPitch)
        size = (uint64_t)*pPitch * Height;
    after_alloc(GS_API_cuMemAllocPitch_v2, GS_KIND_DEVICE, r, dptr, size, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocManaged(gs_cudeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    REAL_OR_MISSING(cuMemAllocManaged);
    gs_curesult r = real(dptr, bytesize, flags);
    after_alloc(GS_API_cuMemAllocManaged, GS_KIND_MANAGED, r, dptr, bytesize, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocAsync(gs_cudeviceptr *dptr, size_t bytesize, gs_custream hStream)
{
    REAL_OR_MISSING(cuMemAllocAsync);
    gs_curesult r = real(dptr, bytesize, hStream);
    after_alloc(GS_API_cuMemAllocAsync, GS_KIND_DEVICE, r, dptr, bytesize, hStream);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                           gs_custream hStream)
{
    REAL_OR_MISSING(cuMemAllocAsync_ptsz);
    gs_curesult r = real(dptr, bytesize, hStream);
    after_alloc(GS_API_cuMemAllocAsync_ptsz, GS_KIND_DEVICE, r, dptr, bytesize, hStream);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocFromPoolAsync(gs_cudeviceptr *dptr, size_t bytesize,
                                              gs_cumempool pool, gs_custream hStream)
{
    REAL_OR_MISSING(cuMemAllocFromPoolAsync);
    gs_curesult r = real(dptr, bytesize, pool, hStream);
    after_alloc(GS_API_cuMemAllocFromPoolAsync, GS_KIND_DEVICE, r, dptr, bytesize, hStream);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocFromPoolAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                                   gs_cumempool pool, gs_custream hStream)
{
    REAL_OR_MISSING(cuMemAllocFromPoolAsync_ptsz);
    gs_curesult r = real(dptr, bytesize, pool, hStream);
    after_alloc(GS_API_cuMemAllocFromPoolAsync_ptsz, GS_KIND_DEVICE, r, dptr, bytesize, hStream);
    return r;
}

/* Frees: recorded first, undone if the driver refuses. Freeing 0 is a no-op
 * for the driver and is not recorded. */
static gs_curesult free_through(enum gs_api api, gs_cudeviceptr dptr, gs_custream stream,
                                gs_curesult (*call)(gs_cudeviceptr, gs_custream, void *),
                                void *real)
{
    if (dptr)
        gs_record_free(api, dptr, stream);
    gs_curesult r = call(dptr, stream, real);
    if (dptr && r != GS_CUDA_SUCCESS)
        gs_record_free_failed(api, dptr, stream, r);
    return r;
}

static gs_curesult call_free(gs_cudeviceptr dptr, gs_custream stream, void *real)
{
    (void)stream;
    return ((gs_pfn_cuMemFree_v2)real)(dptr);
}

static gs_curesult call_free_async(gs_cudeviceptr dptr, gs_custream stream, void *real)
{
    return ((gs_pfn_cuMemFreeAsync)real)(dptr, stream);
}

GS_EXPORT gs_curesult cuMemFree_v2(gs_cudeviceptr dptr)
{
    REAL_OR_MISSING(cuMemFree_v2);
    return free_through(GS_API_cuMemFree_v2, dptr, NULL, call_free, (void *)real);
}

GS_EXPORT gs_curesult cuMemFreeAsync(gs_cudeviceptr dptr, gs_custream hStream)
{
    REAL_OR_MISSING(cuMemFreeAsync);
    return free_through(GS_API_cuMemFreeAsync, dptr, hStream, call_free_async, (void *)real);
}

GS_EXPORT gs_curesult cuMemFreeAsync_ptsz(gs_cudeviceptr dptr, gs_custream hStream)
{
    REAL_OR_MISSING(cuMemFreeAsync_ptsz);
    return free_through(GS_API_cuMemFreeAsync_ptsz, dptr, hStream, call_free_async, (void *)real);
}
