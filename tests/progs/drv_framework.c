/*
 * drv_framework.c - a framework's process in miniature: dlopens the library
 * given (tests/progs/plugin/framework_stub.c, named like a framework's CUDA
 * library), which allocates 1 MiB, and exits. The analyzer must name the framework
 * and say what its allocator settings (from the environment) let the trace
 * see.
 *
 * usage: drv_framework LIBRARY
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
    return 0;
}
