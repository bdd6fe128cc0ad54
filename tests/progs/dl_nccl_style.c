/*
 * dl_nccl_style.c - NCCL's way with memory: the driver through
 * cuGetProcAddress (found with dlsym), virtual memory management, buffers
 * of device memory and of pinned host memory (host-located cuMemCreate),
 * and NCCL's free sequence: retain -> release -> unmap -> release.
 *
 *   device_buffer  4 MiB on device 0, mapped, freed the NCCL way
 *   host_buffer    2 MiB on the host, mapped, freed the NCCL way
 *   kept_buffer    2 MiB on device 0, created and never released (leak)
 *
 * Device: peak 6 MiB (4 + 2 kept), 2 MiB unfreed. Pinned host: peak 2 MiB,
 * none at the end. References taken: 2. Address space: two 4 MiB ranges,
 * both freed. Mapped: peak 6 MiB (4 + 2), none at the end.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "progs.h"

static gs_pfn_cuMemCreate create;
static gs_pfn_cuMemRelease release;
static gs_pfn_cuMemRetainAllocationHandle retain;
static gs_pfn_cuMemMap map;
static gs_pfn_cuMemUnmap unmap;
static gs_pfn_cuMemAddressReserve reserve;
static gs_pfn_cuMemAddressFree addr_free;

struct buffer {
    gs_cudeviceptr va;
    gs_cumemhandle handle;
    size_t size;
};

static void *lookup(gs_pfn_cuGetProcAddress_v2 get, const char *name, int version)
{
    void *p = NULL;
    gs_cuprocstatus status;
    EXPECT(get(name, &p, version, 0, &status), GS_CUDA_SUCCESS);
    return p;
}

static void make(struct buffer *b, int location_type, size_t size)
{
    gs_cumemallocationprop prop = {.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED,
                                   .location = {location_type, 0}};
    b->size = size;
    EXPECT(reserve(&b->va, 4 * MiB, 0, 0, 0), GS_CUDA_SUCCESS);
    EXPECT(create(&b->handle, size, &prop, 0), GS_CUDA_SUCCESS);
    EXPECT(map(b->va, size, 0, b->handle, 0), GS_CUDA_SUCCESS);
}

NOINLINE static void device_buffer(struct buffer *b)
{
    make(b, GS_CU_MEM_LOCATION_TYPE_DEVICE, 4 * MiB);
}

NOINLINE static void host_buffer(struct buffer *b) { make(b, GS_CU_MEM_LOCATION_TYPE_HOST, 2 * MiB); }

NOINLINE static void kept_buffer(void)
{
    gs_cumemallocationprop prop = {.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED,
                                   .location = {GS_CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    gs_cumemhandle h;
    EXPECT(create(&h, 2 * MiB, &prop, 0), GS_CUDA_SUCCESS);
}

/* ncclMemFree: retain the handle from the address, release it, unmap, release. */
static void nccl_free(struct buffer *b)
{
    gs_cumemhandle h;
    EXPECT(retain(&h, (void *)(uintptr_t)b->va), GS_CUDA_SUCCESS);
    EXPECT(h, b->handle);
    EXPECT(release(h), GS_CUDA_SUCCESS);
    EXPECT(unmap(b->va, b->size), GS_CUDA_SUCCESS);
    EXPECT(release(h), GS_CUDA_SUCCESS);
    EXPECT(addr_free(b->va, 4 * MiB), GS_CUDA_SUCCESS);
}

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 99;
    gs_pfn_cuGetProcAddress_v2 get = (gs_pfn_cuGetProcAddress_v2)dlsym(h, "cuGetProcAddress_v2");
    if (!get)
        return 98;
    gs_curesult (*init)(unsigned) = lookup(get, "cuInit", 12000);
    gs_curesult (*ctx_retain)(gs_cucontext *, gs_cudevice) =
        lookup(get, "cuDevicePrimaryCtxRetain", 12000);
    gs_curesult (*ctx_set)(gs_cucontext) = lookup(get, "cuCtxSetCurrent", 12000);
    create = lookup(get, "cuMemCreate", 12000);
    release = lookup(get, "cuMemRelease", 12000);
    retain = lookup(get, "cuMemRetainAllocationHandle", 12000);
    map = lookup(get, "cuMemMap", 12000);
    unmap = lookup(get, "cuMemUnmap", 12000);
    reserve = lookup(get, "cuMemAddressReserve", 12000);
    addr_free = lookup(get, "cuMemAddressFree", 12000);

    gs_cucontext ctx;
    EXPECT(init(0), GS_CUDA_SUCCESS);
    EXPECT(ctx_retain(&ctx, 0), GS_CUDA_SUCCESS);
    EXPECT(ctx_set(ctx), GS_CUDA_SUCCESS);
    struct buffer dev, host;
    device_buffer(&dev);
    host_buffer(&host);
    kept_buffer();
    nccl_free(&dev);
    nccl_free(&host);
    puts("nccl style done");
    return 0;
}
