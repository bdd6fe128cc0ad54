"""test_multi.py - commands over several traces (issue 6, items 4 and 7):
gpushim plan (the largest batch that fits a card, from runs of different
batch sizes), gpushim diff (what grew between two runs, by call site) and
gpushim report over the ranks of a job (the JOB header record), against the
schedule of tests/progs/drv_batch.c:

  peak = 8 MiB weights + B x 1.5 MiB activations + (N-1) x 512 KiB scratch,
  with N = 3 steps: 9 MiB + 1.5 MiB x B; the steps' peaks 1 MiB apart.
"""
import json
import math
import os
import subprocess
import tempfile
import zlib

from harness import E, KiB, MiB, check, eq, one_trace, run, warned

CONTEXT = 512 * MiB
CARDS = [("24 GB", 24 << 30), ("40 GB", 40 << 30), ("48 GB", 48 << 30), ("80 GB", 80 << 30),
         ("96 GB", 96 << 30), ("141 GB", 143771 << 20)]


def gpushim(*args):
    return subprocess.run([E.gpushim, *args], capture_output=True, text=True, timeout=300)


def gpushim_json(*args):
    p = gpushim(*args)
    eq(p.returncode, 0, f"gpushim {' '.join(args)}: {p.stderr}")
    return json.loads(p.stdout)


def batch_run(tmp, name, batch, steps=3, env=None, rc=0):
    r = run([E.prog("drv_batch"), str(batch), str(steps)], cwd=tmp, output=name, env=env)
    eq(r.rc, rc, f"drv_batch {batch} {steps} status ({r.err})")
    path = os.path.join(tmp, name)
    check(os.path.exists(path), f"{name} written")
    return path


def header_records(path):
    """[(type, payload bytes)] of a trace's header."""
    data = open(path, "rb").read()
    hlen = int.from_bytes(data[12:16], "little")
    p, end, out = 16, 16 + hlen, []
    while p < end:
        t = data[p]
        p += 1
        n = shift = 0
        while True:
            b = data[p]
            p += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        out.append((t, data[p:p + n]))
        p += n
    return out


def varints(b):
    out, n, shift = [], 0, 0
    for x in b:
        n |= (x & 0x7F) << shift
        shift += 7
        if x < 0x80:
            out.append(n)
            n = shift = 0
    return out


def without_job(path):
    """Rewrites a trace as gpushim wrote it before the JOB record: the
    header without it, its length and checksum made again."""
    data = open(path, "rb").read()
    hlen = int.from_bytes(data[12:16], "little")
    recs = [(t, p) for t, p in header_records(path) if t != 7]
    check(len(recs) < len(header_records(path)), "there was a JOB record to take out")
    body = b""
    for t, p in recs:
        n, v = b"", len(p)
        while True:
            n += bytes([(v & 0x7F) | (0x80 if v > 0x7F else 0)])
            v >>= 7
            if not v:
                break
        body += bytes([t]) + n + p
    head = data[:12] + len(body).to_bytes(4, "little") + body
    out = head + zlib.crc32(head).to_bytes(4, "little") + data[16 + hlen + 4:]
    with open(path, "wb") as f:
        f.write(out)


# ---- plan ----

def test_plan_two_runs_from_marks():
    tmp = tempfile.mkdtemp(prefix="gpushim-plan-")
    a, b = batch_run(tmp, "b4.trace", 4), batch_run(tmp, "b8.trace", 8)
    d = gpushim_json("plan", "--json", a, b)
    eq([(r["path"], r["batch"], r["batch_from"], r["peak_bytes"], r["step_label"], r["steps"],
         r["step_peak_spread_bytes"]) for r in d["runs"]],
       [(a, 4, "mark", 15 * MiB, "step", 3, MiB), (b, 8, "mark", 21 * MiB, "step", 3, MiB)],
       "the runs: batch from the batch=N mark, peak, the steps' peaks 1 MiB apart")
    eq(d["fit"], {"fixed_bytes": 9.0 * MiB, "per_sample_bytes": 1.5 * MiB, "runs": 2,
                  "residual_std_error_bytes": None, "uncertainty_from": "step_spread",
                  "peak_uncertainty_bytes": 1.0 * MiB}, "the line through both points")
    eq(d["context_bytes"], CONTEXT, "the CUDA context's share")
    # central: (usable - 9 MiB) / 1.5 MiB; the steepest line through the ends of
    # the spreads (4, 14 MiB)-(8, 22 MiB): 6 MiB + 2 MiB x B; the flattest
    # (4, 16 MiB)-(8, 20 MiB): 12 MiB + 1 MiB x B.
    want = []
    for name, size in CARDS:
        usable = size - CONTEXT
        want.append((name, size, usable, (usable - 9 * MiB) * 2 // (3 * MiB),
                     (usable - 6 * MiB) // (2 * MiB), (usable - 12 * MiB) // MiB))
    eq([(c["name"], c["bytes"], c["usable_bytes"], c["largest_batch"], c["largest_batch_low"],
         c["largest_batch_high"]) for c in d["cards"]], want, "each common card")
    eq(want[3][3:], (54266, 40701, 81396), "80 GB: 81399 MiB / 1.5 MiB")

    d = gpushim_json("plan", "--json", "--card", "80GB", "--card", "1G", "--context", "0", a, b)
    eq([(c["name"], c["bytes"], c["usable_bytes"], c["largest_batch"]) for c in d["cards"]],
       [("80GB", 80 << 30, 80 << 30, 54607), ("1G", 1 << 30, 1 << 30, 676)],
       "--card as sold and in bytes, no context: (81920 - 9) / 1.5, (1024 - 9) / 1.5")

    p = gpushim("plan", a, b)
    eq(p.returncode, 0, p.stderr)
    check("Fit  peak = 9.00 MiB + 1.50 MiB x batch  (2 runs: the line through both)\n" in p.stdout,
          p.stdout)
    check("  80 GB         79.50 GiB          54266  40701 .. 81396\n" in p.stdout, p.stdout)


def test_plan_three_runs_residuals():
    tmp = tempfile.mkdtemp(prefix="gpushim-plan3-")
    a, b, c = (batch_run(tmp, f"b{n}.trace", n) for n in (4, 8, 16))
    d = gpushim_json("plan", "--json", "--card", "80GB", a, b, c)
    eq((d["fit"]["fixed_bytes"], d["fit"]["per_sample_bytes"], d["fit"]["runs"],
        d["fit"]["residual_std_error_bytes"], d["fit"]["uncertainty_from"]),
       (9.0 * MiB, 1.5 * MiB, 3, 0.0, "residuals"), "three runs on the line: no residual")
    eq([(x["largest_batch"], x["largest_batch_low"], x["largest_batch_high"]) for x in d["cards"]],
       [(54266, 54266, 54266)], "the range is the answer")

    # The batch given on the command line wins over the mark: the batch-16
    # run told it is 12 puts the points (4, 15), (8, 21), (12, 33) MiB, off
    # the line by 1, -2, 1 MiB from peak = 5 MiB + 2.25 MiB x B.
    d = gpushim_json("plan", "--json", "--card", "80GB", a + ":4", b, c + ":12")
    eq([(r["path"], r["batch"], r["batch_from"]) for r in d["runs"]],
       [(a, 4, "argument"), (b, 8, "mark"), (c, 12, "argument")], "batches: TRACE:N or the mark")
    f = d["fit"]
    eq((f["fixed_bytes"], f["per_sample_bytes"]), (5.0 * MiB, 2.25 * MiB), "least squares")
    s = math.sqrt(6) * MiB  # sqrt((1 + 4 + 1) MiB^2 / (3 - 2))
    check(abs(f["residual_std_error_bytes"] - s) < 1e-5, f"residual standard error {f}")
    check(abs(f["peak_uncertainty_bytes"] - s) < 1e-5, f"the uncertainty is it {f}")
    usable = (80 << 30) - CONTEXT
    eq([(x["largest_batch"], x["largest_batch_low"], x["largest_batch_high"]) for x in d["cards"]],
       [((usable - 5 * MiB) * 4 // (9 * MiB), math.floor((usable - s - 5 * MiB) / (2.25 * MiB)),
         math.floor((usable + s - 5 * MiB) / (2.25 * MiB)))], "peak fits with s added, taken off")
    eq(d["cards"][0]["largest_batch"], 36179, "81403 MiB / 2.25 MiB")


def test_plan_bad_input():
    tmp = tempfile.mkdtemp(prefix="gpushim-plan-bad-")
    a = batch_run(tmp, "b4.trace", 4)
    plain = os.path.join(tmp, "plain.txt")
    with open(plain, "w") as f:
        f.write("not a trace at all\n")
    s1 = os.path.join(tmp, "s1.trace")
    s2 = os.path.join(tmp, "s2.trace")
    for out in (s1, s2):
        r = run([E.prog("drv_schedule")], cwd=tmp, output=os.path.basename(out))
        eq(r.rc, 0, r.err)
    for args, rc, want in [
            (["/nonexistent.trace", a], 1, "gpushim plan: /nonexistent.trace: offset 0: cannot open"),
            ([plain, a], 1, f"gpushim plan: {plain}: offset 0: not a gpushim trace"),
            ([s1, a], 1, f"gpushim plan: {s1}: no batch size: give it as {s1}:N, or mark batch=N"),
            ([a, a], 1, "gpushim plan: every run has batch size 4"),
            ([a], 2, "gpushim plan: two runs or more"),
            ([a + ":0", a], 2, "a batch size is 1 to 4294967295"),
            (["--card", "huge", a, a], 2, "--card needs a size"),
            (["--context", "-1", a, a], 2, "--context needs a size")]:
        p = gpushim("plan", *args)
        eq(p.returncode, rc, f"plan {args}: {p.stderr}")
        check(p.stderr.startswith(want) or want in p.stderr, f"plan {args} says {want!r}: {p.stderr}")
        eq(p.stdout, "", f"plan {args} prints nothing")
    # Two runs without steps: the line, and no range.
    d = gpushim_json("plan", "--json", "--card", "24GB", s1 + ":2", a)
    eq((d["fit"]["fixed_bytes"], d["fit"]["per_sample_bytes"]), (2.5 * MiB, 3.125 * MiB),
       "drv_schedule's 8.75 MiB told batch 2, and (4, 15 MiB): the line through both")
    eq((d["fit"]["uncertainty_from"], d["fit"]["peak_uncertainty_bytes"]),
       ("step_spread", 1.0 * MiB), "the spread of the one run that marks steps")
    # Runs whose peak does not grow, neither marking steps: any batch fits, and
    # no range can be given.
    d = gpushim_json("plan", "--json", "--card", "24GB", s1 + ":2", s2 + ":4")
    eq((d["fit"]["per_sample_bytes"], d["fit"]["uncertainty_from"],
        d["fit"]["peak_uncertainty_bytes"], d["cards"][0]["largest_batch"],
        d["cards"][0]["largest_batch_low"], d["cards"][0]["largest_batch_high"]),
       (0.0, None, None, None, None, None), "the same peak at batch 2 and 4: no limit, no range")
    p = gpushim("plan", s1 + ":2", s2 + ":4")
    check("Uncertainty  none can be estimated from two points" in p.stdout, p.stdout)
    check("The peak does not grow with the batch size" in p.stdout, p.stdout)


# ---- diff ----

def site_rows(d):
    return [(s["status"], s["frames"][1]["function"], s["a"]["peak_bytes"], s["b"]["peak_bytes"],
             s["change"]["peak_bytes"], s["a"]["unfreed_bytes"], s["b"]["unfreed_bytes"],
             s["a"]["allocated_bytes"], s["b"]["allocated_bytes"], s["change"]["allocated_bytes"])
            for s in d["sites"]]


def test_diff_batch_4_and_8():
    tmp = tempfile.mkdtemp(prefix="gpushim-diff-")
    a, b = batch_run(tmp, "b4.trace", 4), batch_run(tmp, "b8.trace", 8)
    d = gpushim_json("diff", "--json", a, b)
    eq((d["a"]["path"], d["a"]["peak_bytes"], d["a"]["unfreed_bytes"], d["a"]["complete"],
        d["b"]["path"], d["b"]["peak_bytes"], d["peak_change_bytes"], d["sites_total"]),
       (a, 15 * MiB, 8 * MiB, True, b, 21 * MiB, 6 * MiB, 3), "the runs and their peaks")
    rows = site_rows(d)
    # the activations grew by exactly 4 x 1.5 MiB at the peak, 3 steps x that allocated
    eq(rows[0], ("grew", "make_activations", 6 * MiB, 12 * MiB, 6 * MiB, 0, 0, 18 * MiB, 36 * MiB,
                 18 * MiB), "the activations' site first")
    eq(sorted(rows[1:]),
       [("same", "load_weights", 8 * MiB, 8 * MiB, 0, 8 * MiB, 8 * MiB, 8 * MiB, 8 * MiB, 0),
        ("same", "make_scratch", MiB, MiB, 0, 0, 0, 1536 * KiB, 1536 * KiB, 0)],
       "the weights and the scratch unchanged")
    eq([s["frames"][0]["function"] for s in d["sites"]], ["alloc_or_exit"] * 3, "innermost frame")
    eq(gpushim_json("diff", "--json", "--top", "1", a, b)["sites"], d["sites"][:1], "--top 1")
    native = gpushim_json("diff", "--json", "--native", a, b)
    eq(site_rows(native), rows, "--native: the same sites for a program without Python")
    eq([s["gil"] for s in d["sites"] + native["sites"]], [None] * 6, "no Python: gil null")

    # The other way round: it shrank.
    r = site_rows(gpushim_json("diff", "--json", b, a))
    eq(r[-1][:5], ("shrank", "make_activations", 12 * MiB, 6 * MiB, -6 * MiB), "last: it shrank")

    p = gpushim("diff", a, b)
    eq(p.returncode, 0, p.stderr)
    check("peak  15.00 MiB -> 21.00 MiB, +6.00 MiB (+40.0%)\n" in p.stdout, p.stdout)
    check("Call sites by growth at the peak (3 sites):\n     +6.00 MiB  grew    peak 6.00 MiB -> "
          "12.00 MiB   unfreed 0 B -> 0 B   allocated 18.00 MiB -> 36.00 MiB\n" in p.stdout, p.stdout)
    check("from make_activations  drv_batch.c:" in p.stdout, p.stdout)


def test_diff_new_and_gone_sites():
    # One step makes no scratch: the scratch site is new in the three-step run.
    tmp = tempfile.mkdtemp(prefix="gpushim-diff-new-")
    one, three = batch_run(tmp, "one.trace", 4, steps=1), batch_run(tmp, "three.trace", 4)
    d = gpushim_json("diff", "--json", one, three)
    eq((d["a"]["peak_bytes"], d["b"]["peak_bytes"], d["peak_change_bytes"]),
       (14 * MiB, 15 * MiB, MiB), "peaks")
    eq(site_rows(d)[0], ("new", "make_scratch", 0, MiB, MiB, 0, 0, 0, 1536 * KiB, 1536 * KiB),
       "the scratch is new")
    eq(site_rows(d)[1][:5], ("same", "make_activations", 6 * MiB, 6 * MiB, 0), "activations")
    gone = site_rows(gpushim_json("diff", "--json", three, one))
    eq(gone[-1], ("gone", "make_scratch", MiB, 0, -MiB, 0, 0, 1536 * KiB, 0, -1536 * KiB),
       "the scratch is gone")
    check("  -1.00 MiB  gone    peak 1.00 MiB -> 0 B" in gpushim("diff", three, one).stdout,
          "gone in text")


def test_diff_bad_input():
    tmp = tempfile.mkdtemp(prefix="gpushim-diff-bad-")
    a = batch_run(tmp, "b4.trace", 4)
    plain = os.path.join(tmp, "plain.txt")
    with open(plain, "w") as f:
        f.write("x" * 100)
    for args, rc, want in [
            ([a, "/nonexistent.trace"], 1, "gpushim diff: /nonexistent.trace: offset 0: cannot open"),
            ([plain, a], 1, f"gpushim diff: {plain}: offset 0: not a gpushim trace"),
            ([a], 2, "gpushim diff: two traces to compare"),
            ([a, a, a], 2, "gpushim diff: two traces, no more"),
            (["--top", "0", a, a], 2, "gpushim diff: --top needs a number")]:
        p = gpushim("diff", *args)
        eq(p.returncode, rc, f"diff {args}: {p.stderr}")
        check(p.stderr.startswith(want), f"diff {args} says {want!r}: {p.stderr}")
        eq(p.stdout, "", f"diff {args} prints nothing")
    # A trace cut to its header: a run that recorded nothing (it died at once).
    data = open(a, "rb").read()
    empty = os.path.join(tmp, "empty.trace")
    with open(empty, "wb") as f:
        f.write(data[:16 + int.from_bytes(data[12:16], "little") + 4])
    # It is incomplete: each command says so and exits 4, --partial 0.
    p = gpushim("diff", "--json", empty, a)
    warned("diff", p)
    d = json.loads(p.stdout)
    eq((d["a"]["peak_bytes"], d["a"]["complete"], d["a"]["ending"], d["peak_change_bytes"],
        [s["status"] for s in d["sites"]]), (0, False, "died", 15 * MiB, ["new"] * 3),
       "every site new")
    eq(gpushim("diff", "--json", "--partial", empty, a).returncode, 0, "--partial")
    p = gpushim("diff", empty, empty)
    warned("diff", p)
    eq(len(p.stderr.splitlines()), 3, f"a line for each trace, then why 4: {p.stderr}")
    check("  none: neither run allocated device memory\n" in p.stdout, p.stdout)
    eq(gpushim_json("diff", "--partial", "--json", empty, empty)["sites"], [], "no sites")
    d = gpushim_json("report", "--json", "--partial", empty, empty)
    eq((d["imbalance"], d["highest_rank"], d["first_failure"], d["mean_peak_bytes"]),
       (None, None, None, 0.0), "the ranks of nothing")
    p = gpushim("report", empty, empty)
    warned("report", p)
    check("imbalance  none: no rank allocated device memory" in p.stdout, "text")
    for cmd in ("diff", "plan"):
        for args in ([cmd, "--help"], ["help", cmd]):
            p = gpushim(*args)
            eq((p.returncode, p.stdout.split("\n")[0]), (0, f"usage: gpushim {cmd} [options] "
               + ("A.trace B.trace" if cmd == "diff" else "TRACE[:BATCH] TRACE[:BATCH] ...")),
               f"gpushim {' '.join(args)}")
    check("  diff [--json] A B " in gpushim("help").stdout, "the command list names diff")


# ---- the ranks of a job ----

def rank_runs(tmp):
    """Ranks 0 and 2 run batches 4 and 14 (peaks 15 and 30 MiB); ranks 3
    and 1, in that order, run batch 8 on a 16 MiB device and fail at their
    12 MiB of activations, holding the 8 MiB of weights."""
    paths = {}
    for rank, batch, memory in [(3, 8, "16M"), (0, 4, None), (2, 14, None), (1, 8, "16M")]:
        env = {"RANK": str(rank), "LOCAL_RANK": str(rank % 2), "WORLD_SIZE": "4",
               "SIMCUDA_MEMORY": memory}
        paths[rank] = batch_run(tmp, f"rank{rank}.trace", batch, env=env, rc=1 if memory else 0)
    return paths


def test_report_ranks():
    tmp = tempfile.mkdtemp(prefix="gpushim-ranks-")
    paths = rank_runs(tmp)
    for rank, path in paths.items():
        job = [varints(p) for t, p in header_records(path) if t == 7]
        eq(job, [[rank + 1, rank % 2 + 1, 4]], f"rank {rank}'s JOB record: rank+1, local+1, size")
    given = [paths[r] for r in (2, 3, 0, 1)]
    d = gpushim_json("report", "--json", *given)
    eq((d["ranks_from"], d["note"], d["world_size"]), ("trace", None, 4), "ranks as recorded")
    eq([(r["rank"], r["local_rank"], r["path"], r["peak_bytes"],
         [(x["device"], x["peak_bytes"]) for x in r["devices"]], r["failures"], r["complete"],
         r["ending"]) for r in d["ranks"]],
       [(0, 0, paths[0], 15 * MiB, [(0, 15 * MiB)], 0, True, "finished"),
        (1, 1, paths[1], 8 * MiB, [(0, 8 * MiB)], 1, True, "finished"),
        (2, 0, paths[2], 30 * MiB, [(0, 30 * MiB)], 0, True, "finished"),
        (3, 1, paths[3], 8 * MiB, [(0, 8 * MiB)], 1, True, "finished")], "the table, by rank")
    eq([r["pid"] > 0 and r["host"] == os.uname().nodename for r in d["ranks"]], [True] * 4,
       "host and pid")
    eq((d["mean_peak_bytes"], d["imbalance"], d["highest_rank"]),
       (15.25 * MiB, round(30 / 15.25, 6), 2), "imbalance: 30 MiB / the mean 15.25 MiB")
    f3, f1 = d["ranks"][3]["first_failure"], d["ranks"][1]["first_failure"]
    eq((f3["api"], f3["device"], f3["requested_bytes"], f3["result_name"]),
       ("cuMemAlloc_v2", 0, 12 * MiB, "CUDA_ERROR_OUT_OF_MEMORY"), "rank 3's failure")
    check(f3["unix_ns"] < f1["unix_ns"], f"rank 3 ran (and failed) before rank 1: {f3} {f1}")
    eq((d["first_failure"]["rank"], d["first_failure"]["unix_ns"], d["first_failure"]["path"],
        d["failed_ranks"]), (3, f3["unix_ns"], paths[3], 2), "rank 3 failed first")

    p = gpushim("report", *given)
    eq(p.returncode, 0, p.stderr)
    lines = p.stdout.splitlines()
    eq(lines[0], "Job: 4 traces of a world of 4 ranks", "the job")
    rows = [l.split() for l in lines if l[:4].strip().isdigit()]
    eq([(r[0], r[3], r[4], r[5], r[6], r[7], r[-2], r[-1]) for r in rows],
       [("0", "15.00", "MiB", "0", "complete,", "finished", "15.00", "MiB"),
        ("1", "8.00", "MiB", "1", "complete,", "finished", "8.00", "MiB"),
        ("2", "30.00", "MiB", "0", "complete,", "finished", "30.00", "MiB"),
        ("3", "8.00", "MiB", "1", "complete,", "finished", "8.00", "MiB")], "text rows")
    check("imbalance  1.97: rank 2 peaks at 30.00 MiB; the mean of the ranks' peaks is 15.25 MiB\n"
          in p.stdout, p.stdout)
    check([l for l in lines if l.startswith("first failure  rank 3 at ")] and
          "cuMemAlloc_v2 of 12.00 MiB on device 0 (CUDA_ERROR_OUT_OF_MEMORY); 2 ranks failed"
          in p.stdout, p.stdout)


def test_report_ranks_without_job_record():
    # Traces from before the JOB record: ranks are the order given, and it says so.
    tmp = tempfile.mkdtemp(prefix="gpushim-ranks-old-")
    paths = rank_runs(tmp)
    for path in paths.values():
        without_job(path)
        eq([t for t, _ in header_records(path)].count(7), 0, "no JOB record")
    given = [paths[r] for r in (2, 3, 0, 1)]
    d = gpushim_json("report", "--json", *given)
    eq(d["ranks_from"], "order", "ranks from the order")
    check(d["note"].startswith("4 of the 4 traces record no rank"), d["note"])
    eq([(r["rank"], r["local_rank"], r["path"], r["peak_bytes"]) for r in d["ranks"]],
       [(0, None, paths[2], 30 * MiB), (1, None, paths[3], 8 * MiB), (2, None, paths[0], 15 * MiB),
        (3, None, paths[1], 8 * MiB)], "in the order given")
    eq((d["world_size"], d["highest_rank"], d["first_failure"]["rank"]), (None, 0, 1),
       "the highest and the first to fail, by place")
    check("note: 4 of the 4 traces record no rank" in gpushim("report", *given).stdout, "text note")
    # one trace alone is still the single report
    eq(json.loads(gpushim("report", "--json", paths[0]).stdout)["peak"]["bytes"], 15 * MiB,
       "one trace: the report")

    # A run with no rank in its environment records the JOB record, unknown.
    r = run([E.prog("drv_batch"), "2"], cwd=tmp, output="norank.trace",
            env={"RANK": None, "OMPI_COMM_WORLD_RANK": None, "SLURM_PROCID": None,
                 "PMI_RANK": None, "LOCAL_RANK": None, "OMPI_COMM_WORLD_LOCAL_RANK": None,
                 "SLURM_LOCALID": None, "WORLD_SIZE": None, "OMPI_COMM_WORLD_SIZE": None,
                 "SLURM_NTASKS": None, "PMI_SIZE": None})
    norank = os.path.join(tmp, "norank.trace")
    eq([varints(p) for t, p in header_records(norank) if t == 7], [[0, 0, 0]], "all unknown")
    d = gpushim_json("report", "--json", norank, paths[1])
    eq((d["ranks_from"], [x["rank"] for x in d["ranks"]]), ("order", [0, 1]), "one rank unknown")
    # Open MPI's names, and a duplicate rank.
    r = run([E.prog("drv_batch"), "2"], cwd=tmp, output="ompi.trace",
            env={"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
                 "OMPI_COMM_WORLD_SIZE": "2"})
    eq(r.rc, 0, r.err)
    ompi = os.path.join(tmp, "ompi.trace")
    eq([varints(p) for t, p in header_records(ompi) if t == 7], [[2, 1, 2]], "Open MPI's")
    d = gpushim_json("report", "--json", ompi, norank)
    eq(d["ranks_from"], "order", "unknown rank")
    d = gpushim_json("report", "--json", ompi, ompi)
    eq((d["ranks_from"], d["note"].startswith("rank 1 is recorded by more than one trace")),
       ("order", True), "a rank twice")


def test_report_ranks_bad_input():
    tmp = tempfile.mkdtemp(prefix="gpushim-ranks-bad-")
    a = batch_run(tmp, "b2.trace", 2)
    plain = os.path.join(tmp, "plain.txt")
    with open(plain, "w") as f:
        f.write("GPUSHIM\n")
    for args, want in [([a, "/nonexistent.trace"], "gpushim report: /nonexistent.trace: offset 0"),
                       ([plain, a], f"gpushim report: {plain}: offset 0: too short")]:
        p = gpushim("report", *args)
        eq(p.returncode, 1, f"report {args}: {p.stderr}")
        check(p.stderr.startswith(want), f"report {args} says {want!r}: {p.stderr}")
        eq(p.stdout, "", "nothing printed")


def test_job_record_survives_rotation():
    # drv_api_longrun 400000: about 5 MB of trace, rotated by a 4 MiB bound
    # (shim/bound/bound.c writes the header again into TRACE.next).
    tmp = tempfile.mkdtemp(prefix="gpushim-ranks-bound-")
    r = run([E.prog("drv_api_longrun"), "400000"], cwd=tmp, output="long.trace",
            env={"GPUSHIM_MAX_BYTES": "4M", "RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8"},
            timeout=600)
    eq(r.rc, 0, r.err)
    trace = os.path.join(tmp, "long.trace")
    eq([varints(p) for t, p in header_records(trace) if t == 7], [[6, 2, 8]], "JOB kept")
    d = gpushim_json("report", "--json", trace, trace)
    check(gpushim_json("report", "--json", trace)["trace"]["checkpoint"] is not None, "rotated")
    eq([(x["rank"], x["local_rank"], x["peak_bytes"]) for x in d["ranks"]],
       [(0, 1, 65 * MiB), (1, 1, 65 * MiB)], "ranks by order: rank 5 twice")
    check(d["note"].startswith("rank 5 is recorded by more than one trace"), d["note"])
