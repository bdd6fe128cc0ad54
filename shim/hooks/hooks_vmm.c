/*
 * hooks_vmm.c - virtual memory management: physical memory, address
 * ranges and the mappings between them (PyTorch's expandable segments, NCCL).
 *
 *   cuMemCreate / cuMemRelease         physical memory, by handle: device memory,
 *                                      or pinned host memory when the properties
 *                                      put it on the host (NCCL does)
 *   cuMemRetainAllocationHandle        one more reference, balanced by a release
 *   cuMemImportFromShareableHandle     another process's physical memory (imported)
 *   cuMemAddressReserve / Free         address space: never counted as memory
 *   cuMemMap / cuMemUnmap              views of physical memory (mapped): counted
 *                                      apart, so that memory mapped twice still
 *                                      counts once; a mapping holds a reference
 *                                      to its memory (released while mapped, it
 *                                      lives on), and one unmap may end several
 *   cuMulticastCreate                  a multicast object (NCCL's NVLS): a handle
 *                                      of its own kind, mapped with cuMemMap and
 *                                      released with cuMemRelease like physical
 *                                      memory; the memory bound to it
 *                                      (cuMulticastBindMem/BindAddr, not hooked)
 *                                      is counted where it was created
 *
 * NCCL frees with retain -> release -> unmap -> release: the analyzer keeps a
 * reference count per handle, and the memory is gone when it reaches zero.
 */
#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks_int.h"

static enum gs_kind kind_of(const gs_cumemallocationprop *prop, int32_t *device)
{
    *device = GS_DEVICE_UNKNOWN;
    if (!prop || prop->location.type != GS_CU_MEM_LOCATION_TYPE_DEVICE)
        return prop ? GS_KIND_HOST_PINNED : GS_KIND_DEVICE;
    *device = prop->location.id;
    return GS_KIND_DEVICE;
}

GS_EXPORT gs_curesult cuMemCreate(gs_cumemhandle *handle, size_t size,
                                  const gs_cumemallocationprop *prop, unsigned long long flags)
{
    GS_REAL_OR_MISSING(cuMemCreate);
    gs_curesult r = real(handle, size, prop, flags);
    int32_t device;
    enum gs_kind kind = kind_of(prop, &device);
    gs_after_alloc(GS_API_cuMemCreate, kind, GS_SPACE_HANDLE, device, r, handle, size, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemRelease(gs_cumemhandle handle)
{
    GS_REAL_OR_MISSING(cuMemRelease);
    GS_FREEING(GS_API_cuMemRelease, GS_SPACE_HANDLE, handle, NULL, real(handle));
}

/* The size is what each device may bind to the object (prop->size); the
 * object spans devices: no device of its own. */
GS_EXPORT gs_curesult cuMulticastCreate(gs_cumemhandle *mcHandle,
                                        const gs_cumulticastobjectprop *prop)
{
    GS_REAL_OR_MISSING(cuMulticastCreate);
    gs_curesult r = real(mcHandle, prop);
    gs_after_alloc(GS_API_cuMulticastCreate, GS_KIND_MULTICAST, GS_SPACE_HANDLE,
                   GS_DEVICE_UNKNOWN, r, mcHandle, prop ? prop->size : 0, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemRetainAllocationHandle(gs_cumemhandle *handle, void *addr)
{
    GS_REAL_OR_MISSING(cuMemRetainAllocationHandle);
    gs_curesult r = real(handle, addr);
    if (r == GS_CUDA_SUCCESS && handle)
        gs_record_ref(GS_API_cuMemRetainAllocationHandle, GS_SPACE_HANDLE, *handle);
    return r;
}

/* The size of imported memory is not known to the importer: recorded as 0. */
GS_EXPORT gs_curesult cuMemImportFromShareableHandle(gs_cumemhandle *handle, void *osHandle,
                                                     gs_cumemhandletype shHandleType)
{
    GS_REAL_OR_MISSING(cuMemImportFromShareableHandle);
    gs_curesult r = real(handle, osHandle, shHandleType);
    gs_after_alloc(GS_API_cuMemImportFromShareableHandle, GS_KIND_IMPORTED, GS_SPACE_HANDLE,
                   GS_DEVICE_CURRENT, r, handle, 0, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAddressReserve(gs_cudeviceptr *ptr, size_t size, size_t alignment,
                                          gs_cudeviceptr addr, unsigned long long flags)
{
    GS_REAL_OR_MISSING(cuMemAddressReserve);
    gs_curesult r = real(ptr, size, alignment, addr, flags);
    gs_after_alloc(GS_API_cuMemAddressReserve, GS_KIND_ADDRESS_SPACE, GS_SPACE_RESERVATION,
                   GS_DEVICE_UNKNOWN, r, ptr, size, NULL);
    return r;
}

GS_EXPORT gs_curesult cuMemAddressFree(gs_cudeviceptr ptr, size_t size)
{
    GS_REAL_OR_MISSING(cuMemAddressFree);
    GS_FREEING(GS_API_cuMemAddressFree, GS_SPACE_RESERVATION, ptr, NULL, real(ptr, size));
}

GS_EXPORT gs_curesult cuMemMap(gs_cudeviceptr ptr, size_t size, size_t offset,
                               gs_cumemhandle handle, unsigned long long flags)
{
    GS_REAL_OR_MISSING(cuMemMap);
    gs_curesult r = real(ptr, size, offset, handle, flags);
    if (r == GS_CUDA_SUCCESS)
        gs_record_map(GS_API_cuMemMap, ptr, size, handle);
    else
        gs_record_alloc_failed(GS_API_cuMemMap, GS_DEVICE_CURRENT, size, NULL, r);
    return r;
}

GS_EXPORT gs_curesult cuMemUnmap(gs_cudeviceptr ptr, size_t size)
{
    GS_REAL_OR_MISSING(cuMemUnmap);
    gs_record_unmap(GS_API_cuMemUnmap, ptr, size);
    gs_curesult r = real(ptr, size);
    gs_after_free(GS_API_cuMemUnmap, GS_SPACE_MAPPING, ptr, NULL, r);
    return r;
}
