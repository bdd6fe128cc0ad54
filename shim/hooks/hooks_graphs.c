/*
 * hooks_graphs.c - CUDA graphs: stream capture, graph memory nodes, and the
 * executables that run them (docs/design.md "CUDA graphs").
 *
 * While a stream captures, cuMemAllocAsync and cuMemFreeAsync on it allocate
 * and free nothing: they add allocation and free nodes to the graph the
 * capture makes, and the memory is taken from the device's graph pool each
 * time the graph runs. So the async hooks (hooks_driver.c) ask
 * gs_graph_capturing first and record a GS_REC_GRAPH_NODE in place of the
 * allocation or free; nodes added directly (cuGraphAddMemAllocNode/FreeNode)
 * are recorded the same way, with the call stack, which is what tells a user
 * whose tensor a graph holds.
 *
 * Whether a stream captures is the real cuStreamIsCapturing's answer, asked
 * only while a capture begun through these hooks is under way (a count of
 * them), so that a program that never captures pays nothing for it. A
 * capture ends at cuStreamEndCapture whether it made a graph or was
 * invalidated (the count goes down then too).
 *
 * The hooks may ask the driver nothing that ends a capture. cuStreamGetDevice
 * on a capturing stream invalidates the capture (driver 580, CUDA 13: seen
 * with examples/gpu_capture_check.py, without the shim as with it), which
 * failed every torch.cuda.graph under the shim; cuCtxGetDevice and
 * cuStreamIsCapturing leave it active, and so does cuStreamGetDevice on
 * another stream, from the capturing thread or another one. So while any
 * capture is under way, a stream's device is the current context's
 * (gs_stream_device).
 *
 * Capture begin and end, instantiation, launch and upload (failed ones too,
 * with their result), executable and graph destruction and trim are
 * GS_REC_GRAPH records; after a launch, upload, trim or destruction the
 * record carries the device's graph pool, read from the real
 * cuDeviceGetGraphMemAttribute (reserved and used bytes). A launch that
 * failed for memory is followed by a failed allocation, with the device's
 * free memory then, which the analyzer ties to the graph's nodes.
 */
#include <errno.h>

#include "shim/base/base.h"
#include "shim/writer/writer.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks_int.h"

static int captures; /* begun through our hooks and not yet ended; atomic */

int gs_graph_capturing(gs_custream stream)
{
    if (!__atomic_load_n(&captures, __ATOMIC_ACQUIRE))
        return 0;
    gs_pfn_cuStreamIsCapturing is =
        (gs_pfn_cuStreamIsCapturing)gs_real(GS_FN_cuStreamIsCapturing);
    gs_custreamcapturestatus status = GS_CU_STREAM_CAPTURE_STATUS_NONE;
    int saved = errno;
    int yes = is && is(stream, &status) == GS_CUDA_SUCCESS &&
              status == GS_CU_STREAM_CAPTURE_STATUS_ACTIVE;
    errno = saved;
    return yes;
}

int32_t gs_stream_device(gs_custream stream)
{
    if (__atomic_load_n(&captures, __ATOMIC_ACQUIRE))
        return gs_current_device();
    gs_pfn_cuStreamGetDevice get = (gs_pfn_cuStreamGetDevice)gs_real(GS_FN_cuStreamGetDevice);
    gs_cudevice dev;
    int saved = errno;
    int32_t d = get && get(stream, &dev) == GS_CUDA_SUCCESS ? dev : gs_current_device();
    errno = saved;
    return d;
}

/* The GS_REC_GRAPH record of a call, and the graph pool after it if sample. */
static void note(enum gs_api api, enum gs_graph_op op, int32_t device, uint64_t graph,
                 uint64_t exec, gs_custream stream, uint64_t flags, gs_curesult r, int sample)
{
    if (gs_recording_off())
        return;
    gs_record_graph(api, op, device, graph, exec, stream, flags, r, sample);
}

static gs_curesult begin_capture(enum gs_api api, gs_pfn_cuStreamBeginCapture_v2 real,
                                 gs_custream stream, gs_custreamcapturemode mode)
{
    gs_curesult r = real(stream, mode);
    if (r != GS_CUDA_SUCCESS)
        return r;
    __atomic_add_fetch(&captures, 1, __ATOMIC_ACQ_REL);
    note(api, GS_GRAPH_CAPTURE_BEGIN, gs_stream_device(stream), 0, 0, stream,
         (uint64_t)(unsigned)mode, r, 0);
    return r;
}

GS_EXPORT gs_curesult cuStreamBeginCapture_v2(gs_custream hStream, gs_custreamcapturemode mode)
{
    GS_REAL_OR_MISSING(cuStreamBeginCapture_v2);
    return begin_capture(GS_API_cuStreamBeginCapture_v2, real, hStream, mode);
}

GS_EXPORT gs_curesult cuStreamBeginCapture_v2_ptsz(gs_custream hStream,
                                                   gs_custreamcapturemode mode)
{
    GS_REAL_OR_MISSING(cuStreamBeginCapture_v2_ptsz);
    return begin_capture(GS_API_cuStreamBeginCapture_v2_ptsz, real, hStream, mode);
}

static gs_curesult end_capture(enum gs_api api, gs_pfn_cuStreamEndCapture real,
                               gs_custream stream, gs_cugraph *graph)
{
    gs_curesult r = real(stream, graph);
    /* The capture has ended when a graph came back, and also when it was
     * invalidated or left unjoined streams (a NULL graph): not when the
     * stream had none under way or another thread may not end it. */
    if (r != GS_CUDA_SUCCESS && r != GS_CUDA_ERROR_STREAM_CAPTURE_INVALIDATED &&
        r != GS_CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
        return r;
    int left = __atomic_load_n(&captures, __ATOMIC_ACQUIRE);
    while (left > 0 && !__atomic_compare_exchange_n(&captures, &left, left - 1, 0,
                                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    if (r != GS_CUDA_SUCCESS || !graph)
        return r;
    note(api, GS_GRAPH_CAPTURE_END, gs_stream_device(stream), (uint64_t)(uintptr_t)*graph, 0,
         stream, 0, r, 0);
    return r;
}

GS_EXPORT gs_curesult cuStreamEndCapture(gs_custream hStream, gs_cugraph *phGraph)
{
    GS_REAL_OR_MISSING(cuStreamEndCapture);
    return end_capture(GS_API_cuStreamEndCapture, real, hStream, phGraph);
}

GS_EXPORT gs_curesult cuStreamEndCapture_ptsz(gs_custream hStream, gs_cugraph *phGraph)
{
    GS_REAL_OR_MISSING(cuStreamEndCapture_ptsz);
    return end_capture(GS_API_cuStreamEndCapture_ptsz, real, hStream, phGraph);
}

GS_EXPORT gs_curesult cuGraphAddMemAllocNode(gs_cugraphnode *phGraphNode, gs_cugraph hGraph,
                                             const gs_cugraphnode *dependencies,
                                             size_t numDependencies,
                                             gs_cumemallocnodeparams *nodeParams)
{
    GS_REAL_OR_MISSING(cuGraphAddMemAllocNode);
    gs_curesult r = real(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
    if (r == GS_CUDA_SUCCESS && nodeParams && nodeParams->dptr)
        gs_record_graph_node(GS_API_cuGraphAddMemAllocNode,
                             nodeParams->poolProps.location.type == GS_CU_MEM_LOCATION_TYPE_DEVICE
                                 ? nodeParams->poolProps.location.id
                                 : GS_DEVICE_UNKNOWN,
                             nodeParams->dptr, nodeParams->bytesize, NULL,
                             (uint64_t)(uintptr_t)hGraph, 0);
    return r;
}

GS_EXPORT gs_curesult cuGraphAddMemFreeNode(gs_cugraphnode *phGraphNode, gs_cugraph hGraph,
                                            const gs_cugraphnode *dependencies,
                                            size_t numDependencies, gs_cudeviceptr dptr)
{
    GS_REAL_OR_MISSING(cuGraphAddMemFreeNode);
    gs_curesult r = real(phGraphNode, hGraph, dependencies, numDependencies, dptr);
    if (r == GS_CUDA_SUCCESS)
        gs_record_graph_node(GS_API_cuGraphAddMemFreeNode, GS_DEVICE_CURRENT, dptr, 0, NULL,
                             (uint64_t)(uintptr_t)hGraph, 1);
    return r;
}

GS_EXPORT gs_curesult cuGraphInstantiateWithFlags(gs_cugraphexec *phGraphExec, gs_cugraph hGraph,
                                                  unsigned long long flags)
{
    GS_REAL_OR_MISSING(cuGraphInstantiateWithFlags);
    gs_curesult r = real(phGraphExec, hGraph, flags);
    if (r == GS_CUDA_SUCCESS && phGraphExec)
        note(GS_API_cuGraphInstantiateWithFlags, GS_GRAPH_INSTANTIATE, GS_DEVICE_CURRENT,
             (uint64_t)(uintptr_t)hGraph, (uint64_t)(uintptr_t)*phGraphExec, NULL, flags, r, 0);
    return r;
}

/* A launch or upload: recorded whatever its result; one that failed for
 * memory also as a failed allocation (with the device's free memory). */
static gs_curesult run(enum gs_api api, enum gs_graph_op op, gs_pfn_cuGraphLaunch real,
                       gs_cugraphexec exec, gs_custream stream)
{
    gs_curesult r = real(exec, stream);
    int32_t device = gs_stream_device(stream);
    note(api, op, device, 0, (uint64_t)(uintptr_t)exec, stream, 0, r, 1);
    if (r == GS_CUDA_ERROR_OUT_OF_MEMORY)
        gs_record_alloc_failed(api, device, 0, stream, r);
    return r;
}

GS_EXPORT gs_curesult cuGraphLaunch(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuGraphLaunch);
    return run(GS_API_cuGraphLaunch, GS_GRAPH_LAUNCH, real, hGraphExec, hStream);
}

GS_EXPORT gs_curesult cuGraphLaunch_ptsz(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuGraphLaunch_ptsz);
    return run(GS_API_cuGraphLaunch_ptsz, GS_GRAPH_LAUNCH, real, hGraphExec, hStream);
}

GS_EXPORT gs_curesult cuGraphUpload(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuGraphUpload);
    return run(GS_API_cuGraphUpload, GS_GRAPH_UPLOAD, real, hGraphExec, hStream);
}

GS_EXPORT gs_curesult cuGraphUpload_ptsz(gs_cugraphexec hGraphExec, gs_custream hStream)
{
    GS_REAL_OR_MISSING(cuGraphUpload_ptsz);
    return run(GS_API_cuGraphUpload_ptsz, GS_GRAPH_UPLOAD, real, hGraphExec, hStream);
}

GS_EXPORT gs_curesult cuGraphExecDestroy(gs_cugraphexec hGraphExec)
{
    GS_REAL_OR_MISSING(cuGraphExecDestroy);
    gs_curesult r = real(hGraphExec);
    if (r == GS_CUDA_SUCCESS)
        note(GS_API_cuGraphExecDestroy, GS_GRAPH_EXEC_DESTROY, GS_DEVICE_CURRENT, 0,
             (uint64_t)(uintptr_t)hGraphExec, NULL, 0, r, 1);
    return r;
}

GS_EXPORT gs_curesult cuGraphDestroy(gs_cugraph hGraph)
{
    GS_REAL_OR_MISSING(cuGraphDestroy);
    gs_curesult r = real(hGraph);
    if (r == GS_CUDA_SUCCESS)
        note(GS_API_cuGraphDestroy, GS_GRAPH_DESTROY, GS_DEVICE_CURRENT,
             (uint64_t)(uintptr_t)hGraph, 0, NULL, 0, r, 1);
    return r;
}

GS_EXPORT gs_curesult cuDeviceGraphMemTrim(gs_cudevice device)
{
    GS_REAL_OR_MISSING(cuDeviceGraphMemTrim);
    gs_curesult r = real(device);
    if (r == GS_CUDA_SUCCESS)
        note(GS_API_cuDeviceGraphMemTrim, GS_GRAPH_TRIM, device, 0, 0, NULL, 0, r, 1);
    return r;
}
