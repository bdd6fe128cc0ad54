/*
 * rt_torch_async.c - PyTorch's PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
 * through the runtime (the simulated libcudart), in the calls and order of
 * c10/cuda/CUDAMallocAsyncAllocator.cpp (pytorch/pytorch); each function
 * below is named after the one it follows. One training step of a model
 * with a cuDNN convolution, cudnn.benchmark on, and a tensor used on a side
 * stream. Run with SIMCUDA_MEMORY=64M SIMCUDA_OTHER=1M (1 MiB held by
 * another process, as a CUDA context is).
 *
 *   lazy_init_device  on the first allocation: the device's default pool
 *                     (cudaDeviceGetDefaultMemPool), its release threshold
 *                     set to UINT64_MAX and the three reuse attributes to 1
 *                     (cudaMemPoolSetAttribute), and the "dummy unifying
 *                     free stream" from getStreamFromPool (c10/cuda/
 *                     CUDAStream.cpp creates pool streams non-blocking:
 *                     cudaStreamCreateWithPriority(..., cudaStreamNonBlocking,
 *                     ...); here cudaStreamCreateWithFlags)
 *   forward           weights 8 MiB and an activation 4 MiB (mallocAsync:
 *                     cudaMallocAsync on the current stream, the NULL one)
 *   benchmark         aten/src/ATen/native/cudnn/Conv_v8.cpp run_single_conv
 *                     with benchmark: get_plans_from_find ->
 *                     generate_and_filter_plans -> get_available_workspace ->
 *                     cacheInfo: cudaMemGetInfo, guess = the free memory
 *                     (51 MiB), cudaMallocAsync fails, guess >>= 1 (25.5 MiB)
 *                     fits, cudaFreeAsync; then the workspace (8 MiB, the
 *                     largest plan within the guess) through the allocator,
 *                     the plans timed, the workspace freed, and
 *                     _cudnn_get_conv_benchmark_empty_cache's emptyCache:
 *                     cudaDeviceSynchronize, cudaMemPoolTrimTo(pool, 0)
 *   side_stream       the activation used on another pool stream (the
 *                     simulated driver's simcuda_use), recordStream adds
 *                     that stream to its recorded_streams; its free is
 *                     free_impl's: sync_raw (cudaEventCreateWithFlags
 *                     DisableTiming, cudaEventRecord, cudaStreamWaitEvent,
 *                     cudaEventDestroy) from the creation stream and from the
 *                     side stream to the unifying stream, then cudaFreeAsync
 *                     on the unifying stream; the next activation (4 MiB)
 *                     therefore does not get its memory: the pool grows
 *   step_end          cudaDeviceSynchronize (loss.item()); the pool keeps its
 *                     16 MiB (threshold); a third activation (4 MiB) reuses
 *                     it; both activations freed on their stream
 *
 *   again             (with the argument "again") benchmark_again, below
 *
 * Allocations 5 and frees 4 besides the probe's (the weights stay), failed
 * 1 (the probe's first guess: outcome probe). Device peak 20 MiB (weights, activation,
 * workspace; the probe's 25.5 MiB is held out). The pool reserves at most
 * 38 MiB (the probe's), 12 MiB after emptyCache, 16 MiB at the end with
 * 8 MiB used. No reuse hazard.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "progs.h"

gs_cudaerror cudaMallocAsync(void **p, size_t size, gs_custream stream);
gs_cudaerror cudaFreeAsync(void *p, gs_custream stream);
gs_cudaerror cudaMemGetInfo(size_t *free_bytes, size_t *total);
gs_cudaerror cudaGetLastError(void);
gs_cudaerror cudaDeviceSynchronize(void);
gs_cudaerror cudaDeviceGetDefaultMemPool(gs_cumempool *pool, int device);
gs_cudaerror cudaMemPoolSetAttribute(gs_cumempool pool, gs_cumempoolattr attr, void *value);
gs_cudaerror cudaMemPoolGetAttribute(gs_cumempool pool, gs_cumempoolattr attr, void *value);
gs_cudaerror cudaMemPoolTrimTo(gs_cumempool pool, size_t keep);
gs_cudaerror cudaStreamCreateWithFlags(gs_custream *stream, unsigned int flags);
gs_cudaerror cudaEventCreateWithFlags(gs_cuevent *event, unsigned int flags);
gs_cudaerror cudaEventRecord(gs_cuevent event, gs_custream stream);
gs_cudaerror cudaStreamWaitEvent(gs_custream stream, gs_cuevent event, unsigned int flags);
gs_cudaerror cudaEventDestroy(gs_cuevent event);

#define cudaStreamNonBlocking 1
#define cudaEventDisableTiming 2
#define cudaMemPoolReuseFollowEventDependencies 1
#define cudaMemPoolReuseAllowOpportunistic 2
#define cudaMemPoolReuseAllowInternalDependencies 3

/* ptr_info: PtrUsage of each live pointer (creation stream, recorded
 * streams), pytorch_used_bytes, and the unifying stream. */
#define PTRS 16
static struct {
    void *ptr;
    size_t size;
    gs_custream creation, recorded; /* recorded: at most one here */
} ptr_info[PTRS];
static size_t pytorch_used_bytes;
static int initialized;
static gs_custream dummy_unifying_free_stream;
static gs_cumempool mempool;

static gs_custream get_stream_from_pool(void)
{
    gs_custream s;
    EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), GS_cudaSuccess);
    return s;
}

NOINLINE static void lazy_init_device(void)
{
    if (initialized)
        return;
    EXPECT(cudaDeviceGetDefaultMemPool(&mempool, 0), GS_cudaSuccess);
    gs_cuuint64 threshold = UINT64_MAX;
    EXPECT(cudaMemPoolSetAttribute(mempool, GS_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
           GS_cudaSuccess);
    int enable = 1;
    EXPECT(cudaMemPoolSetAttribute(mempool, cudaMemPoolReuseFollowEventDependencies, &enable),
           GS_cudaSuccess);
    EXPECT(cudaMemPoolSetAttribute(mempool, cudaMemPoolReuseAllowOpportunistic, &enable),
           GS_cudaSuccess);
    EXPECT(cudaMemPoolSetAttribute(mempool, cudaMemPoolReuseAllowInternalDependencies, &enable),
           GS_cudaSuccess);
    dummy_unifying_free_stream = get_stream_from_pool();
    initialized = 1;
}

NOINLINE static void *mallocAsync(size_t size, gs_custream stream)
{
    lazy_init_device();
    void *p = NULL;
    EXPECT(cudaMallocAsync(&p, size, stream), GS_cudaSuccess); /* else OutOfMemoryError */
    for (int i = 0; i < PTRS; i++)
        if (!ptr_info[i].ptr) {
            ptr_info[i].ptr = p;
            ptr_info[i].size = size;
            ptr_info[i].creation = stream;
            ptr_info[i].recorded = NULL;
            pytorch_used_bytes += size;
            return p;
        }
    EXPECT(0, 1);
    return NULL;
}

static int info_of(void *p)
{
    for (int i = 0; i < PTRS; i++)
        if (ptr_info[i].ptr == p)
            return i;
    EXPECT(0, 1); /* "ptr not found in ptr_info" */
    return -1;
}

NOINLINE static void recordStream(void *p, gs_custream stream)
{
    int i = info_of(p);
    if (stream != ptr_info[i].creation)
        ptr_info[i].recorded = stream;
}

static void sync_raw(gs_custream dependency, gs_custream dependent)
{
    gs_cuevent event;
    EXPECT(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), GS_cudaSuccess);
    EXPECT(cudaEventRecord(event, dependency), GS_cudaSuccess);
    EXPECT(cudaStreamWaitEvent(dependent, event, 0), GS_cudaSuccess);
    EXPECT(cudaEventDestroy(event), GS_cudaSuccess);
}

/* freeAsync -> free_impl */
NOINLINE static void freeAsync(void *p)
{
    int i = info_of(p);
    if (!ptr_info[i].recorded) {
        EXPECT(cudaFreeAsync(p, ptr_info[i].creation), GS_cudaSuccess);
    } else {
        sync_raw(ptr_info[i].creation, dummy_unifying_free_stream);
        sync_raw(ptr_info[i].recorded, dummy_unifying_free_stream);
        EXPECT(cudaFreeAsync(p, dummy_unifying_free_stream), GS_cudaSuccess);
    }
    pytorch_used_bytes -= ptr_info[i].size;
    ptr_info[i].ptr = NULL;
}

/* CudaMallocAsyncAllocator::cacheInfo (no memory fraction: the limit is
 * UINT64_MAX) */
NOINLINE static size_t cacheInfo(void)
{
    lazy_init_device();
    size_t free_upper_bound, device_total;
    EXPECT(cudaMemGetInfo(&free_upper_bound, &device_total), GS_cudaSuccess);
    size_t guess = free_upper_bound; /* min(free, UINT64_MAX - pytorch_used_bytes) */
    void *dummy;
    for (;;) {
        gs_cudaerror err = cudaMallocAsync(&dummy, guess, NULL);
        if (err == GS_cudaSuccess) {
            cudaFreeAsync(dummy, NULL);
            return guess;
        }
        EXPECT(err, GS_cudaErrorMemoryAllocation);
        (void)cudaGetLastError();
        guess >>= 1;
    }
}

/* CudaMallocAsyncAllocator::emptyCache */
NOINLINE static void emptyCache(void)
{
    gs_cumempool pool;
    EXPECT(cudaDeviceGetDefaultMemPool(&pool, 0), GS_cudaSuccess);
    EXPECT(cudaDeviceSynchronize(), GS_cudaSuccess);
    EXPECT(cudaMemPoolTrimTo(pool, 0), GS_cudaSuccess);
}

static size_t reserved(void)
{
    gs_cuuint64 r = 0;
    EXPECT(cudaMemPoolGetAttribute(mempool, GS_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r),
           GS_cudaSuccess);
    return (size_t)r;
}

NOINLINE static void benchmark(void)
{
    size_t max_block_size = cacheInfo(); /* get_available_workspace */
    EXPECT(max_block_size, 51 * MiB / 2);
    EXPECT(reserved(), 38 * MiB);
    void *workspace = mallocAsync(8 * MiB, NULL);
    freeAsync(workspace);
    emptyCache();
    EXPECT(reserved(), 12 * MiB);
}

/* With "again": a later step meets a new convolution shape, so cuDNN's
 * benchmark runs cacheInfo again, now with 8 MiB cached in the pool (the
 * activations' freed): cudaMemGetInfo says 47 MiB free, and the first guess,
 * all of it, fits at once (the pool grows by 40 MiB: 2 MiB chunks) and
 * is freed at once: a probe that failed nothing. */
NOINLINE static void benchmark_again(void)
{
    EXPECT(cacheInfo(), 47 * MiB);
    EXPECT(reserved(), 56 * MiB);
    emptyCache();
    EXPECT(reserved(), 8 * MiB);
}

int main(int argc, char **argv)
{
    void *weights = mallocAsync(8 * MiB, NULL); /* forward */
    void *act = mallocAsync(4 * MiB, NULL);
    benchmark();

    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); /* side_stream */
    gs_curesult (*use)(gs_custream, gs_cudeviceptr) = cuda ? dlsym(cuda, "simcuda_use") : NULL;
    unsigned long (*hazards)(void) = cuda ? dlsym(cuda, "simcuda_hazards") : NULL;
    EXPECT(use && hazards, 1);
    gs_custream side = get_stream_from_pool();
    EXPECT(use(side, (gs_cudeviceptr)(uintptr_t)act), GS_CUDA_SUCCESS);
    recordStream(act, side);
    freeAsync(act);
    void *act2 = mallocAsync(4 * MiB, NULL);
    EXPECT(act2 != act, 1);
    EXPECT(reserved(), 16 * MiB);

    EXPECT(cudaDeviceSynchronize(), GS_cudaSuccess); /* step_end */
    EXPECT(reserved(), 16 * MiB);
    void *act3 = mallocAsync(4 * MiB, NULL);
    EXPECT(reserved(), 16 * MiB);
    freeAsync(act2);
    freeAsync(act3);
    if (argc > 1 && strcmp(argv[1], "again") == 0)
        benchmark_again();
    (void)weights;
    printf("async backend done, %lu hazards\n", hazards());
    return 0;
}
