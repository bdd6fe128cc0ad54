/*
 * device.c - Device Management and Version Management: cudaGetDeviceCount, cudaSetDevice,
 * cudaGetDevice, cudaDeviceSynchronize, cudaGetDeviceProperties, cudaDriverGetVersion,
 * cudaRuntimeGetVersion.
 */
#include "tests/sim/runtime/runtime.h"

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
