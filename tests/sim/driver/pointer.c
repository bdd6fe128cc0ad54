/*
 * pointer.c - Unified Addressing and address ranges: cuPointerGetAttribute,
 * cuMemGetAddressRange.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/vmm.h"

/* Writes attribute `attribute` of allocation e into data. */
static gs_curesult pointer_attribute(void *data, int attribute, const struct live *e,
                                     gs_cudeviceptr ptr)
{
    switch (attribute) {
    case SIM_CU_POINTER_ATTRIBUTE_CONTEXT:
        *(gs_cucontext *)data = &devices[e->device].ctx;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = SIM_CU_MEMORYTYPE_DEVICE;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(gs_cudeviceptr *)data = ptr;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = e->device;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(gs_cudeviceptr *)data = e->addr;
        return GS_CUDA_SUCCESS;
    case SIM_CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = e->size;
        return GS_CUDA_SUCCESS;
    default:
        return GS_CUDA_ERROR_INVALID_VALUE;
    }
}

/* An address inside a mapping of device memory: its device (NCCL's
 * ncclMemFree asks it of a cuMem buffer); the other attributes, and
 * mappings of host memory or of a multicast object, are not simulated. */
static gs_curesult mapped_attribute(void *data, int attribute, gs_cudeviceptr ptr)
{
    const struct range *m = rs_find(&mappings, ptr);

    if (!m || attribute != SIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL ||
        phys_tab[m->phys].device < 0)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *(int *)data = phys_tab[m->phys].device;
    return GS_CUDA_SUCCESS;
}

/* Answers for any address inside a live cuMemAlloc-style allocation;
 * RANGE_SIZE is the accounted (rounded) size. */
gs_curesult sim_cuPointerGetAttribute(void *data, int attribute, gs_cudeviceptr ptr)
{
    struct live *e;
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!data)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    e = table_containing(ptr);
    if (e)
        rc = pointer_attribute(data, attribute, e, ptr);
    else
        rc = mapped_attribute(data, attribute, ptr);
    pthread_mutex_unlock(&lock);
    return rc;
}
SIM_EXPORT(cuPointerGetAttribute)

/* The range holding dptr, lock held: an allocation (rounded size), a
 * mapping, or an opened IPC handle. */
static int address_range_locked(gs_cudeviceptr dptr, uint64_t *base, uint64_t *size)
{
    struct live *e = table_containing(dptr);
    const struct range *m = e ? NULL : rs_find(&mappings, dptr);

    if (e || m) {
        *base = e ? e->addr : m->addr;
        *size = e ? e->size : m->size;
        return 1;
    }
    for (size_t k = 0; k < nipc_opens; k++) {
        if (dptr - ipc_opens[k].addr < ipc_opens[k].size) {
            *base = ipc_opens[k].addr;
            *size = ipc_opens[k].size;
            return 1;
        }
    }
    return 0;
}

gs_curesult sim_cuMemGetAddressRange_v2(gs_cudeviceptr *pbase, size_t *psize,
                                        gs_cudeviceptr dptr)
{
    uint64_t base = 0, size = 0;
    int found;
    int dev = current_device();

    if (dev < 0)
        return -dev;
    pthread_mutex_lock(&lock);
    found = address_range_locked(dptr, &base, &size);
    pthread_mutex_unlock(&lock);
    if (!found)
        return GS_CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = base;
    if (psize)
        *psize = size;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuMemGetAddressRange_v2)
