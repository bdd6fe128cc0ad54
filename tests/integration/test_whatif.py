"""test_whatif.py - gpushim whatif (issue 17, items 1 and 7) on the schedule of
pytorch/pytorch#123548 (tests/progs/rt_whatif_loop.c: 101 steps, each of A =
91 MiB, B = 45.5 MiB and a 2 MiB tensor kept, then A and B freed), one
cudaMalloc per tensor, replayed through the model of PyTorch 2.12's caching
allocator. The figures are the allocator's rules worked by hand
(c10/cuda/CUDACachingAllocator.cpp):

default: A takes a 92 MiB segment (get_allocation_size rounds to kRoundLarge,
2 MiB) and B a 46 MiB one; neither is split again (should_split: the large
pool splits only past kSmallSize, 1 MiB, left). Each 2 MiB tensor is cut from
a 20 MiB segment (kLargeBuffer), ten to a segment: 101 need 11. Reserved
92 + 46 + 11 x 20 = 358 MiB, 13 cudaMalloc calls; allocated at the peak 92 +
46 + 202 = 340 MiB. max_split_size_mb:128 changes nothing (no block reaches
it).

expandable_segments:True: one segment mapped in 20 MiB pages, blocks split at
any 512 bytes; the last step needs 91 + 45.5 + 202 = 338.5 MiB, 17 pages:
340 MiB, each page mapped once.

Both together (torch 2.12): the merged 136.5 MiB free block is refused by
get_free_block's oversize rule and each step maps new pages: 14,000 MiB
reserved after 101 steps (the unit test holds the model to the thread's
figures). With PR #193400 (--torch pr193400) it is 340 MiB again.

On a 300 MiB card: default needs a ninth keep segment at step 81 (138 + 9 x 20
> 300; request 3 x 80 + 2 = 242); expandable segments last one step more
(136.5 + 2 x 82 > 300 at step 82, request 245).
"""
import html
import json
import os
import subprocess
import tempfile

from harness import E, MiB, check, eq, one_trace, run

SETTINGS = ["default", "expandable_segments:True", "max_split_size_mb:128",
            "expandable_segments:True,max_split_size_mb:128"]


def loop_trace(*args, env=None):
    r = run([E.prog("rt_whatif_loop"), *args], env=env)
    return one_trace(r), r


def whatif(trace, *args, rc=0):
    argv = [E.gpushim, "whatif", *args, trace]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    eq(p.returncode, rc, f"{' '.join(argv)}: {p.stderr}")
    return p


def whatif_json(trace, *args):
    return json.loads(whatif(trace, "--json", *args).stdout)


def settings_args(names=SETTINGS):
    return [a for n in names for a in ("--setting", n)]


def outcomes(card):
    return {o["setting"]: o for o in card["outcomes"]}


def test_whatif_123548_loop_on_each_setting():
    trace, r = loop_trace()
    eq(r.rc, 0, f"rt_whatif_loop: {r.err}")
    d = whatif_json(trace, "--card", "1G", "--context", "0", *settings_args())
    eq(d["source"], "driver", "tensors are the cudaMallocs")
    eq(d["torch"], "2.12", "the newest model by default")
    eq([s["name"] for s in d["settings"]], SETTINGS, "the settings asked for, in order")
    eq(len(d["devices"]), 1, "one device")
    dev = d["devices"][0]
    eq((dev["requests"], dev["frees"], dev["failed_requests"]), (303, 303, 0), "requests")
    eq(dev["tensor_peak_bytes"], 338 * MiB + MiB // 2, "tensors live at most")
    # 8 cases, 5 models: on the card default and max_split_size_mb:128 follow
    # default with no limit to the end (358 MiB reserved at most, no block of
    # 128 MiB); expandable segments on the card run their own (the address
    # space follows the card); with max_split_size_mb:128 the expandable
    # ones are forked when their merged free block reaches 128 MiB
    eq(dev["models"], 5, "models run")
    eq([c["name"] for c in dev["cards"]], ["1G", "no limit"], "the card, then no limit")
    card, free = (outcomes(c) for c in dev["cards"])
    eq(dev["cards"][0]["capacity_bytes"], 1024 * MiB, "1G with no context")
    for name, o in (("default", card["default"]), ("max_split_size_mb:128", free["max_split_size_mb:128"])):
        eq((o["peak_reserved_bytes"], o["peak_allocated_bytes"], o["cuda_malloc_calls"],
            o["cuda_free_calls"], o["oom_retries"]), (358 * MiB, 340 * MiB, 13, 0, 0), name)
        # at the 358 MiB peak, at its fullest (the last step), all is allocated
        # but the eleventh keep segment's 18 MiB (11 x 20 - 101 x 2)
        eq(o["unallocated_at_peak_bytes"], 18 * MiB, f"{name}: idle at the peak")
    e = free["expandable_segments:True"]
    eq((e["peak_reserved_bytes"], e["peak_allocated_bytes"], e["cuda_malloc_calls"]),
       (340 * MiB, 338 * MiB + MiB // 2, 17), "expandable: 17 pages of 20 MiB")
    eq(e["unallocated_at_peak_bytes"], MiB + MiB // 2, "expandable: 340 - 338.5 at the peak")
    # PyTorch's num_device_alloc counts map_block calls (stats.num_device_alloc++
    # once a call, whatever the pages): A's 5 pages in one, B's 2 in one, then
    # the kept tensors' 10 pages one at a time: 12
    eq((e["num_device_alloc"], e["num_device_free"], e["pages_mapped"], e["pages_unmapped"]),
       (12, 0, 17, 0), "expandable: 17 pages in 12 map_block calls")
    eq((free["default"]["num_device_alloc"], free["default"]["pages_mapped"]), (13, None),
       "default: a cudaMalloc each segment, no pages")
    both = free["expandable_segments:True,max_split_size_mb:128"]
    eq(both["peak_reserved_bytes"], 14000 * MiB, "#123548: reserved grows every step")
    eq((both["num_device_alloc"], both["pages_mapped"]), (101 * 2 + 10, 700),
       "700 pages in two map_block calls a step (A's, B's) and the kept tensors' 10")
    eq(both["oom_retries"], 0, "no limit: no retry")
    # On the 1 GiB card the same pair fits only by emptying its cache.
    c = card["expandable_segments:True,max_split_size_mb:128"]
    check(c["fits"] and c["oom_retries"] >= 1 and c["peak_reserved_bytes"] <= 1024 * MiB,
          f"on 1 GiB the pair fits through OOM retries: {c}")
    eq(dev["cards"][0]["best"], "expandable_segments:True", "the lowest peak with no retry")
    eq(dev["cards"][1]["best"], None, "no best without a card")


def test_whatif_pr193400_fixes_the_pair():
    trace, _ = loop_trace()
    d = whatif_json(trace, "--torch", "pr193400", *settings_args(SETTINGS[3:]))
    eq(d["torch"], "pr193400", "the version asked for")
    o = d["devices"][0]["cards"][-1]["outcomes"][0]
    eq(o["peak_reserved_bytes"], 340 * MiB, "with the fix the pair reuses its free block")


def test_whatif_where_each_runs_out_on_a_small_card():
    trace, _ = loop_trace()
    d = whatif_json(trace, "--card", "300M", "--context", "0", *settings_args(SETTINGS[:2]))
    card = outcomes(d["devices"][0]["cards"][0])
    for name, step, request in (("default", 81, 242), ("expandable_segments:True", 82, 245)):
        o = card[name]
        check(not o["fits"], f"{name} runs out on 300 MiB")
        oom = o["first_oom"]
        eq((oom["step"], oom["step_label"], oom["request"], oom["size_bytes"]),
           (step, "step", request, 2 * MiB), f"{name}: where it runs out")
        eq(oom["frames"][0]["function"], "keep", f"{name}: the call site")
        check("keep (rt_whatif_loop.c:" in oom["site"], f"{name}: site {oom['site']}")
    eq(d["devices"][0]["cards"][0]["best"], None, "none fits 300 MiB")
    text = whatif(trace, "--card", "300M", "--context", "0", *settings_args(SETTINGS[:2])).stdout
    check("runs out: step 81 (step): 2.00 MiB at keep (rt_whatif_loop.c:" in text, text)
    check("best: none fits this card" in text, text)


def test_whatif_the_runs_card_from_its_failure():
    trace, r = loop_trace("fail", "900", env={"SIMCUDA_MEMORY": "1G"})
    eq(r.rc, 1, f"the last request fails: {r.err}")
    d = whatif_json(trace, "--setting", "default")
    dev = d["devices"][0]
    eq(dev["run_card_bytes"], 1024 * MiB, "free plus held at the failure: the 1 GiB device")
    eq(dev["failed_requests"], 1, "the failed request is replayed")
    o = dev["cards"][0]["outcomes"][0]
    eq((o["fits"], o["served_run_failure"], o["first_oom"]["request"],
        o["first_oom"]["size_bytes"], o["first_oom"]["step"]), (False, False, 303, 900 * MiB, 101),
       "the model runs out where the run did")
    d = whatif_json(trace, "--setting", "default", "--card", "2G")
    o = d["devices"][0]["cards"][0]["outcomes"][0]
    eq((o["fits"], o["served_run_failure"]), (True, True), "a 2 GB card would have served it")


def test_whatif_fractions_are_of_the_cards_total():
    """PyTorch takes set_per_process_memory_fraction's fraction of the
    device's total memory (DeviceCachingAllocator::setMemoryFraction:
    allowed_memory_maximum = fraction * device_total), and XLA its memory
    limit likewise (CreateBFCAllocator: total_memory * memory_fraction);
    --context is memory the process cannot have, which the device refuses.
    The loop needs 358 MiB under default. On a 1 GiB card with the default
    512 MiB of context, memory_fraction:0.4 allows 409.6 MiB (not 0.4 of the
    512 left, 204.8): it fits. With 700 MiB of context, 0.9 would allow
    921.6 MiB but the device has 324: the device bites first."""
    trace, _ = loop_trace()
    d = whatif_json(trace, "--card", "1G", "--setting", "memory_fraction:0.4")
    card = d["devices"][0]["cards"][0]
    eq((card["capacity_bytes"], card["total_bytes"]), (512 * MiB, 1024 * MiB),
       "512 MiB for the process of a 1 GiB card")
    o = card["outcomes"][0]
    eq((o["fits"], o["peak_reserved_bytes"]), (True, 358 * MiB), "0.4 of the whole card")
    d = whatif_json(trace, "--card", "1G", "--context", "700M", "--setting", "memory_fraction:0.9")
    card = d["devices"][0]["cards"][0]
    eq(card["capacity_bytes"], 324 * MiB, "the card less 700 MiB")
    o = card["outcomes"][0]
    check(not o["fits"] and o["peak_reserved_bytes"] <= 324 * MiB,
          f"921.6 MiB allowed, 324 MiB there: runs out within the card: {o}")
    text = whatif(trace, "--card", "1G", "--setting", "memory_fraction:0.4").stdout
    check("on a 1G card (1.00 GiB: 512.00 MiB for the process after 512.00 MiB of context)"
          in text, text)


def test_whatif_the_runs_card_fraction_is_of_the_devices_total():
    """The run's card: the free memory at its failure plus what it held
    (1 GiB less 200 MiB another process holds: 824 MiB), and the device's
    total (cudaMemGetInfo's, 1 GiB), of which memory_fraction:0.4 allows
    409.6 MiB: the loop's 358 MiB fit, and the model runs out only at the
    run's own failed request (not at 0.4 x 824 = 329.6 MiB, in step 81)."""
    trace, r = loop_trace("fail", "900", env={"SIMCUDA_MEMORY": "1G", "SIMCUDA_OTHER": "200M"})
    eq(r.rc, 1, f"the last request fails: {r.err}")
    d = whatif_json(trace, "--setting", "memory_fraction:0.4")
    dev = d["devices"][0]
    eq((dev["run_card_bytes"], dev["cards"][0]["total_bytes"]), (824 * MiB, 1024 * MiB),
       "the process's 824 MiB of the 1 GiB device")
    o = dev["cards"][0]["outcomes"][0]
    eq((o["fits"], o["first_oom"]["request"], o["peak_reserved_bytes"]), (False, 303, 358 * MiB),
       "runs out at the run's failed request, not before")


def test_whatif_jax_limit_is_of_the_cards_total():
    """XLA_PYTHON_CLIENT_MEM_FRACTION's default .75 of a 1100 MiB card is 825
    MiB (CreateBFCAllocator: total_memory * memory_fraction), which the 1000
    MiB the process has (100 MiB of context) can preallocate: the eight 100
    MiB buffers fit, the eighth taking the last 125 MiB whole (ShouldSplit:
    under twice the request, 25 MiB wasted). Of the 1000 MiB it would have
    been 750, and the eighth would have run out."""
    stub = os.path.join(E.build, "progs", "fw", "xla_extension.so")
    r = run([E.prog("drv_xla_platform"), stub],
            env={"SIMCUDA_MEMORY": "2G", "XLA_PYTHON_CLIENT_ALLOCATOR": "platform",
                 "XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    eq(r.rc, 0, r.err)
    d = whatif_json(one_trace(r), "--allocator", "xla", "--card", "1100M", "--context", "100M",
                    "--setting", "default")
    eq(d["allocator"], "xla", "the BFC model")
    o = d["devices"][0]["cards"][0]["outcomes"][0]
    eq((o["fits"], o["peak_reserved_bytes"], o["peak_allocated_bytes"]),
       (True, 825 * MiB, 825 * MiB), "0.75 of the whole card, preallocated")


def test_whatif_html_and_text_agree_with_json():
    trace, _ = loop_trace()
    out = os.path.join(tempfile.mkdtemp(prefix="gpushim-whatif-"), "w.html")
    whatif(trace, "--format", "html", "-o", out, "--card", "1G", "--context", "0",
           *settings_args())
    page = open(out).read()
    check(page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>"), "a whole page")
    check("<svg" in page and "Best: expandable_segments:True" in page, "chart and best")
    check('data-v="375390208"' in page, "default's 358 MiB as an exact figure")
    check("http://" not in page and "https://" not in page.replace("https://github.com", ""),
          "self-contained")
    text = whatif(trace, "--card", "1G", "--context", "0", *settings_args()).stdout
    check("best: expandable_segments:True: peak 340.00 MiB of 1.00 GiB" in text, text)
    check("14000.00 MiB" in text or "13.67 GiB" in text, text)
    # what the settings cost besides memory: each line of the text's, in the page too (it once
    # dropped them)
    costs = text.split("what the settings cost besides memory:\n")[1].split("\n\n")[0]
    lines = [x.strip() for x in costs.splitlines() if x.strip()]
    check(lines, f"the text says costs: {text}")
    for line in lines:
        name, cost = line.split(": ", 1)
        check(f"<li>{html.escape(name, quote=False)}: {html.escape(cost, quote=False)}</li>"
              in page, f"the page says {line}")


def test_whatif_usage_errors():
    trace, _ = loop_trace()
    for args, says in ((["--setting", "expandable_segments:Yes"], "True or False"),
                       (["--setting", "max_split_size_mb:10"], "which PyTorch 2.12 refuses"),
                       (["--setting", "roundup_power2_divisions:[256:3]"], "power of 2"),
                       (["--torch", "2.9", "--setting", "per_process_memory_fraction:0.5"],
                        "an option of PyTorch 2.10 and later; 2.9 (--torch) has none"),
                       (["--torch", "2.9", "--setting", "max_split_size_mb:20"],
                        "under 21, which PyTorch 2.9 refuses (must be > 20)"),
                       (["--setting", "bogus:1"], "unknown option bogus"),
                       (["--torch", "3.0"], "--torch"),
                       (["--format", "xml"], "--format"),
                       (["--card", "lots"], "--card")):
        p = whatif(trace, *args, rc=2)
        check(says in p.stderr, f"{args}: {p.stderr}")
    p = subprocess.run([E.gpushim, "whatif", "/nonexistent.trace"], capture_output=True, text=True)
    eq(p.returncode, 1, "an unreadable trace")
    check("gpushim whatif:" in p.stderr, p.stderr)
    p = subprocess.run([E.gpushim, "help", "whatif"], capture_output=True, text=True)
    check(p.returncode == 0 and "--setting" in p.stdout, "help whatif")


def test_whatif_options_as_the_torch_version_reads_them():
    """--torch picks the version whose options and memory fraction apply
    (CUDAAllocatorConfig::parseArgs before 2.10, AcceleratorAllocatorConfig
    and CUDAAllocatorConfig's per_process_memory_fraction from it):
    max_split_size_mb:20 and per_process_memory_fraction are 2.10's; the
    list form of roundup_power2_divisions any 2.x's; --help says where the
    versions differ. The compared garbage collection runs under a fraction
    of 1 before 2.10 and 0.99 from it (a fraction of 1 sets no maximum)."""
    trace, _ = loop_trace()
    d = whatif_json(trace, "--torch", "2.10", "--setting", "max_split_size_mb:20",
                    "--setting", "per_process_memory_fraction:0.5",
                    "--setting", "roundup_power2_divisions:[64:1,>:4]")
    eq((d["torch"], d["torch_approximate"]), ("2.10", True), "2.10's options, 2.12's allocator")
    eq([s["name"] for s in d["settings"]],
       ["max_split_size_mb:20", "per_process_memory_fraction:0.5", "roundup_power2_divisions:[64:1,>:4]"],
       "each taken")
    o = outcomes(d["devices"][0]["cards"][-1])
    # 91 MiB (interval 6, [64, 128) MiB: ">" from there) in 4 divisions of 64:
    # 96; 45.5 MiB (interval 5) in 1: 45.5 MiB as is, rounded to 2 MiB
    # segments: 96 + 46 and the keep segments as default's: 362 MiB
    eq(o["roundup_power2_divisions:[64:1,>:4]"]["peak_reserved_bytes"], 362 * MiB,
       "A rounded to 96 MiB")
    d = whatif_json(trace, "--torch", "2.9")
    names = [s["name"] for s in d["settings"]]
    check("garbage_collection_threshold:0.8,memory_fraction:1.0" in names, names)
    d = whatif_json(trace)
    names = [s["name"] for s in d["settings"]]
    check("garbage_collection_threshold:0.8,per_process_memory_fraction:0.99" in names, names)
    help_text = subprocess.run([E.gpushim, "whatif", "--help"], capture_output=True,
                               text=True).stdout
    for says in ("2.10 and later: max_split_size_mb", "2.9: graph_capture_record_stream_reuse",
                 "2.1: expandable_segments", "An option a version lacks is refused"):
        check(says in help_text, f"--help: {says}")


def torch_blocks_run(*phases, env):
    """tests/progs/rt_torch_caching.c, the caching allocator's imitation that
    reports its tensors as blocks, with libc10_cuda.so's stub loaded as import
    torch loads the real one (so the report knows the run is PyTorch's)."""
    stub = os.path.join(E.build, "progs", "fw", "libc10_cuda.so")
    r = run([E.prog("rt_torch_caching"), "lib=" + stub, *phases], env=env)
    eq(r.rc, 1, f"rt_torch_caching {' '.join(phases)} ends in the OutOfMemoryError: {r.err}")
    return one_trace(r)


def test_verdict_names_the_setting_that_would_have_fitted():
    """Issue 17, item 2. The frag phase (its header works it out): four 5 MiB
    tensors pin four 20 MiB segments whose 15 MiB rests are freed; a 25 MiB
    tensor then needs a 26 MiB segment with 20 MiB free, and the run dies.
    Replayed on the run's card (20 MiB free + 80 MiB held = 100 MiB), default
    runs out at the same request; expandable segments put it after the last
    free 15 MiB and map one more 20 MiB page: 100 MiB of 100."""
    trace = torch_blocks_run("frag", env={"SIMCUDA_MEMORY": "100M"})
    d = report_json_of(trace)
    unrecovered = [f for f in d["failures"] if f["verdict"]]
    check(unrecovered, "the run's failures have verdicts")
    for f in unrecovered:
        a = f["verdict"]["allocator"]
        eq((a["setting"], a["peak_bytes"], a["capacity_bytes"], a["compared_to"],
            a["compared_needs_bytes"]),
           ("expandable_segments:True", 100 * MiB, 100 * MiB, "default", 106 * MiB),
           "the allocator's verdict")
    text = subprocess.run([E.gpushim, "report", trace], capture_output=True, text=True).stdout
    check("allocator: expandable_segments:True would have fitted: peak 100.00 MiB of 100.00 MiB, "
          "where default reserves 106.00 MiB with no limit" in text, text)
    # export's JSON is the report's, the allocator's verdict with it (it once left it out)
    p = subprocess.run([E.gpushim, "export", "--format=json", trace], capture_output=True,
                       text=True)
    eq(json.loads(p.stdout), d, "export --format=json: the report's JSON, verdicts included")
    html = subprocess.run([E.gpushim, "export", "--format=html", trace], capture_output=True,
                          text=True).stdout
    check("Allocator: expandable_segments:True would have fitted: peak 100.00 MiB of 100.00 MiB, "
          "where default reserves 106.00 MiB with no limit" in html, "the HTML's verdict too")
    w = whatif_json(trace)
    eq(w["source"], "blocks", "the blocks are the tensors")
    dev = w["devices"][0]
    eq((dev["device"], dev["requests"], dev["failed_requests"], dev["run_card_bytes"]),
       (-1, 10, 2, 100 * MiB), "8 tensors and the two failed tries")
    card = outcomes(dev["cards"][0])
    eq((card["default"]["fits"], card["default"]["first_oom"]["size_bytes"]), (False, 26 * MiB),
       "default runs out where the run did")
    e = card["expandable_segments:True"]
    eq((e["fits"], e["served_run_failure"], e["peak_reserved_bytes"], e["cuda_malloc_calls"],
        e["oom_retries"]), (True, True, 100 * MiB, 5, 0), "expandable: five pages")
    eq(dev["cards"][0]["best"], "expandable_segments:True", "best: no retry")


def test_verdict_says_when_no_setting_would_have():
    """The oom phase on 64 MiB with 20 held by another process: 40 MiB more
    than the tensors already live can have on 44 MiB, under any setting."""
    trace = torch_blocks_run("small", "large", "retry", "oom",
                             env={"SIMCUDA_MEMORY": "64M", "SIMCUDA_OTHER": "20M"})
    d = report_json_of(trace)
    a = [f["verdict"]["allocator"] for f in d["failures"] if f["verdict"]][-1]
    eq((a["setting"], a["capacity_bytes"]), (None, 44 * MiB), "none fits 44 MiB")
    check(a["sentence"].startswith("no allocator setting of the 6 compared would have avoided "
                                   "it: each runs out on this card (44.00 MiB"), a["sentence"])


def test_no_allocator_verdict_outside_pytorch():
    """A program the report does not know as PyTorch's gets no allocator
    verdict (its failure is still replayed by gpushim whatif when asked)."""
    trace, r = loop_trace("fail", "900", env={"SIMCUDA_MEMORY": "1G"})
    d = report_json_of(trace)
    for f in d["failures"]:
        if f["verdict"]:
            eq(f["verdict"]["allocator"], None, "no PyTorch: no allocator verdict")


def report_json_of(trace):
    p = subprocess.run([E.gpushim, "report", "--json", trace], capture_output=True, text=True)
    eq(p.returncode, 0, p.stderr)
    return json.loads(p.stdout)


def test_whatif_jax_platform_run_through_the_bfc_model():
    """Issue 17, item 5. tests/progs/drv_xla_platform.c: a JAX process (the
    xla_extension.so stub loaded) with XLA_PYTHON_CLIENT_ALLOCATOR=platform,
    eight buffers of 100 MiB live at once. On a 1 GiB card the BFC allocator
    as JAX builds it (xla/tsl/framework/bfc_allocator.cc) preallocates its
    memory limit, 0.75 x 1 GiB = 768 MiB, in one region at the first request;
    each 100 MiB buffer is split off (the rest is at least twice the request)
    until 168 MiB are left, which the seventh takes whole (168 < 200 and the
    68 MiB it wastes are under 128 MiB); the eighth finds no chunk and the
    pool cannot grow: out of memory at request 7. With .9 the region is 0.9
    GiB rounded down to 256 bytes (Extend's available_bytes) and all eight
    fit."""
    stub = os.path.join(E.build, "progs", "fw", "xla_extension.so")
    r = run([E.prog("drv_xla_platform"), stub],
            env={"SIMCUDA_MEMORY": "2G", "XLA_PYTHON_CLIENT_ALLOCATOR": "platform",
                 "XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    eq(r.rc, 0, r.err)
    trace = one_trace(r)
    d = whatif_json(trace, "--card", "1G", "--context", "0")
    eq(d["allocator"], "xla", "a JAX run: the BFC model")
    check("BFC" in d["model"], d["model"])
    eq([s["name"] for s in d["settings"]],
       ["default", "XLA_PYTHON_CLIENT_MEM_FRACTION=.9", "XLA_PYTHON_CLIENT_MEM_FRACTION=.95",
        "XLA_PYTHON_CLIENT_PREALLOCATE=false"], "JAX's settings")
    card = outcomes(d["devices"][0]["cards"][0])
    o = card["default"]
    eq((o["fits"], o["first_oom"]["request"], o["peak_reserved_bytes"], o["peak_allocated_bytes"],
        o["cuda_malloc_calls"]), (False, 7, 768 * MiB, 768 * MiB, 1), "default: 768 MiB")
    o = card["XLA_PYTHON_CLIENT_MEM_FRACTION=.9"]
    eq((o["fits"], o["peak_reserved_bytes"], o["peak_allocated_bytes"]),
       (True, (int(1024 * MiB * 0.9) // 256) * 256, 800 * MiB), ".9 fits")
    eq(d["devices"][0]["cards"][0]["best"], "XLA_PYTHON_CLIENT_MEM_FRACTION=.9",
       "the smaller pool that fits")
    p = whatif(trace, "--setting", "XLA_PYTHON_CLIENT_PREALLOCATE=maybe", rc=2)
    check("true or false" in p.stderr, p.stderr)
    t = whatif_json(trace, "--allocator", "torch", "--setting", "default")
    eq(t["allocator"], "torch", "--allocator chooses the model")


def test_whatif_cuda_ipc_and_expandable_segments():
    """tests/progs/drv_ipc.c imports memory through CUDA IPC. Expandable
    segments share through exported handles since PyTorch 2.5
    (pytorch/pytorch#130890): with the default (2.12) rules they may be best;
    with --torch 2.4, where sharing them fails, they are not."""
    r = run([E.prog("drv_ipc")])
    trace = one_trace(r)
    args = ["--card", "1G", "--setting", "expandable_segments:True", "--setting", "default"]
    d = whatif_json(trace, *args)
    eq((d["ipc_seen"], d["ipc_breaks"], d["settings"][0]["ipc_through_handles"]),
       (True, False, True), "2.12: shared through handles")
    eq(d["devices"][0]["cards"][0]["best"], "expandable_segments:True", "the tie's first")
    d = whatif_json(trace, "--torch", "2.4", *args)
    eq((d["ipc_breaks"], d["torch_approximate"], d["devices"][0]["cards"][0]["best"]),
       (True, True, "default"), "2.4 cannot share expandable segments")


def test_whatif_without_tensor_level_allocations():
    """A run whose memory is all cudaMallocManaged (tests/progs/rt_batch_tensors.c
    managed) has nothing a caching allocator would serve: exit 1, and why."""
    r = run([E.prog("rt_batch_tensors"), "4", "managed"])
    trace = one_trace(r)
    p = whatif(trace, rc=1)
    check("has no tensor-level allocation to replay" in p.stderr, p.stderr)
    check("tensors: none: no device allocation a tensor could be" in p.stdout, p.stdout)
    d = json.loads(whatif(trace, "--json", rc=1).stdout)
    eq((d["source"], d["devices"]), ("none", []), "nothing replayed")


def test_whatif_of_the_demo_as_docs_commands_md_gives_it():
    # examples/sim_training.c marks its steps with ranges (a range "step"
    # around each): the step a setting runs out in is the step that range
    # began, as the report counts steps. Adam's state, made in the first
    # optimizer step after its activations were freed, leaves the caching
    # allocator 1.17 GiB reserved and idle: by default it runs out at step
    # 18; expandable segments last to step 22, as the run did.
    r = run([os.path.join(E.build, "examples", "sim_training")])
    eq(r.rc, 1, f"the demo dies of out of memory: {r.err}")
    card = whatif_json(one_trace(r))["devices"][0]["cards"][0]
    got = {o["setting"]: (o["first_oom"]["step"], o["first_oom"]["step_label"],
                          o["unallocated_at_peak_bytes"]) for o in card["outcomes"]}
    eq(got["default"], (18, "step", 1200 * MiB), "default: step 18, 1.17 GiB idle")
    eq(got["expandable_segments:True"], (22, "step", 4 * MiB), "expandable segments: step 22")
    eq(got["roundup_power2_divisions:4"][0], 14, "rounded to powers of two: step 14")
