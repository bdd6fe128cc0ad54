/*
 * drv_plugin.c - an allocation made from a library dlopened late.
 *
 * main allocates 32 KiB itself first (so the shim has already listed the
 * loaded modules), then dlopens libgsplugin.so, which allocates 96 KiB in
 * plugin_allocate (tests/progs/plugin/gsplugin.c:11). Neither is freed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

NOINLINE static void own_allocation(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 32 * KiB), GS_CUDA_SUCCESS);
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    own_allocation();

    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return 98;
    path[n] = 0;
    strcpy(strrchr(path, '/') + 1, "libgsplugin.so");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 97;
    }
    void (*plugin_allocate)(void) = (void (*)(void))dlsym(h, "plugin_allocate");
    if (!plugin_allocate)
        return 96;
    plugin_allocate();
    puts("plugin done");
    return 0;
}
