"""test_python_ffi.py - allocations made through a foreign function
interface (issue 42 item 2): ctypes (PyDLL with the GIL held, CDLL with it
released) and cffi (ABI mode, and API mode's generated wrappers) carry the
call from Python to C in frames of their own (libffi's trampoline, which
Debian ships stripped, ctypes' _ctypes_callproc, cffi's cdata_call and
_cffi_f_NAME). Those go with the interpreter's: a site leads with the C
function called when it is the program's (clib.c), else with the Python
line; no screen shows them, and libffi is not listed "without names" unless
a screen shows its frames (--native).

The program, tests/progs/python/foreign.py, allocates 1 to 5 MiB once
each way; every site is checked by exact frames (function, file, line) in
JSON, and by its lines in text, folded and the HTML page's legends. ctypes
runs with every python3 found (test_python.py's pythons()); cffi with
Debian's python3, where python3-cffi is (make test-deps).
"""
import os
import re
import subprocess

from harness import E, MiB, check, eq, one_trace, report, report_json, run, shown_path
from test_export_html import export_html
from test_python import PROGS, at, for_version, libcuda, machinery, prog, py_env, pythons

CLIB_SRC = os.path.join(PROGS, "clib.c")
DEBIAN = "/usr/bin/python3"


def clib():
    """clib.c as a shared library, linked with the simulated driver."""
    out = os.path.join(E.build, "pyext", "libgscall.so")
    sim = os.path.join(E.build, "sim")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(CLIB_SRC):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer", "-Wall",
                        "-Wextra", "-Werror", CLIB_SRC, "-o", out, "-L" + sim, "-Wl,-rpath," + sim,
                        "-lcuda"], check=True)
    return out


def cffi_api_module():
    """The API-mode module _gsffi_api, compiled by cffi for Debian's python3
    (its wrapper _cffi_f_cuMemAlloc_v2 calls the driver); its folder."""
    out = os.path.join(E.build, "pyext", "cffi")
    sim = os.path.join(E.build, "sim")
    os.makedirs(out, exist_ok=True)
    code = ("import cffi, sys\n"
            "ffi = cffi.FFI()\n"
            "ffi.cdef('int cuMemAlloc_v2(unsigned long long *p, size_t size);')\n"
            "ffi.set_source('_gsffi_api', 'int cuMemAlloc_v2(unsigned long long *p, size_t size);',"
            " libraries=['cuda'], library_dirs=[sys.argv[2]],"
            " extra_link_args=['-Wl,-rpath,' + sys.argv[2]])\n"
            "ffi.compile(tmpdir=sys.argv[1])\n")
    p = subprocess.run([DEBIAN, "-c", code, out, sim], capture_output=True, text=True)
    eq(p.returncode, 0, f"cffi's compile of _gsffi_api: {p.stderr}")
    return out


def has_cffi(py):
    return subprocess.run([py, "-c", "import cffi"], capture_output=True).returncode == 0


def c_line(marker):
    with open(CLIB_SRC) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("/* site: " + marker + " */"):
                return n
    raise AssertionError(f"no '/* site: {marker} */' in clib.c")


def outer(marker):
    return [at("foreign.py", "run_all", marker), at("foreign.py", "main", "main"),
            at("foreign.py", "<module>", "module")]


# bytes -> (the native frames leading the site, its Python frames, gil)
def expected():
    c_native = [("c_stage", CLIB_SRC, c_line("stage")),
                ("c_alloc", CLIB_SRC, c_line("c_alloc"))]
    through_c = [at("foreign.py", "through_ctypes_c", "ctypes c")] + outer("run ctypes c")
    return {
        1 * MiB: ([], [at("foreign.py", "through_ctypes_driver", "ctypes driver")]
                  + outer("run ctypes driver"), True),
        2 * MiB: (c_native, through_c, True),
        3 * MiB: (c_native, through_c, False),
        4 * MiB: ([], [at("foreign.py", "through_cffi_abi", "cffi abi")] + outer("run cffi abi"),
                  None),
        5 * MiB: ([], [at("foreign.py", "through_cffi_api", "cffi api")] + outer("run cffi api"),
                  None),
    }


# what would show an FFI frame: its module or its function
FFI_WORDS = ("libffi.so", "_ctypes.", "_ctypes_callproc", "PyCFuncPtr_call", "_cffi_backend",
             "_cffi_f_", "cdata_call", "ffi_call")


def no_ffi(text, what):
    for w in FFI_WORDS:
        check(w not in text, f"{what}: no FFI frame ({w!r} shown)")


def run_ffi(py):
    api = cffi_api_module() if py == DEBIAN and has_cffi(py) else None
    argv = [py, prog("foreign.py"), libcuda(), clib()] + ([api] if api else [])
    r = run(argv, env=dict(py_env(), PYTHONPATH=PROGS))
    eq((r.rc, r.err), (0, ""), f"{py}: the run")
    return r


def frames_of(site):
    return ([(f["function"], f["file"], f["line"]) for f in site["frames"]
             if f["language"] == "native"],
            [(f["function"], f["file"], f["line"]) for f in site["frames"]
             if f["language"] == "python"])


def test_ffi_frames_go_with_the_interpreters():
    ran_cffi = False
    for py in pythons():
        r = run_ffi(py)
        sizes = [int(n) for n in r.out.split()]
        check(sizes[:3] == [1, 2, 3], f"{py}: the ctypes ways ran: {r.out!r}")
        if py == DEBIAN and has_cffi(py):
            eq(sizes, [1, 2, 3, 4, 5], f"{py}: cffi's two ways ran too")
            ran_cffi = True
        want = expected()
        d = report_json(one_trace(r))
        leaks = d["leaks"]["sites"]
        eq([s["bytes"] for s in leaks], sorted((n * MiB for n in sizes), reverse=True),
           f"{py}: a site each way")
        for s in leaks:
            native, python, gil = want[s["bytes"]]
            what = f"{py}: {s['bytes'] // MiB} MiB"
            eq(frames_of(s), (native, for_version(py, python)),
               f"{what}: the C function called, then the Python lines; nothing of the FFI's")
            if gil is not None:
                eq(s["gil"], gil, f"{what}: the GIL held or released")
            check(not any(machinery(f) for f in s["frames"] if f["language"] == "native"),
                  f"{what}: no interpreter or FFI frame")
        eq(d["unnamed_modules"], [], f"{py}: nothing shown without a name (libffi's frames "
                                     "are not shown)")
    check(ran_cffi, f"cffi ran with {DEBIAN} (python3-cffi: make test-deps)")


def test_ffi_sites_in_text_folded_and_html():
    py = DEBIAN if has_cffi(DEBIAN) else pythons()[0]
    r = run_ffi(py)
    trace = one_trace(r)
    want = expected()
    text = report(trace).stdout
    check("Without names" not in text, "libffi's trampolines are not shown, so not listed")
    no_ffi(text, "text")
    lines = text.splitlines()
    at_leaks = next(i for i, l in enumerate(lines) if l.startswith("Unfreed at the end"))
    heads = [l for l in lines[at_leaks + 1:] if re.match(r"^ +[\d.]+ MiB in ", l)]
    for line in heads:
        mib = int(float(line.split()[0]))
        native, python, _ = want[mib * MiB]
        fn, file, n = (native or for_version(py, python))[0]
        check(line.endswith(f"  at {fn}  {shown_path(file)}:{n}"),
              f"{mib} MiB leads with {fn} at {file}:{n}: {line!r}")
    # a C function's frames by the innermost and a count, when they do not all fit
    short = report(trace, "--frames", "3").stdout.splitlines()
    i = next(k for k, l in enumerate(short) if l.startswith("      2.00 MiB in "))
    lead = " " * 40
    fn, file, n = for_version(py, want[2 * MiB][1])[0]
    eq(short[i + 1:i + 4], [f"{lead}  ... 1 native frame", f"{lead}  from {fn}  {shown_path(file)}:{n}",
                            f"{lead}  from run_all  {shown_path(prog('foreign.py'))}:"
                            f"{want[2 * MiB][1][1][2]}"], "--frames 3: c_alloc counted")
    # --native shows the FFI's frames, and so names libffi among those without names
    native = report(trace, "--native").stdout
    check("Without names" in native and "libffi.so" in native.split("Without names")[1],
          "--native: libffi's trampoline shown, and listed without names")
    # folded stacks: outermost first, the same frames
    p = subprocess.run([E.gpushim, "export", "--format=folded", trace], capture_output=True,
                       text=True)
    eq(p.returncode, 0, p.stderr)
    check(p.stdout, "folded: stacks")
    no_ffi(p.stdout, "folded")
    check(any(l.split(";")[-1].startswith("through_ctypes_driver") for l in p.stdout.splitlines()),
          "folded: a ctypes call of the driver ends at its Python line")
    # the HTML page's legends name each site by its two innermost frames
    _, html, _ = export_html(trace)
    no_ffi(html, "HTML")
    fn, file, n = for_version(py, want[1 * MiB][1])[0]
    fn2, _, n2 = for_version(py, want[1 * MiB][1])[1]
    check(f"{fn} (foreign.py:{n}) from {fn2} (foreign.py:{n2})" in html,
          "HTML: the ctypes call of the driver is its Python lines")
