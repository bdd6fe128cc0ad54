/*
 * alloc.c - the device-memory allocator: address spaces (holes below a bump pointer), pool
 * accounting, and the allocation and free behind every cuMemAlloc-style and stream-ordered
 * call.
 *
 * Design
 *   - Addresses come from a first-fit list of holes (sorted by address,
 *     coalesced) and, when no hole fits, from a bump pointer. A freed range
 *     is a hole again, so later allocations reuse it, as the real one does.
 *   - Pools (cuMemAllocAsync, cuMemAllocFromPoolAsync): used is the sum of
 *     the live allocations from the pool; reserved grows in 2 MiB chunks to
 *     cover used and the pending frees (order.c) and is what the device is
 *     charged. A free returns bytes to the pool only; cuStreamSynchronize,
 *     cuEventSynchronize and cuCtxSynchronize shrink the reserved bytes of
 *     the device's pools to the chunks used and pending frees need or the
 *     release threshold (rounded up to a chunk), whichever is more;
 *     cuMemPoolTrimTo likewise with its own minimum.
 */
#include "sim.h"

/* ---- address spaces (lock held) ---------------------------------------- */

static void hole_delete(struct space *s, size_t i)
{
    memmove(&s->holes[i], &s->holes[i + 1], (s->nholes - i - 1) * sizeof *s->holes);
    s->nholes--;
}

static int hole_insert(struct space *s, size_t i, uint64_t off, uint64_t len)
{
    struct hole *h = grow(s->holes, &s->holes_cap, s->nholes + 1, sizeof *h);

    if (!h)
        return -1;
    s->holes = h;
    memmove(&h[i + 1], &h[i], (s->nholes - i) * sizeof *h);
    h[i] = (struct hole){off, len};
    s->nholes++;
    return 0;
}

/* Takes [off, off+len), which lies inside hole i, out of it. */
static int hole_carve(struct space *s, size_t i, uint64_t off, uint64_t len)
{
    struct hole *h = &s->holes[i];
    uint64_t end = h->off + h->len;

    if (off > h->off && off + len < end) {
        if (hole_insert(s, i + 1, off + len, end - off - len) != 0)
            return -1;
        s->holes[i].len = off - s->holes[i].off;
    } else if (off > h->off) {
        h->len = off - h->off;
    } else if (off + len < end) {
        h->off += len;
        h->len -= len;
    } else {
        hole_delete(s, i);
    }
    return 0;
}

/* Offset of the first address at or above base + off aligned to align. */
static uint64_t align_off(const struct space *s, uint64_t off, uint64_t align)
{
    return round_up(s->base + off, align) - s->base;
}

/* Takes [off, off+len) at or above the bump pointer; the gap is a hole. */
static int space_take_top(struct space *s, uint64_t off, uint64_t len, uint64_t *addr)
{
    if (off > s->limit || s->limit - off < len)
        return -1;
    if (off > s->top && hole_insert(s, s->nholes, s->top, off - s->top) != 0)
        return -1;
    s->top = off + len;
    *addr = s->base + off;
    return 0;
}

/* First fit: the lowest hole that holds len bytes at an address aligned to
 * align (a power of two, at most the region's span), else the bump pointer. */
int space_take(struct space *s, uint64_t len, uint64_t align, uint64_t *addr)
{
    for (size_t i = 0; i < s->nholes; i++) {
        uint64_t off = align_off(s, s->holes[i].off, align);
        uint64_t end = s->holes[i].off + s->holes[i].len;

        if (off >= end || end - off < len)
            continue;
        if (hole_carve(s, i, off, len) != 0)
            return -1;
        *addr = s->base + off;
        return 0;
    }
    return space_take_top(s, align_off(s, s->top, align), len, addr);
}

/* Takes exactly [addr, addr+len) if all of it is free. */
int space_take_at(struct space *s, uint64_t addr, uint64_t len)
{
    uint64_t off = addr - s->base, got;

    if (addr < s->base)
        return -1;
    if (off >= s->top)
        return space_take_top(s, off, len, &got);
    for (size_t i = 0; i < s->nholes; i++) {
        const struct hole *h = &s->holes[i];

        if (h->off <= off && off - h->off < h->len && h->off + h->len - off >= len)
            return hole_carve(s, i, off, len);
    }
    return -1;
}

/* Returns [addr, addr+len) to the free space, merging with its neighbours
 * and giving the last hole back to the bump pointer. */
void space_put(struct space *s, uint64_t addr, uint64_t len)
{
    uint64_t off = addr - s->base;
    size_t i = 0;

    while (i < s->nholes && s->holes[i].off < off)
        i++;
    if (i > 0 && s->holes[i - 1].off + s->holes[i - 1].len == off) {
        i--;
        s->holes[i].len += len;
    } else if (hole_insert(s, i, off, len) != 0) {
        return; /* out of host memory: the range is lost, nothing breaks */
    }
    if (i + 1 < s->nholes && s->holes[i].off + s->holes[i].len == s->holes[i + 1].off) {
        s->holes[i].len += s->holes[i + 1].len;
        hole_delete(s, i + 1);
    }
    if (i + 1 == s->nholes && s->holes[i].off + s->holes[i].len == s->top) {
        s->top = s->holes[i].off;
        s->nholes--;
    }
}

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

/* A free into pool p. */
static void pool_put(struct gs_cupool_st *p, uint64_t size)
{
    p->used -= size;
    pool_reap(p);
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
