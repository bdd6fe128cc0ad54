/*
 * vmm.c - Virtual Memory Management: physical allocations and their handles, reservations and
 * mappings (cuMemCreate ... cuMemSetAccess).
 *
 * Design
 *   - Virtual memory: cuMemCreate makes a physical allocation (2 MiB
 *     granularity) with a reference count. The machine has no fabric: a
 *     requested FABRIC handle type is refused with CUDA_ERROR_NOT_SUPPORTED,
 *     what real drivers return on a GPU without fabric support (the one
 *     NCCL's ncclMemAlloc, PyTorch's ExpandableSegment::map and XLA's
 *     CudaRawMemoryAllocation::Create retry without FABRIC on, with
 *     CUDA_ERROR_NOT_PERMITTED, which a fabric GPU without an IMEX channel
 *     returns). Its handles are small integers,
 *     the lowest free one, reused once the allocation is gone, which is when
 *     the count is 0 and no mapping refers to it. Imports make a new handle
 *     for the same allocation; the "file descriptors" that cuMemExportTo-
 *     ShareableHandle writes are tokens from 1000000 up, valid in this
 *     process (and its forks) while the allocation lives.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/vmm.h"

/* A cuMemExportToShareableHandle token. */
struct token {
    int fd, phys;
    uint64_t serial;
};

static struct space va_space = {SIM_VA_BASE, SIM_REGION_SPAN, 0, NULL, 0, 0};
static struct rangeset reservations;
struct rangeset mappings;
struct phys *phys_tab;
static size_t phys_cap;
static int *handle_tab; /* handle h -> its phys index + 1; 0: free */
static size_t handle_cap;
static struct token *tokens;
static size_t ntokens, tokens_cap;
static int next_token = SIM_FIRST_TOKEN;

/* ---- physical allocations and handles (lock held) ----------------------- */

/* A usable handle's physical allocation index: live and not released to 0. */
int handle_phys(gs_cumemhandle h)
{
    int i;

    if (!h || h > handle_cap || !handle_tab[h - 1])
        return -1;
    i = handle_tab[h - 1] - 1;
    return phys_tab[i].refs > 0 ? i : -1;
}

/* The lowest free handle, now naming physical allocation i; 0: none. */
gs_cumemhandle handle_new(int i)
{
    size_t h = 0;
    int *v;

    while (h < handle_cap && handle_tab[h])
        h++;
    v = grow(handle_tab, &handle_cap, h + 1, sizeof *v);
    if (!v)
        return 0;
    handle_tab = v;
    handle_tab[h] = i + 1;
    return h + 1;
}

/* The lowest free physical-allocation slot; -1: none. */
int phys_new(void)
{
    size_t i = 0;
    struct phys *v;

    while (i < phys_cap && phys_tab[i].serial)
        i++;
    v = grow(phys_tab, &phys_cap, i + 1, sizeof *v);
    if (!v || i > INT32_MAX - 1)
        return -1;
    phys_tab = v;
    return (int)i;
}

/* Frees allocation i once it has no references and no mappings; its
 * handles become free. */
void phys_maybe_free(int i)
{
    struct phys *p = &phys_tab[i];

    if (p->refs || p->maps)
        return;
    if (p->device >= 0)
        devices[p->device].used -= p->size;
    p->serial = 0;
    for (size_t h = 0; h < handle_cap; h++)
        if (handle_tab[h] == i + 1)
            handle_tab[h] = 0;
}

static gs_curesult create_locked(gs_cumemhandle *out, uint64_t size,
                                 const gs_cumemallocationprop *prop)
{
    int dev = prop->location.type == GS_CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
    gs_cumemhandle h;
    int i;

    if (size > SIM_SPAN || (dev >= 0 && devices[dev].capacity - devices[dev].used < size))
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    i = phys_new();
    h = i < 0 ? 0 : handle_new(i);
    if (!h)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    phys_tab[i] = (struct phys){next_serial++, size, *prop, dev, 1, 0, 0, 0, 0};
    if (dev >= 0)
        devices[dev].used += size;
    *out = h;
    return GS_CUDA_SUCCESS;
}

/* ---- the calls ---------------------------------------------------------- */

/* A location cuMemCreate accepts: a device, or the host (HOST_NUMA: node 0,
 * the only one; HOST: not shareable, so no requested handle types). */
static gs_curesult location_check(const gs_cumemlocation *loc, int handle_types)
{
    switch (loc->type) {
    case GS_CU_MEM_LOCATION_TYPE_DEVICE:
        return valid_device(loc->id) ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_DEVICE;
    case GS_CU_MEM_LOCATION_TYPE_HOST:
        return handle_types ? GS_CUDA_ERROR_INVALID_VALUE : GS_CUDA_SUCCESS;
    case GS_CU_MEM_LOCATION_TYPE_HOST_NUMA:
        return loc->id == 0 ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
    case GS_CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return GS_CUDA_SUCCESS;
    default:
        return GS_CUDA_ERROR_INVALID_VALUE;
    }
}

static gs_curesult prop_check(const gs_cumemallocationprop *prop)
{
    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!prop || prop->type != GS_CU_MEM_ALLOCATION_TYPE_PINNED)
        return GS_CUDA_ERROR_INVALID_VALUE;
    return location_check(&prop->location, prop->requestedHandleTypes);
}

gs_curesult sim_cuMemGetAllocationGranularity(size_t *granularity,
                                              const gs_cumemallocationprop *prop,
                                              int option)
{
    gs_curesult rc = prop_check(prop);

    if (rc == GS_CUDA_SUCCESS &&
        (!granularity || option < 0 || option > SIM_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    if (rc == GS_CUDA_SUCCESS)
        *granularity = SIM_GRANULE;
    return rc;
}
SIM_EXPORT(cuMemGetAllocationGranularity)

gs_curesult sim_cuMemCreate(gs_cumemhandle *handle, size_t size,
                            const gs_cumemallocationprop *prop, unsigned long long flags)
{
    gs_curesult rc = prop_check(prop);

    if (rc == GS_CUDA_SUCCESS && (!handle || !size || size % SIM_GRANULE || flags))
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    /* No fabric here (no NVSwitch fabric, no IMEX channel): a FABRIC handle
     * type is refused, and NCCL, PyTorch and XLA retry without it. */
    if (rc == GS_CUDA_SUCCESS && (prop->requestedHandleTypes & GS_CU_MEM_HANDLE_TYPE_FABRIC))
        rc = cfg.fabric ? SIM_CUDA_ERROR_NOT_PERMITTED : GS_CUDA_ERROR_NOT_SUPPORTED;
    if (rc == GS_CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        rc = create_locked(handle, size, prop);
        pthread_mutex_unlock(&lock);
    }
    sim_log("cuMemCreate(%zu, location %d/%d) -> %d handle %llu", size,
            prop ? prop->location.type : -1, prop ? prop->location.id : -1, rc,
            rc == GS_CUDA_SUCCESS ? *handle : 0);
    return rc;
}
SIM_EXPORT(cuMemCreate)

gs_curesult sim_cuMemRelease(gs_cumemhandle handle)
{
    int i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = handle_phys(handle);
    if (i >= 0) {
        phys_tab[i].refs--;
        phys_maybe_free(i);
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuMemRelease(%llu) -> %d", handle, i >= 0 ? 0 : 1);
    return i >= 0 ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemRelease)

/* Any address inside a mapping: the handle it was mapped with, retained. */
gs_curesult sim_cuMemRetainAllocationHandle(gs_cumemhandle *handle, void *addr)
{
    struct range *m;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!handle)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    m = rs_find(&mappings, (uint64_t)(uintptr_t)addr);
    if (m) {
        phys_tab[m->phys].refs++;
        *handle = m->handle;
    }
    pthread_mutex_unlock(&lock);
    return m ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemRetainAllocationHandle)

/* Only POSIX file descriptors, and only for an allocation that asked for
 * them in requestedHandleTypes. */
static gs_curesult export_locked(int *fd, gs_cumemhandle handle)
{
    int i = handle_phys(handle);
    struct token *t;

    if (i < 0 || !(phys_tab[i].prop.requestedHandleTypes &
                   SIM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return GS_CUDA_ERROR_INVALID_VALUE;
    t = grow(tokens, &tokens_cap, ntokens + 1, sizeof *t);
    if (!t || next_token == INT32_MAX)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    tokens = t;
    tokens[ntokens++] = (struct token){next_token, i, phys_tab[i].serial};
    *fd = next_token++;
    return GS_CUDA_SUCCESS;
}

gs_curesult sim_cuMemExportToShareableHandle(void *shareableHandle, gs_cumemhandle handle,
                                             gs_cumemhandletype handleType,
                                             unsigned long long flags)
{
    gs_curesult rc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!shareableHandle || flags || handleType != SIM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    rc = export_locked(shareableHandle, handle);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemExportToShareableHandle(%llu) -> %d fd %d", handle, rc,
            rc == GS_CUDA_SUCCESS ? *(int *)shareableHandle : -1);
    return rc;
}
SIM_EXPORT(cuMemExportToShareableHandle)

/* A new handle for the allocation behind token fd, while it lives. */
static gs_curesult import_locked(gs_cumemhandle *handle, int fd)
{
    const struct token *t = NULL;

    for (size_t k = 0; !t && k < ntokens; k++)
        if (tokens[k].fd == fd)
            t = &tokens[k];
    if (!t || phys_tab[t->phys].serial != t->serial)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *handle = handle_new(t->phys);
    if (!*handle)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    phys_tab[t->phys].refs++;
    return GS_CUDA_SUCCESS;
}

gs_curesult sim_cuMemImportFromShareableHandle(gs_cumemhandle *handle, void *osHandle,
                                               gs_cumemhandletype shHandleType)
{
    gs_curesult rc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!handle || shHandleType != SIM_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    rc = import_locked(handle, (int)(intptr_t)osHandle);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemImportFromShareableHandle(fd %d) -> %d handle %llu", (int)(intptr_t)osHandle,
            rc, rc == GS_CUDA_SUCCESS ? *handle : 0);
    return rc;
}
SIM_EXPORT(cuMemImportFromShareableHandle)

gs_curesult sim_cuMemGetAllocationPropertiesFromHandle(gs_cumemallocationprop *prop,
                                                       gs_cumemhandle handle)
{
    int i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!prop)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    i = handle_phys(handle);
    if (i >= 0)
        *prop = phys_tab[i].prop;
    pthread_mutex_unlock(&lock);
    return i >= 0 ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemGetAllocationPropertiesFromHandle)

/* A non-zero hint is honoured when that range is free and aligned. */
static gs_curesult reserve_locked(gs_cudeviceptr *ptr, uint64_t size, uint64_t align,
                                  uint64_t hint)
{
    uint64_t addr = hint;
    struct range r = {0};

    if (!hint || hint % align || space_take_at(&va_space, hint, size) != 0)
        if (space_take(&va_space, size, align, &addr) != 0)
            return GS_CUDA_ERROR_OUT_OF_MEMORY;
    r.addr = addr;
    r.size = size;
    if (rs_insert(&reservations, &r) != 0) {
        space_put(&va_space, addr, size);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = addr;
    return GS_CUDA_SUCCESS;
}

/* size in 2 MiB multiples, addr (a hint) in pages; alignment 0 or a power
 * of two (at least 2 MiB is used). Consumes no device memory. */
gs_curesult sim_cuMemAddressReserve(gs_cudeviceptr *ptr, size_t size, size_t alignment,
                                    gs_cudeviceptr addr, unsigned long long flags)
{
    uint64_t align = alignment > SIM_GRANULE ? alignment : SIM_GRANULE;
    gs_curesult rc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!ptr || !size || size % SIM_GRANULE || addr % SIM_PAGE || flags ||
        (alignment & (alignment - 1)))
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (size > SIM_REGION_SPAN || align > SIM_REGION_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    rc = reserve_locked(ptr, size, align, addr);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemAddressReserve(%zu) -> %d 0x%llx", size, rc, rc ? 0ull : *ptr);
    return rc;
}
SIM_EXPORT(cuMemAddressReserve)

/* Exactly a reservation, with nothing mapped in it. */
gs_curesult sim_cuMemAddressFree(gs_cudeviceptr ptr, size_t size)
{
    struct range *r;
    int ok;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    r = rs_find(&reservations, ptr);
    ok = r && r->addr == ptr && r->size == size && r->count == 0;
    if (ok) {
        space_put(&va_space, ptr, size);
        rs_remove(&reservations, (size_t)(r - reservations.v), 1);
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuMemAddressFree(0x%llx, %zu) -> %d", ptr, size, ok ? 0 : 1);
    return ok ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemAddressFree)

static gs_curesult map_locked(uint64_t ptr, uint64_t size, uint64_t offset, gs_cumemhandle h)
{
    int i = handle_phys(h);
    struct range *r = rs_find(&reservations, ptr);
    struct range m = {ptr, size, offset, h, i, 0};

    if (i < 0 || !r || size > r->addr + r->size - ptr || rs_overlaps(&mappings, ptr, size) ||
        offset > phys_tab[i].size || size > phys_tab[i].size - offset)
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (rs_insert(&mappings, &m) != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    r->count++;
    phys_tab[i].maps++;
    return GS_CUDA_SUCCESS;
}

/* ptr, size and offset in 2 MiB multiples; the range inside one
 * reservation and not mapped yet; offset + size within the allocation. */
gs_curesult sim_cuMemMap(gs_cudeviceptr ptr, size_t size, size_t offset,
                         gs_cumemhandle handle, unsigned long long flags)
{
    gs_curesult rc;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!size || ptr % SIM_GRANULE || size % SIM_GRANULE || offset % SIM_GRANULE || flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    rc = map_locked(ptr, size, offset, handle);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemMap(0x%llx, %zu, %zu, %llu) -> %d", ptr, size, offset, handle, rc);
    return rc;
}
SIM_EXPORT(cuMemMap)

/* Drops mappings [i, i+count): their allocations may go. */
static void unmap_locked(size_t i, size_t count)
{
    for (size_t k = i; k < i + count; k++) {
        const struct range *m = &mappings.v[k];

        rs_find(&reservations, m->addr)->count--;
        phys_tab[m->phys].maps--;
        phys_maybe_free(m->phys);
    }
    rs_remove(&mappings, i, count);
}

/* The range must be one mapping, or several adjacent ones, exactly. */
gs_curesult sim_cuMemUnmap(gs_cudeviceptr ptr, size_t size)
{
    size_t count = 0;
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = size ? rs_run(&mappings, ptr, size, &count) : -1;
    if (i >= 0)
        unmap_locked((size_t)i, count);
    pthread_mutex_unlock(&lock);
    sim_log("cuMemUnmap(0x%llx, %zu) -> %d", ptr, size, i >= 0 ? 0 : 1);
    return i >= 0 ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuMemUnmap)

static gs_curesult access_check(const struct sim_access_desc *desc, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        gs_curesult rc = location_check(&desc[k].location, 0);

        if (rc != GS_CUDA_SUCCESS)
            return rc;
        if (desc[k].flags != 0 && desc[k].flags != SIM_CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[k].flags != SIM_CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return GS_CUDA_ERROR_INVALID_VALUE;
    }
    return GS_CUDA_SUCCESS;
}

/* Checks the arguments and that the range is whole adjacent mappings;
 * access is not simulated. */
gs_curesult sim_cuMemSetAccess(gs_cudeviceptr ptr, size_t size,
                               const struct sim_access_desc *desc, size_t count)
{
    gs_curesult rc;
    size_t n;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!desc || !count || !size)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = access_check(desc, count);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    if (rs_run(&mappings, ptr, size, &n) < 0)
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return rc;
}
SIM_EXPORT(cuMemSetAccess)
