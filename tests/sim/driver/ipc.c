/*
 * ipc.c - Memory Management, IPC: cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/vmm.h"

/* What cuIpcGetMemHandle writes into the 64 bytes of a CUipcMemHandle. */
struct sim_ipc {
    char magic[8];
    int32_t pid, device;
    uint64_t dptr, size, serial;
};
_Static_assert(sizeof(struct sim_ipc) <= sizeof(gs_cuipcmemhandle), "IPC handle too small");

static struct space ipc_space = {SIM_IPC_BASE, SIM_REGION_SPAN, 0, NULL, 0, 0};
struct ipc_open *ipc_opens;
size_t nipc_opens;
static size_t ipc_opens_cap;

static const char ipc_magic[8] = "SIMIPC1";

/* Any address inside a live cuMemAlloc/cuMemAllocPitch allocation (not
 * managed, not from a pool): the handle names the whole allocation. */
gs_curesult sim_cuIpcGetMemHandle(gs_cuipcmemhandle *pHandle, gs_cudeviceptr dptr)
{
    int dev = current_device();
    struct sim_ipc ipc = {{0}, 0, 0, 0, 0, 0};
    struct live *e;

    if (dev < 0)
        return -dev;
    if (!pHandle)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    e = table_containing(dptr);
    if (e && !e->managed && !e->pool)
        ipc = (struct sim_ipc){{0}, (int32_t)getpid(), e->device, e->addr, e->size, e->serial};
    pthread_mutex_unlock(&lock);
    if (!ipc.size)
        return GS_CUDA_ERROR_INVALID_VALUE;
    memcpy(ipc.magic, ipc_magic, sizeof ipc.magic);
    memset(pHandle, 0, sizeof *pHandle);
    memcpy(pHandle->reserved, &ipc, sizeof ipc);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuIpcGetMemHandle)

/* An open handle gets one address per process, reference-counted. */
static gs_curesult ipc_open_locked(gs_cudeviceptr *pdptr, const gs_cuipcmemhandle *h,
                                   uint64_t size)
{
    struct ipc_open *v;
    uint64_t addr;

    for (size_t k = 0; k < nipc_opens; k++) {
        if (memcmp(&ipc_opens[k].handle, h, sizeof *h) == 0) {
            ipc_opens[k].refs++;
            *pdptr = ipc_opens[k].addr;
            return GS_CUDA_SUCCESS;
        }
    }
    v = grow(ipc_opens, &ipc_opens_cap, nipc_opens + 1, sizeof *v);
    if (!v)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    ipc_opens = v;
    if (space_take(&ipc_space, size, SIM_ALIGN, &addr) != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    ipc_opens[nipc_opens++] = (struct ipc_open){*h, addr, size, 1};
    *pdptr = addr;
    return GS_CUDA_SUCCESS;
}

/* Any handle this sim wrote, even this process's own; no device memory. */
gs_curesult sim_cuIpcOpenMemHandle_v2(gs_cudeviceptr *pdptr, gs_cuipcmemhandle handle,
                                      unsigned int Flags)
{
    int dev = current_device();
    struct sim_ipc ipc;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    memcpy(&ipc, handle.reserved, sizeof ipc);
    if (!pdptr || (Flags & ~(unsigned)SIM_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
        memcmp(ipc.magic, ipc_magic, sizeof ipc.magic) != 0 || !valid_device(ipc.device) ||
        !ipc.size || ipc.size > SIM_SPAN)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    rc = ipc_open_locked(pdptr, &handle, ipc.size);
    pthread_mutex_unlock(&lock);
    sim_log("cuIpcOpenMemHandle_v2(dev %d 0x%llx) -> %d 0x%llx", ipc.device,
            (unsigned long long)ipc.dptr, rc, rc ? 0ull : *pdptr);
    return rc;
}
SIM_EXPORT(cuIpcOpenMemHandle_v2)

/* The last close of an opened handle frees its address. */
gs_curesult sim_cuIpcCloseMemHandle(gs_cudeviceptr dptr)
{
    int dev = current_device();
    size_t k = 0;
    int found;

    if (dev < 0)
        return -dev;
    pthread_mutex_lock(&lock);
    while (k < nipc_opens && ipc_opens[k].addr != dptr)
        k++;
    found = k < nipc_opens;
    if (found && --ipc_opens[k].refs == 0) {
        space_put(&ipc_space, ipc_opens[k].addr, ipc_opens[k].size);
        ipc_opens[k] = ipc_opens[--nipc_opens];
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuIpcCloseMemHandle(0x%llx) -> %d", dptr, found ? 0 : 1);
    return found ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_INVALID_VALUE;
}
SIM_EXPORT(cuIpcCloseMemHandle)
