"""test_steps.py - steps are what the user counts (issue 39): five training
steps leaking 4 MiB each (tests/progs/python/steps_loop.py) are five steps
and a leak of "+20.00 MiB, 4.00 MiB a step", whether the loop marks each
step before it (gpushim.mark), after it (gpushim.step_end), through
PyTorch's optimizer hooks (gpushim.torch.mark_steps) or as a range
(gpushim.region, an NVTX range); without marks, the growth is per second in
units a person reads, or over the run when it lasted under a second.
"""
import os
import re
import subprocess

from harness import E, MiB, check, eq, once, report, report_json, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROG = os.path.join(ROOT, "tests", "progs", "python", "steps_loop.py")


def loop(way, python="python3"):
    """The report (JSON, text) of steps_loop.py run the given way."""
    e = {"PYTHONPATH": os.path.join(ROOT, "python") + ":" + os.path.dirname(PROG),
         "ASAN_OPTIONS": "detect_leaks=0"}
    if E.sanitized:  # the simulated driver is sanitized too: its runtime first
        e["LD_LIBRARY_PATH"] = os.path.join(E.build, "sim")
    r = run([python, PROG, os.path.join(E.build, "sim", "libcuda.so.1"), way], env=e)
    eq((r.rc, r.out), (0, "done\n"), f"steps_loop.py {way}: {r.err}")
    eq(len(r.files), 1, "one trace")
    return report_json(r.files[0]), report(r.files[0]).stdout


def the_leak(d, text, way):
    sus = d["leaks"]["suspects"]
    eq([(s["growth_bytes"], "leak_site" in [f["function"] for f in s["frames"]]) for s in sus],
       [(20 * MiB, True)], f"{way}: the one suspect, at leak_site, the whole leak")
    return sus[0], [ln for ln in text.splitlines() if ln.startswith("  +  20.00 MiB")]


def check_steps(way, kinds, python="python3"):
    d, text = loop(way, python)
    eq([m["kind"] for m in d["marks"]], kinds, f"{way}: the marks")
    eq([(l["label"], l["marks"], l["steps"]) for l in d["mark_labels"]],
       [("step", len(kinds), 5)], f"{way}: five steps")
    eq([s["growth_bytes"] for s in d["steps"]][-4:], [4 * MiB] * 4,
       f"{way}: each step after the first keeps its 4 MiB")
    s, lines = the_leak(d, text, way)
    eq(s["bytes_per_step"], 4 * MiB, f"{way}: 4 MiB a step")
    eq(d["leaks"]["growth"]["step_label"], "step", f"{way}: sampled at the steps")
    eq(s["rate"], "4.00 MiB a step", f"{way}: the rate as the text says it")
    eq(len(lines), 1, f"{way}: the suspect's line:\n{text}")
    check(", 4.00 MiB a step; 20.00 MiB live at the end" in lines[0], f"{way}: {lines[0]}")
    return d


def test_marks_before_each_step_are_that_many_steps():
    d = check_steps("before", ["mark"] * 5)
    eq(d["mark_labels"][0]["last_step_to_the_end"], True, "the last step ran to the end")
    # the weights came before the first mark: no step's
    eq(d["steps"][0]["growth_bytes"], 4 * MiB, "the first step: its 4 MiB")


def test_step_ends_after_each_step_are_that_many_steps():
    d = check_steps("after", ["step_end"] * 5)
    eq(d["mark_labels"][0]["last_step_to_the_end"], False, "no step after the last end")
    # the first step runs from the start of the run: the weights are its own
    eq(d["steps"][0]["growth_bytes"], 12 * MiB, "the first step: 8 MiB of weights and its 4")


def test_a_range_around_each_step_is_a_step():
    d = check_steps("region", ["range"] * 5)
    eq(d["mark_labels"][0]["nvtx_marks"], 5, "all five ranges")


@once("the Python module on Debian's PyTorch, whose import under the sanitizers takes most of the test")
def test_mark_steps_makes_the_optimizers_steps_the_reports():
    p = subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True)
    if p.returncode != 0:
        return "no python3-torch for /usr/bin/python3 (make test-deps installs it)"
    # mark_steps marks once when called, then ends a step after each
    d = check_steps("mark_steps", ["mark"] + ["step_end"] * 5, "/usr/bin/python3")
    eq(d["steps"][0]["growth_bytes"], 4 * MiB, "the first step: from mark_steps' mark")


def test_without_marks_growth_is_per_second():
    d, text = loop("none")  # five steps 250 ms apart: over a second
    s, lines = the_leak(d, text, "none")
    eq(s["bytes_per_step"], None, "no steps")
    eq(len(lines), 1, f"the suspect's line:\n{text}")
    check(re.search(r"since \d+\.\d{3} s, \d+\.\d\d MiB/s; ", lines[0]), lines[0])


def test_a_run_shorter_than_a_second_gives_its_growth_over_the_run():
    d, text = loop("quick")
    s, lines = the_leak(d, text, "quick")
    eq(len(lines), 1, f"the suspect's line:\n{text}")
    m = re.search(r"since \d+\.\d{3} s, in a run of (\d+\.\d{3}) s; ", lines[0])
    check(m, lines[0])
    eq(m.group(1), f"{d['process']['duration_ns'] / 1e9:.3f}", "the run's length")
    eq(s["rate"], f"in a run of {m.group(1)} s", "the JSON's words")
