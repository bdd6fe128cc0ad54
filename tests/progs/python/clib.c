/*
 * clib.c - a plain C library (not an extension module) that a Python
 * program calls through ctypes, as programs call vendor libraries: its
 * c_alloc allocates device memory two calls down, through the simulated
 * driver (build/sim/libcuda.so.1, linked directly). Built by
 * tests/integration/test_python_ffi.py.
 */
#include <stddef.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size);

__attribute__((noinline)) static CUresult c_stage(size_t size, CUdeviceptr *out)
{
    CUresult rc = cuMemAlloc_v2(out, size); /* site: stage */
    __asm__ volatile("" ::: "memory");      /* not a tail call: this frame stays */
    return rc;
}

__attribute__((visibility("default"))) CUresult c_alloc(size_t size, CUdeviceptr *out)
{
    CUresult rc = c_stage(size, out); /* site: c_alloc */
    __asm__ volatile("" ::: "memory");
    return rc;
}
