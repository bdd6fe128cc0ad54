"""cdll_loop.py - issue 14's case: a 20-step training loop that allocates
through the CUDA driver with ctypes.CDLL, which releases the GIL around each
call as PyTorch's bindings do: each step keeps 1 MiB (a leak) and allocates
and frees 4 MiB (a temporary). Peak: 20 MiB kept + 4 MiB. It runs in a few
milliseconds.

Usage: cdll_loop.py LIBCUDA. Lines marked "# site: NAME" are looked up by
tests/integration/test_python_nogil.py.
"""
import sys

from cuda import Driver

MiB = 1024 * 1024


def step(driver, kept):
    kept.append(driver.alloc(1 * MiB))  # site: kept
    temporary = driver.alloc(4 * MiB)  # site: temporary
    driver.free(temporary)


def main(path):
    driver = Driver(path, keep_gil=False)
    driver.use_device(0)
    kept = []
    for _ in range(20):
        step(driver, kept)  # site: step
    print(len(kept), "steps")


if __name__ == "__main__":
    main(sys.argv[1])  # site: main
