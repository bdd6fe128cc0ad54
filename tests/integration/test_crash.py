"""test_crash.py - a process that dies loses nothing (issue: crash-proof
recording): every allocation and free that had returned to the program
before it died is in its trace, whatever killed it, and the shim leaves the
program's own signal handling alone.

tests/progs/crash_victim.c logs each call before it is made (B) and after it
returned (E), one write(2) a line, then dies at a chosen call. Here each E
call must be in the trace; a call with a B line only (in flight at the
death, at most one per thread) may be in it or not, so the analyzer's
figures must equal those of the ended calls plus some subset of the
in-flight ones, exactly. The cases come from a fixed master seed; a failure
gives the command line that reruns its case.
"""
import concurrent.futures
import itertools
import math
import os
import random
import shlex
import shutil
import subprocess
import tempfile
import time

from harness import E, MiB, check, eq, no_tsan_report, one_trace, report_json, same_behaviour

MASTER_SEED = 0x6A55C0DE
CASES_PER_MODE = 20  # six ways to die: 120 kills, plus the exit() control
MAX_DIE_AT = 100000  # log-uniform from 1: deaths before the first 100 ms write, and after several
STATUS = {"sigkill": -9, "segv": -11, "abort": -6, "_exit": 3, "exit_group": 4, "ext": -9,
          "exit": 0}
# The program's own death, not a sanitizer's report of it (sanitized builds).
VICTIM_ENV = {"ASAN_OPTIONS": "handle_segv=0:handle_abort=0:detect_leaks=0"}


class Case:
    def __init__(self, mode, seed, threads, die_at, kill_after):
        self.mode, self.seed, self.threads, self.die_at = mode, seed, threads, die_at
        self.kill_after = kill_after  # ext: seconds from the first log line to SIGKILL

    def __str__(self):
        s = f"{self.mode} seed={self.seed} threads={self.threads} die_at={self.die_at}"
        return s + (f" killed after {self.kill_after * 1000:.0f} ms" if self.mode == "ext" else "")


def cases(mode, n=CASES_PER_MODE):
    """The cases of one mode: the same on every run, whatever else runs."""
    rng = random.Random(f"{MASTER_SEED}-{mode}")
    bands = list(range(n))  # each mode's DIE_ATs spread over 1..MAX_DIE_AT, log-uniform
    rng.shuffle(bands)
    out = []
    for i in range(n):
        seed = rng.randrange(1, 1 << 32)
        die_at = int(math.exp((bands[i] + rng.random()) / n * math.log(MAX_DIE_AT)))
        kill_after = rng.uniform(0.02, 0.2)
        out.append(Case(mode, seed, 1 + i % 4, 0 if mode == "ext" else max(1, die_at),
                        kill_after if mode == "ext" else None))
    return out


def victim_env(trace):
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e.update(E.env)
    e.update(VICTIM_ENV)
    e.update({"LD_PRELOAD": E.preload, "GPUSHIM_OUTPUT": trace})
    return e


def rerun_command(c, d):
    log, trace = os.path.join(d, "calls.log"), os.path.join(d, "victim.trace")
    env = dict(E.env, **VICTIM_ENV, LD_PRELOAD=E.preload, GPUSHIM_OUTPUT=trace)
    argv = [E.prog("crash_victim"), log, c.mode, str(c.seed), str(c.threads), str(c.die_at)]
    cmd = (f"mkdir -p {d}; rm -f {log} {trace} {trace}.ring; "
           + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items())) + " "
           + " ".join(shlex.quote(a) for a in argv))
    if c.mode == "ext":
        cmd += f" & sleep {c.kill_after:.3f}; kill -9 $!; wait"
    return cmd + f"; {E.gpushim} report --json {trace}"


def run_victim(c):
    """Runs one case in a directory of its own; returns (directory,
    (status or None on a timeout, stdout, stderr))."""
    d = tempfile.mkdtemp(prefix="gpushim-crash-")
    log, trace = os.path.join(d, "calls.log"), os.path.join(d, "victim.trace")
    argv = [E.prog("crash_victim"), log, c.mode, str(c.seed), str(c.threads), str(c.die_at)]
    p = subprocess.Popen(argv, cwd=d, env=victim_env(trace), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        if c.mode == "ext":
            deadline = time.monotonic() + 30
            while p.poll() is None and time.monotonic() < deadline and \
                    (not os.path.exists(log) or os.path.getsize(log) == 0):
                time.sleep(0.001)
            time.sleep(c.kill_after)
            p.kill()
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return d, (None, out, err)
    no_tsan_report(err, argv)
    return d, (p.returncode, out, err)


def parse_log(path):
    """(ended calls in log order, in-flight calls by thread) from a victim's
    log; a call is (tid, op, func, size, addr or None)."""
    with open(path) as f:
        text = f.read()
    lines = text.split("\n")
    lines.pop()  # after the last newline: empty, or a line the death cut short
    ended, open_calls = [], {}
    for n, line in enumerate(lines, 1):
        w = line.split()
        kind, tid, op, func, size = w[0], int(w[1]), w[2], w[3], int(w[4])
        if kind == "B":
            check(tid not in open_calls, f"log line {n}: thread {tid} begins two calls")
            open_calls[tid] = (tid, op, func, size, None)
        else:
            check(open_calls.get(tid, ())[:4] == (tid, op, func, size),
                  f"log line {n}: ends a call thread {tid} did not begin: {line}")
            del open_calls[tid]
            ended.append((tid, op, func, size, int(w[5], 16)))
    return ended, open_calls


def expected(ended, extra):
    """What the trace holds if it has the ended calls and the in-flight
    calls `extra`: (allocations, frees, leaked bytes, leaked count), and
    {innermost function: (bytes, count)} still live."""
    live = {}
    allocs = frees = 0
    for tid, op, func, size, addr in ended:
        if op == "A":
            allocs += 1
            live[(tid, addr)] = (func, size)
        else:
            frees += 1
            check(live.pop((tid, addr), None) == (func, size),
                  f"log: thread {tid} frees {addr:#x}, which it does not hold")
    by_func = {}
    for func, size in live.values():
        b, n = by_func.get(func, (0, 0))
        by_func[func] = (b + size, n + 1)
    for tid, op, func, size, _ in extra:
        b, n = by_func.get(func, (0, 0))
        if op == "A":
            allocs += 1
            by_func[func] = (b + size, n + 1)
        else:  # the thread's own allocation, live among the ended calls
            frees += 1
            by_func[func] = (b - size, n - 1)
    by_func = {f: v for f, v in by_func.items() if v[1]}
    totals = (allocs, frees, sum(b for b, _ in by_func.values()),
              sum(n for _, n in by_func.values()))
    return totals, by_func


def traced(d):
    """The analyzer's figures, in the form of expected()."""
    ev, leaks = d["events"], d["leaks"]
    by_func = {}
    for s in leaks["sites"]:
        f = s["frames"][0]["function"] if s["frames"] else None
        b, n = by_func.get(f, (0, 0))
        by_func[f] = (b + s["bytes"], n + s["count"])
    return (ev["allocations"], ev["frees"], leaks["bytes"], leaks["count"]), by_func


def check_case(c):
    """Runs and checks one case; returns None, or (what went wrong, its
    directory)."""
    d, (rc, out, err) = run_victim(c)
    problems = []
    if rc != STATUS[c.mode]:
        problems.append(f"exit status {rc}, want {STATUS[c.mode]}; stderr: {err[-2000:]}")
    if out:
        problems.append(f"stdout: {out[:200]!r}")
    log = os.path.join(d, "calls.log")
    try:
        ended, in_flight = parse_log(log)
        if c.mode == "exit":
            eq(in_flight, {}, "calls in flight at exit()")
        traces = sorted(f for f in os.listdir(d) if f.endswith(".trace"))
        empty = traces == ["victim.trace"] and os.path.getsize(os.path.join(d, traces[0])) == 0
        if (not traces or empty) and not ended:
            pass  # killed before its first call returned (or the header): nothing to hold
        elif traces != ["victim.trace"]:
            problems.append(f"trace files {traces}")
        else:
            rep = report_json(os.path.join(d, "victim.trace"))
            got = traced(rep)
            options = {}
            for k in range(len(in_flight) + 1):
                for extra in itertools.combinations(sorted(in_flight.values()), k):
                    options[extra] = expected(ended, extra)
            if got not in options.values():
                want = options[()]
                figures = (f"(allocations, frees, leaked bytes, leaked count) in the trace "
                           f"{got[0]}, in the log {want[0]}; ")
                if in_flight:
                    figures += (f"with the {len(in_flight)} call(s) in flight, any of "
                                f"{sorted(set(o[0] for o in options.values()))}; ")
                figures += (f"missing from the trace: {want[0][0] - got[0][0]} allocations, "
                            f"{want[0][1] - got[0][1]} frees")
                if got[0] in (o[0] for o in options.values()):
                    figures += f"; live by function: trace {got[1]}, log {want[1]}"
                problems.append(figures)
            ev, t = rep["events"], rep["trace"]
            if (ev["failed"], ev["frees_unknown"]) != (0, 0):
                problems.append(f"failed {ev['failed']}, frees of unknown addresses "
                                f"{ev['frees_unknown']}")
            ending = "finished" if c.mode == "exit" else "died"
            flags = (t["complete"], t["finished"], t.get("ending"))
            if flags != (True, c.mode == "exit", ending):
                problems.append(f"trace (complete, finished, ending) {flags}, want "
                                f"{(True, c.mode == 'exit', ending)}")
    except (AssertionError, OSError, ValueError, IndexError, KeyError) as e:
        problems.append(f"{type(e).__name__}: {e}")
    if not problems:
        shutil.rmtree(d, ignore_errors=True)
        return None
    return (f"{c}: " + "\n    ".join(problems)
            + f"\n    files kept in {d}; rerun: {rerun_command(c, d)}"), d


def run_cases(mode):
    cs = cases(mode) if mode != "exit" else cases(mode, 8)
    workers = min(8, max(2, os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(check_case, cs))
    bad = [r for r in results if r]
    if bad:
        for _, d in bad[3:]:  # the files of the cases told in full only
            shutil.rmtree(d, ignore_errors=True)
        raise AssertionError(f"{len(bad)} of {len(cs)} {mode} cases failed "
                             f"(master seed {MASTER_SEED:#x}):\n  "
                             + "\n  ".join(m for m, _ in bad[:3])
                             + "".join(f"\n  {m.split(chr(10))[0]}" for m, _ in bad[3:])
                             + ("\n  (each reruns as above: crash_victim LOG MODE SEED THREADS "
                                "DIE_AT)" if bad[3:] else ""))


def test_crash_control_exit_loses_nothing():
    run_cases("exit")


def test_crash_sigkill_loses_nothing():
    run_cases("sigkill")


def test_crash_segv_loses_nothing():
    run_cases("segv")


def test_crash_abort_loses_nothing():
    run_cases("abort")


def test_crash_underscore_exit_loses_nothing():
    run_cases("_exit")


def test_crash_exit_group_loses_nothing():
    run_cases("exit_group")


def test_crash_killed_from_outside_loses_nothing():
    run_cases("ext")


def test_crash_signal_handlers_stay_the_programs_own():
    r = same_behaviour([E.prog("sig_handlers"), "handlers"])
    eq(r.rc, 0, "status")
    eq(r.out.split("\n")[1:], [
        "after allocating: the SIGSEGV handler is ours",
        "after allocating: the SIGTERM handler is ours",
        "after allocating: no other disposition and no blocked signal changed",
        "SIGSEGV handler ran 1 time(s), fault address NULL",
        "raise(SIGTERM): handler ran 1 time(s), in the main thread: yes",
        "kill(getpid(), SIGTERM): handler ran 2 time(s), in the main thread: yes",
        "at the end: both handlers are still ours",
        ""], "what the program saw")
    d = report_json(one_trace(r))
    eq((d["events"]["allocations"], d["events"]["frees"], d["leaks"]["bytes"],
        d["leaks"]["count"]), (3, 1, 5 * MiB, 2), "events, leaks")
    eq(sorted((s["bytes"], s["frames"][0]["function"]) for s in d["leaks"]["sites"]),
       [(MiB, "alloc_kept"), (4 * MiB, "alloc_after")], "leaks by function")
    eq((d["trace"]["complete"], d["trace"]["finished"], d["trace"].get("ending")),
       (True, True, "finished"), "trace (complete, finished, ending)")


def test_crash_sigterm_handler_that_exits_finishes_the_trace():
    r = same_behaviour([E.prog("sig_handlers"), "term_exit"])
    eq((r.rc, r.out), (7, "allocated\n"), "the handler's exit(7) ended it")
    d = report_json(one_trace(r))
    eq([(s["bytes"], s["frames"][0]["function"]) for s in d["leaks"]["sites"]],
       [(MiB, "alloc_kept")], "leaks")
    eq((d["trace"]["complete"], d["trace"]["finished"], d["trace"].get("ending")),
       (True, True, "finished"), "trace (complete, finished, ending)")
