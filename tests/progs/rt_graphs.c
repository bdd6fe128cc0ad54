/*
 * rt_graphs.c - CUDA graphs as PyTorch makes and replays them, through the
 * runtime (the simulated libcudart), on a 64 MiB device (docs/design.md
 * "CUDA graphs"; tests/integration/test_graphs.py checks the figures). The code
 * followed is pytorch/pytorch's, read for this program:
 *
 *   aten/src/ATen/cuda/CUDAGraph.cpp
 *     CUDAGraph::capture_begin: the allocator's beginAllocateToPool, then
 *       AT_CUDA_CHECK(cudaStreamBeginCapture(capture_stream_, capture_mode))
 *       (capture_mode: cudaStreamCaptureModeGlobal by default), then
 *       cudaStreamGetCaptureInfo must say the stream captures (here:
 *       cudaStreamIsCapturing);
 *     CUDAGraph::capture_end: cudaStreamEndCapture(capture_stream_, &graph_),
 *       the allocator's endAllocateToPool; without keep_graph, instantiate()
 *       and AT_CUDA_CHECK(cudaGraphDestroy(graph_)) at once;
 *     CUDAGraph::instantiate: cudaGraphInstantiateWithFlags(&graph_exec_,
 *       graph_, cudaGraphInstantiateFlagAutoFreeOnLaunch |
 *       cudaGraphInstantiateFlagUseNodePriority) ("if some tensors are not
 *       freed between replays, the graph's internal bookkeeping requires
 *       that we instantiate with cudaGraphInstantiateFlagAutoFreeOnLaunch");
 *     CUDAGraph::replay: cudaGraphLaunch(graph_exec_, current stream);
 *     CUDAGraph::reset: releasePool, then cudaGraphExecDestroy(graph_exec_).
 *   c10/cuda/CUDAMallocAsyncAllocator.cpp (backend:cudaMallocAsync):
 *     mallocAsync calls cudaMallocAsync on the stream and free
 *     cudaFreeAsync, capture or not (beginAllocateToPool only sets
 *     capture_underway, which defers frees on other streams): so under
 *     capture every tensor is an allocation node of the graph, and a
 *     tensor the graph returns (its output) is not freed in it.
 *   c10/cuda/CUDACachingAllocator.cpp (the native allocator):
 *     cudaMallocMaybeCapturing: under capture,
 *       at::cuda::CUDAStreamCaptureModeGuard g{cudaStreamCaptureModeRelaxed};
 *       return C10_CUDA_ERROR_HANDLED(cudaMalloc(p, size));
 *     (the guard is cudaThreadExchangeStreamCaptureMode there and back): a
 *     segment of the graph's private pool is ordinary device memory, got
 *     by cudaMalloc while the stream captures.
 *
 * The schedule (MiB), each phase in a function named for what it imitates:
 *   weights: cudaMallocAsync 8 outside any capture (ordinary memory);
 *   async_backend_capture: capture on s: t1 4, t2 6, free t1, t3 4, free t2,
 *     out 2 (the output, not freed), free t3; instantiate, destroy the
 *     graph, upload, replay 3 times, free out (cudaFreeAsync), reset,
 *     cudaDeviceGraphMemTrim;
 *   node_graph: cudaGraphCreate; alloc nodes tmp 12 and keep 4, a free node
 *     of tmp; instantiate (flags 0), launch; keep is freed later by cudaFree;
 *   oom_graph: alloc nodes small 6 and huge 52 (with their free nodes): its
 *     launch fails (the pool holds 16, 40 free: it would need 42 more);
 *     destroyed; trim;
 *   native_private_pool: capture on s2 with a 2 MiB segment cudaMalloc'd
 *     under a relaxed guard; instantiate, replay, reset; the segment freed.
 * An argument stops the program (exit 0, nothing freed) at that point:
 * "captured" (after the first capture), "replayed" (after its replays),
 * "kept" (after the node graph's launch). "churn" runs the whole schedule
 * with CHURN_PAIRS (2.5 million) cudaMallocAsync/cudaFreeAsync pairs of 512
 * to 1023 bytes (drawn as progs.h's churn_size draws, 9 bits of it) after
 * the replays, while the executable and its output live (enough events,
 * about 5.4 MB of trace, for a trace bounded at 4 MiB to start over from a
 * checkpoint; a size that does not repeat keeps zlib from squeezing a pair
 * to nothing, which took 10 million pairs of one size).
 */
#include <stdint.h>
#include <string.h>

#include "progs.h"

gs_cudaerror cudaMalloc(void **p, size_t size);
gs_cudaerror cudaFree(void *p);
gs_cudaerror cudaMallocAsync(void **p, size_t size, gs_custream stream);
gs_cudaerror cudaFreeAsync(void *p, gs_custream stream);
gs_cudaerror cudaMemGetInfo(size_t *free_bytes, size_t *total);
gs_cudaerror cudaStreamCreate(gs_custream *stream);
gs_cudaerror cudaStreamSynchronize(gs_custream stream);
gs_cudaerror cudaStreamBeginCapture(gs_custream stream, int mode);
gs_cudaerror cudaStreamEndCapture(gs_custream stream, gs_cugraph *graph);
gs_cudaerror cudaStreamIsCapturing(gs_custream stream, int *status);
gs_cudaerror cudaThreadExchangeStreamCaptureMode(int *mode);
gs_cudaerror cudaGraphCreate(gs_cugraph *graph, unsigned int flags);
gs_cudaerror cudaGraphAddMemAllocNode(gs_cugraphnode *node, gs_cugraph graph,
                                      const gs_cugraphnode *deps, size_t ndeps,
                                      gs_cumemallocnodeparams *params);
gs_cudaerror cudaGraphAddMemFreeNode(gs_cugraphnode *node, gs_cugraph graph,
                                     const gs_cugraphnode *deps, size_t ndeps, void *dptr);
gs_cudaerror cudaGraphInstantiateWithFlags(gs_cugraphexec *exec, gs_cugraph graph,
                                           unsigned long long flags);
gs_cudaerror cudaGraphUpload(gs_cugraphexec exec, gs_custream stream);
gs_cudaerror cudaGraphLaunch(gs_cugraphexec exec, gs_custream stream);
gs_cudaerror cudaGraphExecDestroy(gs_cugraphexec exec);
gs_cudaerror cudaGraphDestroy(gs_cugraph graph);
gs_cudaerror cudaDeviceGraphMemTrim(int device);
gs_cudaerror cudaDeviceGetGraphMemAttribute(int device, int attr, void *value);

#define cudaStreamCaptureModeGlobal 0
#define cudaStreamCaptureModeRelaxed 2
#define cudaStreamCaptureStatusActive 1
#define cudaGraphInstantiateFlagAutoFreeOnLaunch 1
#define cudaGraphInstantiateFlagUseNodePriority 8
#define cudaErrorMemoryAllocation 2

static gs_custream s, s2;
static const char *stop;
#define CHURN_PAIRS 2500000
static int churn;

static void stop_at(const char *where)
{
    if (stop && strcmp(stop, where) == 0)
        exit(0);
}

/* The device's memory this process holds now, and the graph pool's. */
static void expect_used(size_t bytes, uint64_t reserved, uint64_t used)
{
    size_t free_b, total;
    uint64_t r, u;
    EXPECT(cudaMemGetInfo(&free_b, &total), 0);
    EXPECT(total - free_b, bytes);
    EXPECT(cudaDeviceGetGraphMemAttribute(0, GS_CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r), 0);
    EXPECT(cudaDeviceGetGraphMemAttribute(0, GS_CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u), 0);
    EXPECT(r, reserved);
    EXPECT(u, used);
}

/* Active right after it began, as PyTorch asserts (CUDAGraph::capture_begin,
 * aten/src/ATen/cuda/CUDAGraph.cpp): a hook that broke it would fail here. */
__attribute__((noinline)) static void capture_begin(gs_custream stream)
{
    int status = 0;
    EXPECT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), 0);
    EXPECT(cudaStreamIsCapturing(stream, &status), 0);
    EXPECT(status, cudaStreamCaptureStatusActive);
}

/* capture_end and instantiate: the graph goes once instantiated. */
__attribute__((noinline)) static gs_cugraphexec capture_end(gs_custream stream)
{
    gs_cugraph graph = NULL;
    gs_cugraphexec exec = NULL;
    EXPECT(cudaStreamEndCapture(stream, &graph), 0);
    EXPECT(cudaGraphInstantiateWithFlags(&exec, graph,
                                         cudaGraphInstantiateFlagAutoFreeOnLaunch |
                                             cudaGraphInstantiateFlagUseNodePriority),
           0);
    EXPECT(cudaGraphDestroy(graph), 0);
    return exec;
}

__attribute__((noinline)) static void replay(gs_cugraphexec exec, gs_custream stream)
{
    EXPECT(cudaGraphLaunch(exec, stream), 0);
}

/* CUDAMallocAsyncAllocator's mallocAsync and free. */
__attribute__((noinline)) static void *malloc_async(size_t size, gs_custream stream)
{
    void *p = NULL;
    EXPECT(cudaMallocAsync(&p, size, stream), 0);
    return p;
}

__attribute__((noinline)) static void free_async(void *p, gs_custream stream)
{
    EXPECT(cudaFreeAsync(p, stream), 0);
}

__attribute__((noinline)) static void *async_backend_forward(void)
{
    void *t1 = malloc_async(4 * MiB, s);
    void *t2 = malloc_async(6 * MiB, s);
    free_async(t1, s);
    void *t3 = malloc_async(4 * MiB, s);
    free_async(t2, s);
    void *out = malloc_async(2 * MiB, s);
    free_async(t3, s);
    return out;
}

__attribute__((noinline)) static void async_backend_capture(void)
{
    capture_begin(s);
    void *out = async_backend_forward();
    gs_cugraphexec exec = capture_end(s);
    expect_used(8 * MiB, 0, 0); /* nothing allocated at capture */
    stop_at("captured");
    EXPECT(cudaGraphUpload(exec, s), 0);
    expect_used(18 * MiB, 10 * MiB, 0); /* set aside: t2 and t3 at once */
    for (int i = 0; i < 3; i++)
        replay(exec, s);
    unsigned long long sizes = CHURN_SEED;
    for (int i = 0; churn && i < CHURN_PAIRS; i++)
        free_async(malloc_async(512 + (churn_size(&sizes) & 511), s), s);
    EXPECT(cudaStreamSynchronize(s), 0); /* the stream-ordered pool back to 8 */
    expect_used(18 * MiB, 10 * MiB, 2 * MiB); /* out lives on */
    stop_at("replayed");
    free_async(out, s);
    EXPECT(cudaGraphExecDestroy(exec), 0);
    expect_used(18 * MiB, 10 * MiB, 0); /* the pool keeps it */
    EXPECT(cudaDeviceGraphMemTrim(0), 0);
    expect_used(8 * MiB, 0, 0);
}

__attribute__((noinline)) static void *alloc_node(gs_cugraph graph, size_t size)
{
    gs_cugraphnode node;
    gs_cumemallocnodeparams params;
    memset(&params, 0, sizeof params);
    params.poolProps.allocType = GS_CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = GS_CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = 0;
    params.bytesize = size;
    EXPECT(cudaGraphAddMemAllocNode(&node, graph, NULL, 0, &params), 0);
    return (void *)(uintptr_t)params.dptr;
}

__attribute__((noinline)) static void *alloc_node_keep(gs_cugraph graph, size_t size)
{
    return alloc_node(graph, size);
}

__attribute__((noinline)) static void *alloc_node_huge(gs_cugraph graph, size_t size)
{
    return alloc_node(graph, size);
}

static void free_node(gs_cugraph graph, void *p)
{
    gs_cugraphnode node;
    EXPECT(cudaGraphAddMemFreeNode(&node, graph, NULL, 0, p), 0);
}

__attribute__((noinline)) static void node_graph(void)
{
    gs_cugraph graph;
    gs_cugraphexec exec;
    EXPECT(cudaGraphCreate(&graph, 0), 0);
    void *tmp = alloc_node(graph, 12 * MiB);
    void *keep = alloc_node_keep(graph, 4 * MiB);
    free_node(graph, tmp);
    EXPECT(cudaGraphInstantiateWithFlags(&exec, graph, 0), 0);
    replay(exec, s);
    expect_used(24 * MiB, 16 * MiB, 4 * MiB);
    stop_at("kept");
    EXPECT(cudaGraphLaunch(exec, s), 1); /* keep is live: cudaErrorInvalidValue */
    EXPECT(cudaFree(keep), 0);
    expect_used(24 * MiB, 16 * MiB, 0);
    EXPECT(cudaGraphExecDestroy(exec), 0);
    EXPECT(cudaGraphDestroy(graph), 0);
}

__attribute__((noinline)) static void oom_graph(void)
{
    gs_cugraph graph;
    gs_cugraphexec exec;
    EXPECT(cudaGraphCreate(&graph, 0), 0);
    void *small = alloc_node(graph, 6 * MiB);
    void *huge = alloc_node_huge(graph, 52 * MiB);
    free_node(graph, small);
    free_node(graph, huge);
    EXPECT(cudaGraphInstantiateWithFlags(&exec, graph, 0), 0);
    EXPECT(cudaGraphLaunch(exec, s), cudaErrorMemoryAllocation);
    expect_used(24 * MiB, 16 * MiB, 0);
    EXPECT(cudaGraphExecDestroy(exec), 0);
    EXPECT(cudaGraphDestroy(graph), 0);
    EXPECT(cudaDeviceGraphMemTrim(0), 0);
    expect_used(8 * MiB, 0, 0);
}

/* CUDACachingAllocator's cudaMallocMaybeCapturing, under capture. */
__attribute__((noinline)) static void *malloc_maybe_capturing(size_t size)
{
    void *p = NULL;
    int mode = cudaStreamCaptureModeRelaxed;
    EXPECT(cudaThreadExchangeStreamCaptureMode(&mode), 0);
    EXPECT(cudaMalloc(&p, size), 0);
    EXPECT(cudaThreadExchangeStreamCaptureMode(&mode), 0);
    return p;
}

__attribute__((noinline)) static void native_private_pool(void)
{
    capture_begin(s2);
    void *segment = malloc_maybe_capturing(2 * MiB);
    gs_cugraphexec exec = capture_end(s2);
    replay(exec, s2);
    expect_used(10 * MiB, 0, 0); /* ordinary memory, no graph pool */
    EXPECT(cudaGraphExecDestroy(exec), 0);
    EXPECT(cudaFree(segment), 0);
}

int main(int argc, char **argv)
{
    stop = argc > 1 ? argv[1] : NULL;
    churn = stop && strcmp(stop, "churn") == 0;
    EXPECT(cudaStreamCreate(&s), 0);
    EXPECT(cudaStreamCreate(&s2), 0);
    void *weights = malloc_async(8 * MiB, s);
    async_backend_capture();
    node_graph();
    oom_graph();
    native_private_pool();
    free_async(weights, s);
    EXPECT(cudaStreamSynchronize(s), 0);
    expect_used(0, 0, 0);
    return 0;
}
