"""foreign.py - device memory allocated through foreign function
interfaces, each way once, never freed (sizes tell them apart):

  1 MiB  ctypes.PyDLL: the driver's cuMemAlloc_v2 itself, the GIL held
  2 MiB  ctypes.PyDLL: clib's c_alloc (a C library), the GIL held
  3 MiB  ctypes.CDLL: clib's c_alloc, the GIL released around the call
  4 MiB  cffi, ABI mode (ffi.dlopen): the driver's cuMemAlloc_v2
  5 MiB  cffi, API mode (a module cffi compiled, API_DIR): cuMemAlloc_v2

usage: foreign.py LIBCUDA LIBC_FN [API_DIR]. The cffi ways run where
cffi imports (Debian's python3-cffi), API mode where API_DIR holds the
module _gsffi_api (built by tests/integration/test_python_ffi.py). Prints
the sizes allocated, in MiB. Lines marked "# site: NAME" are looked up by
the tests.
"""
import ctypes
import sys

from cuda import Driver, check

MiB = 1 << 20


def through_ctypes_driver(driver):
    ptr = ctypes.c_uint64()
    check(driver.lib.cuMemAlloc_v2(ctypes.byref(ptr), 1 * MiB), "cuMemAlloc_v2")  # site: ctypes driver


def through_ctypes_c(lib, size):
    ptr = ctypes.c_uint64()
    check(lib.c_alloc(size, ctypes.byref(ptr)), "c_alloc")  # site: ctypes c


def through_cffi_abi(libcuda):
    import cffi
    ffi = cffi.FFI()
    ffi.cdef("int cuMemAlloc_v2(unsigned long long *p, size_t size);")
    lib = ffi.dlopen(libcuda)
    ptr = ffi.new("unsigned long long *")
    check(lib.cuMemAlloc_v2(ptr, 4 * MiB), "cuMemAlloc_v2")  # site: cffi abi


def through_cffi_api():
    from _gsffi_api import ffi, lib
    ptr = ffi.new("unsigned long long *")
    check(lib.cuMemAlloc_v2(ptr, 5 * MiB), "cuMemAlloc_v2")  # site: cffi api


def run_all(libcuda, libc_fn, api_dir):
    driver = Driver(libcuda, keep_gil=True)
    driver.use_device(0)
    done = [1]
    through_ctypes_driver(driver)  # site: run ctypes driver
    for n, kind in ((2, ctypes.PyDLL), (3, ctypes.CDLL)):
        lib = kind(libc_fn)
        lib.c_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint64)]
        through_ctypes_c(lib, n * MiB)  # site: run ctypes c
        done.append(n)
    try:
        import cffi  # noqa: F401
    except ImportError:
        return done
    through_cffi_abi(libcuda)  # site: run cffi abi
    done.append(4)
    if api_dir:
        sys.path.insert(0, api_dir)
        through_cffi_api()  # site: run cffi api
        done.append(5)
    return done


def main():
    done = run_all(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)  # site: main
    print(" ".join(str(n) for n in done))


main()  # site: module
