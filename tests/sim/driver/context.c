/*
 * context.c - Primary Context Management, Context Management: cuDevicePrimaryCtxRetain/Release,
 * cuCtxSetCurrent/GetCurrent, cuCtxGetDevice, cuCtxSynchronize (and their CUDA 13 entry
 * points).
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/order.h"

gs_curesult sim_cuDevicePrimaryCtxRetain(gs_cucontext *pctx, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    devices[dev].ctx_refs++;
    pthread_mutex_unlock(&lock);
    *pctx = &devices[dev].ctx;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDevicePrimaryCtxRetain)

gs_curesult sim_cuDevicePrimaryCtxRelease_v2(gs_cudevice dev)
{
    gs_curesult rc = GS_CUDA_SUCCESS;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    if (devices[dev].ctx_refs > 0)
        devices[dev].ctx_refs--;
    else
        rc = GS_CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_unlock(&lock);
    return rc;
}
SIM_EXPORT(cuDevicePrimaryCtxRelease_v2)

gs_curesult sim_cuCtxSetCurrent(gs_cucontext ctx)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (ctx && !ctx_of(ctx))
        return GS_CUDA_ERROR_INVALID_CONTEXT;
    current_ctx = ctx;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuCtxSetCurrent)

gs_curesult sim_cuCtxGetCurrent(gs_cucontext *pctx)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *pctx = current_ctx;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuCtxGetCurrent)

/* CUDA 13's cuCtxGetDevice_v2 and cuCtxSynchronize_v2 take the context
 * (NULL: the current one). cuGetProcAddress hands them out for
 * "cuCtxGetDevice"/"cuCtxSynchronize" at version 13000 and above, as the
 * real driver does; they are not exported by name here. */
gs_curesult ctx_get_device_v2(gs_cudevice *device, gs_cucontext ctx)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!device)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = current_ctx;
    if (!ctx || !ctx_of(ctx))
        return GS_CUDA_ERROR_INVALID_CONTEXT;
    *device = ctx->device;
    return GS_CUDA_SUCCESS;
}

/* Completes everything on the device: the pools release what they may. */
gs_curesult ctx_synchronize_v2(gs_cucontext ctx)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx)
        ctx = current_ctx;
    if (!ctx || !ctx_of(ctx))
        return GS_CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    order_complete_device(ctx->device);
    trim_pools(ctx->device);
    pthread_mutex_unlock(&lock);
    return GS_CUDA_SUCCESS;
}

gs_curesult sim_cuCtxGetDevice(gs_cudevice *device)
{
    return ctx_get_device_v2(device, NULL);
}
SIM_EXPORT(cuCtxGetDevice)

gs_curesult sim_cuCtxSynchronize(void)
{
    return ctx_synchronize_v2(NULL);
}
SIM_EXPORT(cuCtxSynchronize)
