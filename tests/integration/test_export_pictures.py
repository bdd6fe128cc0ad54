"""test_export_pictures.py - the HTML export's pictures of call sites
(analyzer/export/svg_sites.c): live memory over the run stacked by call site,
and the peak as a flame graph, on a program whose schedule says both:

  rt_whatif_loop (tests/progs/rt_whatif_loop.c): 101 steps, each marked, of
    tensor_a (91 MiB) and tensor_b (45.5 MiB) made and freed within the step
    and 2 MiB kept by keep(). At each step's mark only keep's tensors are
    live: one band, rising by 2 MiB a step, never falling. At the peak (the
    last step) keep holds 202 MiB, tensor_a 91 and tensor_b 45.5: the flame
    graph's root 338.5 MiB, its three leaves those, each under main.

The figures are read from the SVG's data attributes, then the page is laid
out in headless Chromium (where installed) and each picture has a size.
"""
import html
import os
import re
import subprocess
import tempfile

from harness import E, MiB, check, eq, once, one_trace, run
from test_export_html import CHROMIUM, probe


def pictures():
    trace = one_trace(run([E.prog("rt_whatif_loop")]))
    page = os.path.join(tempfile.mkdtemp(prefix="gpushim-pictures-"), "page.html")
    p = subprocess.run([E.gpushim, "export", "--format=html", "-o", page, trace],
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, p.stderr)
    return page, open(page, encoding="utf-8").read()


def attrs(tag):
    return {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', tag)}


def test_html_bands_show_the_site_that_keeps_rising():
    _, text = pictures()
    svg = re.search(r'<svg class="bands"[^>]*>', text)
    check(svg, "the bands' picture")
    times = [int(t) for t in attrs(svg.group(0))["data-times-ns"].split()]
    check(len(times) >= 32 and times == sorted(times), f"samples in time order: {times}")
    bands = [attrs(t) for t in re.findall(r'<path class="band"[^>]*>', text)]
    eq(len(bands), 1, "one site is live at the steps' marks: keep's")
    check(re.fullmatch(r"keep \(rt_whatif_loop\.c:\d+\) from main \(rt_whatif_loop\.c:\d+\)",
                       bands[0]["data-site"]), bands[0]["data-site"])
    v = [int(x) for x in bands[0]["data-bytes"].split()]
    eq(len(v), len(times), "a figure per sample")
    check(all(b >= a for a, b in zip(v, v[1:])), f"never falls: {v}")
    check(all(x % (2 * MiB) == 0 for x in v), f"whole 2 MiB tensors: {v}")
    check(v[-1] >= 196 * MiB and v[0] <= 4 * MiB, f"from the first steps to the last: {v}")
    check("at most 200.00 MiB" in text or f"at most {v[-1] / MiB:.2f} MiB" in text,
          "the legend says its most")


def test_html_flame_graph_of_the_peak():
    _, text = pictures()
    nodes = [attrs(t) for t in re.findall(r'<g class="node"[^>]*>', text)]
    got = {(n["data-name"].split(" (")[0], int(n["data-bytes"])) for n in nodes}
    eq(nodes[0]["data-name"], "all", "the root first")
    eq(int(nodes[0]["data-bytes"]), 338 * MiB + MiB // 2, "the root: the peak")
    for leaf in (("keep", 202 * MiB), ("tensor_a", 91 * MiB), ("tensor_b", 45 * MiB + MiB // 2)):
        check(leaf in got, f"{leaf} in {sorted(got)}")
    mains = sorted(b for name, b in got if name == "main")
    eq(mains, sorted([202 * MiB, 136 * MiB + MiB // 2]),
       "main's two call lines: keep's, and the step's two tensors")


PROBE = """
<script>
(function () {
  function box(e) { var r = e.getBoundingClientRect(); return [r.width, r.height]; }
  var out = {bands: box(document.querySelector('svg.bands')),
             band: box(document.querySelector('path.band')),
             flame: box(document.querySelector('svg.flame')),
             nodes: Array.prototype.map.call(document.querySelectorAll('g.node rect'), box)};
  var pre = document.createElement('pre');
  pre.id = 'gs-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


@once("Chromium on the page the analyzer writes the same in every build")
def test_html_pictures_lay_out_in_chromium():
    if not CHROMIUM:
        return "skipped: no chromium"
    page, _ = pictures()
    got = probe(page, PROBE)
    for part in ("bands", "band", "flame"):
        check(got[part][0] > 0 and got[part][1] > 0, f"{part} has a size: {got}")
    widths = [w for w, _ in got["nodes"]]
    eq(len(widths), 6, f"all, main twice, keep, tensor_a, tensor_b: {got}")
    check(abs(widths[0] - got["flame"][0]) < 2, f"the root spans the picture: {got}")
