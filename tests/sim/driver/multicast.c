/*
 * multicast.c - Multicast Object Management (NCCL's NVLS): cuMulticastGetGranularity,
 * cuMulticastCreate, cuMulticastAddDevice, cuMulticastBindMem/BindAddr, cuMulticastUnbind.
 *
 * Design
 *   - Multicast objects (cuMulticastCreate) are handles of the same table
 *     with no device and no memory of their own: devices join the team
 *     (cuMulticastAddDevice) and bind their own physical memory
 *     (cuMulticastBindMem, cuMulticastBindAddr), which a binding keeps alive
 *     until cuMulticastUnbind, as a mapping does. The object is mapped with
 *     cuMemMap, exported and imported, and released with cuMemRelease like
 *     physical memory.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/vmm.h"

/* Physical memory bound to a multicast object. */
struct mc_bind {
    uint64_t mc_serial; /* the object's */
    int mc, dev, phys;  /* the object's and the memory's allocation indexes */
    uint64_t mc_offset, size;
};

static struct mc_bind *mc_binds;
static size_t nmc_binds, mc_binds_cap;

/* A usable multicast object's allocation index; -1: none. */
static int mc_phys(gs_cumemhandle h)
{
    int i = handle_phys(h);
    return i >= 0 && phys_tab[i].multicast ? i : -1;
}

static gs_curesult mc_prop_check(const gs_cumulticastobjectprop *prop)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!prop || !prop->numDevices || prop->numDevices > SIM_MAX_DEVICES || prop->flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    return GS_CUDA_SUCCESS;
}

/* Both granularities are the 2 MiB of physical memory. */
gs_curesult sim_cuMulticastGetGranularity(size_t *granularity,
                                          const gs_cumulticastobjectprop *prop, int option)
{
    gs_curesult rc = mc_prop_check(prop);

    if (rc == GS_CUDA_SUCCESS && (!granularity || option < 0 || option > 1))
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    if (rc == GS_CUDA_SUCCESS)
        *granularity = SIM_GRANULE;
    return rc;
}
SIM_EXPORT(cuMulticastGetGranularity)

/* size in 2 MiB multiples; no device is charged. */
gs_curesult sim_cuMulticastCreate(gs_cumemhandle *mcHandle,
                                  const gs_cumulticastobjectprop *prop)
{
    gs_curesult rc = mc_prop_check(prop);
    gs_cumemhandle h = 0;
    int i;

    if (rc == GS_CUDA_SUCCESS &&
        (!mcHandle || !prop->size || prop->size % SIM_GRANULE || prop->size > SIM_SPAN))
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    if (rc == GS_CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        i = phys_new();
        h = i < 0 ? 0 : handle_new(i);
        if (h) {
            phys_tab[i] = (struct phys){next_serial++, prop->size, {0}, -1, 1, 0,
                                        1, prop->numDevices, 0};
            /* exportable as the object asked: other processes import it */
            phys_tab[i].prop.requestedHandleTypes = (int)prop->handleTypes;
            *mcHandle = h;
        } else {
            rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
        }
        pthread_mutex_unlock(&lock);
    }
    sim_log("cuMulticastCreate(%zu, %u devices) -> %d handle %llu", prop ? prop->size : 0,
            prop ? prop->numDevices : 0, rc, h);
    return rc;
}
SIM_EXPORT(cuMulticastCreate)

/* At most numDevices devices, each once. */
gs_curesult sim_cuMulticastAddDevice(gs_cumemhandle mcHandle, gs_cudevice dev)
{
    gs_curesult rc = GS_CUDA_SUCCESS;
    int i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(dev))
        return GS_CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    i = mc_phys(mcHandle);
    if (i < 0 || phys_tab[i].mc_team & (1u << dev) ||
        (unsigned)__builtin_popcount(phys_tab[i].mc_team) >= phys_tab[i].mc_devices)
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    else
        phys_tab[i].mc_team |= 1u << dev;
    pthread_mutex_unlock(&lock);
    sim_log("cuMulticastAddDevice(%llu, %d) -> %d", mcHandle, dev, rc);
    return rc;
}
SIM_EXPORT(cuMulticastAddDevice)

/* Binds [mem_offset, +size) of device memory allocation mem to
 * [mc_offset, +size) of object mc for the memory's device, which must have
 * joined the team and have nothing bound there yet. */
static gs_curesult bind_locked(int mc, uint64_t mc_offset, int mem, uint64_t mem_offset,
                               uint64_t size)
{
    const struct phys *o = &phys_tab[mc], *m = &phys_tab[mem];
    struct mc_bind *v;

    if (m->multicast || m->device < 0 || !(o->mc_team & (1u << m->device)) || !size ||
        mc_offset % SIM_GRANULE || mem_offset % SIM_GRANULE || size % SIM_GRANULE ||
        mc_offset > o->size || size > o->size - mc_offset || mem_offset > m->size ||
        size > m->size - mem_offset)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < nmc_binds; k++) {
        const struct mc_bind *b = &mc_binds[k];
        if (b->mc == mc && b->dev == m->device && mc_offset < b->mc_offset + b->size &&
            b->mc_offset < mc_offset + size)
            return GS_CUDA_ERROR_INVALID_VALUE;
    }
    v = grow(mc_binds, &mc_binds_cap, nmc_binds + 1, sizeof *v);
    if (!v)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    mc_binds = v;
    mc_binds[nmc_binds++] = (struct mc_bind){o->serial, mc, m->device, mem, mc_offset, size};
    phys_tab[mem].maps++;
    return GS_CUDA_SUCCESS;
}

gs_curesult sim_cuMulticastBindMem(gs_cumemhandle mcHandle, size_t mcOffset,
                                   gs_cumemhandle memHandle, size_t memOffset, size_t size,
                                   unsigned long long flags)
{
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;
    int mc, mem;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    mc = mc_phys(mcHandle);
    mem = handle_phys(memHandle);
    if (mc >= 0 && mem >= 0 && !flags)
        rc = bind_locked(mc, mcOffset, mem, memOffset, size);
    pthread_mutex_unlock(&lock);
    sim_log("cuMulticastBindMem(%llu, %zu, %llu, %zu, %zu) -> %d", mcHandle, mcOffset, memHandle,
            memOffset, size, rc);
    return rc;
}
SIM_EXPORT(cuMulticastBindMem)

/* memptr: inside a mapping of device memory, which must cover the size. */
gs_curesult sim_cuMulticastBindAddr(gs_cumemhandle mcHandle, size_t mcOffset,
                                    gs_cudeviceptr memptr, size_t size,
                                    unsigned long long flags)
{
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;
    const struct range *m;
    int mc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    mc = mc_phys(mcHandle);
    m = rs_find(&mappings, memptr);
    if (mc >= 0 && m && !flags && size <= m->addr + m->size - memptr)
        rc = bind_locked(mc, mcOffset, m->phys, m->offset + (memptr - m->addr), size);
    pthread_mutex_unlock(&lock);
    sim_log("cuMulticastBindAddr(%llu, %zu, 0x%llx, %zu) -> %d", mcHandle, mcOffset, memptr, size,
            rc);
    return rc;
}
SIM_EXPORT(cuMulticastBindAddr)

/* Exactly one binding of dev's; its memory may go. */
gs_curesult sim_cuMulticastUnbind(gs_cumemhandle mcHandle, gs_cudevice dev,
                                  size_t mcOffset, size_t size)
{
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;
    int mc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    mc = mc_phys(mcHandle);
    for (size_t k = 0; mc >= 0 && k < nmc_binds; k++) {
        struct mc_bind *b = &mc_binds[k];
        if (b->mc != mc || b->mc_serial != phys_tab[mc].serial || b->dev != dev ||
            b->mc_offset != mcOffset || b->size != size)
            continue;
        int mem = b->phys;
        *b = mc_binds[--nmc_binds];
        phys_tab[mem].maps--;
        phys_maybe_free(mem);
        rc = GS_CUDA_SUCCESS;
        break;
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuMulticastUnbind(%llu, %d, %zu, %zu) -> %d", mcHandle, dev, mcOffset, size, rc);
    return rc;
}
SIM_EXPORT(cuMulticastUnbind)
