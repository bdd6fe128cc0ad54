"""test_streams.py - stream order (issue 15, items 6 and 7): the simulated
driver's stream-ordered frees and the reuse hazard it flags
(tests/progs/drv_stream_order.c), the pluggable allocator's frees of a
tensor used on a side stream and the release threshold it sets
(dl_torch_streams.c), and PyTorch's backend:cudaMallocAsync imitated through
the runtime (rt_torch_async.c). The figures are the programs' schedules'.
"""
from harness import E, MiB, eq, one_trace, report_json, run

HAZARD = ("simcuda: reuse hazard: cuMemAllocAsync on stream #0 got 0x700000000000 "
          "(4194304 bytes), which stream #2 may still be using\n")  # #1: device 1's default stream


def pool_of(d):
    eq(len(d["pools"]["pools"]), 1, "one pool")
    p = d["pools"]["pools"][0]
    return (p["device"], p["peak_reserved_bytes"], p["peak_used_bytes"],
            p["reserved_bytes_at_end"], p["used_bytes_at_end"])


def test_the_simulated_driver_frees_in_stream_order_and_flags_a_hazard():
    r = run([E.prog("drv_stream_order")], env={"SIMCUDA_MEMORY": "64M",
                                                "GPUSHIM_POOL_SAMPLE_MS": "0"})
    eq((r.rc, r.out), (0, "stream order done, 1 hazard\n"), f"the program's checks: {r.err}")
    eq(r.err, "simcuda: reuse hazard: cuMemAllocAsync on stream #1 got 0x700000200000 "
              "(2097152 bytes), which stream #2 may still be using\n",
       "the one hazard: stream A got what B had used")
    d = report_json(one_trace(r))
    eq(d["events"], {"allocations": 9, "frees": 7, "failed": 0, "frees_unknown": 0,
                     "references": 0}, "events")
    eq(d["peak"]["bytes"], 6 * MiB, "at most three 2 MiB allocations live at once")
    # the pool's figures are sampled after allocations and frees, before the
    # final trim: it grew to 6 MiB only because B could not take A's free
    eq(pool_of(d), (0, 6 * MiB, 6 * MiB, 6 * MiB, 4 * MiB), "the pool")


def torch_streams(mode):
    env = {"SIMCUDA_MEMORY": "64M", "SIMCUDA_DEVICES": "2", "GPUSHIM_POOL_SAMPLE_MS": "0"}
    r = run([E.prog("dl_torch_streams"), E.shim, mode], env=env)
    eq(r.rc, 0, f"dl_torch_streams {mode}: {r.err}")
    return r, report_json(one_trace(r))


def test_a_recorded_side_stream_delays_the_free():
    for mode in ["recorded", "peer"]:  # peer: the side stream on device 1
        r, d = torch_streams(mode)
        eq((r.out, r.err), ("y reused x: no, reserved 8/8/0 MiB, hazards 0\n", ""),
           f"{mode}: the free waited for the side stream: y got new memory; the pool kept its "
           "8 MiB across synchronizes (threshold) until the empty cache")
        eq(d["events"], {"allocations": 3, "frees": 3, "failed": 0, "frees_unknown": 0,
                         "references": 0}, f"{mode}: events")
        eq(d["peak"]["bytes"], 5 * MiB, f"{mode}: y and z")
        eq([(s["api"], s["bytes"]) for s in d["peak"]["sites"]],
           [("gpushim_torch_alloc", 4 * MiB), ("gpushim_torch_alloc", MiB)],
           f"{mode}: peak sites")
        # reserved 8 MiB while x's free was pending; 0 after the empty cache,
        # which the shim samples
        eq(pool_of(d), (0, 8 * MiB, 5 * MiB, 0, 0), f"{mode}: the pool")


def test_without_record_stream_the_memory_is_reused_too_early():
    for mode in ["unrecorded", "plain"]:
        r, d = torch_streams(mode)
        eq((r.out, r.err), ("y reused x: yes, reserved 4/6/0 MiB, hazards 1\n", HAZARD),
           f"{mode}: y got x's memory at once, while the side stream may use it")
        eq(pool_of(d), (0, 6 * MiB, 5 * MiB, 0, 0), f"{mode}: the pool")
        eq(d["events"]["frees_unknown"], 0, f"{mode}: no unknown free")


def test_the_cuda_malloc_async_backend():
    env = {"SIMCUDA_MEMORY": "64M", "SIMCUDA_OTHER": "1M", "GPUSHIM_POOL_SAMPLE_MS": "0"}
    r = run([E.prog("rt_torch_async")], env=env)
    eq((r.rc, r.out, r.err), (0, "async backend done, 0 hazards\n", ""),
       "the program's own checks: probe 25.5 MiB, pool 38 -> 12 -> 16 MiB")
    d = report_json(one_trace(r))
    eq(d["events"], {"allocations": 5, "frees": 4, "failed": 1, "frees_unknown": 0,
                     "references": 0}, "events (the probe's allocation held apart)")
    eq(d["peak"]["bytes"], 20 * MiB, "weights, activation and the cuDNN workspace")
    eq(sorted((s["bytes"], s["frames"][1]["function"]) for s in d["peak"]["sites"]),
       [(4 * MiB, "main"), (8 * MiB, "benchmark"), (8 * MiB, "main")], "peak sites")
    eq([(f["api"], f["requested_bytes"], f["free_bytes"], f["outcome"],
         f["recovery"]["bytes"]) for f in d["failures"]],
       [("cudaMallocAsync", 51 * MiB, 51 * MiB, "probe", 51 * MiB // 2)],
       "cacheInfo's first guess, all the free memory, halved")
    eq(d["failure_outcomes"]["probe"], 1, "one probe")
    eq(pool_of(d), (0, 38 * MiB, 75 * MiB // 2, 16 * MiB, 8 * MiB),
       "the pool: the probe's 38 MiB at most; 16 MiB kept at the end with the weights used")
    eq((d["pools"]["reserved_bytes_at_peak"], d["pools"]["used_bytes_at_peak"]),
       (38 * MiB, 20 * MiB), "the pool at the device peak, before emptyCache")
    eq((d["leaks"]["bytes"], d["leaks"]["count"]), (8 * MiB, 1), "the weights stay")


def test_a_first_guess_that_fits_is_a_probe():
    # rt_torch_async again: a later cacheInfo, with 8 MiB cached in the pool,
    # asks for all the free memory cudaMemGetInfo said (47 MiB) and gets it at
    # once. The shim marks the request (all_free), and the analyzer holds it
    # apart as a probe that failed nothing: without that, the job's peak
    # would be 55 MiB, all of the device it could have.
    env = {"SIMCUDA_MEMORY": "64M", "SIMCUDA_OTHER": "1M", "GPUSHIM_POOL_SAMPLE_MS": "0"}
    r = run([E.prog("rt_torch_async"), "again"], env=env)
    eq((r.rc, r.out, r.err), (0, "async backend done, 0 hazards\n", ""),
       "the program's own checks: 47 MiB fit at once, the pool 56 MiB, then 8 MiB")
    d = report_json(one_trace(r))
    eq(d["events"], {"allocations": 5, "frees": 4, "failed": 1, "frees_unknown": 0,
                     "references": 0}, "events (both probes' allocations held apart)")
    eq(d["peak"]["bytes"], 20 * MiB, "the peak is the first step's, not the probe's 55 MiB")
    eq([f["outcome"] for f in d["failures"]], ["probe"], "only the first cacheInfo failed")
    probes = d["failure_outcomes"]["probes"]
    eq((probes["allocations"], probes["bytes"], probes["largest_bytes"]),
       (2, 51 * MiB // 2 + 47 * MiB, 47 * MiB), "two probe allocations: 25.5 and 47 MiB")
    eq(pool_of(d), (0, 56 * MiB, 55 * MiB, 8 * MiB, 8 * MiB),
       "the pool did hold 56 MiB for the probe's instant, and 8 MiB after emptyCache")
    eq((d["leaks"]["bytes"], d["leaks"]["count"]), (8 * MiB, 1), "the weights stay, alone")
