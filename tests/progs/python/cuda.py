"""cuda.py - the simulated CUDA driver (build/sim/libcuda.so.1) through
ctypes, as a framework's binding calls it.

A Driver made with keep_gil=True loads the library with ctypes.PyDLL, whose
calls keep the GIL: the shim then records the Python frames of each
allocation. With keep_gil=False it uses ctypes.CDLL, which releases the GIL
around each call: the shim records a native stack, marked as made without
the GIL. Lines marked "# site: NAME" are looked up by the tests.
"""
import ctypes

SUCCESS = 0


class Driver:
    def __init__(self, path, keep_gil):
        self.lib = (ctypes.PyDLL if keep_gil else ctypes.CDLL)(path)
        self.lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        self.lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                                      ctypes.c_int]
        self.lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]

    def use_device(self, dev):
        """Makes dev's primary context current on the calling thread."""
        check(self.lib.cuInit(0), "cuInit")
        ctx = ctypes.c_void_p()
        check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def alloc(self, size):
        ptr = ctypes.c_uint64()
        check(self.lib.cuMemAlloc_v2(ctypes.byref(ptr), size), "cuMemAlloc_v2")  # site: alloc
        return ptr.value

    def free(self, ptr):
        check(self.lib.cuMemFree_v2(ptr), "cuMemFree_v2")


def check(result, what):
    if result != SUCCESS:
        raise RuntimeError(f"{what} failed: {result}")
