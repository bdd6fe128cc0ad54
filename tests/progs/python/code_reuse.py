"""code_reuse.py - code objects freed and made again, likely at the same
addresses: 20 functions compiled one after the other from source that
differs only in the function's name, each called once (it allocates i + 1
KiB through gsext with the GIL released, so its code object cannot be
pinned) and then dropped, its code object freed before the next is made.
Each allocation must be named by its own function, f_0 to f_19.

Usage: code_reuse.py [--take-watchers] (gsext on PYTHONPATH). Looked up by
tests/integration/test_python_nogil.py. --take-watchers takes every code
watcher the interpreter has first (3.12 and later), as other tools can, so
that the shim can add none and checks each frame's code object instead.
"""
import gc
import sys

import gsext

KiB = 1024
SOURCE = "def f_{i}(size):\n    return gsext.alloc(size)\n"


def make_and_call(i, kept):
    ns = {"gsext": gsext}
    exec(compile(SOURCE.format(i=i), "<made>", "exec"), ns)
    kept.append(ns["f_%d" % i]((i + 1) * KiB))  # site: call


def main():
    if "--take-watchers" in sys.argv[1:]:
        gsext.take_code_watchers()
    kept = []
    for i in range(20):
        make_and_call(i, kept)
        gc.collect()
    print(len(kept), "made")


if __name__ == "__main__":
    main()
