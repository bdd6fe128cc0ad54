/*
 * runtime.c - the simulated CUDA runtime, built as libcudart.so.13.
 *
 * Owns: the cuda* entry points gpushim's tests call, the thread's current
 * device, and the way the runtime reaches the driver. That last part is the
 * point of this file, because it is what an interposer has to get right:
 * like the real runtime, this library is not linked against libcuda. On
 * first use it dlopens "libcuda.so.1", takes only "cuGetProcAddress" (the
 * CUDA 11.3 getter, 4 arguments) with dlsym, asks that getter for
 * "cuGetProcAddress" at version 12000 (the 5-argument getter) and at 11030
 * (the 4-argument one again), and from then on reaches the driver only
 * through pointers those getters return: cuMemFree through the 4-argument
 * getter, everything else through the 5-argument one, so both ABIs are
 * used in ordinary operation.
 *
 * Design
 *   - One pthread_once loads the driver and calls cuInit; its outcome is
 *     the sticky result of every later call that needs the driver.
 *   - The current device is thread-local (default 0). Before a memory call
 *     the runtime retains the device's primary context (once per process)
 *     and makes it current on the thread (once per thread and device).
 *   - Internal calls never go through exported names, so an interposer
 *     that hooks cudaMalloc sees one call per program call.
 *   - The context lock is held across fork() (pthread_atfork), so a child
 *     forked while another thread binds a context can use the runtime.
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
 *
 * Environment
 *   SIMCUDART_PTDS  1: cudaMallocAsync, cudaFreeAsync, cudaEventRecord,
 *                   cudaStreamWaitEvent and cudaStreamSynchronize use the driver's
 *                   per-thread-default-stream (_ptsz) variants, as a program
 *                   built with --default-stream per-thread would.
 */
#include "gpushim_cuda.h"

#include <dlfcn.h>
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

/* Checks each hooked definition below against the header's ABI. */
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

static struct {
    gs_pfn_cuGetProcAddress get4;
    gs_pfn_cuGetProcAddress_v2 get5;
    gs_pfn_cuMemFree_v2 free; /* through the 4-argument getter */
#define SIM_FIELD(field, name, type, flags) type field;
    SIM_DRIVER_FUNCTIONS(SIM_FIELD)
#undef SIM_FIELD
} drv;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static gs_cudaerror load_error; /* sticky outcome of loading the driver */
static int driver_loaded;       /* the getters work, whatever cuInit said */
static int device_count;

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static gs_cucontext primary[SIM_MAX_DEVICES];

static __thread int current_device;
static __thread int bound_device = -1; /* device whose context is current */
static __thread gs_cudaerror last_error;

static void fork_prepare(void)
{
    pthread_mutex_lock(&ctx_lock);
}

static void fork_done(void)
{
    pthread_mutex_unlock(&ctx_lock);
}

__attribute__((constructor)) static void sim_setup(void)
{
    pthread_atfork(fork_prepare, fork_done, fork_done);
}

/* ---- errors ------------------------------------------------------------- */

static gs_cudaerror from_driver(gs_curesult rc)
{
    switch (rc) {
    case GS_CUDA_SUCCESS:
        return GS_cudaSuccess;
    case GS_CUDA_ERROR_INVALID_VALUE:
        return GS_cudaErrorInvalidValue;
    case GS_CUDA_ERROR_OUT_OF_MEMORY:
        return GS_cudaErrorMemoryAllocation;
    case GS_CUDA_ERROR_NO_DEVICE:
        return SIM_cudaErrorNoDevice;
    case GS_CUDA_ERROR_INVALID_DEVICE:
        return SIM_cudaErrorInvalidDevice;
    case SIM_CUDA_ERROR_INVALID_HANDLE:
        return SIM_cudaErrorInvalidResourceHandle;
    case SIM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
        return SIM_cudaErrorHostMemoryAlreadyRegistered;
    case SIM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
        return SIM_cudaErrorHostMemoryNotRegistered;
    case SIM_CUDA_ERROR_ILLEGAL_STATE:
        return SIM_cudaErrorIllegalState;
    case GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
        return SIM_cudaErrorStreamCaptureUnsupported;
    default:
        return SIM_cudaErrorUnknown;
    }
}

/* Every entry point returns through here, so cudaGetLastError works. */
static gs_cudaerror done(gs_cudaerror err)
{
    if (err != GS_cudaSuccess)
        last_error = err;
    return err;
}

SIM_EXPORT const char *cudaGetErrorString(gs_cudaerror error)
{
    switch (error) {
    case GS_cudaSuccess:
        return "no error";
    case GS_cudaErrorInvalidValue:
        return "invalid argument";
    case GS_cudaErrorMemoryAllocation:
        return "out of memory";
    case GS_cudaErrorInitializationError:
        return "initialization error";
    case SIM_cudaErrorInsufficientDriver:
        return "CUDA driver version is insufficient for CUDA runtime version";
    case SIM_cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    case SIM_cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case SIM_cudaErrorInvalidChannelDescriptor:
        return "invalid channel descriptor";
    case SIM_cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case SIM_cudaErrorHostMemoryAlreadyRegistered:
        return "part or all of the requested memory range is already mapped";
    case SIM_cudaErrorHostMemoryNotRegistered:
        return "pointer does not correspond to a registered memory region";
    case SIM_cudaErrorIllegalState:
        return "the operation cannot be performed in the present state";
    case SIM_cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case SIM_cudaErrorUnknown:
        return "unknown error";
    default:
        return "unrecognized error code";
    }
}

SIM_EXPORT gs_cudaerror cudaGetLastError(void)
{
    gs_cudaerror err = last_error;

    last_error = GS_cudaSuccess;
    return err;
}

/* ---- loading the driver ------------------------------------------------- */

/* One driver function by base name through the 5-argument getter. */
static void *lookup(const char *name, gs_cuuint64 flags)
{
    void *fn = NULL;
    gs_cuprocstatus status;

    if (drv.get5(name, &fn, SIM_LOOKUP_VERSION, flags, &status) != GS_CUDA_SUCCESS)
        return NULL;
    return status == GS_CU_GET_PROC_ADDRESS_SUCCESS ? fn : NULL;
}

/* The two getters, both obtained from the one symbol dlsym may name. */
static int load_getters(void)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gs_pfn_cuGetProcAddress get;
    void *fn = NULL;

    if (!handle)
        return -1;
    get = (gs_pfn_cuGetProcAddress)dlsym(handle, "cuGetProcAddress");
    if (!get || get("cuGetProcAddress", &fn, 12000, 0) != GS_CUDA_SUCCESS)
        return -1;
    drv.get5 = (gs_pfn_cuGetProcAddress_v2)fn;
    if (get("cuGetProcAddress", &fn, 11030, 0) != GS_CUDA_SUCCESS)
        return -1;
    drv.get4 = (gs_pfn_cuGetProcAddress)fn;
    return drv.get4 && drv.get5 ? 0 : -1;
}

static int load_functions(void)
{
    gs_cuuint64 async = GS_CU_GET_PROC_ADDRESS_DEFAULT;
    const char *ptds = getenv("SIMCUDART_PTDS");
    void *fn = NULL;
    int ok = 1;

    if (ptds && strcmp(ptds, "1") == 0)
        async = PTSZ;
#define SIM_LOAD(field, name, type, flags) ok &= (drv.field = (type)lookup(name, flags)) != NULL;
    SIM_DRIVER_FUNCTIONS(SIM_LOAD)
#undef SIM_LOAD
    if (drv.get4("cuMemFree", &fn, SIM_LOOKUP_VERSION, 0) == GS_CUDA_SUCCESS)
        drv.free = (gs_pfn_cuMemFree_v2)fn;
    return ok && drv.free ? 0 : -1;
}

static void load_driver(void)
{
    gs_curesult rc;

    if (load_getters() != 0 || load_functions() != 0) {
        load_error = SIM_cudaErrorInsufficientDriver;
        return;
    }
    driver_loaded = 1;
    rc = drv.init(0);
    if (rc == GS_CUDA_SUCCESS)
        rc = drv.device_count(&device_count);
    if (rc == GS_CUDA_SUCCESS && device_count == 0)
        rc = GS_CUDA_ERROR_NO_DEVICE;
    if (device_count > SIM_MAX_DEVICES)
        device_count = SIM_MAX_DEVICES;
    load_error = from_driver(rc);
}

static gs_cudaerror driver_ready(void)
{
    pthread_once(&load_once, load_driver);
    return load_error;
}

/* Makes the primary context of the thread's device current, once. */
static gs_cudaerror bind_context(void)
{
    gs_cudaerror err = driver_ready();
    gs_curesult rc = GS_CUDA_SUCCESS;
    int dev = current_device;

    if (err != GS_cudaSuccess || bound_device == dev)
        return err;
    pthread_mutex_lock(&ctx_lock);
    if (!primary[dev])
        rc = drv.ctx_retain(&primary[dev], dev);
    pthread_mutex_unlock(&ctx_lock);
    if (rc == GS_CUDA_SUCCESS)
        rc = drv.ctx_set(primary[dev]);
    if (rc == GS_CUDA_SUCCESS)
        bound_device = dev;
    return from_driver(rc);
}

/* ---- devices and versions ----------------------------------------------- */

SIM_EXPORT gs_cudaerror cudaGetDeviceCount(int *count)
{
    gs_cudaerror err;

    if (!count)
        return done(GS_cudaErrorInvalidValue);
    err = driver_ready();
    *count = err == GS_cudaSuccess ? device_count : 0;
    return done(err);
}

SIM_EXPORT gs_cudaerror cudaSetDevice(int device)
{
    gs_cudaerror err = driver_ready();

    if (err != GS_cudaSuccess)
        return done(err);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    current_device = device;
    return GS_cudaSuccess;
}

SIM_EXPORT gs_cudaerror cudaGetDevice(int *device)
{
    if (!device)
        return done(GS_cudaErrorInvalidValue);
    *device = current_device;
    return GS_cudaSuccess;
}

SIM_EXPORT gs_cudaerror cudaDeviceSynchronize(void)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.ctx_sync()));
}

/* Fills the head of cudaDeviceProp alone (gs_cudadeviceprop_head): the
 * name and totalGlobalMem, from cuDeviceGetName and cuDeviceTotalMem as the
 * real runtime does; uuid and luid zero. The rest is left as it was. */
SIM_EXPORT gs_cudaerror cudaGetDeviceProperties(gs_cudadeviceprop_head *prop, int device)
{
    gs_cudaerror err = driver_ready();
    gs_curesult rc;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!prop)
        return done(GS_cudaErrorInvalidValue);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    rc = drv.device_name(prop->name, (int)sizeof prop->name, device);
    if (rc == GS_CUDA_SUCCESS)
        rc = drv.device_total(&prop->totalGlobalMem, device);
    return done(from_driver(rc));
}

SIM_EXPORT gs_cudaerror cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return done(GS_cudaErrorInvalidValue);
    driver_ready();
    *driverVersion = 0;
    if (driver_loaded)
        return done(from_driver(drv.driver_version(driverVersion)));
    return GS_cudaSuccess;
}

SIM_EXPORT gs_cudaerror cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return done(GS_cudaErrorInvalidValue);
    *runtimeVersion = SIM_RUNTIME_VERSION;
    return GS_cudaSuccess;
}

/* ---- memory ------------------------------------------------------------- */

SIM_EXPORT gs_cudaerror cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.mem_info(free_bytes, total)));
}

/* Like the real runtime, cudaMalloc of 0 bytes succeeds with NULL. */
gs_cudaerror cudaMalloc(void **devPtr, size_t size)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!devPtr)
        return done(GS_cudaErrorInvalidValue);
    if (size)
        err = from_driver(drv.alloc(&p, size));
    if (err == GS_cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return done(err);
}

/* cudaFree(NULL) initializes the context and frees nothing. */
gs_cudaerror cudaFree(void *devPtr)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess || !devPtr)
        return done(err);
    return done(from_driver(drv.free((gs_cudeviceptr)(uintptr_t)devPtr)));
}

gs_cudaerror cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!devPtr)
        return done(GS_cudaErrorInvalidValue);
    err = from_driver(drv.alloc_pitch(&p, pitch, width, height, 4));
    if (err == GS_cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return done(err);
}

gs_cudaerror cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!devPtr)
        return done(GS_cudaErrorInvalidValue);
    err = from_driver(drv.alloc_managed(&p, size, flags));
    if (err == GS_cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return done(err);
}

static gs_cudaerror malloc_async(gs_pfn_cuMemAllocAsync fn, void **devPtr, size_t size,
                                 gs_custream stream)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!devPtr)
        return done(GS_cudaErrorInvalidValue);
    err = from_driver(fn(&p, size, stream));
    if (err == GS_cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return done(err);
}

static gs_cudaerror free_async(gs_pfn_cuMemFreeAsync fn, void *devPtr, gs_custream stream)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess)
        return done(err);
    return done(from_driver(fn((gs_cudeviceptr)(uintptr_t)devPtr, stream)));
}

/* driver_ready() first: the driver pointer is read before the helper runs. */
gs_cudaerror cudaMallocAsync(void **devPtr, size_t size, gs_custream hStream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err)
                                 : malloc_async(drv.alloc_async, devPtr, size, hStream);
}

gs_cudaerror cudaMallocAsync_ptsz(void **devPtr, size_t size, gs_custream hStream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err)
                                 : malloc_async(drv.alloc_async_ptsz, devPtr, size, hStream);
}

gs_cudaerror cudaFreeAsync(void *devPtr, gs_custream hStream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err) : free_async(drv.free_async, devPtr, hStream);
}

gs_cudaerror cudaFreeAsync_ptsz(void *devPtr, gs_custream hStream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err)
                                 : free_async(drv.free_async_ptsz, devPtr, hStream);
}

/* ---- memory pools and streams -------------------------------------------- */

static gs_cudaerror malloc_from_pool(gs_pfn_cuMemAllocFromPoolAsync fn, void **ptr, size_t size,
                                     gs_cumempool pool, gs_custream stream)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!ptr)
        return done(GS_cudaErrorInvalidValue);
    err = from_driver(fn(&p, size, pool, stream));
    if (err == GS_cudaSuccess)
        *ptr = (void *)(uintptr_t)p;
    return done(err);
}

gs_cudaerror cudaMallocFromPoolAsync(void **ptr, size_t size, gs_cumempool memPool,
                                     gs_custream stream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess ? done(err)
                                 : malloc_from_pool(drv.pool_alloc, ptr, size, memPool, stream);
}

gs_cudaerror cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, gs_cumempool memPool,
                                          gs_custream stream)
{
    gs_cudaerror err = driver_ready();

    return err != GS_cudaSuccess
               ? done(err)
               : malloc_from_pool(drv.pool_alloc_ptsz, ptr, size, memPool, stream);
}

gs_cudaerror cudaMemPoolCreate(gs_cumempool *memPool, const gs_cudamempoolprops *poolProps)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.pool_create(memPool, poolProps)));
}

gs_cudaerror cudaMemPoolDestroy(gs_cumempool memPool)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.pool_destroy(memPool)));
}

/* enum cudaMemPoolAttr has the driver's values. */
SIM_EXPORT gs_cudaerror cudaMemPoolGetAttribute(gs_cumempool memPool, gs_cumempoolattr attr,
                                                void *value)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.pool_get(memPool, attr, value)));
}

/* The same signature as the getter; enum cudaMemPoolAttr has the driver's values (NCCL's
 * commAlloc and PyTorch's lazy_init_device set the release threshold). */
SIM_EXPORT gs_cudaerror cudaMemPoolSetAttribute(gs_cumempool memPool, gs_cumempoolattr attr,
                                                void *value)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.pool_set(memPool, attr, value)));
}

SIM_EXPORT gs_cudaerror cudaDeviceGetDefaultMemPool(gs_cumempool *memPool, int device)
{
    gs_cudaerror err = driver_ready();

    if (err != GS_cudaSuccess)
        return done(err);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    return done(from_driver(drv.default_pool(memPool, device)));
}

/* Flags: cudaStreamDefault 0 or cudaStreamNonBlocking 1, as the driver's. */
SIM_EXPORT gs_cudaerror cudaStreamCreateWithFlags(gs_custream *pStream, unsigned int flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.stream_create(pStream, flags)));
}

SIM_EXPORT gs_cudaerror cudaStreamCreate(gs_custream *pStream)
{
    return cudaStreamCreateWithFlags(pStream, 0);
}

SIM_EXPORT gs_cudaerror cudaStreamDestroy(gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.stream_destroy(stream)));
}

SIM_EXPORT gs_cudaerror cudaStreamSynchronize(gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.stream_sync(stream)));
}

/* ---- events and pool settings --------------------------------------------- */

/* Flags: cudaEventDefault 0, BlockingSync 1, DisableTiming 2, Interprocess
 * 4, as the driver's CU_EVENT_*. */
SIM_EXPORT gs_cudaerror cudaEventCreateWithFlags(gs_cuevent *event, unsigned int flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.event_create(event, flags)));
}

SIM_EXPORT gs_cudaerror cudaEventCreate(gs_cuevent *event)
{
    return cudaEventCreateWithFlags(event, 0);
}

SIM_EXPORT gs_cudaerror cudaEventRecord(gs_cuevent event, gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.event_record(event, stream)));
}

SIM_EXPORT gs_cudaerror cudaEventDestroy(gs_cuevent event)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.event_destroy(event)));
}

SIM_EXPORT gs_cudaerror cudaEventSynchronize(gs_cuevent event)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.event_sync(event)));
}

/* Flags: cudaEventWaitDefault 0 or cudaEventWaitExternal 1. */
SIM_EXPORT gs_cudaerror cudaStreamWaitEvent(gs_custream stream, gs_cuevent event,
                                            unsigned int flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err
                                      : from_driver(drv.stream_wait(stream, event, flags)));
}

SIM_EXPORT gs_cudaerror cudaMemPoolTrimTo(gs_cumempool memPool, size_t minBytesToKeep)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err
                                      : from_driver(drv.pool_trim(memPool, minBytesToKeep)));
}

/* ---- CUDA graphs ----------------------------------------------------------- */

/* Each maps onto the driver call of the same name; the runtime's enums
 * (cudaStreamCaptureMode, cudaGraphMemAttributeType, cudaGraphInstantiateFlags)
 * and struct cudaMemAllocNodeParams have the driver's values and layout. */
SIM_EXPORT gs_cudaerror cudaStreamBeginCapture(gs_custream stream, int mode)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.begin_capture(stream, mode)));
}

SIM_EXPORT gs_cudaerror cudaStreamEndCapture(gs_custream stream, gs_cugraph *pGraph)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.end_capture(stream, pGraph)));
}

SIM_EXPORT gs_cudaerror cudaStreamIsCapturing(gs_custream stream, int *pCaptureStatus)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err
                                      : from_driver(drv.is_capturing(stream, pCaptureStatus)));
}

SIM_EXPORT gs_cudaerror cudaThreadExchangeStreamCaptureMode(int *mode)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.exchange_mode(mode)));
}

SIM_EXPORT gs_cudaerror cudaGraphCreate(gs_cugraph *pGraph, unsigned int flags)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.graph_create(pGraph, flags)));
}

SIM_EXPORT gs_cudaerror cudaGraphAddMemAllocNode(gs_cugraphnode *pGraphNode, gs_cugraph graph,
                                                 const gs_cugraphnode *pDependencies,
                                                 size_t numDependencies,
                                                 gs_cumemallocnodeparams *nodeParams)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess
                    ? err
                    : from_driver(drv.alloc_node(pGraphNode, graph, pDependencies,
                                                 numDependencies, nodeParams)));
}

SIM_EXPORT gs_cudaerror cudaGraphAddMemFreeNode(gs_cugraphnode *pGraphNode, gs_cugraph graph,
                                                const gs_cugraphnode *pDependencies,
                                                size_t numDependencies, void *dptr)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess
                    ? err
                    : from_driver(drv.free_node(pGraphNode, graph, pDependencies,
                                                numDependencies,
                                                (gs_cudeviceptr)(uintptr_t)dptr)));
}

SIM_EXPORT gs_cudaerror cudaGraphInstantiateWithFlags(gs_cugraphexec *pGraphExec, gs_cugraph graph,
                                                      unsigned long long flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err
                                      : from_driver(drv.instantiate(pGraphExec, graph, flags)));
}

SIM_EXPORT gs_cudaerror cudaGraphUpload(gs_cugraphexec graphExec, gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.upload(graphExec, stream)));
}

SIM_EXPORT gs_cudaerror cudaGraphLaunch(gs_cugraphexec graphExec, gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.launch(graphExec, stream)));
}

SIM_EXPORT gs_cudaerror cudaGraphExecDestroy(gs_cugraphexec graphExec)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.exec_destroy(graphExec)));
}

SIM_EXPORT gs_cudaerror cudaGraphDestroy(gs_cugraph graph)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.graph_destroy(graph)));
}

SIM_EXPORT gs_cudaerror cudaDeviceGraphMemTrim(int device)
{
    gs_cudaerror err = driver_ready();

    if (err != GS_cudaSuccess)
        return done(err);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    return done(from_driver(drv.graph_trim(device)));
}

SIM_EXPORT gs_cudaerror cudaDeviceGetGraphMemAttribute(int device, int attr, void *value)
{
    gs_cudaerror err = driver_ready();

    if (err != GS_cudaSuccess)
        return done(err);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    return done(from_driver(drv.graph_get(device, attr, value)));
}

SIM_EXPORT gs_cudaerror cudaDeviceSetGraphMemAttribute(int device, int attr, void *value)
{
    gs_cudaerror err = driver_ready();

    if (err != GS_cudaSuccess)
        return done(err);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    return done(from_driver(drv.graph_set(device, attr, value)));
}

/* ---- pinned host memory -------------------------------------------------- */

gs_cudaerror cudaMallocHost(void **ptr, size_t size)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess)
        return done(err);
    if (!ptr)
        return done(GS_cudaErrorInvalidValue);
    *ptr = NULL;
    return size ? done(from_driver(drv.alloc_host(ptr, size))) : GS_cudaSuccess;
}

/* cudaHostAlloc* flags are the driver's CU_MEMHOSTALLOC_* values. */
gs_cudaerror cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess)
        return done(err);
    if (!pHost)
        return done(GS_cudaErrorInvalidValue);
    *pHost = NULL;
    return size ? done(from_driver(drv.host_alloc(pHost, size, flags))) : GS_cudaSuccess;
}

gs_cudaerror cudaFreeHost(void *ptr)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess || !ptr)
        return done(err);
    return done(from_driver(drv.free_host(ptr)));
}

/* cudaHostRegister* flags are the driver's CU_MEMHOSTREGISTER_* values. */
gs_cudaerror cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.host_register(ptr, size, flags)));
}

gs_cudaerror cudaHostUnregister(void *ptr)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.host_unregister(ptr)));
}

/* ---- 3D memory and arrays ------------------------------------------------- */

/* One cuMemAllocPitch_v2 of width x (height * depth); any zero extent:
 * success, NULL, pitch 0. */
gs_cudaerror cudaMalloc3D(gs_cudapitchedptr *pitchedDevPtr, gs_cudaextent extent)
{
    gs_cudaerror err = bind_context();
    gs_cudeviceptr p = 0;
    size_t pitch = 0, rows;

    if (err != GS_cudaSuccess)
        return done(err);
    if (!pitchedDevPtr)
        return done(GS_cudaErrorInvalidValue);
    *pitchedDevPtr = (gs_cudapitchedptr){NULL, 0, extent.width, extent.height};
    if (!extent.width || !extent.height || !extent.depth)
        return GS_cudaSuccess;
    if (__builtin_mul_overflow(extent.height, extent.depth, &rows))
        return done(GS_cudaErrorMemoryAllocation);
    err = from_driver(drv.alloc_pitch(&p, &pitch, extent.width, rows, 4));
    if (err == GS_cudaSuccess) {
        pitchedDevPtr->ptr = (void *)(uintptr_t)p;
        pitchedDevPtr->pitch = pitch;
    }
    return done(err);
}

static int channel_format(int kind, int bits)
{
    switch (kind) {
    case SIM_cudaChannelFormatKindSigned:
        return bits == 8    ? GS_CU_AD_FORMAT_SIGNED_INT8
               : bits == 16 ? GS_CU_AD_FORMAT_SIGNED_INT16
               : bits == 32 ? GS_CU_AD_FORMAT_SIGNED_INT32
                            : 0;
    case SIM_cudaChannelFormatKindUnsigned:
        return bits == 8    ? GS_CU_AD_FORMAT_UNSIGNED_INT8
               : bits == 16 ? GS_CU_AD_FORMAT_UNSIGNED_INT16
               : bits == 32 ? GS_CU_AD_FORMAT_UNSIGNED_INT32
                            : 0;
    case SIM_cudaChannelFormatKindFloat:
        return bits == 16 ? GS_CU_AD_FORMAT_HALF : bits == 32 ? GS_CU_AD_FORMAT_FLOAT : 0;
    default:
        return 0;
    }
}

/* The driver's format and channel count for desc; -1 when it has none. */
static int array_format(const gs_cudachannelformatdesc *desc, int *format,
                        unsigned int *channels)
{
    const int bits[4] = {desc->x, desc->y, desc->z, desc->w};
    int size = 0;

    *channels = 0;
    for (int i = 0; i < 4; i++) {
        if (!bits[i])
            continue;
        if (size && bits[i] != size)
            return -1;
        size = bits[i];
        ++*channels;
    }
    *format = channel_format(desc->f, size);
    return *format && (*channels == 1 || *channels == 2 || *channels == 4) ? 0 : -1;
}

/* The checks both array allocators start with. */
static gs_cudaerror array_start(gs_cudaarray *array, const gs_cudachannelformatdesc *desc,
                                int *format, unsigned int *channels)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess)
        return err;
    if (!array || !desc)
        return GS_cudaErrorInvalidValue;
    return array_format(desc, format, channels) == 0 ? GS_cudaSuccess
                                                     : SIM_cudaErrorInvalidChannelDescriptor;
}

/* The driver's CUarray is the cudaArray_t. d3: 3D descriptor, else d. */
static gs_cudaerror array_create(const gs_cuarraydesc *d, const gs_cuarray3ddesc *d3,
                                 gs_cudaarray *array)
{
    gs_cuarray made = NULL;
    gs_curesult rc = d3 ? drv.array3d_create(&made, d3) : drv.array_create(&made, d);

    if (rc == GS_CUDA_SUCCESS)
        *array = (gs_cudaarray)(void *)made;
    return done(from_driver(rc));
}

/* height 0: a 1D array. */
gs_cudaerror cudaMallocArray(gs_cudaarray *array, const gs_cudachannelformatdesc *desc,
                             size_t width, size_t height, unsigned int flags)
{
    int format = 0;
    unsigned int channels = 0;
    gs_cudaerror err = array_start(array, desc, &format, &channels);
    gs_cuarraydesc d = {width, height, format, channels};
    gs_cuarray3ddesc d3 = {width, height, 0, format, channels, flags};

    if (err != GS_cudaSuccess)
        return done(err);
    return array_create(&d, flags ? &d3 : NULL, array);
}

gs_cudaerror cudaMalloc3DArray(gs_cudaarray *array, const gs_cudachannelformatdesc *desc,
                               gs_cudaextent extent, unsigned int flags)
{
    int format = 0;
    unsigned int channels = 0;
    gs_cudaerror err = array_start(array, desc, &format, &channels);
    gs_cuarray3ddesc d = {extent.width, extent.height, extent.depth, format, channels, flags};

    if (err != GS_cudaSuccess)
        return done(err);
    return array_create(NULL, &d, array);
}

gs_cudaerror cudaFreeArray(gs_cudaarray array)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess || !array)
        return done(err);
    return done(from_driver(drv.array_destroy((gs_cuarray)(void *)array)));
}

/* ---- driver entry points -------------------------------------------------- */

/* A symbol the driver does not have is success with *funcPtr = NULL; the
 * reason is in *driverStatus (cudaDriverEntryPointQueryResult has the
 * driver's values). */
static gs_cudaerror entry_point(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                unsigned long long flags, gs_cudaentrystatus *driverStatus)
{
    gs_cuprocstatus status = GS_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    int driver_version = 0;
    gs_curesult rc;

    if (!symbol || !funcPtr)
        return GS_cudaErrorInvalidValue;
    driver_ready();
    if (!driver_loaded)
        return SIM_cudaErrorInsufficientDriver;
    if (drv.driver_version(&driver_version) != GS_CUDA_SUCCESS ||
        cudaVersion > (unsigned int)driver_version)
        return GS_cudaErrorInvalidValue;
    rc = drv.get5(symbol, funcPtr, (int)cudaVersion, flags, &status);
    if (driverStatus)
        *driverStatus = status;
    if (rc == GS_CUDA_ERROR_NOT_FOUND) {
        *funcPtr = NULL;
        return GS_cudaSuccess;
    }
    return from_driver(rc);
}

SIM_EXPORT gs_cudaerror cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                         unsigned int cudaVersion,
                                                         unsigned long long flags,
                                                         gs_cudaentrystatus *driverStatus)
{
    return done(entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus));
}

/* Resolves at the runtime's own version, as the real one does. */
SIM_EXPORT gs_cudaerror cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                                unsigned long long flags,
                                                gs_cudaentrystatus *driverStatus)
{
    return done(entry_point(symbol, funcPtr, SIM_RUNTIME_VERSION, flags, driverStatus));
}

/* The names programs built with --default-stream per-thread call. */
SIM_EXPORT gs_cudaerror cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                                     unsigned long long flags,
                                                     gs_cudaentrystatus *driverStatus)
{
    return cudaGetDriverEntryPoint(symbol, funcPtr, flags, driverStatus);
}

SIM_EXPORT gs_cudaerror cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                              unsigned int cudaVersion,
                                                              unsigned long long flags,
                                                              gs_cudaentrystatus *driverStatus)
{
    return cudaGetDriverEntryPointByVersion(symbol, funcPtr, cudaVersion, flags, driverStatus);
}
