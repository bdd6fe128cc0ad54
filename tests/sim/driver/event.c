/*
 * event.c - Event Management: cuEventCreate/Destroy/Record/Synchronize/Query,
 * cuStreamWaitEvent; the test-only simcuda_use and simcuda_hazards.
 *
 * Design
 *   - Reuse hazards: the test-only simcuda_use(stream, ptr) marks ptr's
 *     allocation in use by the stream until its work completes; an
 *     allocation that gets part of it for a stream not ordered after that
 *     use is a hazard, said on stderr ("simcuda: reuse hazard: ...", streams
 *     by number: device d's default stream is #d, created streams follow in
 *     creation order) and counted (simcuda_hazards()).
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/entry.h"
#include "tests/sim/driver/order.h"

#define SIM_CU_EVENT_FLAGS 0x7 /* BLOCKING_SYNC | DISABLE_TIMING | INTERPROCESS */
#define SIM_CU_EVENT_DISABLE_TIMING 0x2
#define SIM_CU_EVENT_INTERPROCESS 0x4
#define SIM_CU_EVENT_WAIT_EXTERNAL 0x1

struct gs_cuevent_st {
    int device;         /* the current context's at creation */
    struct clock clock; /* of the point last recorded (none: nothing to wait for) */
};

static struct reg events;

gs_curesult sim_cuEventCreate(gs_cuevent *phEvent, unsigned int Flags)
{
    int dev = current_device();
    struct gs_cuevent_st *e;
    int bad;

    if (dev < 0)
        return -dev;
    if (!phEvent || (Flags & ~(unsigned)SIM_CU_EVENT_FLAGS) ||
        ((Flags & SIM_CU_EVENT_INTERPROCESS) && !(Flags & SIM_CU_EVENT_DISABLE_TIMING)))
        return GS_CUDA_ERROR_INVALID_VALUE;
    e = calloc(1, sizeof *e);
    if (!e)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    e->device = dev;
    pthread_mutex_lock(&lock);
    bad = reg_add(&events, e);
    pthread_mutex_unlock(&lock);
    if (bad) {
        free(e);
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phEvent = e;
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuEventCreate)

gs_curesult sim_cuEventDestroy_v2(gs_cuevent hEvent)
{
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = reg_index(&events, hEvent);
    if (i >= 0)
        reg_del(&events, (size_t)i);
    pthread_mutex_unlock(&lock);
    if (i < 0)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(hEvent->clock.v);
    free(hEvent);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuEventDestroy_v2)

/* The event takes the clock of the stream's work so far; the stream must
 * be on the event's device. */
static gs_curesult event_record(gs_cuevent hEvent, gs_custream hStream)
{
    int dev, o;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    if (reg_index(&events, hEvent) < 0 || hEvent->device != dev ||
        (o = order_of(hStream, dev)) < 0)
        rc = SIM_CUDA_ERROR_INVALID_HANDLE;
    else if (!order_next(o) || clock_set(&hEvent->clock, &orders[o].clock) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    return rc;
}

gs_curesult sim_cuEventRecord(gs_cuevent hEvent, gs_custream hStream)
{
    return event_record(hEvent, hStream);
}
SIM_EXPORT(cuEventRecord)

gs_curesult sim_cuEventRecord_ptsz(gs_cuevent hEvent, gs_custream hStream)
{
    return event_record(hEvent, hStream);
}
SIM_EXPORT(cuEventRecord_ptsz)

/* The stream's later work comes after the event's recorded point. */
static gs_curesult stream_wait_event(gs_custream hStream, gs_cuevent hEvent, unsigned int Flags)
{
    int dev, o;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (Flags & ~(unsigned)SIM_CU_EVENT_WAIT_EXTERNAL)
        return GS_CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (reg_index(&events, hEvent) < 0 || (o = order_of(hStream, dev)) < 0)
        rc = SIM_CUDA_ERROR_INVALID_HANDLE;
    else if (order_implicit(o) != 0 || clock_join(&orders[o].clock, &hEvent->clock) != 0)
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    return rc;
}

gs_curesult sim_cuStreamWaitEvent(gs_custream hStream, gs_cuevent hEvent,
                                  unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags);
}
SIM_EXPORT(cuStreamWaitEvent)

gs_curesult sim_cuStreamWaitEvent_ptsz(gs_custream hStream, gs_cuevent hEvent,
                                       unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags);
}
SIM_EXPORT(cuStreamWaitEvent_ptsz)

/* The work before the event's point completes; trim: the pools release
 * what they may, as at any synchronize. */
static gs_curesult event_complete(gs_cuevent hEvent, int trim)
{
    gs_curesult rc = GS_CUDA_SUCCESS;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    if (reg_index(&events, hEvent) < 0) {
        rc = SIM_CUDA_ERROR_INVALID_HANDLE;
    } else {
        order_complete(&hEvent->clock);
        if (trim)
            trim_pools(hEvent->device);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

gs_curesult sim_cuEventSynchronize(gs_cuevent hEvent)
{
    return event_complete(hEvent, 1);
}
SIM_EXPORT(cuEventSynchronize)

/* Work never waits on a device here: what an event follows is done as soon
 * as the host asks. */
gs_curesult sim_cuEventQuery(gs_cuevent hEvent)
{
    return event_complete(hEvent, 0);
}
SIM_EXPORT(cuEventQuery)

/* Test-only, not a CUDA function: the allocation holding ptr is in use by
 * stream's work from now until that work completes (a synchronize of the
 * stream or its device, or of an event after it), as if a kernel launched
 * on stream read it. An allocation that hands out any of it to a stream
 * not ordered after that use before then is a reuse hazard. */
__attribute__((visibility("default"))) gs_curesult simcuda_use(gs_custream stream,
                                                               gs_cudeviceptr ptr)
{
    int dev, o;
    uint64_t pos;
    struct live *e;
    struct use *v;
    gs_curesult rc = stream_device(stream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&lock);
    e = table_containing(ptr);
    if (!e || (o = order_of(stream, dev)) < 0)
        rc = GS_CUDA_ERROR_INVALID_VALUE;
    else if (!(pos = order_next(o)) || !(v = grow(uses, &uses_cap, nuses + 1, sizeof *v)))
        rc = GS_CUDA_ERROR_OUT_OF_MEMORY;
    else
        (uses = v)[nuses++] = (struct use){e->addr, e->size, o, pos};
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Test-only: the reuse hazards so far. */
__attribute__((visibility("default"))) unsigned long simcuda_hazards(void)
{
    unsigned long n;

    pthread_mutex_lock(&lock);
    n = hazards;
    pthread_mutex_unlock(&lock);
    return n;
}
