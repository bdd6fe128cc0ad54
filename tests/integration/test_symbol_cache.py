"""test_symbol_cache.py - the symbol cache (analyzer/symbols/symcache.c,
docs/commands.md "Symbols"): an analysis keeps the frames it found in a
module's DWARF in DIR/<build id>.syms, and the next analysis of a run of
that build answers from it without opening the module: the same report,
byte for byte, and names even once the program's file is gone. A damaged
file is read as if absent and written again whole; answers from a symbol
table alone are not kept; the folder is GPUSHIM_SYMBOL_CACHE, else
$XDG_CACHE_HOME/gpushim/symbols, else ~/.cache/gpushim/symbols, and "off"
keeps nothing. A folder that cannot be made is said once; the report is
unchanged.

The program is a copy of rt_batch_tensors at batch 4 (test_symbols_elsewhere.py
records it): its peak's sites are tensor() under load_weights and
make_activations.
"""
import json
import os
import shutil
import stat
import subprocess
import tempfile

from harness import E, check, eq, launcher_env
from test_symbols_elsewhere import build_id, named, recorded


def report(trace, cache, home=None):
    """report --json with GPUSHIM_SYMBOL_CACHE=cache, or, with home, unset
    (and XDG_CACHE_HOME too) and home's variables set."""
    env = dict(os.environ)
    env.pop("GPUSHIM_SYMBOL_CACHE")
    env.pop("XDG_CACHE_HOME", None)
    env.update(home if home is not None else {"GPUSHIM_SYMBOL_CACHE": cache})
    p = subprocess.run([E.gpushim, "report", "--json", trace], capture_output=True, text=True,
                       timeout=120, env=env)
    eq(p.returncode, 0, p.stderr)
    return p


def test_symbol_cache_names_a_program_that_is_gone():
    tmp = tempfile.mkdtemp(prefix="gpushim-symcache-")
    prog, trace = recorded(tmp)
    cache = os.path.join(tmp, "cache")
    off = report(trace, "off").stdout
    cold = report(trace, cache)
    eq(cold.stdout, off, "the first analysis with a cache: the report without one")
    eq(cold.stderr, "", "nothing said")
    kept = os.path.join(cache, build_id(prog) + ".syms")
    check(os.path.exists(kept), f"the program's answers kept: {os.listdir(cache)}")
    eq(stat.S_IMODE(os.stat(kept).st_mode), 0o600, "the file's mode")
    eq(stat.S_IMODE(os.stat(cache).st_mode), 0o700, "the folder's mode")
    with open(kept, "rb") as f:
        first = f.read()
    eq(report(trace, cache).stdout, off, "answered from the cache: the same report")
    os.remove(prog)
    eq(report(trace, cache).stdout, off, "the program gone: still the same report, named")
    eq(named(trace, env=dict(os.environ, GPUSHIM_SYMBOL_CACHE=cache))[0], True, "named")
    ok, unnamed = named(trace)  # the harness's: off
    eq((ok, [u["why"] for u in unnamed]), (False, ["not_found"]), "without the cache, no names")
    with open(kept, "rb") as f:
        eq(f.read(), first, "nothing new to keep: the file as it was")


def test_symbol_cache_damaged_file_is_written_again():
    tmp = tempfile.mkdtemp(prefix="gpushim-symcache-")
    prog, trace = recorded(tmp)
    cache = os.path.join(tmp, "cache")
    off = report(trace, cache).stdout
    kept = os.path.join(cache, build_id(prog) + ".syms")
    with open(kept, "rb") as f:
        good = f.read()
    for at in (0, 45, len(good) // 2, len(good) - 1):
        bad = bytearray(good)
        bad[at] ^= 0x40
        with open(kept, "wb") as f:
            f.write(bad)
        p = report(trace, cache)
        eq(p.stdout, off, f"byte {at} of {len(good)} flipped: the report as before")
        eq(p.stderr, "", "nothing said")
        with open(kept, "rb") as f:
            eq(f.read(), good, f"byte {at} flipped: the file written again, whole")
    with open(kept, "wb") as f:
        f.write(good[:len(good) // 3])
    eq(report(trace, cache).stdout, off, "cut short: the report as before")
    with open(kept, "rb") as f:
        eq(f.read(), good, "cut short: written again")


def test_symbol_cache_keeps_no_answers_from_a_symbol_table():
    # stripped of its DWARF, the program names its functions from .symtab
    # (strip --strip-debug keeps it): answers that a debug file installed
    # later would better, so none are kept
    tmp = tempfile.mkdtemp(prefix="gpushim-symcache-")
    prog, trace = recorded(tmp)
    subprocess.run(["strip", "--strip-debug", prog], check=True)
    cache = os.path.join(tmp, "cache")
    eq(named(trace, env=dict(os.environ, GPUSHIM_SYMBOL_CACHE=cache)), (True, []),
       "named from the symbol table")
    bid = build_id(prog)
    eq([f for f in (os.listdir(cache) if os.path.isdir(cache) else []) if f.startswith(bid)], [],
       "nothing kept for the stripped program")


def test_symbol_cache_folder_from_the_environment():
    tmp = tempfile.mkdtemp(prefix="gpushim-symcache-")
    prog, trace = recorded(tmp)
    name = build_id(prog) + ".syms"
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    off = report(trace, "off").stdout
    eq(report(trace, None, home={"HOME": home}).stdout, off, "HOME's")
    check(os.path.exists(os.path.join(home, ".cache", "gpushim", "symbols", name)),
          "in ~/.cache/gpushim/symbols")
    xdg = os.path.join(tmp, "xdg")
    eq(report(trace, None, home={"HOME": home, "XDG_CACHE_HOME": xdg}).stdout, off, "XDG's")
    check(os.path.exists(os.path.join(xdg, "gpushim", "symbols", name)),
          "in $XDG_CACHE_HOME/gpushim/symbols")
    shutil.rmtree(home)
    os.makedirs(home)
    p = subprocess.run([E.gpushim, "report", "--json", trace], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, HOME=home, GPUSHIM_SYMBOL_CACHE="off"))
    eq((p.returncode, p.stdout), (0, off), "off")
    eq(os.listdir(home), [], "off: nothing made")


def test_symbol_cache_folder_that_cannot_be_made_is_said_once():
    tmp = tempfile.mkdtemp(prefix="gpushim-symcache-")
    prog, trace = recorded(tmp)
    plain = os.path.join(tmp, "plain")
    with open(plain, "w") as f:
        f.write("a file, not a folder")
    off = report(trace, "off").stdout
    p = report(trace, os.path.join(plain, "cache"))
    eq(p.stdout, off, "the report as without a cache")
    eq(p.stderr, f"gpushim: cannot write the symbol cache in {plain}/cache: Not a directory "
       "(GPUSHIM_SYMBOL_CACHE)\n", "said once, on stderr")


def test_a_fifo_in_the_cache_is_no_entry():
    # A FIFO where the program's entry would be: opening it waited for a
    # writer forever. It is read as absent (not a regular file), the report
    # the same as without a cache, and an entry made whole takes its place,
    # as for a damaged one.
    tmp = tempfile.mkdtemp(prefix="gpushim-symcache-")
    prog, trace = recorded(tmp)
    cache = os.path.join(tmp, "cache")
    os.mkdir(cache, 0o700)
    fifo = os.path.join(cache, build_id(prog) + ".syms")
    os.mkfifo(fifo, 0o600)
    eq(report(trace, cache).stdout, report(trace, "off").stdout, "the report, as without a cache")
    check(stat.S_ISREG(os.stat(fifo).st_mode), "a whole entry in its place")


def forged(tmp, victim):
    """The program built again with other names for its functions and the
    victim's build id (ld --build-id=0x...), run under the shim from
    tmp/evil/prog: the trace an attacker would hand over."""
    os.makedirs(os.path.join(tmp, "evil"))
    prog = os.path.join(tmp, "evil", "prog")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run(
        [os.environ.get("CC", "cc"), "-std=gnu11", "-O1", "-g", "-fno-omit-frame-pointer",
         "-I" + os.path.join(root, "include"), "-I" + root, "-Dtensor=forged_tensor",
         "-Dload_weights=forged_weights", "-Dmake_activations=forged_activations",
         os.path.join(root, "tests", "progs", "rt_batch_tensors.c"), "-o", prog,
         "-L" + os.path.join(E.build, "sim"), "-lcudart", "-ldl", "-lpthread",
         "-Wl,--build-id=0x" + build_id(victim)], capture_output=True, text=True)
    eq(p.returncode, 0, p.stderr)
    eq(build_id(prog), build_id(victim), "the forged build id")
    trace = os.path.join(tmp, "evil.trace")
    env = launcher_env()
    env["LD_LIBRARY_PATH"] = os.path.join(E.build, "sim")
    p = subprocess.run([E.gpushim, "run", "-o", trace, "--", prog, "4"], capture_output=True,
                       text=True, env=env, timeout=120)
    eq(p.returncode, 0, p.stderr)
    return prog, trace


def functions(stdout):
    d = json.loads(stdout)
    return {f["function"] for s in d["peak"]["sites"] for f in s["frames"]}


def test_a_forged_build_id_cannot_poison_the_cache():
    # A trace naming an ELF that carries the victim's build id: its answers
    # are kept as read from that file, and the victim's own traces are
    # named from the victim's file, then from its entry once the file is
    # gone, never with the forged names.
    tmp = tempfile.mkdtemp(prefix="gpushim-symcache-")
    prog, trace = recorded(tmp)
    evil, evil_trace = forged(tmp, prog)
    cache = os.path.join(tmp, "cache")
    off = report(trace, "off").stdout
    check({"load_weights", "make_activations"} <= functions(off), off)
    check({"forged_weights", "forged_activations"} <= functions(report(evil_trace, cache).stdout),
          "the forged trace is named from the forged file")
    eq(report(trace, cache).stdout, off, "the victim's trace: its own names, not the forged ones")
    eq(report(evil_trace, cache).stdout, report(evil_trace, "off").stdout,
       "and the forged trace still its own")
    eq(report(trace, cache).stdout, off, "the victim's again, after the forged one wrote")
    os.remove(prog)
    eq(report(trace, cache).stdout, off, "the victim's file gone: named from its own entry")
    check("forged_weights" in report(evil_trace, cache).stdout, "the forged one writes again")
    gone = functions(report(trace, cache).stdout)
    check(not gone & {"forged_weights", "forged_activations", "load_weights"},
          f"the victim's file gone and its entry replaced: no names, and none forged: {gone}")
    os.remove(evil)
