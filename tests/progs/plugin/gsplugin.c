/*
 * gsplugin.c - a library the program dlopens after it has already made
 * allocations, so that the module is new to the shim when the plugin
 * allocates (built as build/progs/libgsplugin.so; used by dl_plugin.c).
 */
#include "../progs.h"

__attribute__((visibility("default"))) NOINLINE void plugin_allocate(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 96 * KiB), GS_CUDA_SUCCESS); /* line 11 */
}
