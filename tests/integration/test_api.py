"""test_api.py - what a program tells gpushim itself: the public API of
include/gpushim.h (marks, the blocks of its own allocator, flush), through C
and through ctypes, and PyTorch's pluggable allocator exported by the shim;
each with the exact figures of its schedule (tests/progs/*.c).
"""
import os
import tempfile

from harness import (E, KiB, MiB, check, eq, one_trace, report, report_json, run, same_behaviour,
                     site_summary)


def torch_env():
    return {"SIMCUDA_DEVICES": "2", "SIMCUDA_MEMORY": "64M"}


def check_torch_report(d, where):
    eq(d["events"], {"allocations": 5, "frees": 3, "failed": 2, "frees_unknown": 0,
                     "references": 0}, f"{where}: events")
    eq([(x["device"], x["peak_bytes"], x["live_bytes_at_end"], x["allocations"])
        for x in d["devices"]], [(0, 3 * MiB, 2 * MiB, 4), (1, 2 * MiB, 0, 1)],
       f"{where}: devices (the stream's device for the second)")
    eq(d["peak"]["bytes"], 5 * MiB, f"{where}: peak")
    eq([(s["bytes"], s["count"], s["api"], s["frames"][0]["function"])
        for s in d["peak"]["sites"]],
       [(3 * MiB, 3, "gpushim_torch_alloc", "forward"),
        (2 * MiB, 1, "gpushim_torch_alloc", "on_second_device")], f"{where}: peak sites")
    eq([(s["bytes"], s["count"], s["api"], s["frames"][0]["function"])
        for s in d["leaks"]["sites"]],
       [(2 * MiB, 2, "gpushim_torch_alloc", "forward")], f"{where}: leaks")
    # the pool of device 0 reserves 2 MiB chunks: 4 MiB after three 1 MiB tensors
    eq([(f["api"], f["device"], f["requested_bytes"], f["result_name"], f["free_bytes"],
         f["total_bytes"], f["process_bytes"], f["frames"][0]["function"])
        for f in d["failures"]],
       [("gpushim_torch_alloc", 0, 1024 * MiB, "CUDA_ERROR_OUT_OF_MEMORY", 60 * MiB, 64 * MiB,
         2 * MiB, "too_big"),
        ("gpushim_torch_alloc", 7, MiB, "CUDA_ERROR_INVALID_DEVICE", None, None, 0,
         "bad_device")], f"{where}: failures")
    eq(d["trace"]["complete"], True, f"{where}: complete")


def test_torch_pluggable_allocator():
    argv = [E.prog("dl_torch_alloc"), E.shim]
    r = run(argv, env=torch_env())
    eq((r.rc, r.out, r.err), (0, "torch allocator done\n", ""), "the program under the shim")
    check_torch_report(report_json(one_trace(r)), "preloaded")
    text = report(one_trace(r)).stdout
    for want in ["gpushim_torch_alloc of 1.00 GiB on device 0: CUDA_ERROR_OUT_OF_MEMORY",
                 "device had 60.00 MiB free of 64.00 MiB"]:
        eq(want in text, True, f"text report has {want!r}:\n{text}")
    # Opened by its path only, as torch.cuda.memory.CUDAPluggableAllocator
    # does without LD_PRELOAD: the same figures (the driver's own calls by
    # the program are not seen then, and there are none here).
    env = torch_env()
    if E.sanitized:  # the sanitizer's runtime must still come first
        env["LD_PRELOAD"] = E.preload.split(":")[0]
    r = run(argv, shim=False, env=env)
    eq((r.rc, r.out), (0, "torch allocator done\n"), f"the program, shim opened late: {r.err}")
    check_torch_report(report_json(one_trace(r)), "opened by path")


def fn_line(frames):
    return [(f["function"], os.path.basename(f["file"] or ""), f["line"]) for f in frames]


def test_marks_split_the_run_into_steps():
    r = same_behaviour([E.prog("drv_api_steps")])
    eq(r.out, "steps done\n", "output")
    trace = one_trace(r)
    d = report_json(trace)
    eq([(m["label"], m["device_bytes"], m["block_bytes"]) for m in d["marks"]],
       [("epoch", 0, 0), ("step", 4 * MiB, 0), ("step", 5 * MiB, 0), ("step", 6 * MiB, 0),
        ("step", 7 * MiB, 0), ("epoch", 7 * MiB, 0)], "marks: label, device bytes then")
    times = [m["time_ns"] for m in d["marks"]]
    eq(times, sorted(times), "marks in time order")
    eq([(s["label"], s["peak_bytes"], s["allocated_bytes"], s["freed_bytes"], s["growth_bytes"])
        for s in d["steps"]],
       [("step", 7 * MiB, 3 * MiB, 2 * MiB, MiB), ("step", 8 * MiB, 3 * MiB, 2 * MiB, MiB),
        ("step", 9 * MiB, 3 * MiB, 2 * MiB, MiB), ("epoch", 9 * MiB, 13 * MiB, 6 * MiB, 7 * MiB)],
       "steps: peak, allocated, freed, growth")
    eq([(s["start_ns"], s["end_ns"]) for s in d["steps"]],
       [(times[1], times[2]), (times[2], times[3]), (times[3], times[4]), (times[0], times[5])],
       "each step from a mark to the next of its label")
    labels = {l["label"]: l for l in d["mark_labels"]}
    eq(sorted(labels), ["epoch", "step"], "labels")
    st = labels["step"]
    eq((st["marks"], st["steps"], st["peak_bytes"], st["peak_step_end_ns"], st["allocated_bytes"],
        st["freed_bytes"], st["growth_bytes"], st["max_growth_bytes"], st["growing_steps"],
        st["first_time_ns"], st["last_time_ns"]),
       (4, 3, 9 * MiB, times[4], 9 * MiB, 6 * MiB, 3 * MiB, MiB, 3, times[1], times[4]),
       "the step label's totals")
    eq(fn_line(st["frames"])[:2], [("begin_step", "drv_api_steps.c", 40),
                                   ("main", "drv_api_steps.c", 59)],
       "a label's call site is its first mark's, without the header's wrapper")
    ep = labels["epoch"]
    eq((ep["marks"], ep["steps"], ep["peak_bytes"], ep["growth_bytes"]), (2, 1, 9 * MiB, 7 * MiB),
       "the epoch")
    eq(fn_line(ep["frames"])[0], ("main", "drv_api_steps.c", 56), "the epoch's call site")
    eq(d["mark_counts"], {"marks": 6, "marks_listed": 6, "steps": 4, "steps_listed": 4,
                          "labels": 2, "marks_of_labels_not_followed": 0}, "mark counts")
    # the history is the leak: sampled at all 4 marks of "step" (the better
    # label from its second mark on, its first mark's state kept), all 3 MiB
    g = d["leaks"]["growth"]
    eq((g["sampled_at"], g["step_label"], g["samples"]), ("steps", "step", 4),
       "sampled at the step label's marks")
    eq([(fn_line(x["frames"])[0], x["growth_bytes"], x["bytes_per_step"], x["rate"])
        for x in d["leaks"]["suspects"]],
       [(("train_step", "drv_api_steps.c", 48), 3 * MiB, MiB, "1.00 MiB a step")],
       "the one leak suspect, all it grew")
    eq((d["blocks"], d["fragmentation"]["at_peak"], d["fragmentation"]["at_failures"]),
       (None, None, []), "no blocks")
    eq(d["trace"]["complete"], True, "complete")
    text = report(trace).stdout
    for want in ["Marks: 6 marks of 2 labels",
                 "step         4 marks, 3 steps: peak 9.00 MiB",
                 "+1.00 MiB a step on average", "3 steps grew",
                 "epoch        2 marks, 1 step: peak 9.00 MiB"]:
        check(want in text, f"text report lacks {want!r}:\n{text}")


def test_ranges_through_the_api():
    r = same_behaviour([E.prog("drv_api_ranges")])
    eq(r.out, "ranges done\n", "output")
    d = report_json(one_trace(r))
    eq([(n["path"], n["ended"], n["peak_max_bytes"], n["allocated_max_bytes"],
         n["kept_last_bytes"]) for n in d["ranges"]["nodes"]],
       [("step", 1, 2 * MiB, 2 * MiB, 2 * MiB), ("step > forward", 1, 2 * MiB, 2 * MiB, 2 * MiB),
        ("loader", 1, 3 * MiB, 1 * MiB, 0)], "ranges: path, ended, peak, made, kept")
    eq(d["ranges"]["unmatched"], 0, "the pop with nothing open is not recorded")
    eq([m["label"] for m in d["marks"]], ["step", "loader"], "each thread's first range")


def test_api_arguments_that_are_wrong():
    r = run([E.prog("drv_api_steps"), "bad"])
    eq((r.rc, r.out), (0, "steps done\n"), "the program goes on")
    eq(r.err.splitlines(),
       ["gpushim: gpushim_mark was given a label it cannot read (0x10); it is recorded as the "
        "empty label",
        "gpushim: gpushim_block_alloc was given a NULL block (of 100 bytes); it is not recorded"],
       "each said once on stderr")
    d = report_json(one_trace(r))
    eq([m["label"] for m in d["marks"]], ["epoch", "step", "step", "step", "step", "epoch", "", ""],
       "unreadable and NULL labels are the empty label")
    eq(d["blocks"], None, "no block recorded")


def test_marks_and_blocks_survive_a_kill():
    r = run([E.prog("drv_api_steps"), "kill"], env={"ASAN_OPTIONS": "detect_leaks=0"})
    eq(r.rc, -9, f"killed: {r.err}")
    d = report_json(one_trace(r))
    eq((d["trace"]["ending"], d["trace"]["complete"], d["trace"]["ring"]["use"]),
       ("died", True, "read"), "nothing lost: the ring file was read")
    eq([(m["label"], m["device_bytes"]) for m in d["marks"]],
       [("epoch", 0), ("step", 4 * MiB), ("step", 5 * MiB), ("step", 6 * MiB), ("step", 7 * MiB),
        ("epoch", 7 * MiB)], "every mark")
    eq((d["blocks"]["allocations"], d["blocks"]["leaks"]["bytes"]), (1, 4 * KiB), "the block")
    eq(d["mark_counts"]["steps"], 4, "the steps")


def test_own_allocator_blocks_and_fragmentation():
    env = {"SIMCUDA_MEMORY": "13M"}
    r = same_behaviour([E.prog("drv_api_blocks")], env=env)
    eq(r.out, "allocator done\n", "output")
    trace = one_trace(r)
    d = report_json(trace)
    eq(d["events"], {"allocations": 2, "frees": 1, "failed": 3, "frees_unknown": 0,
                     "references": 0}, "driver events")
    eq(d["peak"]["bytes"], 12 * MiB, "device peak")
    eq(site_summary(d["leaks"]["sites"]), [(8 * MiB, 1, "grow")], "device leaks")
    b = d["blocks"]
    eq((b["allocations"], b["frees"], b["frees_unknown"]), (5, 3, 1), "block counts")
    eq((b["peak"]["bytes"], b["leaks"]["bytes"], b["leaks"]["count"]),
       (6 * MiB, MiB + 64 * KiB, 2), "block peak and blocks never taken back")
    eq([(s["bytes"], s["count"], s["api"], fn_line(s["frames"])[:2]) for s in b["peak"]["sites"]],
       [(2 * MiB, 1, "gpushim_block_alloc", [("carve", "drv_api_blocks.c", 50),
                                             ("main", "drv_api_blocks.c", 63)]),
        (2 * MiB, 1, "gpushim_block_alloc", [("carve", "drv_api_blocks.c", 50),
                                             ("main", "drv_api_blocks.c", 65)]),
        (MiB, 1, "gpushim_block_alloc", [("carve", "drv_api_blocks.c", 50),
                                         ("main", "drv_api_blocks.c", 64)]),
        (MiB, 1, "gpushim_block_alloc", [("carve", "drv_api_blocks.c", 50),
                                         ("main", "drv_api_blocks.c", 67)])],
       "blocks live at the block peak, by call site of gpushim_block_alloc")
    eq([(s["bytes"], s["count"], s["frames"][0]["function"]) for s in b["leaks"]["sites"]],
       [(MiB, 1, "carve"), (64 * KiB, 1, "host_staging")], "blocks never taken back")
    f = d["fragmentation"]
    p = f["at_peak"]
    eq((p["time_ns"], p["device"], p["segments"], p["segment_bytes"], p["block_bytes"],
        p["free_bytes"], p["largest_free_bytes"], p["fragmentation"],
        p["blocks_outside_segments_bytes"]),
       (d["peak"]["time_ns"], -1, 1, 8 * MiB, 5 * MiB, 3 * MiB, 2 * MiB, 0.333333, 0),
       "fragmentation at the device peak")
    fails = [(x["failure"], x["requested_bytes"], x["device"], x["segments"], x["segment_bytes"],
              x["block_bytes"], x["free_bytes"], x["largest_free_bytes"], x["fragmentation"],
              x["blocks_outside_segments_bytes"], x["fits_in_free"], x["fits_in_largest_free"])
             for x in f["at_failures"]]
    inside = (0, 2, 12 * MiB, 5 * MiB, 7 * MiB, 2 * MiB, 0.714286, 64 * KiB)
    eq(fails, [(0, 3 * MiB) + inside + (True, False), (1, 2 * MiB) + inside + (True, True),
               (2, 8 * MiB) + inside + (False, False)], "fragmentation at each failure")
    eq([x["time_ns"] for x in f["at_failures"]], [x["time_ns"] for x in d["failures"]],
       "taken at the failures")
    text = report(trace).stdout
    for want in ["Blocks of the program's own allocator: 5 given, 3 taken back, 1 taken back that "
                 "was never given",
                 "Block peak: 6.00 MiB",
                 "Blocks never taken back: 1.06 MiB in 2 blocks",
                 "Fragmentation at the device peak (", "1 segment of 8.00 MiB holds 5.00 MiB of "
                 "blocks: 3.00 MiB free inside it, the largest gap 2.00 MiB (fragmentation 0.33)",
                 "would have fit in the free space inside the segments held, but in no one gap",
                 "would have fit in one free gap of a segment already held",
                 "would not have fit even in all the free space"]:
        check(want in text, f"text report lacks {want!r}:\n{text}")


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "gpushim_api.py")


def test_python_through_ctypes():
    env = {"LD_LIBRARY_PATH": os.path.join(E.build, "sim"), "ASAN_OPTIONS": "detect_leaks=0"}
    bare_env = dict(env)
    if E.sanitized:  # the simulated driver is sanitized too: its runtime must come first
        bare_env["LD_PRELOAD"] = E.preload.split(":")[0]
    bare = run(["python3", EXAMPLE], shim=False, env=bare_env)
    eq((bare.rc, bare.out, bare.files), (0, "gpushim: not loaded (run under gpushim to record)\n",
                                         []), f"without the shim: {bare.err}")
    r = run(["python3", EXAMPLE], env=env)
    eq((r.rc, r.out), (0, "gpushim: recording\n"), f"under the shim: {r.err}")
    d = report_json(one_trace(r))
    eq([(m["label"], m["device_bytes"], m["block_bytes"]) for m in d["marks"]],
       [("step", (8 + i) * MiB, 7 * MiB) for i in range(4)], "marks")
    # four marks, four steps: the last runs to the end of the run
    eq([(s["label"], s["peak_bytes"], s["allocated_bytes"], s["freed_bytes"], s["growth_bytes"])
        for s in d["steps"]],
       [("step", (13 + i) * MiB, 5 * MiB, 4 * MiB, MiB) for i in range(4)], "steps")
    eq([(l["label"], l["marks"], l["steps"], l["growing_steps"], l["last_step_to_the_end"])
        for l in d["mark_labels"]], [("step", 4, 4, 3, True)],
       "labels: the last step ran to the end, and counts in no growth figure")
    eq((d["blocks"]["allocations"], d["blocks"]["peak"]["bytes"], d["blocks"]["leaks"]["count"]),
       (2, 7 * MiB, 2), "blocks")
    p = d["fragmentation"]["at_peak"]
    eq((p["segments"], p["segment_bytes"], p["block_bytes"], p["free_bytes"],
        p["largest_free_bytes"], p["fragmentation"]), (1, 8 * MiB, 7 * MiB, MiB, MiB, 0.0),
       "1 MiB free inside the weights' allocation at the peak")
    eq((d["peak"]["bytes"], d["leaks"]["bytes"]), (16 * MiB, 12 * MiB), "device figures")


def test_bounded_trace_keeps_marks_and_blocks():
    n = 400_000  # about 5 MB of trace unbounded: the 4 MiB bound rotates it
    tmp = tempfile.mkdtemp(prefix="gpushim-api-bound-")
    r = run([E.prog("drv_api_longrun"), str(n)], cwd=tmp, output="long.trace",
            env={"GPUSHIM_MAX_BYTES": "4M"}, timeout=600)
    eq((r.rc, r.out, r.err), (0, "done\n", ""), "the run")
    trace = os.path.join(tmp, "long.trace")
    check(os.path.getsize(trace) <= 4 * MiB, "under the bound")
    d = report_json(trace)
    check(d["trace"]["checkpoint"] is not None, "rotated: history summarized")
    eq(d["trace"]["complete"], True, "complete")
    kept = n // 1000
    eq(d["mark_counts"], {"marks": n + 3, "marks_listed": 1000, "steps": n + 1,
                          "steps_listed": 1000, "labels": 2, "marks_of_labels_not_followed": 0},
       "every mark counted, the last 1000 listed")
    labels = {l["label"]: l for l in d["mark_labels"]}
    eq([(l["marks"], l["steps"], l["peak_bytes"], l["allocated_bytes"], l["freed_bytes"],
         l["growth_bytes"], l["max_growth_bytes"], l["growing_steps"])
        for l in (labels["run"], labels["step"])],
       [(2, 1, 65 * MiB, n * MiB, n * MiB, 0, 0, 0),
        (n + 1, n, 65 * MiB, n * MiB, n * MiB, 0, 0, 0)],
       "labels, over the summarized history too")
    eq(d["steps"][-1]["label"], "run", "the run's step ends last")
    eq([(s["peak_bytes"], s["allocated_bytes"], s["freed_bytes"], s["growth_bytes"])
        for s in d["steps"][:-1]], [(65 * MiB, MiB, MiB, 0)] * 999, "the last steps")
    eq([(m["label"], m["device_bytes"], m["block_bytes"]) for m in d["marks"][-2:]],
       [("step", 64 * MiB, kept * 4 * KiB), ("run", 64 * MiB, kept * 4 * KiB)], "the last marks")
    b = d["blocks"]
    eq((b["allocations"], b["frees"], b["frees_unknown"], b["peak"]["bytes"], b["leaks"]["bytes"],
        b["leaks"]["count"]),
       (2 * n + kept, 2 * n, 0, 1536 * KiB + kept * 4 * KiB, kept * 4 * KiB, kept), "blocks")
    p = d["fragmentation"]["at_peak"]
    eq((p["segments"], p["segment_bytes"], p["block_bytes"], p["largest_free_bytes"],
        p["fragmentation"]), (1, 64 * MiB, 1536 * KiB, 63 * MiB - 1536 * KiB, 0.016),
       "at the peak, from the first step, long summarized")
    f = d["fragmentation"]["at_failures"]
    free = 64 * MiB - kept * 4 * KiB
    largest = 56 * MiB - kept * 4 * KiB
    eq([(x["block_bytes"], x["free_bytes"], x["largest_free_bytes"], x["fragmentation"],
         x["fits_in_free"]) for x in f],
       [(kept * 4 * KiB, free, largest, round(1 - largest / free, 6), False)], "at the failure")
