"""handoff_train.py - a backward whose gradient PyTorch's autograd engine
allocates on a thread of its own while this thread waits: through the
stand-in of torch/autograd/graph.py in tests/progs/python/handoff, whose
_engine_run_backward calls gsext.engine_backward (gsext.c: an engine thread
with a Python thread state and no frames, as PythonEngine::thread_init
makes them), three times, the gradients kept.

usage: handoff_train.py [own | N]. With "own", the wait is in this file's
own wait_for_engine instead, which GPUSHIM_HANDOFF must name; with a number
N, each backward allocates N gradients.
"""
import os
import sys

# gsext stands in for libtorch too (its get_current_graph_task_id): the shim
# finds that in libtorch_cpu, or, as here, in the process's scope
sys.setdlopenflags(os.RTLD_NOW | os.RTLD_GLOBAL)
import gsext  # noqa: E402
from torch.autograd.graph import _engine_run_backward  # noqa: E402


def wait_for_engine(size):
    return gsext.engine_backward(size)  # site: own


def train_step(own, n):
    if own:
        return wait_for_engine(1 << 20)  # site: own backward
    return _engine_run_backward(1 << 20, n)  # site: backward


def main(arg):
    kept = []
    for _ in range(3):
        kept += train_step(arg == "own", int(arg) if arg.isdigit() else 1)  # site: step
    print(len(kept))


main(sys.argv[1] if len(sys.argv) > 1 else "")  # site: main
