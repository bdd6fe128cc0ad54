#!/usr/bin/env python3
"""make_corpus.py - the fuzz targets' seed corpus (tests/fuzz/corpus/TARGET/),
made again from the test programs run under the shim against the simulated
driver. Usage: make_corpus.py --build DIR (make fuzz-corpus).

Traces: drv_schedule, drv_oom (a failed allocation), drv_api_steps (marks),
drv_api_blocks (the program's own blocks), drv_multidevice, drv_nvtx (NVTX
ranges and heap spans), drv_roles (roles and a failure), Python frames
(tests/progs/python/train.py), a killed crash_victim (its trace, and with
its ring for the recover target), and two bounded by GPUSHIM_MAX_BYTES
(drv_longhaul, drv_api_longrun) cut after their first chunks, checkpoint
included, since a bounded trace is at least 4 MiB: any prefix of a trace
that ends on a chunk boundary is a trace. Seeds whose names begin "v2-"
are format 2's (allocations and frees as records of their own), made by
the shim before format 3, and are left in place. Each target's input format is
in its harness (tests/fuzz/fuzz_*.c). Standard library only.

symcache: the symbol cache files an analysis of drv_schedule and of
rt_batch_tensors wrote. symbols: tests/fuzz/seeds/module.c built with -g
and an 8-byte build id, at its path and in the --symbols folder, with and
without the build id, asked about its functions. --only TARGET[,TARGET]
makes those alone.
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import harness  # noqa: E402
from harness import E, run  # noqa: E402

# Seeds named so are traces of an older format, made by an older shim and
# kept as they are (the reader still reads them): never made again here.
OLD_FORMAT = "v2-"
CUT = 48 * 1024  # a bounded trace is cut after the chunks within this many bytes
# drv_longhaul's cut is smaller: its first chunk, which holds its checkpoint,
# and little more, since each chunk of its events (65536 in format 3) costs
# a fuzz target about 0.3 s
CUT_LONGHAUL = 16 * 1024


def prefix(data, limit):
    """The header and the whole chunks of data within limit bytes (at least one)."""
    off = 16 + struct.unpack_from("<I", data, 12)[0] + 4
    chunks = 0
    while off + 16 <= len(data):
        end = off + 16 + struct.unpack_from("<I", data, off + 4)[0]
        if end > len(data) or (chunks and end > limit):
            break
        off, chunks = end, chunks + 1
    return data[:off]


def varint(b, i):
    v = shift = 0
    while True:
        v |= (b[i] & 0x7f) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i


def hidden(path):
    """A path of the same length that names no file: what a trace recorded
    on another machine looks like, and no seed costs a symbolizer's opening
    of the module's file (libdw) at each run of a fuzz target."""
    return bytes(c if c == ord("/") else ord("x") for c in path)


def hide_chunk_modules(raw):
    out, i = bytearray(raw), 0
    while i < len(raw):
        t = raw[i]
        n, j = varint(raw, i + 1)
        if t == 16:  # GS_REC_MODULE: id, bias, lo, span, path
            k = j
            for _ in range(4):
                _, k = varint(raw, k)
            plen, k = varint(raw, k)
            out[k:k + plen] = hidden(raw[k:k + plen])
        i = j + n
    return bytes(out)


def hide_modules(data):
    """The trace with its modules' paths hidden (each chunk inflated, changed
    and deflated again, its checksum made anew)."""
    off = 16 + struct.unpack_from("<I", data, 12)[0] + 4
    out = bytearray(data[:off])
    while off + 16 <= len(data):
        clen, rlen = struct.unpack_from("<II", data, off + 4)
        raw = hide_chunk_modules(zlib.decompress(data[off + 16:off + 16 + clen]))
        comp = zlib.compress(raw)
        head = struct.pack("<4sII", b"GBLK", len(comp), rlen)
        out += head + struct.pack("<I", zlib.crc32(comp, zlib.crc32(head))) + comp
        off += 16 + clen
    return bytes(out + data[off:])


def hide_ring_modules(ring):
    """The same for a ring's module entries (struct gs_module_body)."""
    cap, = struct.unpack_from("<Q", ring, 24)
    head, = struct.unpack_from("<Q", ring, 64)
    tail, = struct.unpack_from("<Q", ring, 128)
    out = bytearray(ring)
    pos = tail
    while pos + 4 <= head:
        at = lambda p: 4096 + p % cap  # noqa: E731
        total = struct.unpack("<I", bytes(out[at(pos + k)] for k in range(4)))[0]
        if total <= 4:
            break
        body = bytes(out[at(pos + 4 + k)] for k in range(total - 4))
        if body[0] == 16:
            plen, = struct.unpack_from("<H", body, 2)
            for k, c in enumerate(hidden(body[32:32 + plen])):
                out[at(pos + 4 + 32 + k)] = c
        pos += total
    return bytes(out)


def small_ring(ring):
    """The same ring with the least capacity that holds its entries [tail,
    head) at the same positions (the shim's is at least 1 MiB)."""
    cap, = struct.unpack_from("<Q", ring, 24)
    head, = struct.unpack_from("<Q", ring, 64)
    tail, = struct.unpack_from("<Q", ring, 128)
    new = 64
    while new < head - tail:
        new *= 2
    data = bytearray(new)
    for pos in range(tail, head):
        data[pos % new] = ring[4096 + pos % cap]
    header = bytearray(ring[:4096])
    struct.pack_into("<Q", header, 24, new)
    return bytes(header) + bytes(data)


def traced(tmp, name, argv, env=None, rc=0):
    r = run(argv, cwd=tmp, output=name, env=env, timeout=600)
    if rc is not None and r.rc != rc:
        sys.exit(f"make_corpus: {' '.join(argv)}: status {r.rc}, not {rc}: {r.err}")
    return os.path.join(tmp, name)


def ranges_and_roles(tmp):
    """NVTX ranges, domains and heap spans (drv_nvtx, where the toolkit's
    NVTX headers built it) and memory by role with a failure (drv_roles)."""
    out = {}
    if os.path.exists(E.prog("drv_nvtx")):
        out["nvtx"] = open(traced(tmp, "nvtx.trace", [E.prog("drv_nvtx"), "traced", "oom"],
                                  env={"NVTX_INJECTION64_PATH": E.shim,
                                       "SIMCUDA_MEMORY": "64M"}), "rb").read()
    out["roles"] = open(traced(tmp, "roles.trace", [E.prog("drv_roles"), os.path.join(
        E.build, "progs", "fw", "libcublasLt.so.13")], env={"SIMCUDA_MEMORY": "64M"}),
        "rb").read()
    return out


def symbol_seeds(tmp, put):
    """The symcache and symbols targets' seeds."""
    cache = os.path.join(tmp, "cache")
    for prog in ("drv_schedule", "rt_batch_tensors"):
        trace = traced(tmp, prog + ".syms.trace", [E.prog(prog)] + (["2"] if prog[:3] == "rt_" else []))
        subprocess.run([E.gpushim, "report", trace], capture_output=True, check=False,
                       env=dict(os.environ, GPUSHIM_SYMBOL_CACHE=cache))
    for i, name in enumerate(sorted(os.listdir(cache))):
        put("symcache", f"cache{i}", open(os.path.join(cache, name), "rb").read())
    so = os.path.join(tmp, "module.so")
    subprocess.run(["cc", "-O1", "-g", "-shared", "-fPIC", "-Wl,--build-id=0x" + SEED_ID.hex(),
                    "-o", so, os.path.join(HERE, "seeds", "module.c")], check=True)
    elf = open(so, "rb").read()
    nm = subprocess.run(["nm", so], capture_output=True, text=True, check=True).stdout
    addrs = {l.split()[2]: int(l.split()[0], 16) for l in nm.splitlines()
             if len(l.split()) == 3 and l.split()[2] in ("seed_entry", "seed_other", "helper")}
    offs = [addrs["seed_entry"] + 8, addrs["seed_other"] + 4, addrs["helper"] + 2, 0x10]
    for flags in range(4):
        put("symbols", f"module.{flags}", bytes([flags]) + SEED_ID
            + b"".join(struct.pack("<I", o) for o in offs) + elf)


SEED_ID = bytes.fromhex("0102030405060708")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    E.configure(a.build, False)
    tmp = tempfile.mkdtemp(prefix="gpushim-corpus-")
    out = os.path.join(HERE, "corpus")

    def put(target, name, data):
        with open(os.path.join(out, target, name), "wb") as f:
            f.write(data)

    for t in ("symcache", "symbols"):
        if not a.only or t in a.only.split(","):
            shutil.rmtree(os.path.join(out, t), ignore_errors=True)
            os.makedirs(os.path.join(out, t))
    if not a.only or set(a.only.split(",")) & {"symcache", "symbols"}:
        symbol_seeds(tmp, put)
    if a.only and not set(a.only.split(",")) - {"symcache", "symbols"}:
        shutil.rmtree(tmp)
        return
    quiet = {"ASAN_OPTIONS": "detect_leaks=0"}
    traces = {}
    for prog, env in [("drv_schedule", None), ("drv_api_steps", None),
                      ("drv_api_blocks", {"SIMCUDA_MEMORY": "13M"}), ("drv_multidevice", None)]:
        traces[prog] = open(traced(tmp, prog + ".trace", [E.prog(prog)], env=env, rc=None),
                            "rb").read()
    traces["drv_oom"] = open(traced(tmp, "oom.trace", [E.prog("drv_oom")],
                                    env={"SIMCUDA_MEMORY": "16M"}), "rb").read()
    traces["python"] = open(traced(tmp, "py.trace", [sys.executable, os.path.join(
        HERE, "..", "progs", "python", "train.py"), os.path.join(E.build, "sim", "libcuda.so.1")],
        env=quiet), "rb").read()
    victim = traced(tmp, "victim.trace", [E.prog("crash_victim"), os.path.join(tmp, "log"),
                                          "sigkill", "7", "1", "50"], env=quiet, rc=-9)
    traces["killed"] = open(victim, "rb").read()
    ring = small_ring(hide_ring_modules(open(victim + ".ring", "rb").read()))
    traces["bounded"] = prefix(open(traced(tmp, "long.trace", [E.prog("drv_longhaul"), "1000000"],
                                           env={"GPUSHIM_MAX_BYTES": "4M"}), "rb").read(), CUT_LONGHAUL)
    traces["bounded_api"] = prefix(open(traced(tmp, "api.trace", [E.prog("drv_api_longrun"),
                                                                  "400000"],
                                               env={"GPUSHIM_MAX_BYTES": "4M"}), "rb").read(), CUT)
    batches = {b: open(traced(tmp, f"b{b}.trace", [E.prog("drv_batch"), str(b), "2"]), "rb").read()
               for b in (4, 8)}
    traces.update(ranges_and_roles(tmp))

    traces = {k: hide_modules(v) for k, v in traces.items()}
    batches = {k: hide_modules(v) for k, v in batches.items()}
    for t in ("report", "export", "recover", "multi"):
        os.makedirs(os.path.join(out, t), exist_ok=True)
        for name in os.listdir(os.path.join(out, t)):
            if not name.startswith(OLD_FORMAT):
                os.remove(os.path.join(out, t, name))

    for name, data in sorted(traces.items()):
        put("report", name, data)
    # export: each trace under two of the ten selectors, every selector used.
    for i, (name, data) in enumerate(sorted(traces.items())):
        for sel in (i % 10, (i + 5) % 10 | (0x80 if i % 2 else 0)):
            put("export", f"{name}.{sel}", bytes([sel]) + data)
    # recover: the killed trace and its ring.
    put("recover", "killed", struct.pack("<I", len(traces["killed"])) + traces["killed"] + ring)
    for sel, (a_, b_) in enumerate([("b4", "b8"), ("b4", "b8"), ("b4", "b8"),
                                    ("drv_schedule", "drv_oom")]):
        ta = batches[4] if a_ == "b4" else traces[a_]
        tb = batches[8] if b_ == "b8" else traces[b_]
        put("multi", f"{a_}-{b_}.{sel}", bytes([sel % 3 | (0x80 if sel % 2 else 0)])
            + struct.pack("<I", len(ta)) + ta + tb)
    shutil.rmtree(tmp)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    print(f"make_corpus: {total} bytes in {out}")


if __name__ == "__main__":
    main()
