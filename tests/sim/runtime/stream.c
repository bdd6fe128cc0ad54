/*
 * stream.c - Stream Management: cudaStreamCreate[WithFlags], cudaStreamDestroy,
 * cudaStreamSynchronize. Capture is graph.c's.
 */
#include "tests/sim/runtime/runtime.h"

/* Flags: cudaStreamDefault 0 or cudaStreamNonBlocking 1, as the driver's. */
SIM_EXPORT gs_cudaerror cudaStreamCreateWithFlags(gs_custream *pStream, unsigned int flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.stream_create(pStream, flags)));
}

SIM_EXPORT gs_cudaerror cudaStreamCreate(gs_custream *pStream)
{
    return cudaStreamCreateWithFlags(pStream, 0);
}

SIM_EXPORT gs_cudaerror cudaStreamDestroy(gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.stream_destroy(stream)));
}

SIM_EXPORT gs_cudaerror cudaStreamSynchronize(gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.stream_sync(stream)));
}
