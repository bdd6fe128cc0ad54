"""test_fuzz_corpus.py - the fuzz targets (tests/fuzz) once over their seed
corpus and every crash they found, and hostile traces made here byte by
byte: huge lengths, deep stacks, ids that name themselves or nothing, an
END record and a checkpoint that claim billions. Each must give a clear
one-line error or a partial report, in bounded memory (the analyzer's
largest resident size, from /usr/bin/time, under 256 MiB).
"""
import glob
import json
import os
import struct
import subprocess
import tempfile
import zlib

from harness import E, MiB, check, eq, incomplete_as_said, warned

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TARGETS = ["report", "export", "recover", "multi", "symcache", "symbols"]
RSS_LIMIT_KIB = 256 * 1024


# ---- the fuzz targets over their corpus ----

def test_fuzz_targets_replay_corpus_and_crashes():
    # each target's seeds and the crashes found, once through it, built as
    # this pass builds (tests/fuzz/replay_main.c: under the sanitizers in
    # make test's sanitized pass); libFuzzer's own build is make fuzz's
    for t in TARGETS:
        files = sorted(glob.glob(os.path.join(ROOT, "tests", "fuzz", "corpus", t, "*")) +
                       glob.glob(os.path.join(ROOT, "tests", "fuzz", "crashes", t, "*")))
        check(len(files) >= 1, f"seeds for {t}")
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1",
                   LSAN_OPTIONS="suppressions=" + os.path.join(ROOT, "tests", "fuzz", "lsan.supp"))
        p = subprocess.run([os.path.join(E.build, "fuzz-replay", "replay_" + t), *files],
                           capture_output=True, text=True, timeout=600, env=env)
        ran = [line.split()[1] for line in p.stderr.splitlines() if line.startswith("Executed ")]
        eq((p.returncode, ran), (0, files), f"fuzz_{t}: every input once, none failed:\n"
           + p.stderr[-3000:])


def test_seed_corpus_is_small_and_real():
    total = 0
    for t in TARGETS:
        files = glob.glob(os.path.join(ROOT, "tests", "fuzz", "corpus", t, "*"))
        check(files, f"a seed corpus for {t}")
        total += sum(os.path.getsize(f) for f in files)
    check(total < 2 * MiB, f"the corpus is {total} bytes, over 2 MiB")
    # The report seeds are real traces the analyzer reads whole: each as its
    # program's schedule says (tests/fuzz/make_corpus.py made them), in this
    # format and, "v2-", as the shim wrote them before format 3.
    seeds = os.path.join(ROOT, "tests", "fuzz", "corpus", "report")
    want = {"drv_schedule": (True, 13, 6, 0), "drv_oom": (True, 4, 4, 1),
            "drv_api_steps": (True, 7, 3, 0), "killed": (False, 0, 0, 0)}
    for old, version in (("", 3), ("v2-", 2)):
        for name, (complete, allocs, frees, failed) in want.items():
            d = report_json(os.path.join(seeds, old + name))
            eq((d["trace"]["format_version"], d["trace"]["complete"], d["events"]["allocations"],
                d["events"]["frees"], d["events"]["failed"]),
               (version, complete, allocs, frees, failed), f"seed {old + name}")
        d = report_json(os.path.join(seeds, old + "bounded"))
        check(d["trace"]["checkpoint"] is not None,
              f"the {old}bounded seed starts from its checkpoint")


def report_json(path):
    p = subprocess.run([E.gpushim, "report", "--json", path], capture_output=True, text=True,
                       timeout=120)
    check(p.returncode in (0, 4), f"report {path}: {p.stderr}")
    d = json.loads(p.stdout)
    incomplete_as_said("report", p, d)
    return d


def test_recover_seed_is_a_killed_trace_and_its_ring():
    # crash_victim sigkill, seed 7, one thread, killed after 50 calls: all of
    # them only in its ring, which the seed carries after the trace.
    data = open(os.path.join(ROOT, "tests", "fuzz", "corpus", "recover", "killed"), "rb").read()
    n, = struct.unpack_from("<I", data)
    tmp = tempfile.mkdtemp(prefix="gpushim-fuzz-seed-")
    trace = os.path.join(tmp, "t")
    open(trace, "wb").write(data[4:4 + n])
    open(trace + ".ring", "wb").write(data[4 + n:])
    d = report_json(trace)
    eq((d["trace"]["ring"]["use"], d["trace"]["recovered_events"], d["events"]["allocations"],
        d["events"]["frees"], d["trace"]["complete"]), ("read", 50, 33, 17, True), "from the ring")


# ---- hostile traces, made here ----

def uv(v):
    out = bytearray()
    while True:
        b, v = v & 0x7f, v >> 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)


def zz(v):
    return uv(v << 1 if v >= 0 else ((-v) << 1) - 1)


def string(b):
    return uv(len(b)) + b


def rec(t, payload):
    return bytes([t]) + uv(len(payload)) + payload


HEADER = rec(1, uv(4242) + uv(1) + string(b"nohost") + string(b"0.1.0")) + rec(3, uv(0) + uv(0))


def preamble(header=HEADER, hlen=None):
    pre = b"GPUSHIM\n" + struct.pack("<II", 2, len(header) if hlen is None else hlen) + header
    return pre + struct.pack("<I", zlib.crc32(pre))


def chunk(raw, rlen=None, clen=None, comp=None):
    comp = zlib.compress(raw) if comp is None else comp
    head = struct.pack("<4sII", b"GBLK", len(comp) if clen is None else clen,
                       len(raw) if rlen is None else rlen)
    return head + struct.pack("<I", zlib.crc32(comp, zlib.crc32(head))) + comp


def alloc(addr, size, stack, dt=1, space=0, parent=0):
    """An ALLOC on device 0 (addr: the delta from the chunk's last)."""
    return rec(18, zz(dt) + uv(1) + uv(1) + zz(0) + zz(addr) + uv(size) + uv(stack) + uv(0)
               + uv(0) + uv(space) + uv(parent))


def free(addr, size, dt=1, space=0):
    return rec(19, zz(dt) + uv(1) + uv(2) + zz(0) + zz(addr) + uv(0) + uv(space) + uv(size))


def stack(sid, pcs, n=None):
    body, last = b"", 0
    for pc in pcs:
        body += zz(pc - last)
        last = pc
    return rec(17, uv(sid) + uv(len(pcs) if n is None else n) + body)


def end(events, lost, t):
    return rec(22, uv(events) + uv(lost) + uv(t))


def hostile(name, data, *args):
    """gpushim report --json (or ARGS) of data: (status, JSON or the error
    line, largest resident KiB)."""
    tmp = tempfile.mkdtemp(prefix="gpushim-hostile-")
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(data)
    rss = os.path.join(tmp, "rss")
    cmd = list(args) if args else ["report", "--json"]
    p = subprocess.run(["/usr/bin/time", "-o", rss, "-f", "%M", E.gpushim, *cmd, path],
                       capture_output=True, text=True, timeout=300)
    kib = int(open(rss).read().split()[-1])
    check(kib < RSS_LIMIT_KIB, f"{name}: {kib} KiB resident, over {RSS_LIMIT_KIB}")
    if p.returncode == 0:
        eq(p.stderr, "", f"{name}: nothing on standard error")
    if p.returncode == 4:
        warned(cmd[0], p)  # read, and what it lacks said
    if p.returncode in (0, 4):
        out = json.loads(p.stdout) if cmd == ["report", "--json"] else p.stdout
        if cmd == ["report", "--json"]:
            incomplete_as_said("report", p, out)
        return p.returncode, out, kib
    lines = p.stderr.splitlines()
    eq((p.returncode, len(lines), p.stdout), (1, 1, ""), f"{name}: one error line: {p.stderr}")
    check(lines[0].startswith(f"gpushim {cmd[0]}: {path}: offset "), f"{name}: {lines[0]}")
    return p.returncode, lines[0], kib


def needs_time():
    if not os.path.exists("/usr/bin/time"):
        return "no /usr/bin/time to measure the resident size"
    return None


def test_hostile_huge_lengths():
    if needs_time():
        return needs_time()
    one = alloc(0x1000, MiB, 0) + end(1, 0, 5)
    # A header claiming 4 GiB, and one just past the format's limit.
    for hlen in (0xffffffff, (1 << 20) + 1):
        rc, err, _ = hostile("hdr", preamble(HEADER, hlen) + chunk(one))
        eq((rc, err.split(": ", 2)[2]), (1, f"offset 12: header length {hlen} runs past the end "
                                            "of the file"), "a huge header length")
    # Chunks that claim 4 GiB raw or compressed, and one that claims 16 MiB
    # raw (the limit, checksum right) but inflates to less: each skipped and
    # counted; the good chunk after them read.
    bad = [chunk(one, rlen=0xffffffff), chunk(one, clen=0xfffffff0), chunk(one, rlen=16 << 20)]
    for i, b in enumerate(bad):
        rc, d, _ = hostile(f"chunk{i}", preamble() + b + chunk(one))
        eq((rc, d["trace"]["damaged_blocks"], d["events"]["allocations"], d["leaks"]["bytes"]),
           (4, 1, 1, MiB), f"bad chunk {i}")
    # A chunk that claims more than the file holds, last: the trace was cut there.
    rc, d, _ = hostile("cut", preamble() + chunk(one) + chunk(one, clen=1 << 20)[:64])
    eq((rc, d["trace"]["truncated_at"] > 0, d["trace"]["complete"], d["events"]["allocations"]),
       (4, True, False, 1), "cut short")
    # A record claiming a payload of 2^63 bytes in a good chunk: the rest of
    # the chunk cannot be framed; the records before it stand.
    rc, d, _ = hostile("rec", preamble() + chunk(one + bytes([18]) + uv(1 << 63)))
    eq((rc, d["trace"]["damaged_records"], d["events"]["allocations"]), (4, 1, 1), "huge record")
    # 16 MiB of zero bytes from 16 KiB (8 million empty records of an unknown
    # type), in a chunk of its own: read, skipped, memory bounded.
    rc, d, kib = hostile("bomb", preamble() + chunk(bytes(16 << 20)) + chunk(one))
    eq((rc, d["trace"]["damaged_records"], d["events"]["allocations"], d["trace"]["complete"]),
       (0, 0, 1, True), "a chunk that inflates 1000 times")


def test_hostile_deep_stacks():
    if needs_time():
        return needs_time()
    pcs = [0x400000 + 16 * i for i in range(256)]
    # The deepest stack a writer may record (256 frames), and ones that claim
    # 257, 2^32 and 2^62 frames: those are refused, their allocations kept
    # (with a stack the trace does not define).
    raw = stack(1, pcs) + alloc(0x1000, MiB, 1)
    for sid, n in ((2, 257), (3, 1 << 32), (4, 1 << 62)):
        raw += stack(sid, pcs[:4], n=n) + alloc(MiB, 2 * MiB, sid)
    rc, d, _ = hostile("deep", preamble() + chunk(raw + end(4, 0, 9)))
    eq((rc, d["trace"]["damaged_records"], d["events"]["allocations"], d["leaks"]["bytes"]),
       (4, 3, 4, 7 * MiB), "three stacks refused, every allocation counted")
    deep = [s for s in d["leaks"]["sites"] if s["bytes"] == MiB]
    eq([len(s["frames"]) for s in deep], [256], "the 256 frames, every one")
    # The text report shows --frames of them, and export folded all 256.
    rc, out, _ = hostile("deep", preamble() + chunk(raw + end(4, 0, 9)), "export",
                         "--format=folded", "--metric=leaked")
    lines = sorted(out.splitlines(), key=lambda x: x.count(";"))
    eq((rc, len(lines), lines[-1].count(";") + 1, lines[-1].split()[-1]), (4, 4, 256, str(MiB)),
       "folded: a line per site, 256 frames for the deep one")


def test_hostile_ids_that_name_themselves_or_nothing():
    if needs_time():
        return needs_time()
    # A stack defined twice under one id (the first stands), allocations of
    # stacks never defined, a mapping whose parent handle has its own
    # address, freed in the wrong order, and a second END after the first.
    raw = (stack(7, [0x1000]) + stack(7, [0x2000, 0x3000]) + alloc(0x10, MiB, 7)
           + alloc(0x1000, MiB, 99) + alloc(0x2000, MiB, 0xffffffff)
           + alloc(-0x2000 - 0x1000 - 0x10 + 0x5000, 4 * MiB, 7, space=1)   # handle 0x5000
           + alloc(0, 4 * MiB, 7, space=3, parent=0x5000)                    # mapping 0x5000
           + free(0, 4 * MiB, space=1) + free(0, 4 * MiB, space=3))
    rc, d, _ = hostile("ids", preamble() + chunk(raw + end(7, 0, 20)) + chunk(end(7, 0, 21)))
    eq((rc, d["events"]["allocations"], d["events"]["frees"], d["leaks"]["bytes"],
        d["trace"]["damaged_records"]), (0, 5, 2, 3 * MiB, 0), "every id taken as it stands")
    by_bytes = sorted(len(s["frames"]) for s in d["leaks"]["sites"])
    eq(by_bytes, [0, 0, 1], "the first definition of stack 7; none for the undefined ones")


def test_hostile_claimed_billions():
    if needs_time():
        return needs_time()
    one = alloc(0x1000, MiB, 0)
    # An END record that claims 5 billion events recorded and 3 billion lost.
    rc, d, _ = hostile("end", preamble() + chunk(one + end(5_000_000_000, 3_000_000_000, 1 << 62)))
    eq((rc, d["events"]["allocations"], d["trace"]["lost_events"], d["trace"]["complete"]),
       (4, 1, 3_000_000_000, False), "the claim is reported, not believed")
    # A checkpoint that claims 2^60 of everything: its totals are figures
    # (no memory follows from them), the counts in its END that do not match
    # the records it holds are refused.
    big = 1 << 60
    begin = rec(32, b"".join(uv(big) for _ in range(20)))
    ckend = rec(40, b"".join(uv(big) for _ in range(7)))
    site = rec(35, uv(1) + uv(0) + uv(1) + b"".join(uv(big) for _ in range(7)))
    rc, d, _ = hostile("ckpt", preamble() + chunk(begin + site + ckend + one + end(2, 0, 3)))
    eq((rc, d["trace"]["damaged_records"], d["trace"]["complete"], d["events"]["allocations"]),
       (4, 1, False, big + 1), "the checkpoint's END refused, the trace marked incomplete; "
       "the figures it claimed, and the allocation after it, counted")


def alloc_failed(size, free_bytes, total, dt=1):
    return rec(21, zz(dt) + uv(1) + uv(1) + zz(0) + uv(size) + uv(0) + uv(0) + uv(2)
               + uv(free_bytes) + uv(total))


def test_hostile_sizes_past_int64():
    # tests/fuzz/crashes/recover/peak-over-int64-headroom: a peak past 2^63
    # made each card's headroom (card - peak) overflow; two allocations of
    # 8 EiB + 5 made "10 B live". No run allocates 256 TiB at once: such an
    # allocation is implausible, not counted, and said (exit 4).
    if needs_time():
        return needs_time()
    eight = (1 << 63) + 5
    for sizes in ([1 << 63], [(1 << 64) - 1], [eight, eight], [(1 << 48) + 1]):
        raw = b"".join(alloc(0x1000 if i == 0 else 1 << 50, n, 0) for i, n in enumerate(sizes))
        raw += alloc(1 << 50, MiB, 0)
        rc, d, _ = hostile("peak", preamble() + chunk(raw + end(len(sizes) + 1, 0, 9)))
        eq((rc, d["complete"], d["trace"]["complete"], d["capacity"]["peak_bytes"],
            d["leaks"]["bytes"], d["events"]["allocations"]),
           (4, False, True, MiB, MiB, 1), f"{sizes}: not counted, the MiB after them is")
        eq([(w["kind"], w["message"].split(" (")[0]) for w in d["warnings"]],
           [("implausible", f"{len(sizes)} event{'s' if len(sizes) > 1 else ''} with values no "
             "run has")], "said")
        check("(the first: a size of " in d["warnings"][0]["message"], d["warnings"])
    # 256 TiB is the most one allocation may be
    rc, d, _ = hostile("peak", preamble() + chunk(alloc(0x1000, 1 << 48, 0) + end(1, 0, 2)))
    eq((rc, d["complete"], d["capacity"]["peak_bytes"]), (0, True, 1 << 48), "256 TiB counted")
    # An event 2^63 ns after the start: no "18446744073 s"; the END's time,
    # as absurd, is not the run's length either
    raw = alloc(0x1000, MiB, 0) + alloc(MiB, MiB, 0, dt=(1 << 63) - 10) + end(2, 0, 1 << 63)
    rc, d, _ = hostile("time", preamble() + chunk(raw))
    eq((rc, d["process"]["duration_ns"], d["events"]["allocations"], d["leaks"]["bytes"]),
       (4, 1, 1, MiB), "the one plausible allocation, at 1 ns")
    check(d["warnings"][0]["message"].startswith("1 event with values no run has (the first: an "
                                                 "event 292"), d["warnings"])
    # A failure that asks for more than any card is plausible (a program
    # asked for -1 bytes): counted, the sums saturated. Its device claims
    # 2^63 + 5 bytes, 5 free, while the process held 1 byte: what the others
    # hold (total - free - held) is 2^63 - 1.
    raw = alloc(0x1000, 1, 0) + alloc_failed((1 << 64) - 1, 5, (1 << 63) + 5) + end(2, 0, 3)
    rc, d, _ = hostile("failed", preamble() + chunk(raw))
    eq((rc, [f["verdict"]["other_bytes"] for f in d["failures"]],
        d["capacity"]["failed_asked_bytes"]), (0, [(1 << 63) - 1], (1 << 64) - 1),
       "what the others held, and what was asked")


def mark(label, dt=1):
    return rec(52, zz(dt) + uv(1) + uv(0) + string(label))


def test_hostile_step_growth_past_int64():
    # Two steps that each added 6.9e18 bytes overflowed the label's growth;
    # such allocations are now implausible, not counted, and said. Steps of
    # 2^47 each are counted: nine of them grow 1.1 PiB, exact.
    if needs_time():
        return needs_time()
    big = 6 << 60
    raw = (mark(b"step") + alloc(0x1000, big, 0) + mark(b"step") + alloc(big, big, 0)
           + mark(b"step") + end(5, 0, 9))
    rc, d, _ = hostile("steps", preamble() + chunk(raw))
    lab = d["mark_labels"]
    eq((rc, [(x["label"], x["steps"], x["growth_bytes"]) for x in lab], d["warnings"][0]["kind"]),
       (4, [("step", 3, 0)], "implausible"), "not counted, said")
    step = 1 << 47
    raw = b"".join(mark(b"step") + alloc(0x1000 if i == 0 else step, step, 0) for i in range(10))
    raw += mark(b"step") + end(21, 0, 99)
    rc, d, _ = hostile("steps", preamble() + chunk(raw))
    lab = d["mark_labels"]
    eq((rc, [(x["label"], x["growth_bytes"], x["max_growth_bytes"]) for x in lab]),
       (0, [("step", 10 * step, step)]), "the growth, exact")
    rc, out, _ = hostile("steps", preamble() + chunk(raw), "report")
    line = [x for x in out.splitlines() if x.strip().startswith("step ") and "marks," in x]
    check(len(line) == 1 and "device memory +128.00 TiB a step on average" in line[0],
          f"the text's average: {line}")
