/*
 * framework_stub.c - built under the names of frameworks' CUDA libraries
 * (libc10_cuda.so, xla_extension.so, libtensorflow_framework.so.2): the
 * allocation is made from inside it, as a framework's allocator makes it,
 * so the library is on the stack and in the trace's modules, where the
 * analyzer looks for the framework.
 */
#include "../progs.h"

int gs_framework_alloc(size_t bytes)
{
    gs_cudeviceptr p;
    return cuMemAlloc_v2(&p, bytes);
}
