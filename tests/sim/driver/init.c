/*
 * init.c - Initialization, Version Management, Error Handling: cuInit, cuDriverGetVersion,
 * cuGetErrorString, cuGetErrorName.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"

gs_curesult sim_cuInit(unsigned int Flags)
{
    pthread_once(&env_once, read_env);
    if (Flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!cfg.ndevices)
        return GS_CUDA_ERROR_NO_DEVICE;
    __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuInit)

gs_curesult sim_cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *driverVersion = SIM_DRIVER_VERSION;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDriverGetVersion)

static const struct {
    gs_curesult code;
    const char *name, *text;
} errors[] = {
    {GS_CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {GS_CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {GS_CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {GS_CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {GS_CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {GS_CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {GS_CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {SIM_CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {GS_CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {GS_CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {SIM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {SIM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {SIM_CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* Like the real driver, the error lookups work before cuInit. */
static gs_curesult error_lookup(gs_curesult error, const char **pStr, int want_name)
{
    if (!pStr)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        if (errors[i].code == error) {
            *pStr = want_name ? errors[i].name : errors[i].text;
            return GS_CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return GS_CUDA_ERROR_INVALID_VALUE;
}

gs_curesult sim_cuGetErrorString(gs_curesult error, const char **pStr)
{
    return error_lookup(error, pStr, 0);
}
SIM_EXPORT(cuGetErrorString)

gs_curesult sim_cuGetErrorName(gs_curesult error, const char **pStr)
{
    return error_lookup(error, pStr, 1);
}
SIM_EXPORT(cuGetErrorName)
