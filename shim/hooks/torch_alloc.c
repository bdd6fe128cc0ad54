/*
 * torch_alloc.c - PyTorch's pluggable allocator, served and recorded.
 *
 * PyTorch can take its device memory from two functions in a shared object
 * (torch.cuda.memory.CUDAPluggableAllocator, docs/api.md "PyTorch pluggable
 * allocator"): libgpushim.so exports them, so that every tensor storage is
 * one driver allocation, recorded with its own api label and the stack of
 * the code that made it, where PyTorch's caching allocator would show
 * segments.
 *
 *   void *gpushim_torch_alloc(size_t size, int device, cudaStream_t stream)
 *   void gpushim_torch_free(void *ptr, size_t size, int device, cudaStream_t stream)
 *
 * Memory comes from the device's default stream-ordered pool, ordered on
 * the caller's stream (the real cuMemAllocAsync and cuMemFreeAsync, as
 * PyTorch's backend:cudaMallocAsync does), with device's primary context
 * current for the call and the caller's context put back after it. The
 * primary context is retained once per device and kept, as the CUDA runtime
 * keeps it. A failed allocation returns NULL (PyTorch raises its
 * out-of-memory error) and is recorded with the device's free and total
 * memory. A request of 0 bytes gets NULL and is not recorded, as PyTorch's
 * own allocator answers it; freeing NULL does nothing.
 *
 * What PyTorch's backend:cudaMallocAsync does besides, so that training
 * runs as under it (c10/cuda/CUDAMallocAsyncAllocator.cpp):
 *   - On first use of a device (lazy_init_device): the release threshold of
 *     the device's default pool set to UINT64_MAX ("uint64_t threshold =
 *     UINT64_MAX; cudaMemPoolSetAttribute(mempool,
 *     cudaMemPoolAttrReleaseThreshold, &threshold)"), so that the pool keeps
 *     what it reserved instead of giving it back at every synchronize. The
 *     reuse attributes it also sets to 1 are the driver's defaults; they
 *     are left as the program has them.
 *   - Stream safety (recordStream, free_impl): PyTorch calls the free
 *     function with the stream the tensor was allocated on, and tells the
 *     allocator of the other streams that use it only through the optional
 *     record_stream function, which a library installs from Python
 *     (CUDAPluggableAllocator.allocator().set_record_stream_fn, docs/api.md).
 *     gpushim_torch_record_stream remembers (pointer, stream) pairs; a free
 *     of a pointer with pairs makes a per-device "unifying" stream (created
 *     on first need, non-blocking) wait on events recorded on the
 *     allocation stream and on each recorded stream, then frees on it,
 *     exactly free_impl's sync_raw sequence (an event of a recorded
 *     stream on another device is made in that device's context). Only
 *     tensors given to record_stream pay for it (on the simulated driver,
 *     about 4 us more per free: two events); other frees read one counter.
 *     If the ordering cannot be set up, the context is synchronized before
 *     the free instead (safe, slow, said once). Without set_record_stream_fn,
 *     PyTorch's record_stream does nothing under a pluggable allocator and
 *     such a tensor is freed on its allocation stream only.
 *   - gpushim_torch_empty_cache, installed with set_reset_fn, is emptyCache:
 *     for each device used, a context synchronize then cuMemPoolTrimTo(0)
 *     of the default pool; the pool is sampled after it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks_int.h"

#define MAX_DEVICES 1024
#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DISABLE_TIMING 2

static gs_cucontext primary[MAX_DEVICES]; /* retained once each, accessed atomically */
static char ready[MAX_DEVICES];           /* threshold set; accessed atomically */
static gs_custream unifier[MAX_DEVICES];  /* under order_lock */

/* (pointer, stream) pairs from gpushim_torch_record_stream. */
struct recorded {
    void *ptr;
    gs_custream stream;
};
static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static struct recorded *recs;
static size_t nrecs, recs_cap; /* nrecs also read atomically, without the lock */

struct driver {
    gs_pfn_cuCtxGetCurrent get;
    gs_pfn_cuCtxSetCurrent set;
    gs_pfn_cuDevicePrimaryCtxRetain retain;
    gs_pfn_cuMemAllocAsync alloc;
    gs_pfn_cuMemFreeAsync free;
};

/* The real functions, or 0 when the driver is not loaded (said once). */
static int driver(struct driver *d, const char *caller)
{
    d->get = (gs_pfn_cuCtxGetCurrent)gs_real(GS_FN_cuCtxGetCurrent);
    d->set = (gs_pfn_cuCtxSetCurrent)gs_real(GS_FN_cuCtxSetCurrent);
    d->retain = (gs_pfn_cuDevicePrimaryCtxRetain)gs_real(GS_FN_cuDevicePrimaryCtxRetain);
    d->alloc = (gs_pfn_cuMemAllocAsync)gs_real(GS_FN_cuMemAllocAsync);
    d->free = (gs_pfn_cuMemFreeAsync)gs_real(GS_FN_cuMemFreeAsync);
    if (d->get && d->set && d->retain && d->alloc && d->free)
        return 1;
    static int once;
    gs_warn_once(&once, "%s called but no CUDA driver is loaded", caller);
    return 0;
}

/* The primary context of device, retained on first use. */
static gs_curesult primary_context(const struct driver *d, int device, gs_cucontext *out)
{
    if (device < 0 || device >= MAX_DEVICES)
        return GS_CUDA_ERROR_INVALID_DEVICE;
    gs_cucontext ctx = __atomic_load_n(&primary[device], __ATOMIC_ACQUIRE);
    if (!ctx) {
        gs_curesult r = d->retain(&ctx, device);
        if (r != GS_CUDA_SUCCESS)
            return r;
        gs_cucontext expected = NULL;
        /* a thread that lost the race holds one more reference: harmless,
         * as the context is kept for the life of the process anyway */
        if (!__atomic_compare_exchange_n(&primary[device], &expected, ctx, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            ctx = expected;
    }
    *out = ctx;
    return GS_CUDA_SUCCESS;
}

/* Makes device's primary context current; *prev: what to put back. */
static gs_curesult enter(const struct driver *d, int device, gs_cucontext *prev,
                         gs_cucontext *ctx)
{
    gs_curesult r = primary_context(d, device, ctx);
    if (r != GS_CUDA_SUCCESS)
        return r;
    if (d->get(prev) != GS_CUDA_SUCCESS)
        *prev = NULL;
    if (*prev != *ctx && (r = d->set(*ctx)) != GS_CUDA_SUCCESS)
        return r;
    return GS_CUDA_SUCCESS;
}

static void leave(const struct driver *d, gs_cucontext prev, gs_cucontext ctx)
{
    if (prev != ctx)
        d->set(prev);
}

/* lazy_init_device's release threshold, once per device (its context
 * current). */
static void device_ready(int device)
{
    if (__atomic_load_n(&ready[device], __ATOMIC_ACQUIRE))
        return;
    gs_pfn_cuDeviceGetDefaultMemPool get =
        (gs_pfn_cuDeviceGetDefaultMemPool)gs_real(GS_FN_cuDeviceGetDefaultMemPool);
    gs_pfn_cuMemPoolSetAttribute set =
        (gs_pfn_cuMemPoolSetAttribute)gs_real(GS_FN_cuMemPoolSetAttribute);
    gs_cumempool pool;
    gs_cuuint64 threshold = UINT64_MAX;
    if (!get || !set || get(&pool, device) != GS_CUDA_SUCCESS ||
        set(pool, GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) != GS_CUDA_SUCCESS) {
        static int once;
        gs_warn_once(&once, "gpushim_torch_alloc: could not set the release threshold of device "
                            "%d's default pool; it gives memory back at each synchronize",
                     device);
    }
    __atomic_store_n(&ready[device], 1, __ATOMIC_RELEASE); /* tried once, as PyTorch does */
}

GS_EXPORT void *gpushim_torch_alloc(size_t size, int device, gs_custream stream)
{
    int saved = errno;
    struct driver d;
    if (!size || !driver(&d, "gpushim_torch_alloc")) {
        errno = saved;
        return NULL;
    }
    gs_cucontext prev = NULL, ctx = NULL;
    gs_cudeviceptr ptr = 0;
    gs_curesult r = enter(&d, device, &prev, &ctx);
    if (r != GS_CUDA_SUCCESS) {
        /* not even the context: recorded on the device asked for, if any */
        gs_record_alloc_failed(GS_API_gpushim_torch_alloc,
                               device >= 0 ? device : GS_DEVICE_UNKNOWN, size, stream, r);
        errno = saved;
        return NULL;
    }
    device_ready(device);
    r = d.alloc(&ptr, size, stream);
    int32_t on = gs_stream_device(stream); /* the stream's device, else the context's */
    gs_pool_note(NULL, on, r != GS_CUDA_SUCCESS);
    /* while the context is current: a failure's free and total are of it */
    gs_after_alloc(GS_API_gpushim_torch_alloc, GS_KIND_DEVICE, GS_SPACE_ADDRESS, on, r, &ptr, size,
                   stream);
    leave(&d, prev, ctx);
    errno = saved;
    return r == GS_CUDA_SUCCESS ? (void *)(uintptr_t)ptr : NULL;
}

/* The streams recorded for ptr other than `except`, forgotten; how many
 * (at most max in out, the count beyond max too). */
static size_t take_recorded(void *ptr, gs_custream except, gs_custream *out, size_t max)
{
    size_t n = 0;
    if (!__atomic_load_n(&nrecs, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&order_lock);
    for (size_t i = nrecs; i-- > 0;) {
        if (recs[i].ptr != ptr)
            continue;
        if (recs[i].stream != except && n++ < max)
            out[n - 1] = recs[i].stream;
        recs[i] = recs[nrecs - 1];
        __atomic_store_n(&nrecs, nrecs - 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&order_lock);
    return n;
}

/* CUDAMallocAsyncAllocator.cpp's sync_raw: `dependent` waits for what was
 * enqueued on `dependency` so far. */
static int sync_raw(gs_custream dependency, gs_custream dependent)
{
    gs_pfn_cuEventCreate create = (gs_pfn_cuEventCreate)gs_real(GS_FN_cuEventCreate);
    gs_pfn_cuEventRecord record = (gs_pfn_cuEventRecord)gs_real(GS_FN_cuEventRecord);
    gs_pfn_cuStreamWaitEvent wait = (gs_pfn_cuStreamWaitEvent)gs_real(GS_FN_cuStreamWaitEvent);
    gs_pfn_cuEventDestroy_v2 destroy = (gs_pfn_cuEventDestroy_v2)gs_real(GS_FN_cuEventDestroy_v2);
    gs_cuevent event;
    if (!create || !record || !wait || !destroy ||
        create(&event, CU_EVENT_DISABLE_TIMING) != GS_CUDA_SUCCESS)
        return -1;
    int ok = record(event, dependency) == GS_CUDA_SUCCESS &&
             wait(dependent, event, 0) == GS_CUDA_SUCCESS;
    destroy(event);
    return ok ? 0 : -1;
}

/* sync_raw from a stream that may be on another device than `device`,
 * whose context is current: the event is that stream's device's, made and
 * recorded in its context (free_impl's CUDAGuard g_usage). */
static int sync_from(const struct driver *d, int device, gs_custream used, gs_custream unify)
{
    int32_t on = gs_stream_device(used);
    gs_cucontext prev = NULL, ctx = NULL;
    if (on < 0 || on == device)
        return sync_raw(used, unify);
    if (enter(d, on, &prev, &ctx) != GS_CUDA_SUCCESS)
        return -1;
    int r = sync_raw(used, unify);
    leave(d, prev, ctx);
    return r;
}

/* The stream ptr is to be freed on, allocated on `stream` and used on the
 * recorded ones: `stream` itself, or device's unifying stream after all of
 * them (free_impl); device's context is current. */
static gs_custream free_stream(const struct driver *d, void *ptr, int device, gs_custream stream)
{
    gs_custream used[16];
    size_t n = take_recorded(ptr, stream, used, 16);
    if (!n)
        return stream;
    pthread_mutex_lock(&order_lock);
    gs_custream unify = unifier[device];
    gs_pfn_cuStreamCreate create = (gs_pfn_cuStreamCreate)gs_real(GS_FN_cuStreamCreate);
    if (!unify && create && create(&unify, CU_STREAM_NON_BLOCKING) != GS_CUDA_SUCCESS)
        unify = NULL;
    unifier[device] = unify;
    pthread_mutex_unlock(&order_lock);
    int ok = unify && n <= 16 && sync_raw(stream, unify) == 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = sync_from(d, device, used[i], unify) == 0;
    if (ok)
        return unify;
    gs_pfn_cuCtxSynchronize sync = (gs_pfn_cuCtxSynchronize)gs_real(GS_FN_cuCtxSynchronize);
    static int once;
    gs_warn_once(&once, "gpushim_torch_free(%p, device %d): could not order the free after the "
                        "streams that used it; synchronizing the device instead", ptr, device);
    if (sync)
        sync();
    return stream;
}

GS_EXPORT void gpushim_torch_free(void *ptr, size_t size, int device, gs_custream stream)
{
    (void)size; /* the allocation's own size is recorded */
    int saved = errno;
    struct driver d;
    if (!ptr || !driver(&d, "gpushim_torch_free")) {
        errno = saved;
        return;
    }
    gs_cucontext prev = NULL, ctx = NULL;
    gs_curesult r = enter(&d, device, &prev, &ctx);
    gs_cudeviceptr p = (gs_cudeviceptr)(uintptr_t)ptr;
    if (r == GS_CUDA_SUCCESS) {
        stream = free_stream(&d, ptr, device, stream);
        gs_record_free(GS_API_gpushim_torch_free, GS_SPACE_ADDRESS, p, stream);
        r = d.free(p, stream);
        gs_after_free(GS_API_gpushim_torch_free, GS_SPACE_ADDRESS, p, stream, r);
        gs_pool_note_free(gs_stream_device(stream));
        leave(&d, prev, ctx);
    }
    if (r != GS_CUDA_SUCCESS) {
        static int once;
        gs_warn_once(&once, "gpushim_torch_free(%p, device %d): the driver refused it (%d); "
                            "the memory is still held", ptr, device, r);
    }
    errno = saved;
}

/* set_record_stream_fn's function: stream uses ptr, so its free must wait
 * for stream (recordStream). Unknown pointers are remembered all the same:
 * the free function is what finds them. */
GS_EXPORT void gpushim_torch_record_stream(void *ptr, gs_custream stream)
{
    int saved = errno;
    if (ptr) {
        pthread_mutex_lock(&order_lock);
        int have = 0;
        for (size_t i = 0; i < nrecs && !have; i++)
            have = recs[i].ptr == ptr && recs[i].stream == stream;
        if (!have && nrecs == recs_cap) {
            size_t cap = recs_cap ? recs_cap * 2 : 64;
            struct recorded *v = realloc(recs, cap * sizeof *v);
            if (v) {
                recs = v;
                recs_cap = cap;
            }
        }
        if (!have && nrecs < recs_cap) {
            recs[nrecs] = (struct recorded){ptr, stream};
            __atomic_store_n(&nrecs, nrecs + 1, __ATOMIC_RELEASE);
        } else if (!have) {
            static int once;
            gs_warn_once(&once, "gpushim_torch_record_stream: out of memory; a free may not wait "
                                "for the streams that used the tensor");
        }
        pthread_mutex_unlock(&order_lock);
    }
    errno = saved;
}

/* set_reset_fn's function: emptyCache, on every device this allocator has
 * used. */
GS_EXPORT void gpushim_torch_empty_cache(void)
{
    int saved = errno;
    struct driver d;
    gs_pfn_cuCtxSynchronize sync = (gs_pfn_cuCtxSynchronize)gs_real(GS_FN_cuCtxSynchronize);
    gs_pfn_cuDeviceGetDefaultMemPool get =
        (gs_pfn_cuDeviceGetDefaultMemPool)gs_real(GS_FN_cuDeviceGetDefaultMemPool);
    gs_pfn_cuMemPoolTrimTo trim = (gs_pfn_cuMemPoolTrimTo)gs_real(GS_FN_cuMemPoolTrimTo);
    if (!driver(&d, "gpushim_torch_empty_cache") || !sync || !get || !trim) {
        errno = saved;
        return;
    }
    for (int device = 0; device < MAX_DEVICES; device++) {
        gs_cucontext prev = NULL, ctx = NULL;
        gs_cumempool pool;
        if (!__atomic_load_n(&ready[device], __ATOMIC_ACQUIRE) ||
            enter(&d, device, &prev, &ctx) != GS_CUDA_SUCCESS)
            continue;
        sync();
        if (get(&pool, device) == GS_CUDA_SUCCESS && trim(pool, 0) == GS_CUDA_SUCCESS)
            gs_pool_note(pool, device, 1);
        leave(&d, prev, ctx);
    }
    errno = saved;
}
