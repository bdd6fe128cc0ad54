/*
 * graph.c - Graph Management and stream capture: cudaStreamBeginCapture/EndCapture,
 * cudaStreamIsCapturing, cudaThreadExchangeStreamCaptureMode, cudaGraphCreate, the memory
 * nodes, instantiate, upload, launch and destroy, and the graph memory pool's trim and
 * attributes.
 */
#include "tests/sim/runtime/runtime.h"

/* Each maps onto the driver call of the same name; the runtime's enums
 * (cudaStreamCaptureMode, cudaGraphMemAttributeType, cudaGraphInstantiateFlags)
 * and struct cudaMemAllocNodeParams have the driver's values and layout. */
SIM_EXPORT gs_cudaerror cudaStreamBeginCapture(gs_custream stream, int mode)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.begin_capture(stream, mode)));
}

SIM_EXPORT gs_cudaerror cudaStreamEndCapture(gs_custream stream, gs_cugraph *pGraph)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.end_capture(stream, pGraph)));
}

SIM_EXPORT gs_cudaerror cudaStreamIsCapturing(gs_custream stream, int *pCaptureStatus)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err
                                      : from_driver(drv.is_capturing(stream, pCaptureStatus)));
}

SIM_EXPORT gs_cudaerror cudaThreadExchangeStreamCaptureMode(int *mode)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.exchange_mode(mode)));
}

SIM_EXPORT gs_cudaerror cudaGraphCreate(gs_cugraph *pGraph, unsigned int flags)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.graph_create(pGraph, flags)));
}

SIM_EXPORT gs_cudaerror cudaGraphAddMemAllocNode(gs_cugraphnode *pGraphNode, gs_cugraph graph,
                                                 const gs_cugraphnode *pDependencies,
                                                 size_t numDependencies,
                                                 gs_cumemallocnodeparams *nodeParams)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess
                    ? err
                    : from_driver(drv.alloc_node(pGraphNode, graph, pDependencies,
                                                 numDependencies, nodeParams)));
}

SIM_EXPORT gs_cudaerror cudaGraphAddMemFreeNode(gs_cugraphnode *pGraphNode, gs_cugraph graph,
                                                const gs_cugraphnode *pDependencies,
                                                size_t numDependencies, void *dptr)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess
                    ? err
                    : from_driver(drv.free_node(pGraphNode, graph, pDependencies,
                                                numDependencies,
                                                (gs_cudeviceptr)(uintptr_t)dptr)));
}

SIM_EXPORT gs_cudaerror cudaGraphInstantiateWithFlags(gs_cugraphexec *pGraphExec, gs_cugraph graph,
                                                      unsigned long long flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err
                                      : from_driver(drv.instantiate(pGraphExec, graph, flags)));
}

SIM_EXPORT gs_cudaerror cudaGraphUpload(gs_cugraphexec graphExec, gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.upload(graphExec, stream)));
}

SIM_EXPORT gs_cudaerror cudaGraphLaunch(gs_cugraphexec graphExec, gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.launch(graphExec, stream)));
}

SIM_EXPORT gs_cudaerror cudaGraphExecDestroy(gs_cugraphexec graphExec)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.exec_destroy(graphExec)));
}

SIM_EXPORT gs_cudaerror cudaGraphDestroy(gs_cugraph graph)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.graph_destroy(graph)));
}

SIM_EXPORT gs_cudaerror cudaDeviceGraphMemTrim(int device)
{
    gs_cudaerror err = driver_ready();

    if (err != GS_cudaSuccess)
        return done(err);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    return done(from_driver(drv.graph_trim(device)));
}

SIM_EXPORT gs_cudaerror cudaDeviceGetGraphMemAttribute(int device, int attr, void *value)
{
    gs_cudaerror err = driver_ready();

    if (err != GS_cudaSuccess)
        return done(err);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    return done(from_driver(drv.graph_get(device, attr, value)));
}

SIM_EXPORT gs_cudaerror cudaDeviceSetGraphMemAttribute(int device, int attr, void *value)
{
    gs_cudaerror err = driver_ready();

    if (err != GS_cudaSuccess)
        return done(err);
    if (device < 0 || device >= device_count)
        return done(SIM_cudaErrorInvalidDevice);
    return done(from_driver(drv.graph_set(device, attr, value)));
}
