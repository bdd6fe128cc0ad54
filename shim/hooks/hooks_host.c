/*
 * hooks_host.c - pinned host memory (the staging buffers that feed the GPU)
 * and device memory imported from another process through IPC.
 *
 * Host memory has no device: its events carry GS_DEVICE_UNKNOWN. Memory
 * opened from another process's IPC handle is seen, not owned: its own
 * category, with the size the driver gives for the range.
 */
#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks_int.h"

GS_EXPORT gs_curesult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    GS_REAL_OR_MISSING(cuMemHostAlloc);
    gs_curesult r = real(pp, bytesize, Flags);
    gs_after_alloc(GS_API_cuMemHostAlloc, GS_KIND_HOST_PINNED, GS_SPACE_ADDRESS,
                   GS_DEVICE_UNKNOWN, r, pp, bytesize, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    GS_REAL_OR_MISSING(cuMemAllocHost_v2);
    gs_curesult r = real(pp, bytesize);
    gs_after_alloc(GS_API_cuMemAllocHost_v2, GS_KIND_HOST_PINNED, GS_SPACE_ADDRESS,
                   GS_DEVICE_UNKNOWN, r, pp, bytesize, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemFreeHost(void *p)
{
    GS_REAL_OR_MISSING(cuMemFreeHost);
    uint64_t key = (uint64_t)(uintptr_t)p;
    GS_FREEING(GS_API_cuMemFreeHost, GS_SPACE_ADDRESS, key, NULL, real(p));
}

GS_EXPORT gs_curesult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    GS_REAL_OR_MISSING(cuMemHostRegister_v2);
    gs_curesult r = real(p, bytesize, Flags);
    gs_after_alloc(GS_API_cuMemHostRegister_v2, GS_KIND_HOST_PINNED, GS_SPACE_ADDRESS,
                   GS_DEVICE_UNKNOWN, r, &p, bytesize, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemHostUnregister(void *p)
{
    GS_REAL_OR_MISSING(cuMemHostUnregister);
    uint64_t key = (uint64_t)(uintptr_t)p;
    GS_FREEING(GS_API_cuMemHostUnregister, GS_SPACE_ADDRESS, key, NULL, real(p));
}

/* The size of the range at dptr, as the driver knows it; 0 if it does not say. */
static uint64_t range_size(gs_cudeviceptr dptr)
{
    gs_pfn_cuMemGetAddressRange_v2 get =
        (gs_pfn_cuMemGetAddressRange_v2)gs_real(GS_FN_cuMemGetAddressRange_v2);
    gs_cudeviceptr base;
    size_t size;
    return get && get(&base, &size, dptr) == GS_CUDA_SUCCESS ? size : 0;
}

GS_EXPORT gs_curesult cuIpcOpenMemHandle_v2(gs_cudeviceptr *pdptr, gs_cuipcmemhandle handle,
                                            unsigned int Flags)
{
    GS_REAL_OR_MISSING(cuIpcOpenMemHandle_v2);
    gs_curesult r = real(pdptr, handle, Flags);
    uint64_t size = r == GS_CUDA_SUCCESS && pdptr ? range_size(*pdptr) : 0;
    gs_after_alloc(GS_API_cuIpcOpenMemHandle_v2, GS_KIND_IMPORTED, GS_SPACE_ADDRESS,
                   GS_DEVICE_CURRENT, r, pdptr, size, NULL);
    return r;
}

GS_EXPORT gs_curesult cuIpcCloseMemHandle(gs_cudeviceptr dptr)
{
    GS_REAL_OR_MISSING(cuIpcCloseMemHandle);
    GS_FREEING(GS_API_cuIpcCloseMemHandle, GS_SPACE_ADDRESS, dptr, NULL, real(dptr));
}
