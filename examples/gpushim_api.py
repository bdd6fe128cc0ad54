#!/usr/bin/env python3
"""gpushim_api.py - gpushim's public API from Python, through ctypes.

Run it under gpushim and read the report:

    gpushim run -- python3 examples/gpushim_api.py
    gpushim report gpushim.<pid>.trace

Under the shim (gpushim run, or LD_PRELOAD=libgpushim.so), ctypes.CDLL(None)
finds the shim's exported entry points in the process; without it they are
not there, and every call below does nothing: the same script runs unchanged
either way. The entry points are those of include/gpushim.h, version 1:

    gpushim_api_v1_mark(const char *label)
    gpushim_api_v1_block_alloc(const void *ptr, size_t size)
    gpushim_api_v1_block_free(const void *ptr)
    gpushim_api_v1_flush(void)

The job: device memory straight from the CUDA driver (libcuda.so.1, also
through ctypes), 8 MiB of weights of which its own allocator hands out two
blocks (6 MiB of parameters, 1 MiB of buffers), then 4 steps that each take
4 MiB of activations and keep 1 MiB in a history by mistake. The report
shows the steps (each one 1 MiB larger than the last), the blocks and the
1 MiB free inside the weights' allocation.
"""
import ctypes
import sys

MiB = 1 << 20


class Gpushim:
    """The public API, or nothing when the shim is not loaded."""

    def __init__(self):
        process = ctypes.CDLL(None)
        self._mark = self._find(process, "gpushim_api_v1_mark", [ctypes.c_char_p])
        self._block_alloc = self._find(process, "gpushim_api_v1_block_alloc",
                                       [ctypes.c_void_p, ctypes.c_size_t])
        self._block_free = self._find(process, "gpushim_api_v1_block_free", [ctypes.c_void_p])
        self._flush = self._find(process, "gpushim_api_v1_flush", [])

    @staticmethod
    def _find(lib, name, argtypes):
        try:
            fn = getattr(lib, name)
        except AttributeError:
            return None
        fn.argtypes = argtypes
        fn.restype = None
        return fn

    @property
    def loaded(self):
        return self._mark is not None

    def mark(self, label):
        """A step begins: it runs to the next mark of its label, the last to
        the end of the run."""
        if self._mark:
            self._mark(label.encode())

    def block_alloc(self, ptr, size):
        """Our own allocator handed out [ptr, ptr + size)."""
        if self._block_alloc:
            self._block_alloc(ptr, size)

    def block_free(self, ptr):
        """Our own allocator took the block at ptr back."""
        if self._block_free:
            self._block_free(ptr)

    def flush(self):
        """Everything recorded so far goes to the trace file now."""
        if self._flush:
            self._flush()


class Cuda:
    """The few driver calls the job needs."""

    def __init__(self, device=0):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._check(self.lib.cuInit(0), "cuInit")
        ctx = ctypes.c_void_p()
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device),
                    "cuDevicePrimaryCtxRetain")
        self._check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        self.lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]

    @staticmethod
    def _check(result, what):
        if result != 0:
            sys.exit(f"{what} failed: CUDA error {result}")

    def alloc(self, size):
        ptr = ctypes.c_uint64()
        self._check(self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)),
                    "cuMemAlloc_v2")
        return ptr.value

    def free(self, ptr):
        self._check(self.lib.cuMemFree_v2(ptr), "cuMemFree_v2")


def train(gs, cuda, steps=4):
    weights = cuda.alloc(8 * MiB)
    gs.block_alloc(weights, 6 * MiB)            # parameters
    gs.block_alloc(weights + 6 * MiB, 1 * MiB)  # buffers; 1 MiB of the 8 stays free
    history = []
    for _ in range(steps):
        gs.mark("step")
        activations = cuda.alloc(4 * MiB)
        history.append(cuda.alloc(1 * MiB))      # kept by mistake: the leak
        cuda.free(activations)
    gs.flush()
    return history


def main():
    gs = Gpushim()
    train(gs, Cuda())
    print("gpushim:", "recording" if gs.loaded else "not loaded (run under gpushim to record)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
