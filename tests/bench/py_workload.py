"""py_workload.py - N allocations and frees of the simulated driver from
Python through ctypes, DEPTH Python frames deep, for bench_python.py: with
GIL "held", through ctypes.PyDLL, which keeps the GIL around the call; with
"released", through ctypes.CDLL, which releases it, as PyTorch's bindings
do before an op allocates.

Usage: py_workload.py LIBCUDA N DEPTH held|released. Prints the seconds the loop took
(the interpreter's start-up left out): wall clock, and CPU time of the
thread that ran it (what the program's own thread paid, less the noise of
a shared machine).
"""
import ctypes
import sys
import time


def load(path, gil):
    lib = (ctypes.PyDLL if gil == "held" else ctypes.CDLL)(path)
    lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
    lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
    lib.cuInit(0)
    ctx = ctypes.c_void_p()
    lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
    lib.cuCtxSetCurrent(ctx)
    return lib


def alloc_free(lib, ptr, i):
    if lib.cuMemAlloc_v2(ctypes.byref(ptr), 256 + (i & 15)):
        raise RuntimeError("cuMemAlloc_v2")
    lib.cuMemFree_v2(ptr.value)


def nest(lib, ptr, i, depth):
    if depth:
        nest(lib, ptr, i, depth - 1)
    else:
        alloc_free(lib, ptr, i)


def loop(lib, n, depth):
    ptr = ctypes.c_uint64()
    for i in range(n):
        nest(lib, ptr, i, depth)


def main():
    lib = load(sys.argv[1], sys.argv[4])
    n, depth = int(sys.argv[2]), int(sys.argv[3])
    t, c = time.perf_counter(), time.thread_time()
    loop(lib, n, depth - 4)  # alloc_free, nest, loop, main and <module> make 4 + 1 more
    print(f"{time.perf_counter() - t:.6f} {time.thread_time() - c:.6f}")


if __name__ == "__main__":
    main()
