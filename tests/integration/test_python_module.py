"""test_python_module.py - the gpushim Python module (python/gpushim): marks,
regions (with and as a decorator, closed by an exception too), flush and
loaded() with the real python3, under the shim and without it (every call
does nothing); gpushim.torch.mark_steps on Debian's python3-torch (1.13, from
before optimizer hooks: the step is wrapped) with a real torch.optim.SGD, and
use_allocator's answer there. The hook path of PyTorch 2.0 and later and the
pluggable allocator need a PyTorch this machine does not have (Debian's is
1.13): examples/gpu_torch_check.py checks them on a GPU machine.
"""
import os
import subprocess

from harness import E, MiB, check, eq, once, one_trace, report, report_json, run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PROG = os.path.join(ROOT, "tests", "progs", "python", "module_loop.py")


def env(**more):
    e = {"PYTHONPATH": os.path.join(ROOT, "python") + ":" + os.path.dirname(PROG),
         "ASAN_OPTIONS": "detect_leaks=0"}
    if E.sanitized:  # the simulated driver is sanitized too: its runtime must come first
        e["LD_LIBRARY_PATH"] = os.path.join(E.build, "sim")
    e.update(more)
    return e


def libcuda():
    return os.path.join(E.build, "sim", "libcuda.so.1")


def test_module_without_the_shim_does_nothing():
    e = env()
    if E.sanitized:
        e["LD_PRELOAD"] = E.preload.split(":")[0]
    r = run(["python3", PROG, libcuda()], shim=False, env=e)
    eq((r.rc, r.out, r.files), (0, "not loaded\ndone\n", []), f"without the shim: {r.err}")
    p = subprocess.run(["python3", "-c", "import gpushim; print(gpushim.loaded(), "
                        "gpushim.library_path())"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    eq((p.returncode, p.stdout), (0, "False None\n"), f"loaded(): {p.stderr}")


def test_module_marks_regions_and_flush():
    r = run(["python3", PROG, libcuda()], env=env())
    eq((r.rc, r.out), (0, "loaded\ndone\n"), f"under the shim: {r.err}")
    d = report_json(one_trace(r))
    eq([(n["path"], n["ended"], n["peak_max_bytes"], n["allocated_max_bytes"],
         n["kept_last_bytes"], n["kept_instances"]) for n in d["ranges"]["nodes"]],
       [("step", 3, 12 * MiB, 6 * MiB, 1 * MiB, 3),
        ("step > forward", 3, 9 * MiB, 3 * MiB, 3 * MiB, 3),
        ("step > backward", 3, 12 * MiB, 3 * MiB, 0, 0),
        ("failing", 1, 7 * MiB, 0, 0, 0)],
       "regions: path, ended, peak, most made in one, kept last, kept in")
    eq(d["ranges"]["open"], [], "the region an exception left is closed")
    eq([m["label"] for m in d["marks"]], ["load", "step", "step", "step", "failing"],
       "a thread's first region is a mark")
    # each region "step" is a step, to its end; "failing" too; the one mark
    # "load" begins a step that runs to the end of the run (weights 4 MiB,
    # the history's 3 x 1 MiB)
    eq([(s["label"], s["growth_bytes"]) for s in d["steps"]],
       [("step", 1 * MiB), ("step", 1 * MiB), ("step", 1 * MiB), ("failing", 0),
        ("load", 7 * MiB)], "a step per region, each to its end")
    text = report(one_trace(r)).stdout
    check("    backward " in text, f"the text report's table:\n{text}")


def debian_torch():
    p = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


@once("the Python module on Debian's PyTorch, whose import under the sanitizers takes most of the test")
def test_mark_steps_with_a_real_optimizer():
    version = debian_torch()
    if not version:
        return "no python3-torch for /usr/bin/python3 (make deps installs it)"
    r = run(["/usr/bin/python3", PROG, libcuda(), "torch"], env=env())
    eq(r.rc, 0, f"under the shim: {r.err}")
    lines = r.out.splitlines()
    eq((lines[0], lines[-1]), ("loaded", "done"), f"output: {r.out}")
    if version.split(".")[0] < "2":
        eq(lines[1], "use_allocator: gpushim.torch.use_allocator needs PyTorch 2.0 or later "
                     f"(torch.cuda.memory.CUDAPluggableAllocator); this is {version}: run with "
                     "`gpushim run --per-tensor` for tensors instead", "a clear refusal")
    d = report_json(one_trace(r))
    # forward and backward are outermost regions here: marks of their own
    # mark_steps marks "step" once when called (the first step begins), then
    # ends a step after each optimizer step
    eq([m["label"] for m in d["marks"]],
       ["load", "step"] + ["forward", "backward", "step"] * 3 + ["forward", "backward", "failing"],
       "three optimizer steps marked, the fourth not (its hook removed)")
    eq([(s["label"], s["growth_bytes"]) for s in d["steps"] if s["label"] == "step"],
       [("step", 1 * MiB)] * 3, "three optimizer steps are three steps, the first included")
