"""test_api.py - what a program tells gpushim itself: the public API of
include/gpushim.h (marks, the blocks of its own allocator, flush), through C
and through ctypes, and PyTorch's pluggable allocator exported by the shim;
each with the exact figures of its schedule (tests/progs/*.c).
"""
import os
import subprocess

from harness import E, KiB, MiB, eq, one_trace, report, report_json, run, site_summary


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
