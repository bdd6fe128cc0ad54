/*
 * graph.c - Graph Management: graphs, their memory nodes and executables (cuGraphCreate,
 * cuGraphAddMemAllocNode/FreeNode, cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphUpload,
 * cuGraphExecDestroy, cuGraphDestroy); the design of the whole of CUDA graphs (capture.c,
 * graphmem.c) is below.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/graph.h"

/* Stream capture and graph memory nodes, as NVIDIA documents them (CUDA
 * Programming Guide, "Graph Memory Nodes"; Driver API reference of
 * cuStreamBeginCapture_v2, cuThreadExchangeStreamCaptureMode,
 * cuGraphAddMemAllocNode, cuGraphInstantiateWithFlags, cuGraphLaunch,
 * cuDeviceGraphMemTrim, cuDeviceGetGraphMemAttribute):
 *   - A stream captures from cuStreamBeginCapture_v2 to cuStreamEndCapture,
 *     which hands back the graph. cuMemAllocAsync, cuMemAllocFromPoolAsync
 *     and cuMemFreeAsync on it add allocation and free nodes instead of
 *     running: nothing is allocated or freed then. The NULL, legacy and
 *     per-thread streams cannot capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
 *   - Potentially unsafe calls (here cuMemAlloc and cuMemFree) fail with
 *     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when the calling thread's mode
 *     (cuThreadExchangeStreamCaptureMode; GLOBAL by default) is not RELAXED
 *     and the thread has a capture under way not begun RELAXED, or the mode
 *     is GLOBAL and another thread has a GLOBAL capture under way. (The
 *     real driver also invalidates the capture; the sim does not.)
 *   - cuStreamGetDevice on a capturing stream invalidates its capture, in
 *     every mode: cuStreamIsCapturing says CU_STREAM_CAPTURE_STATUS_INVALIDATED
 *     and cuStreamEndCapture ends it with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
 *     and a NULL graph. The documentation does not say so; driver 580.159
 *     (CUDA 13.0) on an H200 did it (examples/gpu_capture_check.py, run
 *     without the shim), and it broke PyTorch's CUDAGraph::capture_begin,
 *     which asserts the capture is active right after it began.
 *   - An allocation node's address is chosen when the node is made and stays
 *     the graph's while the node exists (in the graph or an executable made
 *     of it), and while the allocation is live after it. The sim gives each node an address of its own (the driver
 *     may reuse one within a graph for allocations whose lifetimes do not
 *     overlap; the sim does not).
 *   - A free node frees a graph allocation: one of the same graph (at most
 *     once), or one another graph left live. Other addresses are refused
 *     with CUDA_ERROR_INVALID_VALUE.
 *   - The memory comes from the device's graph pool when the graph runs
 *     (cuGraphLaunch), or is set aside for it by cuGraphUpload: the nodes
 *     run in the order they were added, an allocation's bytes are used from
 *     the allocation node to its free (so allocations whose lifetimes do not
 *     overlap share physical memory), and the pool grows in 2 MiB chunks,
 *     charged to the device (cuMemGetInfo sees them), to cover what the run
 *     uses at once. A launch that cannot grow the pool enough fails with
 *     CUDA_ERROR_OUT_OF_MEMORY and runs nothing (the documentation does not
 *     say what a launch does without memory; this is the sim's choice).
 *     Everything completes at once, as the rest of the sim's stream work.
 *   - Freed graph memory (a free node, cuMemFreeAsync, cuMemFree) goes back
 *     to the pool, which keeps it (cuStreamSynchronize does not shrink it)
 *     until cuDeviceGraphMemTrim gives back the chunks no live graph
 *     allocation needs.
 *   - A graph allocation not freed in its graph stays live after the launch
 *     until freed; launching that executable again before is
 *     CUDA_ERROR_INVALID_VALUE, unless it was instantiated with
 *     CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, which frees them first.
 *     Destroying the graph or the executable frees nothing.
 *   - A graph with memory nodes has at most one executable at a time.
 *   - CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT is the bytes of live graph
 *     allocations, RESERVED_MEM_CURRENT what the pool holds; the two HIGH
 *     attributes their largest values, reset (cuDeviceSetGraphMemAttribute,
 *     value 0 only) to the current ones.
 */
#define SIM_CU_GRAPH_INSTANTIATE_FLAGS_ALL 0xfull /* AUTO_FREE_ON_LAUNCH ... USE_NODE_PRIORITY */

/* A memory node; a CUgraphNode is the address of one. */
struct sim_gnode {
    int is_free;
    int dev;
    uint64_t addr, size; /* size: allocation nodes only */
};

/* A CUgraphExec: the nodes as they were at instantiation. */
struct sim_gexec {
    struct sim_graph *graph; /* NULL once the graph is destroyed */
    struct sim_gnode *nodes;
    size_t n;
    unsigned long long flags;
};

struct reg graphs, gexecs;

static struct sim_graph *graph_of(const void *p)
{
    long i = reg_index(&graphs, p);
    return i < 0 ? NULL : graphs.v[i];
}

static struct sim_gexec *gexec_of(const void *p)
{
    long i = reg_index(&gexecs, p);
    return i < 0 ? NULL : gexecs.v[i];
}

static gs_curesult node_add(struct sim_graph *g, int is_free, int dev, uint64_t addr,
                            uint64_t size, struct sim_gnode **out)
{
    struct sim_gnode *n = malloc(sizeof *n);
    struct sim_gnode **v = grow(g->nodes, &g->cap, g->n + 1, sizeof *v);

    if (!n || !v) {
        free(n);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    g->nodes = v;
    *n = (struct sim_gnode){is_free, dev, addr, size};
    g->nodes[g->n++] = n;
    if (out)
        *out = n;
    return GS_CUDA_SUCCESS;
}

gs_curesult alloc_node_locked(struct sim_graph *g, int dev, uint64_t bytesize,
                              gs_cudeviceptr *dptr, struct sim_gnode **node)
{
    uint64_t size = round_up(bytesize, SIM_ALIGN), addr;
    struct sim_galloc *v = grow(gallocs, &gallocs_cap, ngallocs + 1, sizeof *v);

    if (!v || bytesize > SIM_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    gallocs = v;
    if (space_take(&devices[dev].space, size, SIM_ALIGN, &addr) != 0)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (node_add(g, 0, dev, addr, size, node) != GS_CUDA_SUCCESS) {
        space_put(&devices[dev].space, addr, size);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    gallocs[ngallocs++] = (struct sim_galloc){addr, size, dev, 1, 0};
    *dptr = addr;
    return GS_CUDA_SUCCESS;
}

gs_curesult free_node_locked(struct sim_graph *g, gs_cudeviceptr dptr,
                             struct sim_gnode **node)
{
    struct sim_galloc *a = galloc_find(dptr);

    if (!a)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i]->is_free && g->nodes[i]->addr == dptr)
            return GS_CUDA_ERROR_INVALID_VALUE; /* freed once in a graph */
    return node_add(g, 1, a->dev, dptr, 0, node);
}

gs_curesult sim_cuGraphCreate(gs_cugraph *phGraph, unsigned int flags)
{
    struct sim_graph *g;
    int bad;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!phGraph || flags)
        return GS_CUDA_ERROR_INVALID_VALUE;
    g = calloc(1, sizeof *g);
    if (!g)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    bad = reg_add(&graphs, g);
    pthread_mutex_unlock(&lock);
    if (bad) {
        free(g);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phGraph = (gs_cugraph)g;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuGraphCreate)

/* Dependencies are not checked: the nodes run in the order they were added. */
gs_curesult sim_cuGraphAddMemAllocNode(gs_cugraphnode *phGraphNode, gs_cugraph hGraph,
                                       const gs_cugraphnode *dependencies,
                                       size_t numDependencies,
                                       gs_cumemallocnodeparams *nodeParams)
{
    struct sim_graph *g;
    struct sim_gnode *node = NULL;
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;
    int dev;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!phGraphNode || !nodeParams || !nodeParams->bytesize || (numDependencies && !dependencies))
        return GS_CUDA_ERROR_INVALID_VALUE;
    dev = nodeParams->poolProps.location.id;
    if (nodeParams->poolProps.location.type != GS_CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(dev))
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    g = graph_of(hGraph);
    if (g)
        rc = alloc_node_locked(g, dev, nodeParams->bytesize, &nodeParams->dptr, &node);
    pthread_mutex_unlock(&lock);
    if (rc == GS_CUDA_SUCCESS)
        *phGraphNode = (gs_cugraphnode)node;
    sim_log("cuGraphAddMemAllocNode(%zu) dev %d -> %d 0x%llx", nodeParams->bytesize, dev, rc,
            rc == GS_CUDA_SUCCESS ? nodeParams->dptr : 0);
    return rc;
}
SIM_EXPORT(cuGraphAddMemAllocNode)

gs_curesult sim_cuGraphAddMemFreeNode(gs_cugraphnode *phGraphNode, gs_cugraph hGraph,
                                      const gs_cugraphnode *dependencies,
                                      size_t numDependencies, gs_cudeviceptr dptr)
{
    struct sim_graph *g;
    struct sim_gnode *node = NULL;
    gs_curesult rc = GS_CUDA_ERROR_INVALID_VALUE;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!phGraphNode || (numDependencies && !dependencies))
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    g = graph_of(hGraph);
    if (g)
        rc = free_node_locked(g, dptr, &node);
    pthread_mutex_unlock(&lock);
    if (rc == GS_CUDA_SUCCESS)
        *phGraphNode = (gs_cugraphnode)node;
    return rc;
}
SIM_EXPORT(cuGraphAddMemFreeNode)

gs_curesult sim_cuGraphInstantiateWithFlags(gs_cugraphexec *phGraphExec, gs_cugraph hGraph,
                                            unsigned long long flags)
{
    struct sim_graph *g;
    struct sim_gexec *x;
    gs_curesult rc = GS_CUDA_SUCCESS;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!phGraphExec || (flags & ~SIM_CU_GRAPH_INSTANTIATE_FLAGS_ALL))
        return GS_CUDA_ERROR_INVALID_VALUE;
    x = calloc(1, sizeof *x);
    if (!x)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    g = graph_of(hGraph);
    if (!g || (g->n && g->execs))
        rc = GS_CUDA_ERROR_INVALID_VALUE; /* one executable of a graph with memory nodes */
    else if (g->n && !(x->nodes = malloc(g->n * sizeof *x->nodes)))
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    else if (reg_add(&gexecs, x) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == GS_CUDA_SUCCESS) {
        for (size_t i = 0; i < g->n; i++) {
            struct sim_galloc *a = g->nodes[i]->is_free ? NULL : galloc_find(g->nodes[i]->addr);
            x->nodes[i] = *g->nodes[i];
            if (a)
                a->node++;
        }
        x->n = g->n;
        x->graph = g;
        x->flags = flags;
        g->execs++;
    }
    pthread_mutex_unlock(&lock);
    if (rc != GS_CUDA_SUCCESS) {
        free(x->nodes);
        free(x);
        return rc;
    }
    *phGraphExec = (gs_cugraphexec)x;
    return rc;
}
SIM_EXPORT(cuGraphInstantiateWithFlags)

/* The bytes a run of x adds to the pools' use at its height, per device,
 * counting from the use before it (auto: its own allocations still live
 * are freed first); and whether it may run. Lock held. */
static gs_curesult run_needs(const struct sim_gexec *x, int autofree, uint64_t *need)
{
    uint64_t use[SIM_MAX_DEVICES];

    for (int d = 0; d < cfg.ndevices; d++)
        use[d] = need[d] = gpool[d].used;
    for (size_t i = 0; i < x->n; i++) {
        const struct sim_gnode *n = &x->nodes[i];
        struct sim_galloc *a = galloc_find(n->addr);
        if (n->is_free || !a || !a->live)
            continue;
        if (!autofree)
            return GS_CUDA_ERROR_INVALID_VALUE; /* left live by its last launch */
        use[a->dev] -= a->size;
        need[a->dev] -= a->size;
    }
    for (size_t i = 0; i < x->n; i++) {
        const struct sim_gnode *n = &x->nodes[i];
        if (!n->is_free) {
            use[n->dev] += n->size;
            if (use[n->dev] > need[n->dev])
                need[n->dev] = use[n->dev];
        } else {
            struct sim_galloc *a = galloc_find(n->addr);
            int own = 0; /* allocated earlier in this run */
            for (size_t j = 0; j < i; j++)
                own |= !x->nodes[j].is_free && x->nodes[j].addr == n->addr;
            if (a && (own || a->live))
                use[n->dev] -= a->size;
        }
    }
    for (int d = 0; d < cfg.ndevices; d++) {
        uint64_t want = round_up(need[d], SIM_GRANULE);
        need[d] = want > gpool[d].reserved ? want : gpool[d].reserved;
        if (need[d] - gpool[d].reserved > devices[d].capacity - devices[d].used)
            return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    return GS_CUDA_SUCCESS;
}

static gs_curesult graph_run(const char *api, gs_cugraphexec hGraphExec, gs_custream hStream,
                             int launch)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);
    uint64_t need[SIM_MAX_DEVICES];
    struct sim_gexec *x;

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    x = gexec_of(hGraphExec);
    rc = x ? run_needs(x, (x->flags & GS_CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0,
                       need)
           : SIM_CUDA_ERROR_INVALID_HANDLE;
    if (rc == GS_CUDA_SUCCESS) {
        for (int d = 0; d < cfg.ndevices; d++)
            gpool_reserve(d, need[d]);
        for (size_t i = 0; launch && i < x->n; i++) { /* the auto-free, then the run */
            struct sim_galloc *a = x->nodes[i].is_free ? NULL : galloc_find(x->nodes[i].addr);
            if (a && a->live)
                galloc_end(a);
        }
        for (size_t i = 0; launch && i < x->n; i++) {
            struct sim_gnode *n = &x->nodes[i];
            struct sim_galloc *a = galloc_find(n->addr);
            if (!a)
                continue;
            if (!n->is_free && !a->live) {
                a->live = 1;
                gpool_use(a->dev, a->size);
            } else if (n->is_free && a->live) {
                galloc_end(a);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    sim_log("%s(%p) -> %d", api, (void *)hGraphExec, rc);
    return rc;
}

gs_curesult sim_cuGraphLaunch(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    return graph_run("cuGraphLaunch", hGraphExec, hStream, 1);
}
SIM_EXPORT(cuGraphLaunch)

gs_curesult sim_cuGraphLaunch_ptsz(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    return graph_run("cuGraphLaunch_ptsz", hGraphExec, hStream, 1);
}
SIM_EXPORT(cuGraphLaunch_ptsz)

gs_curesult sim_cuGraphUpload(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    return graph_run("cuGraphUpload", hGraphExec, hStream, 0);
}
SIM_EXPORT(cuGraphUpload)

gs_curesult sim_cuGraphUpload_ptsz(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    return graph_run("cuGraphUpload_ptsz", hGraphExec, hStream, 0);
}
SIM_EXPORT(cuGraphUpload_ptsz)

gs_curesult sim_cuGraphExecDestroy(gs_cugraphexec hGraphExec)
{
    struct sim_gexec *x;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    x = gexec_of(hGraphExec);
    if (x) {
        reg_del(&gexecs, (size_t)reg_index(&gexecs, x));
        if (x->graph)
            x->graph->execs--;
        for (size_t i = 0; i < x->n; i++) {
            struct sim_galloc *a = x->nodes[i].is_free ? NULL : galloc_find(x->nodes[i].addr);
            if (a) {
                a->node--;
                galloc_reap(a);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    if (!x)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(x->nodes);
    free(x);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuGraphExecDestroy)

gs_curesult sim_cuGraphDestroy(gs_cugraph hGraph)
{
    struct sim_graph *g;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    g = graph_of(hGraph);
    if (g) {
        reg_del(&graphs, (size_t)reg_index(&graphs, g));
        for (size_t i = 0; i < gexecs.n; i++)
            if (((struct sim_gexec *)gexecs.v[i])->graph == g)
                ((struct sim_gexec *)gexecs.v[i])->graph = NULL;
        for (size_t i = 0; i < g->n; i++) {
            struct sim_galloc *a = g->nodes[i]->is_free ? NULL : galloc_find(g->nodes[i]->addr);
            if (a) {
                a->node--;
                galloc_reap(a);
            }
            free(g->nodes[i]);
        }
    }
    pthread_mutex_unlock(&lock);
    if (!g)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(g->nodes);
    free(g);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuGraphDestroy)
