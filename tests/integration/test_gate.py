"""test_gate.py - `gpushim report --fail-if` and `gpushim diff --fail-if`, the
regression gate (analyzer/findings/gate.c), on programs whose schedules say
every figure in advance:

  rt_whatif_loop (tests/progs/rt_whatif_loop.c): 101 steps, each marked,
    of 91 MiB and 45.5 MiB made and freed and 2 MiB kept (keep()), the kept
    ones freed at the end: peak 202 + 136.5 = 338.5 MiB, kept 202 MiB of it;
    2 MiB more every step; nothing left at the end. With "fail 900" on a
    1 GiB device, a last request of 900 MiB fails and nothing follows it:
    one unrecovered failure.
  rt_batch_tensors B (tests/progs/rt_batch_tensors.c): peak 5 MiB + B x
    (1.25 MiB + 1 KiB); from B = 4 to 8 it grows by 5 MiB + 4 KiB
    (+50.0 %), make_activations by 5 MiB of it.

A limit at the figure is not broken; each broken one is a line on stderr
naming the call site; exit 3. The same traces give the same lines.
"""
import json
import os
import re
import subprocess
import tempfile

from harness import E, check, eq, launcher_env, one_trace, run


def gpushim(*args):
    return subprocess.run([E.gpushim, *args], capture_output=True, text=True, timeout=120)


def record_batch(tmp, batch):
    path = os.path.join(tmp, f"b{batch}.trace")
    p = subprocess.run([E.gpushim, "run", "-o", path, "--", E.prog("rt_batch_tensors"),
                        str(batch)], capture_output=True, text=True, env=launcher_env(),
                       timeout=120)
    eq(p.returncode, 0, f"rt_batch_tensors {batch}: {p.stderr}")
    return path


def lines(p):
    return p.stderr.splitlines()


def matches(line, pattern):
    check(re.fullmatch(pattern, line), f"line {line!r} is not {pattern!r}")


SITE = r"{f} \(rt_whatif_loop\.c:\d+\) from main \(rt_whatif_loop\.c:\d+\)"


def test_gate_report_limits_on_the_123548_loop():
    r = run([E.prog("rt_whatif_loop")])
    eq(r.rc, 0, r.err)
    trace = one_trace(r)
    limits = ["peak>300MiB", "peak>338.5M", "leak>1MiB", "leak>2MiB", "unfreed>0",
              "unrecovered>0"]
    args = [a for lim in limits for a in ("--fail-if", lim)]
    p = gpushim("report", *args, trace)
    eq(p.returncode, 3, f"limits broken: {p.stderr}")
    got = lines(p)
    eq(len(got), 2, f"two limits broken: {got}")
    matches(got[0], r"gpushim report: --fail-if 'peak>300MiB' broken: peak 338\.50 MiB, over "
                    r"300\.00 MiB; most at the peak: " + SITE.format(f="keep") + r", 202\.00 MiB")
    matches(got[1], r"gpushim report: --fail-if 'leak>1MiB' broken: leak 2\.00 MiB, over "
                    r"1\.00 MiB; fastest growth: " + SITE.format(f="keep") + r", 2\.00 MiB a step")
    check(p.stdout.startswith("gpushim report"), "the report itself, on stdout as ever")
    eq(gpushim("report", *args, trace).stderr, p.stderr, "the same trace, the same lines")
    # --json: stdout stays one JSON object; the lines go to stderr
    j = gpushim("report", "--json", "--fail-if", "peak>300MiB", trace)
    eq(j.returncode, 3, j.stderr)
    json.loads(j.stdout)
    ok = gpushim("report", "--fail-if", "peak>338.5M", "--fail-if", "leak>2MiB", trace)
    eq((ok.returncode, ok.stderr), (0, ""), "no limit broken")


def test_gate_report_unrecovered_failure():
    r = run([E.prog("rt_whatif_loop"), "fail", "900"], env={"SIMCUDA_MEMORY": "1G"})
    eq(r.rc, 1, f"the last request fails: {r.err}")
    p = gpushim("report", "--fail-if", "unrecovered>0", one_trace(r))
    eq(p.returncode, 3, p.stderr)
    eq(len(lines(p)), 1, p.stderr)
    matches(lines(p)[0], r"gpushim report: --fail-if 'unrecovered>0' broken: unrecovered 1, "
                         r"over 0; first failed at: " + SITE.format(f="last_request"))


def test_gate_diff_names_the_site_that_grew_most():
    tmp = tempfile.mkdtemp(prefix="gpushim-gate-")
    a, b = record_batch(tmp, 4), record_batch(tmp, 8)
    limits = ["peak>+40%", "peak>+60%", "peak>+5MiB", "peak>+6MiB", "peak>15MiB",
              "unfreed>+0", "unrecovered>+0"]
    args = [x for lim in limits for x in ("--fail-if", lim)]
    p = gpushim("diff", *args, a, b)
    eq(p.returncode, 3, p.stderr)
    got = lines(p)
    eq(len(got), 3, f"+40 %, +5 MiB and 15 MiB broken: {got}")
    grew = (r"grew most: tensor \(rt_batch_tensors\.c:\d+\) from "
            r"make_activations \(rt_batch_tensors\.c:\d+\), \+5\.00 MiB")
    matches(got[0], r"gpushim diff: --fail-if 'peak>\+40%' broken: peak 10\.00 MiB -> "
                    r"15\.01 MiB \(\+50\.0%\), over \+40%; " + grew)
    matches(got[1], r"gpushim diff: --fail-if 'peak>\+5MiB' broken: peak 10\.00 MiB -> "
                    r"15\.01 MiB \(\+5\.00 MiB\), over \+5\.00 MiB; " + grew)
    matches(got[2], r"gpushim diff: --fail-if 'peak>15MiB' broken: peak 15\.01 MiB, over "
                    r"15\.00 MiB; " + grew)
    eq(gpushim("diff", *args, a, b).stderr, p.stderr, "the same traces, the same lines")
    back = gpushim("diff", "--fail-if", "peak>+0%", "--fail-if", "peak>+0", b, a)
    eq((back.returncode, back.stderr), (0, ""), "from 8 to 4 nothing grew")
    j = gpushim("diff", "--json", "--fail-if", "peak>+40%", a, b)
    eq(j.returncode, 3, j.stderr)
    eq(json.loads(j.stdout)["peak_change_bytes"], 5 * 1024 * 1024 + 4 * 1024, "the JSON as ever")


def test_gate_usage_errors():
    tmp = tempfile.mkdtemp(prefix="gpushim-gate-")
    a = record_batch(tmp, 2)
    for argv, says in ((["report", "--fail-if", "peak>+5%", a], "a change needs two runs"),
                       (["report", "--fail-if", "pek>1G", a], "no metric 'pek'"),
                       (["report", "--fail-if", "peak>5%", a], "a percentage is a change"),
                       (["report", "--fail-if", "peak>1G", a, a], "takes one trace"),
                       (["diff", "--fail-if", "unrecovered>1G", a, a], "takes a count"),
                       (["diff"] + ["--fail-if", "peak>1G"] * 17 + [a, a], "at most 16")):
        p = gpushim(*argv)
        eq(p.returncode, 2, f"{argv}: {p.stderr}")
        check(says in p.stderr, f"{argv}: {p.stderr!r} does not say {says!r}")
