"""test_export_viewers.py - gpushim export --format=perfetto and
--format=torch-snapshot (issue 6, item 6): the events over time, for
ui.perfetto.dev / chrome://tracing and for PyTorch's memory_viz; and the
exports opened by the viewers themselves (issue 18 item 5): the folded
export in speedscope (npm) in headless Chromium, the torch snapshot through
torch/cuda/_memory_viz.py of Debian's PyTorch 1.13 (stats, segments,
memory; 2.x's segsum and trace where that PyTorch is installed, on a GPU
machine: examples/gpu_torch_check.py). ui.perfetto.dev cannot run here (a
web app with no npm package to serve offline): perfetto is checked against
the format's rules.

perfetto is checked against the trace-event format's rules (a JSON object
with a traceEvents array; every event has ph, a numeric ts and the traced
pid; counters' args are numbers; each track in time order; metadata names
the process and its threads) and against the schedules: each device's
counter goes through the device bytes the program's header comment gives,
its highest sample is the report's device peak, and marks and failures are
instants with the right figures.

torch-snapshot is checked as memory_viz reads it: loaded by an unpickler
that refuses every class (plain values only), made of protocol-4 opcodes
that MemoryViz.js's own unpickler knows, every key it and
torch/cuda/_memory_viz.py read present with its type, blocks that tile
each segment in address order, each device's events the schedule's (action,
size, address) in order and consistent when replayed (memory_viz replays
them backwards from the segments; a block outside every segment breaks it),
frames that name the program's functions innermost first, oom entries that
carry the request and what the device had free.
"""
import base64
import html
import io
import json
import os
import pickle
import pickletools
import re
import shutil
import subprocess
import tempfile

from harness import (E, KiB, MiB, ROTATED_CHURN, check, churn_sizes, eq, once, one_trace,
                     report_json, run)


def export(trace, fmt, *args):
    out = os.path.join(tempfile.mkdtemp(prefix="gpushim-viewers-"), "out")
    p = subprocess.run([E.gpushim, "export", "--format=" + fmt, "-o", out, *args, trace],
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, f"export --format={fmt}: {p.stderr}")
    eq(p.stderr, "", "nothing said")
    with open(out, "rb") as f:
        return f.read()


# ---- perfetto ----

def no_constant(name):
    raise AssertionError(f"JSON has no {name}")


def perfetto(trace):
    """The trace-event JSON, checked against the format's rules."""
    d = json.loads(export(trace, "perfetto").decode("utf-8"), parse_constant=no_constant)
    pid = report_json(trace)["process"]["pid"]
    check(isinstance(d, dict), "the JSON Object Format")
    check(d.get("displayTimeUnit") in ("ms", "ns"), f"displayTimeUnit: {d.get('displayTimeUnit')}")
    events = d["traceEvents"]
    check(isinstance(events, list) and events, "a traceEvents array")
    last = {}
    for e in events:
        check(isinstance(e, dict), f"an event is an object: {e}")
        check(e.get("ph") in ("C", "i", "M"), f"a phase of ours: {e}")
        check(type(e.get("ts")) in (int, float), f"ts a number: {e}")
        eq(e.get("pid"), pid, f"pid of {e}")
        check(type(e.get("tid")) is int, f"tid an integer: {e}")
        check(isinstance(e.get("name"), str) and e["name"], f"a name: {e}")
        check(isinstance(e.get("args", {}), dict), f"args an object: {e}")
        if e["ph"] == "C":
            check(e["args"] and all(type(v) in (int, float) for v in e["args"].values()),
                  f"a counter's args are numbers: {e}")
        if e["ph"] == "i":
            check(e.get("s") in ("g", "p", "t"), f"an instant's scope: {e}")
        if e["ph"] != "M":
            # an instant's track: the process's, or its thread's
            track = ((e["ph"], e["name"]) if e["ph"] == "C" else
                     ("i", e["s"], e["tid"] if e["s"] == "t" else None))
            check(e["ts"] >= last.get(track, 0), f"{track} in time order at {e}")
            last[track] = e["ts"]
    meta = {(e["name"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M"}
    eq(meta.get(("process_name", pid)), report_json(trace)["process"]["command"],
       "the process is named by its command")
    eq(meta.get(("thread_name", pid)), "main", "the main thread is named")
    for e in events:
        if e["ph"] == "i":
            check(("thread_name", e["tid"]) in meta, f"the thread of {e} is named")
    return d, events


def counters(events):
    """{device: [(ts, bytes)]} of the GPU memory counters."""
    out = {}
    for e in events:
        if e["ph"] == "C":
            check(e["name"].startswith("GPU ") and e["name"].endswith(" memory"), e["name"])
            eq(list(e["args"]), ["bytes"], "a counter's args")
            out.setdefault(int(e["name"].split()[1]), []).append((e["ts"], e["args"]["bytes"]))
    return out


def coalesced(changes, cuts=()):
    """The samples perfetto writes for [(time_us, bytes after)]: per
    microsecond, its highest value when above both the one before and its
    last, then its last (docs/export.md, perfetto). A mark or a failure ends
    the microsecond's window: cuts are the indices of the changes that one
    came just before."""
    out, before, i = [], 0, 0
    while i < len(changes):
        j = i + 1
        while j < len(changes) and changes[j][0] == changes[i][0] and j not in cuts:
            j += 1
        values = [b for _, b in changes[i:j]]
        if max(values) > values[-1] and max(values) > before:
            out.append(max(values))
        out.append(values[-1])
        before = values[-1]
        i = j
    return out


def device_changes(snapshot, device):
    """[(time_us, device bytes after)] from the snapshot's segment events."""
    live, out = 0, []
    for e in snapshot["device_traces"][device]:
        if e["action"] in ("segment_alloc", "segment_free"):
            live += e["size"] if e["action"] == "segment_alloc" else -e["size"]
            out.append((e["time_us"], live))
    return out


def check_counter(events_by_device, snapshot, device, schedule, peak, cuts=()):
    got = [b for _, b in events_by_device[device]]
    changes = device_changes(snapshot, device)
    eq([b for _, b in changes], schedule, f"device {device}'s bytes after each change")
    eq(got, coalesced(changes, cuts),
       f"GPU {device}'s counter: the schedule, coalesced by microsecond")
    eq(max(got), peak, f"GPU {device}'s highest sample is its peak")
    ts = [t for t, _ in events_by_device[device]]
    eq(ts, sorted(ts), "in time order")


def test_perfetto_counters_and_marks_follow_the_schedule():
    # drv_api_steps.c: 4 MiB of weights, then 3 steps of +2 MiB activation,
    # +1 MiB history, -2 MiB activation; marks epoch, step x4, epoch.
    trace = one_trace(run([E.prog("drv_api_steps")]))
    d, events = perfetto(trace)
    snap = torch_snapshot(trace)
    rep = report_json(trace)
    schedule = [m * MiB for m in (4, 6, 7, 5, 7, 8, 6, 8, 9, 7)]
    # a step's mark comes before changes 1, 4 and 7; the changes after a
    # mark are never at its time, though the trace keeps their times in
    # microseconds, never before the mark's (so often at it)
    check_counter(counters(events), snap, 0, schedule, 9 * MiB, cuts=(1, 4, 7))
    eq(rep["devices"][0]["peak_bytes"], 9 * MiB, "the report's device peak")
    eq(list(counters(events)), [0], "one device")
    marks = [e for e in events if e["ph"] == "i" and e.get("cat") == "mark"]
    eq([(m["name"], m["args"]["device_bytes"]) for m in marks],
       [("epoch", 0), ("step", 4 * MiB), ("step", 5 * MiB), ("step", 6 * MiB),
        ("step", 7 * MiB), ("epoch", 7 * MiB)], "each mark, with the device bytes then")
    eq([round(m["ts"] * 1000) for m in marks], [m["time_ns"] for m in rep["marks"]],
       "marks at the report's times, in microseconds")
    eq([e for e in events if e.get("cat") == "failure"], [], "no failure")
    # a mark's time lies between the counter samples around it
    c = counters(events)[0]
    eq([m["args"]["device_bytes"] for m in marks],
       [([b for t, b in c if t <= m["ts"]] or [0])[-1] for m in marks],
       "each mark sees the counter's value at its time")


def test_perfetto_failure_instants():
    # drv_oom.c under 16 MiB: 4 x 4 MiB, the fifth fails with 0 of 16 MiB free,
    # then all four freed.
    trace = one_trace(run([E.prog("drv_oom")], env={"SIMCUDA_MEMORY": "16M"}))
    d, events = perfetto(trace)
    snap = torch_snapshot(trace)
    check_counter(counters(events), snap, 0, [m * MiB for m in (4, 8, 12, 16, 12, 8, 4, 0)],
                  16 * MiB, cuts=(4,))
    fails = [e for e in events if e["ph"] == "i" and e.get("cat") == "failure"]
    eq(len(fails), 1, "one failure")
    f = fails[0]
    eq((f["name"], f["s"], f["tid"]), ("out of memory", "t", d_pid(events)),
       "an instant on the thread that failed")
    eq(f["args"], {"api": "cuMemAlloc_v2", "result": "CUDA_ERROR_OUT_OF_MEMORY",
                   "outcome": "unrecovered", "device": 0,
                   "requested_bytes": 4 * MiB, "device_free_bytes": 0,
                   "device_total_bytes": 16 * MiB, "process_device_bytes": 16 * MiB},
       "the request, and the device's free and total bytes")
    at = [b for t, b in counters(events)[0] if t <= f["ts"]][-1]
    eq(at, 16 * MiB, "the counter is at 16 MiB when it fails")


def d_pid(events):
    return next(e["pid"] for e in events if e["ph"] == "M")


def test_exports_say_what_became_of_each_failure():
    # rt_framework_failures.c (test_failures.py has its schedule): a retry
    # PyTorch recovers from, a FABRIC request refused, cacheInfo's probe
    # (all free memory, then halved until it fits), and the OOM it dies of
    # (two attempts: the caching allocator's, and its retry after emptying
    # its cache). perfetto shows each, named by its outcome, on its thread;
    # the torch snapshot has an "oom" only for those PyTorch raised on.
    r = run([E.prog("rt_framework_failures"), "retry", "fabric", "probe", "oom"],
            env={"SIMCUDA_MEMORY": "64M", "SIMCUDA_OTHER": "1M"})
    eq(r.rc, 1, r.err)
    trace = one_trace(r)
    want = [(f["outcome"], f["requested_bytes"]) for f in report_json(trace)["failures"]]
    eq([o for o, _ in want], ["recovered", "refused", "probe", "unrecovered", "unrecovered"],
       "the report's outcomes, in order")
    _, events = perfetto(trace)
    fails = [e for e in events if e["ph"] == "i" and e.get("cat") == "failure"]
    eq([(e["args"]["outcome"], e["args"]["requested_bytes"]) for e in fails], want,
       "every failure, in the order they came, with its outcome")
    eq([e["name"] for e in fails],
       ["out of memory, recovered", "allocation refused", "out of memory, a probe",
        "out of memory", "out of memory"], "each named by its outcome")
    eq({e["s"] for e in fails}, {"t"}, "on their threads")
    snap = torch_snapshot(trace)
    ooms = [(e["size"], e["device_free"]) for t in snap["device_traces"] for e in t
            if e["action"] == "oom"]
    eq(ooms, [(f["requested_bytes"], f["free_bytes"]) for f in report_json(trace)["failures"]
              if f["outcome"] == "unrecovered"],
       "the snapshot's ooms are the unrecovered ones: 48 MiB, twice")
    eq(len(ooms), 2, "two of them")


def test_perfetto_a_counter_per_device():
    # drv_multidevice.c: device 0 3 + 1 MiB, the 1 freed; device 1 8 + 2 MiB.
    trace = one_trace(run([E.prog("drv_multidevice")], env={"SIMCUDA_DEVICES": "2"}))
    d, events = perfetto(trace)
    snap = torch_snapshot(trace)
    rep = report_json(trace)
    peaks = {x["device"]: x["peak_bytes"] for x in rep["devices"]}
    eq(peaks, {0: 4 * MiB, 1: 10 * MiB}, "the report's device peaks")
    c = counters(events)
    eq(sorted(c), [0, 1], "a track per device")
    check_counter(c, snap, 0, [3 * MiB, 4 * MiB, 3 * MiB], peaks[0])
    check_counter(c, snap, 1, [8 * MiB, 10 * MiB], peaks[1])


# ---- torch-snapshot ----

# What MemoryViz.js's unpickler knows, less what a memo, a tuple or the
# older protocols need: ours uses these alone.
ALLOWED = {"PROTO", "FRAME", "EMPTY_DICT", "MARK", "SETITEMS", "EMPTY_LIST", "APPENDS", "BININT",
           "LONG1", "SHORT_BINUNICODE", "BINUNICODE", "BINFLOAT", "NEWTRUE", "NEWFALSE",
           "NONE", "STOP"}


class Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise AssertionError(f"a class in the snapshot: {module}.{name}")


def torch_snapshot(trace, *args):
    data = export(trace, "torch-snapshot", *args)
    ops = list(pickletools.genops(data))
    eq((ops[0][0].name, ops[0][1]), ("PROTO", 4), "protocol 4")
    eq(ops[-1][0].name, "STOP", "one pickle")
    check({op.name for op, _, _ in ops} <= ALLOWED,
          f"opcodes outside the set: {({op.name for op, _, _ in ops} - ALLOWED)}")
    for op, arg, pos in ops:
        if op.name == "LONG1":
            check(-2 ** 63 <= arg < 2 ** 63, f"an int of 8 bytes at most at {pos}: {arg}")
    marks = sum(1 for op, _, _ in ops if op.name == "MARK")
    eq(marks, sum(1 for op, _, _ in ops if op.name in ("APPENDS", "SETITEMS")), "marks closed")
    d = Plain(io.BytesIO(data)).load()
    check_shape(d)
    for dev in range(len(d["device_traces"])):
        backwards(d, dev)
    return d


def typed(d, key, types, what):
    check(key in d, f"{what} has {key}: {sorted(d)}")
    check(type(d[key]) in types, f"{what}[{key}] is {types}: {d[key]!r}")
    return d[key]


def check_frames(frames, what):
    check(isinstance(frames, list), f"{what}: frames a list")
    for f in frames:
        eq(sorted(f), ["filename", "line", "name"], f"{what}: a frame's keys")
        typed(f, "filename", (str,), what)
        typed(f, "name", (str,), what)
        typed(f, "line", (int,), what)


def check_shape(d):
    """Every key memory_viz (MemoryViz.js, _memory_viz.py) reads, with its
    type; blocks that tile each segment in address order."""
    check(isinstance(d, dict), "a dict")
    segs = typed(d, "segments", (list,), "the snapshot")
    traces = typed(d, "device_traces", (list,), "the snapshot")
    typed(d, "allocator_settings", (dict,), "the snapshot")
    check(all(isinstance(t, list) for t in traces), "a list of events per device")
    addrs = []
    for s in segs:
        w = f"segment {s.get('address')}"
        dev = typed(s, "device", (int,), w)
        check(0 <= dev < len(traces), f"{w}: device {dev} has a trace")
        addr = typed(s, "address", (int,), w)
        total = typed(s, "total_size", (int,), w)
        for k in ("allocated_size", "active_size", "requested_size", "stream"):
            typed(s, k, (int,), w)
        check(typed(s, "segment_type", (str,), w) in ("small", "large"), w)
        typed(s, "is_expandable", (bool,), w)
        check_frames(typed(s, "frames", (list,), w), w)
        at, active = addr, 0
        for b in typed(s, "blocks", (list,), w):
            eq(typed(b, "address", (int,), w), at, f"{w}: blocks tile it in address order")
            size = typed(b, "size", (int,), w)
            check(size > 0, f"{w}: a block of bytes")
            req = typed(b, "requested_size", (int,), w)
            state = typed(b, "state", (str,), w)
            check(state in ("active_allocated", "inactive"), f"{w}: state {state}")
            check(req <= size, f"{w}: requested within the block")
            check_frames(typed(b, "frames", (list,), w), w)
            active += size if state == "active_allocated" else 0
            at += size
        eq(at, addr + total, f"{w}: the blocks end where it ends")
        eq((s["allocated_size"], s["active_size"]), (active, active), f"{w}: active bytes")
        addrs.append(addr)
    eq(addrs, sorted(addrs), "segments in address order")
    for dev, t in enumerate(traces):
        last = 0
        for e in t:
            w = f"device {dev} event {e}"
            check(typed(e, "action", (str,), w) in
                  ("alloc", "free_completed", "segment_alloc", "segment_free", "oom"), w)
            for k in ("addr", "size", "stream", "time_us"):
                typed(e, k, (int,), w)
            check(e["time_us"] >= last, f"{w}: in time order")
            last = e["time_us"]
            check_frames(typed(e, "frames", (list,), w), w)
            if e["action"] == "oom":
                typed(e, "device_free", (int,), w)


def backwards(d, dev):
    """memory_viz's Allocator State History: from the segments and active
    blocks at the end, each event undone, last first; at every step each
    block must lie in a segment (else MemoryViz.js fails drawing it), a
    segment undone must be there, and none may overlap."""
    segs = {s["address"]: s["total_size"] for s in d["segments"] if s["device"] == dev}
    blocks = {b["address"]: b["size"] for s in d["segments"] if s["device"] == dev
              for b in s["blocks"] if b["state"] == "active_allocated"}
    for e in reversed(d["device_traces"][dev]):
        a, n = e["addr"], e["size"]
        if e["action"] == "free_completed":
            check(a not in blocks, f"a block freed twice: {e}")
            blocks[a] = n
        elif e["action"] == "alloc":
            eq(blocks.pop(a, None), n, f"undoing an alloc, the block was there: {e}")
        elif e["action"] == "segment_free":
            check(all(a + n <= s or s + z <= a for s, z in segs.items()), f"over a segment: {e}")
            segs[a] = n
        elif e["action"] == "segment_alloc":
            eq(segs.pop(a, None), n, f"undoing a segment_alloc, it was there: {e}")
        for b, z in blocks.items():
            check(any(s <= b and b + z <= s + sz for s, sz in segs.items()),
                  f"device {dev}: the block at {b} in no segment before {e}")


def replay(d, dev):
    """Runs a device's events forward from nothing, as memory_viz's views
    take them: each block inside a live segment and over no other, each
    free of something live, no segment freed under a block; what is left
    is the snapshot's segments and active blocks (a trace without a
    checkpoint starts from nothing)."""
    segs, blocks = {}, {}
    for e in d["device_traces"][dev]:
        a, n = e["addr"], e["size"]
        if e["action"] == "segment_alloc":
            check(all(a + n <= s or s + z <= a for s, z in segs.items()), f"segment over one: {e}")
            segs[a] = n
        elif e["action"] == "segment_free":
            eq(segs.pop(a, None), n, f"the segment freed was live: {e}")
            check(not [b for b in blocks if a <= b < a + n], f"no block left in it: {e}")
        elif e["action"] == "alloc":
            check(any(s <= a and a + n <= s + z for s, z in segs.items()), f"in a segment: {e}")
            check(all(a + n <= b or b + z <= a for b, z in blocks.items()), f"over a block: {e}")
            blocks[a] = n
        elif e["action"] == "free_completed":
            eq(blocks.pop(a, None), n, f"the block freed was live: {e}")
    mine = [s for s in d["segments"] if s["device"] == dev]
    eq(sorted(segs.items()), [(s["address"], s["total_size"]) for s in mine],
       f"device {dev}: the segments left are the snapshot's")
    eq(sorted(blocks.items()), [(b["address"], b["size"]) for s in mine for b in s["blocks"]
                                if b["state"] == "active_allocated"],
       f"device {dev}: the blocks left are the snapshot's active ones")


def names(frames):
    return [f["name"] for f in frames]


def test_torch_snapshot_of_driver_allocations():
    # drv_api_steps.c: no blocks given, so each driver allocation is also
    # an "alloc" (memory_viz's active memory timeline draws those).
    trace = one_trace(run([E.prog("drv_api_steps")]))
    d = torch_snapshot(trace)
    for dev in range(len(d["device_traces"])):
        replay(d, dev)
    eq(len(d["device_traces"]), 1, "one device")
    t = d["device_traces"][0]
    step = [("segment_alloc", 2 * MiB), ("alloc", 2 * MiB), ("segment_alloc", MiB), ("alloc", MiB),
            ("free_completed", 2 * MiB), ("segment_free", 2 * MiB)]
    eq([(e["action"], e["size"]) for e in t],
       [("segment_alloc", 4 * MiB), ("alloc", 4 * MiB)] + step * 3, "the schedule's events")
    for i in range(0, len(t), 2):  # each "alloc" goes with its segment's event, same address
        if t[i]["action"] == "segment_alloc":
            eq((t[i + 1]["addr"], t[i + 1]["time_us"]), (t[i]["addr"], t[i]["time_us"]), "paired")
    eq(t[-1]["addr"], t[-5]["addr"], "each activation freed is the one allocated")
    eq([names(e["frames"])[:2] for e in t if e["action"] == "segment_alloc"],
       [["load_weights", "main"]] + [["train_step", "main"]] * 6, "innermost first")
    check(all(f["filename"].endswith("drv_api_steps.c") for e in t for f in e["frames"]),
          "frames in the program's file")
    check(all(f["line"] > 0 for e in t for f in e["frames"]), "with their lines")
    segs = d["segments"]
    eq([(s["total_size"], [(b["size"], b["state"]) for b in s["blocks"]]) for s in segs],
       [(4 * MiB, [(4 * MiB, "active_allocated")])] + [(MiB, [(MiB, "active_allocated")])] * 3,
       "the weights and the history, live at the end, each one block")
    eq([s["segment_type"] for s in segs], ["large", "small", "small", "small"], "by size")
    eq([names(s["frames"])[0] for s in segs], ["load_weights"] + ["train_step"] * 3, "frames")
    eq(names(segs[0]["blocks"][0]["frames"])[:2], ["load_weights", "main"], "a block's frames")
    eq(d["allocator_settings"], {}, "no settings in a driver program")
    # the last 5 events alone, as PyTorch's recorder keeps its last max_entries
    last = torch_snapshot(trace, "--max-entries", "5")
    eq(last["device_traces"][0], t[-5:], "--max-entries 5: the last five")
    eq(last["segments"], segs, "the same segments")
    eq(torch_snapshot(trace, "--max-entries=0"), d, "0: all of them")


def test_torch_snapshot_of_the_programs_blocks():
    # drv_api_blocks.c under 13 MiB: S1 8 MiB carved into b1 [0,2) b2 [2,3)
    # b3 [4,6); S2 4 MiB with b4 [1,2); b2 back; b5 in host memory (no
    # segment: left out); three failed requests (3, 2, 8 MiB) with 1 MiB
    # free; b1, b3 back; S2 freed with b4 in it (b4 ends with it).
    trace = one_trace(run([E.prog("drv_api_blocks")], env={"SIMCUDA_MEMORY": "13M"}))
    d = torch_snapshot(trace)
    replay(d, 0)
    t = d["device_traces"][0]
    s1 = t[0]["addr"]
    s2 = t[4]["addr"]
    eq([(e["action"], e["addr"], e["size"]) for e in t],
       [("segment_alloc", s1, 8 * MiB), ("alloc", s1, 2 * MiB), ("alloc", s1 + 2 * MiB, MiB),
        ("alloc", s1 + 4 * MiB, 2 * MiB), ("segment_alloc", s2, 4 * MiB),
        ("alloc", s2 + MiB, MiB), ("free_completed", s1 + 2 * MiB, MiB),
        ("oom", 0, 3 * MiB), ("oom", 0, 2 * MiB), ("oom", 0, 8 * MiB),
        ("free_completed", s1, 2 * MiB), ("free_completed", s1 + 4 * MiB, 2 * MiB),
        ("free_completed", s2 + MiB, MiB), ("segment_free", s2, 4 * MiB)],
       "the schedule's events: blocks are the allocations")
    eq([e["device_free"] for e in t if e["action"] == "oom"], [MiB] * 3, "1 MiB free each time")
    eq({tuple(names(e["frames"])[:2]) for e in t if e["action"] == "oom"},
       {("grow_fails", "main")}, "the failed request's frames")
    eq({tuple(names(e["frames"])[:2]) for e in t if e["action"] in ("alloc", "free_completed")},
       {("carve", "main")}, "a block's frames are its carve's")
    eq({tuple(names(e["frames"])[:2]) for e in t if e["action"] in ("segment_alloc",
                                                                      "segment_free")},
       {("grow", "main")}, "a segment's frames are its grow's (a free has no stack of its own)")
    eq([(s["address"], s["total_size"], [(b["size"], b["state"]) for b in s["blocks"]])
        for s in d["segments"]],
       [(s1, 8 * MiB, [(8 * MiB, "inactive")])], "S1 at the end: every block back")


def test_torch_snapshot_blocks_tile_their_segment():
    # drv_api_steps.c kill: the weights' first 4 KiB is a block, then
    # SIGKILL; the ring file brings the block back.
    r = run([E.prog("drv_api_steps"), "kill"], env={"ASAN_OPTIONS": "detect_leaks=0"})
    eq(r.rc, -9, f"killed: {r.err}")
    d = torch_snapshot(one_trace(r))
    replay(d, 0)
    segs = d["segments"]
    eq([(s["total_size"], [(b["address"] - s["address"], b["size"], b["state"])
                           for b in s["blocks"]]) for s in segs],
       [(4 * MiB, [(0, 4 * KiB, "active_allocated"), (4 * KiB, 4 * MiB - 4 * KiB, "inactive")])]
       + [(MiB, [(0, MiB, "inactive")])] * 3,
       "the block, then a gap to the segment's end; the others empty")
    eq((segs[0]["allocated_size"], segs[0]["requested_size"]), (4 * KiB, 4 * KiB), "active")
    t = d["device_traces"][0]
    eq([e["action"] for e in t], ["segment_alloc"] + ["segment_alloc"] * 2 + ["segment_free"]
       + (["segment_alloc"] * 2 + ["segment_free"]) * 2 + ["alloc"],
       "once blocks are given, driver allocations are segments only")
    eq((t[-1]["addr"], t[-1]["size"]), (segs[0]["address"], 4 * KiB), "the block")


def test_torch_snapshot_and_perfetto_of_a_rotated_trace():
    # drv_chdir.c: 2 MiB (before_chdir), then ROTATED_CHURN allocations of
    # 4 KiB and up, each freed, then 1 MiB kept (after_chdir). Bounded to 4 MiB, the trace
    # starts from a checkpoint taken during the churn.
    first, second = (os.path.join(tempfile.mkdtemp(prefix="gpushim-viewers-"), d)
                     for d in ("first", "second"))
    os.mkdir(first)
    os.mkdir(second)
    r = run([E.prog("drv_chdir"), second, str(ROTATED_CHURN)], cwd=first, output="rot.trace",
            env={"GPUSHIM_MAX_BYTES": "4M"}, timeout=600)
    eq(r.rc, 0, r.err)
    trace = os.path.join(first, "rot.trace")
    rep = report_json(trace)
    check(rep["trace"]["checkpoint"] is not None, "the trace was swapped")
    d = torch_snapshot(trace, "--max-entries", "1000")  # memory_viz's replay holds
    eq([(s["total_size"], names(s["frames"])[0]) for s in d["segments"]],
       [(2 * MiB, "before_chdir"), (MiB, "after_chdir")],
       "the 2 MiB from before the checkpoint is a segment, its frames from the checkpoint")
    t = d["device_traces"][0]
    eq(len(t), 1000, "the last 1000 events")
    eq([(e["action"], e["size"]) for e in t[-2:]], [("segment_alloc", MiB), ("alloc", MiB)],
       "the 1 MiB last")
    sizes = churn_sizes(ROTATED_CHURN)
    # each step is a segment of its own: segment_alloc, alloc, free_completed
    # and segment_free, so 998 entries end in the middle of a step
    steps = [(a, n) for n in sizes[-250:]
             for a in ("segment_alloc", "alloc", "free_completed", "segment_free")]
    got = [(e["action"], e["size"]) for e in t[:-2]]
    check(got == steps[-998:], "the churn before it, its last 249.5 steps: "
          f"{[i for i, (g, w) in enumerate(zip(got, steps[-998:])) if g != w][:5]} differ")
    _, events = perfetto(trace)
    c = [b for _, b in counters(events)[0]]
    churn = {2 * MiB + n for n in sizes}
    check(c[0] == 2 * MiB or c[0] in churn, f"the counter starts from the checkpoint: {c[0]}")
    eq((max(c), c[-1]), (3 * MiB, 3 * MiB), "the peak and the end")
    eq(rep["devices"][0]["peak_bytes"], 3 * MiB, "the report's peak")
    check(set(c) <= {2 * MiB, 3 * MiB} | churn, "nothing else")


def test_export_viewers_usage():
    trace = one_trace(run([E.prog("drv_api_steps")]))
    for fmt in ("perfetto", "torch-snapshot"):
        p = subprocess.run([E.gpushim, "export", "-f", fmt, "/nonexistent.trace"],
                           capture_output=True, text=True, timeout=60)
        eq(p.returncode, 1, f"{fmt}: a trace that cannot be read")
        check(p.stderr.startswith("gpushim export: /nonexistent.trace"), p.stderr)
        eq(p.stderr.count("\n"), 1, "one line")
        eq(p.stdout, "", "nothing written")
        out = os.path.join(tempfile.mkdtemp(prefix="gpushim-viewers-"), "x")
        p = subprocess.run([E.gpushim, "export", "-f", fmt, "-o", out, "/nonexistent.trace"],
                           capture_output=True, text=True, timeout=60)
        eq((p.returncode, os.path.exists(out)), (1, False), f"{fmt}: no output left behind")
    # to standard output, the same bytes as to a file
    p = subprocess.run([E.gpushim, "export", "-f", "torch-snapshot", trace], capture_output=True,
                       timeout=60)
    eq(p.returncode, 0, "to standard output")
    eq(p.stdout, export(trace, "torch-snapshot"), "the same as to a file")
    for bad in ("-3", "x", ""):
        p = subprocess.run([E.gpushim, "export", "-f", "torch-snapshot", "--max-entries", bad,
                            trace], capture_output=True, text=True, timeout=60)
        eq(p.returncode, 2, f"--max-entries {bad!r}")
        check(p.stderr.startswith("gpushim export: --max-entries is a count"), p.stderr)
    h = subprocess.run([E.gpushim, "export", "--help"], capture_output=True, text=True, timeout=60)
    check("perfetto" in h.stdout and "torch-snapshot" in h.stdout, "--help names both")


def test_torch_snapshot_python_frames():
    # tests/progs/python/train.py (test_python.py): the weights' 4 x 1 MiB
    # from Model.load_weights, kept; frames as the report merges them, the
    # Python frames where the interpreter's stood.
    from test_python import libcuda, prog, py_env, pythons, schedule_expectations
    py = pythons()[0]
    r = run([py, prog("train.py"), libcuda()], env=py_env())
    eq(r.rc, 0, f"{py}: {r.err}")
    d = torch_snapshot(one_trace(r))
    replay(d, 0)
    weights, first, second, cache = schedule_expectations()

    def py_frames(frames):
        return [(f["name"], f["filename"], f["line"]) for f in frames
                if f["filename"].endswith(".py")]
    segs = d["segments"]
    eq([(s["total_size"], py_frames(s["frames"])) for s in segs[:4]], [(MiB, weights)] * 4,
       "the weights' segments, with their Python frames")
    eq(py_frames(segs[0]["blocks"][0]["frames"]), weights, "and their blocks'")
    t = d["device_traces"][0]
    eq([py_frames(e["frames"]) for e in t if e["action"] == "segment_alloc"
        and e["size"] == 2 * MiB], [first, second] * 3, "each activation's frames")
    eq([f for f in segs[0]["frames"] if not f["filename"].endswith(".py")], [],
       "a ctypes call of the driver: no native frame (libffi's and ctypes' go with the "
       "interpreter's)")
    check(not any("ceval" in f["filename"] or f["name"] == "_PyEval_EvalFrameDefault"
                  for f in segs[0]["frames"]), "no interpreter frame")


# ---- the viewers themselves ----
# speedscope, from npm (scripts/fetch-viewers.sh, make test-deps), in
# headless Chromium; PyTorch's own torch/cuda/_memory_viz.py, from Debian's
# python3-torch.

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
VIEWERS = os.environ.get("GPUSHIM_VIEWERS") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpushim", "viewers")
SPEEDSCOPE = os.path.join(VIEWERS, "speedscope", "dist", "release", "index.html")


def sandwich(folded_path, name):
    """speedscope's sandwich view of a folded file, loaded as its command
    line loads one (bin/cli.mjs: index.html#localProfilePath= a script that
    calls speedscope.loadFileFromBase64): the page's title, and each row's
    (symbol, total, self)."""
    with open(folded_path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    js = folded_path + ".js"
    with open(js, "w") as f:
        f.write(f"speedscope.loadFileFromBase64({json.dumps(name)}, {json.dumps(data)})")
    number = re.compile(r"^([\d,]+) \(")
    # On a loaded machine the page may be dumped before the table has its
    # rows (seen once in CI, with the title and header there): twice more,
    # each with twice the virtual time.
    for budget in (8000, 16000, 32000):
        home = tempfile.mkdtemp(prefix="gpushim-chrome-")
        p = subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
                            "--no-first-run", "--allow-file-access-from-files",
                            f"--virtual-time-budget={budget}", "--window-size=1400,1200",
                            "--dump-dom", f"file://{SPEEDSCOPE}#localProfilePath={js}&view=sandwich"],
                           capture_output=True, text=True, timeout=90,
                           env=dict(os.environ, HOME=home))
        title = re.search(r"<title>([^<]*)</title>", p.stdout)
        cells = [html.unescape(c).strip() for c in re.split(r"<[^>]+>", p.stdout)]
        cells = [c for c in cells if c]
        check("Symbol Name" in cells, f"the sandwich table: rc {p.returncode} {p.stderr[-1500:]}")
        rows, i = [], cells.index("Symbol Name") + 1
        while i + 2 < len(cells) and number.match(cells[i]) and number.match(cells[i + 1]):
            rows.append((cells[i + 2], int(number.match(cells[i]).group(1).replace(",", "")),
                         int(number.match(cells[i + 1]).group(1).replace(",", ""))))
            i += 3
        if rows:
            break
    return (title.group(1) if title else None), rows


@once("speedscope on the export the analyzer writes the same in every build")
def test_folded_export_in_speedscope():
    if not CHROMIUM:
        return "skipped: no chromium"
    if not os.path.exists(SPEEDSCOPE):
        return f"skipped: no speedscope in {VIEWERS} (make test-deps fetches it)"
    # drv_schedule.c at its peak: weights 4 x 1 MiB (load_weights), two 2 MiB
    # activations (make_activation), 3 x 256 KiB in the cache (remember_in_cache)
    trace = one_trace(run([E.prog("drv_schedule")]))
    out = os.path.join(tempfile.mkdtemp(prefix="gpushim-speedscope-"), "peak.folded")
    with open(out, "wb") as f:
        f.write(export(trace, "folded"))
    lines = [l.rsplit(" ", 1) for l in open(out).read().splitlines()]
    title, rows = sandwich(out, "peak.folded")
    eq(title, "peak.folded - speedscope", "speedscope loaded the profile")
    got = {name: (total, self) for name, total, self in rows}
    # what speedscope counted, against the report: every byte of the peak,
    # each line's bytes the self weight of its innermost frame
    eq(sum(s for _, _, s in rows), report_json(trace)["peak"]["bytes"],
       "self weights add up to the peak")
    leaf = {}
    for stack, n in lines:
        leaf[stack.split(";")[-1]] = leaf.get(stack.split(";")[-1], 0) + int(n)
    eq({k: v[1] for k, v in got.items() if v[1]}, leaf, "each innermost frame's bytes")
    by_function = {}
    for name, total, _ in rows:
        fn = name.split(" (")[0]
        by_function[fn] = max(by_function.get(fn, 0), total)
    eq((by_function["load_weights"], by_function["make_activation"],
        by_function["remember_in_cache"], by_function["main"]),
       (4 * MiB, 4 * MiB, 3 * 256 * KiB, 4 * MiB + 3 * 256 * KiB),
       "the schedule's call sites, by total (main's two lines are two symbols: the larger, "
       "the loop's, holds the activations and the cache)")


def debian_torch_python():
    p = subprocess.run(["/usr/bin/python3", "-c", "import torch.cuda._memory_viz"],
                       capture_output=True, text=True)
    return p.returncode == 0


MEMORY_VIZ = r'''
import json, pickle, sys
from torch.cuda import _memory_viz as mv
snap = pickle.load(open(sys.argv[1], "rb"))
same = lambda lines: lines  # the flame-graph lines, not flamegraph.pl's SVG
out = {"stats": {k: getattr(v, "value", v) for k, v in mv.stats(snap["segments"]).items()},
       "segments": mv.segments(snap["segments"], format_flamegraph=same).splitlines(),
       "memory": mv.memory(snap["segments"], format_flamegraph=same).splitlines()}
if hasattr(mv, "segsum"):  # PyTorch 2.x's own: the snapshot as a whole
    out["segsum"] = mv.segsum(snap)
    out["trace"] = mv.trace(snap)
print(json.dumps(out))
'''


@once("PyTorch's _memory_viz on the export the analyzer writes the same in every build")
def test_torch_snapshot_through_memory_viz():
    if not debian_torch_python():
        return "skipped: no torch for /usr/bin/python3 (make test-deps installs python3-torch)"
    # drv_api_steps.c kill: the 4 MiB weights with a 4 KiB block, three
    # 1 MiB segments left empty: the blocks tile each segment
    r = run([E.prog("drv_api_steps"), "kill"], env={"ASAN_OPTIONS": "detect_leaks=0"})
    eq(r.rc, -9, f"killed: {r.err}")
    out = os.path.join(tempfile.mkdtemp(prefix="gpushim-memviz-"), "snap.pickle")
    with open(out, "wb") as f:
        f.write(export(one_trace(r), "torch-snapshot"))
    p = subprocess.run(["/usr/bin/python3", "-c", MEMORY_VIZ, out], capture_output=True,
                       text=True, timeout=120)
    eq(p.returncode, 0, f"torch/cuda/_memory_viz.py read it: {p.stderr[-2000:]}")
    got = json.loads(p.stdout)
    # stats() asserts that each segment's blocks add up to its size
    eq(got["stats"], {"segments": 4, "total_size": 7 * MiB, "active_allocated": 4 * KiB,
                      "inactive": 7 * MiB - 4 * KiB}, "memory_viz's stats")
    segs = torch_snapshot(one_trace(r))["segments"]
    first = f"stream_{segs[0]['stream']};seg_{segs[0]['address']}"
    eq(got["segments"][:2], [f"{first};active_allocated {4 * KiB}",
                             f"{first};inactive {4 * MiB - 4 * KiB}"],
       "the flame-graph lines of the first segment")
    eq(sorted(got["memory"]), sorted(f"stream_{s['stream']};{b['state']} {b['size']}"
                                     for s in segs for b in s["blocks"]),
       "memory's lines: every block, by stream and state")
