"""test_hostile_names.py - native names from a program's own file are as
untrusted as the trace (analyzer/symbols/symbolize.c, intern): a copy of
tests/progs/drv_hostile_names.c patched so that its symbol table and DWARF
name a function and a source file with ESC ] 2 ; x BEL newline ESC, which
would set a terminal's title and forge a line of the report. Every screen
shows those bytes as '?', as it shows a Python name's or a thread's.
"""
import gzip
import json
import os
import shutil
import subprocess
import tempfile

from harness import E, check, eq, one_trace, run

MARK = b"gsEVILgs"
EVIL = b"\x1b]2;x\x07\n\x1b"  # as long as the marker: the ELF stays whole
SHOWN = "?]2;x???"


def hostile_trace():
    tmp = tempfile.mkdtemp(prefix="gpushim-names-")
    prog = os.path.join(tmp, "hostile")
    with open(E.prog("drv_hostile_names"), "rb") as f:
        data = f.read()
    check(data.count(MARK) >= 3, "the marker in the symbol table and the DWARF")
    with open(prog, "wb") as f:
        f.write(data.replace(MARK, EVIL))
    shutil.copymode(E.prog("drv_hostile_names"), prog)
    # the copy has lost its run path to the simulated CUDA
    r = run([prog], env={"LD_LIBRARY_PATH": os.path.join(E.build, "sim")})
    eq((r.rc, r.out), (0, "hostile names done\n"), "the patched program runs: " + r.err)
    return one_trace(r)


def gpushim(*args):
    p = subprocess.run([E.gpushim, *args], capture_output=True, timeout=120)
    eq(p.returncode, 0, f"gpushim {args[0]}: {p.stderr!r}")
    return p.stdout


def no_control_bytes(out, what):
    bad = sorted({b for b in out if b < 0x20 and b not in b"\n\t" or b == 0x7f})
    eq(bad, [], f"control bytes in {what}")


def test_native_names_with_control_bytes_reach_no_screen_raw():
    trace = hostile_trace()
    text = gpushim("report", trace)
    no_control_bytes(text, "the text report")
    lines = text.decode().splitlines()
    site = [l for l in lines if "1.00 MiB in      1 allocation   at alloc_" in l]
    eq(len(site), 2, f"the site at the peak and unfreed, each on one line: {site}")
    check(all(f"at alloc_{SHOWN}  " in l and f"{SHOWN}.c:4" in l for l in site),
          f"the names, their control bytes as '?': {site}")
    folded = gpushim("export", "-f", "folded", trace)
    no_control_bytes(folded, "the folded export")
    eq(len(folded.decode().splitlines()), 1, "one stack, one line")
    # (and its ';', the format's separator, as ':')
    eq(folded.decode(), "main (?]2:x???.c:11);alloc_?]2:x??? (?]2:x???.c:4) 1048576\n",
       "the folded line")
    for fmt in ("json", "html", "perfetto"):
        no_control_bytes(gpushim("export", "-f", fmt, trace), f"the {fmt} export")
    # binary formats: the names' strings hold no raw byte of them
    tmp = tempfile.mkdtemp(prefix="gpushim-names-out-")
    for fmt, name in (("pprof", "p.pb.gz"), ("torch-snapshot", "s.pickle")):
        out = os.path.join(tmp, name)
        gpushim("export", "-f", fmt, "-o", out, trace)
        data = open(out, "rb").read()
        if fmt == "pprof":
            data = gzip.decompress(data)
        check(EVIL not in data and EVIL[:3] not in data and SHOWN.encode() in data,
              f"the {fmt} export: the names as '?', none raw")
    d = json.loads(gpushim("report", "--json", trace))
    frames = d["peak"]["sites"][0]["frames"]
    eq((frames[0]["function"], os.path.basename(frames[0]["file"])),
       (f"alloc_{SHOWN}", f"{SHOWN}.c"), "the JSON's names, as the text's")
