"""test_threads.py - threads that never ran Python (tests/progs/drv_autograd.c:
threads named as PyTorch's autograd engine names its own, one renamed midway
by prctl, one named by another thread, a C pool thread): each site lists the
names of the threads that allocated there with their allocations, and the
backward that PyTorch's autograd was running, from the real symbol of the
generated node's apply on the stack; a site is never split by thread. The
names come through a bounded trace's rotation and a death (the ring file).
A forked child names its thread anew: test_lifecycle.py.
"""
import re

from harness import E, MiB, ROTATED_CHURN, check, eq, one_trace, report, report_json, run, same_behaviour

# drv_autograd defines them under their linkage names; reports demangle them
MUL = ("torch::autograd::generated::MulBackward0::apply(std::vector<at::Tensor, "
       "std::allocator<at::Tensor> >&&)")
ADDMM = ("torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor, "
         "std::allocator<at::Tensor> >&&)")


def names(*pairs):
    return [{"name": n, "allocations": a} for n, a in pairs]


# The leaks, and the sites at the peak (the same: nothing is freed), by site:
# bytes, count, frames, threads, backward_of.
SITES = [
    (4 * MiB, 4, ["keep", "grad_alloc", MUL, "evaluate_function", "thread_main"],
     names(("pt_autograd_0", 2), ("pt_autograd_1", 1), ("renamed_1", 1)), "mul"),
    (4 * MiB, 1, ["keep", "forward", "main"], names(("drv_autograd", 1)), None),
    (2 * MiB, 1, ["keep", "grad_alloc_2mib", ADDMM, "evaluate_function", "thread_main"],
     names(("pt_autograd_0", 1)), "addmm"),
    (2 * MiB, 1, ["keep", "stage_batch", "loader"], names(("loader", 1)), None),
    (1 * MiB, 1, ["keep", "grad_alloc", MUL, "evaluate_function", "main"],
     names(("drv_autograd", 1)), "mul"),
]

# The text report's line under each of them (None: no line; the main
# thread's name alone says nothing unless a backward is there to name).
TEXT = [
    ("4.00 MiB in 4 allocations",
     "threads pt_autograd_0 (2 allocations), pt_autograd_1 (1), renamed_1 (1): backward of mul"),
    ("4.00 MiB in 1 allocation", None),
    ("2.00 MiB in 1 allocation", "thread pt_autograd_0: backward of addmm"),
    ("2.00 MiB in 1 allocation", "thread loader"),
    ("1.00 MiB in 1 allocation", "thread drv_autograd: backward of mul"),
]


def sites(section):
    return [(s["bytes"], s["count"], [f["function"] for f in s["frames"]], s["threads"],
             s["backward_of"]) for s in section["sites"]]


def check_sites(d, what):
    for section in ("leaks", "peak"):
        eq(sites(d[section]), SITES, f"{what}: {section} sites, their threads and backward")
        eq({s["gil"] for s in d[section]["sites"]}, {None}, f"{what}: no Python here")
    eq((d["leaks"]["bytes"], d["leaks"]["count"], d["peak"]["bytes"]), (13 * MiB, 8, 13 * MiB),
       f"{what}: leaks and peak")


def thread_lines(text, heading):
    """[(site's size and count, the line under its frames or None)] of a section."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(heading))
    out = []
    for line in lines[at + 1:]:
        if not line.startswith("  "):
            break
        head = re.match(r"^ +([\d.]+ \w+) in +(\d+ allocations?) +at ", line)
        if head:
            out.append((f"{head.group(1)} in {head.group(2)}", None))
        elif line.strip().startswith(("thread ", "threads ", "backward of ")):
            check(out and out[-1][1] is None, f"one line a site: {line!r}")
            out[-1] = (out[-1][0], line.strip())
    return out


def test_threads_by_name_and_the_backward_they_ran():
    r = same_behaviour([E.prog("drv_autograd")])
    eq(r.out, "backward done\n", "the program's output")
    d = report_json(one_trace(r))
    eq((d["events"]["allocations"], d["events"]["frees"]), (8, 0), "events")
    check_sites(d, "drv_autograd")
    text = report(one_trace(r)).stdout
    eq(thread_lines(text, "Unfreed at the end"), TEXT, "the leaks' thread lines")
    eq(thread_lines(text, "Peak:"), TEXT, "the peak's thread lines")
    check("did not hold the GIL" not in text, "no GIL to speak of without Python")
    native = report(one_trace(r), "--native").stdout
    eq(thread_lines(native, "Unfreed at the end"), TEXT, "the same in the native view")


def test_thread_names_outlive_a_rotation():
    # ROTATED_CHURN pairs from pt_autograd_0 between its two MulBackward0:
    # the trace is rotated there, and its thread, named once before, goes on
    pairs = ROTATED_CHURN
    r = run([E.prog("drv_autograd"), str(pairs)], env={"GPUSHIM_MAX_BYTES": "4M"})
    eq((r.rc, r.out, r.err), (0, "backward done\n", ""), "the run")
    d = report_json(one_trace(r))
    c = d["trace"]["checkpoint"]
    check(c is not None, "the history was summarized")
    check(4 < c["events"] < 2 * pairs, f"the checkpoint fell within the churn: {c}")
    eq((d["events"]["allocations"], d["events"]["frees"]), (pairs + 8, pairs), "every event counted")
    check_sites(d, "rotated")
    eq(thread_lines(report(one_trace(r)).stdout, "Unfreed at the end"), TEXT, "thread lines")


def test_thread_names_of_a_killed_process_come_from_its_ring():
    r = run([E.prog("drv_autograd"), "0", "die"], env={"GPUSHIM_FLUSH_MS": "10000"})
    eq(r.rc, -9, f"killed; stderr: {r.err}")
    d = report_json(one_trace(r))
    eq((d["trace"]["ending"], d["trace"]["ring"]["use"], d["trace"]["complete"]),
       ("died", "read", True), "read with its ring")
    eq((d["trace"]["blocks"], d["trace"]["recovered_events"]), (0, 8), "all of it from the ring")
    check_sites(d, "killed")
