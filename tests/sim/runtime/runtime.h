/*
 * runtime.h - what the files of the simulated CUDA runtime (tests/sim/runtime/, built as
 * libcudart.so.13 with tests/sim/runtime.map; dl_nccl_runtime links them in, as NCCL links
 * the runtime statically) share: constants, the driver functions the runtime reaches (drv,
 * load.c), and the helpers every entry point returns through.
 *
 * Included by: the files of tests/sim/runtime/ alone.
 *
 * Each file is a section of the CUDA Runtime API reference (its top comment says which);
 * load.c and error.c hold what the sections share. The runtime owns the cuda* entry points
 * gpushim's tests call, the thread's current device, and the way it reaches the driver
 * (load.c: never through the dynamic linker but cuGetProcAddress).
 *
 * Design
 *   - Internal calls never go through exported names, so an interposer
 *     that hooks cudaMalloc sees one call per program call.
 *   - Only the cuda* names are exported (runtime.map; SIM_EXPORT and the
 *     header's list below); what the files share is hidden (#pragma GCC
 *     visibility below), so a program that links these files in exports none of it.
 *   - Each cuda* allocator maps onto one driver call: cudaMallocHost ->
 *     cuMemAllocHost_v2, cudaHostAlloc -> cuMemHostAlloc (same flag
 *     values), cudaMalloc3D -> cuMemAllocPitch_v2 (width x height*depth,
 *     element size 4: pitch is the width rounded up to 512),
 *     cudaMallocArray -> cuArrayCreate_v2 (flags 0) or cuArray3DCreate_v2
 *     (other flags, depth 0), cudaMalloc3DArray -> cuArray3DCreate_v2,
 *     cudaMallocFromPoolAsync -> cuMemAllocFromPoolAsync[_ptsz],
 *     cudaEvent{Create[WithFlags],Record,Synchronize,Destroy} and
 *     cudaStreamWaitEvent -> cuEvent* and cuStreamWaitEvent (the flags have
 *     the driver's values), cudaMemPool{Set,Get}Attribute and
 *     cudaMemPoolTrimTo -> cuMemPool*. A channel
 *     descriptor becomes a CUarray_format and a channel count (its non-zero
 *     sizes, all equal: 8/16/32 bits signed or unsigned, 16/32 float).
 *   - A zero-byte cudaMalloc, cudaMallocHost, cudaHostAlloc or cudaMalloc3D
 *     succeeds with NULL without calling the driver; cudaFree, cudaFreeHost
 *     and cudaFreeArray of NULL succeed.
 *   - cudaGetDriverEntryPoint[ByVersion] pass the caller's flags (and
 *     version; cudaGetDriverEntryPoint: the runtime's) to the 5-argument
 *     getter; a version above the driver's is cudaErrorInvalidValue.
 */
#ifndef GS_SIM_RUNTIME_H
#define GS_SIM_RUNTIME_H

#include "gpushim_cuda.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SIM_RUNTIME_VERSION 13000
#define SIM_LOOKUP_VERSION 12000
#define SIM_MAX_DEVICES 16 /* as the simulated driver */

/* cudaError_t values that gpushim_cuda.h does not carry */
#define SIM_cudaErrorInvalidChannelDescriptor 20
#define SIM_cudaErrorInsufficientDriver 35
#define SIM_cudaErrorNoDevice 100
#define SIM_cudaErrorInvalidDevice 101
#define SIM_cudaErrorInvalidResourceHandle 400
#define SIM_cudaErrorHostMemoryAlreadyRegistered 712
#define SIM_cudaErrorHostMemoryNotRegistered 713
#define SIM_cudaErrorUnknown 999
#define SIM_cudaErrorIllegalState 401
#define SIM_cudaErrorStreamCaptureUnsupported 900

/* CUresult values that gpushim_cuda.h does not carry */
#define SIM_CUDA_ERROR_INVALID_HANDLE 400
#define SIM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define SIM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713
#define SIM_CUDA_ERROR_ILLEGAL_STATE 401

/* enum cudaChannelFormatKind */
#define SIM_cudaChannelFormatKindSigned 0
#define SIM_cudaChannelFormatKindUnsigned 1
#define SIM_cudaChannelFormatKindFloat 2

#define SIM_EXPORT __attribute__((visibility("default")))

/* Exports the hooked entry points, and checks each definition (in the files) against the
 * header's ABI. */
#define SIM_DECLARE(name, ret, params) SIM_EXPORT ret name params;
GS_RUNTIME_HOOKED(SIM_DECLARE)
#undef SIM_DECLARE

/* Driver functions the runtime reaches, beyond gpushim_cuda.h's. */
typedef gs_curesult (*pfn_cuInit)(unsigned int flags);
typedef gs_curesult (*pfn_cuDriverGetVersion)(int *version);
typedef gs_curesult (*pfn_cuDeviceGetCount)(int *count);
typedef gs_curesult (*pfn_cuDevicePrimaryCtxRetain)(gs_cucontext *ctx, gs_cudevice dev);
typedef gs_curesult (*pfn_cuCtxSetCurrent)(gs_cucontext ctx);
typedef gs_curesult (*pfn_cuCtxSynchronize)(void);
typedef gs_curesult (*pfn_cuStreamCreate)(gs_custream *stream, unsigned int flags);
typedef gs_curesult (*pfn_cuStream)(gs_custream stream); /* Destroy, Synchronize */
typedef gs_curesult (*pfn_cuDeviceGetDefaultMemPool)(gs_cumempool *pool, gs_cudevice dev);
typedef gs_curesult (*pfn_cuDeviceGetName)(char *name, int len, gs_cudevice dev);
typedef gs_curesult (*pfn_cuDeviceTotalMem)(size_t *bytes, gs_cudevice dev);
typedef gs_curesult (*pfn_cuEvent)(gs_cuevent event); /* Synchronize */
typedef gs_curesult (*pfn_cuThreadExchangeStreamCaptureMode)(gs_custreamcapturemode *mode);
typedef gs_curesult (*pfn_cuGraphCreate)(gs_cugraph *graph, unsigned int flags);
typedef gs_curesult (*pfn_cuDeviceSetGraphMemAttribute)(gs_cudevice dev, gs_cugraphmemattr attr,
                                                        void *value);

/* The driver functions the runtime looks up (all of them must be found):
 * field, base name, type, cuGetProcAddress flags. `async` is the flag that
 * SIMCUDART_PTDS selects, PTSZ the per-thread one. */
#define PTSZ GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define SIM_DRIVER_FUNCTIONS(X)                                                    \
    X(init, "cuInit", pfn_cuInit, 0)                                               \
    X(driver_version, "cuDriverGetVersion", pfn_cuDriverGetVersion, 0)             \
    X(device_count, "cuDeviceGetCount", pfn_cuDeviceGetCount, 0)                   \
    X(device_name, "cuDeviceGetName", pfn_cuDeviceGetName, 0)                      \
    X(device_total, "cuDeviceTotalMem", pfn_cuDeviceTotalMem, 0)                   \
    X(ctx_retain, "cuDevicePrimaryCtxRetain", pfn_cuDevicePrimaryCtxRetain, 0)     \
    X(ctx_set, "cuCtxSetCurrent", pfn_cuCtxSetCurrent, 0)                          \
    X(ctx_sync, "cuCtxSynchronize", pfn_cuCtxSynchronize, 0)                       \
    X(mem_info, "cuMemGetInfo", gs_pfn_cuMemGetInfo_v2, 0)                         \
    X(alloc, "cuMemAlloc", gs_pfn_cuMemAlloc_v2, 0)                                \
    X(alloc_pitch, "cuMemAllocPitch", gs_pfn_cuMemAllocPitch_v2, 0)                \
    X(alloc_managed, "cuMemAllocManaged", gs_pfn_cuMemAllocManaged, 0)             \
    X(alloc_async, "cuMemAllocAsync", gs_pfn_cuMemAllocAsync, async)               \
    X(free_async, "cuMemFreeAsync", gs_pfn_cuMemFreeAsync, async)                  \
    X(alloc_async_ptsz, "cuMemAllocAsync", gs_pfn_cuMemAllocAsync, PTSZ)           \
    X(free_async_ptsz, "cuMemFreeAsync", gs_pfn_cuMemFreeAsync, PTSZ)              \
    X(pool_alloc, "cuMemAllocFromPoolAsync", gs_pfn_cuMemAllocFromPoolAsync, 0)    \
    X(pool_alloc_ptsz, "cuMemAllocFromPoolAsync", gs_pfn_cuMemAllocFromPoolAsync, PTSZ) \
    X(pool_create, "cuMemPoolCreate", gs_pfn_cuMemPoolCreate, 0)                   \
    X(pool_destroy, "cuMemPoolDestroy", gs_pfn_cuMemPoolDestroy, 0)                \
    X(pool_get, "cuMemPoolGetAttribute", gs_pfn_cuMemPoolGetAttribute, 0)          \
    X(default_pool, "cuDeviceGetDefaultMemPool", pfn_cuDeviceGetDefaultMemPool, 0) \
    X(host_alloc, "cuMemHostAlloc", gs_pfn_cuMemHostAlloc, 0)                      \
    X(alloc_host, "cuMemAllocHost", gs_pfn_cuMemAllocHost_v2, 0)                   \
    X(free_host, "cuMemFreeHost", gs_pfn_cuMemFreeHost, 0)                         \
    X(host_register, "cuMemHostRegister", gs_pfn_cuMemHostRegister_v2, 0)          \
    X(host_unregister, "cuMemHostUnregister", gs_pfn_cuMemHostUnregister, 0)       \
    X(array_create, "cuArrayCreate", gs_pfn_cuArrayCreate_v2, 0)                   \
    X(array3d_create, "cuArray3DCreate", gs_pfn_cuArray3DCreate_v2, 0)             \
    X(array_destroy, "cuArrayDestroy", gs_pfn_cuArrayDestroy, 0)                   \
    X(stream_create, "cuStreamCreate", pfn_cuStreamCreate, 0)                      \
    X(stream_destroy, "cuStreamDestroy", pfn_cuStream, 0)                          \
    X(stream_sync, "cuStreamSynchronize", pfn_cuStream, async)                     \
    X(begin_capture, "cuStreamBeginCapture", gs_pfn_cuStreamBeginCapture_v2, async) \
    X(end_capture, "cuStreamEndCapture", gs_pfn_cuStreamEndCapture, async)         \
    X(is_capturing, "cuStreamIsCapturing", gs_pfn_cuStreamIsCapturing, async)      \
    X(exchange_mode, "cuThreadExchangeStreamCaptureMode",                          \
      pfn_cuThreadExchangeStreamCaptureMode, 0)                                    \
    X(graph_create, "cuGraphCreate", pfn_cuGraphCreate, 0)                         \
    X(alloc_node, "cuGraphAddMemAllocNode", gs_pfn_cuGraphAddMemAllocNode, 0)      \
    X(free_node, "cuGraphAddMemFreeNode", gs_pfn_cuGraphAddMemFreeNode, 0)         \
    X(instantiate, "cuGraphInstantiate", gs_pfn_cuGraphInstantiateWithFlags, 0)    \
    X(upload, "cuGraphUpload", gs_pfn_cuGraphUpload, async)                        \
    X(launch, "cuGraphLaunch", gs_pfn_cuGraphLaunch, async)                        \
    X(exec_destroy, "cuGraphExecDestroy", gs_pfn_cuGraphExecDestroy, 0)            \
    X(graph_destroy, "cuGraphDestroy", gs_pfn_cuGraphDestroy, 0)                   \
    X(graph_trim, "cuDeviceGraphMemTrim", gs_pfn_cuDeviceGraphMemTrim, 0)          \
    X(graph_get, "cuDeviceGetGraphMemAttribute", gs_pfn_cuDeviceGetGraphMemAttribute, 0) \
    X(graph_set, "cuDeviceSetGraphMemAttribute", pfn_cuDeviceSetGraphMemAttribute, 0) \
    SIM_DRIVER_EVENTS(X)

/* Events and pool settings (cudaMallocAsync's users: PyTorch's backend). */
#define SIM_DRIVER_EVENTS(X)                                                       \
    X(event_create, "cuEventCreate", gs_pfn_cuEventCreate, 0)                      \
    X(event_record, "cuEventRecord", gs_pfn_cuEventRecord, async)                  \
    X(event_destroy, "cuEventDestroy", gs_pfn_cuEventDestroy_v2, 0)                \
    X(event_sync, "cuEventSynchronize", pfn_cuEvent, 0)                            \
    X(stream_wait, "cuStreamWaitEvent", gs_pfn_cuStreamWaitEvent, async)           \
    X(pool_set, "cuMemPoolSetAttribute", gs_pfn_cuMemPoolSetAttribute, 0)          \
    X(pool_trim, "cuMemPoolTrimTo", gs_pfn_cuMemPoolTrimTo, 0)

/* The driver's functions, as load.c found them. */
struct sim_driver {
    gs_pfn_cuGetProcAddress get4;
    gs_pfn_cuGetProcAddress_v2 get5;
    gs_pfn_cuMemFree_v2 free; /* through the 4-argument getter */
#define SIM_FIELD(field, name, type, flags) type field;
    SIM_DRIVER_FUNCTIONS(SIM_FIELD)
#undef SIM_FIELD
};

/* What the files define for the others. Hidden: bound inside the library (or the program
 * that links these files in), as statics would be, and never exported. */
#pragma GCC visibility push(hidden)

/* ---- load.c ---- */
extern struct sim_driver drv;
extern int driver_loaded; /* the getters work, whatever cuInit said */
extern int device_count;
extern __thread int current_device;
gs_cudaerror driver_ready(void);
gs_cudaerror bind_context(void);

/* ---- error.c ---- */
gs_cudaerror from_driver(gs_curesult rc);
gs_cudaerror done(gs_cudaerror err);

#pragma GCC visibility pop

#endif
