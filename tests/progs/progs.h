/*
 * progs.h - what the integration test programs share: the few simulated
 * CUDA entry points they call, and a check that stops a program at the
 * first unexpected result (the tests then fail on its exit status).
 */
#ifndef GPUSHIM_PROGS_H
#define GPUSHIM_PROGS_H

#include <stdio.h>
#include <stdlib.h>

#include "gpushim_cuda.h"

#define MiB (1024u * 1024u)
#define KiB 1024u

#define EXPECT(call, want)                                                                         \
    do {                                                                                           \
        long got_ = (long)(call);                                                                  \
        if (got_ != (long)(want)) {                                                            \
            fprintf(stderr, "%s:%d: %s returned %ld, expected %ld\n", __FILE__, __LINE__, #call,   \
                    got_, (long)(want));                                                           \
            exit(99);                                                                              \
        }                                                                                          \
    } while (0)

/* Driver functions, for the programs linked with -lcuda (drv_*). */
gs_curesult cuInit(unsigned int flags);
gs_curesult cuDevicePrimaryCtxRetain(gs_cucontext *ctx, gs_cudevice dev);
gs_curesult cuCtxSetCurrent(gs_cucontext ctx);
gs_curesult cuMemAlloc_v2(gs_cudeviceptr *dptr, size_t bytesize);
gs_curesult cuMemFree_v2(gs_cudeviceptr dptr);
gs_curesult cuMemAllocPitch_v2(gs_cudeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                               unsigned int elem);
gs_curesult cuMemAllocManaged(gs_cudeviceptr *dptr, size_t bytesize, unsigned int flags);
gs_curesult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes);

gs_curesult cuStreamCreate(gs_custream *stream, unsigned int flags);
gs_curesult cuMemAllocAsync(gs_cudeviceptr *dptr, size_t bytesize, gs_custream stream);
gs_curesult cuMemFreeAsync(gs_cudeviceptr dptr, gs_custream stream);
gs_curesult cuStreamSynchronize(gs_custream stream);

/* Makes device dev's primary context current on the calling thread. */
static inline void use_device(int dev)
{
    gs_cucontext ctx;
    EXPECT(cuDevicePrimaryCtxRetain(&ctx, dev), GS_CUDA_SUCCESS);
    EXPECT(cuCtxSetCurrent(ctx), GS_CUDA_SUCCESS);
}

#define NOINLINE __attribute__((noinline))

#endif
