"""train.py - a known schedule from Python, through ctypes, in three files
(train.py, model.py, cuda.py), as tests/progs/drv_schedule.c does from C:

  weights: 4 x 1 MiB (Model.load_weights), kept to the end
  3 steps: two 2 MiB activations (a function nested in Model.forward), one
           256 KiB cache entry (remember) never freed, then the activations
           are freed
  then, on a thread of its own: 1 MiB with the GIL (ctypes.PyDLL) and
           512 KiB without it (ctypes.CDLL), both kept

All but the last allocation hold the GIL. Peak: 4 MiB + 3 x 256 KiB +
4 MiB = 8.75 MiB, during step 3. Unfreed at the end: weights 4 MiB (4),
cache 768 KiB (3), the thread's 1 MiB and 512 KiB.

Usage: train.py LIBCUDA. Lines marked "# site: NAME" are looked up by
tests/integration/test_python.py.
"""
import sys
import threading

from cuda import Driver
from model import KiB, MiB, Model


def worker(path, kept):
    with_gil = Driver(path, keep_gil=True)
    with_gil.use_device(0)
    kept.append(with_gil.alloc(1 * MiB))  # site: thread with the GIL
    without_gil = Driver(path, keep_gil=False)
    kept.append(without_gil.alloc(512 * KiB))  # site: thread without the GIL


def main(path):
    driver = Driver(path, keep_gil=True)
    driver.use_device(0)
    model = Model(driver)
    model.load_weights(4)  # site: load
    for step in range(3):
        model.forward(step)  # site: step
    kept = []
    t = threading.Thread(target=worker, args=(path, kept))
    t.start()
    t.join()
    print("schedule done")


if __name__ == "__main__":
    main(sys.argv[1])  # site: main
