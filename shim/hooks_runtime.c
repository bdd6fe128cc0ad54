/*
 * hooks_runtime.c - the CUDA runtime's allocation functions, used as labels.
 *
 * The runtime's cudaMalloc ends in the driver's cuMemAlloc_v2, where the
 * event is recorded. These wrappers only say, for the driver calls they
 * cause, which API the program called: one cudaMalloc is one event,
 * labelled cudaMalloc. A statically linked runtime never reaches them; its
 * events are labelled with the driver function.
 */
#include "shim.h"

static gs_cudaerror missing(enum gs_fn fn)
{
    static int once;
    gs_warn_once(&once, "%s called but no CUDA runtime follows the shim", gs_fn_name(fn));
    return GS_cudaErrorInitializationError;
}

#define LABELLED(name, call)                                                                       \
    do {                                                                                           \
        gs_pfn_##name real = (gs_pfn_##name)gs_real(GS_FN_##name);                                 \
        if (!real)                                                                                 \
            return missing(GS_FN_##name);                                                          \
        gs_label_push(GS_API_##name);                                                              \
        gs_cudaerror r = call;                                                                     \
        gs_label_pop();                                                                            \
        return r;                                                                                  \
    } while (0)

GS_EXPORT gs_cudaerror cudaMalloc(void **devPtr, size_t size)
{
    LABELLED(cudaMalloc, real(devPtr, size));
}

GS_EXPORT gs_cudaerror cudaFree(void *devPtr) { LABELLED(cudaFree, real(devPtr)); }

GS_EXPORT gs_cudaerror cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    LABELLED(cudaMallocPitch, real(devPtr, pitch, width, height));
}

GS_EXPORT gs_cudaerror cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    LABELLED(cudaMallocManaged, real(devPtr, size, flags));
}

GS_EXPORT gs_cudaerror cudaMallocAsync(void **devPtr, size_t size, gs_custream hStream)
{
    LABELLED(cudaMallocAsync, real(devPtr, size, hStream));
}

GS_EXPORT gs_cudaerror cudaMallocAsync_ptsz(void **devPtr, size_t size, gs_custream hStream)
{
    LABELLED(cudaMallocAsync_ptsz, real(devPtr, size, hStream));
}

GS_EXPORT gs_cudaerror cudaFreeAsync(void *devPtr, gs_custream hStream)
{
    LABELLED(cudaFreeAsync, real(devPtr, hStream));
}

GS_EXPORT gs_cudaerror cudaFreeAsync_ptsz(void *devPtr, gs_custream hStream)
{
    LABELLED(cudaFreeAsync_ptsz, real(devPtr, hStream));
}
