"""test_symbols_elsewhere.py - a trace read where its program's file is not
as it was (analyzer/symbols/symbolize.c, --symbols, gs_sym_unnamed): moved
(read on another machine), rebuilt at its path, stripped. The report says
once per module why its frames have no names, and --symbols DIR finds a copy
(as under a sysroot, by file name, in DIR/.build-id/) or a separate debug
file, each taken only with the run's build id; with DEBUGINFOD_URLS a
debuginfod server (here a local one) gives the debug file (libdw's lookup)
or the program itself.

The program is a copy of rt_batch_tensors (tests/progs/rt_batch_tensors.c)
at batch 4: its peak is load_weights' 5 MiB and make_activations' 4 x
1.25 MiB, each made by tensor(). rt_whatif_loop stands for another build (its
build id differs).
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

from harness import E, check, eq, launcher_env


def gpushim(*args, env=None):
    return subprocess.run([E.gpushim, *args], capture_output=True, text=True, timeout=120,
                          env=env)


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    raise AssertionError(f"{path} has no build id: {out}")


def recorded(tmp):
    """A copy of the program at tmp/a/prog, its trace, and a copy kept aside."""
    os.makedirs(os.path.join(tmp, "a"))
    prog = os.path.join(tmp, "a", "prog")
    shutil.copy(E.prog("rt_batch_tensors"), prog)
    trace = os.path.join(tmp, "t.trace")
    env = launcher_env()  # the copy has lost its run path to the simulated CUDA
    env["LD_LIBRARY_PATH"] = os.path.join(E.build, "sim")
    p = subprocess.run([E.gpushim, "run", "-o", trace, "--", prog, "4"], capture_output=True,
                       text=True, env=env, timeout=120)
    eq(p.returncode, 0, p.stderr)
    os.makedirs(os.path.join(tmp, "keep"))
    shutil.copy(prog, os.path.join(tmp, "keep", "prog"))
    return prog, trace


def named(trace, *args, env=None):
    """The report's JSON: whether the peak's sites are named, and the
    modules without names."""
    p = gpushim("report", "--json", *args, trace, env=env)
    eq(p.returncode, 0, p.stderr)
    d = json.loads(p.stdout)
    functions = {f["function"] for s in d["peak"]["sites"] for f in s["frames"]}
    return {"tensor", "make_activations", "load_weights"} <= functions, d["unnamed_modules"]


def test_symbols_of_a_moved_program_from_a_copy():
    tmp = tempfile.mkdtemp(prefix="gpushim-symbols-")
    prog, trace = recorded(tmp)
    os.remove(prog)
    ok, unnamed = named(trace)
    check(not ok, "no names without the file")
    eq([(u["path"], u["why"]) for u in unnamed], [(prog, "not_found")], "said once, and why")
    check(unnamed[0]["addresses"] > 0, f"{unnamed}")
    text = gpushim("report", trace).stdout
    check(f"Without names: 1 module, shown as addresses:\n  {prog}: not found at its path (moved, "
          "or read on another machine); " in text, text)
    check("--symbols DIR finds a copy in DIR" in text, text)
    # a copy by file name, as under a sysroot, by build id
    eq(named(trace, "--symbols", os.path.join(tmp, "keep")), (True, []), "by file name")
    root = os.path.join(tmp, "root")
    os.makedirs(os.path.dirname(root + prog))
    shutil.copy(os.path.join(tmp, "keep", "prog"), root + prog)
    eq(named(trace, "--symbols", root), (True, []), "as under a sysroot")
    bid = build_id(os.path.join(tmp, "keep", "prog"))
    ids = os.path.join(tmp, "ids", ".build-id", bid[:2])
    os.makedirs(ids)
    shutil.copy(os.path.join(tmp, "keep", "prog"), os.path.join(ids, bid[2:]))
    eq(named(trace, "--symbols", os.path.join(tmp, "ids")), (True, []), "by build id")
    # another build in the folder is not taken
    other = os.path.join(tmp, "other")
    os.makedirs(other)
    shutil.copy(E.prog("rt_whatif_loop"), os.path.join(other, "prog"))
    ok, unnamed = named(trace, "--symbols", other)
    eq((ok, [u["why"] for u in unnamed]), (False, ["not_found"]), "a copy of another build")
    # the other commands take --symbols too
    p = gpushim("diff", "--symbols", os.path.join(tmp, "keep"), trace, trace)
    eq(p.returncode, 0, p.stderr)
    check("make_activations" in p.stdout, p.stdout)
    p = gpushim("export", "--format=folded", "--symbols", os.path.join(tmp, "keep"), trace)
    eq(p.returncode, 0, p.stderr)
    check(";make_activations (rt_batch_tensors.c:" in p.stdout, p.stdout)
    p = gpushim("report", "--symbols", os.path.join(tmp, "nothing-here"), trace)
    eq(p.returncode, 2, p.stderr)
    check("is not a folder" in p.stderr, p.stderr)


def test_symbols_of_a_program_rebuilt_at_its_path():
    tmp = tempfile.mkdtemp(prefix="gpushim-symbols-")
    prog, trace = recorded(tmp)
    shutil.copy(E.prog("rt_whatif_loop"), prog)
    ok, unnamed = named(trace)
    eq((ok, [(u["path"], u["why"]) for u in unnamed]), (False, [(prog, "rebuilt")]),
       "nothing from the wrong build")
    check("another build at its path (its build id differs from the run's)"
          in gpushim("report", trace).stdout, "said in the text")
    eq(named(trace, "--symbols", os.path.join(tmp, "keep")), (True, []), "the run's build found")


def strip_with_debug_file(tmp, prog, into):
    """prog stripped, its debug information in into/.build-id/ab/cdef.debug."""
    bid = build_id(prog)
    d = os.path.join(into, ".build-id", bid[:2])
    os.makedirs(d)
    debug = os.path.join(d, bid[2:] + ".debug")
    subprocess.run(["objcopy", "--only-keep-debug", prog, debug], check=True)
    subprocess.run(["strip", prog], check=True)
    return debug


def test_symbols_of_a_stripped_program_from_its_debug_file():
    if not shutil.which("objcopy") or not shutil.which("strip"):
        return "skipped: no binutils (objcopy, strip)"
    tmp = tempfile.mkdtemp(prefix="gpushim-symbols-")
    prog, trace = recorded(tmp)
    strip_with_debug_file(tmp, prog, os.path.join(tmp, "debug"))
    ok, unnamed = named(trace)
    eq((ok, [u["why"] for u in unnamed]), (False, ["stripped"]), "stripped, no debug file")
    eq(named(trace, "--symbols", os.path.join(tmp, "debug")), (True, []),
       "the debug file by build id")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served(url, path):
    """Waits until the server has scanned its folder and serves path."""
    for _ in range(150):
        try:
            with urllib.request.urlopen(url + path, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"debuginfod never served {path}")


def test_symbols_from_a_debuginfod_server():
    if not shutil.which("debuginfod") or not shutil.which("objcopy"):
        return "skipped: no debuginfod server (Debian's debuginfod) or binutils"
    tmp = tempfile.mkdtemp(prefix="gpushim-symbols-")
    prog, trace = recorded(tmp)
    bid = build_id(prog)
    folder = os.path.join(tmp, "served")
    strip_with_debug_file(tmp, prog, folder)
    shutil.copy(os.path.join(tmp, "keep", "prog"), os.path.join(folder, "prog"))
    port = free_port()
    server = subprocess.Popen(["debuginfod", "-F", "-p", str(port), "-d",
                               os.path.join(tmp, "db.sqlite"), folder],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
    try:
        url = f"http://127.0.0.1:{port}"
        served(url, f"/buildid/{bid}/debuginfo")
        served(url, f"/buildid/{bid}/executable")
        env = dict(os.environ, DEBUGINFOD_URLS=url,
                   DEBUGINFOD_CACHE_PATH=os.path.join(tmp, "cache"))
        eq(named(trace, env=env), (True, []), "stripped: the debug file from the server")
        os.remove(prog)
        env["DEBUGINFOD_CACHE_PATH"] = os.path.join(tmp, "cache-2")
        eq(named(trace, env=env), (True, []), "gone: the program itself from the server")
        env.pop("DEBUGINFOD_URLS")
        env["DEBUGINFOD_CACHE_PATH"] = os.path.join(tmp, "cache-3")
        eq([u["why"] for u in named(trace, env=env)[1]], ["not_found"], "and not without it")
    finally:
        server.terminate()
        server.wait(timeout=30)
