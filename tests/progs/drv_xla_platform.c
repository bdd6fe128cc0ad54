/*
 * drv_xla_platform.c - a JAX process with XLA_PYTHON_CLIENT_ALLOCATOR=platform,
 * in miniature: the xla_extension.so named by argv[1] dlopened (as import jax
 * loads it, so that the report knows the framework), then each buffer its own
 * allocation, as the platform allocator makes them (xla/pjrt/gpu/
 * gpu_helpers.cc: GpuAllocatorConfig::Kind::kPlatform hands XLA the
 * stream executor's device allocator, se::DeviceMemAllocator, whose Allocate
 * is one cuMemAlloc per buffer and Deallocate one cuMemFree). Eight buffers
 * of 100 MiB, then freed: for gpushim whatif to replay through its model of
 * the BFC allocator (tests/integration/test_whatif.py works out the figures).
 */
#include <dlfcn.h>

#include "gpushim.h"
#include "progs.h"

#define BUFFERS 8

__attribute__((noinline)) static gs_cudeviceptr buffer(void)
{
    gs_cudeviceptr p = 0;
    EXPECT(cuMemAlloc_v2(&p, 100 * MiB), 0);
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
        fprintf(stderr, "usage: drv_xla_platform PATH/xla_extension.so\n");
        return 2;
    }
    gs_cucontext ctx;
    EXPECT(cuInit(0), 0);
    EXPECT(cuDevicePrimaryCtxRetain(&ctx, 0), 0);
    EXPECT(cuCtxSetCurrent(ctx), 0);
    gs_cudeviceptr b[BUFFERS];
    for (int i = 0; i < BUFFERS; i++)
        b[i] = buffer();
    for (int i = 0; i < BUFFERS; i++)
        EXPECT(cuMemFree_v2(b[i]), 0);
    return 0;
}
