/*
 * hooks_runtime.c - the CUDA runtime's allocation functions, used as labels,
 * and which runtime a call of the program's goes to (gs_runtime_real, also
 * for the runtime's driver entry-point getters in getproc_hook.c).
 *
 * The runtime's cudaMalloc ends in the driver's cuMemAlloc_v2, where the
 * event is recorded. These wrappers only say, for the driver calls they
 * cause, which API the program called: one cudaMalloc is one event,
 * labelled cudaMalloc. A statically linked runtime never reaches them; its
 * events are labelled with the driver function.
 *
 * Which runtime: the one the caller would have reached. A library opened
 * with RTLD_LOCAL (a Python extension) binds its cudaMalloc to our export,
 * while its runtime is in its own scope, not after the shim; and a process
 * may hold two runtimes. So the real function is looked up in the scope of
 * the caller's object, and only for the program's own scope (where the
 * lookup finds our export) is it the next definition after the shim. The
 * answer is cached by call site.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>

#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks.h"

#define SITES 256

static struct {
    const void *caller;
    int fn;
    void *real;
} sites[SITES];
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;

/* The definition of fn in the scope of the object holding caller. */
static void *in_callers_scope(enum gs_fn fn, const void *caller)
{
    struct link_map *lm = gs_link_map_of(caller);
    void *p = lm ? gs_lookup_in_scope(lm, gs_fn_name(fn)) : NULL;
    return p && !gs_in_shim(p) ? p : NULL;
}

void gs_runtime_lock(void) { pthread_mutex_lock(&sites_lock); }
void gs_runtime_unlock(void) { pthread_mutex_unlock(&sites_lock); }
void gs_runtime_reset_after_fork(void) { pthread_mutex_init(&sites_lock, NULL); }

void *gs_runtime_real(enum gs_fn fn, const void *caller)
{
    size_t slot = ((uintptr_t)caller >> 4 ^ (uintptr_t)fn * 0x9e37u) % SITES;
    void *p = NULL;
    gs_lineage_check(); /* a clone() child: not the parent's lock, held at the clone */
    pthread_mutex_lock(&sites_lock);
    if (sites[slot].caller == caller && sites[slot].fn == (int)fn)
        p = sites[slot].real;
    pthread_mutex_unlock(&sites_lock);
    if (p)
        return p;
    int saved = errno;
    p = in_callers_scope(fn, caller);
    if (!p)
        p = gs_real(fn);
    errno = saved;
    if (p) {
        pthread_mutex_lock(&sites_lock);
        sites[slot].caller = caller;
        sites[slot].fn = (int)fn;
        sites[slot].real = p;
        pthread_mutex_unlock(&sites_lock);
    }
    return p;
}

gs_cudaerror gs_runtime_missing(enum gs_fn fn)
{
    static int once;
    gs_warn_once(&once, "%s called but no CUDA runtime follows the shim", gs_fn_name(fn));
    return GS_cudaErrorInitializationError;
}

#define LABELLED(name, call)                                                                       \
    do {                                                                                           \
        gs_pfn_##name real =                                                                       \
            (gs_pfn_##name)gs_runtime_real(GS_FN_##name, __builtin_return_address(0));             \
        if (!real)                                                                                 \
            return gs_runtime_missing(GS_FN_##name);                                               \
        gs_label_push(GS_API_##name);                                                              \
        gs_cudaerror r = call;                                                                     \
        gs_label_pop();                                                                            \
        return r;                                                                                  \
    } while (0)

GS_EXPORT gs_cudaerror cudaMalloc(void **devPtr, size_t size)
{
    LABELLED(cudaMalloc, real(devPtr, size));
}

GS_EXPORT gs_cudaerror cudaFree(void *devPtr) { LABELLED(cudaFree, real(devPtr)); }

GS_EXPORT gs_cudaerror cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    LABELLED(cudaMallocPitch, real(devPtr, pitch, width, height));
}

GS_EXPORT gs_cudaerror cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    LABELLED(cudaMallocManaged, real(devPtr, size, flags));
}

GS_EXPORT gs_cudaerror cudaMallocAsync(void **devPtr, size_t size, gs_custream hStream)
{
    LABELLED(cudaMallocAsync, real(devPtr, size, hStream));
}

GS_EXPORT gs_cudaerror cudaMallocAsync_ptsz(void **devPtr, size_t size, gs_custream hStream)
{
    LABELLED(cudaMallocAsync_ptsz, real(devPtr, size, hStream));
}

GS_EXPORT gs_cudaerror cudaFreeAsync(void *devPtr, gs_custream hStream)
{
    LABELLED(cudaFreeAsync, real(devPtr, hStream));
}

GS_EXPORT gs_cudaerror cudaFreeAsync_ptsz(void *devPtr, gs_custream hStream)
{
    LABELLED(cudaFreeAsync_ptsz, real(devPtr, hStream));
}

GS_EXPORT gs_cudaerror cudaMallocHost(void **ptr, size_t size)
{
    LABELLED(cudaMallocHost, real(ptr, size));
}

GS_EXPORT gs_cudaerror cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    LABELLED(cudaHostAlloc, real(pHost, size, flags));
}

GS_EXPORT gs_cudaerror cudaFreeHost(void *ptr) { LABELLED(cudaFreeHost, real(ptr)); }

GS_EXPORT gs_cudaerror cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    LABELLED(cudaHostRegister, real(ptr, size, flags));
}

GS_EXPORT gs_cudaerror cudaHostUnregister(void *ptr) { LABELLED(cudaHostUnregister, real(ptr)); }

GS_EXPORT gs_cudaerror cudaMalloc3D(gs_cudapitchedptr *pitchedDevPtr, gs_cudaextent extent)
{
    LABELLED(cudaMalloc3D, real(pitchedDevPtr, extent));
}

GS_EXPORT gs_cudaerror cudaMallocArray(gs_cudaarray *array, const gs_cudachannelformatdesc *desc,
                                       size_t width, size_t height, unsigned int flags)
{
    LABELLED(cudaMallocArray, real(array, desc, width, height, flags));
}

GS_EXPORT gs_cudaerror cudaMalloc3DArray(gs_cudaarray *array, const gs_cudachannelformatdesc *desc,
                                         gs_cudaextent extent, unsigned int flags)
{
    LABELLED(cudaMalloc3DArray, real(array, desc, extent, flags));
}

GS_EXPORT gs_cudaerror cudaFreeArray(gs_cudaarray array) { LABELLED(cudaFreeArray, real(array)); }

GS_EXPORT gs_cudaerror cudaMallocFromPoolAsync(void **ptr, size_t size, gs_cumempool memPool,
                                               gs_custream stream)
{
    LABELLED(cudaMallocFromPoolAsync, real(ptr, size, memPool, stream));
}

GS_EXPORT gs_cudaerror cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, gs_cumempool memPool,
                                                    gs_custream stream)
{
    LABELLED(cudaMallocFromPoolAsync_ptsz, real(ptr, size, memPool, stream));
}

GS_EXPORT gs_cudaerror cudaMemPoolCreate(gs_cumempool *memPool,
                                         const gs_cudamempoolprops *poolProps)
{
    LABELLED(cudaMemPoolCreate, real(memPool, poolProps));
}

GS_EXPORT gs_cudaerror cudaMemPoolDestroy(gs_cumempool memPool)
{
    LABELLED(cudaMemPoolDestroy, real(memPool));
}
