"""test_export.py - gpushim export (issue 6, item 6, first formats): json is
the report's JSON byte for byte; folded is what flamegraph.pl, inferno and
speedscope read (a line per site: frames outermost first joined by ';', a
space, a positive integer), with the same sites and bytes as the report, by
metric.
"""
import os
import re
import subprocess
import tempfile

from harness import E, KiB, MiB, check, eq, one_trace, report, report_json, run

LINE = re.compile(r"^([^;\n]+(?:;[^;\n]+)*) ([0-9]+)$")


def export(trace, *args):
    return subprocess.run([E.gpushim, "export", *args, trace], capture_output=True, text=True,
                          timeout=120)


def folded(trace, *args):
    p = export(trace, "--format=folded", *args)
    eq(p.returncode, 0, "status: " + p.stderr)
    rows = []
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        check(m is not None, f"a folded line flamegraph.pl reads: {line!r}")
        rows.append((m.group(1).split(";"), int(m.group(2))))
    return rows


def functions(frames):
    return [f.split(" (")[0] for f in frames]


def test_export_json_is_the_report():
    trace = one_trace(run([E.prog("drv_schedule")]))
    p = export(trace, "--format=json")
    eq(p.returncode, 0, "status: " + p.stderr)
    eq(p.stdout, report(trace, "--json").stdout, "the same JSON as report --json")
    out = os.path.join(tempfile.mkdtemp(prefix="gpushim-export-"), "r.json")
    eq(export(trace, "-f", "json", "-o", out).returncode, 0, "to a file")
    eq(open(out).read(), p.stdout, "the file holds it")


def test_export_folded_by_metric():
    # drv_schedule.c: at the peak 4 MiB of weights, 2 x 2 MiB of activations,
    # 3 x 256 KiB cached; over the run 6 activations of 2 MiB; unfreed: the
    # weights, the cache and one activation.
    trace = one_trace(run([E.prog("drv_schedule")]))
    peak = folded(trace)
    eq([(functions(f), b) for f, b in peak],
       [(["main", "load_weights"], 4 * MiB),
        (["main", "train_step", "make_activation"], 4 * MiB),
        (["main", "train_step", "remember_in_cache"], 768 * KiB)], "peak, outermost first")
    check(all(re.search(r" \(drv_schedule\.c:[0-9]+\)$", f) for frames, _ in peak for f in frames),
          f"each frame names its file and line: {peak}")
    eq(sum(b for _, b in peak), 8 * MiB + 768 * KiB, "the peak in all")
    allocated = folded(trace, "--metric=allocated")
    eq([(functions(f)[-1], b) for f, b in allocated],
       [("make_activation", 12 * MiB), ("load_weights", 4 * MiB), ("remember_in_cache", 768 * KiB)],
       "all allocated over the run")
    leaked = folded(trace, "--metric", "leaked")
    eq(sum(b for _, b in leaked), 4 * MiB + 768 * KiB, "never freed")


def test_export_usage_errors():
    trace = one_trace(run([E.prog("drv_schedule")]))
    for args, want in [([], "which format"), (["-f", "xml"], "no format 'xml'"),
                       (["-f", "folded", "--metric=most"], "--metric is peak, leaked or allocated")]:
        p = export(trace, *args)
        eq(p.returncode, 2, f"status of export {args}")
        check(want in p.stderr, f"export {args} says {want!r}: {p.stderr}")
    p = export("/nonexistent.trace", "-f", "json")
    eq(p.returncode, 1, "a trace that cannot be read")
    check(p.stderr.startswith("gpushim export: /nonexistent.trace"), p.stderr)
    blocker = os.path.join(tempfile.mkdtemp(prefix="gpushim-export-"), "plain")
    open(blocker, "w").close()
    p = export(trace, "-f", "json", "-o", os.path.join(blocker, "x.json"))
    eq(p.returncode, 1, "an output that cannot be written")
    check("cannot write" in p.stderr, p.stderr)


def test_a_fifo_as_the_trace_is_refused_at_once():
    # Opened before the check that it is a regular file, a FIFO made every
    # command wait for a writer forever; each now says so and exits 1.
    fifo = os.path.join(tempfile.mkdtemp(prefix="gpushim-fifo-"), "f.trace")
    os.mkfifo(fifo, 0o600)
    for cmd in (["report"], ["report", "--json"], ["export", "-f", "json"],
                ["export", "-f", "perfetto"], ["whatif"], ["diff", fifo]):
        try:
            p = subprocess.run([E.gpushim, *cmd, fifo], capture_output=True, text=True,
                               timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"gpushim {' '.join(cmd)} waited on a FIFO")
        eq(p.returncode, 1, f"{cmd}: {p.stderr}")
        check("not a regular file" in p.stderr, f"{cmd} says why: {p.stderr}")


def test_exports_are_the_owners_alone():
    # An export holds what the trace holds (the command line, the host), so a
    # new one is made 0600 as the trace is, whatever the umask; one already
    # there keeps its owner's mode. Each way of writing: the events as they
    # are read (perfetto), the report's (json, html), whatif's answer, and
    # report, the ranks' table and diff with -o, as every command takes it.
    trace = one_trace(run([E.prog("drv_schedule")]))
    tmp = tempfile.mkdtemp(prefix="gpushim-mode-")
    old = os.umask(0o022)
    try:
        for name, cmd in [("p.json", ["export", "-f", "perfetto"]),
                          ("r.json", ["export", "-f", "json"]),
                          ("r.html", ["export", "-f", "html"]),
                          ("w.txt", ["whatif", "--card", "1G"]),
                          ("rep.txt", ["report"]), ("rep.json", ["report", "--json"]),
                          ("ranks.txt", ["report", trace]), ("d.json", ["diff", "--json", trace])]:
            out = os.path.join(tmp, name)
            p = subprocess.run([E.gpushim, cmd[0], "-o", out, *cmd[1:], trace],
                               capture_output=True, text=True, timeout=120)
            eq(p.returncode, 0, f"{cmd}: {p.stderr}")
            if cmd[0] in ("report", "diff"):  # -o: what standard output would have had
                q = subprocess.run([E.gpushim, *cmd, trace], capture_output=True, text=True,
                                   timeout=120)
                eq((p.stdout, open(out).read()), ("", q.stdout), f"{cmd} -o: the same, there")
            eq(oct(os.stat(out).st_mode & 0o777), oct(0o600), f"the mode {cmd} made {name} with")
            os.chmod(out, 0o644)
            p = subprocess.run([E.gpushim, cmd[0], "-o", out, *cmd[1:], trace],
                               capture_output=True, text=True, timeout=120)
            eq((p.returncode, oct(os.stat(out).st_mode & 0o777)), (0, oct(0o644)),
               f"{name} written again keeps its owner's mode")
            check(os.path.getsize(out) > 0, f"{name} written")
    finally:
        os.umask(old)


def test_capacity_of_common_cards():
    # drv_schedule.c peaks at 8.75 MiB on device 0: every card fits, with
    # exactly its memory less that to spare; its cache that is never
    # emptied is a leak suspect, which in the end outgrows any card.
    trace = one_trace(run([E.prog("drv_schedule")]))
    d = report_json(trace)["capacity"]
    peak = 8 * MiB + 768 * KiB
    eq(d["peak_bytes"], peak, "the largest device peak")
    fits = ("24 GB and larger cards: 23.99 GiB spare on 24 GB; but a leak suspect kept rising: "
            "a longer run outgrows any card")
    eq((d["need_bytes"], d["failed_held_bytes"], d["failed_asked_bytes"], d["leak_grew"],
        d["fits_on"]), (peak, None, None, True, fits), "what it needs, and the sentence")
    cards = [("24 GB", 24 << 30), ("40 GB", 40 << 30), ("48 GB", 48 << 30), ("80 GB", 80 << 30),
             ("96 GB", 96 << 30), ("141 GB", 143771 << 20)]
    eq([(c["name"], c["bytes"], c["fits"], c["headroom_bytes"]) for c in d["cards"]],
       [(n, b, True, b - peak) for n, b in cards], "each card")
    check(f"  fits on   {fits}\n" in report(trace).stdout, "the text report says it the same")


def test_timeline_holds_the_peak():
    # drv_longhaul: a peak of 100 MiB + 3 leaks of 4 KiB + 36 x 64 KiB + 64 MiB at
    # step 2000 of 20000, then back to 100 MiB and the leaks.
    trace = one_trace(run([E.prog("drv_longhaul"), "20000"]))
    d = report_json(trace)
    t = d["timeline"]
    peak = 100 * MiB + 3 * 4 * KiB + 36 * 64 * KiB + 64 * MiB
    eq(d["peak"]["bytes"], peak, "the peak")
    eq(max(t["max_bytes"]), peak, "the timeline holds the peak")
    check(1 <= len(t["max_bytes"]) <= 64, f"at most 64 buckets: {len(t['max_bytes'])}")
    w = t["bucket_ns"] // 1000000
    check(t["bucket_ns"] % 1000000 == 0 and w & (w - 1) == 0, f"1 ms doubled: {t['bucket_ns']}")
    # the timeline starts with the trace: the buckets before the weights (a start-up slow
    # on a loaded machine) may be empty; from them on, never below the weights
    first = next(i for i, v in enumerate(t["max_bytes"]) if v)
    check(min(t["max_bytes"][first:]) >= 100 * MiB, "the weights are live from then on")
    line = [l for l in report(trace).stdout.splitlines() if l.startswith("  timeline  ")]
    eq(len(line), 1, "a sparkline in the text report")
    check("█" in line[0], "the peak's bucket is full height: " + line[0])
