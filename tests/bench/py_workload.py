"""py_workload.py - N allocations and frees of the simulated driver from
Python through ctypes, 4 Python frames deep, for bench_python.py.

Usage: py_workload.py LIBCUDA N gil|nogil. Prints the seconds the loop took
(the interpreter's start-up left out): wall clock, and CPU time of the
thread that ran it (what the program's own thread paid, less the noise of
a shared machine). "gil" calls through ctypes.PyDLL,
which keeps the GIL (the shim records Python frames), "nogil" through
ctypes.CDLL, which releases it (native stack and a marker).
"""
import ctypes
import sys
import time


def load(path, gil):
    lib = (ctypes.PyDLL if gil else ctypes.CDLL)(path)
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


def step(lib, ptr, i):
    alloc_free(lib, ptr, i)


def loop(lib, n):
    ptr = ctypes.c_uint64()
    for i in range(n):
        step(lib, ptr, i)


def main():
    lib = load(sys.argv[1], sys.argv[3] == "gil")
    n = int(sys.argv[2])
    t, c = time.perf_counter(), time.thread_time()
    loop(lib, n)
    print(f"{time.perf_counter() - t:.6f} {time.thread_time() - c:.6f}")


if __name__ == "__main__":
    main()
