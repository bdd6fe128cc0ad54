"""test_python_layout.py - the layouts shim/record/pylayout.c reads frames with,
against each interpreter's own headers: tests/unit/test_pylayout.c built
and run once per CPython on the machine (3.9 to 3.12: the written-in
tables; 3.13 and later: what the shim makes of the debug offsets in the
running interpreter's _PyRuntime, compared with the headers' offsetof)."""
import os
import subprocess

from harness import E, check, eq
from test_python import pythons, version

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def test_each_interpreters_layout_is_what_its_headers_say():
    tried = 0
    for py in pythons():
        q = subprocess.run([py, "-c", "import sysconfig as s; print(s.get_paths()['include']); "
                            "print(s.get_config_var('LIBDIR')); print(s.get_config_var('LDLIBRARY'))"],
                           capture_output=True, text=True, check=True).stdout.split("\n")
        include, libdir, ldlib = q[0], q[1], q[2]
        if not os.path.exists(os.path.join(include, "internal")):
            continue  # no internal headers installed with this one
        major, minor = version(py)
        out = os.path.join(E.build, "pylayout", f"{major}.{minor}")
        os.makedirs(out, exist_ok=True)
        exe = os.path.join(out, "test_pylayout")
        link = []
        if minor >= 13:
            check(ldlib.endswith(".so") or ".so." in ldlib, f"{py}: a shared libpython ({ldlib})")
            # linked though nothing names it: the test finds _PyRuntime with dlsym
            link = ["-L" + libdir, "-Wl,-rpath," + libdir, "-Wl,--no-as-needed",
                    f"-lpython{major}.{minor}", "-ldl"]
        p = subprocess.run(["cc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Iinclude", "-I.",
                            "-isystem", include, "-DGS_PYTHON_HEADERS",
                            "tests/unit/test_pylayout.c", "shim/record/pylayout.c", "-o", exe,
                            "-lcriterion"] + link, cwd=ROOT, capture_output=True, text=True)
        eq(p.returncode, 0, f"{py}: building test_pylayout.c: {p.stderr}")
        r = subprocess.run([exe, "--verbose"], capture_output=True, text=True)
        eq(r.returncode, 0, f"{py}: {r.stderr}")
        check("Tested: 1 | Passing: 1 |" in r.stderr, f"{py}: the comparison ran: {r.stderr}")
        tried += 1
    check(tried >= 1, "at least one interpreter with its headers")
