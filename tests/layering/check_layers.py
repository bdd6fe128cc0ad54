#!/usr/bin/env python3
"""check_layers.py - the project's layers, checked (make layering; part of make check).

The layers are one way: every include and every call goes down
(docs/architecture.md "The layers"). This script owns the layer table (LAYERS: which files are in which layer)
and reports, one line each:
  - a file under shim/, analyzer/, include/ or tests/ that is in no layer;
  - an #include "..." that goes up a layer, to the other side (shim or
    analyzer), or that is not in the project; headers that include each
    other;
  - in each link unit, a file of the project that the compiler read for an
    object (its -MMD dependency file) from a layer the object's may not use:
    includes the regex cannot see (<...>, through a macro) and those of the
    headers included, all the way down; and a screen of the findings
    (SCREENS) built from the model's struct (MODEL_STRUCT): a screen formats
    struct gs_findings, it never reads the replay;
  - a project header longer than MAX_HEADER_LINES (but ALLOW_LONG), or one
    outside include/ whose first comment does not say "Included by:";
  - in each link unit (UNITS), a call between objects (nm: a U symbol
    defined by another object of the unit) that goes up or across, and the
    files that call each other round in a cycle;
  - a symbol in libgpushim.so that only the analyzer's objects define, or
    one named like the analyzer's alone (DENY_IN_SHIM: the checkpoint
    loader, the findings, ...).
Then "layering: N problem(s)". Exit status 1 on any problem (make check
fails), 0 with --warn (a report only).

A layer is a folder (analyzer/util, analyzer/trace, ... shim/base, ...
shim/entry), built as an archive of its own by the Makefile, which links
the archives top layer first. A file may use (include, call) its own layer, and a
layer of lower rank whose side is "public", "shared" or its own; of the shim,
only shim/bound may use analyzer/model (SEAMS). Tests may use anything.

Usage: check_layers.py [--root DIR] [--build DIR] [--no-objects] [--warn]
(--build: where make put build/obj and libgpushim.so; --no-objects: includes
and headers only.) Standard library and binutils' nm.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

# (layer, rank, side, the paths in it: folders end in "/", the rest are files)
LAYERS = [
    ("include", 0, "public", ["include/"]),
    ("analyzer/util", 1, "shared", ["analyzer/util/"]),
    ("analyzer/trace", 2, "shared", ["analyzer/trace/"]),
    ("analyzer/model", 3, "shared", ["analyzer/model/"]),
    ("shim/base", 4, "shim", ["shim/base/"]),
    ("shim/file", 5, "shim", ["shim/file/"]),
    ("shim/bound", 6, "shim", ["shim/bound/"]),
    ("shim/writer", 7, "shim", ["shim/writer/"]),
    ("shim/record", 8, "shim", ["shim/record/"]),
    ("shim/hooks", 9, "shim", ["shim/hooks/"]),
    ("shim/entry", 10, "shim", ["shim/entry/"]),
    ("analyzer/read", 4, "analyzer", ["analyzer/read/"]),
    ("analyzer/symbols", 5, "analyzer", ["analyzer/symbols/"]),
    ("analyzer/whatif", 6, "analyzer", ["analyzer/whatif/"]),
    ("analyzer/findings", 7, "analyzer", ["analyzer/findings/"]),
    ("analyzer/report", 8, "analyzer", ["analyzer/report/"]),
    ("analyzer/export", 9, "analyzer", ["analyzer/export/"]),
    ("analyzer/cmd", 10, "analyzer", ["analyzer/cmd/"]),
    ("analyzer/main", 11, "analyzer", ["analyzer/main.c", "analyzer/nomem_wrap.c"]),
    ("tests/sim", 1, "sim", ["tests/sim/"]),
    ("tests", 99, "tests", ["tests/"]),
]
# Of one side, only these layers may use this shared layer.
SEAMS = {"analyzer/model": {"shim": {"shim/bound"}}}
# The screens of the findings: they format struct gs_findings
# (analyzer/findings/found.h) and may not be built from MODEL_STRUCT, so
# that the compiler refuses a screen that reads the replay's fields.
SCREENS = ["analyzer/report/report_text.c", "analyzer/report/report_json.c",
           "analyzer/report/roles_report.c", "analyzer/report/ranges_report.c",
           "analyzer/report/threads_report.c",
           "analyzer/export/export_html.c", "analyzer/export/html_program.c",
           "analyzer/export/svg.c", "analyzer/export/svg_sites.c",
           "analyzer/export/export.c", "analyzer/export/export_pprof.c",
           "analyzer/findings/gate.c"]
MODEL_STRUCT = "analyzer/model/replay.h"
# Link units: (objects under build/obj/VARIANT, the sources they are built from).
UNITS = {
    "libgpushim.so": ("pic", ["shim/", "analyzer/"]),
    "gpushim": ("", ["analyzer/"]),
    "libcuda.so.1": ("pic", ["tests/sim/driver"]),
    "libcudart.so.13": ("pic", ["tests/sim/runtime/"]),
}
DENY_IN_SHIM = re.compile(r"^gs_(checkpoint_load|growth_|oom_|failure_postmortem|findings_|"
                          r"suspects|read_trace|load|load_watch|sym_|rank_|report_|export_|cmd_|tc_|bfc_|wi_|whatif_)")
# Sanity: the library read is the shim, with a symbol table.
REQUIRED_IN_SHIM = ["gs_emit", "gs_replay_init", "gs_checkpoint_write", "gs_decode_chunk"]
MAX_HEADER_LINES = 300
ALLOW_LONG = {"include/gpushim_trace.h": "the trace format, defined once",
              "include/gpushim_cuda.h": "the CUDA ABI, checked against cuda.h by tests/abi"}
SOURCE_DIRS = ["include", "shim", "analyzer", "tests/sim", "tests/unit", "tests/fuzz"]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
DEFINED = "TDBRCVWGSI"

problems = []


def problem(msg):
    if msg not in problems:  # the shared layers are in two link units
        problems.append(msg)


def layer_of(path):
    """(layer, rank, side) of a file, or None."""
    best, length = None, -1
    for name, rank, side, paths in LAYERS:
        for p in paths:
            if (path == p or (p.endswith("/") and path.startswith(p))) and len(p) > length:
                best, length = (name, rank, side), len(p)
    return best


def may_use(src, dst):
    """May a file of layer src use (include, call) layer dst?"""
    if src[0] == dst[0] or src[2] == "tests":
        return True
    if dst[2] == "tests" or dst[1] >= src[1] or dst[2] not in ("public", "shared", src[2]):
        return False
    seam = SEAMS.get(dst[0], {}).get(src[2])
    return seam is None or src[0] in seam


def why_not(src, dst):
    """Why a file of layer src may not use layer dst, in words."""
    if dst[2] not in ("public", "shared", src[2]):
        return (f"{src[0]} is {'shared' if src[2] == 'shared' else 'on the ' + src[2] + ' side'}"
                f": it may not use the {dst[2]} side's {dst[0]}")
    if dst[1] >= src[1]:
        return f"{dst[0]} is {'above' if dst[1] > src[1] else 'beside'} {src[0]}"
    return (f"of the {src[2]} side only {', '.join(sorted(SEAMS[dst[0]][src[2]]))} "
            f"may use {dst[0]}")


def files(root):
    for d in SOURCE_DIRS:
        for dirpath, dirs, names in os.walk(os.path.join(root, d)):
            dirs.sort()
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, n), root)


def resolve(root, src, name):
    # the including file's folder, then the Makefile's -Iinclude -I.
    for base in [os.path.dirname(src), "include", "."]:
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None


def scc(nodes, edges):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))
    sys.setrecursionlimit(max(1000, 10 * len(nodes)))
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def check_header(f, text):
    n = text.count("\n")
    if n > MAX_HEADER_LINES and f not in ALLOW_LONG:
        problem(f"{f}: longer than {MAX_HEADER_LINES} lines ({n})")
    first = re.match(r"\s*/\*.*?\*/", text, re.S)
    if not f.startswith("include/") and not (first and "Included by" in first.group(0)):
        problem(f"{f}: its first comment does not say \"Included by:\"")


def check_includes(root):
    graph = collections.defaultdict(set)
    for f in files(root):
        src = layer_of(f)
        if src is None:
            problem(f"{f}: in no layer (add it to LAYERS in tests/layering/check_layers.py)")
            continue
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        if f.endswith(".h") and src[2] != "tests":
            check_header(f, text)
        for m in INCLUDE_RE.finditer(text):
            h = resolve(root, f, m.group(1))
            at = f"{f}:{text.count(chr(10), 0, m.start()) + 1}"
            if h is None:
                problem(f"{at}: includes \"{m.group(1)}\" (not in the project)")
                continue
            graph[f].add(h)
            if src[2] == "tests":
                continue
            dst = layer_of(h)
            if dst and not may_use(src, dst):
                problem(f"{at}: includes {h} ({why_not(src, dst)})")
    for c in scc(set(graph), graph):
        problem("headers include each other: " + " ".join(c))


def nm(paths, defined_only=False):
    """{path: [the fields of each symbol line]} for these files, one nm run."""
    out = {p: [] for p in paths}
    if paths:
        args = ["nm", "-A"] + (["--defined-only"] if defined_only else []) + list(paths)
        for line in subprocess.run(args, capture_output=True, text=True).stdout.splitlines():
            path, _, rest = line.partition(":")
            if path in out:
                out[path].append(rest.split())
    return out


def objects(root, build, variant, sources):
    """{source: object} of the objects under build/obj[/variant] made from
    these sources (folders or files) that are still in the tree."""
    base = os.path.join(build, "obj", variant)
    out = {}
    for s in sources:
        top = s if s.endswith("/") else os.path.dirname(s) + "/"
        for dirpath, _, names in os.walk(os.path.join(base, top)):
            for n in sorted(names):
                o = os.path.join(dirpath, n)
                src = os.path.relpath(o, base)[:-2] + ".c"
                if n.endswith(".o") and src.startswith(s) and \
                        os.path.isfile(os.path.join(root, src)):
                    out[src] = o
    return out


def cycle_text(comp, edges):
    """One way round the component: a [symbols] -> b [symbols] -> ... -> a."""
    members, start = set(comp), comp[0]
    path = [start]

    def walk(v):
        for w in sorted(edges.get(v, ())):
            if w == start and len(path) > 1:
                return True
            if w in members and w not in path:
                path.append(w)
                if walk(w):
                    return True
                path.pop()
        return False
    walk(start)
    path.append(start)
    return " -> ".join(f"{a} [{', '.join(sorted(edges[a][b])[:3])}]"
                       for a, b in zip(path, path[1:])) + f" -> {start}"


def check_symbols(root, build):
    tree = list(files(root))
    for unit, (variant, sources) in UNITS.items():
        if not any(f.startswith(s) for f in tree for s in sources):
            continue
        objs = objects(root, build, variant, sources)
        if not objs:
            problem(f"{unit}: no objects under {build}/obj (build first: make all sim)")
            continue
        defs, undef = {}, {}
        syms = nm(sorted(objs.values()))
        for src, o in sorted(objs.items()):
            undef[src] = set()
            for p in syms[o]:
                if len(p) == 2 and p[0] == "U":
                    undef[src].add(p[1])
                elif len(p) == 3 and p[1] in DEFINED:
                    defs.setdefault(p[2], src)
        edges = collections.defaultdict(dict)
        for src, us in undef.items():
            for s in us:
                d = defs.get(s)
                if d and d != src:
                    edges[src].setdefault(d, set()).add(s)
        for src in sorted(edges):
            a = layer_of(src)
            for dst, syms in sorted(edges[src].items()):
                b = layer_of(dst)
                if a and b and not may_use(a, b):
                    problem(f"{src} calls {dst} ({', '.join(sorted(syms)[:4])}: "
                            f"{why_not(a, b)})")
        for c in scc(set(objs), edges):
            problem(f"{unit}: a cycle of {len(c)} files: {' '.join(c)} "
                    f"(one way round: {cycle_text(c, edges)})")
        if unit == "libgpushim.so":
            check_shim_library(root, build)


def dependencies(dfile):
    """The files a -MMD dependency file says its object was made from."""
    with open(dfile) as fh:
        text = fh.read().replace("\\\n", " ")
    first = text.split("\n", 1)[0]
    return first.partition(":")[2].split()


def check_dependencies(root, build):
    """What the compiler read for each object (its -MMD .d file), against
    the layers: an include the regex cannot see (<...>, through a macro, by a
    path that climbs out and back) is caught here."""
    for unit, (variant, sources) in UNITS.items():
        for src, o in sorted(objects(root, build, variant, sources).items()):
            a, d = layer_of(src), o[:-2] + ".d"
            if a is None or not os.path.isfile(d):
                continue
            for dep in dependencies(d):
                full = os.path.normpath(dep if os.path.isabs(dep) else os.path.join(root, dep))
                if not full.startswith(os.path.normpath(root) + os.sep):
                    continue  # the system's headers
                h = os.path.relpath(full, root)
                b = layer_of(h)
                if b and not may_use(a, b):
                    problem(f"{src} is built from {h} ({why_not(a, b)}; {unit}'s dependency "
                            f"file {os.path.relpath(d, build)})")
                elif src in SCREENS and h == MODEL_STRUCT:
                    problem(f"{src} is built from {h} (a screen of the findings reads "
                            f"struct gs_findings, not the replay's; {unit}'s dependency "
                            f"file {os.path.relpath(d, build)})")


def check_shim_library(root, build):
    so = os.path.join(build, "libgpushim.so")
    if not os.path.isfile(so):
        problem(f"libgpushim.so: not built ({so})")
        return
    # a function's parts the compiler split off (f.cold, f.part.0) count as f
    have = {p[2].split(".")[0] for p in nm([so], True)[so] if len(p) == 3} - {""}
    if not have:
        problem(f"libgpushim.so: no symbol table ({so} stripped?): cannot check what it holds")
        return
    mine = {o: src for src, o in objects(root, build, "", ["analyzer/"]).items()
            if (layer_of(src) or ("", 0, ""))[2] == "analyzer"}
    only = {}
    for o, syms in nm(sorted(mine), True).items():
        for p in syms:
            if len(p) == 3 and p[1] in DEFINED:
                only[p[2]] = mine[o]
    for s in sorted(have):
        if s in only:
            problem(f"libgpushim.so holds {s} (the analyzer's alone: {only[s]})")
        elif DENY_IN_SHIM.match(s):
            problem(f"libgpushim.so holds {s} (a name of the analyzer's alone)")
    for s in REQUIRED_IN_SHIM:
        if s not in have:
            problem(f"libgpushim.so lacks {s} ({so}: the wrong library, or the names changed)")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--build", default="build")
    ap.add_argument("--no-objects", action="store_true", help="includes and headers only")
    ap.add_argument("--warn", action="store_true", help="report, but exit 0")
    a = ap.parse_args()
    build = a.build if os.path.isabs(a.build) else os.path.join(a.root, a.build)
    check_includes(a.root)
    if not a.no_objects:
        check_symbols(a.root, build)
        check_dependencies(a.root, build)
    for p in problems:
        print("layering:", p)
    if problems:
        print(f"layering: {len(problems)} problem(s)" + (" (--warn: not failing)" if a.warn else ""))
        return 0 if a.warn else 1
    print("layering: every include and call goes down a layer; no cycle; "
          "libgpushim.so holds nothing of the analyzer's alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
