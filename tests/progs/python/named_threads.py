"""named_threads.py - threads that Python's threading names, each
allocating device memory through ctypes (cuda.py), never freed; sizes tell
them apart:

  1 MiB  the main thread (its name is the process's: CPython never names it)
  2 MiB  threading.Thread(name="loader-3"), the GIL held (ctypes.PyDLL)
  3 MiB  threading.Thread(name="pinner"), the GIL released (ctypes.CDLL)
  4 MiB  a Thread with its default name ("Thread-1 (work)"; "Thread-1" on 3.9)
  5 MiB  a concurrent.futures pool's thread (thread_name_prefix="pool": "pool_0")
  6 MiB  a name longer than a trace keeps, not all ASCII
  7 MiB  a Thread renamed after it started ("before" -> "after"): the name it
         started with is the one recorded

usage: named_threads.py LIBCUDA. Prints each size in MiB and the name its
thread had when it started, a line each ("1 python3").
"""
import concurrent.futures
import sys
import threading

from cuda import Driver

MiB = 1 << 20
LONG = "chargeur de données n°7, qui précharge les lots du prochain pas d'entraînement"


def main(path):
    held, released = Driver(path, keep_gil=True), Driver(path, keep_gil=False)
    held.use_device(0)
    names = {}

    def work(driver, size, rename=None):
        names[size] = threading.current_thread().name
        if rename:
            threading.current_thread().name = rename
        driver.use_device(0)
        driver.alloc(size * MiB)

    with open("/proc/self/comm") as f:
        names[1] = f.read().strip()
    held.alloc(1 * MiB)
    for size, driver, name, rename in ((2, held, "loader-3", None), (3, released, "pinner", None),
                                       (4, held, None, None), (6, held, LONG, None),
                                       (7, held, "before", "after")):
        t = threading.Thread(target=work, args=(driver, size, rename), name=name)
        t.start()
        t.join()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pool") as pool:
        pool.submit(work, held, 5).result()
    for size in sorted(names):
        print(size, names[size])


main(sys.argv[1])
