"""test_lifecycle.py - the process around the allocations (issue 3): fork,
exec, many threads, programs that are not CUDA programs, and NVIDIA's real
runtime in front of the simulated driver.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import E, KiB, MiB, check, eq, one_trace, report_json, run, same_behaviour


# LeakSanitizer, in a sanitized build, cannot stop a forked child's threads and says so.
NO_LSAN = {"ASAN_OPTIONS": "detect_leaks=0"}


def test_fork_children_trace_their_own_events_only():
    r = same_behaviour([E.prog("drv_fork")], env=NO_LSAN)
    eq(r.out, "reaped 20 children\n", "output")
    traces = [report_json(t) for t in r.files]
    parent = [d for d in traces if d["process"]["command"].endswith("drv_fork")
              and d["leaks"]["bytes"] == MiB]
    children = [d for d in traces if d not in parent]
    eq(len(parent), 1, f"the parent's trace among {len(traces)}")
    p = parent[0]
    eq(p["trace"]["complete"], True, "the parent's trace is whole")
    eq(p["events"]["allocations"] - p["events"]["frees"], 1, "the parent's live allocations")
    eq(len(children), 10, "one trace per child that allocated; none for the others")
    # the main thread's name is the program's, valgrind's own under valgrind (memcheck-amd64-)
    name = "drv_fork"
    if E.valgrind:
        name = next(iter(children[0]["leaks"]["sites"][0]["threads"]), {}).get("name") or ""
        check(name.startswith(E.valgrind + "-"), f"under valgrind, its name: {name!r}")
    for d in children:
        eq((d["events"]["allocations"], d["events"]["frees"], d["trace"]["complete"]), (1, 0, True),
           "a child's own events")
        eq([(s["bytes"], s["frames"][0]["function"], s["threads"]) for s in d["leaks"]["sites"]],
           [(64 * KiB, "child_alloc", [{"name": name, "allocations": 1}])],
           "a child's allocation, by its thread named anew in the child's trace")
        check(d["process"]["ppid"] == p["process"]["pid"], "the child names its parent")


def test_clone_children_trace_their_own_events_only():
    # drv_clone.c: children made by clone() without CLONE_VM run no atfork
    # handler; each used to die at its first recorded call (the parent's
    # ring, mapped MADV_DONTFORK, is not in it). Each now lets go of the
    # parent's trace there and writes its own, as a fork child does.
    bare = run([E.prog("drv_clone")], shim=False, env=NO_LSAN)
    r = run([E.prog("drv_clone")], env=NO_LSAN)
    eq((r.rc, r.out, bare.rc, bare.out), (0, "2 children exited 0\n") * 2, "as without the shim")
    if not E.sanitized:  # ASan warns of the child's own stack, naming pids and addresses
        eq(r.err, bare.err, "stderr under the shim")
    traces = [report_json(t) for t in r.files]
    parent = [d for d in traces if d["leaks"]["bytes"] == MiB]
    children = [d for d in traces if d not in parent]
    eq(len(parent), 1, f"the parent's trace among {len(traces)}")
    p = parent[0]
    eq((p["trace"]["complete"], p["events"]["allocations"], p["events"]["frees"]), (True, 1, 0),
       "the parent's trace, whole, its own allocation alone")
    eq(len(children), 2, "a trace for each child")
    for d in children:
        eq((d["events"]["allocations"], d["events"]["frees"], d["trace"]["complete"],
            d["trace"]["ending"]), (1, 0, True, "finished"), "a child's own events")
        eq([(s["bytes"], s["frames"][0]["function"]) for s in d["leaks"]["sites"]],
           [(64 * KiB, "child_alloc")], "a child's allocation")
        eq(d["process"]["ppid"], p["process"]["pid"], "the child names its parent")


def test_every_way_a_process_or_thread_starts():
    # drv_starts.c: fork; vfork then exec; clone(CLONE_VM | CLONE_VFORK) then
    # exec, as posix_spawn does; clone without CLONE_VM; posix_spawn and
    # posix_spawnp; system(); each of the eight exec forms after a fork; a
    # thread of 16 KiB of stack; a signal handler on an alternate stack.
    # Each child or image allocates N MiB of its own: sixteen traces, each
    # whole, each with its own allocation alone; the parent's with its own
    # three (1, 17 and 18 MiB), none of its children's.
    if E.wrapper:
        return "valgrind runs each new image outside the tool's control"
    env = dict(NO_LSAN, DRV_STARTS_STACK_KIB="256" if E.sanitized else None)
    bare = run([E.prog("drv_starts")], shim=False, env=env)
    r = run([E.prog("drv_starts")], env=env, output="%p.trace")
    eq((r.rc, r.out, bare.rc, bare.out), (0, "15 of 15 children exited 0\n") * 2,
       f"as without the shim: {r.err}")
    if not E.sanitized:
        eq(r.err, bare.err, "stderr under the shim")
    got = {}
    for t in r.files:
        d = report_json(t)
        eq((d["complete"], d["trace"]["ending"], d["events"]["frees"]), (True, "finished", 0),
           f"{t}: whole")
        mib = d["leaks"]["bytes"] // MiB
        check(mib not in got, f"one trace holds {mib} MiB: {t}")
        got[mib] = (d["events"]["allocations"], d["process"]["command"].split()[1:],
                    sorted(f["function"] for s in d["leaks"]["sites"] for f in s["frames"][:2]))
    parent = got.pop(36, None)
    check(parent is not None, f"the parent's trace: {sorted(got)}")
    eq(parent[:2], (3, []), "the parent's own three allocations")
    check({"parent_alloc", "small_thread", "handler_alloc"} <= set(parent[2]), parent)
    eq(sorted(got), list(range(2, 17)), "a trace for each of the 15 children, each its own size")
    for mib, (allocations, args, _) in got.items():
        eq((allocations, args), (1, [] if mib in (2, 5) else ["child", str(mib)]),
           f"the child of {mib} MiB: its one allocation, its command line")


def test_the_first_allocation_on_a_thread_with_a_16_kib_stack():
    # drv_small_stack.c: the process's first allocation, on a thread of 16
    # KiB (the least a thread can have), opens the trace there too. It needed
    # more than 32 KiB (the trace's header built on the stack) and the
    # program died. Each way of walking the stack (check: both, compared).
    if E.sanitized:
        return "the sanitizers' redzones take more than a 16 KiB stack"
    for unwind in ("fast", "libunwind", "check"):
        r = run([E.prog("drv_small_stack")], env={"GPUSHIM_UNWIND": unwind})
        eq((r.rc, r.out), (0, "small stack done\n"), f"{unwind}: the program, unharmed: {r.err}")
        d = report_json(one_trace(r))
        eq((d["events"]["allocations"], d["events"]["frees"], d["trace"]["complete"]),
           (2, 1, True), f"{unwind}: every event")
        eq([(s["bytes"], s["frames"][0]["function"]) for s in d["peak"]["sites"]],
           [(MiB, "main")], f"{unwind}: the peak")


def test_fork_without_pid_in_the_name_still_gives_distinct_files():
    r = run([E.prog("drv_fork")], output="fixed.trace", env=NO_LSAN)
    eq(r.rc, 0, "status")
    eq(len(r.files), 11, "the parent's file and one per allocating child")
    for path in r.files:
        eq(report_json(path)["trace"]["complete"], True, f"{os.path.basename(path)} is whole")


def test_trace_goes_on_after_a_failed_exec_and_survives_a_death():
    r = run([E.prog("drv_exec"), "die"])
    eq(r.rc, -9, "killed")
    d = report_json(one_trace(r))
    eq((d["trace"]["ending"], d["trace"]["complete"], d["trace"]["finished"]),
       ("died", True, False), "the END of the failed exec does not end the trace")
    eq(d["trace"]["ring"]["use"], "read", "the ring file was made again after the exec failed")
    eq(leak_sites(d), [(2 * MiB, "before_exec"), (MiB, "after_failed_exec")],
       "both allocations, the second from the ring")


def test_exec_finishes_the_old_images_trace():
    r = run([E.prog("drv_exec")])
    eq((r.rc, r.out), (0, "after exec\n"), "the new image ran")
    eq(len(r.files), 2, "a trace per image")
    second = [p for p in r.files if p.endswith("-1.trace")]
    eq(len(second), 1, f"the new image's file has a suffix: {r.files}")
    new = report_json(second[0])
    old = report_json([p for p in r.files if p not in second][0])
    eq((old["trace"]["finished"], old["events"]["allocations"]), (True, 1), "the old image's trace")
    eq(leak_sites(old), [(2 * MiB, "before_exec")], "the old image's allocation")
    eq(leak_sites(new), [(3 * MiB, "after_exec")], "the new image's allocation")
    check("exists; writing" in r.err, "the second name is said: " + r.err)


def leak_sites(d):
    return [(s["bytes"], s["frames"][0]["function"]) for s in d["leaks"]["sites"]]


def test_sixteen_threads_lose_nothing():
    r = same_behaviour([E.prog("drv_stress")])
    d = report_json(one_trace(r))
    eq((d["events"]["allocations"], d["events"]["frees"], d["events"]["frees_unknown"]),
       (800000, 800000, 0), "events")
    eq((d["leaks"]["count"], d["trace"]["complete"]), (0, True), "leaks, completeness")


def test_programs_that_are_not_cuda_programs():
    commands = [["python3", "-c", "import sys; print(sys.version_info[0])"],
                ["bash", "-c", "echo $((6*7)); exit 4"],
                ["gcc", "--version"],
                [E.prog("static_hello")]]
    if shutil.which("git"):
        commands.append(["git", "--version"])
    for cmd in commands:
        r = same_behaviour(cmd, env={"ASAN_OPTIONS": "detect_leaks=0"})
        eq(r.files, [], f"trace files of {cmd[0]}")
    eq(same_behaviour([E.prog("static_hello")]).rc, 5, "the static program's status")


def test_real_runtime_with_the_simulated_driver():
    exe = E.prog("real_cudart")
    if not os.path.exists(exe):
        return "SKIP (no nvcc on this machine)"
    if E.sanitized:
        return "SKIP (a sanitized driver cannot load into NVIDIA's unsanitized program alone)"
    # The simulated driver alone where the loader looks first (not the
    # simulated runtime beside it: the program must get NVIDIA's).
    driver_only = tempfile.mkdtemp(prefix="gpushim-driver-")
    os.symlink(os.path.join(E.build, "sim", "libcuda.so.1"), os.path.join(driver_only, "libcuda.so.1"))
    env = {"LD_LIBRARY_PATH": driver_only, "SIMCUDA_LOG": "1"}
    r = same_behaviour([exe], env=env)  # every lookup the runtime makes, as the driver logs it
    lookups = r.err.count("cuGetProcAddress")
    check(lookups >= 100, f"the runtime asked for {lookups} entry points")
    check("cudaGetDeviceCount" in r.out, "the program ran: " + r.out)


def test_driver_opened_late_with_deepbind():
    if E.sanitized:
        return "SKIP (AddressSanitizer refuses RTLD_DEEPBIND)"
    r = same_behaviour([E.prog("dl_deepbind")])
    d = report_json(one_trace(r))
    eq([(s["bytes"], s["frames"][0]["function"]) for s in d["leaks"]["sites"]],
       [(MiB, "deep_alloc")], "the allocation")


def test_live_look_then_sigterm():
    tmp = tempfile.mkdtemp(prefix="gpushim-live-")
    env = dict(os.environ)
    env.update(E.env)
    # The writer would write only after 10 s: the look must find the event in the ring.
    env.update({"LD_PRELOAD": E.preload, "GPUSHIM_OUTPUT": os.path.join(tmp, "live.trace"),
                "GPUSHIM_FLUSH_MS": "10000"})
    p = subprocess.Popen([E.prog("drv_longrun")], stdout=subprocess.PIPE, text=True, env=env)
    try:
        eq(p.stdout.readline(), "allocated\n", "the job runs")
        d = report_json(os.path.join(tmp, "live.trace"))
        eq((d["trace"]["finished"], d["trace"]["live"], d["trace"]["ending"], d["leaks"]["bytes"]),
           (False, True, "live", MiB), "a look at the running job")
        eq((d["trace"]["blocks"], d["trace"]["recovered_events"]), (0, 1),
           "what the writer has not yet written is read from the ring")
        p.send_signal(signal.SIGTERM)
        eq(p.wait(timeout=30), 0, "the job's own handler ended it")
    finally:
        p.kill()
    d = report_json(os.path.join(tmp, "live.trace"))
    eq((d["trace"]["complete"], d["trace"]["live"], d["leaks"]["bytes"]), (True, False, MiB),
       "the trace after SIGTERM and exit")
