"""test_framework_paths.py - the frameworks' own allocation paths, imitated
from their source (issue 15, item 7): NCCL through the CUDA runtime it links
statically (tests/progs/dl_nccl_runtime.c), XLA's BFC allocator and its VMM
allocator, TensorFlow's cuda_malloc_async. Each program's schedule, and the
source it follows, is at the top of its file; the figures here are those
schedules' on a small simulated device. Every allocation is recorded whatever
route reached the driver, each in its category, the frameworks' expected
failures get their outcomes, and nothing is left or freed unknown after a
clean teardown.
"""
from harness import E, MiB, check, eq, one_trace, report, report_json, same_behaviour


def category(d, name):
    c = d["categories"][name]
    return (c["peak_bytes"], c["live_bytes_at_end"], c["allocations"])


def fn(x):
    return x["frames"][0]["function"] if x["frames"] else None


def clean_teardown(d, what):
    eq((d["leaks"]["bytes"], d["leaks"]["count"]), (0, 0), f"{what}: nothing left")
    eq(d["events"]["frees_unknown"], 0, f"{what}: no free unknown")
    for name, c in d["categories"].items():
        eq(c["live_bytes_at_end"], 0, f"{what}: {name} at the end")


def test_nccl_through_its_static_runtime():
    r = same_behaviour([E.prog("dl_nccl_runtime")],
                       env={"SIMCUDA_MEMORY": "64M", "SIMCUDA_FABRIC": "1"})
    eq(r.out, "nccl runtime done\n", "the run")
    d = report_json(one_trace(r))
    eq((d["events"]["allocations"], d["events"]["frees"], d["events"]["failed"],
        d["events"]["references"]), (14, 14, 1, 4),
       "every allocation, though no cuda* call reached an exported symbol")
    eq(category(d, "device"), (15 * MiB, 0, 3), "device: peer 6, user 8, work 1")
    eq(category(d, "host_pinned"), (4 * MiB, 0, 2), "HOST_NUMA: the probe's 2, the proxy's 4")
    eq(category(d, "imported"), (0, 0, 1), "the peer's buffer, imported")
    eq(category(d, "address_space"), (24 * MiB, 0, 4), "four ranges reserved")
    eq(category(d, "mapped"), (24 * MiB, 0, 4), "four mappings")
    eq(d["peak"]["bytes"], 15 * MiB, "the device peak")
    eq([(s["bytes"], s["api"], fn(s)) for s in d["peak"]["sites"]],
       [(8 * MiB, "cuMemCreate", "nccl_mem_alloc"), (6 * MiB, "cuMemCreate", "nccl_cumem_alloc"),
        (1 * MiB, "cuMemAllocFromPoolAsync", "malloc_from_pool")],
       "what set it: driver calls, the runtime inside the program")
    check(any(f["function"] == "upload_work" for f in d["peak"]["sites"][2]["frames"]),
          "the work's stack reaches uploadWork through the static runtime")
    eq([(f["api"], f["requested_bytes"], f["result_name"], f["outcome"], fn(f))
        for f in d["failures"]],
       [("cuMemCreate", 8 * MiB, "CUDA_ERROR_NOT_PERMITTED", "refused", "nccl_mem_alloc")],
       "the FABRIC probe, refused")
    eq(d["failure_outcomes"]["refused_results"],
       [{"result": 800, "result_name": "CUDA_ERROR_NOT_PERMITTED", "count": 1}], "refusals")
    eq(d["failure_outcomes"]["unrecovered"], 0, "nothing unrecovered")
    pools = d["pools"]["pools"]
    eq([(p["device"], p["peak_reserved_bytes"], p["peak_used_bytes"], p["reserved_bytes_at_end"])
        for p in pools], [(0, 2 * MiB, 1 * MiB, 0)],
       "the communicator's pool: its first allocation sampled, however soon after creation")
    clean_teardown(d, "NCCL")
    text = report(one_trace(r)).stdout
    check("Everything allocated was freed." in text, text)
    check("cuMemCreate of 8.00 MiB on device 0: CUDA_ERROR_NOT_PERMITTED (800)\n"
          "             at nccl_mem_alloc (" in text, "the refusal, apart")
