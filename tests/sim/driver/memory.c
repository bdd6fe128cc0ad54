/*
 * memory.c - Memory Management, device memory: cuMemGetInfo, cuMemAlloc, cuMemFree,
 * cuMemAllocPitch, cuMemAllocManaged, and the stream-ordered cuMemAllocAsync, cuMemFreeAsync,
 * cuMemAllocFromPoolAsync.
 */
#include "tests/sim/driver/sim.h"
#include "tests/sim/driver/alloc.h"
#include "tests/sim/driver/graph.h"

gs_curesult sim_cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    int dev = current_device();

    if (dev < 0)
        return -dev;
    pthread_mutex_lock(&lock);
    if (free_bytes)
        *free_bytes = devices[dev].capacity - devices[dev].used;
    if (total)
        *total = devices[dev].capacity;
    pthread_mutex_unlock(&lock);
    return GS_CUDA_SUCCESS;
}
SIM_EXPORT(cuMemGetInfo_v2)

/* cuMemAlloc and cuMemFree are "potentially unsafe" during a capture
 * (capture.c): refused unless the thread's mode allows them. */
gs_curesult sim_cuMemAlloc_v2(gs_cudeviceptr *dptr, size_t bytesize)
{
    int dev = current_device();

    if (dev >= 0 && capture_prohibits())
        return GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return dev < 0 ? -dev
                   : sim_alloc("cuMemAlloc_v2", (struct charge){.dev = dev}, dptr, bytesize);
}
SIM_EXPORT(cuMemAlloc_v2)

gs_curesult sim_cuMemFree_v2(gs_cudeviceptr dptr)
{
    int dev = current_device();

    if (dev >= 0 && capture_prohibits())
        return GS_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return dev < 0 ? -dev : sim_free("cuMemFree_v2", dptr, 0, NULL, dev);
}
SIM_EXPORT(cuMemFree_v2)

gs_curesult sim_cuMemAllocPitch_v2(gs_cudeviceptr *dptr, size_t *pPitch,
                                   size_t WidthInBytes, size_t Height,
                                   unsigned int ElementSizeBytes)
{
    int dev = current_device();
    size_t pitch;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    if (!pPitch || !WidthInBytes || !Height || WidthInBytes > SIM_SPAN ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return GS_CUDA_ERROR_INVALID_VALUE;
    pitch = round_up(WidthInBytes, SIM_ALIGN);
    if (Height > SIM_SPAN / pitch)
        return dptr ? GS_CUDA_ERROR_OUT_OF_MEMORY : GS_CUDA_ERROR_INVALID_VALUE;
    rc = sim_alloc("cuMemAllocPitch_v2", (struct charge){.dev = dev}, dptr, pitch * Height);
    if (rc == GS_CUDA_SUCCESS)
        *pPitch = pitch;
    return rc;
}
SIM_EXPORT(cuMemAllocPitch_v2)

gs_curesult sim_cuMemAllocManaged(gs_cudeviceptr *dptr, size_t bytesize,
                                  unsigned int flags)
{
    int dev = current_device();

    if (dev < 0)
        return -dev;
    if (flags != GS_CU_MEM_ATTACH_GLOBAL && flags != SIM_CU_MEM_ATTACH_HOST)
        return GS_CUDA_ERROR_INVALID_VALUE;
    return sim_alloc("cuMemAllocManaged", (struct charge){.dev = dev, .managed = 1}, dptr,
                     bytesize);
}
SIM_EXPORT(cuMemAllocManaged)

/* Stream-ordered allocation from the current pool of the stream's device. */
/* On a stream that captures, an allocation node of the graph instead
 * (capture.c): *captured says so. */
static gs_curesult captured_alloc(gs_cudeviceptr *dptr, size_t bytesize, gs_custream hStream,
                                  int *captured)
{
    gs_curesult rc = GS_CUDA_SUCCESS;
    long i;

    *captured = 0;
    if (!sim_created_stream(hStream))
        return rc;
    pthread_mutex_lock(&lock);
    i = reg_index(&streams, hStream);
    if (i >= 0 && hStream->capture) {
        *captured = 1;
        rc = !dptr || !bytesize ? GS_CUDA_ERROR_INVALID_VALUE
                                : capture_alloc_locked(hStream, bytesize, dptr);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static gs_curesult alloc_async(const char *api, gs_cudeviceptr *dptr, size_t bytesize,
                               gs_custream hStream)
{
    int dev, captured;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    rc = captured_alloc(dptr, bytesize, hStream, &captured);
    if (captured)
        return rc;
    return sim_alloc(api, (struct charge){.dev = dev, .pooled = 1, .ordered = 1, .stream = hStream},
                     dptr, bytesize);
}

static gs_curesult free_async(const char *api, gs_cudeviceptr dptr, gs_custream hStream)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (sim_created_stream(hStream)) {
        pthread_mutex_lock(&lock);
        int captured = hStream->capture != NULL;
        if (captured) /* a free node of the graph */
            rc = capture_free_locked(hStream, dptr);
        pthread_mutex_unlock(&lock);
        if (captured)
            return rc;
    }
    return sim_free(api, dptr, 1, hStream, dev);
}

/* From a given pool, whatever device the stream is on. */
static gs_curesult alloc_from_pool(const char *api, gs_cudeviceptr *dptr, size_t bytesize,
                                   gs_cumempool pool, gs_custream hStream)
{
    int dev;
    gs_curesult rc = stream_device(hStream, &dev);

    if (rc != GS_CUDA_SUCCESS)
        return rc;
    if (!pool)
        return GS_CUDA_ERROR_INVALID_VALUE;
    int captured;
    rc = captured_alloc(dptr, bytesize, hStream, &captured);
    if (captured)
        return rc;
    return sim_alloc(api,
                     (struct charge){.dev = dev, .pooled = 1, .given = pool, .ordered = 1,
                                     .stream = hStream},
                     dptr, bytesize);
}

gs_curesult sim_cuMemAllocAsync(gs_cudeviceptr *dptr, size_t bytesize,
                                gs_custream hStream)
{
    return alloc_async("cuMemAllocAsync", dptr, bytesize, hStream);
}
SIM_EXPORT(cuMemAllocAsync)

gs_curesult sim_cuMemAllocAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                     gs_custream hStream)
{
    return alloc_async("cuMemAllocAsync_ptsz", dptr, bytesize, hStream);
}
SIM_EXPORT(cuMemAllocAsync_ptsz)

gs_curesult sim_cuMemFreeAsync(gs_cudeviceptr dptr, gs_custream hStream)
{
    return free_async("cuMemFreeAsync", dptr, hStream);
}
SIM_EXPORT(cuMemFreeAsync)

gs_curesult sim_cuMemFreeAsync_ptsz(gs_cudeviceptr dptr, gs_custream hStream)
{
    return free_async("cuMemFreeAsync_ptsz", dptr, hStream);
}
SIM_EXPORT(cuMemFreeAsync_ptsz)

gs_curesult sim_cuMemAllocFromPoolAsync(gs_cudeviceptr *dptr, size_t bytesize,
                                        gs_cumempool pool, gs_custream hStream)
{
    return alloc_from_pool("cuMemAllocFromPoolAsync", dptr, bytesize, pool, hStream);
}
SIM_EXPORT(cuMemAllocFromPoolAsync)

gs_curesult sim_cuMemAllocFromPoolAsync_ptsz(gs_cudeviceptr *dptr, size_t bytesize,
                                             gs_cumempool pool, gs_custream hStream)
{
    return alloc_from_pool("cuMemAllocFromPoolAsync_ptsz", dptr, bytesize, pool, hStream);
}
SIM_EXPORT(cuMemAllocFromPoolAsync_ptsz)
