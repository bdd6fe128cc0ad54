/*
 * dl_entry_points.c - one program that reaches the driver's allocation calls
 * both ways at once, as a process whose libraries differ does: dlsym on the
 * driver's handle (older PyTorch, XLA) and cuGetProcAddress (the CUDA
 * runtime, NCCL through a static runtime's cudaGetDriverEntryPoint). The
 * driver may hand out internal entry points from cuGetProcAddress whose
 * addresses are not dlsym's (the simulated one does: tests/sim/driver/getproc.c,
 * "Internal entry points"); every call must be recorded whatever the address.
 *
 * With the argument "addresses" it prints only whether the two lookups gave
 * different functions (run without the shim: the driver's own answer).
 *
 * Schedule: 1 MiB through dlsym's cuMemAlloc_v2 (by_dlsym), 2 MiB through
 * cuGetProcAddress's (by_getproc); the 1 MiB freed through
 * cuGetProcAddress's cuMemFree, the 2 MiB through dlsym's; then 4 MiB
 * through cuGetProcAddress's, kept. Peak 4 MiB; unfreed 4 MiB in 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "progs.h"

typedef gs_curesult (*init_fn)(unsigned);
typedef gs_curesult (*retain_fn)(gs_cucontext *, gs_cudevice);
typedef gs_curesult (*set_fn)(gs_cucontext);

static gs_pfn_cuMemAlloc_v2 dl_alloc, gp_alloc;
static gs_pfn_cuMemFree_v2 dl_free, gp_free;

NOINLINE static gs_cudeviceptr by_dlsym(size_t size)
{
    gs_cudeviceptr p;
    EXPECT(dl_alloc(&p, size), GS_CUDA_SUCCESS);
    return p;
}

NOINLINE static gs_cudeviceptr by_getproc(size_t size)
{
    gs_cudeviceptr p;
    EXPECT(gp_alloc(&p, size), GS_CUDA_SUCCESS);
    return p;
}

int main(int argc, char **argv)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 99;
    }
    gs_pfn_cuGetProcAddress_v2 get = (gs_pfn_cuGetProcAddress_v2)dlsym(h, "cuGetProcAddress_v2");
    init_fn init = (init_fn)dlsym(h, "cuInit");
    retain_fn retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    set_fn set = (set_fn)dlsym(h, "cuCtxSetCurrent");
    dl_alloc = (gs_pfn_cuMemAlloc_v2)dlsym(h, "cuMemAlloc_v2");
    dl_free = (gs_pfn_cuMemFree_v2)dlsym(h, "cuMemFree_v2");
    if (!get || !init || !retain || !set || !dl_alloc || !dl_free)
        return 98;
    EXPECT(init(0), GS_CUDA_SUCCESS);
    gs_cuprocstatus status;
    EXPECT(get("cuMemAlloc", (void **)&gp_alloc, 12000, 0, &status), GS_CUDA_SUCCESS);
    EXPECT(get("cuMemFree", (void **)&gp_free, 12000, 0, &status), GS_CUDA_SUCCESS);
    if (argc > 1 && strcmp(argv[1], "addresses") == 0) {
        printf("alloc %s, free %s\n", (void *)gp_alloc != (void *)dl_alloc ? "distinct" : "same",
               (void *)gp_free != (void *)dl_free ? "distinct" : "same");
        return 0;
    }
    gs_cucontext ctx;
    EXPECT(retain(&ctx, 0), GS_CUDA_SUCCESS);
    EXPECT(set(ctx), GS_CUDA_SUCCESS);
    gs_cudeviceptr one = by_dlsym(1 * MiB), two = by_getproc(2 * MiB);
    EXPECT(gp_free(one), GS_CUDA_SUCCESS);
    EXPECT(dl_free(two), GS_CUDA_SUCCESS);
    by_getproc(4 * MiB);
    printf("done\n");
    return 0;
}
