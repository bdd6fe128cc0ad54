"""test_memory_kinds.py - every way a program gets memory (issue 3): virtual
memory management as PyTorch and NCCL use it, pinned host memory, arrays,
imported memory, stream-ordered pools, several devices and streams. Each
program's schedule is at the top of its tests/progs/*.c.
"""
from harness import E, KiB, MiB, eq, one_trace, report, report_json, same_behaviour, site_summary

EVERY_EVENT = {"GPUSHIM_POOL_SAMPLE_MS": "0"}


def category(d, name):
    c = d["categories"][name]
    return (c["peak_bytes"], c["live_bytes_at_end"], c["allocations"])


def test_pytorch_expandable_segments_and_per_tensor():
    r = same_behaviour([E.prog("rt_torch_style")], env=EVERY_EVENT)
    d = report_json(one_trace(r))
    eq((d["events"]["allocations"], d["events"]["frees"]), (9, 4), "allocations, frees")
    eq(d["peak"]["bytes"], 60 * MiB, "device peak: physical pages, counted once")
    eq([(s["bytes"], s["count"], s["api"], s["frames"][0]["function"]) for s in d["peak"]["sites"]],
       [(60 * MiB, 3, "cuMemCreate", "grow_segment")], "peak sites")
    eq(site_summary(d["leaks"]["sites"]), [(40 * MiB, 2, "grow_segment")], "leaks")
    eq(category(d, "device"), (60 * MiB, 40 * MiB, 5), "device")
    eq(category(d, "mapped"), (60 * MiB, 40 * MiB, 3), "mapped")
    eq(category(d, "address_space"), (256 * MiB, 256 * MiB, 1), "address space")
    pools = d["pools"]["pools"]
    eq(len(pools), 1, "pools sampled")
    p = pools[0]
    eq((p["device"], p["peak_reserved_bytes"], p["peak_used_bytes"], p["peak_unused_bytes"],
        p["used_bytes_at_end"], p["samples"]), (0, 2 * MiB, 2 * MiB, 2 * MiB, 0, 4),
       "the default pool")


def test_nccl_free_sequence_and_host_located_handles():
    r = same_behaviour([E.prog("dl_nccl_style")])
    d = report_json(one_trace(r))
    eq((d["events"]["allocations"], d["events"]["frees"], d["events"]["references"],
        d["events"]["frees_unknown"]), (7, 6, 2, 0), "events")
    eq(category(d, "device"), (6 * MiB, 2 * MiB, 2), "device")
    eq(category(d, "host_pinned"), (2 * MiB, 0, 1), "host-located physical memory")
    eq(category(d, "address_space"), (8 * MiB, 0, 2), "address space")
    eq(category(d, "mapped"), (6 * MiB, 0, 2), "mapped")
    eq([(s["bytes"], s["count"], s["api"], s["frames"][0]["function"]) for s in d["leaks"]["sites"]],
       [(2 * MiB, 1, "cuMemCreate", "kept_buffer")], "leaks")


def test_host_arrays_3d_and_pools_through_the_runtime():
    r = same_behaviour([E.prog("rt_kinds")], env=EVERY_EVENT)
    d = report_json(one_trace(r))
    eq(category(d, "host_pinned"), (6 * MiB, 2 * MiB, 3), "pinned host")
    eq(category(d, "array"), (576 * KiB, 64 * KiB, 2), "arrays")
    eq(category(d, "device"), (102400 + 4 * MiB, 102400, 3), "device")
    eq([(s["bytes"], s["api"], s["frames"][0]["function"]) for s in d["leaks"]["sites"]],
       [(102400, "cudaMalloc3D", "volume")], "device leaks")
    eq(d["peak"]["bytes"], 102400 + 4 * MiB, "device peak")
    apis = sorted({s["api"] for s in d["peak"]["sites"]})
    eq(apis, ["cudaMalloc3D", "cudaMallocFromPoolAsync"], "labels at the peak")
    pools = d["pools"]["pools"]
    eq(len(pools), 1, "pools")
    p = pools[0]
    eq((p["device"], p["peak_reserved_bytes"], p["peak_used_bytes"], p["peak_unused_bytes"],
        p["reserved_bytes_at_end"], p["samples"]), (0, 4 * MiB, 4 * MiB, 4 * MiB, 0, 6), "the pool")
    eq((d["pools"]["reserved_bytes_at_peak"], d["pools"]["used_bytes_at_peak"]), (4 * MiB, 4 * MiB),
       "pools at the device peak")
    text = report(one_trace(r)).stdout
    for want in ["pinned host memory", "CUDA arrays", "held beyond use"]:
        eq(want in text, True, f"text report mentions {want!r}")


def test_imported_memory_is_seen_not_owned():
    r = same_behaviour([E.prog("drv_ipc")])
    d = report_json(one_trace(r))
    eq(category(d, "imported"), (MiB, MiB, 2), "imported")
    eq((d["peak"]["bytes"], d["leaks"]["bytes"]), (MiB, MiB), "device memory: the owner's only")


def test_two_devices_and_a_stream_of_the_other():
    r = same_behaviour([E.prog("drv_multidevice")], env={"SIMCUDA_DEVICES": "2"})
    d = report_json(one_trace(r))
    eq([(x["device"], x["peak_bytes"], x["live_bytes_at_end"], x["allocations"]) for x in d["devices"]],
       [(0, 4 * MiB, 3 * MiB, 2), (1, 10 * MiB, 10 * MiB, 2)], "per device")
    eq(d["peak"]["bytes"], 14 * MiB, "process peak")
    text = report(one_trace(r)).stdout
    eq("device 1" in text, True, "text report lists device 1")


def test_nccl_nvls_multicast_is_its_own_category():
    r = same_behaviour([E.prog("drv_multicast")])
    d = report_json(one_trace(r))
    eq((d["events"]["allocations"], d["events"]["frees"], d["events"]["frees_unknown"]), (7, 7, 0),
       "events: create, the peer's import, physical, two reservations, two maps; all freed, "
       "none unknown")
    eq(category(d, "multicast"), (8 * MiB, 0, 1), "the multicast object")
    eq(category(d, "imported"), (0, 0, 1), "the peer's handle to it: seen, not owned")
    eq(category(d, "device"), (8 * MiB, 0, 1), "device: the physical memory bound to it only")
    eq(category(d, "mapped"), (16 * MiB, 0, 2), "mapped: the unicast and the multicast views")
    eq(category(d, "address_space"), (16 * MiB, 0, 2), "address space")
    eq((d["peak"]["bytes"], d["leaks"]["bytes"]), (8 * MiB, 0), "device peak, leaks")
    eq([(s["bytes"], s["api"], s["frames"][0]["function"]) for s in d["peak"]["sites"]],
       [(8 * MiB, "cuMemCreate", "nvls_allocate_mem")], "peak sites")
    text = report(one_trace(r)).stdout
    eq("multicast objects" in text, True, "text report names the category")
