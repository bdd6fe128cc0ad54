"""killed.py - Python frames after a death: allocates 3 MiB in
hold_buffer, then kills itself with SIGKILL before the shim's writer has
written anything (the test sets GPUSHIM_FLUSH_MS=10000), so the code
objects, the stack and the event are only in the ring file.

Usage: killed.py LIBCUDA. Lines marked "# site: NAME" are looked up by
tests/integration/test_python.py.
"""
import os
import signal
import sys

from cuda import Driver

MiB = 1024 * 1024


def hold_buffer(driver):
    return driver.alloc(3 * MiB)  # site: held


def main(path):
    driver = Driver(path, keep_gil=True)
    driver.use_device(0)
    hold_buffer(driver)  # site: hold
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1])  # site: main
