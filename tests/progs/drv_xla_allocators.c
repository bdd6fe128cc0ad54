/*
 * drv_xla_allocators.c - XLA's (JAX's) three GPU allocators, each a phase
 * named on the command line, following openxla/xla (read 2026):
 *
 *   bfc    the default (XLA_PYTHON_CLIENT_PREALLOCATE on, MEM_FRACTION 0.75).
 *          xla/pjrt/gpu/gpu_helpers.cc CreateBFCAllocator: allocator_memory =
 *          total_memory * memory_fraction (DeviceMemoryUsage: cuMemGetInfo),
 *          opts.allow_growth = !preallocate. xla/tsl/framework/
 *          bfc_allocator.cc: the constructor sets curr_region_allocation_bytes_
 *          to RoundedBytes(total_memory) (no growth); the first AllocateRaw
 *          finds no free chunk and calls Extend, which asks its sub-allocator
 *          (se::DeviceMemAllocator: cuMemAlloc) for min(region, available)
 *          and, on failure, for RoundedBytes(bytes * kBackpedalFactor = 0.9)
 *          until it gets memory or falls under the request. The buffers are
 *          then chunks of that region: reported here as blocks
 *          (include/gpushim.h), which XLA itself does not do. ~BFCAllocator
 *          frees the region (cuMemFree).
 *          Run with SIMCUDA_MEMORY=64M SIMCUDA_OTHER=20M: 48 MiB asked, 44 MiB
 *          free, refused; 0.9x (45298688 bytes) fits: a recovered failure.
 *          Blocks: params 4 MiB, activations 8 MiB, a 2 MiB temporary freed
 *          first; block peak 14 MiB. Device peak 45298688, nothing left.
 *   vmm    XLA_PYTHON_CLIENT_ALLOCATOR=vmm (GpuAllocatorConfig::Kind::kVmm):
 *          xla/stream_executor/cuda/cuda_device_address_vmm_allocator.cc
 *          InitializeDeviceState (an 8-byte pinned timeline counter,
 *          cuMemHostAlloc PORTABLE, freed at the end with cuMemFreeHost);
 *          xla/stream_executor/cuda/cuda_device_allocator.cc
 *          QueryDeviceAllocatorOptions (GPUDirect RDMA and FABRIC attributes,
 *          the granularity for FABRIC+POSIX_FD), AllocateDeviceMemory
 *          (CreatePhysicalAllocation: cuMemCreate with FABRIC+POSIX_FD,
 *          refused, then POSIX_FD; cuMemAddressReserve, cuMemMap,
 *          cuMemSetAccess) and DeallocateDeviceMemory (cuCtxSynchronize,
 *          cuMemUnmap, cuMemRelease, cuMemAddressFree).
 *          Run with SIMCUDA_MEMORY=64M SIMCUDA_FABRIC=1: buffers of 5, 3 and
 *          9 MiB padded to 6, 4 and 10 MiB; the first freed before the third
 *          is made: device peak 14 MiB; three FABRIC requests refused.
 *   async  XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async with preallocation:
 *          xla/pjrt/gpu/se_gpu_pjrt_client.cc CreateCudaAsyncAllocator
 *          (allocator_memory = total_memory * memory_fraction, reserve_memory
 *          = preallocate), xla/stream_executor/gpu/
 *          gpu_cudamallocasync_allocator.cc: the constructor takes the
 *          device's default pool (cuDeviceGetDefaultMemPool) and sets its
 *          release threshold to the pool size; SetStreamAndPreallocateMemory
 *          reads it back and allocates and frees that much at once
 *          (AllocateRaw: cuMemAllocFromPoolAsync, DeallocateRaw:
 *          cuMemFreeAsync), so the pool keeps it; then buffers of 16 and
 *          8 MiB on the compute stream, freed, the stream synchronised.
 *          Run with SIMCUDA_MEMORY=64M: the preallocation, 48 MiB, is the
 *          device peak; the pool stays 48 MiB reserved after the sync.
 */
#include <string.h>

#include "gpushim.h"
#include "progs.h"

gs_curesult cuDeviceGet(gs_cudevice *device, int ordinal);
gs_curesult cuDeviceGetAttribute(int *value, int attrib, gs_cudevice dev);
gs_curesult cuDriverGetVersion(int *version);
gs_curesult cuCtxSynchronize(void);
gs_curesult cuMemGetAllocationGranularity(size_t *gran, const gs_cumemallocationprop *prop,
                                          int option);
gs_curesult cuMemCreate(gs_cumemhandle *handle, size_t size, const gs_cumemallocationprop *prop,
                        unsigned long long flags);
gs_curesult cuMemRelease(gs_cumemhandle handle);
gs_curesult cuMemAddressReserve(gs_cudeviceptr *ptr, size_t size, size_t alignment,
                                gs_cudeviceptr addr, unsigned long long flags);
gs_curesult cuMemAddressFree(gs_cudeviceptr ptr, size_t size);
gs_curesult cuMemMap(gs_cudeviceptr ptr, size_t size, size_t offset, gs_cumemhandle handle,
                     unsigned long long flags);
gs_curesult cuMemUnmap(gs_cudeviceptr ptr, size_t size);
struct access_desc { /* CUmemAccessDesc */
    gs_cumemlocation location;
    int flags;
};
gs_curesult cuMemSetAccess(gs_cudeviceptr ptr, size_t size, const struct access_desc *desc,
                           size_t count);
gs_curesult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags);
gs_curesult cuMemFreeHost(void *p);
gs_curesult cuDeviceGetDefaultMemPool(gs_cumempool *pool, gs_cudevice dev);
gs_curesult cuMemPoolSetAttribute(gs_cumempool pool, gs_cumempoolattr attr, void *value);
gs_curesult cuMemPoolGetAttribute(gs_cumempool pool, gs_cumempoolattr attr, void *value);
gs_curesult cuMemAllocFromPoolAsync(gs_cudeviceptr *dptr, size_t bytesize, gs_cumempool pool,
                                    gs_custream stream);

#define ATTR_RDMA_WITH_VMM 110    /* CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED */
#define ATTR_MEMORY_POOLS 115     /* CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED */
#define ATTR_FABRIC_SUPPORTED 128 /* CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED */
#define GRANULARITY_RECOMMENDED 1
#define PROT_READWRITE 3
#define MEMHOSTALLOC_PORTABLE 1
#define ERROR_NOT_PERMITTED 800
#define MEMORY_FRACTION 0.75 /* XLA_PYTHON_CLIENT_MEM_FRACTION's default */

/* ---- bfc ---- */

#define MIN_ALLOCATION_SIZE 256 /* BFCAllocator's kMinAllocationSize */

static size_t rounded_bytes(size_t bytes)
{
    return (bytes + MIN_ALLOCATION_SIZE - 1) / MIN_ALLOCATION_SIZE * MIN_ALLOCATION_SIZE;
}

struct bfc {
    size_t memory_limit, pool_bytes, curr_region_allocation_bytes;
    gs_cudeviceptr region;
    size_t region_size, used; /* chunks are carved from the start, in order */
};

/* se::DeviceMemAllocator::Alloc -> StreamExecutor::Allocate -> cuMemAlloc */
NOINLINE static gs_cudeviceptr sub_allocator_alloc(size_t bytes)
{
    gs_cudeviceptr p = 0;
    return cuMemAlloc_v2(&p, bytes) == GS_CUDA_SUCCESS ? p : 0;
}

/* BFCAllocator::Extend */
NOINLINE static int extend(struct bfc *a, size_t rounded)
{
    size_t available = (a->memory_limit - a->pool_bytes) / MIN_ALLOCATION_SIZE * MIN_ALLOCATION_SIZE;
    if (rounded > available)
        return 0;
    int increased = 0;
    while (rounded > a->curr_region_allocation_bytes) {
        a->curr_region_allocation_bytes *= 2;
        increased = 1;
    }
    size_t bytes = a->curr_region_allocation_bytes < available ? a->curr_region_allocation_bytes
                                                               : available;
    gs_cudeviceptr mem = sub_allocator_alloc(bytes);
    while (!mem) { /* kBackpedalFactor */
        size_t backpedal = rounded_bytes((size_t)(bytes * 0.9));
        if (backpedal >= bytes)
            backpedal = bytes - MIN_ALLOCATION_SIZE;
        bytes = backpedal;
        if (bytes < rounded)
            return 0;
        mem = sub_allocator_alloc(bytes);
    }
    if (!increased)
        a->curr_region_allocation_bytes *= 2;
    a->pool_bytes += bytes;
    a->region = mem;
    a->region_size = bytes;
    return 1;
}

/* BFCAllocator::AllocateRaw, one region, chunks in order */
NOINLINE static gs_cudeviceptr allocate_raw(struct bfc *a, size_t num_bytes)
{
    size_t rounded = rounded_bytes(num_bytes);
    if (!a->region || a->region_size - a->used < rounded)
        EXPECT(extend(a, rounded), 1);
    gs_cudeviceptr p = a->region + a->used;
    a->used += rounded;
    gpushim_block_alloc((const void *)(uintptr_t)p, num_bytes);
    return p;
}

NOINLINE static void deallocate_raw(gs_cudeviceptr p)
{
    gpushim_block_free((const void *)(uintptr_t)p);
}

static void bfc(void)
{
    size_t free_b, total;
    EXPECT(cuMemGetInfo_v2(&free_b, &total), GS_CUDA_SUCCESS); /* DeviceMemoryUsage */
    struct bfc a = {0};
    a.memory_limit = (size_t)(total * MEMORY_FRACTION);
    a.curr_region_allocation_bytes = rounded_bytes(a.memory_limit); /* allow_growth false */
    gs_cudeviceptr params = allocate_raw(&a, 4 * MiB);
    gs_cudeviceptr activations = allocate_raw(&a, 8 * MiB);
    gs_cudeviceptr temp = allocate_raw(&a, 2 * MiB);
    deallocate_raw(temp);
    deallocate_raw(activations);
    deallocate_raw(params);
    EXPECT(cuMemFree_v2(a.region), GS_CUDA_SUCCESS); /* ~BFCAllocator */
    printf("bfc region %zu bytes\n", a.region_size);
}

/* ---- vmm ---- */

struct vmm_options {
    int rdma, fabric;
    size_t alignment;
};

static gs_cumemallocationprop build_vmm_allocation_prop(gs_cudevice dev,
                                                        const struct vmm_options *o)
{
    gs_cumemallocationprop prop = {0};
    prop.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = GS_CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
                                (o->fabric ? GS_CU_MEM_HANDLE_TYPE_FABRIC : 0);
    return prop;
}

static struct vmm_options query_device_allocator_options(gs_cudevice dev)
{
    struct vmm_options o = {0};
    EXPECT(cuDeviceGetAttribute(&o.rdma, ATTR_RDMA_WITH_VMM, dev), GS_CUDA_SUCCESS);
    EXPECT(cuDeviceGetAttribute(&o.fabric, ATTR_FABRIC_SUPPORTED, dev), GS_CUDA_SUCCESS);
    gs_cumemallocationprop prop = build_vmm_allocation_prop(dev, &o);
    EXPECT(cuMemGetAllocationGranularity(&o.alignment, &prop, GRANULARITY_RECOMMENDED),
           GS_CUDA_SUCCESS);
    return o;
}

struct vmm_buffer {
    gs_cudeviceptr ptr;
    size_t padded_size;
    gs_cumemhandle handle;
};

/* CreatePhysicalAllocation: FABRIC+POSIX_FD, then POSIX_FD */
NOINLINE static gs_cumemhandle create_physical_allocation(gs_cumemallocationprop prop,
                                                          size_t padded)
{
    gs_cumemhandle handle;
    if (prop.requestedHandleTypes & GS_CU_MEM_HANDLE_TYPE_FABRIC) {
        EXPECT(cuMemCreate(&handle, padded, &prop, 0), ERROR_NOT_PERMITTED);
        prop.requestedHandleTypes &= ~GS_CU_MEM_HANDLE_TYPE_FABRIC;
    }
    EXPECT(cuMemCreate(&handle, padded, &prop, 0), GS_CUDA_SUCCESS);
    return handle;
}

/* AllocateDeviceMemory */
NOINLINE static struct vmm_buffer allocate_device_memory(const struct vmm_options *o, size_t size)
{
    gs_cudevice dev;
    EXPECT(cuDeviceGet(&dev, 0), GS_CUDA_SUCCESS);
    gs_cumemallocationprop prop = build_vmm_allocation_prop(dev, o);
    size_t gran = 0;
    EXPECT(cuMemGetAllocationGranularity(&gran, &prop, GRANULARITY_RECOMMENDED), GS_CUDA_SUCCESS);
    size_t align = o->alignment > gran ? o->alignment : gran;
    struct vmm_buffer b;
    b.padded_size = (size + align - 1) / align * align;
    b.handle = create_physical_allocation(prop, b.padded_size);
    EXPECT(cuMemAddressReserve(&b.ptr, b.padded_size, align, 0, 0), GS_CUDA_SUCCESS);
    EXPECT(cuMemMap(b.ptr, b.padded_size, 0, b.handle, 0), GS_CUDA_SUCCESS);
    struct access_desc desc = {{GS_CU_MEM_LOCATION_TYPE_DEVICE, 0}, PROT_READWRITE};
    EXPECT(cuMemSetAccess(b.ptr, b.padded_size, &desc, 1), GS_CUDA_SUCCESS);
    return b;
}

/* DeallocateDeviceMemory: DrainPendingVmmDeallocations, DoUnmapAndRelease */
NOINLINE static void deallocate_device_memory(const struct vmm_buffer *b)
{
    EXPECT(cuCtxSynchronize(), GS_CUDA_SUCCESS);
    EXPECT(cuMemUnmap(b->ptr, b->padded_size), GS_CUDA_SUCCESS);
    EXPECT(cuMemRelease(b->handle), GS_CUDA_SUCCESS);
    EXPECT(cuMemAddressFree(b->ptr, b->padded_size), GS_CUDA_SUCCESS);
}

/* InitializeDeviceState's timeline counter */
NOINLINE static void *timeline_counter(void)
{
    void *host_ptr = NULL;
    EXPECT(cuMemHostAlloc(&host_ptr, sizeof(uint64_t), MEMHOSTALLOC_PORTABLE), GS_CUDA_SUCCESS);
    return host_ptr;
}

static void vmm(void)
{
    gs_cudevice dev;
    EXPECT(cuDeviceGet(&dev, 0), GS_CUDA_SUCCESS);
    void *timeline = timeline_counter();
    struct vmm_options o = query_device_allocator_options(dev);
    struct vmm_buffer a = allocate_device_memory(&o, 5 * MiB);
    struct vmm_buffer b = allocate_device_memory(&o, 3 * MiB);
    deallocate_device_memory(&a);
    struct vmm_buffer c = allocate_device_memory(&o, 9 * MiB);
    deallocate_device_memory(&b);
    deallocate_device_memory(&c);
    EXPECT(cuMemFreeHost(timeline), GS_CUDA_SUCCESS); /* the state's destroy_fn */
    puts("vmm done");
}

/* ---- async ---- */

struct async_allocator {
    gs_cumempool pool;
    gs_custream stream;
    int reserve_memory;
};

/* GpuCudaMallocAsyncAllocator::AllocateRaw */
NOINLINE static gs_cudeviceptr async_allocate_raw(struct async_allocator *a, size_t num_bytes)
{
    gs_cudeviceptr p = 0;
    EXPECT(cuMemAllocFromPoolAsync(&p, num_bytes, a->pool, a->stream), GS_CUDA_SUCCESS);
    return p;
}

/* GpuCudaMallocAsyncAllocator::DeallocateRaw */
NOINLINE static void async_deallocate_raw(struct async_allocator *a, gs_cudeviceptr p)
{
    EXPECT(cuMemFreeAsync(p, a->stream), GS_CUDA_SUCCESS);
}

static void async_allocator_init(struct async_allocator *a, size_t pool_size)
{
    int version = 0, supported = 0;
    EXPECT(cuDriverGetVersion(&version), GS_CUDA_SUCCESS);
    EXPECT(cuDeviceGetAttribute(&supported, ATTR_MEMORY_POOLS, 0), GS_CUDA_SUCCESS);
    EXPECT(supported, 1);
    EXPECT(cuDeviceGetDefaultMemPool(&a->pool, 0), GS_CUDA_SUCCESS);
    gs_cuuint64 pool_size_64 = pool_size;
    EXPECT(cuMemPoolSetAttribute(a->pool, GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &pool_size_64),
           GS_CUDA_SUCCESS);
}

/* SetStreamAndPreallocateMemory */
NOINLINE static void set_stream_and_preallocate_memory(struct async_allocator *a,
                                                       gs_custream stream)
{
    gs_cuuint64 pool_size_64 = 0;
    EXPECT(cuMemPoolGetAttribute(a->pool, GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &pool_size_64),
           GS_CUDA_SUCCESS);
    a->stream = stream;
    if (a->reserve_memory) {
        gs_cudeviceptr p = async_allocate_raw(a, pool_size_64);
        async_deallocate_raw(a, p);
    }
}

static void async(void)
{
    size_t free_b, total;
    EXPECT(cuMemGetInfo_v2(&free_b, &total), GS_CUDA_SUCCESS);
    struct async_allocator a = {.reserve_memory = 1};
    async_allocator_init(&a, (size_t)(total * MEMORY_FRACTION));
    gs_custream compute;
    EXPECT(cuStreamCreate(&compute, 0), GS_CUDA_SUCCESS);
    set_stream_and_preallocate_memory(&a, compute);
    gs_cudeviceptr x = async_allocate_raw(&a, 16 * MiB);
    gs_cudeviceptr y = async_allocate_raw(&a, 8 * MiB);
    async_deallocate_raw(&a, y);
    async_deallocate_raw(&a, x);
    EXPECT(cuStreamSynchronize(compute), GS_CUDA_SUCCESS);
    puts("async done");
}

int main(int argc, char **argv)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "bfc"))
            bfc();
        else if (!strcmp(argv[i], "vmm"))
            vmm();
        else if (!strcmp(argv[i], "async"))
            async();
        else
            EXPECT(argv[i][0], 0); /* a phase it does not know */
    }
    return 0;
}
