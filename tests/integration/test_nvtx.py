"""test_nvtx.py - NVTX without code changes: a program built against the NVTX
v3 headers of the CUDA toolkit (tests/progs/nvtx/drv_nvtx.c), whose own NVTX
loader finds the shim through NVTX_INJECTION64_PATH. Its ranges become memory
by range (the exact figures of its schedule), its outermost ranges and its
marks become gpushim marks, its memory extension's regions become blocks.
Skipped where the toolkit's NVTX headers are not installed.
"""
import os
import subprocess
import tempfile

from harness import E, MiB, KiB, check, eq, launcher_env, one_trace, report, report_json, run

PROG = "drv_nvtx"


def missing():
    """Why the tests cannot run here (the runner counts a test that returns
    a note as skipped), or None."""
    if not os.path.exists(E.prog(PROG)):
        return f"{PROG} not built: no NVTX headers in /usr/local/cuda/include/nvtx3"
    return None


def nvtx_env(**more):
    env = {"NVTX_INJECTION64_PATH": E.shim}
    env.update(more)
    return env


def nodes(d):
    return [(n["path"], n["kind"], n["ended"], n["peak_max_bytes"], n["peak_max_nth"],
             n["allocated_max_bytes"], n["kept_last_bytes"], n["kept_max_bytes"],
             n["kept_total_bytes"], n["kept_instances"]) for n in d["ranges"]["nodes"]]


def test_ranges_marks_and_regions_from_nvtx():
    if missing():
        return missing()
    r = run([E.prog(PROG), "traced"], env=nvtx_env())
    eq((r.rc, r.out, r.err), (0, "nvtx done\n", ""),
       "the program, with the levels a tool returns")
    d = report_json(one_trace(r))
    eq(nodes(d), [
        ("step", "pushed", 3, 20 * MiB, 3, 14 * MiB, 1 * MiB, 9 * MiB, 11 * MiB, 3),
        ("step > forward", "pushed", 3, 17 * MiB, 3, 3 * MiB, 3 * MiB, 3 * MiB, 9 * MiB, 3),
        ("step > backward", "pushed", 3, 20 * MiB, 3, 3 * MiB, 0, 0, 0, 0),
        ("step > [trainer] optimizer", "pushed", 3, 15 * MiB, 3, 8 * MiB, 0, 8 * MiB, 8 * MiB,
         1),
        ("prefetch", "started", 1, 20 * MiB, 1, 5 * MiB, 5 * MiB, 5 * MiB, 5 * MiB, 1),
    ], "ranges: path, kind, ended, peak (which), most made in one, kept last/most/total/in")
    g = d["ranges"]
    eq({k: g[k] for k in ("pushes", "pops", "starts", "ends", "unmatched", "dropped")},
       {"pushes": 12, "pops": 12, "starts": 1, "ends": 1, "unmatched": 0, "dropped": 0},
       "range events")
    eq(g["domains"], [{"id": 1, "name": "trainer"}], "domains")
    eq(g["open"], [], "nothing open at the end")
    eq([(x["range"], x["nth"], x["peak_bytes"], x["allocated_bytes"], x["kept_bytes"])
        for x in g["recent"]],
       [(1, 1, 7 * MiB, 3 * MiB, 3 * MiB), (2, 1, 10 * MiB, 3 * MiB, 0),
        (3, 1, 13 * MiB, 8 * MiB, 8 * MiB), (0, 1, 13 * MiB, 14 * MiB, 9 * MiB),
        (1, 2, 16 * MiB, 3 * MiB, 3 * MiB), (2, 2, 19 * MiB, 3 * MiB, 0),
        (3, 2, 14 * MiB, 0, 0), (0, 2, 19 * MiB, 6 * MiB, 1 * MiB),
        (1, 3, 17 * MiB, 3 * MiB, 3 * MiB), (2, 3, 20 * MiB, 3 * MiB, 0),
        (3, 3, 15 * MiB, 0, 0), (0, 3, 20 * MiB, 6 * MiB, 1 * MiB),
        (4, 1, 20 * MiB, 5 * MiB, 5 * MiB)], "each instance, in the order they ended")
    # an outermost range is a mark of its label; NVTX marks are marks, a
    # named domain's with its name
    eq([m["label"] for m in d["marks"]],
       ["step", "step", "step", "done", "trainer: saved", "prefetch"], "marks")
    # each outermost range a step to its end (the started "prefetch" to its
    # end on another thread); each NVTX mark begins one that runs to the end
    eq([(s["label"], s["peak_bytes"], s["growth_bytes"]) for s in d["steps"]],
       [("step", 13 * MiB, 9 * MiB), ("step", 19 * MiB, 1 * MiB), ("step", 20 * MiB, 1 * MiB),
        ("prefetch", 20 * MiB, 5 * MiB), ("done", 20 * MiB, 5 * MiB),
        ("trainer: saved", 20 * MiB, 5 * MiB)], "a step per outermost range and per mark")
    # the memory extension: two regions, one unregistered, the other gone
    # with its heap's reset
    b = d["blocks"]
    eq((b["allocations"], b["frees"], b["frees_unknown"], b["leaks"]["bytes"],
        b["peak"]["bytes"]),
       (2, 2, 0, 0, 1 * MiB + 512 * KiB), "blocks from NVTX regions")
    text = report(one_trace(r)).stdout
    for want in ["NVTX ranges: 5 ranges, 13 ended",
                 "    [trainer] optimizer              3  15.00 MiB (#3)         8.00 MiB"]:
        check(want in text, f"the text report has {want!r}:\n{text}")


def test_without_the_variable_nvtx_is_left_alone():
    if missing():
        return missing()
    bare = run([E.prog(PROG)], shim=False)
    r = run([E.prog(PROG)])
    eq((r.rc, r.out, r.err), (bare.rc, bare.out, bare.err),
       "the program under the shim alone: as without it (NVTX has no tool)")
    d = report_json(one_trace(r))
    eq((d["ranges"], d["marks"], d["blocks"]), (None, [], None), "no ranges, marks or blocks")


def test_a_failure_inside_a_range():
    if missing():
        return missing()
    r = run([E.prog(PROG), "traced", "oom"], env=nvtx_env(SIMCUDA_MEMORY="64M"))
    eq((r.rc, r.out), (0, "nvtx done\n"), f"the program: {r.err}")
    d = report_json(one_trace(r))
    eq([(f["requested_bytes"], f["range"]) for f in d["failures"]],
       [(1024 * MiB, "step > backward")], "the failure and the range it was inside")
    text = report(one_trace(r)).stdout
    check("inside NVTX range step > backward\n" in text, f"the text says so:\n{text}")


def test_a_run_that_dies_inside_ranges():
    if missing():
        return missing()
    r = run([E.prog(PROG), "traced", "die"], env=nvtx_env(ASAN_OPTIONS="detect_leaks=0"))
    eq(r.rc, -9, f"killed: {r.err}")
    d = report_json(one_trace(r))
    eq([(x["range"], x["nth"], x["end_ns"], x["peak_bytes"], x["allocated_bytes"],
         x["kept_bytes"]) for x in d["ranges"]["open"]],
       [(0, 3, None, 17 * MiB, 3 * MiB, 3 * MiB), (1, 3, None, 17 * MiB, 3 * MiB, 3 * MiB)],
       "step #3 and its forward, open when it died (from the ring)")
    text = report(one_trace(r)).stdout
    check("    step > forward #3 since" in text, f"the text lists it:\n{text}")


def test_an_unreadable_message_is_an_empty_label():
    if missing():
        return missing()
    r = run([E.prog(PROG), "traced", "bad"], env=nvtx_env())
    eq((r.rc, r.out), (0, "nvtx done\n"), f"the program: {r.err}")
    eq(r.err.count("an NVTX call was given a label it cannot read"), 1, f"said once: {r.err}")
    d = report_json(one_trace(r))
    eq(d["ranges"]["nodes"][-1]["path"], "", "recorded as the empty label")


def test_gpushim_run_sets_the_variable_and_keeps_another_tools():
    if missing():
        return missing()
    tmp = tempfile.mkdtemp(prefix="gpushim-nvtx-")
    path = os.path.join(tmp, "ours.trace")
    p = subprocess.run([E.gpushim, "run", "-o", path, "--", E.prog(PROG), "traced"],
                       capture_output=True, text=True, env=launcher_env(), timeout=120)
    eq((p.returncode, p.stdout), (0, "nvtx done\n"), f"under gpushim run: {p.stderr}")
    eq(report_json(path)["ranges"]["pushes"], 12, "ranges recorded")
    other = os.path.join(tmp, "libothertool.so")  # not there: NVTX then has no tool
    env = launcher_env()
    env["NVTX_INJECTION64_PATH"] = other
    path = os.path.join(tmp, "theirs.trace")
    p = subprocess.run([E.gpushim, "run", "-o", path, "--", E.prog(PROG)], capture_output=True,
                       text=True, env=env, timeout=120)
    eq((p.returncode, p.stdout), (0, "nvtx done\n"), f"another tool's variable: {p.stderr}")
    check(f"gpushim run: NVTX_INJECTION64_PATH is set to {other}, another tool" in p.stderr,
          f"said: {p.stderr}")
    eq(report_json(path)["ranges"], None, "the other tool's, left alone")
