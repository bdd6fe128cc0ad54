#!/usr/bin/env python3
"""bench_python.py - what recording Python frames costs (make bench-python).

Usage: bench_python.py --build DIR [--allocs N] [--repeat R]

Runs tests/bench/py_workload.py: N allocations and N frees of the simulated
driver from Python through ctypes, at two depths of the Python stack (5 and
25 frames), with the GIL held around the call (ctypes.PyDLL) and released
(ctypes.CDLL, as PyTorch's bindings release it), each of these R times,
interleaved, the best time of each kept (the loop's own time, the
interpreter's start-up left out; wall clock, and the CPU time of the
program's thread, which a shared machine disturbs less):

  bare     the workload alone
  native   under the shim with GPUSHIM_PYTHON=0: native stacks only
  api      GPUSHIM_PYTHON=2: Python frames through CPython's API, only where
           the GIL is held (released: native stacks and a marker)
  memory   the default: Python frames read from memory, GIL or not

It prints the shim's cost per allocation (with its free) in each, what the
Python frames add to the native stack's cost, and that per Python frame
(from the difference of the two depths). Standard library only; builds
nothing.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEPTHS = (5, 25)
GILS = ("held", "released")
CONFIGS = {"bare": None, "native": "0", "api": "2", "memory": "1"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--allocs", type=int, default=200000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    libcuda = os.path.join(build, "sim", "libcuda.so.1")
    best = {}
    with tempfile.TemporaryDirectory(prefix="gpushim-bench-py-") as tmp:
        for _ in range(a.repeat):
            for gil in GILS:
                for depth in DEPTHS:
                    for config, python in CONFIGS.items():
                        env = dict(os.environ)
                        env.pop("LD_PRELOAD", None)
                        env["GPUSHIM_OUTPUT"] = os.path.join(tmp, "bench.%p.trace")
                        if python is not None:
                            env["LD_PRELOAD"] = os.path.join(build, "libgpushim.so")
                            env["GPUSHIM_PYTHON"] = python
                        p = subprocess.run([sys.executable, os.path.join(HERE, "py_workload.py"),
                                            libcuda, str(a.allocs), str(depth), gil], env=env,
                                           capture_output=True, text=True)
                        if p.returncode != 0:
                            sys.exit(f"bench: {config}, GIL {gil}, depth {depth} failed: {p.stderr}")
                        for kind, t in zip(("wall", "cpu"), map(float, p.stdout.split())):
                            key = (kind, gil, depth, config)
                            best[key] = min(best.get(key, t), t)
                        for f in os.listdir(tmp):
                            os.unlink(os.path.join(tmp, f))
    print(f"Python {sys.version.split()[0]}: {a.allocs} allocations and frees from Python "
          f"through ctypes, best of {a.repeat}")
    shown = [c for c in CONFIGS if c != "bare"]
    print(f"  {'':30} {'bare s':>8} " + " ".join(f"{c + ' ns':>10}" for c in shown)
          + " " + " ".join(f"{c + ' +ns':>10}" for c in shown[1:]))
    for kind in ("wall", "cpu"):
        for gil in GILS:
            added = {}
            for depth in DEPTHS:
                t = {c: best[(kind, gil, depth, c)] for c in CONFIGS}
                ns = {c: (t[c] - t["bare"]) / a.allocs * 1e9 for c in shown}
                added[depth] = {c: ns[c] - ns["native"] for c in shown[1:]}
                label = f"{kind}, GIL {gil}, {depth} frames"
                print(f"  {label:30} {t['bare']:8.4f} " + " ".join(f"{ns[c]:10.0f}" for c in shown)
                      + " " + " ".join(f"{added[depth][c]:10.0f}" for c in shown[1:]))
            per = {c: (added[DEPTHS[1]][c] - added[DEPTHS[0]][c]) / (DEPTHS[1] - DEPTHS[0])
                   for c in shown[1:]}
            print(f"  {kind}, GIL {gil}: per Python frame about "
                  + ", ".join(f"{per[c]:.0f} ns ({c})" for c in shown[1:]))
    print("  (ns: the shim's cost per allocation, its free included, over the bare run; +ns: what the "
          "Python frames add to the native stack's cost; api with the GIL released records a marker only)")


if __name__ == "__main__":
    main()
