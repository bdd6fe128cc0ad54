"""test_roles.py - memory by role (analyzer/findings/roles.c) on a training
loop whose roles are known (tests/progs/drv_roles.c): each rule once,
exact bytes at the peak and at the out-of-memory failure; the leak that no
rule explains is unclassified; a caching allocator's segments get no roles,
and the reason.
"""
import os
import subprocess
import tempfile

from harness import E, MiB, check, eq, one_trace, report, report_json, run

ROLES = ["parameters", "optimizer_state", "gradients", "activations", "temporaries",
         "workspace", "unclassified"]


def by_role(d, **mib):
    return {k: mib.get(k, 0) * MiB for k in ROLES}


def test_each_role_at_the_peak_and_at_the_oom():
    stub = os.path.join(E.build, "progs", "fw", "libcublasLt.so.13")
    r = run([E.prog("drv_roles"), stub], env={"SIMCUDA_MEMORY": "64M"})
    eq((r.rc, r.out), (0, "roles done\n"), f"the program: {r.err}")
    d = report_json(one_trace(r))
    eq(d["peak"]["bytes"], 28 * MiB, "peak")
    eq(d["roles"], {"not_told": None,
                    "at_peak": by_role(d, parameters=8, optimizer_state=8, gradients=4,
                                       activations=2, temporaries=2, workspace=1,
                                       unclassified=3)}, "by role at the peak")
    eq([f["roles"] for f in d["failures"]],
       [by_role(d, parameters=8, optimizer_state=8, gradients=4, activations=2, workspace=1,
                unclassified=3)], "by role at the OOM")
    text = report(one_trace(r)).stdout
    for want in ["By role at the peak: 29 % parameters 8.00 MiB, 29 % optimizer state 8.00 MiB, "
                 "14 % gradients 4.00 MiB, 11 % unclassified 3.00 MiB, 7 % activations 2.00 MiB, "
                 "7 % temporaries 2.00 MiB, 4 % workspace 1.00 MiB\n",
                 "             by role then: 31 % parameters 8.00 MiB, 31 % optimizer state "
                 "8.00 MiB, 15 % gradients 4.00 MiB, 12 % unclassified 3.00 MiB, 8 % activations "
                 "2.00 MiB, 4 % workspace 1.00 MiB\n"]:
        check(want in text, f"the text has {want!r}:\n{text}")
    html = os.path.join(tempfile.mkdtemp(prefix="gpushim-roles-"), "r.html")
    p = subprocess.run([E.gpushim, "export", "--format=html", "-o", html, one_trace(r)],
                       capture_output=True, text=True)
    eq(p.returncode, 0, f"export: {p.stderr}")
    with open(html) as f:
        check('id="s-roles">29 % parameters 8.00 MiB, 29 % optimizer state' in f.read(),
              "the HTML's summary has the roles at the peak")
    # the regression gate takes a role's bytes at the peak
    p = report(one_trace(r), "--fail-if", "activations>1MiB", "--fail-if",
               "optimizer_state>8MiB")
    eq((p.returncode, p.stderr.splitlines()),
       (3, ["gpushim report: --fail-if 'activations>1MiB' broken: activations 2.00 MiB, over "
            "1.00 MiB; most of it at the peak: alloc (drv_roles.c:43) from forward "
            "(drv_roles.c:60), 2.00 MiB"]), "one limit broken, naming the site")


def test_segments_of_a_caching_allocator_get_no_roles():
    # PyTorch's library on the stack, with its default settings: segments
    r = run([E.prog("drv_framework"), os.path.join(E.build, "progs", "fw", "libc10_cuda.so")])
    eq(r.rc, 0, f"the program: {r.err}")
    d = report_json(one_trace(r))
    eq(d["roles"]["at_peak"], None, "no roles for segments")
    check("caching allocator's segments" in (d["roles"]["not_told"] or ""),
          f"and why: {d['roles']}")
    text = report(one_trace(r)).stdout
    check("By role: not told: the driver allocations are a caching allocator's segments" in text,
          f"the text says why:\n{text}")
    p = report(one_trace(r), "--fail-if", "activations>1MiB")
    eq(p.returncode, 3, "a limit that cannot be checked fails the gate")
    check("--fail-if 'activations>1MiB' cannot be checked: the driver allocations are a "
          "caching allocator's segments" in p.stderr, f"and says why: {p.stderr}")
