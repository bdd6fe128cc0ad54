/*
 * device.c - Device Management: cuDeviceGetCount, cuDeviceGet, cuDeviceGetAttribute,
 * cuDeviceGetName, cuDeviceTotalMem, and the device's pools (cuDeviceGetDefaultMemPool,
 * cuDeviceGetMemPool, cuDeviceSetMemPool).
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"

gs_curesult sim_cuDeviceGetCount(int *count)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!count)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *count = cfg.ndevices;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGetCount)

gs_curesult sim_cuDeviceGet(gs_cudevice *device, int ordinal)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!device)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGet)

/* The attributes NCCL, XLA, TensorFlow and PyTorch ask before they choose
 * an allocation path: virtual memory management and pools supported, no
 * GPUDirect RDMA with virtual memory management (no NIC; PyTorch's
 * ExpandableSegment::map asks before each cuMemCreate), FABRIC as
 * SIMCUDA_FABRIC says, host NUMA node 0. Any other:
 * CUDA_ERROR_INVALID_VALUE. */
gs_curesult sim_cuDeviceGetAttribute(int *pi, int attrib, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    if (!pi)
        return GS_CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case SIM_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: /* fall through */
    case SIM_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *pi = 1; break;
    case SIM_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: /* fall through */
    case SIM_CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *pi = 0; break;
    case SIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: *pi = cfg.fabric; break;
    default: return GS_CUDA_ERROR_INVALID_VALUE;
    }
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGetAttribute)

gs_curesult sim_cuDeviceGetName(char *name, int len, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!name || len <= 0)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "SimCUDA Device %d", dev);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGetName)

gs_curesult sim_cuDeviceTotalMem_v2(size_t *bytes, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!bytes)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    *bytes = devices[dev].capacity;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceTotalMem_v2)

/* The checks of the cuDevice*MemPool calls. */
static gs_curesult device_pool_check(const void *out, gs_cudevice dev)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!out)
        return GS_CUDA_ERROR_INVALID_VALUE;
    return valid_device(dev) ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_DEVICE;
}

gs_curesult sim_cuDeviceGetDefaultMemPool(gs_cumempool *pool_out, gs_cudevice dev)
{
    gs_curesult rc = device_pool_check(pool_out, dev);

    if (rc == GS_CUDA_SUCCESS)
        *pool_out = &devices[dev].pool;
    return rc;
}
SIM_EXPORT(cuDeviceGetDefaultMemPool)

gs_curesult sim_cuDeviceGetMemPool(gs_cumempool *pool, gs_cudevice dev)
{
    gs_curesult rc = device_pool_check(pool, dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    *pool = devices[dev].cur_pool;
    pthread_mutex_unlock(&lock);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuDeviceGetMemPool)

/* The pool must be dev's (CUDA_ERROR_INVALID_VALUE otherwise). */
gs_curesult sim_cuDeviceSetMemPool(gs_cudevice dev, gs_cumempool pool)
{
    gs_curesult rc = device_pool_check(pool, dev);
    struct gs_cupool_st *p;

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    p = pool_of(pool);
    if (p && p->device == dev)
        devices[dev].cur_pool = p;
    else
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return rc;
}
SIM_EXPORT(cuDeviceSetMemPool)
