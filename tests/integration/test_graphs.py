"""test_graphs.py - CUDA graphs (issue 15, item 3) on tests/progs/rt_graphs.c,
which captures and replays as PyTorch does (its comment names the code it
follows): the cudaMallocAsync backend's tensors captured as allocation and
free nodes, a graph built with cudaGraphAddMemAllocNode/FreeNode leaving an
allocation live, a launch that fails for memory, and the native allocator's
private-pool segment cudaMalloc'd under a relaxed capture. The figures are
its schedule's, on a 64 MiB device: nothing is allocated at capture; the
graph pool holds what a launch uses at once (10 MiB for the captured graph,
16 MiB for the node graph) until trimmed, and counts in the peak.
"""
import os

from harness import E, MiB, check, eq, one_trace, report, report_json, run

ENV = {"SIMCUDA_MEMORY": "64M"}


def graphs_run(*args, env=None):
    r = run([E.prog("rt_graphs"), *args], env={**ENV, **(env or {})})
    eq(r.rc, 0, f"rt_graphs {' '.join(args)}: {r.err}")
    return one_trace(r)


def fn(site, i=0):
    return site["frames"][i]["function"] if len(site["frames"]) > i else None


def sites(j, part):
    return [(s["bytes"], s["api"], fn(s)) for s in j[part]["sites"]]


def pool(j):
    pools = j["graphs"]["pools"]
    eq(len(pools), 1, "one device's graph pool")
    p = pools[0]
    return (p["reserved_bytes"], p["live_bytes"], p["sampled_reserved_bytes"],
            p["sampled_used_bytes"], p["launches"], p["launches_failed"])


def nodes(j):
    return [(n["in"], n["bytes"], n["api"], n["live"], fn(n, 1))
            for n in j["graphs"]["allocation_nodes"]]


def test_nothing_is_allocated_at_capture():
    j = report_json(graphs_run("captured"))
    eq((j["peak"]["bytes"], j["leaks"]["bytes"]), (8 * MiB, 8 * MiB), "the weights alone")
    eq(sites(j, "leaks"), [(8 * MiB, "cudaMallocAsync", "malloc_async")], "no node is memory")
    eq(pool(j), (0, 0, 0, 0, 0, 0), "the graph pool holds nothing (sampled at cudaGraphDestroy)")
    eq(nodes(j), [("executable", 4 * MiB, "cudaMallocAsync", False, "async_backend_forward"),
                  ("executable", 6 * MiB, "cudaMallocAsync", False, "async_backend_forward"),
                  ("executable", 4 * MiB, "cudaMallocAsync", False, "async_backend_forward"),
                  ("executable", 2 * MiB, "cudaMallocAsync", False, "async_backend_forward")],
       "the executable's allocation nodes, with their stacks")
    eq((j["graphs"]["memory_nodes"], j["graphs"]["executables_instantiated"],
        j["graphs"]["graphs_at_end"], j["graphs"]["executables_at_end"]), (7, 1, 0, 1),
       "seven nodes captured; the graph destroyed once instantiated")


def test_replays_hold_the_graph_pool_and_the_output():
    trace = graphs_run("replayed")
    j = report_json(trace)
    eq((j["peak"]["bytes"], j["leaks"]["bytes"]), (18 * MiB, 18 * MiB),
       "the weights and the 10 MiB the graph uses at once")
    eq(sites(j, "peak"), [(10 * MiB, "cuGraphUpload", "async_backend_capture"),
                          (8 * MiB, "cudaMallocAsync", "malloc_async")],
       "at the peak: the pool set aside by the upload")
    eq(sites(j, "leaks"), [(8 * MiB, "cudaMallocAsync", "malloc_async"),
                           (8 * MiB, "cuGraphUpload", "async_backend_capture"),
                           (2 * MiB, "cudaMallocAsync", "malloc_async")],
       "at the end: the weights, the pool's 8 MiB beyond use, and the output the graph "
       "did not free")
    eq(fn(j["leaks"]["sites"][2], 1), "async_backend_forward", "the output's own call site")
    eq(pool(j), (10 * MiB, 2 * MiB, 10 * MiB, 2 * MiB, 3, 0), "reserved 10, used 2, 3 launches")
    eq([n[3] for n in nodes(j)], [False, False, False, True], "only the output is live")
    check(all(s["api"] != "cuGraphUpload" for s in j["leaks"]["suspects"]),
          f"the pool's reserve is no leak suspect: {j['leaks']['suspects']}")
    text = report(trace).stdout
    check("CUDA graph pool on device 0: reserved 10.00 MiB (up to 10.00 MiB), used 2.00 MiB; "
          "1 graph instantiated, 3 launches" in text, f"the pool's line: {text}")
    check("CUDA graphs alive at the end: their allocation nodes" in text and "(live)" in text,
          f"the nodes listed: {text}")


def test_an_allocation_left_live_by_a_graph():
    j = report_json(graphs_run("kept"))
    eq((j["peak"]["bytes"], j["leaks"]["bytes"]), (24 * MiB, 24 * MiB), "12 + 4 at once, and 8")
    eq(sites(j, "peak"), [(12 * MiB, "cuGraphAddMemAllocNode", "alloc_node"),
                          (8 * MiB, "cudaMallocAsync", "malloc_async"),
                          (4 * MiB, "cuGraphAddMemAllocNode", "alloc_node")],
       "what set the peak: the node graph's two allocations")
    eq(sites(j, "leaks"), [(12 * MiB, "cuGraphLaunch", "replay"),
                           (8 * MiB, "cudaMallocAsync", "malloc_async"),
                           (4 * MiB, "cuGraphAddMemAllocNode", "alloc_node")],
       "tmp's bytes stay in the pool, at the launch; keep is live")
    eq(fn(j["leaks"]["sites"][2], 1), "alloc_node_keep", "keep's own call site")
    eq(pool(j)[:4], (16 * MiB, 4 * MiB, 16 * MiB, 4 * MiB), "reserved 16, used 4")


def test_the_whole_schedule():
    trace = graphs_run()
    j = report_json(trace)
    eq((j["peak"]["bytes"], j["leaks"]["bytes"]), (24 * MiB, 0), "peak; everything freed")
    eq(sites(j, "peak"), [(12 * MiB, "cuGraphAddMemAllocNode", "alloc_node"),
                          (8 * MiB, "cudaMallocAsync", "malloc_async"),
                          (4 * MiB, "cuGraphAddMemAllocNode", "alloc_node")], "at the peak")
    eq(pool(j), (0, 0, 0, 0, 5, 2), "trimmed; 5 launches, 2 failed (a live allocation, memory)")
    eq((j["graphs"]["memory_nodes"], j["graphs"]["executables_instantiated"],
        j["graphs"]["executables_at_end"], j["graphs"]["allocation_nodes"]), (14, 4, 0, []),
       "every node, executable, none left")
    eq(j["graphs"]["pools"][0]["peak_reserved_bytes"], 16 * MiB, "the pool's largest")
    # the launch that failed for memory, tied to the node that did not fit
    eq([(f["api"], f["requested_bytes"], f["result_name"], f["free_bytes"], f["process_bytes"],
         f["outcome"], fn(f, 1)) for f in j["failures"]],
       [("cuGraphLaunch", 52 * MiB, "CUDA_ERROR_OUT_OF_MEMORY", 40 * MiB, 24 * MiB,
         "unrecovered", "alloc_node_huge")], "the OOM, at the huge node's call site")
    # the native allocator's private-pool segment is ordinary device memory:
    # no graph node, counted as a cudaMalloc allocation
    eq(j["events"]["allocations"], 16, "3 launches x 4, 2 nodes, the weights, the segment")
    text = report(trace).stdout
    check("cuGraphLaunch of 52.00 MiB on device 0: CUDA_ERROR_OUT_OF_MEMORY" in text,
          f"the failure in the text report: {text}")
    html = os.path.join(os.path.dirname(trace), "r.html")
    r = run([E.gpushim, "export", "--format=html", "-o", html, trace], shim=False)
    eq(r.rc, 0, r.err)
    page = open(html).read()
    row = ('<tr><td class="num" data-v="0">0</td><td class="num" data-v="0">0 B</td>'
           '<td class="num" data-v="16777216">16.00 MiB</td><td class="num" data-v="0">0 B</td>'
           '<td class="num" data-v="5">5</td><td class="num" data-v="2">2</td></tr>')
    check('id="graph-pools"' in page and row in page, "the HTML page's graph pool table")


def test_a_bounded_trace_carries_the_graphs_over():
    whole = report_json(graphs_run())
    j = report_json(graphs_run("churn", env={"GPUSHIM_MAX_BYTES": "4M"}))
    check(j["trace"]["checkpoint"] is not None, "the trace started over from a checkpoint")
    eq(j["trace"]["complete"], True, "complete")
    for key in ("peak", "failures"):
        eq(j[key]["bytes"] if key == "peak" else
           [(f["requested_bytes"], fn(f, 1)) for f in j[key]],
           whole[key]["bytes"] if key == "peak" else
           [(f["requested_bytes"], fn(f, 1)) for f in whole[key]], key)
    eq(sites(j, "peak"), sites(whole, "peak"), "the same sites at the peak")
    eq(j["graphs"], whole["graphs"], "the same graphs figures")
    eq(j["events"]["allocations"], whole["events"]["allocations"] + 2_500_000, "and the churn")


LOOKUPS = r'''
import ctypes, sys
drv, shim = ctypes.CDLL(sys.argv[1]), ctypes.CDLL(sys.argv[2])
get = drv.cuGetProcAddress_v2
def addr(f):
    return ctypes.cast(f, ctypes.c_void_p).value
for base, version, ptsz, name in [
        ("cuStreamBeginCapture", 12000, 0, "cuStreamBeginCapture_v2"),
        ("cuStreamBeginCapture", 12000, 2, "cuStreamBeginCapture_v2_ptsz"),
        ("cuStreamEndCapture", 12000, 0, "cuStreamEndCapture"),
        ("cuStreamEndCapture", 12000, 2, "cuStreamEndCapture_ptsz"),
        ("cuGraphAddMemAllocNode", 12000, 0, "cuGraphAddMemAllocNode"),
        ("cuGraphAddMemFreeNode", 12000, 0, "cuGraphAddMemFreeNode"),
        ("cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags"),
        ("cuGraphInstantiateWithFlags", 12000, 0, "cuGraphInstantiateWithFlags"),
        ("cuGraphUpload", 12000, 2, "cuGraphUpload_ptsz"),
        ("cuGraphLaunch", 12000, 0, "cuGraphLaunch"),
        ("cuGraphLaunch", 12000, 2, "cuGraphLaunch_ptsz"),
        ("cuGraphExecDestroy", 12000, 0, "cuGraphExecDestroy"),
        ("cuGraphDestroy", 12000, 0, "cuGraphDestroy"),
        ("cuDeviceGraphMemTrim", 12000, 0, "cuDeviceGraphMemTrim")]:
    p, status = ctypes.c_void_p(), ctypes.c_int()
    rc = get(base.encode(), ctypes.byref(p), version, ctypes.c_uint64(ptsz), ctypes.byref(status))
    ours = addr(getattr(shim, name))
    print(name, rc == 0 and p.value == ours, addr(getattr(drv, name)) == ours)
'''


def test_every_graph_function_reaches_the_shim():
    if E.sanitized or E.wrapper:
        return "Python is not run under sanitizers or valgrind here"
    import sys
    r = run([sys.executable, "-c", LOOKUPS, os.path.join(E.build, "sim", "libcuda.so.1"),
             E.shim])
    eq(r.rc, 0, r.err)
    lines = r.out.split("\n")[:-1]
    eq(len(lines), 14, r.out)
    eq([l for l in lines if not l.endswith(" True True")], [],
       "cuGetProcAddress and dlsym both hand out the shim's wrapper")
