#!/usr/bin/env python3
"""bench_sites.py - the exports of a trace with many call sites: N sites (300 000
by default), each one allocation of 4 KiB live at the end, all under one frame,
so that the peak's flame graph has a node with N children. Prints the seconds
`export -f json` and `export -f html` took, and their ratio: the page should
take about what the JSON does (docs/performance.md).

    python3 tests/bench/bench_sites.py --build build [--sites N]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from test_fuzz_corpus import alloc, chunk, end, preamble, stack  # noqa: E402  the records


def trace(n):
    """n sites under one frame, each an allocation of 4 KiB never freed."""
    parts = [preamble()]
    raw, first = bytearray(), True
    for i in range(n):
        raw += stack(i + 1, [0x400000 + 16 * i, 0x7000000])
        raw += alloc(0x100000000 + 4096 * i if first else 4096, 4096, i + 1)  # a delta in a chunk
        first = False
        if len(raw) > 200000:
            parts.append(chunk(bytes(raw)))
            raw, first = bytearray(), True
    raw += end(n, 0, n + 10)
    parts.append(chunk(bytes(raw)))
    return b"".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--sites", type=int, default=300000)
    a = ap.parse_args()
    gpushim = os.path.join(a.build, "gpushim")
    tmp = tempfile.mkdtemp(prefix="gpushim-bench-sites-")
    path = os.path.join(tmp, "sites.trace")
    with open(path, "wb") as f:
        f.write(trace(a.sites))
    took = {}
    for fmt in ("json", "html"):
        t = time.monotonic()
        p = subprocess.run([gpushim, "export", "-f", fmt, "-o", os.path.join(tmp, "out." + fmt),
                            path], capture_output=True, text=True)
        took[fmt] = time.monotonic() - t
        if p.returncode != 0:
            sys.exit(f"bench_sites: export -f {fmt} failed: {p.stderr}")
    print(f"{a.sites} call sites: export -f json {took['json']:.2f} s, -f html {took['html']:.2f} s, "
          f"html/json {took['html'] / took['json']:.2f}")


if __name__ == "__main__":
    main()
