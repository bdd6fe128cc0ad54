/*
 * pools.c - Stream Ordered Memory Allocator: cudaMallocAsync, cudaFreeAsync (and their _ptsz
 * names), cudaMallocFromPoolAsync[_ptsz], the pools (cudaMemPoolCreate/Destroy,
 * cudaMemPoolGetAttribute/SetAttribute, cudaMemPoolTrimTo) and cudaDeviceGetDefaultMemPool.
 */
#include "tests/sim/runtime/runtime.h"

static gs_cudaerror malloc_async(gs_pfn_cuMemAllocAsync fn, void **devPtr, size_t size,
                                 gs_custream stream)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!devPtr)
        return done(GS_cudaErrorInvalidValue);
    err = from_driver(fn(&p, size, stream));
    if (err == GS_cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return done(err);
}

static gs_cudaerror free_async(gs_pfn_cuMemFreeAsync fn, void *devPtr, gs_custream stream)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess)
        return done(err);
    return done(from_driver(fn((gs_cudeviceptr)(uintptr_t)devPtr, stream)));
}

/* driver_ready() first: the driver pointer is read before the helper runs. */
gs_cudaerror cudaMallocAsync(void **devPtr, size_t size, gs_custream hStream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err)
                                 : malloc_async(drv.alloc_async, devPtr, size, hStream);
}

gs_cudaerror cudaMallocAsync_ptsz(void **devPtr, size_t size, gs_custream hStream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err)
                                 : malloc_async(drv.alloc_async_ptsz, devPtr, size, hStream);
}

gs_cudaerror cudaFreeAsync(void *devPtr, gs_custream hStream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err) : free_async(drv.free_async, devPtr, hStream);
}

gs_cudaerror cudaFreeAsync_ptsz(void *devPtr, gs_custream hStream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err)
                                 : free_async(drv.free_async_ptsz, devPtr, hStream);
}

static gs_cudaerror malloc_from_pool(gs_pfn_cuMemAllocFromPoolAsync fn, void **ptr, size_t size,
                                     gs_cumempool pool, gs_custream stream)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!ptr)
        return done(GS_cudaErrorInvalidValue);
    err = from_driver(fn(&p, size, pool, stream));
    if (err == GS_cudaSuccess)
        *ptr = (void *)(uintptr_t)p;
    return done(err);
}

gs_cudaerror cudaMallocFromPoolAsync(void **ptr, size_t size, gs_cumempool memPool,
                                     gs_custream stream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err)
                                 : malloc_from_pool(drv.pool_alloc, ptr, size, memPool, stream);
}

gs_cudaerror cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, gs_cumempool memPool,
                                          gs_custream stream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess
               ? done(err)
               : malloc_from_pool(drv.pool_alloc_ptsz, ptr, size, memPool, stream);
}

gs_cudaerror cudaMemPoolCreate(gs_cumempool *memPool, const gs_cudamempoolprops *poolProps)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.pool_create(memPool, poolProps)));
}

gs_cudaerror cudaMemPoolDestroy(gs_cumempool memPool)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.pool_destroy(memPool)));
}

/* enum cudaMemPoolAttr has the driver's values. */
SIM_EXPORT gs_cudaerror cudaMemPoolGetAttribute(gs_cumempool memPool, gs_cumempoolattr attr,
                                                void *value)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.pool_get(memPool, attr, value)));
}

/* The same signature as the getter; enum cudaMemPoolAttr has the driver's values (NCCL's
 * commAlloc and PyTorch's lazy_init_device set the release threshold). */
SIM_EXPORT gs_cudaerror cudaMemPoolSetAttribute(gs_cumempool memPool, gs_cumempoolattr attr,
                                                void *value)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.pool_set(memPool, attr, value)));
}

SIM_EXPORT gs_cudaerror cudaDeviceGetDefaultMemPool(gs_cumempool *memPool, int device)
{
    gs_cudaerror err = driver_ready();

    if (err != GS_cudaSuccess)
        return done(err);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    return done(from_driver(drv.default_pool(memPool, device)));
}

SIM_EXPORT gs_cudaerror cudaMemPoolTrimTo(gs_cumempool memPool, size_t minBytesToKeep)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err
                                      : from_driver(drv.pool_trim(memPool, minBytesToKeep)));
}
