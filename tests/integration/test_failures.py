"""test_failures.py - what became of each failed allocation (issue 15, items 1
and 2), on tests/progs/rt_framework_failures.c, which makes them as the
frameworks do: PyTorch's caching allocator emptying its cache and retrying
(recovered), a FABRIC handle type refused and PyTorch's expandable segments
falling back to POSIX file descriptors (refused), the cudaMallocAsync
backend's cacheInfo asking for all free memory and halving (a probe, whose
allocation is no part of the peak), and a last request nothing got past
(unrecovered). The figures are its schedule's (64 MiB device, 1 MiB held by
another process). Also: every CUresult of the toolkit's cuda.h has its name.
"""
import json
import os
import re
import subprocess
import tempfile

from harness import E, MiB, KiB, check, eq, one_trace, report, report_json, run

ENV = {"SIMCUDA_MEMORY": "64M", "SIMCUDA_OTHER": "1M"}
HERE = os.path.dirname(os.path.abspath(__file__))


def framework_run(*phases, rc=0, cwd=None):
    r = run([E.prog("rt_framework_failures"), *phases], env=ENV, cwd=cwd)
    eq(r.rc, rc, f"rt_framework_failures {' '.join(phases)}: {r.err}")
    return one_trace(r), r


def fn(f):
    return f["frames"][0]["function"] if f["frames"] else None


def test_each_failure_gets_its_outcome():
    trace, r = framework_run("retry", "fabric", "probe", "oom", rc=1)
    check("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 48.00 MiB" in r.err,
          f"the job dies of the last one: {r.err}")
    j = report_json(trace)
    got = [(f["api"], f["requested_bytes"], f["result_name"], f["free_bytes"],
            f["process_bytes"], f["outcome"], fn(f)) for f in j["failures"]]
    eq(got, [("cudaMalloc", 24 * MiB, "CUDA_ERROR_OUT_OF_MEMORY", 3 * MiB, 60 * MiB,
              "recovered", "alloc_block"),
             ("cuMemCreate", 2 * MiB, "CUDA_ERROR_NOT_SUPPORTED", 19 * MiB, 44 * MiB,
              "refused", "expandable_map"),
             ("cudaMallocAsync", 17 * MiB, "CUDA_ERROR_OUT_OF_MEMORY", 17 * MiB, 46 * MiB,
              "probe", "cache_info"),
             ("cudaMalloc", 48 * MiB, "CUDA_ERROR_OUT_OF_MEMORY", 17 * MiB, 46 * MiB,
              "unrecovered", "alloc_block"),
             ("cudaMalloc", 48 * MiB, "CUDA_ERROR_OUT_OF_MEMORY", 41 * MiB, 22 * MiB,
              "unrecovered", "alloc_block")], "the failures and their outcomes")
    rec, refused, probe, last1, last2 = j["failures"]
    eq((rec["recovery"]["bytes"], rec["recovery"]["freed_bytes"], rec["recovery"]["frees"]),
       (24 * MiB, 40 * MiB, 2), "the retry got 24 MiB after freeing both cached segments")
    check(rec["recovery"]["after_ns"] > 0, f"some time after: {rec['recovery']}")
    eq((probe["recovery"]["bytes"], probe["recovery"]["freed_bytes"]), (17 * MiB // 2, 0),
       "half the free memory fit")
    eq(refused["recovery"], None, "nothing to recover from")
    eq([f["verdict"] is None for f in j["failures"]], [True, True, True, False, False],
       "verdicts for the unrecovered alone")
    eq([f["verdict"]["cause"] for f in (last1, last2)], ["too_large", "too_large"],
       "what the process needed does not fit")
    check(last1["verdict"]["sentence"].startswith(
        "Too large for the device: the process held 46.00 MiB and asked for 48.00 MiB more"),
        last1["verdict"]["sentence"])
    eq([f["postmortem"] is None for f in j["failures"]], [True, True, True, False, False],
       "post-mortems for the unrecovered alone")
    eq([fn(s) for s in last1["postmortem"]["held"]],
       ["alloc_block", "alloc_block", "expandable_map"], "held then: 24, 20 and 2 MiB")
    eq(j["failure_outcomes"],
       {"unrecovered": 2, "recovered": 1, "probe": 1, "refused": 1,
        "retries": {"count": 1, "ns": rec["recovery"]["after_ns"], "freed_bytes": 40 * MiB,
                    "frees": 2},
        "probes": {"allocations": 1, "bytes": 17 * MiB // 2, "largest_bytes": 17 * MiB // 2,
                   "largest_time_ns": probe["time_ns"] + probe["recovery"]["after_ns"]},
        "refused_results": [{"result": 801, "result_name": "CUDA_ERROR_NOT_SUPPORTED",
                             "count": 1}]}, "the summary")
    eq(j["events"], {"allocations": 8, "frees": 4, "failed": 5, "frees_unknown": 0,
                     "references": 0}, "events: the probe's allocation and free not among them")
    eq(j["peak"]["bytes"], 60 * MiB, "the peak: the weights and the two cached segments")
    eq([(s["bytes"], s["count"], fn(s)) for s in j["peak"]["sites"]],
       [(40 * MiB, 2, "alloc_block"), (20 * MiB, 1, "alloc_block")], "live at the peak")
    eq((j["leaks"]["bytes"], j["leaks"]["count"]), (22 * MiB, 2),
       "the weights and the expandable segment's page")

    text = report(trace).stdout
    check("  recorded  " in text and " 8 allocations, 4 frees, 5 failed allocations (2 "
          "unrecovered; 1 recovered, 1 probe, 1 refused)\n" in text, f"the lead: {text}")
    check("\nFailed allocations: 5, 2 unrecovered (the program did not get past them):\n"
          "  at " in text, "the failures lead with the unrecovered")
    eq(text.count("verdict: "), 2, "a verdict for each unrecovered failure, none for the others")
    check(text.index("verdict: Too large") < text.index("\nRecovered: 1 failed allocation"),
          "the others after them")
    check("\nRecovered: 1 failed allocation whose call site got the memory afterwards, in 1 "
          "retry; before retrying, the threads freed 40.00 MiB in 2 frees" in text,
          "what recovering cost")
    check("cudaMalloc of 24.00 MiB on device 0: CUDA_ERROR_OUT_OF_MEMORY (2); got 24.00 MiB "
          in text and "its thread having freed 40.00 MiB in 2 frees\n" in text, "the retry")
    check("\nProbes: 1 failed allocation asked to learn what fits" in text and
          "cudaMallocAsync of 17.00 MiB on device 0: CUDA_ERROR_OUT_OF_MEMORY (2); 8.50 MiB fit, "
          "freed at once\n             at cache_info (" in text, "the probe, apart")
    check("\nRefused: 1 failed allocation the driver refused as asked, not for want of memory:\n"
          "  at " in text and "cuMemCreate of 2.00 MiB on device 0: CUDA_ERROR_NOT_SUPPORTED "
          "(801)\n             at expandable_map (" in text, "the refusal, apart")
    check("\nPeak: 60.00 MiB of device memory at " in text and "(not counting 1 probe of up to "
          "8.50 MiB, freed at once: see Probes). Live then" in text, "the peak says the probe "
          "is not in it")


def test_a_probe_never_makes_the_peak():
    # Alone on the device: cacheInfo asks for 63 MiB (the pool's 2 MiB chunks
    # make it 64), then 31.5 MiB fits and is freed at once; cuDNN's 8 MiB
    # workspace is the peak.
    trace, _ = framework_run("probe")
    j = report_json(trace)
    eq([(f["requested_bytes"], f["free_bytes"], f["outcome"]) for f in j["failures"]],
       [(63 * MiB, 63 * MiB, "probe")], "one probe failure: all the free memory")
    eq(j["failures"][0]["recovery"]["bytes"], 63 * MiB // 2, "half of it fit")
    eq(j["peak"]["bytes"], 8 * MiB, "the peak is the workspace, not the probe")
    eq(j["capacity"]["peak_bytes"], 8 * MiB, "nor the fit")
    eq([(s["bytes"], fn(s)) for s in j["peak"]["sites"]], [(8 * MiB, "probe")],
       "the workspace's site")
    eq((j["leaks"]["bytes"], j["leaks"]["count"]), (0, 0), "nor a leak")
    eq(j["devices"][0]["allocations"], 1, "one allocation on the device: the workspace")
    eq(j["failure_outcomes"]["probes"]["allocations"], 1, "one probe, counted apart")
    eq(j["failure_outcomes"]["unrecovered"], 0, "nothing unrecovered")
    text = report(trace).stdout
    check(" 1 failed allocation (0 unrecovered; 1 probe)\n" in text, f"the lead: {text}")
    check("\nFailed allocations: 1, none unrecovered: the program got past each one\n" in text,
          "nothing the program did not get past")
    check("verdict:" not in text, "no verdict")
    check("(not counting 1 probe of up to 31.50 MiB, freed at once: see Probes)" in text,
          "the probe, apart from the peak")


def test_recovered_alone_is_no_failure_of_the_job():
    # The PyTorch retry alone, as a new user tried it: the job went on.
    trace, _ = framework_run("retry")
    j = report_json(trace)
    eq([(f["outcome"], f["verdict"]) for f in j["failures"]], [("recovered", None)],
       "recovered, no verdict")
    text = report(trace).stdout
    check("\nFailed allocations: 1, none unrecovered: the program got past each one\n" in text,
          text)
    check("Too large for the device" not in text and "verdict:" not in text,
          "no verdict of out of memory")


def export_html(trace):
    out = os.path.join(tempfile.mkdtemp(prefix="gpushim-failures-html-"), "r.html")
    p = subprocess.run([E.gpushim, "export", "--format=html", "-o", out, trace],
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, p.stderr)
    with open(out, encoding="utf-8") as f:
        return f.read()


def table_rows(page, table_id):
    m = re.search(r'<table class="sortable" id="%s">(.*?)</table>' % re.escape(table_id), page,
                  re.S)
    check(m, f"table {table_id}")
    body = m.group(1).split("<tbody>")[1]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_html_and_ranks_are_about_the_unrecovered():
    tmp = tempfile.mkdtemp(prefix="gpushim-failures-")
    paths = []
    for rank, phases in [(0, ("retry", "fabric", "probe", "oom")), (1, ("retry", "probe"))]:
        cwd = os.path.join(tmp, f"rank{rank}")
        os.mkdir(cwd)
        r = run([E.prog("rt_framework_failures"), *phases],
                env=dict(ENV, RANK=str(rank), WORLD_SIZE="2"), cwd=cwd)
        eq(r.rc, 1 if rank == 0 else 0, r.err)
        paths.append(one_trace(r))
    page = export_html(paths[0])
    j = report_json(paths[0])
    rows = table_rows(page, "failures")
    eq([(r[1], r[4]) for r in rows], [("cudaMalloc", "CUDA_ERROR_OUT_OF_MEMORY")] * 2,
       "the failures table: the two unrecovered")
    eq([r[8] for r in rows], [f["verdict"]["sentence"] for f in j["failures"][3:]],
       "with their verdicts")
    others = table_rows(page, "got-past")
    eq([(r[1], r[5]) for r in others],
       [("cudaMalloc", "recovered"), ("cuMemCreate", "refused"), ("cudaMallocAsync", "probe")],
       "the others, with their outcomes")
    eq(len(re.findall(r'<circle class="failure"', page)), 2, "a red dot for each unrecovered")
    check("5 failed allocations (2 unrecovered; 1 recovered, 1 probe, 1 refused)" in page,
          "the summary's lead")

    p = subprocess.run([E.gpushim, "report", "--json", *paths], capture_output=True, text=True,
                       timeout=120)
    eq(p.returncode, 0, p.stderr)
    d = json.loads(p.stdout)
    eq([(x["rank"], x["failures"], x["unrecovered_failures"]) for x in d["ranks"]],
       [(0, 5, 2), (1, 2, 0)], "failures, and those not got past")
    f0 = d["ranks"][0]["first_failure"]
    eq((f0["api"], f0["requested_bytes"]), ("cudaMalloc", 48 * MiB),
       "rank 0's first failure: the first unrecovered, not the recovered one")
    eq(d["ranks"][1]["first_failure"], None, "rank 1 got past all of its")
    eq((d["first_failure"]["rank"], d["failed_ranks"]), (0, 1), "one rank failed")
    text = subprocess.run([E.gpushim, "report", *paths], capture_output=True, text=True,
                          timeout=120).stdout
    rows = [l.split() for l in text.splitlines() if l[:4].strip().isdigit()]
    eq([(r[0], r[5]) for r in rows], [("0", "2"), ("1", "0")], "the failures column")
    check("cudaMalloc of 48.00 MiB on device 0 (CUDA_ERROR_OUT_OF_MEMORY); 1 rank failed" in text,
          text)


def curesults(text, pattern):
    return {name: int(value) for name, value in re.findall(pattern, text)}


def test_every_curesult_of_cuda_h_has_its_name():
    with open(os.path.join(HERE, "..", "..", "include", "gpushim_cuda.h")) as f:
        ours = curesults(f.read(), r"X\((CUDA_[A-Z0-9_]+), (\d+)\)")
    check(len(ours) > 100, f"the table: {len(ours)}")
    cuda_h = "/usr/local/cuda/include/cuda.h"
    if not os.path.exists(cuda_h):
        return "no cuda.h on this machine"
    with open(cuda_h) as f:
        text = f.read()
    enum = text[text.index("typedef enum cudaError_enum"):]
    enum = enum[:enum.index("} CUresult;")]
    theirs = curesults(enum, r"\b(CUDA_[A-Z0-9_]+)\s*=\s*(\d+)")
    eq(ours, theirs, "every CUresult of cuda.h, by name and value")
