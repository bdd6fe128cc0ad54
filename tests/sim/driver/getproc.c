/*
 * getproc.c - Driver Entry Point Access: cuGetProcAddress[_v2] and its table of the driver's
 * own functions, and the internal entry points it hands out.
 *
 * Design
 *   - cuGetProcAddress resolves base names through a table of the driver's
 *     own functions, static or hidden (sim.h), never through the dynamic
 *     linker: a preloaded interposer exports the same names, and must get
 *     the driver's code. Exported names are aliases of those functions for
 *     the same reason (taking an exported function's address inside a shared
 *     object would go through the GOT, which an interposer overrides).
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"

typedef void (*sim_fn)(void);
#define FN(f) ((sim_fn)(f))

/* Internal entry points. NVIDIA's driver may hand out from cuGetProcAddress
 * internal entry points whose addresses are not what dlsym gives for the
 * same name; so does this one for the calls that allocate and free: each a
 * function of its own, at an address of its own, that runs the same code.
 * An interposer must record calls through either (issue 15, item 5). */
#define ENTRY(name, params, args)                                                                  \
    __attribute__((noinline)) static gs_curesult entry_##name params                              \
    {                                                                                              \
        __asm__ volatile("");                                                                      \
        return sim_##name args;                                                                    \
    }
ENTRY(cuMemAlloc_v2, (gs_cudeviceptr * dptr, size_t bytesize), (dptr, bytesize))
ENTRY(cuMemFree_v2, (gs_cudeviceptr dptr), (dptr))
ENTRY(cuMemAllocAsync, (gs_cudeviceptr * dptr, size_t bytesize, gs_custream s), (dptr, bytesize, s))
ENTRY(cuMemFreeAsync, (gs_cudeviceptr dptr, gs_custream s), (dptr, s))
#undef ENTRY

/* Base name -> the function of the newest ABI whose first CUDA version is
 * at most the caller's. Rows of one name go newest first. Older ABIs that
 * differ (32-bit sizes) are not simulated: asking for them gives
 * VERSION_NOT_SUFFICIENT; older rows with the same ABI share the function. */
static const struct proc {
    const char *name;
    int version;
    sim_fn fn, ptsz;
} procs[] = {
    {"cuInit", 2000, FN(sim_cuInit), NULL},
    {"cuDriverGetVersion", 2020, FN(sim_cuDriverGetVersion), NULL},
    {"cuGetErrorString", 6000, FN(sim_cuGetErrorString), NULL},
    {"cuGetErrorName", 6000, FN(sim_cuGetErrorName), NULL},
    {"cuDeviceGetCount", 2000, FN(sim_cuDeviceGetCount), NULL},
    {"cuDeviceGet", 2000, FN(sim_cuDeviceGet), NULL},
    {"cuDeviceGetAttribute", 2000, FN(sim_cuDeviceGetAttribute), NULL},
    {"cuDeviceGetName", 2000, FN(sim_cuDeviceGetName), NULL},
    {"cuDeviceTotalMem", 3020, FN(sim_cuDeviceTotalMem_v2), NULL},
    {"cuDeviceGetDefaultMemPool", 11020, FN(sim_cuDeviceGetDefaultMemPool), NULL},
    {"cuDeviceGetMemPool", 11020, FN(sim_cuDeviceGetMemPool), NULL},
    {"cuDeviceSetMemPool", 11020, FN(sim_cuDeviceSetMemPool), NULL},
    {"cuDevicePrimaryCtxRetain", 7000, FN(sim_cuDevicePrimaryCtxRetain), NULL},
    {"cuDevicePrimaryCtxRelease", 11000, FN(sim_cuDevicePrimaryCtxRelease_v2), NULL},
    {"cuCtxSetCurrent", 4000, FN(sim_cuCtxSetCurrent), NULL},
    {"cuCtxGetCurrent", 4000, FN(sim_cuCtxGetCurrent), NULL},
    {"cuCtxGetDevice", 13000, FN(ctx_get_device_v2), NULL},
    {"cuCtxGetDevice", 2000, FN(sim_cuCtxGetDevice), NULL},
    {"cuCtxSynchronize", 13000, FN(ctx_synchronize_v2), NULL},
    {"cuCtxSynchronize", 2000, FN(sim_cuCtxSynchronize), NULL},
    {"cuStreamCreate", 2000, FN(sim_cuStreamCreate), NULL},
    {"cuStreamDestroy", 4000, FN(sim_cuStreamDestroy_v2), NULL},
    {"cuStreamDestroy", 2000, FN(sim_cuStreamDestroy_v2), NULL},
    {"cuStreamSynchronize", 2000, FN(sim_cuStreamSynchronize), FN(sim_cuStreamSynchronize_ptsz)},
    {"cuStreamGetDevice", 12080, FN(sim_cuStreamGetDevice), FN(sim_cuStreamGetDevice_ptsz)},
    {"cuStreamGetCtx", 12050, FN(sim_cuStreamGetCtx_v2), FN(sim_cuStreamGetCtx_v2_ptsz)},
    {"cuStreamGetCtx", 9020, FN(sim_cuStreamGetCtx), FN(sim_cuStreamGetCtx_ptsz)},
    {"cuEventCreate", 2000, FN(sim_cuEventCreate), NULL},
    {"cuEventDestroy", 4000, FN(sim_cuEventDestroy_v2), NULL},
    {"cuEventRecord", 2000, FN(sim_cuEventRecord), FN(sim_cuEventRecord_ptsz)},
    {"cuStreamWaitEvent", 3020, FN(sim_cuStreamWaitEvent), FN(sim_cuStreamWaitEvent_ptsz)},
    {"cuEventSynchronize", 2000, FN(sim_cuEventSynchronize), NULL},
    {"cuEventQuery", 2000, FN(sim_cuEventQuery), NULL},
    {"cuMemGetInfo", 3020, FN(sim_cuMemGetInfo_v2), NULL},
    {"cuMemAlloc", 3020, FN(entry_cuMemAlloc_v2), NULL},
    {"cuMemFree", 3020, FN(entry_cuMemFree_v2), NULL},
    {"cuMemAllocPitch", 3020, FN(sim_cuMemAllocPitch_v2), NULL},
    {"cuMemAllocManaged", 6000, FN(sim_cuMemAllocManaged), NULL},
    {"cuMemAllocAsync", 11020, FN(entry_cuMemAllocAsync), FN(sim_cuMemAllocAsync_ptsz)},
    {"cuMemFreeAsync", 11020, FN(entry_cuMemFreeAsync), FN(sim_cuMemFreeAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", 11020, FN(sim_cuMemAllocFromPoolAsync),
     FN(sim_cuMemAllocFromPoolAsync_ptsz)},
    {"cuMemPoolCreate", 11020, FN(sim_cuMemPoolCreate), NULL},
    {"cuMemPoolDestroy", 11020, FN(sim_cuMemPoolDestroy), NULL},
    {"cuMemPoolGetAttribute", 11020, FN(sim_cuMemPoolGetAttribute), NULL},
    {"cuMemPoolSetAttribute", 11020, FN(sim_cuMemPoolSetAttribute), NULL},
    {"cuMemPoolTrimTo", 11020, FN(sim_cuMemPoolTrimTo), NULL},
    {"cuMemGetAllocationGranularity", 10020, FN(sim_cuMemGetAllocationGranularity), NULL},
    {"cuMemCreate", 10020, FN(sim_cuMemCreate), NULL},
    {"cuMemRelease", 10020, FN(sim_cuMemRelease), NULL},
    {"cuMemRetainAllocationHandle", 11000, FN(sim_cuMemRetainAllocationHandle), NULL},
    {"cuMemExportToShareableHandle", 10020, FN(sim_cuMemExportToShareableHandle), NULL},
    {"cuMemImportFromShareableHandle", 10020, FN(sim_cuMemImportFromShareableHandle), NULL},
    {"cuMemGetAllocationPropertiesFromHandle", 10020,
     FN(sim_cuMemGetAllocationPropertiesFromHandle), NULL},
    {"cuMemAddressReserve", 10020, FN(sim_cuMemAddressReserve), NULL},
    {"cuMemAddressFree", 10020, FN(sim_cuMemAddressFree), NULL},
    {"cuMemMap", 10020, FN(sim_cuMemMap), NULL},
    {"cuMemUnmap", 10020, FN(sim_cuMemUnmap), NULL},
    {"cuMemSetAccess", 10020, FN(sim_cuMemSetAccess), NULL},
    {"cuMulticastGetGranularity", 12010, FN(sim_cuMulticastGetGranularity), NULL},
    {"cuMulticastCreate", 12010, FN(sim_cuMulticastCreate), NULL},
    {"cuMulticastAddDevice", 12010, FN(sim_cuMulticastAddDevice), NULL},
    {"cuMulticastBindMem", 12010, FN(sim_cuMulticastBindMem), NULL},
    {"cuMulticastBindAddr", 12010, FN(sim_cuMulticastBindAddr), NULL},
    {"cuMulticastUnbind", 12010, FN(sim_cuMulticastUnbind), NULL},
    {"cuMemHostAlloc", 2020, FN(sim_cuMemHostAlloc), NULL},
    {"cuMemAllocHost", 3020, FN(sim_cuMemAllocHost_v2), NULL},
    {"cuMemFreeHost", 2000, FN(sim_cuMemFreeHost), NULL},
    {"cuMemHostRegister", 6050, FN(sim_cuMemHostRegister_v2), NULL},
    {"cuMemHostRegister", 4000, FN(sim_cuMemHostRegister_v2), NULL},
    {"cuMemHostUnregister", 4000, FN(sim_cuMemHostUnregister), NULL},
    {"cuMemHostGetDevicePointer", 3020, FN(sim_cuMemHostGetDevicePointer_v2), NULL},
    {"cuArrayCreate", 3020, FN(sim_cuArrayCreate_v2), NULL},
    {"cuArray3DCreate", 3020, FN(sim_cuArray3DCreate_v2), NULL},
    {"cuArrayDestroy", 2000, FN(sim_cuArrayDestroy), NULL},
    {"cuMipmappedArrayCreate", 5000, FN(sim_cuMipmappedArrayCreate), NULL},
    {"cuMipmappedArrayDestroy", 5000, FN(sim_cuMipmappedArrayDestroy), NULL},
    {"cuIpcGetMemHandle", 4010, FN(sim_cuIpcGetMemHandle), NULL},
    {"cuIpcOpenMemHandle", 11000, FN(sim_cuIpcOpenMemHandle_v2), NULL},
    {"cuIpcOpenMemHandle", 4010, FN(sim_cuIpcOpenMemHandle_v2), NULL},
    {"cuIpcCloseMemHandle", 4010, FN(sim_cuIpcCloseMemHandle), NULL},
    {"cuPointerGetAttribute", 4000, FN(sim_cuPointerGetAttribute), NULL},
    {"cuMemGetAddressRange", 3020, FN(sim_cuMemGetAddressRange_v2), NULL},
    {"cuStreamBeginCapture", 10010, FN(sim_cuStreamBeginCapture_v2),
     FN(sim_cuStreamBeginCapture_v2_ptsz)},
    {"cuStreamEndCapture", 10000, FN(sim_cuStreamEndCapture), FN(sim_cuStreamEndCapture_ptsz)},
    {"cuStreamIsCapturing", 10000, FN(sim_cuStreamIsCapturing), FN(sim_cuStreamIsCapturing_ptsz)},
    {"cuThreadExchangeStreamCaptureMode", 10010, FN(sim_cuThreadExchangeStreamCaptureMode), NULL},
    {"cuGraphCreate", 10000, FN(sim_cuGraphCreate), NULL},
    {"cuGraphAddMemAllocNode", 11040, FN(sim_cuGraphAddMemAllocNode), NULL},
    {"cuGraphAddMemFreeNode", 11040, FN(sim_cuGraphAddMemFreeNode), NULL},
    {"cuGraphInstantiateWithFlags", 11040, FN(sim_cuGraphInstantiateWithFlags), NULL},
    {"cuGraphInstantiate", 12000, FN(sim_cuGraphInstantiateWithFlags), NULL},
    {"cuGraphUpload", 11010, FN(sim_cuGraphUpload), FN(sim_cuGraphUpload_ptsz)},
    {"cuGraphLaunch", 10000, FN(sim_cuGraphLaunch), FN(sim_cuGraphLaunch_ptsz)},
    {"cuGraphExecDestroy", 10000, FN(sim_cuGraphExecDestroy), NULL},
    {"cuGraphDestroy", 10000, FN(sim_cuGraphDestroy), NULL},
    {"cuDeviceGraphMemTrim", 11040, FN(sim_cuDeviceGraphMemTrim), NULL},
    {"cuDeviceGetGraphMemAttribute", 11040, FN(sim_cuDeviceGetGraphMemAttribute), NULL},
    {"cuDeviceSetGraphMemAttribute", 11040, FN(sim_cuDeviceSetGraphMemAttribute), NULL},
    {"cuGetProcAddress", 12000, FN(sim_cuGetProcAddress_v2), NULL},
    {"cuGetProcAddress", 11030, FN(sim_cuGetProcAddress), NULL},
};

/* Both getters: api names the one called, for the log. */
static gs_curesult get_proc(const char *api, const char *symbol, void **pfn, int cudaVersion,
                            gs_cuuint64 flags, gs_cuprocstatus *symbolStatus)
{
    gs_cuprocstatus status = GS_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const struct proc *hit = NULL;

    pthread_once(&env_once, read_env);
    if (!symbol || !pfn)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; !hit && i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].name, symbol) != 0)
            continue;
        status = GS_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        if (procs[i].version <= cudaVersion)
            hit = &procs[i];
    }
    *pfn = NULL;
    if (hit) {
        status = GS_CU_GET_PROC_ADDRESS_SUCCESS;
        *pfn = (void *)(flags & GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && hit->ptsz
                            ? hit->ptsz
                            : hit->fn);
    }
    if (symbolStatus)
        *symbolStatus = status;
    sim_log("%s(%s, %d, %llu) -> status %d", api, symbol, cudaVersion,
            (unsigned long long)flags, status);
    return hit ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_NOT_FOUND;
}

gs_curesult sim_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    gs_cuuint64 flags, gs_cuprocstatus *symbolStatus)
{
    return get_proc("cuGetProcAddress_v2", symbol, pfn, cudaVersion, flags, symbolStatus);
}
SIM_EXPORT(cuGetProcAddress_v2)

gs_curesult sim_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                 gs_cuuint64 flags)
{
    return get_proc("cuGetProcAddress", symbol, pfn, cudaVersion, flags, NULL);
}
SIM_EXPORT(cuGetProcAddress)
