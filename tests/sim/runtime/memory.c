/*
 * memory.c - Memory Management, device memory: cudaMemGetInfo, cudaMalloc, cudaFree,
 * cudaMallocPitch, cudaMallocManaged, cudaMalloc3D.
 */
#include "tests/sim/runtime/runtime.h"

SIM_EXPORT gs_cudaerror cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.mem_info(free_bytes, total)));
}

/* Like the real runtime, cudaMalloc of 0 bytes succeeds with NULL. */
gs_cudaerror cudaMalloc(void **devPtr, size_t size)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!devPtr)
        return done(GS_cudaErrorInvalidValue);
    if (size)
        err = from_driver(drv.alloc(&p, size));
    if (err == GS_cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return done(err);
}

/* cudaFree(NULL) initializes the context and frees nothing. */
gs_cudaerror cudaFree(void *devPtr)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess || !devPtr)
        return done(err);
    return done(from_driver(drv.free((gs_cudeviceptr)(uintptr_t)devPtr)));
}

gs_cudaerror cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!devPtr)
        return done(GS_cudaErrorInvalidValue);
    err = from_driver(drv.alloc_pitch(&p, pitch, width, height, 4));
    if (err == GS_cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return done(err);
}

gs_cudaerror cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!devPtr)
        return done(GS_cudaErrorInvalidValue);
    err = from_driver(drv.alloc_managed(&p, size, flags));
    if (err == GS_cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return done(err);
}

/* One cuMemAllocPitch_v2 of width x (height * depth); any zero extent:
 * success, NULL, pitch 0. */
gs_cudaerror cudaMalloc3D(gs_cudapitchedptr *pitchedDevPtr, gs_cudaextent extent)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;
    size_t pitch = 0, rows;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!pitchedDevPtr)
        return done(GS_cudaErrorInvalidValue);
    *pitchedDevPtr = (gs_cudapitchedptr){NULL, 0, extent.width, extent.height};
    if (!extent.width || !extent.height || !extent.depth)
        return GS_cudaSuccess;
    if (__builtin_mul_overflow(extent.height, extent.depth, &rows))
        return done(GS_cudaErrorMemoryAllocation);
    err = from_driver(drv.alloc_pitch(&p, &pitch, extent.width, rows, 4));
    if (err == GS_cudaSuccess) {
        pitchedDevPtr->ptr = (void *)(uintptr_t)p;
        pitchedDevPtr->pitch = pitch;
    }
    return done(err);
}
