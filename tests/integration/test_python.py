"""test_python.py - Python frames (issue 5): Python programs
(tests/progs/python/) call the simulated driver through ctypes from nested
functions in three files; the reports must name the exact file, function
and line of each Python frame, Python frames standing where the
interpreter's frames stood, and label the allocation made without the GIL.
Lines are found by their "# site: NAME" markers in the programs.

Each test runs with every distinct python3 found (the one on PATH and
/usr/bin/python3): one may keep the interpreter in libpython, the other in
its executable, and the merge must find it in either.
"""
import glob
import os
import shutil
import subprocess
import sys

from harness import (E, KiB, MiB, check, eq, one_trace, report, report_json, run, same_behaviour,
                     shown_path)

PROGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "progs", "python")
PROGS = os.path.realpath(PROGS)


def py_env():
    """A sanitized shim in a program that leaks by design: no LeakSanitizer.
    The sanitized driver needs the sanitizer's runtime first, also when
    python runs without the shim."""
    env = {"ASAN_OPTIONS": "detect_leaks=0"}
    if E.sanitized:
        env["LD_PRELOAD"] = E.preload.split(":")[0]
    return env


_pythons = None


def pythons():
    """Distinct python3 interpreters with the GIL, 3.9 or later, by the file
    they run: the one on PATH first, /usr/bin's, and every version pyenv
    installed (where it did: each CPython version lays its frames out its
    own way, and the shim reads them from memory)."""
    global _pythons
    if _pythons is None:
        root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
        found = [shutil.which("python3"), "/usr/bin/python3"]
        found += sorted(glob.glob("/usr/bin/python3.[0-9]*") + glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3")))
        seen, _pythons = set(), []
        for p in found:
            if not p or not os.path.exists(p) or os.path.realpath(p) in seen:
                continue
            seen.add(os.path.realpath(p))
            q = subprocess.run([p, "-c", "import sys, sysconfig; print(sys.version_info >= (3, 9) "
                                "and not sysconfig.get_config_var('Py_GIL_DISABLED'))"],
                               capture_output=True, text=True)
            if q.stdout.strip() == "True":
                _pythons.append(p)
    return _pythons


def for_version(py, frames):
    """Expected frames as py names functions: before 3.11, by co_name (the
    last part of the qualified name)."""
    if version(py) >= (3, 11):
        return frames
    return [(fn.rsplit(".", 1)[-1], file, n) for fn, file, n in frames]


def version(py):
    v = subprocess.run([py, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                       capture_output=True, text=True).stdout.split()
    return int(v[0]), int(v[1])


def prog(name):
    return os.path.join(PROGS, name)


def line(name, marker):
    """The line of "# site: marker" in tests/progs/python/NAME."""
    with open(prog(name)) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# site: " + marker):
                return n
    raise AssertionError(f"no '# site: {marker}' in {name}")


def at(name, function, marker):
    return (function, prog(name), line(name, marker))


def python_frames(site):
    return [(f["function"], f["file"], f["line"]) for f in site["frames"] if f["language"] == "python"]


def libcuda():
    return os.path.join(E.build, "sim", "libcuda.so.1")


def machinery(f):
    """A native frame of the interpreter or the FFI, which a merged stack
    leaves out (analyzer/symbols/pyframes.c)."""
    base = os.path.basename(f["module"] or "")
    return (base.startswith(("libpython", "python3", "libffi.so", "libffi-", "_ctypes.",
                             "_cffi_backend."))
            or (f["function"] or "").startswith(("_PyEval_EvalFrameDefault", "ffi_call",
                                                 "_cffi_f_")))


def check_merged(site, what, extension=True):
    """Python frames in one run, where the interpreter's frames stood: the
    extension's native frames before them (extension), or none for a call
    through ctypes of the driver itself, whose FFI frames go with the
    interpreter's; nothing of the interpreter's or the FFI's."""
    langs = [f["language"] for f in site["frames"]]
    first = langs.index("python")
    last = len(langs) - 1 - langs[::-1].index("python")
    eq(langs[first:last + 1], ["python"] * (last - first + 1), f"{what}: Python frames together")
    if extension:
        check(first >= 1, f"{what}: the extension's native frames come first")
    else:
        eq(first, 0, f"{what}: a ctypes call of the driver leads with its Python line")
    eq(langs[last + 1:], [], f"{what}: a python executable's start-up is the interpreter's")
    for f in site["frames"]:
        if f["language"] == "python":
            eq((f["module"], f["address"]), (None, None), f"{what}: a Python frame's module, address")
        else:
            check(not machinery(f), f"{what}: an interpreter or FFI frame left among the native "
                                    f"ones: {f}")


ALLOC = ("cuda.py", "Driver.alloc", "alloc")
MAIN = ("train.py", "<module>", "main")


def schedule_expectations():
    weights = [at(*ALLOC), at("model.py", "Model.load_weights", "weights"),
               at("train.py", "main", "load"), at(*MAIN)]
    def activation(which):
        return [at(*ALLOC), at("model.py", "Model.forward.<locals>.activation", "activation"),
                at("model.py", "Model.forward", which + " activation"),
                at("train.py", "main", "step"), at(*MAIN)]
    cache = [at(*ALLOC), at("model.py", "remember", "cache"), at("model.py", "Model.forward", "remember"),
             at("train.py", "main", "step"), at(*MAIN)]
    return weights, activation("first"), activation("second"), cache


def test_python_frames_in_peak_and_leaks():
    for py in pythons():
        r = same_behaviour([py, prog("train.py"), libcuda()], env=py_env())
        eq(r.rc, 0, f"{py}: exit status; stderr: {r.err}")
        eq(r.out, "schedule done\n", f"{py}: output")
        d = report_json(one_trace(r))
        weights, first, second, cache = (for_version(py, f) for f in schedule_expectations())
        eq(d["peak"]["bytes"], 8 * MiB + 768 * KiB, f"{py}: peak")
        eq([(s["bytes"], s["count"], s["gil"], python_frames(s)) for s in d["peak"]["sites"]],
           [(4 * MiB, 4, True, weights), (2 * MiB, 1, True, first), (2 * MiB, 1, True, second),
            (768 * KiB, 3, True, cache)], f"{py}: peak sites")
        for s in d["peak"]["sites"]:
            check_merged(s, f"{py}: peak site of {s['bytes']} bytes", extension=False)

        leaks = d["leaks"]["sites"]
        eq((d["leaks"]["bytes"], d["leaks"]["count"]), (6 * MiB + 256 * KiB, 9), f"{py}: leaks")
        eq([(s["bytes"], s["count"], s["gil"]) for s in leaks],
           [(4 * MiB, 4, True), (1 * MiB, 1, True), (768 * KiB, 3, True), (512 * KiB, 1, False)],
           f"{py}: leak sites (the last without the GIL, its frames read from memory)")
        eq(python_frames(leaks[0]), weights, f"{py}: weights")
        eq(python_frames(leaks[2]), cache, f"{py}: cache")
        threaded = python_frames(leaks[1])
        eq(threaded[:2], for_version(py, [at(*ALLOC), at("train.py", "worker", "thread with the GIL")]),
           f"{py}: the thread's own frames")
        eq([(fn, os.path.basename(file)) for fn, file, _ in threaded[2:]],
           [(fn, f) for fn, f, _ in for_version(py, [("Thread.run", "threading.py", 0),
                                                     ("Thread._bootstrap_inner", "threading.py", 0),
                                                     ("Thread._bootstrap", "threading.py", 0)])],
           f"{py}: the thread's start in threading.py")
        check_merged(leaks[1], f"{py}: the thread with the GIL", extension=False)
        nogil = leaks[3]
        eq(python_frames(nogil)[:2],
           for_version(py, [at(*ALLOC), at("train.py", "worker", "thread without the GIL")]),
           f"{py}: without the GIL, the thread's own frames")
        eq(python_frames(nogil)[2:], threaded[2:], f"{py}: the same start in threading.py")
        check_merged(nogil, f"{py}: the thread without the GIL", extension=False)


def test_text_report_shows_python_lines_and_the_no_gil_label():
    py = pythons()[0]
    r = run([py, prog("train.py"), libcuda()], env=py_env())
    eq(r.rc, 0, f"exit status; stderr: {r.err}")
    text = report(one_trace(r)).stdout
    lead = " " * 40
    weights, _, _, _ = schedule_expectations()
    want = [f"{lead}  from {fn}  {shown_path(file)}:{n}" for fn, file, n in weights]
    lines = text.splitlines()
    leaks = lines.index(next(l for l in lines if l.startswith("Unfreed at the end")))
    block = lines[leaks + 1:leaks + 5]
    fn, file, n = weights[0]
    eq(block[0], f"      4.00 MiB in      4 allocations  at {fn}  {shown_path(file)}:{n}",
       "first leak site: its Python line leads (ctypes' and libffi's frames left out)")
    eq(block[1:], want[1:], "the weights' Python frames in the text report")
    check("Without names" not in text, "libffi's unnamed trampolines are not shown, so not listed")
    # after the leak suspects, whose sampling by time windows depends on timing
    eq(text[text.index("Peak:"):].count("(native stack: this thread did not hold the GIL)"), 0,
       "no no-GIL label: the frames of the thread without the GIL were read from memory")
    more = report(one_trace(r), "--frames", "2").stdout.splitlines()
    block = more[more.index(lines[leaks]) + 1:][:3]
    eq(block[:2], [lines[leaks + 1], want[1]], "with --frames 2, the two innermost Python frames")
    check(not block[2].startswith(lead), f"and no more: {block[2]!r}")


def test_through_the_api_only_a_thread_without_the_gil_is_native_and_labelled():
    """GPUSHIM_PYTHON=2: frames only through the API, where the GIL is held."""
    py = pythons()[0]
    r = run([py, prog("train.py"), libcuda()], env=dict(py_env(), GPUSHIM_PYTHON="2"))
    eq((r.rc, r.err), (0, ""), "the run")
    d = report_json(one_trace(r))
    leaks = d["leaks"]["sites"]
    eq([(s["bytes"], s["gil"]) for s in leaks],
       [(4 * MiB, True), (1 * MiB, True), (768 * KiB, True), (512 * KiB, False)], "leak sites")
    eq(python_frames(leaks[0]), schedule_expectations()[0], "the weights, through the API")
    nogil = leaks[3]
    eq(python_frames(nogil), [], "no Python frames without the GIL")
    check(any(f["function"] == "_PyEval_EvalFrameDefault" for f in nogil["frames"]),
          "without the GIL, the native stack as it is, interpreter and all")
    text = report(one_trace(r)).stdout
    eq(text[text.index("Peak:"):].count("(native stack: this thread did not hold the GIL)"), 1,
       "the no-GIL label")


def test_a_layout_that_does_not_check_out_is_turned_off_and_said_once():
    """The shim misplaces a field of the 3.11 layout on purpose
    (GPUSHIM_TEST_BREAK_PYLAYOUT): 1, the first line (frames that read, with
    wrong lines); 2, the file name (a str, the function's name). The first
    event with the GIL compares what memory says with the API: it differs,
    reading from memory is turned off with one line on stderr, and every
    frame recorded is the API's: right, where the GIL is held."""
    py = pythons()[0]
    if version(py) != (3, 11):
        return
    for broken in ("1", "2"):
        r = run([py, prog("train.py"), libcuda()],
                env=dict(py_env(), GPUSHIM_TEST_BREAK_PYLAYOUT=broken))
        eq(r.rc, 0, f"{broken}: exit status")
        eq(r.err.splitlines(), [f"gpushim: Python {platform_version(py)}: its frames read from memory "
                                "differ from what its API says; Python frames are now recorded only "
                                "where a thread holds the GIL"], f"{broken}: said once")
        d = report_json(one_trace(r))
        weights, _, _, cache = schedule_expectations()
        leaks = d["leaks"]["sites"]
        eq([(s["bytes"], s["gil"]) for s in leaks],
           [(4 * MiB, True), (1 * MiB, True), (768 * KiB, True), (512 * KiB, False)],
           f"{broken}: leak sites")
        eq(python_frames(leaks[0]), weights, f"{broken}: the weights, all four from the API")
        eq(python_frames(leaks[2]), cache, f"{broken}: the cache")
        eq(python_frames(leaks[3]), [], f"{broken}: nothing read from memory after")


def platform_version(py):
    return subprocess.run([py, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True).stdout.strip()


def test_native_view_merges_sites_as_before():
    py = pythons()[0]
    r = run([py, prog("train.py"), libcuda()], env=py_env())
    d = report_json(one_trace(r))
    p = report(one_trace(r), "--json", "--native")
    eq(p.returncode, 0, f"report --native: {p.stderr}")
    import json
    n = json.loads(p.stdout)
    for section in ("peak", "leaks"):
        eq(n[section]["bytes"], d[section]["bytes"], f"{section}: the same bytes")
        for s in n[section]["sites"]:
            eq(s["gil"], None, "no Python in the native view")
            eq({f["language"] for f in s["frames"]}, {"native"}, "native frames only")
            check(any(f["function"] == "_PyEval_EvalFrameDefault" for f in s["frames"]),
                  "the interpreter's frames, as recorded")
    if version(py) >= (3, 11):
        # Python calls do not nest in C here: one native stack per thread
        eq([(s["bytes"], s["count"]) for s in n["leaks"]["sites"]],
           [(4 * MiB + 768 * KiB, 7), (1 * MiB + 512 * KiB, 2)], "native leak sites")
    text = report(one_trace(r), "--native").stdout
    eq("did not hold the GIL" in text, False, "no label in the native view")


def test_forked_child_defines_its_code_objects_again():
    py = pythons()[0]
    r = run([py, prog("forked.py"), libcuda()], env=py_env())
    eq((r.rc, r.out), (0, "child exited 0\n"), f"the program; stderr: {r.err}")
    eq(len(r.files), 2, f"a trace each: {r.files}")
    got = {}
    for t in r.files:
        d = report_json(t)
        eq(d["trace"]["complete"], True, f"{t} complete")
        s = d["leaks"]["sites"]
        eq(len(s), 1, f"{t}: one site")
        got[s[0]["bytes"]] = python_frames(s[0])
    main = ("forked.py", "<module>", "main")
    eq(got, {1 * MiB: [at(*ALLOC), at("forked.py", "parent_alloc", "parent"),
                       at("forked.py", "main", "parent call"), at(*main)],
             2 * MiB: [at(*ALLOC), at("forked.py", "child_alloc", "child"),
                       at("forked.py", "main", "child call"), at(*main)]},
       "each process's Python frames")


def test_a_program_without_python_has_no_python_in_its_report():
    r = same_behaviour([E.prog("drv_schedule")])
    d = report_json(one_trace(r))
    for section in ("peak", "leaks"):
        for s in d[section]["sites"]:
            eq(s["gil"], None, "no GIL to speak of")
            eq({f["language"] for f in s["frames"]}, {"native"}, "native frames")


def test_a_rotated_trace_keeps_the_code_objects_of_its_history():
    py = pythons()[0]
    steps = 1_000_000  # about 5 MB of trace, rotated past 2.5 MiB
    r = run([py, prog("longrun.py"), libcuda(), str(steps)], env=dict(py_env(), GPUSHIM_MAX_BYTES="4M"))
    eq((r.rc, r.out, r.err), (0, "done 2\n", ""), "the run")
    d = report_json(one_trace(r))
    check(d["trace"]["checkpoint"] is not None, "the history was summarized")
    eq((d["events"]["allocations"], d["events"]["frees"]), (steps + 2, steps), "every event counted")
    main = ("longrun.py", "<module>", "main")
    eq([(s["bytes"], s["count"], s["gil"], python_frames(s)) for s in d["leaks"]["sites"]],
       [(2 * MiB, 2, True, [at(*ALLOC), at("longrun.py", "keep_weights", "kept"),
                            at("longrun.py", "main", "keep"), at(*main)])],
       "the weights, defined before the checkpoint, by their Python frames")


def test_python_frames_of_a_killed_process_come_from_its_ring():
    py = pythons()[0]
    r = run([py, prog("killed.py"), libcuda()], env=dict(py_env(), GPUSHIM_FLUSH_MS="10000"))
    eq(r.rc, -9, f"killed; stderr: {r.err}")
    d = report_json(one_trace(r))
    eq((d["trace"]["ending"], d["trace"]["ring"]["use"], d["trace"]["complete"]),
       ("died", "read", True), "read with its ring")
    eq((d["trace"]["blocks"], d["trace"]["recovered_events"]), (0, 1), "all of it from the ring")
    main = ("killed.py", "<module>", "main")
    eq([(s["bytes"], s["gil"], python_frames(s)) for s in d["leaks"]["sites"]],
       [(3 * MiB, True, [at(*ALLOC), at("killed.py", "hold_buffer", "held"),
                         at("killed.py", "main", "hold"), at(*main)])],
       "the Python frames, from the ring")


def test_python_frames_can_be_switched_off():
    py = pythons()[0]
    r = run([py, prog("train.py"), libcuda()], env=dict(py_env(), GPUSHIM_PYTHON="0"))
    eq((r.rc, r.err), (0, ""), "the run")
    d = report_json(one_trace(r))
    eq([(s["bytes"], s["gil"], {f["language"] for f in s["frames"]}) for s in d["leaks"]["sites"]],
       [(4 * MiB + 768 * KiB, None, {"native"}), (1 * MiB + 512 * KiB, None, {"native"})]
       if version(py) >= (3, 11) else  # one native stack per thread, as in the native view
       [(s["bytes"], None, {"native"}) for s in d["leaks"]["sites"]],
       "GPUSHIM_PYTHON=0: native stacks, as in a program without Python")
