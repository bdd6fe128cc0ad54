#!/usr/bin/env python3
"""bench_handoff.py - what linking an engine thread's allocations to the
thread that waits for them costs (make bench-python; docs/limits.md).

Usage: bench_handoff.py --build DIR [--backwards B] [--gradients N] [--repeat R]

Builds tests/progs/python/gsext.c for this python3, then runs B backwards
of N gradients each through the stand-in of torch/autograd/graph.py
(tests/progs/python/handoff): gsext's engine thread (a Python thread state,
no frames, as PyTorch makes its own) allocates and the caller frees them.
Prints the time per gradient, best of R: bare, under the shim with
GPUSHIM_HANDOFF=0 (no link), and linked (the default).
"""
import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROGS = os.path.join(HERE, "..", "progs", "python")
WORKLOAD = r'''
import os, sys, time
sys.setdlopenflags(os.RTLD_NOW | os.RTLD_GLOBAL)
import gsext
from torch.autograd.graph import _engine_run_backward
b, n, repeat = (int(a) for a in sys.argv[1:4])
best = 1e9
for _ in range(repeat):
    t0 = time.perf_counter()
    for _ in range(b):
        for p in _engine_run_backward(4096, n):
            gsext.free(p)
    best = min(best, time.perf_counter() - t0)
print(best / (b * n) * 1e6)
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--backwards", type=int, default=20)
    ap.add_argument("--gradients", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sim = os.path.join(build, "sim")
    with tempfile.TemporaryDirectory(prefix="gpushim-bench-handoff-") as tmp:
        ext = os.path.join(tmp, "gsext" + sysconfig.get_config_var("EXT_SUFFIX"))
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-isystem", sysconfig.get_paths()["include"],
                        os.path.join(PROGS, "gsext.c"), "-o", ext, "-L" + sim, "-Wl,-rpath," + sim,
                        "-lcuda", "-lpthread"], check=True)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([tmp, os.path.join(PROGS, "handoff")]),
                   GPUSHIM_OUTPUT=os.path.join(tmp, "bench.%p.trace"))
        env.pop("LD_PRELOAD", None)
        args = [sys.executable, "-c", WORKLOAD, str(a.backwards), str(a.gradients), str(a.repeat)]
        print(f"Python {sys.version.split()[0]}: {a.backwards} backwards of {a.gradients} "
              f"gradients on an engine thread, best of {a.repeat}; us a gradient (its free "
              "included)")
        for name, extra in (("bare", {}),
                            ("shim, GPUSHIM_HANDOFF=0",
                             {"LD_PRELOAD": os.path.join(build, "libgpushim.so"),
                              "GPUSHIM_HANDOFF": "0"}),
                            ("shim, linked", {"LD_PRELOAD": os.path.join(build, "libgpushim.so")})):
            p = subprocess.run(args, env=dict(env, **extra), capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"{name}: {p.stderr}")
            print(f"  {name:26} {float(p.stdout):8.2f}")


if __name__ == "__main__":
    main()
