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

/* The sizes of a churn of allocations that a bounded trace must rotate
 * within (drv_chdir, drv_autograd): 4 KiB plus 0 to 65535 bytes,
 * drawn from a fixed sequence (xorshift64 from *state, which starts at
 * CHURN_SEED; harness.churn_sizes gives the same). Those 16 bits an
 * allocation that zlib cannot squeeze make a churn's share of the trace
 * about 3.3 bytes a step on any machine (8 bits made 2, and so needed 1.7
 * times the steps); with one size it is 0.25 to 0.35, by how many events a
 * microsecond held where it ran, and a test's churn rotated its trace on
 * one machine and not on another. */
#define CHURN_SEED 88172645463325252ull
static inline size_t churn_size(unsigned long long *state)
{
    unsigned long long x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return 4 * KiB + (size_t)(x >> 48);
}

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
