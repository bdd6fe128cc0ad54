"""test_screens_agree.py - every screen says the same findings with the same
figures (DEVELOPERS.md: "every figure and sentence in every screen is the
same finding said the same way"). For the test programs' traces and the
demo's, the JSON's findings are looked for in the text report and the HTML
export: the peak, what was never freed, the cards the run fits on, each
leak suspect's growth, each failure's verdict and its allocator's verdict,
and each warning. (The text shows --top of each list: the first ten.)
"""
import html
import json
import os
import subprocess

from harness import E, check, eq, one_trace, run


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
    both(d["capacity"]["fits_on"], "the cards it fits on")
    both(human(d["leaks"]["bytes"]), "what was never freed")
    for s in d["leaks"]["suspects"][:10]:
        both(human(s["growth_bytes"]), "a suspect's growth")
    for f in d["failures"][:10]:
        if f["verdict"]:
            both(f["verdict"]["sentence"], "a failure's verdict")
            if f["verdict"].get("allocator"):
                both(f["verdict"]["allocator"]["sentence"], "the allocator's verdict")
    for w in d["warnings"]:
        check(w["message"] in page, f"{what}: the HTML says the warning {w['message']!r}")
        if w["kind"] != "trace":  # the text's trace line says the trace's in its own words
            check(w["message"] in text, f"{what}: the text says the warning {w['message']!r}")
    return said


def test_text_json_and_html_say_the_same_findings():
    cases = [("drv_schedule", [E.prog("drv_schedule")], {}),
             ("drv_oom", [E.prog("drv_oom")], {"SIMCUDA_MEMORY": "16M"}),
             ("drv_api_steps", [E.prog("drv_api_steps")], {}),
             ("demo", [os.path.join(E.build, "examples", "sim_training")], {}),
             ("rt_torch_caching frag",
              [E.prog("rt_torch_caching"),
               "lib=" + os.path.join(E.build, "progs", "fw", "libc10_cuda.so"), "frag"],
              {"SIMCUDA_MEMORY": "100M"})]
    findings = set()
    for what, argv, env in cases:
        r = run(argv, env=env)
        findings |= set(agree(one_trace(r), what))
    eq(findings, {"the peak", "the cards it fits on", "what was never freed",
                  "a suspect's growth", "a failure's verdict", "the allocator's verdict"},
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
