/*
 * dl_rt_plugin.c - opens libgsrtplugin.so with RTLD_LOCAL and lets it call
 * cudaMalloc through the runtime it brought: the shim's cudaMalloc must
 * reach that runtime (the call succeeds, as without the shim) and label
 * the event cudaMalloc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

int main(void)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return 98;
    path[n] = 0;
    strcpy(strrchr(path, '/') + 1, "libgsrtplugin.so");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 97;
    }
    int (*plugin_cuda_malloc)(void) = (int (*)(void))dlsym(h, "plugin_cuda_malloc");
    if (!plugin_cuda_malloc)
        return 96;
    printf("cudaMalloc returned %d\n", plugin_cuda_malloc());
    return 0;
}
