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
            read without the GIL (PyTorch's bindings release it), and it grew
            by the tensors the job kept (freed only at its exit).
  autograd  backward on the engine's threads: an allocation made by
            MulBackward0 on pt_autograd_0 is labelled with the thread and
            "backward of mul".
  graphs    torch.cuda.graph under backend:cudaMallocAsync (gpushim run
            --per-tensor): the tensors made under capture are graph
            allocation nodes; the launches gpushim counts are the replays,
            and the graph pool's reserved bytes it reports are the driver's
            (cudaDeviceGetGraphMemAttribute, read by the job through ctypes).
  graphnat  torch.cuda.graph with the default caching allocator: its private
            pool's segments are ordinary device memory (cudaMalloc under
            relaxed capture), so the device peak is reserved_bytes.all.peak.
  streams   the pluggable allocator with gpushim_torch_record_stream and
            gpushim_torch_empty_cache installed (docs/api.md "PyTorch
            pluggable allocator"): a tensor used on a side stream and recorded there,
            freed, and its memory asked for again on the first stream; the
            side stream's result is right, and every tensor is one
            allocation gpushim recorded.
  module    the gpushim Python module on PyTorch 2.x (docs/api.md "Python"):
            use_allocator() and mark_steps(optimizer) in a loop of 4 steps
            whose forward is an NVTX range (torch.cuda.nvtx.range_push): 4
            "step" marks, each tensor one allocation, a range "forward" that
            ended 4 times, the Linear's 4 MiB of weights among the parameters
            by role.
  viewers   that trace's torch-snapshot export read by this PyTorch's own
            torch/cuda/_memory_viz.py (segsum, trace).
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
    "graphs": r'''
import ctypes, json, torch
x = torch.randn(1 << 20, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):  # warm-up, as torch.cuda.graph's documentation asks
    y = x * 2
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    t = x * 3  # made under capture: a graph allocation node
    y = t + 1
for _ in range(5):
    g.replay()
torch.cuda.synchronize()
rt = ctypes.CDLL("libcudart.so.13")
v = ctypes.c_uint64()
rt.cudaDeviceGetGraphMemAttribute(0, 2, ctypes.byref(v))  # cudaGraphMemAttrReservedMemCurrent
print("stats: " + json.dumps({"replays": 5, "graph_reserved": v.value}))
''',
    "graphnat": r'''
import json, torch
x = torch.randn(1 << 22, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x * 2
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 3 + 1
for _ in range(3):
    g.replay()
torch.cuda.synchronize()
st = torch.cuda.memory_stats()
print("stats: " + json.dumps({"reserved_bytes.all.peak": st["reserved_bytes.all.peak"]}))
''',
    "streams": r'''
import ctypes, json, os, torch
path = os.environ["GPUSHIM_LIB"]
alloc = torch.cuda.memory.CUDAPluggableAllocator(path, "gpushim_torch_alloc", "gpushim_torch_free")
lib = ctypes.CDLL(path)
fn = lambda name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
alloc.allocator().set_record_stream_fn(fn("gpushim_torch_record_stream"))
alloc.allocator().set_reset_fn(fn("gpushim_torch_empty_cache"))
torch.cuda.memory.change_current_allocator(alloc)
side = torch.cuda.Stream()
made = 0
ok = True
for i in range(10):
    a = torch.full((1 << 22,), float(i), device="cuda"); made += 1
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(1000000)  # the side stream is still busy when a is freed
        b = a * 2; made += 1
    a.record_stream(side)
    del a
    c = torch.zeros(1 << 22, device="cuda"); made += 1  # may reuse a's memory only after side
    torch.cuda.current_stream().wait_stream(side)
    ok = ok and bool((b == 2.0 * i).all().item())
    del b, c
torch.cuda.synchronize()
torch.cuda.empty_cache()
print("stats: " + json.dumps({"correct": ok, "tensors": made}))
''',
    "module": r'''
import json, torch
import gpushim, gpushim.torch
gpushim.torch.use_allocator()
model = torch.nn.Linear(1024, 1024).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
gpushim.torch.mark_steps(opt)
for i in range(4):
    torch.cuda.nvtx.range_push("forward")
    loss = model(torch.ones(64, 1024, device="cuda")).sum()
    torch.cuda.nvtx.range_pop()
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("stats: " + json.dumps({"loaded": gpushim.loaded()}))
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
        if r.returncode in (0, 4):  # 4: read, and incomplete ("complete", "warnings" say why)
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
        # the kept tensors are freed at the interpreter's exit (40 allocations,
        # 40 frees on PyTorch 2.11): the suspect's growth is what was kept
        check("pertensor", "the suspect grew by the tensors kept",
              first.get("growth_bytes"), s["kept_bytes"])
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

    rc, s, d, _ = run_job("graphs", build, a.out, {}, per_tensor=True)
    if d and s and d.get("graphs"):
        pools = d["graphs"]["pools"]
        check("graphs", "launches = the replays", sum(p["launches"] for p in pools), s["replays"])
        check("graphs", "graph pool reserved = the driver's",
              sum(p["sampled_reserved_bytes"] for p in pools), s["graph_reserved"])
        check("graphs", "allocation nodes recorded", d["graphs"]["memory_nodes"] > 0, True)
    else:
        check("graphs", "the job ran and recorded graphs", (rc, bool(d and d.get("graphs"))),
              (0, True))

    rc, s, d, _ = run_job("graphnat", build, a.out, {})
    if d and s:
        check("graphnat", "device peak = reserved_bytes.all.peak", d["peak"]["bytes"],
              s["reserved_bytes.all.peak"])
    else:
        check("graphnat", "the job ran", rc, 0)

    rc, s, d, _ = run_job("streams", build, a.out,
                          {"GPUSHIM_LIB": os.path.join(build, "libgpushim.so")})
    if d and s:
        check("streams", "the side stream's results are right", s["correct"], True)
        check("streams", "every tensor one allocation",
              d["events"]["allocations"] >= s["tensors"], True)
    else:
        check("streams", "the job ran", rc, 0)

    rc, s, d, _ = run_job("module", build, a.out,
                          {"PYTHONPATH": os.path.join(HERE, "..", "python")})
    if d and s:
        check("module", "the shim found", s["loaded"], True)
        check("module", "step marks", [m["label"] for m in d["marks"]].count("step"), 4)
        # cublasCreate_v2 takes its own workspace with cuMemAlloc_v2 (seen on 2.11)
        check("module", "every tensor through gpushim_torch_alloc, cuBLAS's own aside",
              {x["api"] for x in d["peak"]["sites"]
               if not any("libcublas" in (f["module"] or "") for f in x["frames"])},
              {"gpushim_torch_alloc"})
        forward = [n for n in (d["ranges"] or {}).get("nodes", []) if n["label"] == "forward"]
        check("module", "the NVTX range forward ended 4 times",
              [n["ended"] for n in forward], [4])
        roles = d["roles"]["at_peak"] or {}
        check("module", "roles told, with the Linear's weights as parameters",
              (d["roles"]["not_told"], roles.get("parameters", 0) >= 1024 * 1024 * 4),
              (None, True))
    else:
        check("module", "the job ran", rc, 0)

    # the torch-snapshot export, read by this PyTorch's own memory_viz
    # (segsum and trace are 2.x's; tests/integration/test_export_viewers.py
    # runs 1.13's stats, segments and memory)
    snap = os.path.join(a.out, "module.pickle")
    subprocess.run([os.path.join(build, "gpushim"), "export", "--format=torch-snapshot", "-o",
                    snap, os.path.join(a.out, "module.trace")], capture_output=True)
    q = subprocess.run([sys.executable, "-c",
                        "import pickle, sys\nfrom torch.cuda import _memory_viz as mv\n"
                        "s = pickle.load(open(sys.argv[1], 'rb'))\n"
                        "mv.segsum(s); mv.trace(s); print('read')", snap],
                       capture_output=True, text=True)
    check("viewers", "memory_viz's segsum and trace read the torch-snapshot export",
          q.stdout.strip() or q.stderr.strip()[-300:], "read")

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed (traces and reports in {a.out})")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
