/*
 * host.c - Memory Management, pinned host memory: cudaMallocHost, cudaHostAlloc,
 * cudaFreeHost, cudaHostRegister, cudaHostUnregister.
 */
#include "tests/sim/runtime/runtime.h"

gs_cudaerror cudaMallocHost(void **ptr, size_t size)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess)
        return done(err);
    if (!ptr)
        return done(GS_cudaErrorInvalidValue);
    *ptr = NULL;
    return size ? done(from_driver(drv.alloc_host(ptr, size))) : GS_cudaSuccess;
}

/* cudaHostAlloc* flags are the driver's CU_MEMHOSTALLOC_* values. */
gs_cudaerror cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess)
        return done(err);
    if (!pHost)
        return done(GS_cudaErrorInvalidValue);
    *pHost = NULL;
    return size ? done(from_driver(drv.host_alloc(pHost, size, flags))) : GS_cudaSuccess;
}

gs_cudaerror cudaFreeHost(void *ptr)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess || !ptr)
        return done(err);
    return done(from_driver(drv.free_host(ptr)));
}

/* cudaHostRegister* flags are the driver's CU_MEMHOSTREGISTER_* values. */
gs_cudaerror cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.host_register(ptr, size, flags)));
}

gs_cudaerror cudaHostUnregister(void *ptr)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.host_unregister(ptr)));
}
