"""test_export_html.py - gpushim export --format=html (issue 6, item 6) and
the per-device timeline it draws (item 5): the page loads nothing from
anywhere, its tables hold the exact figures of the report's JSON, each
device has a chart whose line reaches the device's peak, with a line per
mark and a red dot per failure, strings from the trace are escaped, and
headless Chromium lays it out and sorts a table when a header is clicked.
"""
import html.parser
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zlib

from harness import E, KiB, MiB, check, eq, once, one_trace, report, report_json, run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HOSTILE = "</title><script>alert(\"x\")</script><img src=http://evil/x onerror='y'>&amp;"


class Page(html.parser.HTMLParser):
    """The parts of the page the tests read: every start tag with its
    attributes, the text of each table cell, the SVG charts and their
    shapes, the summary cells by id, and the <title>s inside the charts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []            # (tag, attrs)
        self.tables = {}          # id -> {"head": [...], "rows": [[(text, data-v)]]}
        self.summary = {}         # id -> (text, data-v)
        self.charts = []          # {"attrs", "polylines", "marks", "failures", "peaks"}
        self.scripts = []         # the text of each <script>
        self.mark_titles = []
        self._table = self._row = self._cell = None
        self._cell_text = []
        self._in_script = self._in_mark_title = False
        self._summary_id = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "table" and "sortable" in a.get("class", ""):
            self._table = self.tables.setdefault(a["id"], {"head": [], "rows": []})
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th"):
            self._cell = a
            self._cell_text = []
            if tag == "td" and a.get("id", "").startswith("s-"):
                self._summary_id = a["id"]
        elif tag == "script":
            self._in_script = True
            self.scripts.append("")
        elif tag == "svg" and a.get("class") == "chart":  # (not the pictures of sites)
            self.charts.append({"attrs": a, "polylines": [], "marks": [], "failures": [],
                                "peaks": []})
        elif self.charts and tag == "polyline":
            self.charts[-1]["polylines"].append(a)
        elif self.charts and tag == "line" and a.get("class") == "mark":
            self.charts[-1]["marks"].append(a)
            self._in_mark_title = True
        elif self.charts and tag == "circle":
            kind = {"failure": "failures", "peak": "peaks"}.get(a.get("class"))
            if kind:
                self.charts[-1][kind].append(a)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell_text)
            if self._summary_id:
                self.summary[self._summary_id] = (text, self._cell.get("data-v"))
                self._summary_id = None
            elif self._row is not None:
                self._row.append((text, self._cell.get("data-v")))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._table is not None:
                if not self._table["head"]:
                    self._table["head"] = [t for t, _ in self._row]
                else:
                    self._table["rows"].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "script":
            self._in_script = False
        elif tag == "line":
            self._in_mark_title = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell_text.append(data)
        if self._in_script:
            self.scripts[-1] += data
        if self._in_mark_title and data.startswith("mark "):
            self.mark_titles.append(data)


def export_html(trace, *args):
    out = os.path.join(tempfile.mkdtemp(prefix="gpushim-html-"), "report.html")
    p = subprocess.run([E.gpushim, "export", "--format=html", "-o", out, *args, trace],
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, "export --format=html: " + p.stderr)
    eq(p.stderr, "", "nothing on stderr")
    text = open(out, encoding="utf-8").read()
    page = Page()
    page.feed(text)
    page.close()
    return out, text, page


def self_contained(page, text):
    """Nothing the browser would fetch: no src or href but to the page
    itself, no CSS url() or @import, no external script."""
    for tag, a in page.tags:
        for k in ("src", "href", "xlink:href", "action", "srcset", "data", "poster"):
            v = a.get(k)
            check(v is None or v.startswith("#"), f"<{tag} {k}={v!r}> loads something")
    check(text.startswith("<!DOCTYPE html>"), "a doctype")
    check("url(" not in text and "@import" not in text, "no CSS that loads anything")
    eq(len(page.scripts), 1, "one script: the page's own")
    check(all(not a.get("src") for t, a in page.tags if t == "script"), "inline script")


def rows(page, table):
    check(table in page.tables, f"a table {table}: {list(page.tables)}")
    return page.tables[table]["rows"]


def num(cell):
    check(cell[1] is not None, f"a number in data-v: {cell}")
    return int(cell[1])


def site_rows(page, table):
    """[(bytes, count, api, [innermost functions])]"""
    return [(num(r[0]), num(r[1]), r[2][0], [l.split("  ")[0] for l in r[3][0].split("\n")])
            for r in rows(page, table)]


def json_sites(sites):
    return [(s["bytes"], s["count"], s["api"], [f["function"] for f in s["frames"][:6]])
            for s in sites]


def plot(chart):
    left, top, right, bottom = (float(v) for v in chart["attrs"]["data-plot"].split())
    return left, top, right, bottom, int(chart["attrs"]["data-ymax-bytes"]), \
        int(chart["attrs"]["data-end-ns"])


def line_peak(chart):
    """The bytes of the highest point of the chart's line, read back from its
    coordinates, and the largest error their rounding allows."""
    left, top, right, bottom, ymax, _ = plot(chart)
    eq(len(chart["polylines"]), 1, "one line in the chart")
    pts = [tuple(float(v) for v in p.split(",")) for p in chart["polylines"][0]["points"].split()]
    check(all(left - 0.01 <= x <= right + 0.01 for x, _ in pts), "the line inside the plot")
    y = min(y for _, y in pts)
    return (bottom - y) / (bottom - top) * ymax, ymax / (bottom - top) * 0.01


def x_of(chart, t):
    left, _, right, _, _, end = plot(chart)
    return left + (right - left) * t / end


def test_html_tables_hold_the_report_figures():
    # drv_api_steps.c: 4 MiB of weights, three steps of a 2 MiB activation
    # (freed) and 1 MiB of history (kept); marks epoch, step x 4, epoch.
    # Peak 9 MiB; never freed 7 MiB in 4 allocations.
    trace = one_trace(run([E.prog("drv_api_steps")]))
    d = report_json(trace)
    _, text, page = export_html(trace)
    self_contained(page, text)
    eq(page.summary["s-command"][0], d["process"]["command"], "the command")
    eq(page.summary["s-process"][0], f"{d['process']['pid']} on {d['process']['host']}",
       "the process")
    eq(int(page.summary["s-duration"][1]), d["process"]["duration_ns"], "the duration")
    eq(int(page.summary["s-peak"][1]), 9 * MiB, "the peak")
    eq(d["peak"]["bytes"], 9 * MiB, "the JSON's peak")
    eq(int(page.summary["s-leaks"][1]), 7 * MiB, "never freed")
    check(page.summary["s-leaks"][0].endswith(" in 4 allocations"), page.summary["s-leaks"][0])
    eq(page.summary["s-ending"][0], "finished; the trace is complete", "the ending")
    eq(page.summary["s-fits"][0], "24 GB and larger cards: 23.99 GiB spare on 24 GB; but a leak "
       "suspect kept rising: a longer run outgrows any card", "fits on: the history is the leak")
    eq([[num(c) for c in r] for r in rows(page, "devices")],
       [[x["device"], x["peak_bytes"], x["peak_time_ns"], x["live_bytes_at_end"],
         x["allocations"]] for x in d["devices"]], "the devices")
    eq(page.tables["peak-sites"]["head"], ["bytes", "allocations", "API", "call site", "threads"],
       "columns")
    eq({r[4][0] for r in rows(page, "peak-sites")}, {""},
       "one thread, the main one: nothing to say of threads")
    peak = site_rows(page, "peak-sites")
    eq(peak, json_sites(d["peak"]["sites"]), "the sites at the peak, as in the JSON")
    eq([(b, c, f[0]) for b, c, _, f in peak],
       [(4 * MiB, 1, "load_weights"), (3 * MiB, 3, "train_step"), (2 * MiB, 1, "train_step")],
       "the sites at the peak, by the schedule")
    leaks = site_rows(page, "leak-sites")
    eq(leaks, json_sites(d["leaks"]["sites"]), "the sites never freed, as in the JSON")
    eq(sum(b for b, _, _, _ in leaks), 7 * MiB, "never freed in all")
    check("failures" not in page.tables, "no failures table without failures")
    # The chart: one device, its line reaching the peak, a line per mark at its time.
    eq(len(page.charts), 1, "a chart for the one device")
    chart = page.charts[0]
    eq(chart["attrs"]["data-device"], "0", "device 0's")
    got, err = line_peak(chart)
    check(abs(got - 9 * MiB) <= err, f"the line's highest point is the peak: {got} vs {9 * MiB}")
    eq([(int(p["data-bytes"]), int(p["data-time-ns"])) for p in chart["peaks"]],
       [(9 * MiB, d["devices"][0]["peak_time_ns"])], "the peak marked")
    eq(len(d["marks"]), 6, "six marks")
    eq([int(m["data-time-ns"]) for m in chart["marks"]], [m["time_ns"] for m in d["marks"]],
       "a line per mark, at its time")
    for m, want in zip(chart["marks"], d["marks"]):
        check(abs(float(m["x1"]) - x_of(chart, want["time_ns"])) < 0.01, f"mark at x: {m}")
    eq([t.split(" at ")[0] for t in page.mark_titles], ["mark " + m["label"] for m in d["marks"]],
       "each mark line says its label")
    eq(chart["failures"], [], "no failure dots")


def test_html_failures_and_their_dots():
    # drv_oom.c with a 16 MiB device: four 4 MiB blocks, then the fifth fails
    # with 0 bytes free of 16 MiB while the process holds 16 MiB.
    trace = one_trace(run([E.prog("drv_oom")], env={"SIMCUDA_MEMORY": "16M"}))
    d = report_json(trace)
    _, text, page = export_html(trace)
    self_contained(page, text)
    eq(page.tables["failures"]["head"],
       ["time", "API", "device", "requested", "result", "device free", "device total",
        "held by the process", "verdict", "inside NVTX range", "by role then", "call site"],
       "the failure columns")
    eq([r[8][0] for r in rows(page, "failures")], [f["verdict"]["sentence"] for f in d["failures"]],
       "the verdicts, as in the JSON")
    got = [(num(r[0]), r[1][0], num(r[2]), num(r[3]), r[4][0], num(r[5]), num(r[6]), num(r[7]),
            r[11][0].split("\n")[0].split("  ")[0]) for r in rows(page, "failures")]
    eq(got, [(f["time_ns"], f["api"], f["device"], f["requested_bytes"], f["result_name"],
              f["free_bytes"], f["total_bytes"], f["process_bytes"], f["frames"][0]["function"])
             for f in d["failures"]], "the failures, as in the JSON")
    eq([g[1:] for g in got], [("cuMemAlloc_v2", 0, 4 * MiB, "CUDA_ERROR_OUT_OF_MEMORY", 0,
                               16 * MiB, 16 * MiB, "grow_until_oom")], "by the schedule")
    eq(len(page.charts), 1, "one device")
    chart = page.charts[0]
    eq([int(f["data-time-ns"]) for f in chart["failures"]], [d["failures"][0]["time_ns"]],
       "one red dot for the failure")
    left, top, right, bottom, ymax, _ = plot(chart)
    f = chart["failures"][0]
    check(abs(float(f["cx"]) - x_of(chart, d["failures"][0]["time_ns"])) < 0.01, "at its time")
    check(abs(float(f["cy"]) - (bottom - (bottom - top) * 16 * MiB / ymax)) < 0.01,
          "at the 16 MiB the process held")
    got, err = line_peak(chart)
    check(abs(got - 16 * MiB) <= err, f"the line reaches the 16 MiB peak: {got}")
    check("leak-sites" not in page.tables, "nothing left: no table of sites never freed")


def test_html_leak_suspects():
    # drv_growth.c marks its steps and leaks 512 KiB a step in log_loss; its
    # last request fails (28 MiB device) and the verdict is the leak.
    r = run([E.prog("drv_growth"), "marks", "leak"], env={"SIMCUDA_MEMORY": "28M"})
    eq(r.rc, 0, "drv_growth: " + r.err)
    trace = one_trace(r)
    d = report_json(trace)
    _, text, page = export_html(trace)
    self_contained(page, text)
    eq(page.tables["suspects"]["head"], ["growth", "rate", "first allocated", "live at the end",
                                         "call site"], "the suspects' columns")
    got = [(num(x[0]), x[1][0], num(x[3]), x[4][0].split("\n")[0].split("  ")[0])
           for x in rows(page, "suspects")]
    eq(got, [(s["growth_bytes"], s["rate"], s["bytes"], s["frames"][0]["function"])
             for s in d["leaks"]["suspects"]], "as in the JSON")
    eq(got, [(6 * MiB, "512.00 KiB a step", 0, "log_loss")], "by the schedule")
    verdicts = [x[8][0] for x in rows(page, "failures")]
    eq(len(verdicts), 1, "one failure")
    check(verdicts[0].startswith("A leak: log_loss"), verdicts[0])
    check(text.index('id="suspects"') < text.index('id="peak-sites"'), "the suspects come first")


def test_html_chart_per_device():
    # drv_multidevice.c on two devices: device 0 peaks at 4 MiB and ends with
    # 3 MiB; device 1 peaks at 10 MiB and ends with 10 MiB.
    trace = one_trace(run([E.prog("drv_multidevice")], env={"SIMCUDA_DEVICES": "2"}))
    d = report_json(trace)
    t = d["timeline"]
    eq([(x["device"], max(x["max_bytes"]), x["peak_bytes"]) for x in t["devices"]],
       [(0, 4 * MiB, 4 * MiB), (1, 10 * MiB, 10 * MiB)], "JSON: a timeline per device")
    eq({len(x["max_bytes"]) for x in t["devices"]}, {len(t["max_bytes"])},
       "on the same buckets as all devices")
    eq(t["device_bucket_ns"], t["bucket_ns"], "of the same width")
    eq([x["peak_time_ns"] for x in t["devices"]], [x["peak_time_ns"] for x in d["devices"]],
       "each device's peak time")
    eq(max(t["max_bytes"]), 14 * MiB, "all devices together")
    eq(t["mark_times_ns"], [], "no marks")
    lines = [l for l in report(trace).stdout.splitlines() if l.startswith("  timeline")]
    eq([l[:13] for l in lines], ["  timeline 0 ", "  timeline 1 "], "a sparkline per device")
    check(all("█" in l for l in lines), "each against its own peak: " + repr(lines))
    _, text, page = export_html(trace)
    self_contained(page, text)
    eq([c["attrs"]["data-device"] for c in page.charts], ["0", "1"], "a chart per device")
    for chart, peak in zip(page.charts, (4 * MiB, 10 * MiB)):
        got, err = line_peak(chart)
        check(abs(got - peak) <= err, f"device {chart['attrs']['data-device']}: {got} vs {peak}")
        eq([int(p["data-bytes"]) for p in chart["peaks"]], [peak], "its peak marked")
    eq([[num(c) for c in r[:2]] for r in rows(page, "devices")], [[0, 4 * MiB], [1, 10 * MiB]],
       "the devices table")


def test_html_escapes_hostile_strings():
    # drv_mark_label.c marks twice with the label it is given; here a label
    # (and so a command line) that would close the title and run a script.
    trace = one_trace(run([E.prog("drv_mark_label"), HOSTILE]))
    d = report_json(trace)
    eq([m["label"] for m in d["marks"]], [HOSTILE, HOSTILE], "the labels as given")
    _, text, page = export_html(trace)
    self_contained(page, text)
    check("<script>alert" not in text and "<img" not in text, "no markup from the trace")
    eq([t for t, _ in page.tags].count("script"), 1, "no script but the page's")
    eq([t for t, _ in page.tags].count("img"), 0, "no image")
    eq(page.summary["s-command"][0], d["process"]["command"], "the command, read back as text")
    check(d["process"]["command"].endswith(HOSTILE), "with the label in it")
    title = text[text.index("<title>") + 7:text.index("</title>")]
    check("<" not in title and '"' not in title, "the page title escaped: " + title)
    eq(page.mark_titles, ["mark " + HOSTILE + " at " + f"{m['time_ns'] / 1e9:.6f} s"
                          for m in d["marks"]], "the marks' labels, read back as text")
    eq(len(page.charts[0]["marks"]), 2, "two mark lines")
    got, err = line_peak(page.charts[0])
    check(abs(got - MiB) <= err, "the 1 MiB peak")


def test_html_usage():
    p = subprocess.run([E.gpushim, "export", "--help"], capture_output=True, text=True)
    check("html" in p.stdout, "export --help names html")
    trace = one_trace(run([E.prog("drv_schedule")]))
    blocker = os.path.join(tempfile.mkdtemp(prefix="gpushim-html-"), "plain")
    open(blocker, "w").close()
    p = subprocess.run([E.gpushim, "export", "-f", "html", "-o", os.path.join(blocker, "x"), trace],
                       capture_output=True, text=True)
    eq(p.returncode, 1, "an output that cannot be written")
    check(p.stderr.startswith("gpushim export: cannot write"), p.stderr)
    p = subprocess.run([E.gpushim, "export", "-f", "html", "/nonexistent.trace"],
                       capture_output=True, text=True)
    eq(p.returncode, 1, "a trace that cannot be read")
    check(p.stderr.startswith("gpushim export: /nonexistent.trace"), p.stderr)
    p = subprocess.run([E.gpushim, "export", "-f", "htm", trace], capture_output=True, text=True)
    eq(p.returncode, 2, "a format that does not exist")
    check("(json, folded, pprof, html, perfetto or torch-snapshot)" in p.stderr, p.stderr)
    # Standard output, the same page as -o writes.
    p = subprocess.run([E.gpushim, "export", "-f", "html", trace], capture_output=True, text=True)
    eq(p.returncode, 0, p.stderr)
    out, text, _ = export_html(trace)
    eq(p.stdout, text, "the same page on standard output")


# ---- rendering, in headless Chromium ----

def png_pixels(path):
    """(width, height, set of distinct pixels) of an 8-bit RGB or RGBA PNG,
    decoded with the standard library (zlib, and the five filters)."""
    data = open(path, "rb").read()
    eq(data[:8], b"\x89PNG\r\n\x1a\n", "a PNG signature")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    check(ihdr is not None and pos == len(data), "IHDR first, chunks to the end")
    w, h, depth, color, _, _, interlace = ihdr
    check(depth == 8 and color in (2, 6) and interlace == 0, f"8-bit RGB(A): {ihdr}")
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    eq(len(raw), h * (stride + 1), "the decompressed size")
    prev = bytearray(stride)
    seen = set()
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 8 == 0:  # every 8th line is plenty to tell a picture from a flat colour
            seen.update(bytes(line[i:i + bpp]) for i in range(0, stride, bpp * 4))
        prev = line
    return w, h, seen


def chromium(*args, timeout=90):
    return subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
                           "--no-first-run", "--disable-extensions", "--hide-scrollbars",
                           *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, HOME=tempfile.mkdtemp(prefix="gpushim-chrome-")))


# Appended to a copy of the page: measures the charts, clicks headers, and
# writes what it found into the page for --dump-dom.
PROBE = """
<script>
(function () {
  function box(e) { var r = e.getBoundingClientRect(); return [r.width, r.height]; }
  function col(id, i) {
    return Array.prototype.map.call(document.getElementById(id).tBodies[0].rows,
                                    function (r) { return r.cells[i].dataset.v || r.cells[i].textContent; });
  }
  var out = {charts: [], sorted: {}};
  document.querySelectorAll('svg.chart').forEach(function (s) {
    out.charts.push({device: s.dataset.device, svg: box(s),
                     line: box(s.querySelector('polyline')), area: box(s.querySelector('path.area')),
                     peak: box(s.querySelector('circle.peak'))});
  });
  var t = document.getElementById('peak-sites');
  var ths = t.tHead.rows[0].cells;
  out.sorted.before = col('peak-sites', 0);
  ths[0].click();
  out.sorted.bytes_up = col('peak-sites', 0);
  ths[0].click();
  out.sorted.bytes_down = col('peak-sites', 0);
  ths[1].click();
  out.sorted.count_up = col('peak-sites', 1);
  out.sorted.aria = ths[1].getAttribute('aria-sort');
  var pre = document.createElement('pre');
  pre.id = 'gs-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def probe(page_path, script=PROBE):
    """Runs script (which writes JSON into <pre id="gs-probe">) in a copy of
    the page laid out by Chromium; what it wrote."""
    text = open(page_path, encoding="utf-8").read()
    probe_path = page_path[:-5] + "-probe.html"
    with open(probe_path, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", script + "</body>"))
    p = chromium("--virtual-time-budget=5000", "--window-size=1200,1600", "--dump-dom",
                 "file://" + probe_path)
    start = p.stdout.find('<pre id="gs-probe">')
    check(start >= 0, f"the probe ran: rc {p.returncode}, {p.stderr[-2000:]}")
    end = p.stdout.index("</pre>", start)
    body = p.stdout[start + len('<pre id="gs-probe">'):end]
    return json.loads(html.unescape(body))


@once("Chromium on the page the analyzer writes the same in every build")
def test_html_renders_in_chromium():
    if not CHROMIUM:
        return "skipped: no chromium"
    # drv_schedule.c: at the peak 4 MiB of weights (4 allocations), 4 MiB of
    # activations (2), 768 KiB of cache (3).
    trace = one_trace(run([E.prog("drv_schedule")]))
    page_path, _, _ = export_html(trace)
    shot = os.path.join(os.path.dirname(page_path), "shot.png")
    p = chromium("--screenshot=" + shot, "--window-size=1200,1600", "file://" + page_path)
    check(os.path.exists(shot), f"a screenshot: rc {p.returncode}, {p.stderr[-2000:]}")
    w, h, seen = png_pixels(shot)
    eq((w, h), (1200, 1600), "the window's size")
    check(len(seen) >= 8, f"not one flat colour: {len(seen)} colours")
    got = probe(page_path)
    eq([c["device"] for c in got["charts"]], ["0"], "the chart, laid out")
    for c in got["charts"]:
        for part in ("svg", "area", "peak"):
            check(c[part][0] > 0 and c[part][1] > 0, f"the chart's {part} has a size: {c}")
        check(c["line"][0] > 0, f"the line has a length (flat: a run within one bucket): {c}")
        check(c["svg"][0] >= 900, f"the chart drawn at its width: {c}")
    s = got["sorted"]
    want = sorted([4 * MiB, 4 * MiB, 768 * 1024])
    eq([int(v) for v in s["before"]], sorted(want, reverse=True), "largest first, as ranked")
    eq([int(v) for v in s["bytes_up"]], want, "a click sorts by bytes, smallest first")
    eq([int(v) for v in s["bytes_down"]], sorted(want, reverse=True), "a second click reverses")
    eq([int(v) for v in s["count_up"]], [2, 3, 4], "allocations, numerically")
    eq(s["aria"], "ascending", "the header says how it sorts")
