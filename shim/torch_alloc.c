/*
 * torch_alloc.c - PyTorch's pluggable allocator, served and recorded.
 *
 * PyTorch can take its device memory from two functions in a shared object
 * (torch.cuda.memory.CUDAPluggableAllocator, README.md "PyTorch pluggable
 * allocator"): libgpushim.so exports them, so that every tensor storage is
 * one driver allocation, recorded with its own api label and the stack of
 * the code that made it, where PyTorch's caching allocator would show
 * segments.
 *
 *   void *gpushim_torch_alloc(size_t size, int device, cudaStream_t stream)
 *   void gpushim_torch_free(void *ptr, size_t size, int device, cudaStream_t stream)
 *
 * Memory comes from the device's default stream-ordered pool, ordered on
 * the caller's stream (the real cuMemAllocAsync and cuMemFreeAsync, as
 * PyTorch's backend:cudaMallocAsync does), with device's primary context
 * current for the call and the caller's context put back after it. The
 * primary context is retained once per device and kept, as the CUDA runtime
 * keeps it. A failed allocation returns NULL (PyTorch raises its
 * out-of-memory error) and is recorded with the device's free and total
 * memory. A request of 0 bytes gets NULL and is not recorded, as PyTorch's
 * own allocator answers it; freeing NULL does nothing.
 */
#include <errno.h>
#include <string.h>

#include "shim.h"

#define MAX_DEVICES 1024

static gs_cucontext primary[MAX_DEVICES]; /* retained once each, accessed atomically */

struct driver {
    gs_pfn_cuCtxGetCurrent get;
    gs_pfn_cuCtxSetCurrent set;
    gs_pfn_cuDevicePrimaryCtxRetain retain;
    gs_pfn_cuMemAllocAsync alloc;
    gs_pfn_cuMemFreeAsync free;
};

/* The real functions, or 0 when the driver is not loaded (said once). */
static int driver(struct driver *d, const char *caller)
{
    d->get = (gs_pfn_cuCtxGetCurrent)gs_real(GS_FN_cuCtxGetCurrent);
    d->set = (gs_pfn_cuCtxSetCurrent)gs_real(GS_FN_cuCtxSetCurrent);
    d->retain = (gs_pfn_cuDevicePrimaryCtxRetain)gs_real(GS_FN_cuDevicePrimaryCtxRetain);
    d->alloc = (gs_pfn_cuMemAllocAsync)gs_real(GS_FN_cuMemAllocAsync);
    d->free = (gs_pfn_cuMemFreeAsync)gs_real(GS_FN_cuMemFreeAsync);
    if (d->get && d->set && d->retain && d->alloc && d->free)
        return 1;
    static int once;
    gs_warn_once(&once, "%s called but no CUDA driver is loaded", caller);
    return 0;
}

/* The primary context of device, retained on first use. */
static gs_curesult primary_context(const struct driver *d, int device, gs_cucontext *out)
{
    if (device < 0 || device >= MAX_DEVICES)
        return GS_CUDA_ERROR_INVALID_DEVICE;
    gs_cucontext ctx = __atomic_load_n(&primary[device], __ATOMIC_ACQUIRE);
    if (!ctx) {
        gs_curesult r = d->retain(&ctx, device);
        if (r != GS_CUDA_SUCCESS)
            return r;
        gs_cucontext expected = NULL;
        /* a thread that lost the race holds one more reference: harmless,
         * as the context is kept for the life of the process anyway */
        if (!__atomic_compare_exchange_n(&primary[device], &expected, ctx, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            ctx = expected;
    }
    *out = ctx;
    return GS_CUDA_SUCCESS;
}

/* Makes device's primary context current; *prev: what to put back. */
static gs_curesult enter(const struct driver *d, int device, gs_cucontext *prev,
                         gs_cucontext *ctx)
{
    gs_curesult r = primary_context(d, device, ctx);
    if (r != GS_CUDA_SUCCESS)
        return r;
    if (d->get(prev) != GS_CUDA_SUCCESS)
        *prev = NULL;
    if (*prev != *ctx && (r = d->set(*ctx)) != GS_CUDA_SUCCESS)
        return r;
    return GS_CUDA_SUCCESS;
}

static void leave(const struct driver *d, gs_cucontext prev, gs_cucontext ctx)
{
    if (prev != ctx)
        d->set(prev);
}

GS_EXPORT void *gpushim_torch_alloc(size_t size, int device, gs_custream stream)
{
    int saved = errno;
    struct driver d;
    if (!size || !driver(&d, "gpushim_torch_alloc")) {
        errno = saved;
        return NULL;
    }
    gs_cucontext prev = NULL, ctx = NULL;
    gs_cudeviceptr ptr = 0;
    gs_curesult r = enter(&d, device, &prev, &ctx);
    if (r != GS_CUDA_SUCCESS) {
        /* not even the context: recorded on the device asked for, if any */
        gs_record_alloc_failed(GS_API_gpushim_torch_alloc,
                               device >= 0 ? device : GS_DEVICE_UNKNOWN, size, stream, r);
        errno = saved;
        return NULL;
    }
    r = d.alloc(&ptr, size, stream);
    int32_t on = gs_stream_device(stream); /* the stream's device, else the context's */
    gs_pool_note(NULL, on, r != GS_CUDA_SUCCESS);
    /* while the context is current: a failure's free and total are of it */
    gs_after_alloc(GS_API_gpushim_torch_alloc, GS_KIND_DEVICE, GS_SPACE_ADDRESS, on, r, &ptr, size,
                   stream);
    leave(&d, prev, ctx);
    errno = saved;
    return r == GS_CUDA_SUCCESS ? (void *)(uintptr_t)ptr : NULL;
}

GS_EXPORT void gpushim_torch_free(void *ptr, size_t size, int device, gs_custream stream)
{
    (void)size; /* the allocation's own size is recorded */
    int saved = errno;
    struct driver d;
    if (!ptr || !driver(&d, "gpushim_torch_free")) {
        errno = saved;
        return;
    }
    gs_cucontext prev = NULL, ctx = NULL;
    gs_curesult r = enter(&d, device, &prev, &ctx);
    gs_cudeviceptr p = (gs_cudeviceptr)(uintptr_t)ptr;
    if (r == GS_CUDA_SUCCESS) {
        gs_record_free(GS_API_gpushim_torch_free, GS_SPACE_ADDRESS, p, stream);
        r = d.free(p, stream);
        gs_after_free(GS_API_gpushim_torch_free, GS_SPACE_ADDRESS, p, stream, r);
        gs_pool_note_free(gs_stream_device(stream));
        leave(&d, prev, ctx);
    }
    if (r != GS_CUDA_SUCCESS) {
        static int once;
        gs_warn_once(&once, "gpushim_torch_free(%p, device %d): the driver refused it (%d); "
                            "the memory is still held", ptr, device, r);
    }
    errno = saved;
}
