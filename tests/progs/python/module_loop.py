"""module_loop.py - a training loop that tells gpushim its steps and phases
through the gpushim Python module (python/gpushim), its device memory from
the simulated driver (cuda.py). Run with PYTHONPATH holding python/ and
tests/progs/python, and argv[1] the path of libcuda.so.1.

    mark "load"; weights 4 MiB, kept
    3 steps, each a region "step" (a thread's first region: also a mark):
        region "forward" (with):       act 2 MiB, hist 1 MiB kept (the leak)
        train_backward (decorated):    grad 3 MiB; act and grad freed
    a region left by an exception: closed all the same
    flush

Prints whether the shim was found, and the depths regions returned.
Optional argv[2] "torch": the optimizer's steps mark the steps instead,
through gpushim.torch.mark_steps on a real (CPU) torch.optim.SGD: 3 steps
marked, then the hook removed and a fourth step unmarked; and what
use_allocator says on this PyTorch.
"""
import sys

import gpushim
from cuda import Driver

MiB = 1 << 20

drv = Driver(sys.argv[1], keep_gil=True)
drv.use_device(0)
print("loaded" if gpushim.loaded() else "not loaded")
gpushim.mark("load")
weights = drv.alloc(4 * MiB)
history = []


@gpushim.region("backward")
def train_backward(act):
    grad = drv.alloc(3 * MiB)
    drv.free(act)
    drv.free(grad)


def one_step():
    with gpushim.region("forward"):
        act = drv.alloc(2 * MiB)
        history.append(drv.alloc(1 * MiB))
    train_backward(act)


if len(sys.argv) > 2 and sys.argv[2] == "torch":
    import torch
    import gpushim.torch as gt

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    handle = gt.mark_steps(opt)
    for i in range(4):
        if i == 3 and handle:
            handle.remove()
        one_step()
        opt.zero_grad()
        model(torch.ones(2, 4)).sum().backward()
        opt.step()
    try:
        gt.use_allocator()
        print("use_allocator: installed")
    except RuntimeError as e:
        print("use_allocator:", e)
else:
    for _ in range(3):
        with gpushim.region("step"):
            one_step()
try:
    with gpushim.region("failing"):
        raise ValueError("a step that fails")
except ValueError:
    pass
gpushim.flush()
print("done")
