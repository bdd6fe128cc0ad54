/*
 * getproc_hook.c - the wrapped driver entry-point getters: the driver's
 * cuGetProcAddress[_v2], and the runtime's cudaGetDriverEntryPoint[ByVersion]
 * [_ptsz] (which runtime they forward to: hooks_runtime.c).
 *
 * The CUDA runtime (11.3 and later), PyTorch and NCCL get driver functions
 * through cuGetProcAddress(name, &pfn, version, flags[, &status]). We call
 * the real getter with the caller's exact arguments, then, when the name is
 * one of ours, keep the pointer it returned and hand back our wrapper of the
 * same ABI. Which wrapper is decided by what the real getter chose: the
 * exported name of the function it returned when it has one, else the
 * driver's documented mapping of (name, version, flags):
 *
 *   cuMemAlloc, cuMemFree, cuMemAllocPitch  >= 3020 -> the _v2 functions
 *   cuMemAllocAsync, cuMemFreeAsync,
 *   cuMemAllocFromPoolAsync                 per-thread flag -> the _ptsz ones
 *   cuGetProcAddress                        >= 12000 -> the 5-argument _v2,
 *                                           else the 4-argument one
 *   cuStreamBeginCapture                    >= 10010 -> cuStreamBeginCapture_v2
 *   cuStreamBeginCapture, cuStreamEndCapture,
 *   cuGraphLaunch, cuGraphUpload            per-thread flag -> the _ptsz ones
 *   cuGraphInstantiate                      >= 12000 -> cuGraphInstantiateWithFlags
 *   the rest (VMM, multicast, host, arrays, IPC, pools, graphs) from the
 *                                           version each appeared in
 *
 * The table of our wrappers is here (gs_substitute, also for dlsym_hook.c):
 * it takes the address of every wrapper, the getters' among them, so it sits
 * at the top of the shim with the lookups that use it.
 *
 * The getter returns itself too: the runtime asks for "cuGetProcAddress" at
 * 11030 (4 arguments) and at 12000 (5 arguments), one name with two ABIs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "shim/base/base.h"
#include "shim/hooks/hooks.h"
#include "shim/entry/entry.h"

/* The table of our wrappers, by exported name: defined in hooks_*.c and
 * below (the getters). */
#define GS_FN_DECL(name, ret, params) extern ret name params;
GS_DRIVER_HOOKED(GS_FN_DECL)
GS_DRIVER_GETTERS(GS_FN_DECL)
GS_RUNTIME_HOOKED(GS_FN_DECL)
#undef GS_FN_DECL

static void *const wrappers[GS_FN_COUNT] = {
#define GS_FN_WRAP(name, ret, params) [GS_FN_##name] = (void *)name,
    GS_DRIVER_HOOKED(GS_FN_WRAP) GS_DRIVER_GETTERS(GS_FN_WRAP) GS_RUNTIME_HOOKED(GS_FN_WRAP)
#undef GS_FN_WRAP
};

/* Are a and b code of one loaded object? */
static int same_object(void *a, void *b)
{
    Dl_info ia, ib;
    int saved = errno;
    int same = dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase && ia.dli_fbase == ib.dli_fbase;
    errno = saved;
    return same;
}

void *gs_substitute(enum gs_fn fn, void *real)
{
    if (!real || gs_in_shim(real))
        return real; /* already ours (a lookup that found our export) */
    void *held = gs_real_offer(fn, real);
    if (held == real)
        return wrappers[fn] ? wrappers[fn] : real;
    /* Another address for a function we already forward to. The driver's
     * cuGetProcAddress may hand out internal entry points whose addresses
     * are not dlsym's: another entry point of the same object, for the same
     * function and ABI, runs the same code, and calls through it must be
     * recorded too, so it gets the wrapper (which forwards to the first).
     * A definition in another object (a stub library, a program's own
     * cuMemAlloc) is left as it is: the program's calls go where it chose. */
    if (wrappers[fn] && same_object(held, real))
        return wrappers[fn];
    return real;
}

struct getproc_rule {
    const char *name;     /* base name the caller asks for */
    int min_version;      /* below it the driver hands out an older ABI: not ours */
    enum gs_fn fn;        /* the wrapper for the legacy stream / default */
    enum gs_fn fn_ptsz;   /* the wrapper with the per-thread flag */
    int split_version;    /* from this version on, use fn_new */
    enum gs_fn fn_new;
};

static const struct getproc_rule rules[] = {
    {"cuMemAlloc", 3020, GS_FN_cuMemAlloc_v2, GS_FN_cuMemAlloc_v2, 0, GS_FN_cuMemAlloc_v2},
    {"cuMemFree", 3020, GS_FN_cuMemFree_v2, GS_FN_cuMemFree_v2, 0, GS_FN_cuMemFree_v2},
    {"cuMemAllocPitch", 3020, GS_FN_cuMemAllocPitch_v2, GS_FN_cuMemAllocPitch_v2, 0,
     GS_FN_cuMemAllocPitch_v2},
    {"cuMemAllocManaged", 0, GS_FN_cuMemAllocManaged, GS_FN_cuMemAllocManaged, 0,
     GS_FN_cuMemAllocManaged},
    {"cuMemAllocAsync", 0, GS_FN_cuMemAllocAsync, GS_FN_cuMemAllocAsync_ptsz, 0,
     GS_FN_cuMemAllocAsync},
    {"cuMemFreeAsync", 0, GS_FN_cuMemFreeAsync, GS_FN_cuMemFreeAsync_ptsz, 0,
     GS_FN_cuMemFreeAsync},
    {"cuMemAllocFromPoolAsync", 0, GS_FN_cuMemAllocFromPoolAsync,
     GS_FN_cuMemAllocFromPoolAsync_ptsz, 0, GS_FN_cuMemAllocFromPoolAsync},
    {"cuGetProcAddress", 11030, GS_FN_cuGetProcAddress, GS_FN_cuGetProcAddress, 12000,
     GS_FN_cuGetProcAddress_v2},
    {"cuMemGetInfo", 3020, GS_FN_cuMemGetInfo_v2, GS_FN_cuMemGetInfo_v2, 0,
     GS_FN_cuMemGetInfo_v2},
    {"cuCtxGetDevice", 0, GS_FN_cuCtxGetDevice, GS_FN_cuCtxGetDevice, 0, GS_FN_cuCtxGetDevice},
#define SIMPLE(base, version, fn) {base, version, GS_FN_##fn, GS_FN_##fn, 0, GS_FN_##fn}
    SIMPLE("cuMemCreate", 10020, cuMemCreate),
    SIMPLE("cuMemRelease", 10020, cuMemRelease),
    SIMPLE("cuMemRetainAllocationHandle", 11000, cuMemRetainAllocationHandle),
    SIMPLE("cuMemImportFromShareableHandle", 10020, cuMemImportFromShareableHandle),
    SIMPLE("cuMemMap", 10020, cuMemMap),
    SIMPLE("cuMemUnmap", 10020, cuMemUnmap),
    SIMPLE("cuMemAddressReserve", 10020, cuMemAddressReserve),
    SIMPLE("cuMemAddressFree", 10020, cuMemAddressFree),
    SIMPLE("cuMemHostAlloc", 2020, cuMemHostAlloc),
    SIMPLE("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    SIMPLE("cuMemFreeHost", 2000, cuMemFreeHost),
    SIMPLE("cuMemHostRegister", 6050, cuMemHostRegister_v2),
    SIMPLE("cuMemHostUnregister", 4000, cuMemHostUnregister),
    SIMPLE("cuArrayCreate", 3020, cuArrayCreate_v2),
    SIMPLE("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    SIMPLE("cuArrayDestroy", 2000, cuArrayDestroy),
    SIMPLE("cuMipmappedArrayCreate", 5000, cuMipmappedArrayCreate),
    SIMPLE("cuMipmappedArrayDestroy", 5000, cuMipmappedArrayDestroy),
    SIMPLE("cuIpcOpenMemHandle", 11000, cuIpcOpenMemHandle_v2),
    SIMPLE("cuIpcCloseMemHandle", 4010, cuIpcCloseMemHandle),
    SIMPLE("cuMemPoolCreate", 11020, cuMemPoolCreate),
    SIMPLE("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    SIMPLE("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    SIMPLE("cuMulticastCreate", 12010, cuMulticastCreate),
    SIMPLE("cuStreamGetDevice", 12080, cuStreamGetDevice),
    SIMPLE("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    SIMPLE("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    SIMPLE("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    {"cuStreamBeginCapture", 10010, GS_FN_cuStreamBeginCapture_v2,
     GS_FN_cuStreamBeginCapture_v2_ptsz, 0, GS_FN_cuStreamBeginCapture_v2},
    {"cuStreamEndCapture", 10000, GS_FN_cuStreamEndCapture, GS_FN_cuStreamEndCapture_ptsz, 0,
     GS_FN_cuStreamEndCapture},
    {"cuGraphUpload", 11010, GS_FN_cuGraphUpload, GS_FN_cuGraphUpload_ptsz, 0, GS_FN_cuGraphUpload},
    {"cuGraphLaunch", 10000, GS_FN_cuGraphLaunch, GS_FN_cuGraphLaunch_ptsz, 0, GS_FN_cuGraphLaunch},
    SIMPLE("cuGraphAddMemAllocNode", 11040, cuGraphAddMemAllocNode),
    SIMPLE("cuGraphAddMemFreeNode", 11040, cuGraphAddMemFreeNode),
    SIMPLE("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    SIMPLE("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
    SIMPLE("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    SIMPLE("cuGraphDestroy", 10000, cuGraphDestroy),
    SIMPLE("cuDeviceGraphMemTrim", 11040, cuDeviceGraphMemTrim),
    SIMPLE("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
    SIMPLE("cuDeviceGetGraphMemAttribute", 11040, cuDeviceGetGraphMemAttribute),
#undef SIMPLE
};

static int by_rule(const char *symbol, int version, gs_cuuint64 flags)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const struct getproc_rule *r = &rules[i];
        if (strcmp(symbol, r->name) != 0)
            continue;
        if (version < r->min_version)
            return -1;
        if (r->split_version && version >= r->split_version)
            return (int)r->fn_new;
        return (int)((flags & GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? r->fn_ptsz
                                                                                : r->fn);
    }
    return -1;
}

void *gs_getproc_substitute(const char *symbol, void *real, int version, gs_cuuint64 flags)
{
    if (!symbol || !real || symbol[0] != 'c' || symbol[1] != 'u')
        return real;
    int saved = errno;
    int fn = by_rule(symbol, version, flags);
    if (fn < 0)
        return real;
    Dl_info info; /* the real getter's own choice, when it names it */
    if (dladdr(real, &info) && info.dli_sname && info.dli_saddr == real) {
        int named = gs_fn_by_name(info.dli_sname);
        if (named >= 0 && strncmp(info.dli_sname, symbol, strlen(symbol)) == 0)
            fn = named;
    }
    errno = saved;
    return gs_substitute((enum gs_fn)fn, real);
}

static void set_status(gs_cuprocstatus *status, gs_cuprocstatus v)
{
    if (status)
        *status = v;
}

GS_EXPORT gs_curesult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                          gs_cuuint64 flags, gs_cuprocstatus *symbolStatus)
{
    gs_pfn_cuGetProcAddress_v2 real = gs_real(GS_FN_cuGetProcAddress_v2);
    if (!real) {
        set_status(symbolStatus, GS_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        return GS_CUDA_ERROR_NOT_FOUND;
    }
    gs_curesult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == GS_CUDA_SUCCESS && pfn)
        *pfn = gs_getproc_substitute(symbol, *pfn, cudaVersion, flags);
    return r;
}

GS_EXPORT gs_curesult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                       gs_cuuint64 flags)
{
    gs_pfn_cuGetProcAddress real = gs_real(GS_FN_cuGetProcAddress);
    if (!real)
        return GS_CUDA_ERROR_NOT_FOUND;
    gs_curesult r = real(symbol, pfn, cudaVersion, flags);
    if (r == GS_CUDA_SUCCESS && pfn)
        *pfn = gs_getproc_substitute(symbol, *pfn, cudaVersion, flags);
    return r;
}

/* cudaGetDriverEntryPoint[ByVersion][_ptsz]: PyTorch and NCCL reach the
 * driver through these. The runtime asks the driver's getter, which is
 * normally ours already; where it is not (a runtime that found the getter
 * before the shim could see it), the pointer is swapped here. Without a
 * version, the runtime's own (13.0) is assumed when the returned function's
 * exported name does not say. */
static gs_cudaerror entry_point(gs_cudaerror r, const char *symbol, void **funcPtr, int version,
                                unsigned long long flags)
{
    if (r == GS_cudaSuccess && funcPtr)
        *funcPtr = gs_getproc_substitute(symbol, *funcPtr, version, flags);
    return r;
}

#define ENTRY_POINT(name, version, call)                                                          \
    do {                                                                                           \
        gs_pfn_##name real =                                                                       \
            (gs_pfn_##name)gs_runtime_real(GS_FN_##name, __builtin_return_address(0));             \
        if (!real)                                                                                 \
            return gs_runtime_missing(GS_FN_##name);                                               \
        return entry_point(call, symbol, funcPtr, (int)(version), flags);                          \
    } while (0)

GS_EXPORT gs_cudaerror cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                               unsigned long long flags,
                                               gs_cudaentrystatus *driverStatus)
{
    ENTRY_POINT(cudaGetDriverEntryPoint, 13000, real(symbol, funcPtr, flags, driverStatus));
}

GS_EXPORT gs_cudaerror cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                                    unsigned long long flags,
                                                    gs_cudaentrystatus *driverStatus)
{
    ENTRY_POINT(cudaGetDriverEntryPoint_ptsz, 13000, real(symbol, funcPtr, flags, driverStatus));
}

GS_EXPORT gs_cudaerror cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                        unsigned int cudaVersion,
                                                        unsigned long long flags,
                                                        gs_cudaentrystatus *driverStatus)
{
    ENTRY_POINT(cudaGetDriverEntryPointByVersion, cudaVersion,
                real(symbol, funcPtr, cudaVersion, flags, driverStatus));
}

GS_EXPORT gs_cudaerror cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                             unsigned int cudaVersion,
                                                             unsigned long long flags,
                                                             gs_cudaentrystatus *driverStatus)
{
    ENTRY_POINT(cudaGetDriverEntryPointByVersion_ptsz, cudaVersion,
                real(symbol, funcPtr, cudaVersion, flags, driverStatus));
}
