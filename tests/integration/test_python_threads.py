"""test_python_threads.py - the names Python's threading gives threads
(issue 42 item 3), which CPython up to 3.13 never hands to the OS: each
allocating thread of tests/progs/python/named_threads.py is named in the
report as the program named it when it started it (a name given, the
default "Thread-1 (work)", a pool's "pool_0", one longer than a trace
keeps cut at a character), whether it held the GIL or not; the main thread
keeps the process's name. Checked on every CPython here, in JSON, text and
the HTML page's threads cells.
"""
import re

from harness import check, eq, one_trace, report, report_json, run
from test_export_html import export_html, rows
from test_python import libcuda, prog, py_env, pythons, PROGS


def kept(name):
    """What a trace keeps of a thread's name: 63 bytes, cut at a character."""
    b = name.encode()[:63]
    return b.decode("utf-8", errors="ignore")


def test_threads_named_as_python_named_them():
    for py in pythons():
        r = run([py, prog("named_threads.py"), libcuda()], env=dict(py_env(), PYTHONPATH=PROGS))
        eq((r.rc, r.err), (0, ""), f"{py}: the run")
        started = {int(line.split(" ", 1)[0]): line.split(" ", 1)[1]
                   for line in r.out.splitlines()}
        eq(sorted(started), [1, 2, 3, 4, 5, 6, 7], f"{py}: every thread allocated")
        eq((started[2], started[3], started[5], started[7]), ("loader-3", "pinner", "pool_0",
                                                              "before"), f"{py}: as named")
        check(re.fullmatch(r"Thread-\d+( \(work\))?", started[4]), f"{py}: {started[4]!r}")
        d = report_json(one_trace(r))
        named = [t["name"] for s in d["leaks"]["sites"] for t in s["threads"]]
        eq(sorted(named), sorted(kept(name) for name in started.values()),
           f"{py}: each thread's name, as the program named it at its start")
        eq({t["allocations"] for s in d["leaks"]["sites"] for t in s["threads"]}, {1},
           f"{py}: one allocation a thread")
        gil = {t["name"]: s["gil"] for s in d["leaks"]["sites"] for t in s["threads"]}
        eq(gil["pinner"], False, f"{py}: named, though it allocated without the GIL")
        check(len(kept(started[6]).encode()) <= 63 and started[6].startswith(kept(started[6])),
              f"{py}: the long name cut at a character")
        text = report(one_trace(r)).stdout
        leaks = text[text.index("Unfreed at the end"):]
        for size in (2, 3, 4, 5, 6, 7):
            check(kept(started[size]) in leaks, f"{py}: {started[size]!r} in the text report")
        check("after" not in leaks, f"{py}: a rename after the start is not seen")
        _, _, page = export_html(one_trace(r))
        cells = {row[4][0] for table in ("peak-sites", "leak-sites") for row in rows(page, table)}
        line = next(l.strip() for l in leaks.splitlines() if "loader-3" in l)
        check(line in cells, f"{py}: the HTML's threads cell says what the text says: {line!r}")
