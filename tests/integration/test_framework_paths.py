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

    # Sampled at every event: reclaimPlan's cudaFree (cuMemFree_v2) of pool
    # memory samples the pool too, which keeps its 2 MiB chunk
    # (release threshold UINT64_MAX) with nothing used until commFree.
    r = same_behaviour([E.prog("dl_nccl_runtime")],
                       env={"SIMCUDA_MEMORY": "64M", "SIMCUDA_FABRIC": "1",
                            "GPUSHIM_POOL_SAMPLE_MS": "0"})
    d = report_json(one_trace(r))
    eq([(p["peak_reserved_bytes"], p["peak_used_bytes"], p["peak_unused_bytes"], p["samples"])
        for p in d["pools"]["pools"]], [(2 * MiB, 1 * MiB, 2 * MiB, 4)],
       "created, allocated from, freed by cudaFree, destroyed")


def xla_run(phase, **env):
    r = same_behaviour([E.prog("drv_xla_allocators"), phase],
                       env=dict({"SIMCUDA_MEMORY": "64M", "GPUSHIM_POOL_SAMPLE_MS": "0"}, **env))
    eq(r.rc, 0, f"drv_xla_allocators {phase}: {r.err}")
    return report_json(one_trace(r)), one_trace(r)


def test_xla_bfc_backs_off_to_nine_tenths():
    # 0.75 of 64 MiB asked with 20 MiB held elsewhere: 48 MiB refused, 0.9x fits.
    region = 45298688  # RoundedBytes(48 MiB * 0.9), 256-byte multiples
    d, trace = xla_run("bfc", SIMCUDA_OTHER="20M")
    eq([(f["api"], f["requested_bytes"], f["free_bytes"], f["outcome"], fn(f))
        for f in d["failures"]],
       [("cuMemAlloc_v2", 48 * MiB, 44 * MiB, "recovered", "sub_allocator_alloc")],
       "the preallocation at 0.75, refused, recovered")
    eq(d["failures"][0]["recovery"]["bytes"], region, "what the backpedal got")
    eq((d["failure_outcomes"]["retries"]["count"], d["failure_outcomes"]["unrecovered"]), (1, 0),
       "one retry, nothing unrecovered")
    eq([f["verdict"] for f in d["failures"]], [None], "no verdict: the job went on")
    eq(d["peak"]["bytes"], region, "the region is the device peak")
    eq([(s["bytes"], s["api"], fn(s)) for s in d["peak"]["sites"]],
       [(region, "cuMemAlloc_v2", "sub_allocator_alloc")], "set by Extend")
    b = d["blocks"]
    eq((b["allocations"], b["frees"], b["peak"]["bytes"]), (3, 3, 14 * MiB),
       "the buffers, chunks of the region: 4 + 8 + 2 MiB")
    eq([s["bytes"] for s in b["peak"]["sites"]], [8 * MiB, 4 * MiB, 2 * MiB], "by buffer")
    clean_teardown(d, "XLA BFC")
    text = report(trace).stdout
    check("cuMemAlloc_v2 of 48.00 MiB on device 0: CUDA_ERROR_OUT_OF_MEMORY (2); got 43.20 MiB"
          in text, "the retry, said")
    check("verdict:" not in text, "no verdict")


def test_xla_vmm_allocator():
    d, _ = xla_run("vmm", SIMCUDA_FABRIC="1")
    eq([(f["api"], f["requested_bytes"], f["result_name"], f["outcome"], fn(f))
        for f in d["failures"]],
       [("cuMemCreate", n * MiB, "CUDA_ERROR_NOT_PERMITTED", "refused",
         "create_physical_allocation") for n in (6, 4, 10)],
       "each buffer's FABRIC+POSIX_FD request refused, POSIX_FD taken")
    eq(d["peak"]["bytes"], 14 * MiB, "device peak: 4 and 10 MiB, the 6 freed before")
    eq(category(d, "device"), (14 * MiB, 0, 3), "physical memory")
    eq(category(d, "address_space"), (14 * MiB, 0, 3), "one range a buffer")
    eq(category(d, "mapped"), (14 * MiB, 0, 3), "mapped once each")
    eq(category(d, "host_pinned"), (8, 0, 1), "the timeline counter")
    clean_teardown(d, "XLA VMM")


def test_xla_cuda_async_preallocation_stays_in_the_pool():
    d, _ = xla_run("async")
    eq(d["failures"], [], "no failure")
    eq(d["peak"]["bytes"], 48 * MiB, "the preallocation: 0.75 of the device")
    eq([(s["bytes"], s["api"], s["frames"][1]["function"]) for s in d["peak"]["sites"]],
       [(48 * MiB, "cuMemAllocFromPoolAsync", "set_stream_and_preallocate_memory")],
       "set by SetStreamAndPreallocateMemory")
    eq([(p["peak_reserved_bytes"], p["reserved_bytes_at_end"], p["used_bytes_at_end"])
        for p in d["pools"]["pools"]], [(48 * MiB, 48 * MiB, 0)],
       "the release threshold keeps it reserved")
    clean_teardown(d, "XLA async")


def test_tensorflow_cuda_malloc_async():
    base = {"SIMCUDA_MEMORY": "64M", "GPUSHIM_POOL_SAMPLE_MS": "0"}
    for prealloc, peak, site, fn1 in [(None, 18 * MiB, [12 * MiB, 4 * MiB, 2 * MiB], "step"),
                                      ("-1", 32 * MiB, [32 * MiB],
                                       "set_stream_and_preallocate_memory")]:
        env = dict(base, TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC=prealloc)
        r = same_behaviour([E.prog("drv_tf_async")], env=env)
        eq(r.out, f"pool keeps {peak // MiB} MiB\n", "the pool, as the driver says")
        d = report_json(one_trace(r))
        what = f"PREALLOC={prealloc}"
        eq((d["events"]["allocations"], d["events"]["frees"]), (6 + bool(prealloc),) * 2, what)
        eq(d["peak"]["bytes"], peak, f"{what}: peak")
        eq([s["bytes"] for s in d["peak"]["sites"]], site, f"{what}: what set it")
        eq({s["frames"][1]["function"] for s in d["peak"]["sites"]}, {fn1}, f"{what}: from")
        eq([(p["peak_reserved_bytes"], p["reserved_bytes_at_end"], p["used_bytes_at_end"])
            for p in d["pools"]["pools"]], [(peak, peak, 0)], f"{what}: the pool keeps it")
        clean_teardown(d, what)
