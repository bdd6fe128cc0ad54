/*
 * load.c - how the runtime reaches the driver, and the contexts it makes current: the
 * driver's functions (drv), loaded once, the sticky outcome of that, the thread's current
 * device and the primary contexts.
 *
 * This is the part an interposer has to get right: like the real runtime, this library
 * is not linked against libcuda. On first use it dlopens "libcuda.so.1", takes only
 * "cuGetProcAddress" (the CUDA 11.3 getter, 4 arguments) with dlsym, asks that getter for
 * "cuGetProcAddress" at version 12000 (the 5-argument getter) and at 11030 (the 4-argument
 * one again), and from then on reaches the driver only through pointers those getters
 * return: cuMemFree through the 4-argument getter, everything else through the 5-argument
 * one, so both ABIs are used in ordinary operation.
 *
 * Design
 *   - One pthread_once loads the driver and calls cuInit; its outcome is
 *     the sticky result of every later call that needs the driver.
 *   - The current device is thread-local (default 0). Before a memory call
 *     the runtime retains the device's primary context (once per process)
 *     and makes it current on the thread (once per thread and device).
 *   - The context lock is held across fork() (pthread_atfork), so a child
 *     forked while another thread binds a context can use the runtime.
 *
 * Environment
 *   SIMCUDART_PTDS  1: cudaMallocAsync, cudaFreeAsync, cudaEventRecord,
 *                   cudaStreamWaitEvent and cudaStreamSynchronize use the driver's
 *                   per-thread-default-stream (_ptsz) variants, as a program
 *                   built with --default-stream per-thread would.
 */
#include "tests/sim/runtime/runtime.h"

#include <dlfcn.h>

struct sim_driver drv;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static gs_cudaerror load_error; /* sticky outcome of loading the driver */
int driver_loaded;              /* the getters work, whatever cuInit said */
int device_count;

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static gs_cucontext primary[SIM_MAX_DEVICES];

__thread int current_device;
static __thread int bound_device = -1; /* device whose context is current */

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

gs_cudaerror driver_ready(void)
{
    pthread_once(&load_once, load_driver);
    return load_error;
}

/* Makes the primary context of the thread's device current, once. */
gs_cudaerror bind_context(void)
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
