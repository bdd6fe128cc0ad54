/*
 * drv_framework.c - a framework's process in miniature: dlopens the library
 * given (tests/progs/plugin/framework_stub.c, named like a framework's CUDA
 * library), which allocates 1 MiB, and exits. The analyzer must name the framework
 * and say what its allocator settings (from the environment) let the trace
 * see.
 *
 * With SHIM (the path of libgpushim.so), it also allocates 1 MiB through
 * gpushim_torch_alloc, as PyTorch's CUDAPluggableAllocator does once
 * gpushim.torch.use_allocator installed it (torch/csrc/cuda/
 * CUDAPluggableAllocator.cpp: malloc calls alloc_fn_(size, device, stream)).
 *
 * usage: drv_framework LIBRARY [SHIM]
 */
#include <dlfcn.h>

#include "progs.h"

int main(int argc, char **argv)
{
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    int (*framework_alloc)(size_t) = lib ? (int (*)(size_t))dlsym(lib, "gs_framework_alloc") : NULL;
    if (!framework_alloc) {
        fprintf(stderr, "usage: drv_framework LIBRARY (%s)\n", dlerror());
        return 2;
    }
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    EXPECT(framework_alloc(MiB), GS_CUDA_SUCCESS);
    if (argc > 2) {
        void *shim = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        void *(*torch_alloc)(size_t, int, gs_custream) =
            shim ? (void *(*)(size_t, int, gs_custream))dlsym(shim, "gpushim_torch_alloc") : NULL;
        if (!torch_alloc || !torch_alloc(MiB, 0, NULL)) {
            fprintf(stderr, "gpushim_torch_alloc from %s failed\n", argv[2]);
            return 1;
        }
    }
    return 0;
}
