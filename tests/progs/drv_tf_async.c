/*
 * drv_tf_async.c - TensorFlow with TF_GPU_ALLOCATOR=cuda_malloc_async:
 * tensorflow/core/common_runtime/gpu/gpu_process_state.cc
 * GPUProcessState::GetGPUAllocator creates
 * se::GpuCudaMallocAsyncAllocator(platform_device_id, total_bytes), the
 * class in openxla/xla xla/stream_executor/gpu/
 * gpu_cudamallocasync_allocator.cc (read 2026), whose steps are followed:
 * the constructor checks the driver (cuDriverGetVersion,
 * CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED), takes the device's default
 * pool (cuDeviceGetDefaultMemPool) and sets its release threshold to
 * total_bytes, so the pool keeps up to that much across synchronisations;
 * SetStreamAndPreallocateMemory reads the threshold back and, when
 * TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC is -1, allocates and frees that
 * much at once (no reserve_memory in TensorFlow's call); every tensor is
 * then one cuMemAllocFromPoolAsync (AllocateRaw) and one cuMemFreeAsync
 * (DeallocateRaw) on the compute stream.
 *
 * total_bytes here is 32 MiB, as a memory limit set for the device would
 * make it. Two steps, each: input 4 MiB, hidden 12 MiB, output 2 MiB, then
 * hidden, input and output freed and the stream synchronised. Run with
 * SIMCUDA_MEMORY=64M: device peak 18 MiB (the three tensors); the pool
 * keeps its 18 MiB (9 chunks of 2 MiB) after each synchronisation, used 0.
 * With TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC=-1 the 32 MiB preallocation,
 * freed at once, is the peak and the pool keeps 32 MiB.
 */
#include <stdlib.h>
#include <string.h>

#include "progs.h"

gs_curesult cuDriverGetVersion(int *version);
gs_curesult cuDeviceGetAttribute(int *value, int attrib, gs_cudevice dev);
gs_curesult cuDeviceGetDefaultMemPool(gs_cumempool *pool, gs_cudevice dev);
gs_curesult cuMemPoolSetAttribute(gs_cumempool pool, gs_cumempoolattr attr, void *value);
gs_curesult cuMemPoolGetAttribute(gs_cumempool pool, gs_cumempoolattr attr, void *value);
gs_curesult cuMemAllocFromPoolAsync(gs_cudeviceptr *dptr, size_t bytesize, gs_cumempool pool,
                                    gs_custream stream);

#define ATTR_MEMORY_POOLS 115 /* CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED */

static gs_cumempool pool;
static gs_custream cuda_stream;

/* GpuCudaMallocAsyncAllocator's constructor */
static void allocator_init(size_t pool_size)
{
    int version = 0, supported = 0;
    EXPECT(cuDriverGetVersion(&version), GS_CUDA_SUCCESS);
    EXPECT(cuDeviceGetAttribute(&supported, ATTR_MEMORY_POOLS, 0), GS_CUDA_SUCCESS);
    EXPECT(supported, 1);
    EXPECT(cuDeviceGetDefaultMemPool(&pool, 0), GS_CUDA_SUCCESS);
    gs_cuuint64 pool_size_64 = pool_size;
    EXPECT(cuMemPoolSetAttribute(pool, GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &pool_size_64),
           GS_CUDA_SUCCESS);
}

NOINLINE static gs_cudeviceptr allocate_raw(size_t num_bytes)
{
    gs_cudeviceptr p = 0;
    EXPECT(cuMemAllocFromPoolAsync(&p, num_bytes, pool, cuda_stream), GS_CUDA_SUCCESS);
    return p;
}

NOINLINE static void deallocate_raw(gs_cudeviceptr p)
{
    EXPECT(cuMemFreeAsync(p, cuda_stream), GS_CUDA_SUCCESS);
}

/* SetStreamAndPreallocateMemory */
NOINLINE static void set_stream_and_preallocate_memory(gs_custream stream)
{
    gs_cuuint64 pool_size_64 = 0;
    EXPECT(cuMemPoolGetAttribute(pool, GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &pool_size_64),
           GS_CUDA_SUCCESS);
    cuda_stream = stream;
    const char *env = getenv("TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC");
    long long prealloc_size = env ? atoll(env) : 0;
    if (prealloc_size == -1)
        prealloc_size = (long long)pool_size_64;
    if (prealloc_size != 0)
        deallocate_raw(allocate_raw((size_t)prealloc_size));
}

/* One training step: its tensors, then the step's end. */
NOINLINE static void step(void)
{
    gs_cudeviceptr input = allocate_raw(4 * MiB);
    gs_cudeviceptr hidden = allocate_raw(12 * MiB);
    gs_cudeviceptr output = allocate_raw(2 * MiB);
    deallocate_raw(hidden);
    deallocate_raw(input);
    deallocate_raw(output);
    EXPECT(cuStreamSynchronize(cuda_stream), GS_CUDA_SUCCESS);
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    allocator_init(32 * MiB);
    gs_custream compute;
    EXPECT(cuStreamCreate(&compute, 0), GS_CUDA_SUCCESS);
    set_stream_and_preallocate_memory(compute);
    step();
    step();
    gs_cuuint64 reserved = 0;
    EXPECT(cuMemPoolGetAttribute(pool, GS_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved),
           GS_CUDA_SUCCESS);
    printf("pool keeps %llu MiB\n", (unsigned long long)(reserved / MiB));
    return 0;
}
