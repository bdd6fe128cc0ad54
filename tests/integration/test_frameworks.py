"""test_frameworks.py - what a trace can see under each framework's allocator
settings (issue 5, item 2): the settings are recorded, the framework is named
from the modules on the allocation's stack, the report says whether sizes are
tensors or a caching allocator's segments, and `gpushim run --per-tensor`
sets what makes each tensor a driver allocation, merged with the user's own.
"""
import os
import subprocess
import tempfile

from harness import E, check, eq, launcher_env, one_trace, report, report_json, run

SETTINGS = ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING",
            "XLA_PYTHON_CLIENT_ALLOCATOR", "XLA_PYTHON_CLIENT_PREALLOCATE",
            "XLA_PYTHON_CLIENT_MEM_FRACTION", "TF_GPU_ALLOCATOR", "TF_FORCE_GPU_ALLOW_GROWTH"]


def stub(name):
    return os.path.join(E.build, "progs", "fw", name)


def framework_run(library, settings, *more):
    env = {k: None for k in SETTINGS}  # none from the test's own environment
    env.update(settings)
    r = run([E.prog("drv_framework"), stub(library), *more], env=env)
    eq(r.rc, 0, "status: " + r.err)
    return one_trace(r)


CASES = [
    ("libc10_cuda.so", {}, "pytorch", False, "PyTorch caching allocator: sizes are segments"),
    ("libc10_cuda.so", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, "pytorch", False,
     "PyTorch expandable segments"),
    ("libc10_cuda.so", {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}, "pytorch", True,
     "PyTorch with backend:cudaMallocAsync"),
    # the newer name stands over the older one, as in PyTorch
    ("libc10_cuda.so", {"PYTORCH_ALLOC_CONF": "backend:cudaMallocAsync",
                        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, "pytorch", True,
     "PyTorch with backend:cudaMallocAsync"),
    ("libc10_cuda.so", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, "pytorch", True,
     "PyTorch without caching"),
    ("xla_extension.so", {}, "jax", False, "JAX preallocates most of the device"),
    ("xla_extension.so", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, "jax", False,
     "JAX's BFC allocator"),
    ("xla_extension.so", {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}, "jax", True,
     "JAX with XLA_PYTHON_CLIENT_ALLOCATOR=platform"),
    ("libtensorflow_framework.so.2", {}, "tensorflow", False, "TensorFlow's BFC allocator"),
    ("libtensorflow_framework.so.2", {"TF_GPU_ALLOCATOR": "cuda_malloc_async"}, "tensorflow",
     True, "TensorFlow with TF_GPU_ALLOCATOR=cuda_malloc_async"),
]


def test_framework_and_allocator_settings_say_what_sizes_are():
    for library, settings, framework, per_tensor, note in CASES:
        d = report_json(framework_run(library, settings))
        a = d["allocator"]
        what = f"{library} with {settings}"
        eq(a["settings"], settings, f"{what}: the settings recorded")
        eq((a["frameworks"], a["per_tensor"]), ([framework], per_tensor), what)
        check(a["note"].startswith(note), f"{what}: note {a['note']!r}")
    # PyTorch's pluggable allocator, gpushim's (gpushim.torch.use_allocator):
    # tensors whatever the settings say
    a = report_json(framework_run("libc10_cuda.so", {}, E.shim))["allocator"]
    eq((a["frameworks"], a["per_tensor"]), (["pytorch"], True), "gpushim's allocator")
    check(a["note"].startswith("PyTorch with gpushim's allocator (gpushim.torch.use_allocator)"),
          f"gpushim's allocator: note {a['note']!r}")
    plain = report_json(one_trace(run([E.prog("drv_schedule")],
                                      env={k: None for k in SETTINGS})))["allocator"]
    eq((plain["frameworks"], plain["per_tensor"], plain["note"]), ([], None, None),
       "no framework: nothing said")
    text = report(framework_run("libc10_cuda.so", {})).stdout
    check("  allocator PyTorch caching allocator: sizes are segments, not tensors; run with "
          "--per-tensor to see tensors\n" in text, "the text report says it: " + text)


def test_run_per_tensor_merges_with_the_users_settings():
    tmp = tempfile.mkdtemp(prefix="gpushim-pertensor-")
    env = launcher_env()
    for k in SETTINGS:
        env.pop(k, None)
    env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True, backend:native,roundup_power2_divisions:4"
    env["XLA_PYTHON_CLIENT_ALLOCATOR"] = "bfc"
    p = subprocess.run([E.gpushim, "run", "--per-tensor", "-o", os.path.join(tmp, "t.trace"), "--",
                        E.prog("drv_framework"), stub("libc10_cuda.so")],
                       capture_output=True, text=True, env=env)
    eq(p.returncode, 0, "status: " + p.stderr)
    merged = "expandable_segments:True,roundup_power2_divisions:4,backend:cudaMallocAsync"
    said = [l for l in p.stderr.splitlines() if l.startswith("gpushim: per tensor, set")]
    eq(said, [f"gpushim: per tensor, set for the program: PYTORCH_CUDA_ALLOC_CONF={merged} "
              f"PYTORCH_ALLOC_CONF={merged} XLA_PYTHON_CLIENT_ALLOCATOR=platform "
              "XLA_PYTHON_CLIENT_PREALLOCATE=false TF_GPU_ALLOCATOR=cuda_malloc_async"],
       "says what it set, as assignments a shell reads back: " + p.stderr)
    cannot = [l for l in p.stderr.splitlines() if "under PyTorch's cudaMallocAsync backend" in l]
    eq(len(cannot), 1, "says once what the backend cannot do: " + p.stderr)
    for what in ('torch.compile(mode="reduce-overhead")', "torch.multiprocessing",
                 "torch.cuda.memory._record_memory_history", "without --per-tensor"):
        check(what in cannot[0], f"names {what}: {cannot[0]}")
    a = report_json(os.path.join(tmp, "t.trace"))["allocator"]
    eq(a["settings"], {"PYTORCH_CUDA_ALLOC_CONF": merged, "PYTORCH_ALLOC_CONF": merged,
                       "XLA_PYTHON_CLIENT_ALLOCATOR": "platform",
                       "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                       "TF_GPU_ALLOCATOR": "cuda_malloc_async"}, "what the job ran with")
    eq((a["per_tensor"], a["frameworks"]), (True, ["pytorch"]), "per tensor")
