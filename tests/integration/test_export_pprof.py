"""test_export_pprof.py - gpushim export --format=pprof (issue 6, item 6): a
gzipped profile.proto that `go tool pprof` reads, with a sample per call
site (as the report merges them) whose four values are exact:
inuse_space/bytes and inuse_objects/count (never freed, or at the device
peak with --metric=peak), alloc_space/bytes and alloc_objects/count (all
the run allocated).

Each profile is read twice: by `go tool pprof -raw` and `-top` (the
consumer; those tests are skipped only when go is not installed), and by
a decoder written here from profile.proto's field numbers, which checks
the rules pprof's own reader and CheckValid hold a profile to: string 0
is "", ids are nonzero and unique, every id and string index a profile
refers to is in it, every sample has a value per sample type.
"""
import gzip
import os
import pty
import re
import shutil
import subprocess
import tempfile

from harness import E, KiB, MiB, check, eq, one_trace, report_json, run, warned
from test_python import libcuda, line, prog, py_env, pythons

TYPES = [("inuse_space", "bytes"), ("inuse_objects", "count"), ("alloc_space", "bytes"),
         ("alloc_objects", "count")]


def export(trace, *args, out=None):
    """Exports trace as pprof to a file; returns its path."""
    out = out or os.path.join(tempfile.mkdtemp(prefix="gpushim-pprof-"), "profile.pb.gz")
    p = subprocess.run([E.gpushim, "export", "--format=pprof", "-o", out, *args, trace],
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, "export status: " + p.stderr)
    eq(p.stderr, "", "export says nothing")
    return out


# ---- a decoder of the protobuf wire format, for profile.proto ----

def varint(b, i):
    v = shift = 0
    while True:
        check(i < len(b), "a varint runs past its message")
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i
        check(shift < 70, "a varint longer than 10 bytes")


def fields(b):
    """[(field, wire type, value)] of a message: ints for varints, bytes
    for length-delimited fields."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        f, wire = key >> 3, key & 7
        check(f > 0, "field number 0")
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 2:
            n, i = varint(b, i)
            check(i + n <= len(b), f"field {f} runs past its message")
            v, i = b[i:i + n], i + n
        else:
            raise AssertionError(f"wire type {wire} (field {f}): the writer uses only 0 and 2")
        out.append((f, wire, v))
    return out


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def message(b, scalars=(), repeated=(), messages=(), strings=()):
    """A message as a dict: scalars by name (0 when absent), repeated
    scalars as lists (packed or not), nested messages as lists of bytes,
    strings as lists of str. Each argument maps field numbers to names."""
    d = {name: 0 for name in dict(scalars).values()}
    d.update({name: [] for spec in (repeated, messages, strings) for name in dict(spec).values()})
    for f, wire, v in fields(b):
        if f in dict(scalars):
            eq(wire, 0, f"field {f} is a varint")
            d[dict(scalars)[f]] = signed(v)
        elif f in dict(repeated):
            if wire == 0:
                d[dict(repeated)[f]].append(signed(v))
            else:  # packed
                i = 0
                while i < len(v):
                    x, i = varint(v, i)
                    d[dict(repeated)[f]].append(signed(x))
        elif f in dict(messages):
            eq(wire, 2, f"field {f} is a message")
            d[dict(messages)[f]].append(v)
        elif f in dict(strings):
            eq(wire, 2, f"field {f} is a string")
            d[dict(strings)[f]].append(v.decode())
        else:
            raise AssertionError(f"field {f} is not in profile.proto where it stands")
    return d


def decode(path):
    data = open(path, "rb").read()
    eq(data[:2], b"\x1f\x8b", "a gzip file")
    p = message(gzip.decompress(data),
                scalars={7: "drop_frames", 8: "keep_frames", 9: "time_nanos", 10: "duration_nanos",
                         12: "period", 14: "default_sample_type"},
                repeated={13: "comment"},
                messages={1: "sample_type", 2: "sample", 3: "mapping", 4: "location",
                          5: "function", 11: "period_type"},
                strings={6: "string_table"})
    vt = dict(scalars={1: "type", 2: "unit"})
    p["sample_type"] = [message(m, **vt) for m in p["sample_type"]]
    eq(len(p["period_type"]), 1, "one period_type")
    p["period_type"] = message(p["period_type"][0], **vt)
    p["sample"] = [message(m, repeated={1: "location_id", 2: "value"}, messages={3: "label"})
                   for m in p["sample"]]
    for s in p["sample"]:
        s["label"] = [message(m, scalars={1: "key", 2: "str", 3: "num", 4: "num_unit"})
                      for m in s["label"]]
    p["mapping"] = [message(m, scalars={1: "id", 2: "memory_start", 3: "memory_limit",
                                        4: "file_offset", 5: "filename", 6: "build_id",
                                        7: "has_functions", 8: "has_filenames",
                                        9: "has_line_numbers", 10: "has_inline_frames"})
                    for m in p["mapping"]]
    p["location"] = [message(m, scalars={1: "id", 2: "mapping_id", 3: "address", 5: "is_folded"},
                             messages={4: "line"}) for m in p["location"]]
    for l in p["location"]:
        l["line"] = [message(m, scalars={1: "function_id", 2: "line"}) for m in l["line"]]
    p["function"] = [message(m, scalars={1: "id", 2: "name", 3: "system_name", 4: "filename",
                                         5: "start_line"}) for m in p["function"]]
    return p


def check_rules(p):
    """The rules of profile.proto and pprof's reader; returns the profile
    resolved: strings in place of indexes, objects in place of ids."""
    st = p["string_table"]
    check(st and st[0] == "", f"string_table[0] is '': {st[:1]}")
    eq(len(set(st)), len(st), "each string once")

    def s(i, what):
        check(0 <= i < len(st), f"{what}: string index {i} of {len(st)}")
        return st[i]

    eq([(s(t["type"], "type"), s(t["unit"], "unit")) for t in p["sample_type"]], TYPES,
       "sample types, in order")
    eq((s(p["period_type"]["type"], "period"), s(p["period_type"]["unit"], "period")),
       ("space", "bytes"), "period_type")
    eq(p["period"], 1, "period: no sampling")
    eq(s(p["default_sample_type"], "default"), "inuse_space", "default sample type")
    eq((p["drop_frames"], p["keep_frames"]), (0, 0), "no frame filters")

    def table(items, what):
        ids = [x["id"] for x in items]
        check(all(i > 0 for i in ids), f"{what} ids are nonzero: {ids}")
        eq(len(set(ids)), len(ids), f"{what} ids are unique")
        return {x["id"]: x for x in items}

    mappings = table(p["mapping"], "mapping")
    functions = table(p["function"], "function")
    locations = table(p["location"], "location")
    for m in mappings.values():
        check(m["memory_start"] < m["memory_limit"], f"a mapping's range: {m}")
        m["file"] = s(m["filename"], "mapping filename")
        m["build"] = s(m["build_id"], "build id")
        check(re.fullmatch(r"([0-9a-f]{2})*", m["build"]), f"a hex build id: {m['build']!r}")
    for f in functions.values():
        f["name_s"] = s(f["name"], "function name")
        f["system_s"] = s(f["system_name"], "system name")
        f["file_s"] = s(f["filename"], "function file")
        check(f["name_s"], f"a function has a name: {f}")
    for l in locations.values():
        check(l["mapping_id"] == 0 or l["mapping_id"] in mappings, f"location's mapping: {l}")
        for ln in l["line"]:
            check(ln["function_id"] in functions, f"line's function: {ln}")
            ln["function"] = functions[ln["function_id"]]
        check(l["line"] or l["mapping_id"], f"a location says something: {l}")
    for smp in p["sample"]:
        eq(len(smp["value"]), 4, "a value per sample type")
        check(smp["location_id"], "a sample has a stack")
        for i in smp["location_id"]:
            check(i in locations, f"sample's location {i}")
        smp["locations"] = [locations[i] for i in smp["location_id"]]
        for lb in smp["label"]:
            lb["key_s"], lb["str_s"] = s(lb["key"], "label key"), s(lb["str"], "label")
    for c in p["comment"]:
        s(c, "comment")
    p["comments"] = [st[c] for c in p["comment"]]
    return p


def stack(smp):
    """A sample's function names, innermost first, inlined ones included."""
    return [ln["function"]["name_s"] for l in smp["locations"] for ln in l["line"]]


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    check(m is not None, f"readelf -n {path}: {out}")
    return m.group(1)


def go():
    return shutil.which("go")


def pprof(*args):
    p = subprocess.run([go(), "tool", "pprof", *args], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PPROF_TMPDIR=tempfile.mkdtemp()))
    eq(p.returncode, 0, f"go tool pprof {args}: {p.stderr}")
    return p.stdout


def raw(path):
    """go tool pprof -raw: (samples [(values, location ids)], locations
    {id: [function names, innermost first]}, mappings [text])."""
    text = pprof("-raw", path)
    lines = text.splitlines()
    i = lines.index("Samples:")
    eq(lines[i + 1].split(), [f"{t}/{u}" + ("[dflt]" if t == "inuse_space" else "")
                              for t, u in TYPES], "pprof's sample types")
    samples, locs, maps = [], {}, []
    section, cur = "samples", None
    for l in lines[i + 2:]:
        if l == "Locations":
            section = "locations"
        elif l == "Mappings":
            section = "mappings"
        elif section == "samples":
            m = re.match(r"^\s+([0-9 ]+): ([0-9 ]+)\s*$", l)
            if m:
                samples.append(([int(v) for v in m.group(1).split()],
                                [int(v) for v in m.group(2).split()]))
        elif section == "locations":
            m = re.match(r"^\s+(\d+): (0x[0-9a-f]+)(?: M=(\d+))?\s*(.*)$", l)
            if m:
                cur = int(m.group(1))
                locs[cur] = [m.group(4).split(" ")[0]] if m.group(4) else []
            else:
                locs[cur].append(l.split()[0])
        elif l.strip():
            maps.append(l)
    return samples, locs, maps


def raw_stacks(path):
    samples, locs, maps = raw(path)
    return [(v, [f for i in ids for f in locs[i]]) for v, ids in samples], maps


# drv_schedule.c: weights 4 x 1 MiB kept; per step two 2 MiB activations
# (freed) and a 256 KiB cache entry (kept), 3 steps; the peak in step 3.
SCHEDULE_END = [([0, 0, 12 * MiB, 6], ["make_activation", "train_step", "main"]),
                ([4 * MiB, 4, 4 * MiB, 4], ["load_weights", "main"]),
                ([768 * KiB, 3, 768 * KiB, 3], ["remember_in_cache", "train_step", "main"])]
SCHEDULE_PEAK = [([4 * MiB, 2, 12 * MiB, 6], SCHEDULE_END[0][1])] + SCHEDULE_END[1:]


def test_pprof_fields_and_values():
    trace = one_trace(run([E.prog("drv_schedule")]))
    d = report_json(trace)
    p = check_rules(decode(export(trace)))
    eq([(s["value"], stack(s)) for s in p["sample"]], SCHEDULE_END,
       "a sample per site: its values and its functions, innermost first")
    eq([[(lb["key_s"], lb["str_s"]) for lb in s["label"]] for s in p["sample"]],
       [[("api", "cuMemAlloc_v2")]] * 3, "the API as a label")
    eq(p["time_nanos"], d["process"]["start_unix_ns"], "time_nanos: the trace's start")
    eq(p["duration_nanos"], d["process"]["duration_ns"], "duration_nanos")
    eq(sum(s["value"][0] for s in p["sample"]), d["leaks"]["bytes"], "inuse: what leaked")

    # Every location of the program's own frames lies in the program's
    # mapping: its path, its build id, the range its return address is in.
    exe = E.prog("drv_schedule")
    eq(len(p["mapping"]), 1, f"one module: {[m['file'] for m in p['mapping']]}")
    m = p["mapping"][0]
    eq((m["file"], m["build"], m["file_offset"]), (exe, build_id(exe), 0), "the program's mapping")
    eq((m["has_functions"], m["has_filenames"], m["has_line_numbers"], m["has_inline_frames"]),
       (1, 1, 1, 1), "symbolized: pprof need not")
    src = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "progs", "drv_schedule.c"))
    for smp in p["sample"]:
        for l in smp["locations"]:
            eq(l["mapping_id"], m["id"], "the program's frames are in its mapping")
            check(m["memory_start"] <= l["address"] < m["memory_limit"], f"address in range: {l}")
            eq(len(l["line"]), 1, "no inlining in drv_schedule")
            f = l["line"][0]["function"]
            eq((f["system_s"], os.path.realpath(f["file_s"])), (f["name_s"], src),
               "a C function: its system name is its name; its file")
            check(l["line"][0]["line"] > 0, "a line number")
    check(p["comments"][0] == "command: " + exe, f"the command in the comments: {p['comments']}")
    check(any(c.startswith("inuse: ") and "end of the trace" in c for c in p["comments"]),
          f"what inuse means, in the comments: {p['comments']}")

    # At the peak: the two live activations in place of none.
    p = check_rules(decode(export(trace, "--metric=peak")))
    eq([(s["value"], stack(s)) for s in p["sample"]], SCHEDULE_PEAK, "--metric=peak")
    eq(sum(s["value"][0] for s in p["sample"]), d["peak"]["bytes"], "inuse: the peak")
    check(any(c.startswith("inuse: ") and "peak" in c for c in p["comments"]), "the comment says so")


def test_pprof_go_tool_reads_it():
    if not go():
        return "skipped: go is not installed (go tool pprof)"
    trace = one_trace(run([E.prog("drv_schedule")]))
    exe = E.prog("drv_schedule")
    path = export(trace)
    stacks, maps = raw_stacks(path)
    eq(stacks, SCHEDULE_END, "go tool pprof -raw: values and stacks")
    eq(len(maps), 1, f"one mapping: {maps}")
    f = maps[0].split()
    eq((f[2], f[3], f[4:]), (exe, build_id(exe), ["[FN][FL][LN][IN]"]),
       "pprof's mapping: the program, its build id, symbolized")
    eq(raw_stacks(export(trace, "--metric", "peak"))[0], SCHEDULE_PEAK, "-raw, at the peak")
    # -top: each sample type's figures by function, as pprof sums them.
    for index, want in [("inuse_space", {"load_weights": 4 * MiB, "remember_in_cache": 768 * KiB}),
                        ("alloc_space", {"make_activation": 12 * MiB, "load_weights": 4 * MiB,
                                         "remember_in_cache": 768 * KiB}),
                        ("alloc_objects", {"make_activation": 6, "load_weights": 4,
                                           "remember_in_cache": 3}),
                        ("inuse_objects", {"load_weights": 4, "remember_in_cache": 3})]:
        out = pprof("-top", "-unit=B", "-sample_index=" + index, path)
        flat = {}
        for l in out.splitlines():
            m = re.match(r"^\s+(\d+)B\s.*%\s+(\S+)$", l)
            if m and int(m.group(1)):
                flat[m.group(2)] = int(m.group(1))
        eq(flat, want, f"go tool pprof -top -sample_index={index}: flat by function")
        check(f"Type: {index}" in out, f"pprof names the type: {out}")


def test_pprof_inlined_frames_are_lines_of_one_location():
    # drv_inline.c: grab_buffer (line 15) inlined into load_table (line 21);
    # 3 x 64 KiB never freed.
    trace = one_trace(run([E.prog("drv_inline")]))
    p = check_rules(decode(export(trace)))
    eq([s["value"] for s in p["sample"]], [[192 * KiB, 3, 192 * KiB, 3]], "one site")
    first = p["sample"][0]["locations"][0]
    eq([(ln["function"]["name_s"], os.path.basename(ln["function"]["file_s"]), ln["line"])
        for ln in first["line"]],
       [("grab_buffer", "drv_inline.c", 15), ("load_table", "drv_inline.c", 21)],
       "one location, the inlined function first, the one it is in last")
    eq(stack(p["sample"][0]), ["grab_buffer", "load_table", "main"], "the whole stack")
    eq([len(l["line"]) for l in p["sample"][0]["locations"]], [2, 1], "lines per location")
    if go():
        samples, locs, _ = raw(export(trace))
        eq(locs[samples[0][1][0]], ["grab_buffer", "load_table"], "pprof reads both lines")


def def_line(name, function):
    """The line of "def function(" in tests/progs/python/NAME."""
    with open(prog(name)) as f:
        for n, text in enumerate(f, 1):
            if text.strip().startswith(f"def {function}("):
                return n
    raise AssertionError(f"no def {function} in {name}")


def test_pprof_python_frames_have_no_mapping():
    # tests/progs/python/train.py: the weights, 4 x 1 MiB through
    # Driver.alloc from Model.load_weights, never freed.
    py = pythons()[0]
    r = run([py, prog("train.py"), libcuda()], env=py_env())
    eq(r.rc, 0, f"train.py: {r.err}")
    p = check_rules(decode(export(one_trace(r))))
    weights = [s for s in p["sample"] if "Model.load_weights" in stack(s)]
    eq(len(weights), 1, "one site for the weights")
    eq(weights[0]["value"], [4 * MiB, 4, 4 * MiB, 4], "the weights' values")
    pylocs = [l for l in weights[0]["locations"] if l["mapping_id"] == 0]
    eq([(ln["function"]["name_s"], os.path.basename(ln["function"]["file_s"]), ln["line"])
        for l in pylocs for ln in l["line"]],
       [("Driver.alloc", "cuda.py", line("cuda.py", "alloc")),
        ("Model.load_weights", "model.py", line("model.py", "weights")),
        ("main", "train.py", line("train.py", "load")),
        ("<module>", "train.py", line("train.py", "main"))], "the Python frames, innermost first")
    eq([l["line"][0]["function"]["start_line"] for l in pylocs],
       [def_line("cuda.py", "alloc"), def_line("model.py", "load_weights"),
        def_line("train.py", "main"), 1], "start_line: where each code object starts")
    for l in pylocs:
        eq((l["address"], len(l["line"])), (0, 1), "a Python frame: no address, one line")
        eq(l["line"][0]["function"]["system_s"], "", "no system name: pprof leaves the name alone")
    eq([l for l in weights[0]["locations"] if l["mapping_id"]], [],
       "a ctypes call of the driver: no native frame (libffi's and ctypes' go with the "
       "interpreter's)")
    native = check_rules(decode(export(one_trace(r), "--native")))
    eq(sum(s["value"][2] for s in native["sample"]), sum(s["value"][2] for s in p["sample"]),
       "--native: the same bytes allocated")
    check(all(l["mapping_id"] for s in native["sample"] for l in s["locations"]),
          "--native: no Python frames")
    if go():
        samples, locs, _ = raw(export(one_trace(r)))
        names = [[f for i in ids for f in locs[i]] for _, ids in samples]
        check(any(n[-4:] == ["Driver.alloc", "Model.load_weights", "main", "<module>"] for n in names),
              f"pprof keeps the Python names as they are: {names}")


def test_pprof_usage():
    trace = one_trace(run([E.prog("drv_schedule")]))
    p = subprocess.run([E.gpushim, "export", "-f", "pprof", "--metric=allocated", trace],
                       capture_output=True, text=True)
    eq(p.returncode, 2, "--metric=allocated is no inuse")
    check("--metric for pprof is leaked or peak" in p.stderr, p.stderr)
    # Binary to a terminal: refused, nothing written.
    master, slave = pty.openpty()
    p = subprocess.run([E.gpushim, "export", "-f", "pprof", trace], stdout=slave,
                       stderr=subprocess.PIPE, text=True)
    os.close(slave)
    os.set_blocking(master, False)
    try:
        written = os.read(master, 4096)
    except (BlockingIOError, OSError):
        written = b""
    os.close(master)
    eq(p.returncode, 2, "to a terminal")
    check("not writing it to a terminal" in p.stderr, p.stderr)
    eq(written, b"", "nothing on the terminal")
    # To standard output when it is no terminal: the same bytes as -o.
    p = subprocess.run([E.gpushim, "export", "-f", "pprof", trace], capture_output=True)
    eq(p.returncode, 0, p.stderr)
    eq(p.stdout, open(export(trace), "rb").read(), "stdout holds what -o writes")
    help_text = subprocess.run([E.gpushim, "export", "--help"], capture_output=True,
                               text=True).stdout
    check("pprof" in help_text and "inuse_space" in help_text, "--help names pprof")


def test_pprof_of_damaged_traces():
    # A trace cut anywhere, or with bytes flipped: a valid profile of what
    # could be read (exit status 4, each warning said), or exit status 1 with
    # a one-line message; never more.
    trace = one_trace(run([E.prog("drv_schedule")]))
    data = open(trace, "rb").read()
    d = tempfile.mkdtemp(prefix="gpushim-pprof-")
    cuts = sorted({0, 8, 16, 40, len(data) // 3, len(data) // 2, len(data) - 20, len(data) - 1})
    flips = [(at, bytes([data[at] ^ 0xff])) for at in range(60, len(data), max(1, len(data) // 12))]
    cases = [(f"cut{n}", data[:n]) for n in cuts] + \
            [(f"flip{at}", data[:at] + b + data[at + 1:]) for at, b in flips]
    written = 0
    for name, content in cases:
        path = os.path.join(d, name + ".trace")
        open(path, "wb").write(content)
        out = path + ".pb.gz"
        p = subprocess.run([E.gpushim, "export", "-f", "pprof", "-o", out, path],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode in (0, 1, 4), f"{name}: status {p.returncode}: {p.stderr}")
        if p.returncode == 4:
            warned("export", p)  # a profile of what could be read, and why it is not all
        if p.returncode == 1:
            check(p.stderr.startswith("gpushim export: ") and p.stderr.count("\n") == 1,
                  f"{name}: one line: {p.stderr!r}")
            continue
        written += 1
        prof = check_rules(decode(out))
        for s in prof["sample"]:
            check(s["value"][0] <= s["value"][2] or s["value"][2] == 0,
                  f"{name}: no more in use than allocated: {s['value']}")
    check(written > 0, "some of them are read")
