/*
 * dl_deepbind.c - the driver opened late and with RTLD_DEEPBIND (its own
 * symbols first), then used through dlsym: still seen. deep_alloc keeps
 * 1 MiB.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "progs.h"

typedef gs_curesult (*init_fn)(unsigned);
typedef gs_curesult (*retain_fn)(gs_cucontext *, gs_cudevice);
typedef gs_curesult (*set_fn)(gs_cucontext);

NOINLINE static void deep_alloc(gs_pfn_cuMemAlloc_v2 alloc)
{
    gs_cudeviceptr p;
    EXPECT(alloc(&p, MiB), GS_CUDA_SUCCESS);
}

int main(void)
{
    puts("before the driver");
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h)
        return 99;
    init_fn init = (init_fn)dlsym(h, "cuInit");
    retain_fn retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    set_fn set = (set_fn)dlsym(h, "cuCtxSetCurrent");
    gs_pfn_cuMemAlloc_v2 alloc = (gs_pfn_cuMemAlloc_v2)dlsym(h, "cuMemAlloc_v2");
    gs_cucontext ctx;
    EXPECT(init(0), GS_CUDA_SUCCESS);
    EXPECT(retain(&ctx, 0), GS_CUDA_SUCCESS);
    EXPECT(set(ctx), GS_CUDA_SUCCESS);
    deep_alloc(alloc);
    puts("deepbind done");
    return 0;
}
