#!/usr/bin/env python3
"""Integration tests: real programs run under libgpushim.so, and the
analyzer's exact figures compared with the schedule each program follows
(the schedules are described at the top of each tests/progs/*.c).

Usage: run_tests.py --build DIR [--sanitized | --tsan | --valgrind TOOL] [--unwind-check]
                    [-k NAME]...

Runs every test_* function of every test_*.py module beside this file; a
test returns a string to say it was skipped and why. The last line is
"integration: N passed, M failed, K skipped". Standard library only.
"""
import argparse
import glob
import importlib
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
    tests = []
    for path in sorted(glob.glob(os.path.join(HERE, "test_*.py"))):
        mod = importlib.import_module(os.path.basename(path)[:-3])
        tests += [getattr(mod, k) for k in sorted(vars(mod)) if k.startswith("test_")
                  and callable(getattr(mod, k))]
    return tests


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
    a = ap.parse_args()
    harness.E.configure(a.build, a.sanitized, a.tsan, a.valgrind, a.unwind_check)
    passed = failed = skipped = 0
    for t in collect():
        if a.k and not any(k in t.__name__ for k in a.k):
            continue
        first = len(made)
        start = time.monotonic()
        try:
            note = t()
            took = f"({time.monotonic() - start:.1f} s)"
            if note:
                skipped += 1
                print(f"SKIP {t.__name__}: {note} {took}")
            else:
                passed += 1
                print(f"ok   {t.__name__} {took}")
            for d in made[first:]:
                shutil.rmtree(d, ignore_errors=True)
            del made[first:]
        except Exception:
            failed += 1
            print(f"FAIL {t.__name__}")
            traceback.print_exc(file=sys.stdout)
    if a.unwind_check:
        t = harness.E.unwind_tally
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
