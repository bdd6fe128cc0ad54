"""test_screens_agree.py - every screen says the same findings with the same
figures (DEVELOPERS.md: "every figure and sentence in every screen is the
same finding said the same way"). The findings are made once
(analyzer/findings/found.c); for the examples that run here (the demo's
simulated training job, the PyTorch leak of examples/sim_torch), test
programs that between them have every kind of finding, and the fuzz seeds
(the test programs' traces, rotated, killed, of format 2), the JSON's findings
are looked for in the text report and the HTML export: the peak, each
device's peak, what was never freed, the cards the run fits on, memory by
role at the peak, each leak suspect's growth, each failure's verdict, its
allocator's verdict, its range and its roles, the marks' labels with their
steps and the last steps, the NVTX ranges, fragmentation at the peak and
at each failure, the program's blocks, other kinds of memory, pools, and
each warning. (The text shows --top of each list: the first ten.)
"""
import html
import json
import os
import subprocess

from harness import E, check, eq, one_trace, run
from test_python import py_env, pythons

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def human(b):
    """gs_human_bytes."""
    v, u = float(b), 0
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    while v >= 1024 and u < 4:
        v /= 1024
        u += 1
    return f"{b} B" if u == 0 else f"{v:.2f} {units[u]}"


def screens(trace):
    out = {}
    for name, args in (("json", ["report", "--json"]), ("text", ["report"]),
                       ("html", ["export", "--format=html"])):
        p = subprocess.run([E.gpushim, *args, "--partial", trace], capture_output=True,
                           text=True, timeout=300)
        eq(p.returncode, 0, f"{name}: {p.stderr}")
        out[name] = p.stdout
    return json.loads(out["json"]), out["text"], html.unescape(out["html"])


def agree(trace, what):
    d, text, page = screens(trace)
    said = []

    def both(s, finding):
        check(s in text, f"{what}: the text says {finding}: {s!r}")
        check(s in page, f"{what}: the HTML says {finding}: {s!r}")
        said.append(finding)

    both(f"{human(d['peak']['bytes'])} of device memory", "the peak")
    for dev in d["devices"]:
        both(human(dev["peak_bytes"]), "a device's peak")
    both(d["capacity"]["fits_on"], "the cards it fits on")
    both(human(d["leaks"]["bytes"]), "what was never freed")
    if d["roles"]["at_peak"]:
        for role, b in d["roles"]["at_peak"].items():
            if b:
                both(human(b), "memory by role at the peak")
    for s in d["leaks"]["suspects"][:10]:
        both(human(s["growth_bytes"]), "a suspect's growth")
    unrecovered = [f for f in d["failures"] if f["outcome"] == "unrecovered"]
    for f in unrecovered[:10]:
        both(f["verdict"]["sentence"], "a failure's verdict")
        if f["verdict"].get("allocator"):
            both(f["verdict"]["allocator"]["sentence"], "the allocator's verdict")
        if f["range"]:
            both(f["range"], "the range a failure was inside")
        for role, b in (f["roles"] or {}).items():
            if b:
                both(human(b), "a failure's memory by role")
    for lab in d["mark_labels"][:10]:
        both(lab["label"] or "(empty)", "a mark's label")
        if lab["steps"]:
            both(human(lab["peak_bytes"]), "a label's largest step")
    for st in d["steps"][-min(10, len(d["steps"])):]:
        both(human(st["peak_bytes"]), "a step's peak")
    if d["ranges"]:
        for n in sorted(d["ranges"]["nodes"], key=lambda n: -n["peak_max_bytes"])[:20]:
            check(n["name"] in text, f"{what}: the text names the range {n['name']!r}")
            check(n["path"] in page, f"{what}: the HTML names the range {n['path']!r}")
            if n["ended"]:
                both(human(n["peak_max_bytes"]), "a range's peak")
            for key in ("kept_last_bytes", "kept_max_bytes"):  # a cell of its own in each
                v = n[key]
                kept = ("-" if v < 0 else "") + human(abs(v))
                check(f" {kept} " in text, f"{what}: the text says a range's {key}: {kept!r}")
                check(f">{kept}</td>" in page, f"{what}: the HTML says a range's {key}: {kept!r}")
                said.append("what a range kept")
    frag = d["fragmentation"]
    for f in ([frag["at_peak"]] if frag["at_peak"] else []) + frag["at_failures"][:10]:
        both(f"{human(f['segment_bytes'])} hold", "the segments' bytes (fragmentation)")
        both(f"(fragmentation {f['fragmentation']:.2f})", "fragmentation")
    if d["blocks"]:
        both(human(d["blocks"]["peak"]["bytes"]), "the blocks' peak")
        for site in d["blocks"]["peak"]["sites"][:10]:
            both(human(site["bytes"]), "a block site at the blocks' peak")
        if d["blocks"]["leaks"]["count"]:
            both(human(d["blocks"]["leaks"]["bytes"]), "blocks never taken back")
    for kind, k in d["categories"].items():
        if kind != "device" and k["allocations"]:
            both(human(k["peak_bytes"]), "another kind of memory's peak")
    for pool in d["pools"]["pools"]:
        both(human(pool["peak_reserved_bytes"]), "a pool's reserve")
    if d["fragmentation"]["rounding"]["waste_bytes_at_peak"]:
        both(f"{human(d['fragmentation']['rounding']['waste_bytes_at_peak'])} more at the peak",
             "what whole pages added")
    for line in text.splitlines():  # the line under a site: its threads, the backward it ran
        s = line.strip()
        if s.startswith(("thread ", "threads ", "backward of ")):
            check(s in page, f"{what}: the HTML says a site's threads: {s!r}")
            said.append("a site's threads")
    for w in d["warnings"]:
        check(w["message"] in page, f"{what}: the HTML says the warning {w['message']!r}")
        if w["kind"] != "trace":  # the text's trace line says the trace's in its own words
            check(w["message"] in text, f"{what}: the text says the warning {w['message']!r}")
    return said


def test_text_json_and_html_say_the_same_findings():
    fw = os.path.join(E.build, "progs", "fw")
    example = os.path.join(ROOT, "examples", "sim_torch", "leak.py")
    cases = [("demo", [os.path.join(E.build, "examples", "sim_training")], {}),
             ("drv_schedule", [E.prog("drv_schedule")], {}),
             ("drv_oom", [E.prog("drv_oom")], {"SIMCUDA_MEMORY": "16M"}),
             ("drv_api_steps", [E.prog("drv_api_steps")], {}),
             ("drv_api_blocks", [E.prog("drv_api_blocks")], {"SIMCUDA_MEMORY": "13M"}),
             ("drv_api_ranges", [E.prog("drv_api_ranges")], {}),
             ("drv_multidevice", [E.prog("drv_multidevice")], {"SIMCUDA_DEVICES": "2"}),
             ("rt_kinds", [E.prog("rt_kinds")], {}),
             ("drv_autograd", [E.prog("drv_autograd")], {}),
             ("rt_framework_failures",
              [E.prog("rt_framework_failures"), "retry", "fabric", "probe", "oom"], {}),
             ("rt_torch_caching frag",
              [E.prog("rt_torch_caching"), "lib=" + os.path.join(fw, "libc10_cuda.so"), "frag"],
              {"SIMCUDA_MEMORY": "100M"})]
    findings = set()
    for what, argv, env in cases:
        r = run(argv, env=env)
        findings |= set(agree(one_trace(r), what))
    ext = os.path.join(E.build, "examples", "python")
    check(os.path.isdir(ext) and any(f.startswith("simtensor") for f in os.listdir(ext)),
          "the example's extension was built (python3-dev)")
    r = run([pythons()[0], example], env=dict(py_env(), PYTHONPATH=ext))
    eq((r.rc, r.out), (0, "50 steps\n"), r.err)
    path = one_trace(r)
    findings |= set(agree(path, "examples/sim_torch/leak.py"))
    eq(findings, {"the peak", "a device's peak", "the cards it fits on", "what was never freed",
                  "memory by role at the peak", "a suspect's growth", "a failure's verdict",
                  "the allocator's verdict", "the range a failure was inside",
                  "a failure's memory by role", "a mark's label", "a label's largest step",
                  "a step's peak", "a range's peak", "what a range kept",
                  "the segments' bytes (fragmentation)", "fragmentation", "the blocks' peak", "a block site at the blocks' peak",
                  "blocks never taken back", "another kind of memory's peak", "a pool's reserve",
                  "what whole pages added", "a site's threads"},
       "every kind of finding was met")
    # and a trace that is not whole: its warning in every screen
    r = run([E.prog("drv_schedule")])
    trace = one_trace(r)
    data = open(trace, "rb").read()
    cut = trace + ".cut"
    with open(cut, "wb") as f:
        f.write(data[:len(data) - 20])
    d, _, page = screens(cut)
    check(d["warnings"] and d["warnings"][0]["message"] in page, "the cut trace's warning")


def test_the_seed_traces_say_the_same_findings_in_every_screen():
    # the fuzz targets' seeds (tests/fuzz/make_corpus.py): the test programs'
    # traces as the writer makes them now and as format 2 did, a rotated one
    # with its checkpoint, a killed one, NVTX ranges, Python frames, roles
    seeds = os.path.join(ROOT, "tests", "fuzz", "corpus", "report")
    names = sorted(os.listdir(seeds))
    check(len(names) >= 20, f"the seeds: {names}")
    findings = set()
    for name in names:
        findings |= set(agree(os.path.join(seeds, name), f"seed {name}"))
    check({"the peak", "a failure's verdict", "a mark's label", "a range's peak",
           "the blocks' peak"} <= findings, f"the seeds' findings: {sorted(findings)}")

