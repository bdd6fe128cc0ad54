#!/usr/bin/env python3
"""bench_python.py - what Python frames cost (make bench-python).

Usage: bench_python.py --build DIR [--allocs N] [--repeat R]

Runs tests/bench/py_workload.py: N allocations and N frees of the simulated
driver from Python through ctypes, 4 Python frames deep, each configuration
R times interleaved, the best time of each kept (the loop's own time, the
interpreter's start-up left out; wall clock, and the CPU time of the
program's thread, which a shared machine disturbs less):

  gil      ctypes.PyDLL keeps the GIL: the shim records the Python frames
  nogil    ctypes.CDLL releases it: a native stack and the no-GIL marker

each without and with LD_PRELOAD=libgpushim.so. It prints the shim's cost
per allocation (with its free) in each, and the difference: what recording
the Python frames adds to an allocation. Standard library only.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--allocs", type=int, default=200000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    shim = os.path.join(build, "libgpushim.so")
    libcuda = os.path.join(build, "sim", "libcuda.so.1")
    best = {}
    with tempfile.TemporaryDirectory(prefix="gpushim-bench-py-") as tmp:
        for _ in range(a.repeat):
            for mode in ("gil", "nogil"):
                for shimmed in (False, True):
                    env = dict(os.environ)
                    env.pop("LD_PRELOAD", None)
                    env["GPUSHIM_OUTPUT"] = os.path.join(tmp, "bench.%p.trace")
                    if shimmed:
                        env["LD_PRELOAD"] = shim
                    p = subprocess.run([sys.executable, os.path.join(HERE, "py_workload.py"),
                                        libcuda, str(a.allocs), mode], env=env,
                                       capture_output=True, text=True)
                    if p.returncode != 0:
                        sys.exit(f"bench: {mode} failed: {p.stderr}")
                    for kind, t in zip(("wall", "cpu"), map(float, p.stdout.split())):
                        key = (kind, mode, shimmed)
                        best[key] = min(best.get(key, t), t)
                    for f in os.listdir(tmp):
                        os.unlink(os.path.join(tmp, f))
    print(f"Python {sys.version.split()[0]}, {a.allocs} allocations and frees, best of {a.repeat}")
    print(f"  {'':44} {'bare (s)':>9} {'shim (s)':>9} {'ns/alloc':>9}")
    for kind in ("wall", "cpu"):
        ns = {m: (best[(kind, m, True)] - best[(kind, m, False)]) / a.allocs * 1e9
              for m in ("gil", "nogil")}
        for m, what in (("gil", "with the GIL: native + Python frames"),
                        ("nogil", "without the GIL: native + marker")):
            label = f"{kind:4}  {what}"
            print(f"  {label:44} {best[(kind, m, False)]:9.4f} {best[(kind, m, True)]:9.4f} "
                  f"{ns[m]:9.0f}")
        print(f"  {kind:4}  Python frames add {ns['gil'] - ns['nogil']:.0f} ns per allocation")

if __name__ == "__main__":
    main()
