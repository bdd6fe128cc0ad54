"""test_python_nogil.py - Python frames of threads that released the GIL
(issue 14), read from memory by the shim, with the real python3 and a C
extension module built here against its own headers
(tests/progs/python/gsext.c: Py_BEGIN_ALLOW_THREADS around the driver call,
as PyTorch's bindings do). Every site is checked by exact function, file
and line; lines come from the "# site: NAME" markers of the programs.
"""
import hashlib
import os
import subprocess

from harness import E, KiB, MiB, check, eq, one_trace, report, report_json, run, shown_path
from test_python import (PROGS, at, check_merged, for_version, libcuda, prog, py_env, python_frames,
                         pythons, version)

EXT_SRC = os.path.join(PROGS, "gsext.c")


def build_ext(py):
    """gsext built for py (its headers, its extension suffix); the folder
    to put on PYTHONPATH."""
    q = subprocess.run([py, "-c", "import sysconfig; p = sysconfig.get_paths()['include']; "
                        "print(p); print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                       capture_output=True, text=True, check=True).stdout.split("\n")
    include, suffix = q[0], q[1]
    check(os.path.exists(os.path.join(include, "Python.h")),
          f"{py}: no Python.h in {include}: install python3-dev (make test-deps)")
    key = hashlib.sha1(os.path.realpath(py).encode()).hexdigest()[:12]
    out = os.path.join(E.build, "pyext", key)
    target = os.path.join(out, "gsext" + suffix)
    sim = os.path.join(E.build, "sim")
    if not os.path.exists(target) or os.path.getmtime(target) < os.path.getmtime(EXT_SRC):
        os.makedirs(out, exist_ok=True)
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer",
                        "-Wall", "-Wextra", "-Werror", "-isystem", include, EXT_SRC, "-o", target,
                        "-L" + sim, "-Wl,-rpath," + sim, "-lcuda", "-lpthread"], check=True)
    return out


def ext_env(py, **more):
    """gsext and the programs on PYTHONPATH. 3.12 and later warn at a fork()
    when the process has other threads, as it has under the shim (its
    writer thread): that warning is not the program's to show here."""
    return dict(py_env(), PYTHONPATH=os.pathsep.join([build_ext(py), PROGS]),
                PYTHONWARNINGS="ignore::DeprecationWarning", **more)


MAIN = ("nogil.py", "<module>", "main")


def via_all_shapes(marker):
    return [at("nogil.py", "all_shapes", marker), at("nogil.py", "main", "shapes"), at(*MAIN)]


def shapes_expected(depth):
    """bytes -> the Python frames of each shape's site, innermost first."""
    s = "shapes.py"
    recursion = [at(s, "recurse", "recursion bottom")] + [at(s, "recurse", "recursion")] * 100
    return {
        64 * KiB: [at(s, "nested_inner", "nested inner"), at(s, "nested_outer", "nested outer")]
        + via_all_shapes("nested"),
        128 * KiB: [at(s, "Layer.forward", "method")] + via_all_shapes("method call"),
        192 * KiB: [at(s, "lambda_site.<locals>.<lambda>", "lambda body"),
                    at(s, "lambda_site", "lambda call")] + via_all_shapes("lambda"),
        256 * KiB: [at(s, "decorated", "decorated"),
                    at(s, "logged.<locals>.wrapper", "decorator wrapper")]
        + via_all_shapes("decorated call"),
        320 * KiB: [at(s, "generator", "generator")] + via_all_shapes("generator next"),
        384 * KiB: [at(s, "coroutine", "coroutine"), at(s, "run_coroutine", "coroutine send")]
        + via_all_shapes("coroutine"),
        448 * KiB: [("<module>", "<generated>", 2), at(s, "exec_site", "exec")]
        + via_all_shapes("exec"),
        512 * KiB: [("<module>", "<string>", 1), at(s, "eval_site", "eval")]
        + via_all_shapes("eval"),
        576 * KiB: (recursion + via_all_shapes("recursion"))[:depth],
        640 * KiB: [at(s, "while_handling", "except")] + via_all_shapes("except"),
    }


def test_frames_read_without_the_gil_from_every_shape_of_code():
    depth = 40  # the recursion is 100 deep
    for py in pythons():
        r = run([py, prog("nogil.py")], env=ext_env(py, GPUSHIM_STACK_DEPTH=str(depth)))
        eq((r.rc, r.out, r.err), (0, "child exited 0 collected some\n", ""),
           f"{py}: the run, finalizers collected meanwhile")
        eq(len(r.files), 2, f"{py}: a trace for the parent and one for the child")
        d, c = (report_json(t) for t in r.files)
        if d["process"]["ppid"] == c["process"]["pid"]:  # d is the child
            d, c = c, d
        eq(c["process"]["ppid"], d["process"]["pid"], f"{py}: a parent and its child")
        sites = {s["bytes"]: s for s in d["leaks"]["sites"]}
        want = {size: for_version(py, f) for size, f in shapes_expected(depth).items()}
        threads = sum(EACH * (1 * MiB + k * 64 * KiB) for k in range(4))
        eq(sorted(sites), sorted(list(want) + [832 * KiB, threads, 2 * 768 * KiB]),
           f"{py}: one site per line, each by its bytes")
        for size, frames in want.items():
            s = sites[size]
            eq((s["count"], s["gil"]), (1, False), f"{py}: {size // KiB} KiB: one, without the GIL")
            eq(python_frames(s), frames, f"{py}: {size // KiB} KiB: its Python frames")
            check_merged(s, f"{py}: {size // KiB} KiB")
        held = sites[832 * KiB]
        eq((held["gil"], python_frames(held)),
           (True, [at("nogil.py", "main", "with the GIL"), at(*MAIN)]), f"{py}: with the GIL")
        t = sites[threads]
        eq((t["count"], t["gil"]), (4 * EACH, False), f"{py}: four threads' allocations, one site")
        eq(python_frames(t)[0], at("nogil.py", "worker", "thread"), f"{py}: the threads' line")
        eq([(fn, os.path.basename(f)) for fn, f, _ in python_frames(t)[1:]],
           [(fn, f) for fn, f, _ in for_version(py, [("Thread.run", "threading.py", 0),
                                                     ("Thread._bootstrap_inner", "threading.py", 0),
                                                     ("Thread._bootstrap", "threading.py", 0)])],
           f"{py}: the threads' start")
        engine = sites[2 * 768 * KiB]
        eq((engine["count"], engine["gil"], python_frames(engine), engine["threads"]),
           (2, False, [], [{"name": "pt_autograd_0", "allocations": 2}]),
           f"{py}: the engine thread never ran Python: native frames only, and its name")

        eq([(s["bytes"], s["gil"], python_frames(s)) for s in c["leaks"]["sites"]],
           [(704 * KiB, False, [at("nogil.py", "main", "child"), at(*MAIN)])],
           f"{py}: the forked child's own frames")


EACH = 8


def test_ctypes_cdll_loop_has_its_two_lines_and_the_leak_as_suspect():
    """The issue's case: a 20-step loop through ctypes.CDLL (which releases
    the GIL), one line keeping 1 MiB a step, another allocating 4 MiB and
    freeing it; run in a few milliseconds."""
    py = pythons()[0]
    r = run([py, prog("cdll_loop.py"), libcuda()], env=py_env())
    eq((r.rc, r.out, r.err), (0, "20 steps\n", ""), "the run")
    d = report_json(one_trace(r))
    loop = "cdll_loop.py"
    leak = [at("cuda.py", "Driver.alloc", "alloc"), at(loop, "step", "kept"),
            at(loop, "main", "step"), at(loop, "<module>", "main")]
    temp = [at("cuda.py", "Driver.alloc", "alloc"), at(loop, "step", "temporary"),
            at(loop, "main", "step"), at(loop, "<module>", "main")]
    eq([(s["bytes"], s["count"], s["gil"], python_frames(s)) for s in d["leaks"]["sites"]],
       [(20 * MiB, 20, False, leak)], "the kept line, unfreed")
    peak = {s["bytes"]: python_frames(s) for s in d["peak"]["sites"]}
    eq(peak, {20 * MiB: leak, 4 * MiB: temp}, "at the peak: both lines, apart")
    suspects = d["leaks"]["suspects"]
    eq([python_frames(s) for s in suspects], [leak], "the kept line is the one suspect")
    text = report(one_trace(r)).stdout
    check("did not hold the GIL" not in text, "no no-GIL label")


def test_the_sim_torch_example_leads_with_the_line_that_keeps_the_tensors():
    """examples/sim_torch/leak.py (make demo-python): pytorch_leak.py's loop,
    its tensors allocated with the GIL released."""
    ext = os.path.join(E.build, "examples", "python")
    check(os.path.isdir(ext) and any(f.startswith("simtensor") for f in os.listdir(ext)),
          "the example's extension was built (python3-dev)")
    example = os.path.join(os.path.dirname(PROGS), "..", "..", "examples", "sim_torch", "leak.py")
    example = os.path.realpath(example)
    py = pythons()[0]
    r = run([py, example], env=dict(py_env(), PYTHONPATH=ext))
    eq((r.rc, r.out, r.err), (0, "50 steps\n", ""), "the run")
    d = report_json(one_trace(r))

    def line(text):
        with open(example) as f:
            return next(n for n, l in enumerate(f, 1) if text in l)

    kept = [("Model.forward", example, line("        h = Tensor(32 * MiB")),
            ("train_step", example, line("    loss = model.forward(x)")),
            ("main", example, line("        train_step(model, losses)")),
            ("<module>", example, line("    main()"))]
    suspects = d["leaks"]["suspects"]
    check(suspects, "leak suspects")
    eq((python_frames(suspects[0]), suspects[0]["gil"]), (kept, False),
       "the first suspect: the activation forward() makes, kept by the loss train_step keeps")
    top = d["peak"]["sites"][0]
    eq((top["bytes"], top["count"], python_frames(top)), (50 * 32 * MiB, 50, kept),
       "at the peak: 50 steps' activations, by the same line")
    text = report(one_trace(r)).stdout
    lead = text[text.index("Leak suspects"):].splitlines()[1:3]
    check(f"from Model.forward  {shown_path(example)}:{kept[0][2]}" in lead[1],
          f"the text report's first suspect names the line: {lead}")


def test_code_objects_freed_and_made_again_keep_their_own_names():
    """A code object seen only without the GIL is not pinned: when it is
    freed and another is made at its address, the other must not be named
    by the first (the fingerprint of what the frame shows)."""
    for py in pythons():
        r = run([py, prog("code_reuse.py")], env=ext_env(py))
        eq((r.rc, r.out, r.err), (0, "20 made\n", ""), f"{py}: the run")
        d = report_json(one_trace(r))
        got = sorted((s["bytes"] // KiB, python_frames(s)[0], s["gil"]) for s in d["leaks"]["sites"])
        eq(got, [(i + 1, (f"f_{i}", "<made>", 2), False) for i in range(20)],
           f"{py}: each allocation by its own function")


def test_code_objects_are_watched_where_the_interpreter_lets_them_be():
    """3.12 and later call code watchers before a code object is destroyed:
    the shim asks the main thread for one (Py_AddPendingCall) at its first
    frames read, and then takes a code object seen before by its address
    for as long as none is destroyed (shim/record/python.c). What the test
    above checks is then what the count of destructions keeps right; here,
    that the watcher is there where it can be, said once, and only there."""
    for py in pythons():
        r = run([py, prog("code_reuse.py")], env=ext_env(py, GPUSHIM_VERBOSE="1"))
        eq((r.rc, r.out), (0, "20 made\n"), f"{py}: the run")
        said = [l for l in r.err.splitlines() if "code objects watched" in l]
        eq(len(said), 1 if version(py) >= (3, 12) else 0, f"{py}: the watcher said: {r.err}")
        d = report_json(one_trace(r))
        eq(sorted(python_frames(s)[0][0] for s in d["leaks"]["sites"]),
           sorted(f"f_{i}" for i in range(20)), f"{py}: each allocation by its own function")
    if not any(version(py) >= (3, 12) for py in pythons()):
        return "no CPython 3.12 or later here: only that none before is watched was checked"


def test_with_every_code_watcher_taken_code_objects_are_checked_at_each_frame():
    """Another tool may have taken the interpreter's 8 code watchers: the
    shim says it could add none, and names each frame by checking its code
    object as before 3.12."""
    newer = [py for py in pythons() if version(py) >= (3, 12)]
    if not newer:
        return "no CPython 3.12 or later here"
    for py in newer:
        r = run([py, prog("code_reuse.py"), "--take-watchers"],
                env=ext_env(py, GPUSHIM_VERBOSE="1"))
        eq((r.rc, r.out), (0, "20 made\n"), f"{py}: the run")
        d = report_json(one_trace(r))
        got = sorted((s["bytes"] // KiB, python_frames(s)[0]) for s in d["leaks"]["sites"])
        eq(got, [(i + 1, (f"f_{i}", "<made>", 2)) for i in range(20)],
           f"{py}: each allocation by its own function")
        said = [l for l in r.err.splitlines() if "code watcher" in l or "code objects watched" in l]
        eq(len(said), 1, f"{py}: said once: {r.err}")
        check("no code watcher could be added" in said[0], f"{py}: {said[0]}")

