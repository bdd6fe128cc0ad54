/*
 * alloc.c - the device-memory allocator: the allocation and free behind every cuMemAlloc-style
 * and stream-ordered call, charging the device or a pool (addresses from space.c).
 *
 * Design
 *   - Addresses come from the device's address space (space.c): a freed
 *     range is free again, so later allocations reuse it, as the real one does.
 *   - Pools (cuMemAllocAsync, cuMemAllocFromPoolAsync): used is the sum of
 *     the live allocations from the pool; reserved grows in 2 MiB chunks to
 *     cover used and the pending frees (order.c) and is what the device is
 *     charged. A free returns bytes to the pool only; cuStreamSynchronize,
 *     cuEventSynchronize and cuCtxSynchronize shrink the reserved bytes of
 *     the device's pools to the chunks used and pending frees need or the
 *     release threshold (rounded up to a chunk), whichever is more;
 *     cuMemPoolTrimTo likewise with its own minimum (pools.c: trim_pools,
 *     pool_shrink).
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/alloc.h"
#include "tests/sim/driver/graph.h"
#include "tests/sim/driver/order.h"

/* ---- charging a pool (lock held) --------------------------------------- */

/* Device bytes pool p must add to hold size more; UINT64_MAX: over its
 * maximum size. */
static uint64_t pool_growth(const struct gs_cupool_st *p, uint64_t size)
{
    uint64_t need = round_up(p->used + p->pending + size, SIM_GRANULE);

    if (p->max_size && need > p->max_size)
        return UINT64_MAX;
    return need > p->reserved ? need - p->reserved : 0;
}

static void pool_take(struct gs_cupool_st *p, uint64_t size, uint64_t growth)
{
    p->used += size;
    p->reserved += growth;
    if (p->used > p->used_high)
        p->used_high = p->used;
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
}

/* A free into pool p. */
static void pool_put(struct gs_cupool_st *p, uint64_t size)
{
    p->used -= size;
    pool_reap(p);
}

/* ---- allocate and free ------------------------------------------------- */

/* Stream o (-1: none) allocates: a pool's pending free o may reuse first,
 * then the pool's free memory or more of the device's. */
static gs_curesult alloc_locked(int dev, uint64_t size, struct gs_cupool_st *pool,
                                int managed, int o, gs_cudeviceptr *dptr)
{
    struct device *d = &devices[dev];
    long reuse = pool && o >= 0 ? pending_fit(pool, o, size) : -1;
    uint64_t charge = reuse >= 0 ? 0 : pool ? pool_growth(pool, size) : size;
    uint64_t addr;
    struct live *e;

    if (reuse < 0 && pool && o >= 0 && (charge == UINT64_MAX || d->capacity - d->used < charge) &&
        pending_wait_all(pool, o))
        charge = pool_growth(pool, size);
    if (charge == UINT64_MAX || d->capacity - d->used < charge)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    if ((table_count + 1) * 2 > table_cap && table_grow() != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (reuse >= 0 ? pending_take((size_t)reuse, size, o, &addr) != 0
                   : space_take(&d->space, size, SIM_ALIGN, &addr) != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    d->used += charge;
    if (pool)
        pool_take(pool, size, charge);
    e = &table[slot_find(addr)];
    *e = (struct live){addr, size, dev, managed, pool, next_serial++, NULL};
    if (cfg.host_malloc)
        e->host = malloc(64);
    table_count++;
    *dptr = addr;
    return GS_CUDA_SUCCESS;
}

/* The pool c charges (NULL: none) in *pool; fails for an unknown pool. */
static gs_curesult charge_pool(struct charge *c, struct gs_cupool_st **pool)
{
    *pool = NULL;
    if (c->pooled && c->given) {
        *pool = pool_of(c->given);
        if (!*pool)
            return GS_CUDA_ERROR_INVALID_VALUE;
        c->dev = (*pool)->device;
    } else if (c->pooled) {
        *pool = devices[c->dev].cur_pool;
    }
    return GS_CUDA_SUCCESS;
}

/* Charges bytesize (rounded to 512) as c says. */
gs_curesult sim_alloc(const char *api, struct charge c, gs_cudeviceptr *dptr,
                      size_t bytesize)
{
    gs_curesult rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    struct gs_cupool_st *pool;
    gs_cudeviceptr p = 0;
    int o = -1;

    if (!dptr || !bytesize)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (c.ordered && ((o = order_of(c.stream, c.dev)) < 0 || order_implicit(o) != 0))
        rc = SIM_CUDA_ERROR_INVALID_HANDLE;
    else
        rc = charge_pool(&c, &pool);
    if (rc == GS_CUDA_SUCCESS && bytesize > SIM_SPAN)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == GS_CUDA_SUCCESS)
        rc = alloc_locked(c.dev, round_up(bytesize, SIM_ALIGN), pool, c.managed, o, &p);
    if (rc == GS_CUDA_SUCCESS && nuses)
        hazard_check(api, o, p, round_up(bytesize, SIM_ALIGN));
    pthread_mutex_unlock(&lock);
    if (rc == GS_CUDA_SUCCESS)
        *dptr = p;
    sim_log("%s(%zu) dev %d -> %d 0x%llx", api, bytesize, c.dev, rc, p);
    return rc;
}

/* Frees dptr; stream-ordered on stream s of device dev when ordered. */
gs_curesult sim_free(const char *api, gs_cudeviceptr dptr, int ordered, gs_custream s,
                     int dev)
{
    struct live *e;
    struct live gone = {0};
    int o = -1;

    if (!dptr)
        return GS_CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    e = table_get(dptr);
    if (e && ordered)
        o = order_of(s, dev);
    if (e) {
        gone = *e;
        if (!gone.pool)
            devices[gone.device].used -= gone.size;
        if (!gone.pool || o < 0 || pending_add(&gone, o) != 0) {
            space_put(&devices[gone.device].space, gone.addr, gone.size);
            if (gone.pool)
                pool_put(gone.pool, gone.size);
        }
        table_remove((size_t)(e - table));
    }
    int graph = !e && graph_free_locked(dptr); /* a graph's allocation */
    pthread_mutex_unlock(&lock);
    free(gone.host);
    sim_log("%s(0x%llx) -> %d", api, dptr, e || graph ? 0 : GS_CUDA_ERROR_INVALID_VALUE);
    return e || graph ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
