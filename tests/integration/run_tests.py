#!/usr/bin/env python3
"""Integration tests: real programs run under libgpushim.so, and the
analyzer's exact figures compared with the schedule each program follows
(the schedules are described at the top of each tests/progs/*.c).

Usage: run_tests.py --build DIR [--sanitized | --tsan | --valgrind TOOL] [--unwind-check]
                    [-j N] [-k NAME]...

Runs every test_* function of every test_*.py module beside this file; a
test returns a string to say it was skipped and why. With -j N, N modules
run at once, each in a process of its own, its tests in their order. The
last line is "integration: N passed, M failed, K skipped". Standard library
only.
"""
import argparse
import concurrent.futures
import contextlib
import glob
import importlib
import io
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402


# Every directory the tests make: those of a test that passed are removed
# after it, those of a failed one are kept for a look (the message names them).
made = []
_mkdtemp = tempfile.mkdtemp


def _mkdtemp_noted(*args, **kwargs):
    d = _mkdtemp(*args, **kwargs)
    made.append(d)
    return d


tempfile.mkdtemp = _mkdtemp_noted

# The analyzer keeps symbols in a cache folder (docs/commands.md): off for
# every test, so that each reads the programs' debug information as a first
# analysis does and none sees what another left; test_symbol_cache.py turns
# it on in folders of its own.
os.environ["GPUSHIM_SYMBOL_CACHE"] = "off"


def collect():
    """Each module's tests, in order: [(module name, [test])]."""
    modules = []
    for path in sorted(glob.glob(os.path.join(HERE, "test_*.py"))):
        mod = importlib.import_module(os.path.basename(path)[:-3])
        tests = [getattr(mod, k) for k in sorted(vars(mod))
                 if k.startswith("test_") and callable(getattr(mod, k))]
        if getattr(mod, "ONCE", None):  # a module whose every test is harness.once's
            tests = [harness.once(mod.ONCE)(t) for t in tests]
        modules.append((mod.__name__, tests))
    return modules


def run_one(t):
    """Runs test t: (outcome, the lines it reports). The folders it made are
    removed when it passed or was skipped."""
    first = len(made)
    start = time.monotonic()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            note = t()
        took = f"({time.monotonic() - start:.1f} s)"
        outcome, line = ("skip", f"SKIP {t.__name__}: {note} {took}") if note else \
            ("pass", f"ok   {t.__name__} {took}")
        for d in made[first:]:
            shutil.rmtree(d, ignore_errors=True)
        del made[first:]
    except Exception:
        outcome = "fail"
        line = f"FAIL {t.__name__}\n" + traceback.format_exc().rstrip("\n")
    printed = out.getvalue().rstrip("\n")
    return outcome, (printed + "\n" if printed else "") + line


# Set in the parent before the workers fork: the tests they take by module.
_work = {}


def run_module(name):
    """A worker's share: one module's tests, in their order (a module's
    tests may share what its first one builds). Returns (name, results, the
    unwind tally of its processes, the seconds it took)."""
    for k in harness.E.unwind_tally:
        harness.E.unwind_tally[k] = 0
    start = time.monotonic()
    results = [run_one(t) for t in _work[name]]
    return name, results, dict(harness.E.unwind_tally), time.monotonic() - start


# How long each module took when it last ran (any pass: their order is much
# the same in each), so that the longest start first and none is left to run
# alone at the end; kept beside the builds, never in the tree.
TIMES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "integration-times.json")


def read_times():
    try:
        with open(TIMES) as f:
            times = json.load(f)
        return {k: float(v) for k, v in times.items()} if isinstance(times, dict) else {}
    except (OSError, ValueError, TypeError):
        return {}


def write_times(times):
    try:
        os.makedirs(os.path.dirname(TIMES), exist_ok=True)
        new = f"{TIMES}.{os.getpid()}"  # passes may end at once
        with open(new, "w") as f:
            json.dump(times, f, indent=0, sort_keys=True)
        os.replace(new, TIMES)
    except OSError:
        pass  # only an order for next time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sanitized", action="store_true")
    ap.add_argument("--tsan", action="store_true", help="a ThreadSanitizer build (make check-tsan)")
    ap.add_argument("--valgrind", choices=["memcheck"],
                    help="run the programs under the shim in this valgrind tool (make check-valgrind)")
    ap.add_argument("--unwind-check", action="store_true",
                    help="compare every stack of the fast unwinder with libunwind's "
                         "(GPUSHIM_UNWIND=check); fails on a difference, or when none was walked")
    ap.add_argument("-k", action="append", default=[],
                    help="run only tests whose name contains this (repeatable: any of them)")
    ap.add_argument("--again", action="store_true",
                    help="a further pass over the same sources (make test's sanitized and clang "
                         "passes): the tests marked harness.once are skipped")
    ap.add_argument("-j", "--jobs", type=int, default=1,
                    help="modules run at once, each in a process of its own (its tests in "
                         "order); 1: all in this process")
    a = ap.parse_args()
    harness.E.configure(a.build, a.sanitized, a.tsan, a.valgrind, a.unwind_check, a.again)
    for name, tests in collect():
        chosen = [t for t in tests if not a.k or any(k in t.__name__ for k in a.k)]
        if chosen:
            _work[name] = chosen
    counts = {"pass": 0, "fail": 0, "skip": 0}
    tally = {k: 0 for k in harness.E.unwind_tally}
    times = read_times()
    pool = None
    if a.jobs <= 1:
        done = (run_module(name) for name in _work)
    else:
        # the longest modules first (as they last ran; else the most tests);
        # a worker that dies fails the run (BrokenProcessPool), never hangs it
        order = sorted(_work, key=lambda n: (-times.get(n, 0.0), -len(_work[n])))
        pool = concurrent.futures.ProcessPoolExecutor(
            a.jobs, mp_context=multiprocessing.get_context("fork"))
        done = (f.result() for f in concurrent.futures.as_completed(
            [pool.submit(run_module, name) for name in order]))
    for name, results, t, took in done:
        if not a.k:
            times[name] = round(took, 1)
        for outcome, text in results:
            counts[outcome] += 1
            print(text, flush=True)
        for k in tally:
            tally[k] += t.get(k, 0)
    if pool:
        pool.shutdown()
    if not a.k:
        write_times(times)
    passed, failed, skipped = counts["pass"], counts["fail"], counts["skip"]
    if a.unwind_check:
        t = tally
        print(f"unwind check: {t['stacks']} stacks in {t['runs']} processes, {t['walked']} walked "
              f"by the fast unwinder ({t['went_on']} going on from the walk before, "
              f"{t['all_checked']} of them checked to the end), {t['alone']} by "
              f"libunwind alone, none differed")
        # the check proves nothing if it walked nothing: fails a whole run, or
        # a -k selection whose programs were checked
        if passed and not t["walked"] and (t["runs"] or not a.k):
            failed += 1
            print("FAIL unwind check: no stack was walked by the fast unwinder")
        elif passed and not t["went_on"] and not a.k:
            failed += 1
            print("FAIL unwind check: no walk went on from the walk before")
    print(f"integration: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
