"""test_flight_recorder.py - the trace when things go wrong around the
program (issue 4): the disk fills up in the middle of a run, the ring file
cannot be made, a ring file that does not belong to the trace. The kills
are in test_crash.py.
"""
import os
import resource
import shutil
import subprocess
import tempfile
import time

from harness import (E, KiB, MiB, ROTATED_CHURN, check, eq, once, one_trace, report, report_json,
                     run, site_summary)


def diskfull(n, buffer_mb=1):
    r = run([E.prog("drv_diskfull"), str(n)], env={"GPUSHIM_BUFFER_MB": str(buffer_mb)})
    eq((r.rc, r.out), (0, "done\n"), f"the program never notices (stderr: {r.err})")
    trace = one_trace(r)
    eq(r.err.count("gpushim: cannot write trace"), 1, "said once: " + r.err)
    check("File too large" in r.err and os.path.basename(trace) + ".ring" in r.err,
          "says why and where: " + r.err)
    return trace, report_json(trace)


def test_disk_full_midway_keeps_the_rest_in_the_ring():
    # The first allocation made the files; then no file may grow: every chunk
    # the writer tries fails, and the 300 later events go to the ring.
    trace, d = diskfull(200)
    t = d["trace"]
    eq(t["write_failed"]["error"], "File too large", "why, in the trace's report")
    eq(t["write_failed"]["offset"], os.path.getsize(trace), "where: the file ends there")
    eq((t["ending"], t["complete"], t["lost_events"]), ("finished", True, 0),
       "the exit is known, and nothing was lost")
    eq(t["ring"]["use"], "read", "the ring file was read")
    eq((d["events"]["allocations"], d["events"]["frees"]), (201, 100), "every event")
    eq(d["leaks"]["bytes"], MiB + 100 * 4 * KiB, "what was left")
    text = report(trace).stdout
    check("could not be written past byte" in text and "File too large" in text,
          "the text report says so: " + text)


def test_disk_full_and_ring_full_counts_what_was_lost():
    # 75 001 events; a 1 MiB ring holds about 13 000 of them after the failure.
    trace, d = diskfull(50000)
    t = d["trace"]
    eq((t["ending"], t["complete"]), ("finished", False), "ended, but not whole")
    check(t["lost_events"] > 0, "some were lost")
    eq(d["events"]["allocations"] + d["events"]["frees"] + t["lost_events"], 75001,
       "what was kept and what was lost add up to what the program did")
    eq((t["blocks"], t["recovered_events"]), (0, d["events"]["allocations"] + d["events"]["frees"]),
       "no chunk was ever written: every event came from the ring")
    check("events were lost: the ring was full" in report(trace).stdout, "the text report says so")


def file_size_limit(limit):
    """A preexec that sets RLIMIT_FSIZE, SIGXFSZ left at its default (it kills)."""
    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return set_limit


def test_file_size_limit_below_the_ring_keeps_the_program_alive():
    # The 8 MiB ring may not be made under a 1 MiB file size limit; growing a
    # file past it would raise SIGXFSZ and kill the program: the shim checks
    # first, says so once, keeps events in memory, and the trace (small) is whole.
    bare = run([E.prog("drv_schedule")], shim=False)
    r = run([E.prog("drv_schedule")], output="t.trace", preexec=file_size_limit(MiB))
    eq((r.rc, r.out), (bare.rc, bare.out), "the program, unharmed")
    eq(r.err.count("gpushim: cannot make"), 1, "said once: " + r.err)
    check("File too large" in r.err and "events are buffered in memory" in r.err,
          "says why and what it means: " + r.err)
    d = report_json(one_trace(r))
    eq((d["trace"]["complete"], d["events"]["allocations"]), (True, 13), "the trace itself")
    eq(d["trace"]["ring"]["use"], "none", "no ring: none was needed")


def test_file_size_limit_reached_by_the_trace_keeps_the_program_alive():
    # 9.6 M events make a trace of about 2.9 MB; under a 2 MiB limit (the 1 MiB
    # ring fits) the trace stops growing at the limit and the program goes on.
    r = run([E.prog("drv_longhaul"), "600000"], output="t.trace",
            env={"GPUSHIM_BUFFER_MB": "1"}, preexec=file_size_limit(2 * MiB))
    eq((r.rc, r.out), (0, "done\n"), "the program, unharmed: " + r.err)
    eq(r.err.count("gpushim: cannot write trace"), 1, "said once: " + r.err)
    d = report_json(one_trace(r))
    t = d["trace"]
    eq((t["write_failed"]["error"], t["ending"]), ("File too large", "finished"), "why")
    check(t["write_failed"]["offset"] <= 2 * MiB, "within the limit")
    e = d["events"]
    # drv_longhaul 600000: 4 800 602 allocations, 4 800 001 frees, 1 failed allocation
    eq(e["allocations"] + e["frees"] + e["failed"] + t["lost_events"], 9_600_604,
       "kept and lost add up to what the program did")


def test_file_size_limit_below_the_ring_and_reached_by_the_trace():
    # No ring file could be made (64 KiB limit), and then the trace reaches
    # the limit: it once read as a death ("killed or crashed", nothing lost,
    # write_failed null). The shim cuts the file back to its last whole
    # chunk and says where and why in a GS_REC_STOPPED chunk there (room for
    # it kept), rewritten at exit: the run finished, the trace stopped at
    # that byte, and every event is either read or counted lost.
    r = run([E.prog("drv_longhaul"), "20000"], output="t.trace", preexec=file_size_limit(64 * KiB))
    eq((r.rc, r.out), (0, "done\n"), "the program, unharmed: " + r.err)
    eq((r.err.count("gpushim: cannot make"), r.err.count("gpushim: cannot write trace")), (1, 1),
       "each said once: " + r.err)
    trace = one_trace(r)
    check(os.path.getsize(trace) <= 64 * KiB, "within the limit")
    d = report_json(trace)
    t, e = d["trace"], d["events"]
    eq((t["ending"], t["complete"], t["write_failed"]["error"], t["ring"]["use"]),
       ("finished", False, "File too large", "none"), "it finished; the trace stopped, and why")
    eq(t["write_failed"]["offset"], os.path.getsize(trace) - 89, "where: the last 89 bytes say so")
    # drv_longhaul 20000: 160 022 allocations, 160 001 frees, 1 failed allocation
    check(t["lost_events"] > 0, t)
    eq(e["allocations"] + e["frees"] + e["failed"] + t["lost_events"], 320_024,
       "kept and lost add up to what the program did")
    eq(d["warnings"][0]["message"], f"the trace is incomplete: the shim could not write it past "
       f"byte {t['write_failed']['offset']} at {t['write_failed']['time_ns'] / 1e9:.3f} s (File "
       f"too large); {t['lost_events']} events lost: not in the trace, and no ring file kept them",
       "said")
    text = report(trace).stdout
    check("there was no ring file to keep later events" in text, text)


def test_a_trace_that_reaches_the_limit_in_its_last_drain_still_finished():
    # As above, but every chunk is written at exit: the writer thread sleeps
    # 10 s between drains and the ring holds every event, so the file reaches
    # the limit during the exit's drain. The stopped chunk was then written
    # without the end's time, and a run that finished read as a death (seen
    # when a loaded machine held the writer thread back).
    r = run([E.prog("drv_longhaul"), "20000"], output="t.trace",
            env={"GPUSHIM_FLUSH_MS": "10000", "GPUSHIM_BUFFER_MB": "256"},
            preexec=file_size_limit(64 * KiB))
    eq((r.rc, r.out), (0, "done\n"), "the program, unharmed: " + r.err)
    d = report_json(one_trace(r))
    t, e = d["trace"], d["events"]
    eq((t["ending"], t["complete"], t["write_failed"]["error"]), ("finished", False, "File too large"),
       "it finished; the trace stopped")
    eq(e["allocations"] + e["frees"] + e["failed"] + t["lost_events"], 320_024,
       "kept and lost add up to what the program did")


def test_a_trace_stopped_without_a_ring_then_killed_is_a_death_with_its_losses():
    # As above, but killed while it runs on: the GS_REC_STOPPED chunk,
    # rewritten as events are lost (every 10 ms here), says where the trace
    # stopped and what was lost by then; the run "died".
    tmp = tempfile.mkdtemp(prefix="gpushim-stopped-")
    env = dict(os.environ, **E.env, LD_PRELOAD=E.preload, GPUSHIM_OUTPUT="t.trace",
               GPUSHIM_FLUSH_MS="10")
    p = subprocess.Popen(E.wrapper + [E.prog("drv_longhaul"), "6000000"], cwd=tmp, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=file_size_limit(64 * KiB))
    trace = os.path.join(tmp, "t.trace")
    deadline = time.time() + 60
    while time.time() < deadline and not os.path.exists(trace):
        time.sleep(0.01)
    time.sleep(0.5)  # it stops within 0.1 s; then the losses are counted
    p.kill()
    out, err = p.communicate(timeout=60)
    eq(p.returncode, -9, f"killed while it ran: {err}")
    d = report_json(trace)
    t, e = d["trace"], d["events"]
    eq((t["ending"], t["complete"], t["write_failed"]["error"]), ("died", False, "File too large"),
       "a death, after the trace stopped")
    check(t["lost_events"] > e["allocations"], f"the losses after it counted: {t}, {e}")


def test_stale_ring_file_in_the_way_gets_another_name():
    # A ring left behind by a trace removed since (rm *.trace keeps *.ring):
    # the new one takes the next name, the trace records it, and a death is
    # still recovered from it.
    tmp = tempfile.mkdtemp(prefix="gpushim-stale-")
    with open(os.path.join(tmp, "victim.trace.ring"), "wb") as f:
        f.write(b"stale")
    log = os.path.join(tmp, "calls.log")
    r = run([E.prog("crash_victim"), log, "sigkill", "11", "1", "40"], cwd=tmp,
            output=os.path.join(tmp, "victim.trace"), env={"ASAN_OPTIONS": "detect_leaks=0"})
    eq((r.rc, r.err), (-9, ""), "killed, nothing said: another name is no problem")
    d = report_json(os.path.join(tmp, "victim.trace"))
    eq((d["trace"]["ending"], d["trace"]["complete"]), ("died", True), "recovered")
    eq(os.path.basename(d["trace"]["ring"]["path"]), "victim.trace.ring.1", "from the new ring")
    eq(d["events"]["allocations"] - d["events"]["frees"], d["leaks"]["count"], "consistent")


def test_failed_execs_while_threads_allocate():
    r = run([E.prog("drv_execrace")], env={"ASAN_OPTIONS": "detect_leaks=0"})
    eq(r.rc, 0, "never a crash: " + r.err)
    made = int(r.out)
    d = report_json(one_trace(r))
    eq((d["trace"]["complete"], d["trace"]["ending"]), (True, "finished"), "whole")
    check(made >= 200 * 50, f"the threads ran between the attempts ({made})")
    eq((d["events"]["allocations"], d["events"]["frees"]), (made, made), "every event")


def test_relative_trace_name_and_chdir():
    tmp = tempfile.mkdtemp(prefix="gpushim-chdir-")
    first, second = os.path.join(tmp, "first"), os.path.join(tmp, "second")
    os.mkdir(first)
    os.mkdir(second)
    with open(os.path.join(second, "rel.trace"), "w") as f:
        f.write("precious")
    # 1 M steps of churn, ROTATED_CHURN when bounded (harness.py says why
    # that many rotate a 4 MiB trace)
    for bound, steps in ((None, 1_000_000), ("4M", ROTATED_CHURN)):
        for d in (first,):
            for name in os.listdir(d):
                os.unlink(os.path.join(d, name))
        r = run([E.prog("drv_chdir"), second, str(steps)], cwd=first, output="rel.trace",
                env={"GPUSHIM_MAX_BYTES": bound})
        eq(r.rc, 0, f"status (bound {bound}): {r.err}")
        eq(sorted(os.listdir(first)), ["rel.trace"], f"the trace alone, where it began ({bound})")
        eq(sorted(os.listdir(second)), ["rel.trace"], "nothing made in the new directory")
        eq(open(os.path.join(second, "rel.trace")).read(), "precious", "nor touched")
        t = report_json(os.path.join(first, "rel.trace"))
        eq((t["trace"]["complete"], t["events"]["allocations"], t["leaks"]["bytes"]),
           (True, steps + 2, 3 * MiB), f"every event ({bound})")
        if bound:
            check(t["trace"]["checkpoint"] is not None, "the bounded trace was swapped")


def killed_trace():
    """A trace and ring of a process killed with events only in the ring."""
    tmp = tempfile.mkdtemp(prefix="gpushim-killed-")
    log = os.path.join(tmp, "calls.log")
    r = run([E.prog("crash_victim"), log, "sigkill", "7", "1", "50"], cwd=tmp,
            output=os.path.join(tmp, "victim.trace"), env={"ASAN_OPTIONS": "detect_leaks=0"})
    eq(r.rc, -9, "killed: " + r.err)
    return tmp, os.path.join(tmp, "victim.trace")


def test_ring_found_after_both_files_are_renamed():
    tmp, trace = killed_trace()
    whole = report_json(trace)
    eq((whole["trace"]["ending"], whole["trace"]["complete"]), ("died", True), "recovered")
    check(whole["trace"]["recovered_events"] > 0, "from the ring")
    moved = os.path.join(tmp, "renamed.trace")
    os.rename(trace, moved)
    os.rename(trace + ".ring", moved + ".ring")
    again = report_json(moved)
    eq(again["events"], whole["events"], "the same events after a rename")


def test_ring_of_another_trace_is_refused():
    tmp, trace = killed_trace()
    tmp2, trace2 = killed_trace()
    shutil.copy(trace2 + ".ring", trace + ".ring")  # the wrong one
    d = report_json(trace)
    eq(d["trace"]["ring"]["use"], "unusable", "refused")
    eq(d["trace"]["ring"]["problem"], "it belongs to another trace", "why")
    eq(d["trace"]["complete"], False, "so the trace is not whole")
    check("could not be read (it belongs to another trace)" in report(trace).stdout,
          "the text report says so")
    os.unlink(trace + ".ring")
    d = report_json(trace)
    eq((d["trace"]["ring"]["use"], d["trace"]["complete"]), ("missing", False), "no ring at all")


def test_damaged_ring_entries_are_counted_not_trusted():
    tmp, trace = killed_trace()
    whole = report_json(trace)
    ring = trace + ".ring"
    with open(ring, "r+b") as f:
        f.seek(4096)  # the data: the first entry's length word
        f.write(b"\xff\xff\xff\x7f")
    d = report_json(trace)
    check(d["trace"]["damaged_records"] >= 1, "the damage is counted")
    eq(d["trace"]["complete"], False, "and the trace is not whole")
    check(d["events"]["allocations"] <= whole["events"]["allocations"], "nothing invented")


@once("a scale test (100 million events) of code the other tests run in every pass")
def test_bounded_trace_of_100_million_events():
    if E.sanitized:
        return "100 million events take too long under the sanitizers"
    steps = 6_250_000  # drv_longhaul.c: 16 events a step, about 30 MB of trace
    limit = 16 * MiB
    tmp = tempfile.mkdtemp(prefix="gpushim-bound-")
    r = run([E.prog("drv_longhaul"), str(steps)], cwd=tmp, output="long.trace",
            env={"GPUSHIM_MAX_BYTES": "16M"}, timeout=900)
    eq((r.rc, r.out, r.err), (0, "done\n", ""), "the run")
    trace = os.path.join(tmp, "long.trace")
    eq(sorted(os.listdir(tmp)), ["long.trace"], "no ring or checkpoint file left")
    size = os.path.getsize(trace)
    check(size <= limit, f"{size} bytes, over the limit of {limit}")
    d = report_json(trace)
    t = d["trace"]
    eq((t["complete"], t["ending"]), (True, "finished"), "whole")
    # the checkpoint holds the events up to the last swap's midpoint: at
    # least those of the first 8 MiB (half the limit), over 10 million at
    # under 0.8 bytes an event (these chunks take about 0.3). How many more depends on where the run ended in the cycle of
    # swaps, and so on how well its chunks compressed, which changes with
    # the chunks' sizes (how often the writer drained the ring): 39 to over
    # 50 million of the 100 on this machine, so no more than that is checked
    check(t["checkpoint"] is not None and t["checkpoint"]["events"] > 10_000_000,
          f"the history up to a midpoint is summarized: {t['checkpoint']}")
    eq((d["events"]["allocations"], d["events"]["frees"]), (50_006_252, 50_000_001),
       "every event counted")
    leaks_at_peak = steps // 10 // 1000 + 1
    eq(d["peak"]["bytes"], 100 * MiB + leaks_at_peak * 4 * KiB + 36 * 64 * KiB + 64 * MiB,
       "the peak, from the summarized history")
    eq(site_summary(d["peak"]["sites"]),
       [(100 * MiB, 1, "load_weights"), (64 * MiB, 1, "peak_burst"),
        (leaks_at_peak * 4 * KiB, leaks_at_peak, "leak_per_step"),
        (36 * 64 * KiB, 8, "make_activation")],
       "what was live at the peak, by site")
    eq((d["leaks"]["bytes"], d["leaks"]["count"]), (100 * MiB + 6250 * 4 * KiB, 6251), "leaks")
    eq(site_summary(d["leaks"]["sites"]),
       [(100 * MiB, 1, "load_weights"), (6250 * 4 * KiB, 6250, "leak_per_step")], "leaks by site")
    eq([(f["requested_bytes"], f["result_name"], f["process_bytes"], f["total_bytes"],
         f["frames"][0]["function"]) for f in d["failures"]],
       [(64 << 30, "CUDA_ERROR_OUT_OF_MEMORY", 100 * MiB + 6250 * 4 * KiB, 16 << 30,
         "out_of_memory")], "the failure at the end, with what the process held then")
