"""test_unwind.py - the fast unwinder (shim/record/walk.c) gives libunwind's
frames, frame for frame, and leaves to libunwind the stacks it cannot be
sure of (tests/progs/drv_unwind.c: a signal frame, a sigaltstack, a
makecontext stack, a step that would load a word below a frame's rsp), and
finds the caller of a function that never returns by its call, not by its
return address; the frames of bench_workload's 100-frame stacks, compiled
without frame pointers, are walked whole. GPUSHIM_UNWIND=check
makes the shim unwind every stack both ways and say at exit how many it
compared, how many of the walks went on from the thread's walk before
(checking that walk's frames instead of walking them; drv_unwind memo
takes each way that can go), and how many of those checked every step,
walking none (a frame that saves an rbp holding data, not a frame pointer,
does not stop the check); the rest of the suite runs under it too
(run_tests.py --unwind-check). A bad setting is said once and the fast unwinder used.
"""
import os
import re
import subprocess

from harness import E, UNWIND_LINE, MiB, check, eq, one_trace, report_json, run


def checked(r):
    """(stacks, walked, went on from the walk before, checked to the end of
    those, by libunwind alone, differed) from the run's one line."""
    lines = UNWIND_LINE.findall(r.err)
    eq(len(lines), 1, f"unwind check lines in stderr: {r.err!r}")
    return tuple(int(x) for x in lines[0])


def folded(trace):
    p = subprocess.run([E.gpushim, "export", "--format=folded", "--metric=allocated", trace],
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, "export: " + p.stderr)
    # a frame with no name is its address, which ASLR moves from run to run
    return sorted(re.sub(r"0x[0-9a-f]+ \(", "ADDRESS (", line) for line in p.stdout.splitlines())


def unwind_paths(mode):
    r = run([E.prog("drv_unwind")], env={"GPUSHIM_UNWIND": mode, "GPUSHIM_STACK_DEPTH": "256"})
    eq(r.rc, 0, "drv_unwind: " + r.err)
    eq(r.out, "unwind done\n", "stdout")
    one_trace(r)
    return r


def test_unwind_check_walks_what_it_can_and_leaves_the_rest_to_libunwind():
    r = unwind_paths("check")
    # plain, vla, aligned, deep, thread, noreturn walked; signal, altstack, context not, nor
    # below_rsp's, whose step would load a word below its frame's rsp
    stacks, walked, _, _, alone, differed = checked(r)
    eq((stacks, walked, alone, differed), (10, 6, 4, 0),
       "stacks, walked, by libunwind alone, differed")
    eq(report_json(r.files[0])["events"]["allocations"], 10, "allocations")


def test_fast_and_libunwind_record_the_same_stacks():
    fast = folded(unwind_paths("fast").files[0])
    ref = folded(unwind_paths("libunwind").files[0])
    check(fast == ref, "the folded stacks of the fast unwinder and of libunwind differ:\n"
          + "\n".join(d[:300] for d in sorted(set(fast) ^ set(ref))))
    eq(len(ref), 10, f"a stack per allocation site: {ref}")
    leaves = sorted(line.rsplit(" ", 1)[0].split(";")[-2].split(" ")[0] for line in ref)
    eq(leaves, sorted(["plain", "vla", "aligned", "deep", "thread_main", "on_signal", "on_signal",
                       "in_context", "below_rsp", "finish"]), "the callers of alloc_free")
    check(any(line.startswith("main (drv_unwind.c:") and ";finish (" in line for line in ref),
          "main, past whose end finish returns, calls finish")
    deep = [line for line in ref if ";deep (" in line]
    eq(len(deep), 1, "the deep site")
    # GPUSHIM_STACK_DEPTH=256 frames from alloc_free up: alloc_free and 255 of deep's 301
    eq(deep[0].count("deep ("), 255, "deep's frames, cut at the deepest stack recorded")
    check(deep[0].endswith(" %d" % MiB), deep[0][-40:])


def functions(trace):
    """The folded stacks' functions, outermost first, sorted."""
    return sorted([re.sub(r" \(.*", "", f) for f in line.rsplit(" ", 1)[0].split(";")]
                  for line in folded(trace))


def test_the_walk_goes_on_from_the_walk_before():
    # drv_unwind.c's memo: fifteen stacks, twelve of them going on from the
    # walk before (2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15), one of those
    # checked to the end (15), at most 64 frames
    def memo(mode):
        r = run([E.prog("drv_unwind"), "memo"],
                env={"GPUSHIM_UNWIND": mode, "GPUSHIM_STACK_DEPTH": "64"})
        eq((r.rc, r.out), (0, "memo done\n"), "drv_unwind memo: " + r.err)
        return r

    r = memo("check")
    eq(checked(r), (15, 15, 12, 1, 0, 0),
       "stacks, walked, went on, checked to the end, by libunwind alone, differed")
    top = ["main", "memo"]
    want = sorted([
        ["chain"] * 52 + ["extra"] * 11 + ["alloc_free"],  # 1: 64 frames from alloc_free
        ["chain"] * 60 + ["extra"] * 3 + ["alloc_free"],  # 2
        ["chain"] * 50 + ["extra"] * 13 + ["alloc_free"],  # 3
        top + ["via_g"] + ["chain"] * 21 + ["extra"] * 3 + ["alloc_free"],
        top + ["via_h"] + ["chain"] * 21 + ["extra"] * 3 + ["alloc_free"],
        top + ["via_h"] + ["chain"] * 21 + ["other"] * 3 + ["alloc_free"],
        top + ["via_h"] + ["chain2"] * 21 + ["extra"] * 3 + ["alloc_free"],
        top + ["lift"] * 5 + ["vla_at", "alloc_nofp", "leaf_extra"] + ["extra"] * 2
        + ["alloc_free"],
        top + ["lift", "vla_at", "alloc_nofp", "leaf_other"] + ["other"] * 2 + ["alloc_free"],
        top + ["lift"] * 5 + ["vla_at", "alloc_nofp", "leaf_other"] + ["other"] * 2
        + ["alloc_free"],
        top + ["lift", "vla_at", "alloc_nofp", "leaf_via"] + ["other"] * 2 + ["alloc_free"],
        top + ["lift"] * 5 + ["vla_at", "alloc_nofp", "leaf_via"] + ["extra"] * 3
        + ["alloc_free"],
        ["memo_thread", "via_g"] + ["chain"] * 21 + ["extra"] * 3 + ["alloc_free"],
        top + ["rbp_holder", "rbp_saver", "alloc_free"]])  # 14 and 15: one stack
    for mode in ("fast", "libunwind"):
        got = functions(one_trace(memo(mode)))
        check(got == want, f"{mode}: the functions of each stack:\n" +
              "\n".join(";".join(s) for s in got))


def test_deep_stacks_without_frame_pointers_are_walked_whole():
    # bench_workload is built -O2 (no frame pointers): 100 frames, 16 sites
    r = run([os.path.join(E.build, "bench", "bench_workload"), "2000", "100"],
            env={"GPUSHIM_UNWIND": "check", "GPUSHIM_STACK_DEPTH": "128"})
    eq(r.rc, 0, r.err)
    stacks, walked, went_on, _, alone, differed = checked(r)
    eq((walked, alone, differed), (stacks, 0, 0), "every stack walked, none differed")
    check(went_on > stacks // 2, f"most went on from the walk before: {went_on} of {stacks}")
    eq(stacks, report_json(r.files[0])["events"]["allocations"], "a stack per allocation")


def test_a_bad_setting_is_said_once_and_the_fast_unwinder_used():
    r = run([E.prog("drv_unwind")], env={"GPUSHIM_UNWIND": "fastest"})
    eq(r.rc, 0, r.err)
    eq(r.err.count("GPUSHIM_UNWIND=fastest is not fast, libunwind or check; using fast"), 1,
       "the message, once: " + r.err)
    check("unwind check" not in r.err, r.err)
    eq(report_json(one_trace(r))["events"]["allocations"], 10, "allocations")
