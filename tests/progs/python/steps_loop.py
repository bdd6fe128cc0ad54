"""steps_loop.py - five training steps, each leaking 4 MiB, told to gpushim
in one of the ways a training loop tells it where its steps are; the
device memory from the simulated driver (cuda.py). Run with PYTHONPATH
holding python/ and tests/progs/python, argv[1] the path of libcuda.so.1
and argv[2] the way:

    before      gpushim.mark("step") at the top of each step
    after       gpushim.step_end("step") at the bottom of each step
    mark_steps  gpushim.torch.mark_steps on a real (CPU) torch.optim.SGD:
                it marks "step" when called, and ends a step after each
                optimizer step (needs torch)
    region      each step inside gpushim.region("step") (an NVTX range)
    none        no marks at all: 20 steps 60 ms apart, a run of over a
                second: growth is per second
    quick       no marks, no waits: a run far shorter than a second

The schedule: weights 8 MiB (kept), made before the loop; then per step,
an activation of 2 MiB made and freed, and 20 MiB / STEPS appended to a
history and never freed (the leak, at leak_site); the program ends with
the history live: 20 MiB leaked, 4 MiB a step in the 5 steps marked. The
ways without marks take 20 steps of 1 MiB: sampled at quiet moments of
windows of time or of events, where a step's events may fall in two
windows (a flat interval between two samples), 5 steps were too few to
judge the leak on every run (growth.c, suspects.c); 20 are enough.
"""
import sys
import time

import gpushim
from cuda import Driver

MiB = 1 << 20

drv = Driver(sys.argv[1], keep_gil=True)
way = sys.argv[2]
STEPS = 20 if way in ("none", "quick") else 5
drv.use_device(0)
weights = drv.alloc(8 * MiB)
history = []


def leak_site():
    history.append(drv.alloc(20 * MiB // STEPS))


def one_step():
    act = drv.alloc(2 * MiB)
    leak_site()
    drv.free(act)


opt = None
if way == "mark_steps":
    import torch
    import gpushim.torch as gt

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gt.mark_steps(opt)

for _ in range(STEPS):
    if way == "before":
        gpushim.mark("step")
    if way == "region":
        with gpushim.region("step"):
            one_step()
    else:
        one_step()
    if opt is not None:
        opt.zero_grad()
        model(torch.ones(2, 4)).sum().backward()
        opt.step()
    if way == "after":
        gpushim.step_end("step")
    if way == "none":
        time.sleep(0.06)
    elif way != "quick":
        time.sleep(0.02)
print("done")
