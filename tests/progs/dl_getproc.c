/*
 * dl_getproc.c - reaches the driver as the CUDA runtime, PyTorch and NCCL
 * do: through cuGetProcAddress, in both of its ABIs, with versions and the
 * per-thread-default-stream flag.
 *
 * Schedule (names as the report shows them):
 *   alloc_v2_path     1 MiB via the 5-argument getter        cuMemAlloc_v2
 *   alloc_ptsz_path   2 x 512 KiB, per-thread stream         cuMemAllocAsync_ptsz
 *   the 1 MiB is freed through the 4-argument getter's cuMemFree, and one
 *   512 KiB block through cuMemFreeAsync_ptsz. Unfreed: 512 KiB in 1.
 *
 * Every lookup's result and status is printed: the output must be the same
 * with and without the shim.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "progs.h"

static gs_pfn_cuGetProcAddress get4;
static gs_pfn_cuGetProcAddress_v2 get5;

static void *lookup(const char *name, int version, gs_cuuint64 flags)
{
    void *p = NULL;
    gs_cuprocstatus status = -1;
    gs_curesult r = get5(name, &p, version, flags, &status);
    printf("%-24s %5d flags %llu: result %d status %d %s\n", name ? name : "(none)", version,
           (unsigned long long)flags, r, status, p ? "found" : "null");
    return p;
}

NOINLINE static gs_cudeviceptr alloc_v2_path(void)
{
    gs_pfn_cuMemAlloc_v2 alloc = lookup("cuMemAlloc", 12000, 0);
    gs_cudeviceptr p;
    EXPECT(alloc(&p, 1 * MiB), GS_CUDA_SUCCESS);
    return p;
}

NOINLINE static void alloc_ptsz_path(gs_cudeviceptr *a, gs_cudeviceptr *b)
{
    gs_pfn_cuMemAllocAsync_ptsz alloc =
        lookup("cuMemAllocAsync", 12000, GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    EXPECT(alloc(a, 512 * KiB, NULL), GS_CUDA_SUCCESS);
    EXPECT(alloc(b, 512 * KiB, NULL), GS_CUDA_SUCCESS);
}

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 99;
    get4 = (gs_pfn_cuGetProcAddress)dlsym(h, "cuGetProcAddress");
    if (!get4)
        return 98;
    /* The self-lookups: one name, two ABIs. */
    EXPECT(get4("cuGetProcAddress", (void **)&get5, 12000, 0), GS_CUDA_SUCCESS);
    gs_pfn_cuGetProcAddress get4b = NULL;
    EXPECT(get4("cuGetProcAddress", (void **)&get4b, 11030, 0), GS_CUDA_SUCCESS);
    if (!get5 || !get4b)
        return 97;

    lookup("cuNoSuchFunction", 12000, 0);
    lookup("cuMemAllocAsync", 11000, 0);
    lookup("cuMemAlloc", 3000, 0);
    lookup(NULL, 12000, 0);

    gs_curesult (*init)(unsigned) = lookup("cuInit", 12000, 0);
    gs_curesult (*retain)(gs_cucontext *, gs_cudevice) =
        lookup("cuDevicePrimaryCtxRetain", 12000, 0);
    gs_curesult (*set)(gs_cucontext) = lookup("cuCtxSetCurrent", 12000, 0);
    gs_cucontext ctx;
    EXPECT(init(0), GS_CUDA_SUCCESS);
    EXPECT(retain(&ctx, 0), GS_CUDA_SUCCESS);
    EXPECT(set(ctx), GS_CUDA_SUCCESS);

    gs_cudeviceptr big = alloc_v2_path(), a, b;
    alloc_ptsz_path(&a, &b);

    gs_pfn_cuMemFree_v2 free4 = NULL;
    EXPECT(get4b("cuMemFree", (void **)&free4, 12000, 0), GS_CUDA_SUCCESS);
    EXPECT(free4(big), GS_CUDA_SUCCESS);
    gs_pfn_cuMemFreeAsync_ptsz free_async =
        lookup("cuMemFreeAsync", 12000, GS_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    EXPECT(free_async(a, NULL), GS_CUDA_SUCCESS);
    puts("getproc done");
    return 0;
}
