#!/usr/bin/env python3
"""bench_python.py - what recording Python frames costs (make bench-python).

Usage: bench_python.py --build DIR [--allocs N] [--repeat R]

Runs tests/bench/py_workload.py: N allocations and N frees of the simulated
driver from Python through ctypes.PyDLL (the GIL held, so the shim records
the Python frames), at two depths of the Python stack (5 and 25 frames),
each of these R times, interleaved, the best time of each kept (the loop's
own time, the interpreter's start-up left out; wall clock, and the CPU time
of the program's thread, which a shared machine disturbs less):

  bare     the workload alone
  native   under the shim with GPUSHIM_PYTHON=0: native stacks only
  python   under the shim: native stacks and Python frames

It prints the shim's cost per allocation (with its free) in each, what the
Python frames add to it, and that per Python frame (from the difference of
the two depths). Standard library only; builds nothing.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEPTHS = (5, 25)
CONFIGS = ("bare", "native", "python")


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
            for depth in DEPTHS:
                for config in CONFIGS:
                    env = dict(os.environ)
                    env.pop("LD_PRELOAD", None)
                    env["GPUSHIM_OUTPUT"] = os.path.join(tmp, "bench.%p.trace")
                    if config != "bare":
                        env["LD_PRELOAD"] = os.path.join(build, "libgpushim.so")
                    env["GPUSHIM_PYTHON"] = "0" if config == "native" else "1"
                    p = subprocess.run([sys.executable, os.path.join(HERE, "py_workload.py"),
                                        libcuda, str(a.allocs), str(depth)], env=env,
                                       capture_output=True, text=True)
                    if p.returncode != 0:
                        sys.exit(f"bench: {config} at depth {depth} failed: {p.stderr}")
                    for kind, t in zip(("wall", "cpu"), map(float, p.stdout.split())):
                        key = (kind, depth, config)
                        best[key] = min(best.get(key, t), t)
                    for f in os.listdir(tmp):
                        os.unlink(os.path.join(tmp, f))
    print(f"Python {sys.version.split()[0]}: {a.allocs} allocations and frees from Python "
          f"through ctypes, best of {a.repeat}")
    print(f"  {'':22} {'bare s':>8} {'native s':>9} {'python s':>9} {'native ns':>10} "
          f"{'python ns':>10} {'added ns':>9}")
    for kind in ("wall", "cpu"):
        added = {}
        for depth in DEPTHS:
            t = {c: best[(kind, depth, c)] for c in CONFIGS}
            native = (t["native"] - t["bare"]) / a.allocs * 1e9
            python = (t["python"] - t["bare"]) / a.allocs * 1e9
            added[depth] = python - native
            label = f"{kind}, {depth} Python frames"
            print(f"  {label:22} {t['bare']:8.4f} {t['native']:9.4f} {t['python']:9.4f} "
                  f"{native:10.0f} {python:10.0f} {added[depth]:9.0f}")
        per_frame = (added[DEPTHS[1]] - added[DEPTHS[0]]) / (DEPTHS[1] - DEPTHS[0])
        print(f"  {kind}: about {per_frame:.0f} ns per Python frame")
    print("  (ns: per allocation, its free included; native: the shim with GPUSHIM_PYTHON=0; "
          "added: what the Python frames add)")


if __name__ == "__main__":
    main()
