/*
 * pools.c - Stream Ordered Memory Allocator, the pools: cuMemPoolCreate/Destroy,
 * cuMemPoolGetAttribute/SetAttribute, cuMemPoolTrimTo; and what the other sections do to
 * pools: find a live one, shrink its reserved bytes, reap a destroyed one, trim a device's
 * on a synchronize. Charging an allocation to a pool is alloc.c's.
 */
#include "tests/sim/driver/sim.h"

/* ---- pool accounting (lock held) --------------------------------------- */

/* A live pool: a default pool or a created one not destroyed. */
struct gs_cupool_st *pool_of(const void *p)
{
    long i;

    for (int d = 0; d < cfg.ndevices; d++)
        if (p == &devices[d].pool)
            return &devices[d].pool;
    i = reg_index(&pools, p);
    if (i < 0 || ((struct gs_cupool_st *)pools.v[i])->destroyed)
        return NULL;
    return pools.v[i];
}

/* Gives the device back the chunks neither used, nor pending frees, nor
 * keep need. */
void pool_shrink(struct gs_cupool_st *p, uint64_t keep)
{
    uint64_t target;

    if (keep >= p->reserved)
        return;
    target = round_up(keep, SIM_GRANULE);
    if (target < round_up(p->used + p->pending, SIM_GRANULE))
        target = round_up(p->used + p->pending, SIM_GRANULE);
    if (target >= p->reserved)
        return;
    devices[p->device].used -= p->reserved - target;
    p->reserved = target;
}

/* A destroyed pool keeps only what its live allocations and pending frees
 * need, and goes once it has neither. */
void pool_reap(struct gs_cupool_st *p)
{
    if (!p->destroyed)
        return;
    pool_shrink(p, 0);
    if (p->used == 0 && p->pending == 0) {
        reg_del(&pools, (size_t)reg_index(&pools, p));
        free(p);
    }
}

/* What a synchronize on device dev does to its pools. */
void trim_pools(int dev)
{
    pool_shrink(&devices[dev].pool, devices[dev].pool.threshold);
    for (size_t i = 0; i < pools.n; i++) {
        struct gs_cupool_st *p = pools.v[i];

        if (p->device == dev && !p->destroyed)
            pool_shrink(p, p->threshold);
    }
}

/* ---- the entry points -------------------------------------------------- */

/* Device-located pinned pools only; maxSize (0: none) caps reserved. */
gs_curesult sim_cuMemPoolCreate(gs_cumempool *pool, const gs_cumempoolprops *poolProps)
{
    struct gs_cupool_st *p;
    int bad;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!pool || !poolProps || poolProps->allocType != GS_CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != GS_CU_MEM_LOCATION_TYPE_DEVICE ||
        !valid_device(poolProps->location.id))
        return GS_CUDA_ERROR_INVALID_VALUE;
    p = malloc(sizeof *p);
    if (!p)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pool_init(p, poolProps->location.id);
    p->max_size = poolProps->maxSize;
    pthread_mutex_lock(&lock);
    bad = reg_add(&pools, p);
    pthread_mutex_unlock(&lock);
    if (bad) {
        free(p);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pool = p;
    sim_log("cuMemPoolCreate dev %d -> %p", p->device, (void *)p);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuMemPoolCreate)

/* A pool with live allocations goes once they are freed; a device whose
 * current pool it was gets its default pool back. */
gs_curesult sim_cuMemPoolDestroy(gs_cumempool pool)
{
    struct gs_cupool_st *p;
    int ok;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    p = pool_of(pool);
    ok = p && p != &devices[p->device].pool;
    if (ok) {
        if (devices[p->device].cur_pool == p)
            devices[p->device].cur_pool = &devices[p->device].pool;
        p->destroyed = 1;
        pool_reap(p);
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuMemPoolDestroy(%p) -> %d", (void *)pool, ok ? 0 : 1);
    return ok ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemPoolDestroy)

static gs_curesult pool_get_locked(const struct gs_cupool_st *p, gs_cumempoolattr attr,
                                   void *value)
{
    gs_cuuint64 *v = value;

    switch (attr) {
    case SIM_CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: /* fall through */
    case SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: /* fall through */
    case SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = p->reuse[attr - 1];
        return GS_CUDA_SUCCESS;
    case GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *v = p->threshold; break;
    case GS_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *v = p->reserved; break;
    case SIM_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *v = p->reserved_high; break;
    case GS_CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *v = p->used; break;
    case SIM_CU_MEMPOOL_ATTR_USED_MEM_HIGH: *v = p->used_high; break;
    default: return GS_CUDA_ERROR_INVALID_VALUE;
    }
    return GS_CUDA_SUCCESS;
}

/* The high-water marks can only be reset (to the current values, by 0). */
static gs_curesult pool_set_locked(struct gs_cupool_st *p, gs_cumempoolattr attr, void *value)
{
    const gs_cuuint64 *v = value;

    switch (attr) {
    case SIM_CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: /* fall through */
    case SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: /* fall through */
    case SIM_CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        p->reuse[attr - 1] = *(int *)value != 0;
        return GS_CUDA_SUCCESS;
    case GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        p->threshold = *v;
        return GS_CUDA_SUCCESS;
    case SIM_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        if (*v)
            return GS_CUDA_ERROR_INVALID_VALUE;
        p->reserved_high = p->reserved;
        return GS_CUDA_SUCCESS;
    case SIM_CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (*v)
            return GS_CUDA_ERROR_INVALID_VALUE;
        p->used_high = p->used;
        return GS_CUDA_SUCCESS;
    default:
        return GS_CUDA_ERROR_INVALID_VALUE;
    }
}

/* Both attribute calls: set != 0 for cuMemPoolSetAttribute. */
static gs_curesult pool_attribute(gs_cumempool pool, gs_cumempoolattr attr, void *value,
                                  int set)
{
    struct gs_cupool_st *p;
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!value)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    p = pool_of(pool);
    if (p)
        rc = set ? pool_set_locked(p, attr, value) : pool_get_locked(p, attr, value);
    pthread_mutex_unlock(&lock);
    return rc;
}

gs_curesult sim_cuMemPoolGetAttribute(gs_cumempool pool, gs_cumempoolattr attr,
                                      void *value)
{
    return pool_attribute(pool, attr, value, 0);
}
SIM_EXPORT(cuMemPoolGetAttribute)

gs_curesult sim_cuMemPoolSetAttribute(gs_cumempool pool, gs_cumempoolattr attr,
                                      void *value)
{
    return pool_attribute(pool, attr, value, 1);
}
SIM_EXPORT(cuMemPoolSetAttribute)

gs_curesult sim_cuMemPoolTrimTo(gs_cumempool pool, size_t minBytesToKeep)
{
    struct gs_cupool_st *p;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    p = pool_of(pool);
    if (p)
        pool_shrink(p, minBytesToKeep);
    pthread_mutex_unlock(&lock);
    return p ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemPoolTrimTo)
