"""gpu_torch_check.py - the prepared check for a machine with a GPU and
PyTorch: runs small PyTorch jobs under gpushim, each in a process of its own,
and compares what gpushim reports with PyTorch's own counters
(torch.cuda.memory_stats) and with what the job knows of its own lines.

    python3 examples/gpu_torch_check.py [--build build] [--out gpu-torch]

Each job prints its counters as one JSON line ("stats: {...}"); this script
reads the trace with `gpushim report --json` and prints one line per check,
"ok" or "DIFFERS", then "N passed, N failed". It needs nothing but the
standard library here; the jobs need torch with CUDA. Without a GPU it says
so and exits 0.

The jobs, and what each check compares:

  caching   the default caching allocator: gpushim records segments, so the
            device peak it reports is PyTorch's reserved_bytes.all.peak, and
            the segments it counts are PyTorch's segment allocations
            (num_device_alloc, num_device_free).
  retry     the caching allocator near capacity: a tensor that does not fit
            until the cache is emptied, so PyTorch frees its cached segments
            and retries (num_alloc_retries >= 1); gpushim's failed
            allocations are that many, and the job goes on.
  expand    expandable_segments:True: the device peak is reserved_bytes.all.peak.
  pertensor backend:cudaMallocAsync (gpushim run --per-tensor): a leak of one
            tensor a step from a known line; the leak suspect is that line,
            read without the GIL (PyTorch's bindings release it), and the
            unfreed bytes are the tensors the job kept.
  autograd  backward on the engine's threads: an allocation made by
            MulBackward0 on pt_autograd_0 is labelled with the thread and
            "backward of mul".
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

JOBS = {
    "caching": r'''
import json, torch
x = [torch.empty(n << 20, dtype=torch.uint8, device="cuda") for n in (1, 3, 12, 40, 100)]
del x[1]
y = torch.empty(2 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
s = torch.cuda.memory_stats()
print("stats: " + json.dumps({k: s[k] for k in ("reserved_bytes.all.peak", "num_device_alloc",
                                                "num_device_free", "num_alloc_retries")}))
''',
    "retry": r'''
import json, torch
free, total = torch.cuda.mem_get_info()
big = int(free * 0.45) & ~((2 << 20) - 1)
a = torch.empty(big, dtype=torch.uint8, device="cuda")
b = torch.empty(big // 2, dtype=torch.uint8, device="cuda")
del b  # cached, not freed: its segment stays reserved
c = torch.empty(big // 2 + (64 << 20), dtype=torch.uint8, device="cuda")  # does not fit with b's segment
torch.cuda.synchronize()
s = torch.cuda.memory_stats()
print("stats: " + json.dumps({k: s[k] for k in ("reserved_bytes.all.peak", "num_alloc_retries",
                                                "num_ooms")}))
''',
    "expand": r'''
import json, torch
x = [torch.empty(n << 20, dtype=torch.uint8, device="cuda") for n in (1, 3, 12, 40, 100)]
del x[2]
y = torch.empty(30 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
s = torch.cuda.memory_stats()
print("stats: " + json.dumps({"reserved_bytes.all.peak": s["reserved_bytes.all.peak"]}))
''',
    "pertensor": r'''
import json, torch
kept = []
def step(i):
    t = torch.empty(4 << 20, dtype=torch.uint8, device="cuda")  # line: kept
    kept.append(t)
    tmp = torch.empty(16 << 20, dtype=torch.uint8, device="cuda")
    del tmp
for i in range(20):
    step(i)
torch.cuda.synchronize()
print("stats: " + json.dumps({"kept_bytes": sum(t.numel() for t in kept)}))
''',
    "autograd": r'''
import json, torch
w = torch.randn(1024, 1024, device="cuda", requires_grad=True)
for _ in range(3):
    (w * w).sum().backward()
torch.cuda.synchronize()
print("stats: " + json.dumps({}))
''',
}


def line_of(source, marker):
    for n, text in enumerate(source.splitlines(), 1):
        if text.rstrip().endswith("# line: " + marker):
            return n
    raise ValueError(marker)


def run_job(name, build, out, env_extra, per_tensor=False):
    src = JOBS[name]
    path = os.path.join(out, name + ".py")
    with open(path, "w") as f:
        f.write(src.lstrip("\n"))
    trace = os.path.join(out, name + ".trace")
    for old in (trace,):
        if os.path.exists(old):
            os.unlink(old)
    cmd = [os.path.join(build, "gpushim"), "run", "-o", trace]
    if per_tensor:
        cmd.append("--per-tensor")
    cmd += ["--", sys.executable, path]
    env = dict(os.environ, **env_extra)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    with open(os.path.join(out, name + ".out"), "w") as f:
        f.write(p.stdout + p.stderr)
    stats = None
    for l in p.stdout.splitlines():
        if l.startswith("stats: "):
            stats = json.loads(l[len("stats: "):])
    report = None
    if os.path.exists(trace):
        r = subprocess.run([os.path.join(build, "gpushim"), "report", "--json", trace],
                           capture_output=True, text=True)
        if r.returncode == 0:
            report = json.loads(r.stdout)
            with open(trace + ".json", "w") as f:
                f.write(r.stdout)
    return p.returncode, stats, report, path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--out", default="gpu-torch")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__, "
                            "torch.cuda.is_available())"], capture_output=True, text=True)
    if probe.returncode != 0 or not probe.stdout.strip().endswith("True"):
        print(f"no torch with a GPU here ({(probe.stdout + probe.stderr).strip()[-200:]}): nothing to check")
        return 0
    print("torch", probe.stdout.strip())
    os.makedirs(a.out, exist_ok=True)
    results = []

    def check(name, what, got, want):
        ok = got == want
        results.append(ok)
        print(f"{'ok     ' if ok else 'DIFFERS'} {name}: {what}: gpushim {got!r}, PyTorch {want!r}")

    rc, s, d, _ = run_job("caching", build, a.out, {})
    if d and s:
        check("caching", "device peak = reserved_bytes.all.peak", d["peak"]["bytes"],
              s["reserved_bytes.all.peak"])
        check("caching", "allocations, frees = num_device_alloc, num_device_free",
              (d["events"]["allocations"], d["events"]["frees"]),
              (s["num_device_alloc"], s["num_device_free"]))
    else:
        check("caching", "the job ran", rc, 0)

    rc, s, d, _ = run_job("retry", build, a.out, {})
    if d and s:
        check("retry", "the job went on after its retries", rc, 0)
        check("retry", "failed allocations = num_alloc_retries", d["events"]["failed"],
              s["num_alloc_retries"])
        check("retry", "device peak = reserved_bytes.all.peak", d["peak"]["bytes"],
              s["reserved_bytes.all.peak"])
        outcomes = sorted({f.get("outcome") for f in d["failures"]} - {None})
        check("retry", "failure outcomes", outcomes, ["recovered"] if d["failures"] else [])
    else:
        check("retry", "the job ran", rc, 0)

    rc, s, d, _ = run_job("expand", build, a.out,
                          {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    if d and s:
        check("expand", "device peak = reserved_bytes.all.peak", d["peak"]["bytes"],
              s["reserved_bytes.all.peak"])
    else:
        check("expand", "the job ran", rc, 0)

    rc, s, d, path = run_job("pertensor", build, a.out, {}, per_tensor=True)
    if d and s:
        kept = line_of(JOBS["pertensor"].lstrip("\n"), "kept")
        sus = d["leaks"]["suspects"]
        first = sus[0] if sus else {"frames": [], "gil": None}
        py = [(f["function"], f["line"]) for f in first["frames"] if f["language"] == "python"]
        check("pertensor", "the leak suspect's line, and the GIL", (py[:1], first["gil"]),
              ([("step", kept)], False))
        check("pertensor", "unfreed bytes at that line >= the tensors kept",
              any(x["bytes"] >= s["kept_bytes"] for x in d["leaks"]["sites"]), True)
    else:
        check("pertensor", "the job ran", rc, 0)

    rc, s, d, _ = run_job("autograd", build, a.out, {}, per_tensor=True)
    if d:
        labels = {(t["name"], x.get("backward_of")) for x in d["leaks"]["sites"] + d["peak"]["sites"]
                  for t in x.get("threads", []) if t["name"] and t["name"].startswith("pt_autograd")}
        check("autograd", "a site on pt_autograd_N labelled backward of mul",
              any(b == "mul" for _, b in labels), True)
    else:
        check("autograd", "the job ran", rc, 0)

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed (traces and reports in {a.out})")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
