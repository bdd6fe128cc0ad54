"""gpu_whatif_check.py - the prepared check of gpushim whatif on a machine with
a GPU and PyTorch (issue 17, item 7): the model's peak reserved against what
PyTorch's own caching allocator reserves, torch.cuda.max_memory_reserved(),
for scripted sequences under each setting.

    python3 examples/gpu_whatif_check.py [--build build] [--out gpu-whatif]

For each sequence it records the tensors once (gpushim run --per-tensor:
PyTorch's cudaMallocAsync backend, one stream-ordered allocation per tensor)
and replays that trace with `gpushim whatif --json --setting S` for every
setting S; then it runs the same sequence in a fresh process under
PYTORCH_CUDA_ALLOC_CONF=S (no shim) and reads max_memory_reserved() and
memory_stats()'s num_device_alloc and num_alloc_retries. One line per (sequence,
setting): "ok" when the model's peak reserved (no limit) is PyTorch's, else
"DIFFERS" with both; then "N passed, N failed". The device's PyTorch may be
older than the model's 2.12 rules: the line says the version. Without torch
with CUDA it says so and exits 0. Only the standard library is needed here.

The sequences (each tensor on the default stream, freed as listed):
  loop123548  pytorch/pytorch#123548's reproducer: 101 cycles of A = 91 MiB,
              B = 45.5 MiB, a 2 MiB tensor kept, A and B freed
  pinned      four 5 MiB tensors each followed by a 15 MiB one, the 15 MiB ones
              freed, then 25 MiB (tests/progs/rt_torch_caching.c's frag)
  mixed       200 tensors of sizes from 512 B to 300 MiB (a fixed pseudo-random
              sequence), half freed as they go
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SETTINGS = ["default", "expandable_segments:True", "max_split_size_mb:128",
            "roundup_power2_divisions:4",
            "expandable_segments:True,max_split_size_mb:128"]

JOB = r'''
import json, sys, torch
MiB = 1 << 20
def seq(name):
    if name == "loop123548":
        kept = []
        for _ in range(101):
            a = torch.empty(91 * MiB, dtype=torch.uint8, device="cuda")
            b = torch.empty(45 * MiB + 512 * 1024, dtype=torch.uint8, device="cuda")
            kept.append(torch.empty(2 * MiB, dtype=torch.uint8, device="cuda"))
            del a, b
        return kept
    if name == "pinned":
        small, big = [], []
        for _ in range(4):
            small.append(torch.empty(5 * MiB, dtype=torch.uint8, device="cuda"))
            big.append(torch.empty(15 * MiB, dtype=torch.uint8, device="cuda"))
        del big
        return small + [torch.empty(25 * MiB, dtype=torch.uint8, device="cuda")]
    if name == "mixed":
        x, live = 12345, []
        for i in range(200):
            x = (x * 1103515245 + 12345) % (1 << 31)
            size = max(512, (x % (300 * MiB)) >> (x % 12))
            live.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
            if i % 2:
                live.pop(x % len(live))
        return live
    raise SystemExit("no sequence " + name)
keep = seq(sys.argv[1])
torch.cuda.synchronize()
s = torch.cuda.memory_stats()
print("stats: " + json.dumps({"max_reserved": torch.cuda.max_memory_reserved(),
                              "device_allocs": s.get("num_device_alloc", 0),
                              "retries": s.get("num_alloc_retries", 0),
                              "torch": torch.__version__}))
'''


def stats_line(text):
    for line in text.splitlines():
        if line.startswith("stats: "):
            return json.loads(line[7:])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="gpu-whatif")
    args = ap.parse_args()
    probe = subprocess.run([sys.executable, "-c",
                            "import torch; assert torch.cuda.is_available()"],
                           capture_output=True)
    if probe.returncode != 0:
        print("no torch with CUDA here: nothing checked")
        return 0
    gpushim = os.path.join(os.path.abspath(args.build), "gpushim")
    os.makedirs(args.out, exist_ok=True)
    job = os.path.join(args.out, "whatif_job.py")
    with open(job, "w") as f:
        f.write(JOB)
    passed = failed = 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTORCH_")}
    for name in ("loop123548", "pinned", "mixed"):
        trace = os.path.join(args.out, name + ".trace")
        if os.path.exists(trace):
            os.remove(trace)
        rec = subprocess.run([gpushim, "run", "--per-tensor", "-o", trace, "--",
                              sys.executable, job, name], capture_output=True, text=True,
                             env=env)
        if rec.returncode != 0 or not os.path.exists(trace):
            print("%-11s recording failed (%d): %s" % (name, rec.returncode, rec.stderr[-400:]))
            failed += 1
            continue
        argv = [gpushim, "whatif", "--json", trace]
        for s in SETTINGS:
            argv += ["--setting", s]
        w = subprocess.run(argv, capture_output=True, text=True)
        if w.returncode != 0:
            print("%-11s gpushim whatif failed (%d): %s" % (name, w.returncode, w.stderr))
            failed += 1
            continue
        answer = json.loads(w.stdout)
        with open(os.path.join(args.out, name + ".whatif.json"), "w") as f:
            f.write(w.stdout)
        dev = answer["devices"][0]
        model = {o["setting"]: o for o in dev["cards"][-1]["outcomes"]}  # no limit
        for s in SETTINGS:
            # "default" is no setting at all: PyTorch 2.11 aborts on the word
            real = subprocess.run([sys.executable, job, name], capture_output=True, text=True,
                                  env=env if s == "default" else dict(env,
                                                                      PYTORCH_CUDA_ALLOC_CONF=s))
            st = stats_line(real.stdout)
            if real.returncode != 0 or st is None:
                print("%-11s %-48s the job failed (%d): %s"
                      % (name, s, real.returncode, real.stderr[-300:]))
                failed += 1
                continue
            m = model[s]
            same = m["peak_reserved_bytes"] == st["max_reserved"]
            print("%-11s %-48s %s  model %d B (%d driver calls), torch %s %d B (%d device "
                  "allocs, %d retries)"
                  % (name, s, "ok     " if same else "DIFFERS", m["peak_reserved_bytes"],
                     m["cuda_malloc_calls"], st["torch"], st["max_reserved"],
                     st["device_allocs"], st["retries"]))
            passed += same
            failed += not same
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
