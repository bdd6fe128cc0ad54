"""code_reuse.py - code objects freed and made again, likely at the same
addresses: 20 functions compiled one after the other from source that
differs only in the function's name, each called once (it allocates i + 1
KiB through gsext with the GIL released, so its code object cannot be
pinned) and then dropped, its code object freed before the next is made.
Each allocation must be named by its own function, f_0 to f_19.

Usage: code_reuse.py (gsext on PYTHONPATH). Looked up by
tests/integration/test_python_nogil.py.
"""
import gc

import gsext

KiB = 1024
SOURCE = "def f_{i}(size):\n    return gsext.alloc(size)\n"


def make_and_call(i, kept):
    ns = {"gsext": gsext}
    exec(compile(SOURCE.format(i=i), "<made>", "exec"), ns)
    kept.append(ns["f_%d" % i]((i + 1) * KiB))  # site: call


def main():
    kept = []
    for i in range(20):
        make_and_call(i, kept)
        gc.collect()
    print(len(kept), "made")


if __name__ == "__main__":
    main()
