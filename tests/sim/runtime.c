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
 *
 * Environment
 *   SIMCUDART_PTDS  1: cudaMallocAsync/cudaFreeAsync use the driver's
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
#define SIM_cudaErrorInsufficientDriver 35
#define SIM_cudaErrorNoDevice 100
#define SIM_cudaErrorInvalidDevice 101
#define SIM_cudaErrorUnknown 999

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

static struct {
    gs_pfn_cuGetProcAddress get4;
    gs_pfn_cuGetProcAddress_v2 get5;
    pfn_cuInit init;
    pfn_cuDriverGetVersion driver_version;
    pfn_cuDeviceGetCount device_count;
    pfn_cuDevicePrimaryCtxRetain ctx_retain;
    pfn_cuCtxSetCurrent ctx_set;
    pfn_cuCtxSynchronize ctx_sync;
    gs_pfn_cuMemGetInfo_v2 mem_info;
    gs_pfn_cuMemAlloc_v2 alloc;
    gs_pfn_cuMemFree_v2 free;
    gs_pfn_cuMemAllocPitch_v2 alloc_pitch;
    gs_pfn_cuMemAllocManaged alloc_managed;
    gs_pfn_cuMemAllocAsync alloc_async, alloc_async_ptsz;
    gs_pfn_cuMemFreeAsync free_async, free_async_ptsz;
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
    gs_cuuint64 async_flags = GS_CU_GET_PROC_ADDRESS_DEFAULT;
    const char *ptds = getenv("SIMCUDART_PTDS");
    void *fn = NULL;

    if (ptds && strcmp(ptds, "1") == 0)
        async_flags = GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    drv.init = (pfn_cuInit)lookup("cuInit", 0);
    drv.driver_version = (pfn_cuDriverGetVersion)lookup("cuDriverGetVersion", 0);
    drv.device_count = (pfn_cuDeviceGetCount)lookup("cuDeviceGetCount", 0);
    drv.ctx_retain = (pfn_cuDevicePrimaryCtxRetain)lookup("cuDevicePrimaryCtxRetain", 0);
    drv.ctx_set = (pfn_cuCtxSetCurrent)lookup("cuCtxSetCurrent", 0);
    drv.ctx_sync = (pfn_cuCtxSynchronize)lookup("cuCtxSynchronize", 0);
    drv.mem_info = (gs_pfn_cuMemGetInfo_v2)lookup("cuMemGetInfo", 0);
    drv.alloc = (gs_pfn_cuMemAlloc_v2)lookup("cuMemAlloc", 0);
    drv.alloc_pitch = (gs_pfn_cuMemAllocPitch_v2)lookup("cuMemAllocPitch", 0);
    drv.alloc_managed = (gs_pfn_cuMemAllocManaged)lookup("cuMemAllocManaged", 0);
    drv.alloc_async = (gs_pfn_cuMemAllocAsync)lookup("cuMemAllocAsync", async_flags);
    drv.free_async = (gs_pfn_cuMemFreeAsync)lookup("cuMemFreeAsync", async_flags);
    drv.alloc_async_ptsz = (gs_pfn_cuMemAllocAsync)lookup(
        "cuMemAllocAsync", GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    drv.free_async_ptsz = (gs_pfn_cuMemFreeAsync)lookup(
        "cuMemFreeAsync", GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    if (drv.get4("cuMemFree", &fn, SIM_LOOKUP_VERSION, 0) == GS_CUDA_SUCCESS)
        drv.free = (gs_pfn_cuMemFree_v2)fn;
    return drv.init && drv.driver_version && drv.device_count && drv.ctx_retain &&
                   drv.ctx_set && drv.ctx_sync && drv.mem_info && drv.alloc && drv.free &&
                   drv.alloc_pitch && drv.alloc_managed && drv.alloc_async &&
                   drv.free_async && drv.alloc_async_ptsz && drv.free_async_ptsz
               ? 0
               : -1;
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

/* ---- driver entry points -------------------------------------------------- */

/* A symbol the driver does not have is success with *funcPtr = NULL; the
 * reason is in *driverStatus (cudaDriverEntryPointQueryResult has the
 * driver's values). */
static gs_cudaerror entry_point(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                unsigned long long flags, int *driverStatus)
{
    gs_cuprocstatus status = GS_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    gs_curesult rc;

    if (!symbol || !funcPtr || cudaVersion > SIM_RUNTIME_VERSION)
        return GS_cudaErrorInvalidValue;
    driver_ready();
    if (!driver_loaded)
        return SIM_cudaErrorInsufficientDriver;
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
                                                         int *driverStatus)
{
    return done(entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus));
}

/* Resolves at the runtime's own version, as the real one does. */
SIM_EXPORT gs_cudaerror cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                                unsigned long long flags, int *driverStatus)
{
    return done(entry_point(symbol, funcPtr, SIM_RUNTIME_VERSION, flags, driverStatus));
}
