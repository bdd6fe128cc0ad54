/*
 * host.c - Memory Management, page-locked host memory: cuMemHostAlloc, cuMemAllocHost,
 * cuMemFreeHost, cuMemHostRegister/Unregister, cuMemHostGetDevicePointer.
 *
 * Design
 *   - Pinned host memory (cuMemHostAlloc, cuMemAllocHost) is real, page-
 *     aligned heap memory; registrations are tracked by exact byte range.
 *     Neither consumes device capacity.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"

static struct rangeset host_ranges;

/* Real, page-aligned memory, tracked so cuMemFreeHost can check it. */
static gs_curesult host_alloc(const char *api, void **pp, size_t bytesize, unsigned int flags)
{
    int dev = current_device();
    struct range r = {0};
    void *p;
    int bad;

    if (dev < 0)
        return -dev;
    if (!pp || !bytesize || (flags & ~(unsigned)SIM_CU_MEMHOSTALLOC_ALL))
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (bytesize > SIM_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    r.size = round_up(bytesize, SIM_PAGE);
    p = aligned_alloc(SIM_PAGE, r.size);
    if (!p)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    r.addr = (uint64_t)(uintptr_t)p;
    r.count = HOST_ALLOCATED;
    pthread_mutex_lock(&lock);
    bad = rs_insert(&host_ranges, &r);
    pthread_mutex_unlock(&lock);
    if (bad)
        free(p);
    else
        *pp = p;
    sim_log("%s(%zu) -> %d %p", api, bytesize, bad ? 2 : 0, bad ? NULL : p);
    return bad ? GS_CUDA_ERROR_OUT_OF_MEMORY : GS_CUDA_SUCCESS;
}

gs_curesult sim_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    return host_alloc("cuMemHostAlloc", pp, bytesize, Flags);
}
SIM_EXPORT(cuMemHostAlloc)

gs_curesult sim_cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return host_alloc("cuMemAllocHost_v2", pp, bytesize, 0);
}
SIM_EXPORT(cuMemAllocHost_v2)

/* Removes the host range that starts at p if it has the given kind. */
static int host_take(const void *p, int kind)
{
    struct range *r;
    int found;

    pthread_mutex_lock(&lock);
    r = rs_find(&host_ranges, (uint64_t)(uintptr_t)p);
    found = p && r && r->addr == (uint64_t)(uintptr_t)p && r->count == kind;
    if (found)
        rs_remove(&host_ranges, (size_t)(r - host_ranges.v), 1);
    pthread_mutex_unlock(&lock);
    return found;
}

gs_curesult sim_cuMemFreeHost(void *p)
{
    int dev = current_device();
    int found;

    if (dev < 0)
        return -dev;
    found = host_take(p, HOST_ALLOCATED);
    if (found)
        free(p);
    sim_log("cuMemFreeHost(%p) -> %d", p, found ? 0 : 1);
    return found ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemFreeHost)

/* Any overlap with a registration or a pinned allocation is refused. */
gs_curesult sim_cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    int dev = current_device();
    struct range r = {(uint64_t)(uintptr_t)p, bytesize, 0, 0, 0, HOST_REGISTERED};
    gs_curesult rc = GS_CUDA_SUCCESS;

    if (dev < 0)
        return -dev;
    if (!p || !bytesize || bytesize > UINT64_MAX - r.addr ||
        (Flags & ~(unsigned)SIM_CU_MEMHOSTREGISTER_ALL))
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (rs_overlaps(&host_ranges, r.addr, bytesize))
        rc = SIM_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    else if (rs_insert(&host_ranges, &r) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    sim_log("cuMemHostRegister_v2(%p, %zu) -> %d", p, bytesize, rc);
    return rc;
}
SIM_EXPORT(cuMemHostRegister_v2)

/* p must be the start of a registration. */
gs_curesult sim_cuMemHostUnregister(void *p)
{
    int dev = current_device();
    int found;

    if (dev < 0)
        return -dev;
    found = host_take(p, HOST_REGISTERED);
    sim_log("cuMemHostUnregister(%p) -> %d", p, found ? 0 : 713);
    return found ? GS_CUDA_SUCCESS : SIM_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
SIM_EXPORT(cuMemHostUnregister)

/* Unified addressing: the device sees pinned memory at the host address. */
gs_curesult sim_cuMemHostGetDevicePointer_v2(gs_cudeviceptr *pdptr, void *p,
                                             unsigned int Flags)
{
    int dev = current_device();
    int found;

    if (dev < 0)
        return -dev;
    if (!pdptr || Flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    found = rs_find(&host_ranges, (uint64_t)(uintptr_t)p) != NULL;
    pthread_mutex_unlock(&lock);
    if (found)
        *pdptr = (gs_cudeviceptr)(uintptr_t)p;
    return found ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemHostGetDevicePointer_v2)
