"""test_incomplete.py - what every command does when what it read is not
whole (analyzer/findings/warnings.c, analyzer/report/incomplete.c,
docs/commands.md "Exit status"): each warning is said on stderr and in the
JSON ("complete", "warnings"), the output is still written in full, and the
command exits 4, or 0 with --partial. The analyzer out of memory is such a
warning: under `ulimit -v 250000` a trace of 2,097,152 allocations never
freed once reported 1,048,576 leaks, "complete", exit 0, nothing said.
"""
import json
import os
import resource
import subprocess
import tempfile

from harness import E, MiB, check, eq, incomplete_as_said, warned
from test_fuzz_corpus import alloc, chunk, end, preamble


def many_allocations(path, n):
    """A finished trace of n allocations of 256 bytes, 256 bytes apart,
    never freed: 65,536 to a chunk, each chunk's first placed after the
    last one's."""
    per = 65536
    rest = alloc(256, 256, 0) * (per - 1)
    with open(path, "wb") as f:
        f.write(preamble())
        for c in range(n // per):
            f.write(chunk(alloc(0x10000000 + c * per * 256, 256, 0) + rest))
        f.write(chunk(end(n, 0, n + 1)))


def limited(kib):
    def preexec():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, kib * 1024))
    return preexec


def test_the_analyzer_out_of_memory_says_so_and_exits_4():
    # The case was 2,097,152 allocations under `ulimit -v 250000`;
    # here 524,288, under the highest of a descending row of limits at which
    # the analyzer runs short (where that falls depends on the machine's
    # libraries: found, not assumed), so that the test neither passes for
    # want of a shortage nor takes long.
    if E.sanitized or E.wrapper:
        return "a sanitizer or valgrind reserves more address space than any limit here"
    tmp = tempfile.mkdtemp(prefix="gpushim-nomem-")
    trace = os.path.join(tmp, "many.trace")
    n = 524_288
    many_allocations(trace, n)
    p = subprocess.run([E.gpushim, "report", "--json", trace], capture_output=True, text=True,
                       timeout=300)
    eq(p.returncode, 0, p.stderr)
    d = json.loads(p.stdout)
    eq((d["complete"], d["warnings"], d["leaks"]["count"], d["leaks"]["bytes"]),
       (True, [], n, 256 * n), "with memory enough: every allocation")
    kib = 200_000
    while kib > 20_000:
        p = subprocess.run([E.gpushim, "report", "--json", trace], capture_output=True,
                           text=True, timeout=300, preexec_fn=limited(kib))
        if p.returncode != 0:
            break
        d = json.loads(p.stdout)
        eq((d["complete"], d["leaks"]["count"]), (True, n), f"{kib} KiB: enough, and all of it")
        kib = kib * 85 // 100
    if p.returncode == 1:  # too little to start before any shortage showed: said in one line
        check(p.stderr.count("\n") == 1, p.stderr)
        return f"no limit from 200 MB down ran short before {kib} KiB was too little to start"
    warned("report", p)
    d = json.loads(p.stdout)
    incomplete_as_said("report", p, d)
    eq([w["kind"] for w in d["warnings"]], ["memory"], f"{kib} KiB: out of memory, said")
    check(d["warnings"][0]["message"].startswith("out of memory: "), d["warnings"])
    check(d["leaks"]["count"] < n, f"{d['leaks']['count']} leaks: fewer, as it says")
    # --partial: exit 0, the warning still said, and the text report says it too
    p = subprocess.run([E.gpushim, "report", "--partial", trace], capture_output=True, text=True,
                       timeout=300, preexec_fn=limited(kib))
    eq(p.returncode, 0, p.stderr)
    check("gpushim report: warning: out of memory: " in p.stderr, p.stderr)
    check("  WARNING   out of memory: " in p.stdout, "the text report says it under the trace")


def test_every_command_says_an_incomplete_trace_and_exits_4():
    tmp = tempfile.mkdtemp(prefix="gpushim-incomplete-")
    whole = os.path.join(tmp, "whole.trace")
    with open(whole, "wb") as f:
        f.write(preamble() + chunk(alloc(0x1000, MiB, 0) + end(1, 0, 2)))
    cut = os.path.join(tmp, "cut.trace")  # no END, no ring: the process died
    with open(cut, "wb") as f:
        f.write(preamble() + chunk(alloc(0x1000, MiB, 0)))
    why = (f"{cut}: the trace is incomplete: the process did not finish it (killed or crashed), "
           "and no ring file holds the last events")
    for args in (["report"], ["report", "--json"], ["export", "--format=json"],
                 ["export", "--format=html"], ["export", "--format=folded"],
                 ["export", "--format=pprof", "-o", os.path.join(tmp, "p.pb.gz")],
                 ["diff", whole], ["report", whole]):
        cmd = args[0]
        p = subprocess.run([E.gpushim, *args, cut], capture_output=True, text=True, timeout=60)
        warned(cmd, p)
        eq(p.stderr.splitlines()[0], f"gpushim {cmd}: warning: {why}", f"{args}: said")
        check(p.stdout or "-o" in args, f"{args}: the output written all the same")
        q = subprocess.run([E.gpushim, *args, "--partial", cut], capture_output=True, text=True,
                           timeout=60)
        eq((q.returncode, q.stdout, q.stderr.splitlines()), (0, p.stdout, p.stderr.splitlines()[:-1]),
           f"{args} --partial: exit 0, the same output and warnings")
        r = subprocess.run([E.gpushim, *args, whole], capture_output=True, text=True, timeout=60)
        eq((r.returncode, r.stderr), (0, ""), f"{args} of a whole trace: nothing said")
    d = json.loads(subprocess.run([E.gpushim, "export", "--format=json", cut],
                                  capture_output=True, text=True).stdout)
    eq((d["complete"], d["warnings"]), (False, [{"kind": "trace", "message": why[len(cut) + 2:]}]),
       "the JSON export as the report")
    html = subprocess.run([E.gpushim, "export", "--format=html", cut], capture_output=True,
                          text=True).stdout
    check("the process did not finish it (killed or crashed)" in html, "the HTML says it")
    # --fail-if's 3 stands: a gate broken is the first thing to say
    p = subprocess.run([E.gpushim, "report", "--fail-if", "peak>1KiB", cut], capture_output=True,
                       text=True, timeout=60)
    eq(p.returncode, 3, p.stderr)
