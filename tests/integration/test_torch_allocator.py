"""test_torch_allocator.py - PyTorch's caching allocator and its expandable
segments as tests/progs/rt_torch_caching.c imitates them (issue 15, item 7),
on a 64 MiB device of which another process holds 20 MiB: the segments the
driver sees and the tensors in them (blocks), the sizes the allocator's rules
give (two 700 KiB tensors in one 2 MiB segment, 5 MiB in a 20 MiB one,
10 MiB + 1 byte in a 12 MiB one, a stream's segments its own), the retry
after release_cached_blocks as a recovered failure, and, with
expandable_segments:True, reserved address space apart from the device
memory mapped page by page, all of it given back at the end. The figures
are the schedule's, worked out in the program's header.
"""
import os
import pickle
import subprocess
import tempfile

from harness import E, KiB, MiB, check, eq, one_trace, report, report_json, run, same_behaviour

ENV = {"SIMCUDA_MEMORY": "64M", "SIMCUDA_OTHER": "20M", "PYTORCH_CUDA_ALLOC_CONF": None}
EXPANDABLE = dict(ENV, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
T700K = 700 * KiB


def caching_run(*phases, env=ENV, rc=0):
    r = run([E.prog("rt_torch_caching"), *phases], env=env)
    eq(r.rc, rc, f"rt_torch_caching {' '.join(phases)}: {r.err}")
    return one_trace(r), r


def functions(site):
    return [f["function"] for f in site["frames"]]


def phase(site):
    """The program's phase that made a site's allocations."""
    names = [n for n in functions(site) if n in ("small", "large", "retry", "oom", "teardown")]
    return names[0] if names else None


def torch_snapshot(trace):
    out = os.path.join(tempfile.mkdtemp(prefix="gpushim-torchalloc-"), "s.pickle")
    p = subprocess.run([E.gpushim, "export", "--format=torch-snapshot", "-o", out, trace],
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, p.stderr)
    with open(out, "rb") as f:
        return pickle.load(f)


def test_torch_segments_and_the_tensors_in_them():
    trace, r = caching_run("small", "large")
    eq(r.out, "torch caching done: allocated 21742080, reserved 39845888, retries 0\n",
       "allocated: 4 x 700 KiB, 10 MiB + 512, 3 MiB and t8's 5 MiB block; reserved 38 MiB")
    d = torch_snapshot(trace)
    segs = [(s["total_size"], s["segment_type"], [(b["size"], b["state"]) for b in s["blocks"]])
            for s in d["segments"]]
    eq(segs, [
        # t1 and t2 in one 2 MiB segment; 680960 bytes left, too few for t3
        (2 * MiB, "small", [(T700K, "active_allocated"), (T700K, "active_allocated"),
                            (2 * MiB - 2 * T700K, "inactive")]),
        (2 * MiB, "small", [(T700K, "active_allocated"), (2 * MiB - T700K, "inactive")]),  # t3
        # t4, on the side stream: a segment of its own, though the one above has room
        (2 * MiB, "small", [(T700K, "active_allocated"), (2 * MiB - T700K, "inactive")]),
        # 10 MiB + 1 byte: rounded to 512, in a segment rounded to 2 MiB
        (12 * MiB, "large", [(10 * MiB + 512, "active_allocated"), (2 * MiB - 512, "inactive")]),
        # 5 MiB in a 20 MiB segment; t7 (3 MiB) from its remainder; t8 (4 MiB) in t6's
        # 5 MiB block, whole: 1 MiB left is no more than kSmallSize
        (20 * MiB, "large", [(5 * MiB, "active_allocated"), (3 * MiB, "active_allocated"),
                             (12 * MiB, "inactive")]),
    ], "the segments at the end and their blocks")
    t = d["device_traces"][0]
    eq([(e["action"], e["size"]) for e in t],
       [("segment_alloc", 2 * MiB), ("alloc", T700K), ("alloc", T700K),
        ("segment_alloc", 2 * MiB), ("alloc", T700K), ("segment_alloc", 2 * MiB), ("alloc", T700K),
        ("segment_alloc", 12 * MiB), ("alloc", 10 * MiB + 512),
        ("segment_alloc", 20 * MiB), ("alloc", 5 * MiB), ("alloc", 3 * MiB),
        ("free_completed", 5 * MiB), ("alloc", 5 * MiB)],
       "a segment only when no cached block of the pool and stream holds the tensor")
    eq(t[-1]["addr"], t[-2]["addr"], "t8 where t6 was, in its block")

    j = report_json(trace)
    eq((j["peak"]["bytes"], j["events"]["allocations"], j["events"]["frees"]), (38 * MiB, 5, 0),
       "five segments, none freed")
    eq(sorted((s["bytes"], s["count"], phase(s)) for s in j["peak"]["sites"]),
       [(2 * MiB, 1, "small")] * 3 + [(12 * MiB, 1, "large"), (20 * MiB, 1, "large")],
       "the report lists each segment by the call that made it")
    eq((j["blocks"]["allocations"], j["blocks"]["frees"], j["blocks"]["leaks"]["bytes"]),
       (8, 1, 21742080), "the tensors t1 to t8: blocks, t6 freed")
    text = report(trace).stdout
    check("Peak: 38.00 MiB of device memory at " in text and
          "Blocks of the program's own allocator: 8 given, 1 taken back\n" in text, text)


def test_torch_retry_after_release_cached_blocks_is_recovered():
    trace, r = caching_run("small", "large", "retry", "teardown")
    eq(r.out, "torch caching done: allocated 0, reserved 0, retries 1\n",
       "all given back; one retry (stats.num_alloc_retries)")
    j = report_json(trace)
    got = [(f["api"], f["requested_bytes"], f["result_name"], f["free_bytes"],
            f["process_bytes"], f["outcome"], functions(f)[0]) for f in j["failures"]]
    eq(got, [("cudaMalloc", 20 * MiB, "CUDA_ERROR_OUT_OF_MEMORY", 6 * MiB, 38 * MiB, "recovered",
              "alloc_block")], "t9's segment: 6 MiB free, then got after freeing the cache")
    rec = j["failures"][0]["recovery"]
    eq((rec["bytes"], rec["freed_bytes"], rec["frees"]), (20 * MiB, 16 * MiB, 3),
       "release_cached_blocks: the 12 MiB segment and two 2 MiB ones, whole and cached")
    eq(j["failures"][0]["verdict"], None, "no verdict: the job went on")
    eq((j["failure_outcomes"]["unrecovered"], j["failure_outcomes"]["recovered"]), (0, 1),
       "recovered")
    eq(j["events"], {"allocations": 6, "frees": 6, "failed": 1, "frees_unknown": 0,
                     "references": 0}, "t10 from the cache: no sixth cudaMalloc for it")
    eq(j["peak"]["bytes"], 42 * MiB, "the peak: S3, S5 and the retry's segment")
    eq(sorted((s["bytes"], phase(s)) for s in j["peak"]["sites"]),
       [(2 * MiB, "small"), (20 * MiB, "large"), (20 * MiB, "retry")], "live at the peak")
    eq((j["leaks"]["bytes"], j["blocks"]["leaks"]["bytes"]), (0, 0), "nothing left")
    b = j["blocks"]
    eq((b["allocations"], b["frees"], b["frees_unknown"]), (10, 10, 0), "ten tensors")
    eq(b["peak"]["bytes"], T700K + 23 * MiB, "allocated at its peak: t4, t7 and t9")
    fp = j["fragmentation"]["at_peak"]
    eq((fp["segments"], fp["segment_bytes"], fp["block_bytes"], fp["largest_free_bytes"],
        fp["blocks_outside_segments_bytes"]),
       (2, 22 * MiB, T700K + 3 * MiB, 12 * MiB, 0),
       "reserved 42 MiB at the peak; the segments holding tensors: S3 (t4) and S5 (t7)")
    text = report(trace).stdout
    check("1 failed allocation (0 unrecovered; 1 recovered)" in text and
          "cudaMalloc of 20.00 MiB on device 0: CUDA_ERROR_OUT_OF_MEMORY (2); got 20.00 MiB " in text,
          text)
    check("verdict:" not in text, "no verdict")


def test_torch_allocator_without_the_shim_the_same():
    r = same_behaviour([E.prog("rt_torch_caching"), "small", "large", "retry", "teardown"],
                       env=ENV)
    eq(r.rc, 0, r.err)
    r = same_behaviour([E.prog("rt_torch_caching"), "small", "large", "retry", "teardown"],
                       env=EXPANDABLE)
    eq(r.rc, 0, r.err)


OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 MiB. GPU 0 has a "
       "total capacity of 64.00 MiB of which 2.00 MiB is free. Of the allocated memory 23.68 MiB "
       "is allocated by PyTorch, and 18.32 MiB is reserved by PyTorch but unallocated. If reserved "
       "but unallocated memory is large try setting "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n")


def test_torch_out_of_memory_error():
    trace, r = caching_run("small", "large", "retry", "oom", rc=1)
    eq(r.err, OOM, "the message, with its figures")
    j = report_json(trace)
    eq([(f["api"], f["requested_bytes"], f["free_bytes"], f["outcome"]) for f in j["failures"]],
       [("cudaMalloc", 20 * MiB, 6 * MiB, "recovered"),
        ("cudaMalloc", 40 * MiB, 2 * MiB, "unrecovered"),
        ("cudaMalloc", 40 * MiB, 2 * MiB, "unrecovered")],
       "the retry of the last found nothing to free in the cache")
    trace, r = caching_run("small", "large", "retry", "oom", env=EXPANDABLE, rc=1)
    eq(r.err, OOM, "expandable segments: the same message")
    j = report_json(trace)
    eq([(f["api"], f["requested_bytes"], f["outcome"]) for f in j["failures"]][-2:],
       [("cuMemCreate", 20 * MiB, "unrecovered")] * 2, "the page that would not come, twice")


def test_torch_expandable_segments():
    trace, r = caching_run("small", "large", "retry", "teardown", env=EXPANDABLE)
    eq(r.out, "torch caching done: allocated 0, reserved 0, retries 1\n",
       "all given back; one retry (stats.num_alloc_retries)")
    j = report_json(trace)
    c = j["categories"]
    eq((c["address_space"]["peak_bytes"], c["address_space"]["allocations"],
        c["address_space"]["live_bytes_at_end"]), (224 * MiB, 3, 0),
       "reserved: 1.125 x 64 MiB in 2 MiB pages (72 MiB) for each small pool, in 20 MiB pages "
       "(80 MiB) for the large; all freed")
    eq((c["device"]["peak_bytes"], c["device"]["allocations"], c["device"]["live_bytes_at_end"]),
       (42 * MiB, 5, 0), "device memory: the pages, created one by one")
    eq((c["mapped"]["peak_bytes"], c["mapped"]["allocations"], c["mapped"]["live_bytes_at_end"]),
       (42 * MiB, 5, 0), "each page mapped once")
    eq(j["peak"]["bytes"], 42 * MiB, "the peak: pages mapped, not address space")
    eq(sorted((s["bytes"], s["count"], s["api"], phase(s)) for s in j["peak"]["sites"]),
       [(2 * MiB, 1, "cuMemCreate", "small"), (20 * MiB, 1, "cuMemCreate", "large"),
        (20 * MiB, 1, "cuMemCreate", "retry")],
       "the side stream's small page and two large pages")
    eq(j["events"], {"allocations": 13, "frees": 13, "failed": 2, "frees_unknown": 0,
                     "references": 0}, "5 pages, 5 mappings, 3 reservations; no unknown free")
    got = [(f["api"], f["requested_bytes"], f["result_name"], f["outcome"], functions(f)[0])
           for f in j["failures"]]
    eq(got, [("cuMemCreate", 2 * MiB, "CUDA_ERROR_NOT_SUPPORTED", "refused", "es_map"),
             ("cuMemCreate", 20 * MiB, "CUDA_ERROR_OUT_OF_MEMORY", "recovered", "es_map")],
       "FABRIC refused the first page; the large pool's second page came after the retry")
    f = j["failures"][1]
    eq((f["free_bytes"], f["process_bytes"]), (18 * MiB, 26 * MiB), "26 MiB mapped, 18 free")
    eq((f["recovery"]["bytes"], f["recovery"]["freed_bytes"], f["recovery"]["frees"]),
       (20 * MiB, 4 * MiB, 2), "release_cached_blocks released the two free small pages")
    eq((j["leaks"]["bytes"], j["leaks"]["count"]), (0, 0), "nothing leaked")
    b = j["blocks"]
    eq((b["allocations"], b["frees"], b["frees_unknown"], b["peak"]["bytes"]),
       (10, 10, 0, T700K + 23 * MiB), "the same tensors")
    fp = j["fragmentation"]["at_peak"]
    eq((fp["segments"], fp["segment_bytes"], fp["block_bytes"], fp["largest_free_bytes"],
        fp["blocks_outside_segments_bytes"]),
       (2, 22 * MiB, T700K + 3 * MiB, 15 * MiB + 512, 0),
       "the tensors lie in the mapped pages: the side stream's page (t4) and the large pool's "
       "first page (t7 after 15 MiB + 512 free), the new page not mapped yet")
    text = report(trace).stdout
    check("  reserved address space        peak 224.00 MiB, 0 B live at the end, 3 allocations\n"
          in text and
          "  mapped ranges                 peak 42.00 MiB, 0 B live at the end, 5 allocations\n"
          in text, text)
    check("Everything allocated was freed." in text, "no leak")
