/*
 * hooks_pools.c - stream-ordered memory pools (cudaMallocAsync, PyTorch's
 * backend:cudaMallocAsync, TensorFlow's cuda_malloc_async).
 *
 * A pool keeps memory after it is freed, so the device holds more than the
 * program uses. The shim samples each pool's reserved and used bytes
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, _USED_MEM_CURRENT, through the real
 * cuMemPoolGetAttribute) after the allocations made in it and the frees on
 * its device (a free does not say which pool it returns to; cuMemFree too,
 * which frees pool memory as well), at most every
 * GPUSHIM_POOL_SAMPLE_MS (10 ms; 0 samples every time) but the first
 * allocation in a pool, at once when an allocation fails, and when a pool is
 * created or destroyed.
 *
 * A small table remembers each pool's device (from its creation) and when it
 * was last sampled; pools beyond its size are sampled every time.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "shim/base/base.h"
#include "shim/writer/writer.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks.h"
#include "shim/hooks/hooks_int.h"

#define POOLS 64

struct pool {
    gs_cumempool pool;
    int32_t device;
    enum gs_kind kind;   /* host-located pools (CUDA 12.2) hold pinned host memory */
    uint64_t sampled_ns; /* 0: never */
};

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool pools[POOLS];
static int seen; /* accessed atomically: a pool has taken a slot */

/* The slot of pool, taking a free one if add; NULL if none. Lock held. */
static struct pool *slot(gs_cumempool pool, int add)
{
    struct pool *empty = NULL;
    for (int i = 0; i < POOLS; i++) {
        if (pools[i].pool == pool)
            return &pools[i];
        if (!pools[i].pool && !empty)
            empty = &pools[i];
    }
    if (add && empty) {
        __atomic_store_n(&seen, 1, __ATOMIC_RELAXED);
        memset(empty, 0, sizeof *empty);
        empty->pool = pool;
        empty->device = GS_DEVICE_CURRENT;
        empty->kind = GS_KIND_DEVICE;
    }
    return add ? empty : NULL;
}

int32_t gs_pool_device(gs_cumempool pool, gs_custream stream, enum gs_kind *kind)
{
    pthread_mutex_lock(&pools_lock);
    struct pool *p = pool ? slot(pool, 0) : NULL;
    int32_t device = p ? p->device : GS_DEVICE_CURRENT;
    *kind = p ? p->kind : GS_KIND_DEVICE;
    pthread_mutex_unlock(&pools_lock);
    if (*kind != GS_KIND_DEVICE)
        return GS_DEVICE_UNKNOWN;
    return device != GS_DEVICE_CURRENT ? device : gs_stream_device(stream);
}

/* Is it time to sample pool? Marks it sampled now if so. */
static int due(gs_cumempool pool, int32_t device, int now)
{
    unsigned every_ms = gs_config()->pool_sample_ms;
    uint64_t t = gs_now_ns();
    pthread_mutex_lock(&pools_lock);
    struct pool *p = slot(pool, 1);
    int is_due = !p || now || !p->sampled_ns || t - p->sampled_ns >= every_ms * 1000000ull;
    if (p && is_due) {
        p->sampled_ns = t;
        if (p->device == GS_DEVICE_CURRENT)
            p->device = device;
    }
    pthread_mutex_unlock(&pools_lock);
    return is_due;
}

static void sample(gs_cumempool pool, int32_t device)
{
    gs_pfn_cuMemPoolGetAttribute get =
        (gs_pfn_cuMemPoolGetAttribute)gs_real(GS_FN_cuMemPoolGetAttribute);
    gs_cuuint64 reserved, used;
    if (get && get(pool, GS_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) == GS_CUDA_SUCCESS &&
        get(pool, GS_CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) == GS_CUDA_SUCCESS)
        gs_record_pool(GS_API_UNKNOWN, device, pool, reserved, used);
}

void gs_pool_note(gs_cumempool pool, int32_t device, int now)
{
    if (gs_recording_off())
        return;
    int saved = errno;
    if (!pool && device >= 0) {
        gs_pfn_cuDeviceGetMemPool current =
            (gs_pfn_cuDeviceGetMemPool)gs_real(GS_FN_cuDeviceGetMemPool);
        if (!current || current(&pool, device) != GS_CUDA_SUCCESS)
            pool = NULL;
    }
    if (pool && due(pool, device, now))
        sample(pool, device);
    errno = saved;
}

int gs_pools_seen(void) { return __atomic_load_n(&seen, __ATOMIC_RELAXED); }

void gs_pool_note_free(int32_t device)
{
    if (gs_recording_off())
        return;
    int saved = errno;
    gs_cumempool on_device[POOLS];
    int n = 0;
    pthread_mutex_lock(&pools_lock);
    for (int i = 0; i < POOLS; i++)
        if (pools[i].pool && pools[i].device == device)
            on_device[n++] = pools[i].pool;
    pthread_mutex_unlock(&pools_lock);
    for (int i = 0; i < n; i++)
        if (due(on_device[i], device, 0))
            sample(on_device[i], device);
    errno = saved;
}

GS_EXPORT gs_curesult cuMemPoolCreate(gs_cumempool *pool, const gs_cumempoolprops *poolProps)
{
    GS_REAL_OR_MISSING(cuMemPoolCreate);
    gs_curesult r = real(pool, poolProps);
    if (r != GS_CUDA_SUCCESS || !pool || !*pool)
        return r;
    int saved = errno;
    int32_t device = GS_DEVICE_CURRENT;
    enum gs_kind kind = GS_KIND_DEVICE;
    if (poolProps && poolProps->location.type == GS_CU_MEM_LOCATION_TYPE_DEVICE)
        device = poolProps->location.id;
    else if (poolProps) { /* on the host: its id is a NUMA node, not a device */
        device = GS_DEVICE_UNKNOWN;
        kind = GS_KIND_HOST_PINNED;
    }
    pthread_mutex_lock(&pools_lock);
    struct pool *p = slot(*pool, 1);
    if (p) {
        p->device = device;
        p->kind = kind;
    }
    pthread_mutex_unlock(&pools_lock);
    /* Sampled without marking it sampled: the first allocation in it, however
     * soon, is sampled too (NCCL's communicator pool is used at once). */
    if (!gs_recording_off())
        sample(*pool, device);
    errno = saved;
    return r;
}

GS_EXPORT gs_curesult cuMemPoolDestroy(gs_cumempool pool)
{
    GS_REAL_OR_MISSING(cuMemPoolDestroy);
    gs_curesult r = real(pool);
    if (r != GS_CUDA_SUCCESS)
        return r;
    int saved = errno;
    pthread_mutex_lock(&pools_lock);
    struct pool *p = slot(pool, 0);
    int32_t device = p ? p->device : GS_DEVICE_CURRENT;
    if (p)
        p->pool = NULL;
    pthread_mutex_unlock(&pools_lock);
    gs_record_pool(GS_API_cuMemPoolDestroy, device, pool, 0, 0);
    errno = saved;
    return r;
}

GS_EXPORT gs_curesult cuMemPoolTrimTo(gs_cumempool pool, size_t minBytesToKeep)
{
    GS_REAL_OR_MISSING(cuMemPoolTrimTo);
    gs_curesult r = real(pool, minBytesToKeep);
    if (r != GS_CUDA_SUCCESS || !pool)
        return r;
    pthread_mutex_lock(&pools_lock);
    struct pool *p = slot(pool, 0);
    int32_t device = p ? p->device : GS_DEVICE_CURRENT;
    pthread_mutex_unlock(&pools_lock);
    gs_pool_note(pool, device, 1); /* keeps errno */
    return r;
}

void gs_pools_lock(void) { pthread_mutex_lock(&pools_lock); }
void gs_pools_unlock(void) { pthread_mutex_unlock(&pools_lock); }

void gs_pools_reset(void)
{
    pthread_mutex_init(&pools_lock, NULL);
    memset(pools, 0, sizeof pools); /* the parent's pools are not the child's */
    __atomic_store_n(&seen, 0, __ATOMIC_RELAXED);
}
