/*
 * getproc.c - Driver Entry Point Access: cudaGetDriverEntryPoint[ByVersion][_ptsz], through
 * the driver's 5-argument getter.
 */
#include "tests/sim/runtime/runtime.h"

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
