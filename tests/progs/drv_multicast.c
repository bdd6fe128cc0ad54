/*
 * drv_multicast.c - an NVLink SHARP (NVLS) buffer as NCCL makes and frees
 * one, following NVIDIA/nccl src/transport/nvls.cc: nvlsAllocateMem
 * (nvlsGroupCreate, cuMulticastAddDevice, the unicast buffer, the bind, the
 * multicast mapping), then nvlsGroupUnbind and nvlsGroupUnmapMem. One rank,
 * the team's creator, with a team of one device. The multicast functions
 * come from cuGetProcAddress at CUDA 12.1 (12010), as NCCL's pfn_ pointers
 * do (src/misc/cudawrap.cc), so the shim must wrap what the getter hands
 * out; the cuMem* calls go by symbol.
 *
 *   cuMulticastGetGranularity  the size rounded to it: 8 MiB
 *   cuMulticastCreate          the multicast object: 8 MiB (multicast)
 *   cuMemExportToShareableHandle, cuMemImportFromShareableHandle
 *                              nvlsGroupConnect: a peer rank gets the object
 *                              by file descriptor (imported, size unknown: 0)
 *   cuMulticastAddDevice       device 0 joins the team
 *   cuMemAddressReserve        8 MiB for the unicast view
 *   cuMemCreate                8 MiB of device memory (device)
 *   cuMemMap, cuMemSetAccess   the unicast view (mapped)
 *   cuMulticastBindMem         the device memory bound to the object
 *   cuMemAddressReserve        8 MiB for the multicast view
 *   cuMemMap, cuMemSetAccess   the multicast object mapped (mapped)
 *   cuMulticastUnbind          nvlsGroupUnbind
 *   cuMemUnmap, cuMemAddressFree, cuMemRelease       the unicast buffer
 *   cuMemUnmap, cuMemAddressFree, cuMemRelease       the multicast object
 *   cuMemRelease               the peer's imported handle
 *
 * Device memory: 8 MiB at the peak, the physical memory only; the multicast
 * object is its own category (8 MiB at its peak); nothing is left and no
 * free is unknown. The peer runs in this process (the simulated driver's
 * descriptors are valid here), between the creator's steps.
 */
#include "progs.h"

struct access_desc { /* CUmemAccessDesc */
    gs_cumemlocation location;
    int flags;
};

#define PROT_READWRITE 3  /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE */
#define GRANULARITY_RECOMMENDED 1 /* CU_MULTICAST_GRANULARITY_RECOMMENDED */
#define HANDLE_TYPE_POSIX_FD 1    /* CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, NCCL's default */

/* NCCL's CUPFN(...) pointers */
static gs_curesult (*pfn_cuMulticastGetGranularity)(size_t *granularity,
                                                    const gs_cumulticastobjectprop *prop,
                                                    int option);
static gs_curesult (*pfn_cuMulticastCreate)(gs_cumemhandle *mcHandle,
                                            const gs_cumulticastobjectprop *prop);
static gs_curesult (*pfn_cuMulticastAddDevice)(gs_cumemhandle mcHandle, gs_cudevice dev);
static gs_curesult (*pfn_cuMulticastBindMem)(gs_cumemhandle mcHandle, size_t mcOffset,
                                             gs_cumemhandle memHandle, size_t memOffset,
                                             size_t size, unsigned long long flags);
static gs_curesult (*pfn_cuMulticastUnbind)(gs_cumemhandle mcHandle, gs_cudevice dev,
                                            size_t mcOffset, size_t size);
gs_curesult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                gs_cuuint64 flags, gs_cuprocstatus *symbolStatus);
gs_curesult cuMemExportToShareableHandle(void *shareableHandle, gs_cumemhandle handle,
                                         gs_cumemhandletype handleType, unsigned long long flags);
gs_curesult cuMemImportFromShareableHandle(gs_cumemhandle *handle, void *osHandle,
                                           gs_cumemhandletype shHandleType);
gs_curesult cuMemCreate(gs_cumemhandle *handle, size_t size, const gs_cumemallocationprop *prop,
                        unsigned long long flags);
gs_curesult cuMemRelease(gs_cumemhandle handle);
gs_curesult cuMemAddressReserve(gs_cudeviceptr *ptr, size_t size, size_t alignment,
                                gs_cudeviceptr addr, unsigned long long flags);
gs_curesult cuMemAddressFree(gs_cudeviceptr ptr, size_t size);
gs_curesult cuMemMap(gs_cudeviceptr ptr, size_t size, size_t offset, gs_cumemhandle handle,
                     unsigned long long flags);
gs_curesult cuMemUnmap(gs_cudeviceptr ptr, size_t size);
gs_curesult cuMemSetAccess(gs_cudeviceptr ptr, size_t size, const struct access_desc *desc,
                           size_t count);

static void *load_sym(const char *name)
{
    void *pfn = NULL;
    gs_cuprocstatus status;
    EXPECT(cuGetProcAddress_v2(name, &pfn, 12010, GS_CU_GET_PROC_ADDRESS_DEFAULT, &status),
           GS_CUDA_SUCCESS);
    EXPECT(status, GS_CU_GET_PROC_ADDRESS_SUCCESS);
    return pfn;
}

/* cudawrap.cc's LOAD_SYM of each, at the version it appeared in */
static void load_multicast(void)
{
    *(void **)&pfn_cuMulticastGetGranularity = load_sym("cuMulticastGetGranularity");
    *(void **)&pfn_cuMulticastCreate = load_sym("cuMulticastCreate");
    *(void **)&pfn_cuMulticastAddDevice = load_sym("cuMulticastAddDevice");
    *(void **)&pfn_cuMulticastBindMem = load_sym("cuMulticastBindMem");
    *(void **)&pfn_cuMulticastUnbind = load_sym("cuMulticastUnbind");
}

struct nvls_buffer {
    size_t size;
    gs_cumemhandle uc_handle, mc_handle, peer_mc_handle;
    gs_cudeviceptr uc_ptr, mc_ptr;
};

/* nvlsGroupCreate: the team's first rank creates the object. */
NOINLINE static void nvls_group_create(const gs_cumulticastobjectprop *prop, gs_cumemhandle *mc)
{
    EXPECT(pfn_cuMulticastCreate(mc, prop), GS_CUDA_SUCCESS);
}

/* nvlsGroupConnect on a peer rank: the creator's proxy exports the object
 * to a file descriptor, which the peer imports. */
NOINLINE static void nvls_group_connect(gs_cumemhandle mc, gs_cumemhandle *peer)
{
    int fd = -1;
    EXPECT(cuMemExportToShareableHandle(&fd, mc, HANDLE_TYPE_POSIX_FD, 0), GS_CUDA_SUCCESS);
    EXPECT(cuMemImportFromShareableHandle(peer, (void *)(long)fd, HANDLE_TYPE_POSIX_FD),
           GS_CUDA_SUCCESS);
}

/* nvlsAllocateMem */
NOINLINE static void nvls_allocate_mem(int dev, size_t want, struct nvls_buffer *b)
{
    gs_cumulticastobjectprop mcprop = {0};
    size_t mcgran;
    mcprop.numDevices = 1;
    mcprop.size = want;
    mcprop.handleTypes = HANDLE_TYPE_POSIX_FD;
    EXPECT(pfn_cuMulticastGetGranularity(&mcgran, &mcprop, GRANULARITY_RECOMMENDED), GS_CUDA_SUCCESS);
    b->size = mcprop.size = (want + mcgran - 1) / mcgran * mcgran;
    nvls_group_create(&mcprop, &b->mc_handle);
    nvls_group_connect(b->mc_handle, &b->peer_mc_handle);
    EXPECT(pfn_cuMulticastAddDevice(b->mc_handle, dev), GS_CUDA_SUCCESS);

    gs_cumemallocationprop ucprop = {0};
    ucprop.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED;
    ucprop.location.type = GS_CU_MEM_LOCATION_TYPE_DEVICE;
    ucprop.location.id = dev;
    ucprop.requestedHandleTypes = HANDLE_TYPE_POSIX_FD;
    struct access_desc desc = {{GS_CU_MEM_LOCATION_TYPE_DEVICE, dev}, PROT_READWRITE};
    EXPECT(cuMemAddressReserve(&b->uc_ptr, b->size, 2 * MiB, 0, 0), GS_CUDA_SUCCESS);
    EXPECT(cuMemCreate(&b->uc_handle, b->size, &ucprop, 0), GS_CUDA_SUCCESS);
    EXPECT(cuMemMap(b->uc_ptr, b->size, 0, b->uc_handle, 0), GS_CUDA_SUCCESS);
    EXPECT(cuMemSetAccess(b->uc_ptr, b->size, &desc, 1), GS_CUDA_SUCCESS);

    EXPECT(pfn_cuMulticastBindMem(b->mc_handle, 0, b->uc_handle, 0, b->size, 0), GS_CUDA_SUCCESS);

    EXPECT(cuMemAddressReserve(&b->mc_ptr, b->size, mcgran, 0, 0), GS_CUDA_SUCCESS);
    EXPECT(cuMemMap(b->mc_ptr, b->size, 0, b->mc_handle, 0), GS_CUDA_SUCCESS);
    EXPECT(cuMemSetAccess(b->mc_ptr, b->size, &desc, 1), GS_CUDA_SUCCESS);
}

/* nvlsGroupUnbind, then nvlsGroupUnmapMem */
NOINLINE static void nvls_free_mem(int dev, const struct nvls_buffer *b)
{
    EXPECT(pfn_cuMulticastUnbind(b->mc_handle, dev, 0, b->size), GS_CUDA_SUCCESS);

    EXPECT(cuMemUnmap(b->uc_ptr, b->size), GS_CUDA_SUCCESS);
    EXPECT(cuMemAddressFree(b->uc_ptr, b->size), GS_CUDA_SUCCESS);
    EXPECT(cuMemRelease(b->uc_handle), GS_CUDA_SUCCESS);

    EXPECT(cuMemUnmap(b->mc_ptr, b->size), GS_CUDA_SUCCESS);
    EXPECT(cuMemAddressFree(b->mc_ptr, b->size), GS_CUDA_SUCCESS);
    EXPECT(cuMemRelease(b->mc_handle), GS_CUDA_SUCCESS);
    EXPECT(cuMemRelease(b->peer_mc_handle), GS_CUDA_SUCCESS); /* the peer's nvlsGroupUnmapMem */
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    load_multicast();
    size_t free0, free1, total;
    EXPECT(cuMemGetInfo_v2(&free0, &total), GS_CUDA_SUCCESS);
    struct nvls_buffer b;
    nvls_allocate_mem(0, 7 * MiB, &b);
    EXPECT(cuMemGetInfo_v2(&free1, &total), GS_CUDA_SUCCESS);
    EXPECT(free0 - free1, 8 * MiB); /* the physical memory only */
    nvls_free_mem(0, &b);
    EXPECT(cuMemGetInfo_v2(&free1, &total), GS_CUDA_SUCCESS);
    EXPECT(free1, free0);
    printf("nvls buffer of %zu MiB done\n", b.size / MiB);
    return 0;
}
