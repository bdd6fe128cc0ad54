/*
 * alloc.h - the allocation and free behind every cuMemAlloc-style and stream-ordered call
 * (alloc.c), and how an allocation is charged.
 *
 * Included by: alloc.c and memory.c (the sections that allocate device memory), after sim.h.
 */
#ifndef GS_SIM_ALLOC_H
#define GS_SIM_ALLOC_H

#include "tests/sim/driver/sim.h"

/* How an allocation is charged. */
struct charge {
    int dev;
    int managed;
    int pooled;         /* from a pool: the given one, else dev's current */
    gs_cumempool given; /* cuMemAllocFromPoolAsync's pool */
    int ordered;        /* stream-ordered, on stream (of device dev) */
    gs_custream stream;
};

#pragma GCC visibility push(hidden)

gs_curesult sim_alloc(const char *api, struct charge c, gs_cudeviceptr *dptr,
                      size_t bytesize);
gs_curesult sim_free(const char *api, gs_cudeviceptr dptr, int ordered, gs_custream s,
                     int dev);

#pragma GCC visibility pop

#endif
