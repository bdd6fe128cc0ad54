/*
 * stream.c - Stream Management: cuStreamCreate, cuStreamDestroy, cuStreamSynchronize,
 * cuStreamGetDevice, cuStreamGetCtx.
 *
 * Design
 *   - Streams are heap objects that remember their device; the NULL,
 *     legacy (0x1) and per-thread (0x2) streams mean the current context's.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/order.h"

/* The device of a stream: the current context's for the NULL, legacy and
 * per-thread streams. Unknown streams are CUDA_ERROR_INVALID_HANDLE. */
gs_curesult stream_device(gs_custream s, int *dev)
{
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!sim_created_stream(s)) {
        *dev = current_device();
        return *dev < 0 ? -*dev : GS_CUDA_SUCCESS;
    }
    pthread_mutex_lock(&lock);
    i = reg_index(&streams, s);
    if (i >= 0)
        *dev = ((struct gs_custream_st *)streams.v[i])->device;
    pthread_mutex_unlock(&lock);
    return i >= 0 ? GS_CUDA_SUCCESS : SIM_CUDA_ERROR_INVALID_HANDLE;
}

/* Flags: 0 or CU_STREAM_NON_BLOCKING. */
gs_curesult sim_cuStreamCreate(gs_custream *phStream, unsigned int Flags)
{
    int dev = current_device();
    struct gs_custream_st *s;
    int bad;

    if (dev < 0)
        return -dev;
    if (!phStream || (Flags & ~(unsigned)SIM_CU_STREAM_NON_BLOCKING))
        return GS_CUDA_ERROR_INVALID_VALUE;
    s = malloc(sizeof *s);
    if (!s)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    *s = (struct gs_custream_st){.device = dev, .flags = Flags, .order = -1};
    pthread_mutex_lock(&lock);
    bad = orders_ready() != 0 ||
          (s->order = order_add(dev, !(Flags & SIM_CU_STREAM_NON_BLOCKING))) < 0 ||
          reg_add(&streams, s) != 0;
    pthread_mutex_unlock(&lock);
    if (bad) {
        free(s);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phStream = s;
    sim_log("cuStreamCreate dev %d -> %p", dev, (void *)s);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuStreamCreate)

gs_curesult sim_cuStreamDestroy_v2(gs_custream hStream)
{
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = reg_index(&streams, hStream);
    if (i >= 0)
        reg_del(&streams, (size_t)i);
    pthread_mutex_unlock(&lock);
    if (i < 0)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(hStream);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuStreamDestroy_v2)

/* Its work completes, and what it comes after. */
static gs_curesult stream_synchronize(gs_custream hStream)
{
    int dev, o;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    o = order_of(hStream, dev);
    if (o >= 0 && order_implicit(o) == 0)
        order_complete(&orders[o].clock);
    trim_pools(dev);
    pthread_mutex_unlock(&lock);
    return GS_CUDA_SUCCESS;
}

gs_curesult sim_cuStreamSynchronize(gs_custream hStream)
{
    return stream_synchronize(hStream);
}
SIM_EXPORT(cuStreamSynchronize)

gs_curesult sim_cuStreamSynchronize_ptsz(gs_custream hStream)
{
    return stream_synchronize(hStream);
}
SIM_EXPORT(cuStreamSynchronize_ptsz)

static gs_curesult stream_get_device(gs_custream hStream, gs_cudevice *device)
{
    int dev;
    gs_curesult rc;

    if (!device)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = stream_device(hStream, &dev);
    if (rc == GS_CUDA_SUCCESS)
        *device = dev;
    if (rc == GS_CUDA_SUCCESS && sim_created_stream(hStream)) {
        pthread_mutex_lock(&lock);
        if (hStream->capture)
            hStream->capture_invalidated = 1; /* as the real driver does: graph.c */
        pthread_mutex_unlock(&lock);
    }
    return rc;
}

gs_curesult sim_cuStreamGetDevice(gs_custream hStream, gs_cudevice *device)
{
    return stream_get_device(hStream, device);
}
SIM_EXPORT(cuStreamGetDevice)

gs_curesult sim_cuStreamGetDevice_ptsz(gs_custream hStream, gs_cudevice *device)
{
    return stream_get_device(hStream, device);
}
SIM_EXPORT(cuStreamGetDevice_ptsz)

/* cuStreamGetCtx_v2 (CUDA 12.5) adds the green context: always NULL here. */
static gs_curesult stream_get_ctx(gs_custream hStream, gs_cucontext *pctx, void **pGreenCtx)
{
    int dev;
    gs_curesult rc;

    if (!pctx)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = stream_device(hStream, &dev);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    *pctx = &devices[dev].ctx;
    if (pGreenCtx)
        *pGreenCtx = NULL;
    return GS_CUDA_SUCCESS;
}

gs_curesult sim_cuStreamGetCtx(gs_custream hStream, gs_cucontext *pctx)
{
    return stream_get_ctx(hStream, pctx, NULL);
}
SIM_EXPORT(cuStreamGetCtx)

gs_curesult sim_cuStreamGetCtx_ptsz(gs_custream hStream, gs_cucontext *pctx)
{
    return stream_get_ctx(hStream, pctx, NULL);
}
SIM_EXPORT(cuStreamGetCtx_ptsz)

gs_curesult sim_cuStreamGetCtx_v2(gs_custream hStream, gs_cucontext *pctx,
                                  void **pGreenCtx)
{
    return stream_get_ctx(hStream, pctx, pGreenCtx);
}
SIM_EXPORT(cuStreamGetCtx_v2)

gs_curesult sim_cuStreamGetCtx_v2_ptsz(gs_custream hStream, gs_cucontext *pctx,
                                       void **pGreenCtx)
{
    return stream_get_ctx(hStream, pctx, pGreenCtx);
}
SIM_EXPORT(cuStreamGetCtx_v2_ptsz)
