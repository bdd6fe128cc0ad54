/*
 * capture.c - Stream Management, stream capture: cuStreamBeginCapture, cuStreamEndCapture,
 * cuStreamIsCapturing, cuThreadExchangeStreamCaptureMode, and what capture does to the
 * allocation calls. The design: graph.c.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/graph.h"

static int global_captures;             /* GLOBAL captures under way, all threads */
static __thread int thread_captures;    /* this thread's captures not begun RELAXED */
static __thread int thread_global;      /* ... of which GLOBAL */
static __thread int thread_capture_mode; /* GS_CU_STREAM_CAPTURE_MODE_GLOBAL (0) */

int capture_prohibits(void)
{
    int mode = thread_capture_mode, no;

    if (mode == GS_CU_STREAM_CAPTURE_MODE_RELAXED)
        return 0;
    pthread_mutex_lock(&lock);
    no = thread_captures > 0 ||
         (mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL && global_captures > thread_global);
    pthread_mutex_unlock(&lock);
    return no;
}

gs_curesult capture_alloc_locked(struct gs_custream_st *s, uint64_t size,
                                 gs_cudeviceptr *dptr)
{
    return alloc_node_locked(s->capture, s->device, size, dptr, NULL);
}

gs_curesult capture_free_locked(struct gs_custream_st *s, gs_cudeviceptr dptr)
{
    return free_node_locked(s->capture, dptr, NULL);
}

/* A captured stream: a created one, or CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
static gs_curesult capture_stream(gs_custream hStream)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    return !sim_created_stream(hStream)
               ? GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
               : GS_CUDA_SUCCESS;
}

static gs_curesult begin_capture(gs_custream hStream, gs_custreamcapturemode mode)
{
    gs_curesult rc = capture_stream(hStream);
    struct sim_graph *g;

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (mode < GS_CU_STREAM_CAPTURE_MODE_GLOBAL || mode > GS_CU_STREAM_CAPTURE_MODE_RELAXED)
        return GS_CUDA_ERROR_INVALID_VALUE;
    g = calloc(1, sizeof *g);
    if (!g)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    if (hStream->capture)
        rc = SIM_CUDA_ERROR_ILLEGAL_STATE;
    else if (reg_add(&graphs, g) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == GS_CUDA_SUCCESS) {
        hStream->capture = g;
        hStream->capture_mode = mode;
        thread_captures += mode != GS_CU_STREAM_CAPTURE_MODE_RELAXED;
        thread_global += mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL;
        global_captures += mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL;
    }
    pthread_mutex_unlock(&lock);
    if (rc != GS_CUDA_SUCCESS)
        free(g);
    sim_log("cuStreamBeginCapture_v2(%p, %d) -> %d", (void *)hStream, mode, rc);
    return rc;
}

gs_curesult sim_cuStreamBeginCapture_v2(gs_custream hStream, gs_custreamcapturemode mode)
{
    return begin_capture(hStream, mode);
}
SIM_EXPORT(cuStreamBeginCapture_v2)

gs_curesult sim_cuStreamBeginCapture_v2_ptsz(gs_custream hStream,
                                             gs_custreamcapturemode mode)
{
    return begin_capture(hStream, mode);
}
SIM_EXPORT(cuStreamBeginCapture_v2_ptsz)

static gs_curesult end_capture(gs_custream hStream, gs_cugraph *phGraph)
{
    gs_curesult rc = capture_stream(hStream);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (!phGraph)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (!hStream->capture) {
        rc = SIM_CUDA_ERROR_ILLEGAL_STATE;
    } else {
        int mode = hStream->capture_mode;
        *phGraph = hStream->capture_invalidated ? NULL : (gs_cugraph)hStream->capture;
        if (hStream->capture_invalidated)
            rc = GS_CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; /* the graph stays in graphs */
        hStream->capture = NULL;
        hStream->capture_invalidated = 0;
        thread_captures -= mode != GS_CU_STREAM_CAPTURE_MODE_RELAXED;
        thread_global -= mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL;
        global_captures -= mode == GS_CU_STREAM_CAPTURE_MODE_GLOBAL;
    }
    pthread_mutex_unlock(&lock);
    sim_log("cuStreamEndCapture(%p) -> %d", (void *)hStream, rc);
    return rc;
}

gs_curesult sim_cuStreamEndCapture(gs_custream hStream, gs_cugraph *phGraph)
{
    return end_capture(hStream, phGraph);
}
SIM_EXPORT(cuStreamEndCapture)

gs_curesult sim_cuStreamEndCapture_ptsz(gs_custream hStream, gs_cugraph *phGraph)
{
    return end_capture(hStream, phGraph);
}
SIM_EXPORT(cuStreamEndCapture_ptsz)

static gs_curesult is_capturing(gs_custream hStream, gs_custreamcapturestatus *status)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (!status)
        return GS_CUDA_ERROR_INVALID_VALUE;
    *status = GS_CU_STREAM_CAPTURE_STATUS_NONE;
    if (sim_created_stream(hStream)) {
        pthread_mutex_lock(&lock);
        if (hStream->capture)
            *status = hStream->capture_invalidated ? GS_CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                   : GS_CU_STREAM_CAPTURE_STATUS_ACTIVE;
        pthread_mutex_unlock(&lock);
    }
    return GS_CUDA_SUCCESS;
}

gs_curesult sim_cuStreamIsCapturing(gs_custream hStream,
                                    gs_custreamcapturestatus *captureStatus)
{
    return is_capturing(hStream, captureStatus);
}
SIM_EXPORT(cuStreamIsCapturing)

gs_curesult sim_cuStreamIsCapturing_ptsz(gs_custream hStream,
                                         gs_custreamcapturestatus *captureStatus)
{
    return is_capturing(hStream, captureStatus);
}
SIM_EXPORT(cuStreamIsCapturing_ptsz)

gs_curesult sim_cuThreadExchangeStreamCaptureMode(gs_custreamcapturemode *mode)
{
    int old;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!mode || *mode < GS_CU_STREAM_CAPTURE_MODE_GLOBAL ||
        *mode > GS_CU_STREAM_CAPTURE_MODE_RELAXED)
        return GS_CUDA_ERROR_INVALID_VALUE;
    old = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = old;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuThreadExchangeStreamCaptureMode)
