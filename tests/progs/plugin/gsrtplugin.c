/*
 * gsrtplugin.c - a library linked with the CUDA runtime and opened with
 * RTLD_LOCAL, as Python opens extensions: its runtime is in its own scope,
 * not in the program's (built as build/progs/libgsrtplugin.so; used by
 * dl_rt_plugin.c). plugin_cuda_malloc keeps 2 MiB.
 */
#include "../progs.h"

gs_cudaerror cudaMalloc(void **p, size_t size);

__attribute__((visibility("default"))) NOINLINE int plugin_cuda_malloc(void)
{
    void *p = NULL;
    return cudaMalloc(&p, 2 * MiB);
}
