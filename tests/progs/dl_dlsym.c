/*
 * dl_dlsym.c - reaches the driver as XLA and the static runtime do:
 * dlopen("libcuda.so.1", RTLD_LOCAL) and dlsym by name, through both of
 * glibc's dlsym versions (GLIBC_2.34, and GLIBC_2.2.5 as binaries built
 * before glibc 2.34 call it).
 *
 * Schedule: three 1000-byte allocations from alloc_three (through the new
 * dlsym), one 3000-byte allocation from alloc_old_style (through the old
 * one); one of the first three is freed. Unfreed: 5000 bytes in 3.
 *
 * Also checks that dlsym(RTLD_NEXT, ...) from the program still means
 * "after the program", and that unknown names still fail.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

void *dlsym_old(void *handle, const char *name);
__asm__(".symver dlsym_old, dlsym@GLIBC_2.2.5");

typedef gs_curesult (*init_fn)(unsigned);
typedef gs_curesult (*retain_fn)(gs_cucontext *, gs_cudevice);
typedef gs_curesult (*set_fn)(gs_cucontext);

static gs_pfn_cuMemAlloc_v2 alloc_new, alloc_old;
static gs_pfn_cuMemFree_v2 free_new;

NOINLINE static gs_cudeviceptr alloc_three(void)
{
    gs_cudeviceptr p[3];
    for (int i = 0; i < 3; i++)
        EXPECT(alloc_new(&p[i], 1000), GS_CUDA_SUCCESS);
    return p[1];
}

NOINLINE static void alloc_old_style(void)
{
    gs_cudeviceptr p;
    EXPECT(alloc_old(&p, 3000), GS_CUDA_SUCCESS);
}

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 99;
    }
    init_fn init = (init_fn)dlsym(h, "cuInit");
    retain_fn retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    set_fn set = (set_fn)dlsym(h, "cuCtxSetCurrent");
    alloc_new = (gs_pfn_cuMemAlloc_v2)dlsym(h, "cuMemAlloc_v2");
    free_new = (gs_pfn_cuMemFree_v2)dlsym(h, "cuMemFree_v2");
    alloc_old = (gs_pfn_cuMemAlloc_v2)dlsym_old(h, "cuMemAlloc_v2");
    if (!init || !retain || !set || !alloc_new || !free_new || !alloc_old)
        return 98;
    EXPECT(dlsym(h, "cuNoSuchFunction") == NULL, 1);
    EXPECT(dlerror() != NULL, 1);

    /* RTLD_NEXT from the program: the next definition after the program. */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    EXPECT(dlsym(RTLD_NEXT, "getpid") == dlsym(libc, "getpid"), 1);
    EXPECT(dlsym(RTLD_DEFAULT, "strlen") != NULL, 1);

    gs_cucontext ctx;
    EXPECT(init(0), GS_CUDA_SUCCESS);
    EXPECT(retain(&ctx, 0), GS_CUDA_SUCCESS);
    EXPECT(set(ctx), GS_CUDA_SUCCESS);
    gs_cudeviceptr one = alloc_three();
    alloc_old_style();
    EXPECT(free_new(one), GS_CUDA_SUCCESS);
    puts("dlsym done");
    return 0;
}
