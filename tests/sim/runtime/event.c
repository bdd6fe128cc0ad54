/*
 * event.c - Event Management: cudaEventCreate[WithFlags], cudaEventRecord, cudaEventDestroy,
 * cudaEventSynchronize, and cudaStreamWaitEvent.
 */
#include "tests/sim/runtime/runtime.h"

/* Flags: cudaEventDefault 0, BlockingSync 1, DisableTiming 2, Interprocess
 * 4, as the driver's CU_EVENT_*. */
SIM_EXPORT gs_cudaerror cudaEventCreateWithFlags(gs_cuevent *event, unsigned int flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.event_create(event, flags)));
}

SIM_EXPORT gs_cudaerror cudaEventCreate(gs_cuevent *event)
{
    return cudaEventCreateWithFlags(event, 0);
}

SIM_EXPORT gs_cudaerror cudaEventRecord(gs_cuevent event, gs_custream stream)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.event_record(event, stream)));
}

SIM_EXPORT gs_cudaerror cudaEventDestroy(gs_cuevent event)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.event_destroy(event)));
}

SIM_EXPORT gs_cudaerror cudaEventSynchronize(gs_cuevent event)
{
    gs_cudaerror err = driver_ready();

    return done(err != GS_cudaSuccess ? err : from_driver(drv.event_sync(event)));
}

/* Flags: cudaEventWaitDefault 0 or cudaEventWaitExternal 1. */
SIM_EXPORT gs_cudaerror cudaStreamWaitEvent(gs_custream stream, gs_cuevent event,
                                            unsigned int flags)
{
    gs_cudaerror err = bind_context();

    return done(err != GS_cudaSuccess ? err
                                      : from_driver(drv.stream_wait(stream, event, flags)));
}
