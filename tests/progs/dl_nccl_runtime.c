/*
 * dl_nccl_runtime.c - NCCL's memory as libnccl.so makes it: a library
 * with the CUDA runtime linked in statically (this program is linked with
 * tests/sim/runtime/, see the Makefile), so that its cuda* calls never
 * reach an exported symbol the shim could hook, and its driver functions
 * come from that runtime's cudaGetDriverEntryPointByVersion, which asks
 * the driver's cuGetProcAddress. Each step follows NVIDIA/nccl (read
 * 2026), the function named at it:
 *
 *   src/misc/cudawrap.cc   initOnceFunc, cudaPfnFuncLoader: LOAD_SYM of
 *                          each driver function at its version through
 *                          cudaGetDriverEntryPointByVersion(CUDART >= 13);
 *                          ncclIsCuMemSupported; ncclCuMemHostEnable, whose
 *                          probe creates and releases one granule of
 *                          HOST_NUMA memory (2 MiB, pinned host)
 *   src/init.cc            commAlloc: the communicator's pool
 *                          (cudaMemPoolCreate, release threshold UINT64_MAX)
 *   src/include/alloc.h    ncclCuMemHostAlloc: 4 MiB of HOST_NUMA memory,
 *                          reserved, mapped, access for the device and the
 *                          host node; ncclCuMemHostFree
 *   src/include/alloc.h    ncclCuMemAlloc: a peer rank's 6 MiB receive
 *                          buffer (its proxy's ncclP2pAllocateShareableBuffer);
 *                          ncclCuMemFree: retain, release, unmap, release
 *   src/transport/p2p.cc   ncclP2pImportShareableBuffer: the peer's buffer
 *                          by file descriptor (its proxy exports the handle),
 *                          reserved, mapped, access (imported, size 0);
 *                          p2pSendFree: ncclCudaFree of the import
 *   src/allocator.cc       ncclMemAlloc: the device says FABRIC is supported
 *                          (SIMCUDA_FABRIC=1), the FABRIC cuMemCreate of
 *                          8 MiB is refused (CUDA_ERROR_NOT_PERMITTED) and
 *                          retried with POSIX file descriptors only;
 *                          ncclMemFree
 *   src/enqueue.cc         uploadWork: a graph-captured plan's 1 MiB of
 *                          work, cudaMallocAsync(..., comm->memPool, stream)
 *                          (the C++ overload: cudaMallocFromPoolAsync);
 *                          reclaimPlan: cudaFree(plan->workBufPersistent)
 *   src/init.cc            commFree: cudaMemPoolDestroy
 *
 * The peer rank runs in this process (the simulated driver's descriptors
 * are valid here). NVLS multicast buffers: tests/progs/drv_multicast.c.
 * Run with SIMCUDA_MEMORY=64M SIMCUDA_FABRIC=1.
 *
 * Device memory: peak 15 MiB (the peer's 6, the user buffer's 8, the work
 * 1), none at the end. Pinned host: peak 4 MiB (the probe's 2 freed first).
 * One failed allocation, refused. Nothing left, no free unknown.
 */
#include <stdint.h>
#include <unistd.h>

#include "progs.h"

/* The statically linked runtime's entry points (tests/sim/runtime/). */
gs_cudaerror cudaGetDevice(int *device);
gs_cudaerror cudaSetDevice(int device);
gs_cudaerror cudaGetDeviceCount(int *count);
gs_cudaerror cudaDriverGetVersion(int *version);
gs_cudaerror cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                              unsigned long long flags, int *status);
gs_cudaerror cudaMemPoolCreate(gs_cumempool *pool, const gs_cudamempoolprops *props);
gs_cudaerror cudaMemPoolSetAttribute(gs_cumempool pool, gs_cumempoolattr attr, void *value);
gs_cudaerror cudaMemPoolDestroy(gs_cumempool pool);
gs_cudaerror cudaMallocFromPoolAsync(void **ptr, size_t size, gs_cumempool pool,
                                     gs_custream stream);
gs_cudaerror cudaFree(void *ptr);
gs_cudaerror cudaStreamCreateWithFlags(gs_custream *stream, unsigned int flags);
gs_cudaerror cudaStreamSynchronize(gs_custream stream);
gs_cudaerror cudaStreamDestroy(gs_custream stream);

#define ATTR_VMM_SUPPORTED 102    /* CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
#define ATTR_RDMA_WITH_VMM 110    /* CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED */
#define ATTR_FABRIC_SUPPORTED 128 /* CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED */
#define ATTR_HOST_NUMA_ID 134     /* CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID */
#define GRANULARITY_MINIMUM 0     /* CU_MEM_ALLOC_GRANULARITY_MINIMUM */
#define GRANULARITY_RECOMMENDED 1
#define PROT_READWRITE 3                 /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE */
#define POINTER_DEVICE_ORDINAL 9         /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
#define ERROR_NOT_PERMITTED 800          /* CUDA_ERROR_NOT_PERMITTED */
#define STREAM_NON_BLOCKING 1            /* cudaStreamNonBlocking */
#define ENTRY_POINT_SUCCESS 0            /* cudaDriverEntryPointSuccess */

struct access_desc { /* CUmemAccessDesc */
    gs_cumemlocation location;
    int flags;
};

/* cudawrap.cc's pfn_ pointers, each declared at its version. */
static gs_curesult (*pfn_cuDeviceGet)(gs_cudevice *dev, int ordinal);
static gs_curesult (*pfn_cuDeviceGetAttribute)(int *value, int attrib, gs_cudevice dev);
static gs_curesult (*pfn_cuMemGetAddressRange)(gs_cudeviceptr *base, size_t *size,
                                               gs_cudeviceptr ptr);
static gs_curesult (*pfn_cuMemAddressReserve)(gs_cudeviceptr *ptr, size_t size, size_t align,
                                              gs_cudeviceptr addr, unsigned long long flags);
static gs_curesult (*pfn_cuMemAddressFree)(gs_cudeviceptr ptr, size_t size);
static gs_curesult (*pfn_cuMemCreate)(gs_cumemhandle *handle, size_t size,
                                      const gs_cumemallocationprop *prop, unsigned long long flags);
static gs_curesult (*pfn_cuMemGetAllocationGranularity)(size_t *gran,
                                                        const gs_cumemallocationprop *prop,
                                                        int option);
static gs_curesult (*pfn_cuMemExportToShareableHandle)(void *shareable, gs_cumemhandle handle,
                                                       gs_cumemhandletype type,
                                                       unsigned long long flags);
static gs_curesult (*pfn_cuMemImportFromShareableHandle)(gs_cumemhandle *handle, void *os_handle,
                                                         gs_cumemhandletype type);
static gs_curesult (*pfn_cuMemMap)(gs_cudeviceptr ptr, size_t size, size_t offset,
                                   gs_cumemhandle handle, unsigned long long flags);
static gs_curesult (*pfn_cuMemRelease)(gs_cumemhandle handle);
static gs_curesult (*pfn_cuMemRetainAllocationHandle)(gs_cumemhandle *handle, void *addr);
static gs_curesult (*pfn_cuMemSetAccess)(gs_cudeviceptr ptr, size_t size,
                                         const struct access_desc *desc, size_t count);
static gs_curesult (*pfn_cuMemUnmap)(gs_cudeviceptr ptr, size_t size);
static gs_curesult (*pfn_cuPointerGetAttribute)(void *data, int attribute, gs_cudeviceptr ptr);

static void load_sym(void *pfn, const char *symbol, unsigned version)
{
    int status = -1;
    EXPECT(cudaGetDriverEntryPointByVersion(symbol, (void **)pfn, version, 0, &status),
           GS_cudaSuccess);
    EXPECT(status, ENTRY_POINT_SUCCESS);
}

/* cudaPfnFuncLoader, the symbols NCCL's memory paths use. */
static void cuda_pfn_func_loader(void)
{
    load_sym(&pfn_cuDeviceGet, "cuDeviceGet", 2000);
    load_sym(&pfn_cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000);
    load_sym(&pfn_cuMemGetAddressRange, "cuMemGetAddressRange", 3020);
    load_sym(&pfn_cuMemAddressReserve, "cuMemAddressReserve", 10020);
    load_sym(&pfn_cuMemAddressFree, "cuMemAddressFree", 10020);
    load_sym(&pfn_cuMemCreate, "cuMemCreate", 10020);
    load_sym(&pfn_cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", 10020);
    load_sym(&pfn_cuMemExportToShareableHandle, "cuMemExportToShareableHandle", 10020);
    load_sym(&pfn_cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle", 10020);
    load_sym(&pfn_cuMemMap, "cuMemMap", 10020);
    load_sym(&pfn_cuMemRelease, "cuMemRelease", 10020);
    load_sym(&pfn_cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle", 11000);
    load_sym(&pfn_cuMemSetAccess, "cuMemSetAccess", 10020);
    load_sym(&pfn_cuMemUnmap, "cuMemUnmap", 10020);
    load_sym(&pfn_cuPointerGetAttribute, "cuPointerGetAttribute", 4000);
}

static int cuda_dev;

static size_t align_up(size_t size, size_t gran) { return (size + gran - 1) / gran * gran; }

static gs_cumemallocationprop host_numa_prop(void)
{
    gs_cudevice dev;
    int numa = -1;
    EXPECT(pfn_cuDeviceGet(&dev, cuda_dev), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuDeviceGetAttribute(&numa, ATTR_HOST_NUMA_ID, dev), GS_CUDA_SUCCESS);
    gs_cumemallocationprop prop = {0};
    prop.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = GS_CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop.location.id = numa < 0 ? 0 : numa;
    prop.requestedHandleTypes = GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

/* ncclCuMemHostEnable's check that host allocations work. */
NOINLINE static void cumem_host_enable(void)
{
    gs_cumemallocationprop prop = host_numa_prop();
    size_t gran = 0;
    gs_cumemhandle handle;
    EXPECT(pfn_cuMemGetAllocationGranularity(&gran, &prop, GRANULARITY_MINIMUM), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemCreate(&handle, align_up(1, gran), &prop, 0), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemRelease(handle), GS_CUDA_SUCCESS);
}

/* initOnceFunc */
static void nccl_cuda_library_init(void)
{
    int version = 0, flag = 0;
    gs_cudevice dev;
    EXPECT(cudaGetDevice(&cuda_dev), GS_cudaSuccess);
    EXPECT(cudaDriverGetVersion(&version), GS_cudaSuccess);
    EXPECT(version >= 12060, 1); /* cuMem host memory on by default */
    cuda_pfn_func_loader();
    /* ncclIsCuMemSupported */
    EXPECT(pfn_cuDeviceGet(&dev, cuda_dev), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuDeviceGetAttribute(&flag, ATTR_VMM_SUPPORTED, dev), GS_CUDA_SUCCESS);
    EXPECT(flag, 1);
    cumem_host_enable();
}

/* commAlloc's pool */
NOINLINE static gs_cumempool comm_alloc(void)
{
    gs_cudamempoolprops props = {0};
    props.allocType = GS_CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = GS_CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = cuda_dev;
    gs_cumempool pool;
    EXPECT(cudaMemPoolCreate(&pool, &props), GS_cudaSuccess);
    uint64_t release_threshold = ~(uint64_t)0;
    EXPECT(cudaMemPoolSetAttribute(pool, GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &release_threshold),
           GS_cudaSuccess);
    return pool;
}

static void set_access(gs_cudeviceptr ptr, size_t size, int type, int id)
{
    struct access_desc desc = {{type, id}, PROT_READWRITE};
    EXPECT(pfn_cuMemSetAccess(ptr, size, &desc, 1), GS_CUDA_SUCCESS);
}

/* ncclCuMemHostAlloc */
NOINLINE static gs_cudeviceptr nccl_cumem_host_alloc(size_t size)
{
    gs_cumemallocationprop prop = host_numa_prop();
    size_t gran = 0;
    gs_cumemhandle handle;
    gs_cudeviceptr ptr;
    EXPECT(pfn_cuMemGetAllocationGranularity(&gran, &prop, GRANULARITY_MINIMUM), GS_CUDA_SUCCESS);
    size = align_up(size, gran);
    EXPECT(pfn_cuMemCreate(&handle, size, &prop, 0), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemAddressReserve(&ptr, size, gran, 0, 0), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemMap(ptr, size, 0, handle, 0), GS_CUDA_SUCCESS);
    set_access(ptr, size, GS_CU_MEM_LOCATION_TYPE_DEVICE, cuda_dev);
    set_access(ptr, size, GS_CU_MEM_LOCATION_TYPE_HOST_NUMA, prop.location.id);
    return ptr;
}

/* ncclCuMemHostFree */
NOINLINE static void nccl_cumem_host_free(gs_cudeviceptr ptr)
{
    gs_cumemhandle handle;
    size_t size = 0;
    EXPECT(pfn_cuMemRetainAllocationHandle(&handle, (void *)(uintptr_t)ptr), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemRelease(handle), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemGetAddressRange(NULL, &size, ptr), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemUnmap(ptr, size), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemRelease(handle), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemAddressFree(ptr, size), GS_CUDA_SUCCESS);
}

/* ncclCuMemAlloc (with ncclCuMemMapAndSetAccess) */
NOINLINE static gs_cudeviceptr nccl_cumem_alloc(gs_cumemhandle *handlep, size_t size)
{
    gs_cudevice dev;
    int flag = 0;
    EXPECT(pfn_cuDeviceGet(&dev, cuda_dev), GS_CUDA_SUCCESS);
    gs_cumemallocationprop prop = {0};
    prop.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = GS_CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.id = dev;
    EXPECT(pfn_cuDeviceGetAttribute(&flag, ATTR_RDMA_WITH_VMM, dev), GS_CUDA_SUCCESS);
    size_t gran = 0;
    EXPECT(pfn_cuMemGetAllocationGranularity(&gran, &prop, GRANULARITY_MINIMUM), GS_CUDA_SUCCESS);
    size = align_up(size, gran);
    gs_cumemhandle handle;
    gs_cudeviceptr ptr;
    EXPECT(pfn_cuMemCreate(&handle, size, &prop, 0), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemAddressReserve(&ptr, size, gran, 0, 0), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemMap(ptr, size, 0, handle, 0), GS_CUDA_SUCCESS);
    set_access(ptr, size, GS_CU_MEM_LOCATION_TYPE_DEVICE, dev);
    *handlep = handle;
    return ptr;
}

/* ncclCuMemFree, one segment */
NOINLINE static void nccl_cumem_free(gs_cudeviceptr ptr)
{
    gs_cumemhandle handle;
    size_t size = 0;
    EXPECT(pfn_cuMemRetainAllocationHandle(&handle, (void *)(uintptr_t)ptr), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemRelease(handle), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemGetAddressRange(NULL, &size, ptr), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemUnmap(ptr, size), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemRelease(handle), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemAddressFree(ptr, size), GS_CUDA_SUCCESS);
}

/* The peer's proxy turning its handle into a descriptor for this rank
 * (ncclProxyClientGetFdBlocking's far end). */
static int peer_proxy_get_fd(gs_cumemhandle handle)
{
    int fd = -1;
    EXPECT(pfn_cuMemExportToShareableHandle(&fd, handle,
                                            GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           GS_CUDA_SUCCESS);
    return fd;
}

/* ncclP2pImportShareableBuffer, the cuMem POSIX_FD path */
NOINLINE static gs_cudeviceptr nccl_p2p_import_shareable_buffer(gs_cumemhandle peer_handle,
                                                               size_t size)
{
    gs_cumemhandle handle;
    gs_cudeviceptr dptr = 0;
    int fd = peer_proxy_get_fd(peer_handle);
    EXPECT(pfn_cuMemImportFromShareableHandle(&handle, (void *)(uintptr_t)fd,
                                              GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           GS_CUDA_SUCCESS);
    (void)close(fd); /* not a real descriptor here: fails harmlessly */
    EXPECT(pfn_cuMemAddressReserve(&dptr, size, 0, 0, 0), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemMap(dptr, size, 0, handle, 0), GS_CUDA_SUCCESS);
    set_access(dptr, size, GS_CU_MEM_LOCATION_TYPE_DEVICE, cuda_dev);
    return dptr;
}

/* ncclMemAlloc, the cuMem path on a device that says FABRIC is supported */
NOINLINE static gs_cudeviceptr nccl_mem_alloc(size_t size)
{
    gs_cudevice dev;
    int flag = 0, dcnt = 0;
    EXPECT(cudaGetDevice(&cuda_dev), GS_cudaSuccess);
    EXPECT(pfn_cuDeviceGet(&dev, cuda_dev), GS_CUDA_SUCCESS);
    int types = GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    EXPECT(pfn_cuDeviceGetAttribute(&flag, ATTR_FABRIC_SUPPORTED, dev), GS_CUDA_SUCCESS);
    if (flag)
        types |= GS_CU_MEM_HANDLE_TYPE_FABRIC;
    gs_cumemallocationprop prop = {0};
    prop.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = GS_CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = types;
    prop.location.id = dev;
    EXPECT(pfn_cuDeviceGetAttribute(&flag, ATTR_RDMA_WITH_VMM, dev), GS_CUDA_SUCCESS);
    size_t gran = 0;
    EXPECT(pfn_cuMemGetAllocationGranularity(&gran, &prop, GRANULARITY_RECOMMENDED),
           GS_CUDA_SUCCESS);
    EXPECT(cudaGetDeviceCount(&dcnt), GS_cudaSuccess);
    size = align_up(size, gran);
    gs_cumemhandle handle;
    EXPECT(types & GS_CU_MEM_HANDLE_TYPE_FABRIC, GS_CU_MEM_HANDLE_TYPE_FABRIC);
    gs_curesult err = pfn_cuMemCreate(&handle, size, &prop, 0);
    EXPECT(err, ERROR_NOT_PERMITTED);
    prop.requestedHandleTypes = types & ~GS_CU_MEM_HANDLE_TYPE_FABRIC;
    EXPECT(pfn_cuMemCreate(&handle, size, &prop, 0), GS_CUDA_SUCCESS);
    gs_cudeviceptr ptr;
    EXPECT(pfn_cuMemAddressReserve(&ptr, size, gran, 0, 0), GS_CUDA_SUCCESS);
    EXPECT(pfn_cuMemMap(ptr, size, 0, handle, 0), GS_CUDA_SUCCESS);
    for (int i = 0; i < dcnt; i++) /* one device: only itself */
        set_access(ptr, size, GS_CU_MEM_LOCATION_TYPE_DEVICE, i);
    return ptr;
}

/* ncclMemFree */
NOINLINE static void nccl_mem_free(gs_cudeviceptr ptr)
{
    int save_device, ptr_dev = -1;
    EXPECT(cudaGetDevice(&save_device), GS_cudaSuccess);
    EXPECT(pfn_cuPointerGetAttribute(&ptr_dev, POINTER_DEVICE_ORDINAL, ptr), GS_CUDA_SUCCESS);
    EXPECT(cudaSetDevice(ptr_dev), GS_cudaSuccess);
    nccl_cumem_free(ptr);
    EXPECT(cudaSetDevice(save_device), GS_cudaSuccess);
}

/* uploadWork, a persistent plan's work in the communicator's pool */
NOINLINE static void *upload_work(gs_cumempool pool, gs_custream device_stream, size_t bytes)
{
    void *fifo_buf_dev = NULL;
    EXPECT(cudaMallocFromPoolAsync(&fifo_buf_dev, bytes, pool, device_stream), GS_cudaSuccess);
    return fifo_buf_dev;
}

/* reclaimPlan, once the graph is destroyed */
NOINLINE static void reclaim_plan(void *work_buf_persistent)
{
    EXPECT(cudaFree(work_buf_persistent), GS_cudaSuccess);
}

int main(void)
{
    nccl_cuda_library_init();
    gs_cumempool pool = comm_alloc();
    gs_custream device_stream;
    EXPECT(cudaStreamCreateWithFlags(&device_stream, STREAM_NON_BLOCKING), GS_cudaSuccess);

    gs_cudeviceptr host = nccl_cumem_host_alloc(4 * MiB);
    gs_cumemhandle peer_handle;
    gs_cudeviceptr peer = nccl_cumem_alloc(&peer_handle, 6 * MiB); /* the peer rank's */
    gs_cudeviceptr imported = nccl_p2p_import_shareable_buffer(peer_handle, 6 * MiB);
    gs_cudeviceptr user = nccl_mem_alloc(7 * MiB);
    void *work = upload_work(pool, device_stream, 1 * MiB);
    EXPECT(cudaStreamSynchronize(device_stream), GS_cudaSuccess);

    reclaim_plan(work);
    nccl_mem_free(user);
    nccl_cumem_free(imported); /* p2pSendFree: ncclCudaFree */
    nccl_cumem_free(peer);     /* the peer's own teardown */
    nccl_cumem_host_free(host);
    EXPECT(cudaStreamDestroy(device_stream), GS_cudaSuccess);
    EXPECT(cudaMemPoolDestroy(pool), GS_cudaSuccess); /* commFree */
    puts("nccl runtime done");
    return 0;
}
