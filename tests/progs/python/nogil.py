"""nogil.py - allocations made with the GIL released, from every shape of
Python code (shapes.py), from the main thread and several threading
threads at once while another thread churns objects with finalizers to
force collections and makes frame objects of the other threads' frames,
from a forked child, and from a C thread named like
PyTorch's autograd engine thread; each site allocates a size of its own
and keeps it, so a report finds each by its bytes:

  64 KiB   nested functions (shapes.py nested_outer -> nested_inner)
  128 KiB  a method              192 KiB  a lambda
  256 KiB  a decorated function  320 KiB  a generator
  384 KiB  a coroutine           448 KiB  exec'd code
  512 KiB  eval'd code           576 KiB  a recursion 100 deep
  640 KiB  while an exception is handled
  832 KiB  with the GIL held (alloc_with_gil), before the others
  threads: 1 MiB + k x 64 KiB, 8 times each, thread k of 4
  engine:  2 x 768 KiB on the C thread pt_autograd_0
  child:   704 KiB in the forked child (its own trace)

Usage: nogil.py (gsext on PYTHONPATH). Lines marked "# site: NAME" are
looked up by tests/integration/test_python_nogil.py.
"""
import gc
import os
import sys
import threading
import traceback

import gsext
import shapes
from shapes import KiB

MiB = 1024 * KiB
THREADS = 4
EACH = 8


class Finalized:
    """An object in a cycle, with a finalizer: collections run them."""
    freed = 0

    def __init__(self):
        self.me = self

    def __del__(self):
        Finalized.freed += 1


def churn(stop):
    """Collections that run finalizers, and frame objects made of the other
    threads' frames (sys._current_frames, tracebacks), while they allocate."""
    while not stop.is_set():
        for _ in range(200):
            Finalized()
        gc.collect()
        for frame in sys._current_frames().values():
            traceback.extract_stack(frame)


def worker(k, start, kept):
    start.wait()
    for _ in range(EACH):
        kept.append(gsext.alloc(1 * MiB + k * 64 * KiB))  # site: thread


def all_shapes(kept):
    kept.append(shapes.nested_outer(64 * KiB))  # site: nested
    kept.append(shapes.Layer(128 * KiB).forward())  # site: method call
    kept.append(shapes.lambda_site(192 * KiB))  # site: lambda
    kept.append(shapes.decorated(256 * KiB))  # site: decorated call
    kept.append(next(shapes.generator(320 * KiB)))  # site: generator next
    kept.append(shapes.run_coroutine(384 * KiB))  # site: coroutine
    kept.append(shapes.exec_site(448 * KiB))  # site: exec
    kept.append(shapes.eval_site(512 * KiB))  # site: eval
    kept.append(shapes.recurse(100, 576 * KiB))  # site: recursion
    kept.append(shapes.while_handling(640 * KiB))  # site: except


def main():
    kept = [gsext.alloc_with_gil(832 * KiB)]  # site: with the GIL
    stop, start = threading.Event(), threading.Event()
    churner = threading.Thread(target=churn, args=(stop,))
    churner.start()
    threads = [threading.Thread(target=worker, args=(k, start, kept)) for k in range(THREADS)]
    for t in threads:
        t.start()
    start.set()
    all_shapes(kept)  # site: shapes
    for t in threads:
        t.join()
    stop.set()
    churner.join()
    kept.extend(gsext.pool_alloc(768 * KiB, 2))  # site: engine
    pid = os.fork()
    if pid == 0:
        gsext.alloc(704 * KiB)  # site: child
        sys.stdout.flush()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("child exited", os.waitstatus_to_exitcode(status),
          "collected", "some" if Finalized.freed else "none")


if __name__ == "__main__":
    main()  # site: main
