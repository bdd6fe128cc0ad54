"""longrun.py - a run long enough for GPUSHIM_MAX_BYTES=4M to rotate its
trace: keep_weights takes 2 x 1 MiB first and keeps it; then N steps each
allocate a buffer of a pseudo-random size (so that the trace grows fast)
in churn and free it at once. The weights' stack and its code objects are
defined long before the checkpoint: the rotated trace must still name
their Python frames.

Usage: longrun.py LIBCUDA N. Lines marked "# site: NAME" are looked up by
tests/integration/test_python.py.
"""
import random
import sys

from cuda import Driver

MiB = 1024 * 1024


def keep_weights(driver):
    kept = []
    for _ in range(2):
        kept.append(driver.alloc(1 * MiB))  # site: kept
    return kept


def churn(driver, rng):
    driver.free(driver.alloc(rng.randrange(1, 1 << 30)))  # site: churn


def main(path, steps):
    driver = Driver(path, keep_gil=True)
    driver.use_device(0)
    weights = keep_weights(driver)  # site: keep
    rng = random.Random(1)
    for _ in range(steps):
        churn(driver, rng)
    print("done", len(weights))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))  # site: main
