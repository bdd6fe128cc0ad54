"""gpu_overhead.py - what recording costs a real PyTorch job, per allocation,
on a machine with a GPU: the figure `make bench` estimates with synthetic
stacks, measured under PyTorch's own dispatch (Python 3.12 frames over
c10/ATen/CUDA-runtime native frames).

    python3 examples/gpu_overhead.py [--build build] [--out gpu-overhead] [--n 20000]

The job allocates and frees N small tensors under backend:cudaMallocAsync,
so each tensor is one cuMemAllocAsync/cuMemFreeAsync pair that the shim
records with its stack, at two Python depths (2 and 40 nested functions).
It runs each case three times without the shim and three times under
`gpushim run --per-tensor` (and twice under each --variant's settings) and
prints the best time per tensor of each, the
difference (what the shim adds per allocation+free), and the frames on the
recorded stacks (from `gpushim report --json`).
"""
import argparse
import json
import os
import subprocess
import sys

JOB = r'''
import sys, time, torch
n, depth = int(sys.argv[1]), int(sys.argv[2])
def loop(k):
    if k:
        return loop(k - 1)
    for _ in range(1000):
        torch.empty(256, device="cuda")  # warm-up
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        torch.empty(256, device="cuda")
    torch.cuda.synchronize()
    return time.perf_counter() - t
print("seconds: %.6f" % loop(depth))
'''


def timed(argv, env):
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    for line in r.stdout.splitlines():
        if line.startswith("seconds: "):
            return float(line[9:])
    raise SystemExit("job failed (%d): %s" % (r.returncode, r.stderr[-600:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--out", default="gpu-overhead")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=VALUE[,NAME=VALUE...]: also time depth 2 with these set "
                         "(GPUSHIM_PYTHON=0, say), to see what each part costs")
    a = ap.parse_args()
    gpushim = os.path.join(os.path.abspath(a.build), "gpushim")
    os.makedirs(a.out, exist_ok=True)
    job = os.path.join(a.out, "overhead_job.py")
    with open(job, "w") as f:
        f.write(JOB)
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="backend:cudaMallocAsync")
    for depth in (2, 40):
        plain = min(timed([sys.executable, job, str(a.n), str(depth)], env) for _ in range(3))
        trace = os.path.join(a.out, "depth%d.trace" % depth)
        shim = min(timed([gpushim, "run", "--per-tensor", "-o", trace, "--", sys.executable, job,
                          str(a.n), str(depth)], env) for _ in range(3))
        r = subprocess.run([gpushim, "report", "--json", trace], capture_output=True, text=True)
        frames = "?"
        if r.returncode in (0, 4):  # 4: read, and incomplete
            sites = json.loads(r.stdout)["peak"]["sites"]
            frames = max((len(s["frames"]) for s in sites), default=0)
        print("python depth %2d: %7.0f ns/tensor plain, %7.0f under gpushim, +%6.0f ns "
              "per allocation+free; %s frames on the deepest stack at peak"
              % (depth, plain / a.n * 1e9, shim / a.n * 1e9, (shim - plain) / a.n * 1e9, frames))
        if depth != 2:
            continue
        for v in a.variant:
            venv = dict(env, **dict(kv.split("=", 1) for kv in v.split(",")))
            t = min(timed([gpushim, "run", "--per-tensor", "-o", trace + ".variant", "--",
                           sys.executable, job, str(a.n), str(depth)], venv) for _ in range(2))
            print("  with %-40s %7.0f ns/tensor, +%6.0f ns" % (v, t / a.n * 1e9,
                                                               (t - plain) / a.n * 1e9))


if __name__ == "__main__":
    main()
