"""test_roles.py - memory by role (analyzer/findings/roles.c) on a training
loop whose roles are known (tests/progs/drv_roles.c): each rule once,
exact bytes at the peak and at the out-of-memory failure; the leak that no
rule explains is unclassified, and why; the demo (examples/sim_training.c)
as its program says, its gate on activations broken; a program that marks
its steps and names no phase gets the roles its lifetimes tell and no
finer (drv_growth.c); a caching allocator's segments get no roles, and the
reason.
"""
import os
import subprocess
import tempfile

from harness import E, MiB, check, eq, one_trace, report, report_json, run

ROLES = ["parameters", "optimizer_state", "gradients", "activations", "temporaries",
         "workspace", "parameters_or_optimizer_state", "activations_or_temporaries",
         "unclassified"]
KEPT = "made in forward and never freed, kept past its backward (a leak suspect, or kept on purpose)"


def by_role(d, **mib):
    return {k: mib.get(k, 0) * MiB for k in ROLES}


def test_each_role_at_the_peak_and_at_the_oom():
    stub = os.path.join(E.build, "progs", "fw", "libcublasLt.so.13")
    r = run([E.prog("drv_roles"), stub], env={"SIMCUDA_MEMORY": "64M"})
    eq((r.rc, r.out), (0, "roles done\n"), f"the program: {r.err}")
    d = report_json(one_trace(r))
    eq(d["peak"]["bytes"], 28 * MiB, "peak")
    note = f"unclassified 3.00 MiB, all of it at alloc (drv_roles.c:43) from forward " \
           f"(drv_roles.c:61): {KEPT}"
    eq(d["roles"], {"not_told": None, "basis": "phases",
                    "at_peak": by_role(d, parameters=8, optimizer_state=8, gradients=4,
                                       activations=2, temporaries=2, workspace=1,
                                       unclassified=3),
                    "note": note}, "by role at the peak")
    eq([f["roles"] for f in d["failures"]],
       [by_role(d, parameters=8, optimizer_state=8, gradients=4, activations=2, workspace=1,
                unclassified=3)], "by role at the OOM")
    text = report(one_trace(r)).stdout
    for want in ["By role at the peak: 29 % parameters 8.00 MiB, 29 % optimizer state 8.00 MiB, "
                 "14 % gradients 4.00 MiB, 11 % unclassified 3.00 MiB, 7 % activations 2.00 MiB, "
                 "7 % temporaries 2.00 MiB, 4 % workspace 1.00 MiB\n",
                 f"  ({note})\n",
                 "             by role then: 31 % parameters 8.00 MiB, 31 % optimizer state "
                 "8.00 MiB, 15 % gradients 4.00 MiB, 12 % unclassified 3.00 MiB, 8 % activations "
                 "2.00 MiB, 4 % workspace 1.00 MiB\n"]:
        check(want in text, f"the text has {want!r}:\n{text}")
    html = os.path.join(tempfile.mkdtemp(prefix="gpushim-roles-"), "r.html")
    p = subprocess.run([E.gpushim, "export", "--format=html", "-o", html, one_trace(r)],
                       capture_output=True, text=True)
    eq(p.returncode, 0, f"export: {p.stderr}")
    with open(html) as f:
        page = f.read()
    check('id="s-roles">29 % parameters 8.00 MiB, 29 % optimizer state' in page,
          "the HTML's summary has the roles at the peak")
    check(f"4 % workspace 1.00 MiB; {note}" in page.replace("&#39;", "'"),
          "and the same note as the text")
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


def test_the_demo_by_role_as_its_program_says():
    # examples/sim_training.c: phases as ranges, Adam's state made in the
    # first optimizer step; at the peak (the OOM of step 22) 12 x 200 MiB of
    # weights, 24 x 200 MiB of Adam's state, step 22's 12 x 300 MiB of
    # activations and 21 x 256 MiB of losses kept by mistake
    r = run([os.path.join(E.build, "examples", "sim_training")])
    eq(r.rc, 1, f"the demo dies of out of memory: {r.err}")
    trace = one_trace(r)
    d = report_json(trace)
    eq((d["roles"]["basis"], d["roles"]["at_peak"]),
       ("phases", by_role(d, parameters=12 * 200, optimizer_state=24 * 200,
                          activations=12 * 300, unclassified=21 * 256)), "roles at the peak")
    check(d["roles"]["note"].endswith("from log_loss (sim_training.c:72): " + KEPT),
          d["roles"]["note"])
    p = report(trace, "--fail-if", "activations>1GiB")
    eq((p.returncode, p.stderr.splitlines()),
       (3, ["gpushim report: --fail-if 'activations>1GiB' broken: activations 3.52 GiB, over "
            "1.00 GiB; most of it at the peak: device_alloc (sim_training.c:48) from forward "
            "(sim_training.c:66), 3.52 GiB"]), "the gate the README gives fails")


def test_steps_without_phases_tell_held_from_step_local_and_no_more():
    # drv_growth.c marks its steps and names no phase: its weights and
    # optimizer state, made before the first step, are held; its
    # activations live within a step; its leak (kept every step) and its
    # cache (filled in three steps) are unclassified
    r = run([E.prog("drv_growth"), "marks", "none"])
    eq(r.rc, 0, f"the program: {r.err}")
    d = report_json(one_trace(r))
    roles = d["roles"]
    eq(roles["basis"], "lifetimes", "told from lifetimes")
    # at the peak (step 12's activation, drv_growth.c): weights 8 MiB and
    # optimizer state 4 held; the activation's 6 step-local; the leak's 6
    # and the cache's 3 unclassified
    eq(roles["at_peak"], by_role(d, parameters_or_optimizer_state=12, activations_or_temporaries=6,
                                 unclassified=9), "held, step-local, and no finer role")
    check(roles["note"].startswith("told from lifetimes alone: no forward, backward or optimizer "
                                   "phase was seen"), roles["note"])
    check(roles["note"].endswith("unclassified 9.00 MiB, 6.00 MiB of it at log_loss "
                                 "(drv_growth.c:51) from train_step (drv_growth.c:73): made in "
                                 "steps past the first and never freed (a leak suspect, or a "
                                 "cache)"), roles["note"])
    p = report(one_trace(r), "--fail-if", "activations>1MiB")
    eq(p.returncode, 3, "a gate on activations cannot be checked: broken")
    check("--fail-if 'activations>1MiB' cannot be checked: no forward, backward or optimizer "
          "phase was seen" in p.stderr, p.stderr)
    p = report(one_trace(r), "--fail-if", "parameters_or_optimizer_state>1GiB")
    eq((p.returncode, p.stderr), (0, ""), "a gate on what is told is checked")
