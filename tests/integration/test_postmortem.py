"""test_postmortem.py - leak suspects by growth and the post-mortem of a
failed allocation (issue 6, items 1 and 2), on tests/progs/drv_growth.c:
a training loop with one leak (log_loss, 512 KiB a step) among weights, an
optimizer state and a cache that grow and then stop, and a last request that
fails for a cause chosen on its command line. The figures are its schedule's.
Also tests/progs/drv_fast_growth.c: a leak in a loop too short and fast for
the clock alone to sample (issue 14, item 4).
"""
import os
import re
import subprocess

from harness import E, KiB, MiB, check, eq, one_trace, report, report_json, run

MEMORY = {"leak": {"SIMCUDA_MEMORY": "28M"},
          "large": {"SIMCUDA_MEMORY": "24M"},
          "other": {"SIMCUDA_MEMORY": "36M", "SIMCUDA_OTHER": "12M"},
          "frag": {"SIMCUDA_MEMORY": "32M"},
          "none": {}}


def growth_run(mode, cause):
    r = run([E.prog("drv_growth"), mode, cause], env=MEMORY[cause])
    eq(r.rc, 0, f"drv_growth {mode} {cause}: {r.err}")
    trace = one_trace(r)
    return trace, report_json(trace)


def fn(site):
    return site["frames"][0]["function"] if site["frames"] else None


def suspects(j):
    return [(fn(s), s["growth_bytes"]) for s in j["leaks"]["suspects"]]


def only_failure(j):
    eq(len(j["failures"]), 1, "one failed allocation")
    return j["failures"][0]


def test_suspects_by_steps_leave_out_what_levels_off():
    trace, j = growth_run("marks", "none")
    eq(j["leaks"]["growth"], {"sampled_at": "steps", "step_label": "step", "samples": 13},
       "sampled at the 13 marks of the label marked most ('eval' marks 3 times)")
    eq(suspects(j), [("log_loss", 6 * MiB)],
       "the leak alone; weights, optimizer state, the full cache and activations are not")
    s = j["leaks"]["suspects"][0]
    eq(s["bytes_per_step"], 512 * KiB, "512 KiB a step")
    eq((s["bytes"], s["count"]), (0, 0), "the program freed it all at the end: still a suspect")
    eq(s["rising_intervals"], s["intervals"], "it rose at every step of the second half")
    eq([f["function"] for f in s["frames"]][:3], ["log_loss", "train_step", "main"], "frames")
    check(0 < s["first_seen_ns"] <= s["lowest_ns"] + 10**9, f"first seen: {s}")
    eq(j["failures"], [], "no failure")
    text = report(trace).stdout
    lead = text.index("Leak suspects: 1 call site whose live memory kept rising (sampled where "
                      "\"step\" steps begin or end, 13 times, and at the end of the run):")
    check(lead < text.index("Peak:"), "the report leads with the suspects")
    check("512.00 KiB a step" in text, f"per step in the text: {text}")


def test_suspects_by_time_windows_without_marks():
    # Without marks: each window's quietest moment, which here is after a
    # step's activation is freed (each step then sleeps 3 ms, longer than a
    # window), so the samples fall between steps as marks would.
    trace, j = growth_run("time", "none")
    g = j["leaks"]["growth"]
    eq((g["sampled_at"], g["step_label"]), ("time", None), "without marks: time windows")
    check(g["samples"] >= 12, f"a sample at least between each two steps: {g}")
    eq(suspects(j), [("log_loss", 6 * MiB)], "the leak alone, all of its growth")
    s = j["leaks"]["suspects"][0]
    eq(s["bytes_per_step"], None, "no steps without marks")
    check(s["bytes_per_second"] > 0, f"a rate: {s}")


def test_suspects_in_a_short_fast_run_without_marks():
    # 20 steps in a millisecond or two: the clock's 1 ms windows alone took
    # one or two samples, too few to judge, and the leak was no suspect. A
    # window also ends at its 4th event, so its 60 events give at least 15
    # samples whatever the timing, each at its window's quietest moment,
    # when scratch's 4 MiB is freed.
    r = run([E.prog("drv_fast_growth")])
    eq(r.rc, 0, f"drv_fast_growth: {r.err}")
    trace = one_trace(r)
    j = report_json(trace)
    g = j["leaks"]["growth"]
    eq((g["sampled_at"], g["step_label"]), ("time", None), "without marks: windows")
    check(g["samples"] >= 15, f"a sample at least every 4 events: {g}")
    eq(suspects(j), [("keep_grad", 20 * MiB)],
       "the leak alone, whole: nothing at the run's start, 20 MiB at the end; not scratch")
    s = j["leaks"]["suspects"][0]
    eq((s["bytes"], s["count"]), (20 * MiB, 20), "never freed")
    eq(s["lowest_ns"], 0, "lowest at the run's start")
    eq(s["bytes_per_step"], None, "no steps without marks")
    eq([f["function"] for f in s["frames"]][:2], ["keep_grad", "main"], "frames")
    text = report(trace).stdout
    check(f"Leak suspects: 1 call site whose live memory kept rising (sampled at {g['samples']} "
          "quiet moments, and at the end of the run):\n  +  20.00 MiB since 0.000 s, in a run of "
          in text, f"the text: {text}")


def test_oom_verdict_leak():
    trace, j = growth_run("marks", "leak")
    f = only_failure(j)
    eq((f["requested_bytes"], f["free_bytes"], f["total_bytes"], f["process_bytes"]),
       (8 * MiB, 7 * MiB, 28 * MiB, 21 * MiB), "what was asked, free, total, held")
    v = f["verdict"]
    eq((v["cause"], v["shortfall_bytes"], v["other_bytes"], v["leak_growth_bytes"]),
       ("leak", 1 * MiB, 0, 6 * MiB), "a leak: it grew 6 MiB, the request was 1 MiB short")
    eq((v["held_free_bytes"], v["fits_in_held_free"]), (0, False), "nothing free was held")
    check(v["sentence"].startswith("A leak: log_loss (drv_growth.c:") and
          "by 6.00 MiB up to the failure" in v["sentence"] and "1.00 MiB short" in v["sentence"],
          f"the sentence: {v['sentence']}")
    pm = f["postmortem"]
    eq([(fn(s), s["bytes"], s["count"]) for s in pm["held"]],
       [("load_weights", 8 * MiB, 1), ("log_loss", 6 * MiB, 12),
        ("init_optimizer", 4 * MiB, 1), ("fill_cache", 3 * MiB, 3)], "held on the device then")
    eq((pm["grew"]["since_step"], [(fn(s), s["bytes"]) for s in pm["grew"]["sites"]]),
       (10, [("log_loss", 1536 * KiB)]), "grew over the last samples: since the 10th step mark")
    eq(pm["pool_unused_bytes"], 0, "no pools")
    text = report(trace).stdout
    check("verdict: A leak: log_loss" in text, f"the verdict in the text: {text}")
    check("grew since step 10" in text, "what grew, in the text")


def test_oom_verdict_too_large():
    _, j = growth_run("marks", "large")
    eq(j["leaks"]["suspects"], [], "no leak without log_loss")
    v = only_failure(j)["verdict"]
    eq((v["cause"], v["shortfall_bytes"], v["other_bytes"], v["leak_growth_bytes"]),
       ("too_large", 7 * MiB, 0, 0), "16 MiB asked of 9 MiB free, nobody else")
    check(v["sentence"].startswith("Too large for the device: the process held 15.00 MiB and "
                                   "asked for 16.00 MiB more, 31.00 MiB in all"), v["sentence"])


def test_oom_verdict_other_process():
    _, j = growth_run("marks", "other")
    f = only_failure(j)
    eq((f["free_bytes"], f["total_bytes"], f["process_bytes"]), (9 * MiB, 36 * MiB, 15 * MiB),
       "free, total, held")
    v = f["verdict"]
    eq((v["cause"], v["other_bytes"], v["shortfall_bytes"]), ("other_process", 12 * MiB, 7 * MiB),
       "12 MiB held by others, 7 MiB short")
    check(v["sentence"].startswith("Another process: 12.00 MiB of the 36.00 MiB device"),
          v["sentence"])


def test_oom_verdict_fragmentation():
    _, j = growth_run("marks", "frag")
    f = only_failure(j)
    v = f["verdict"]
    eq((v["cause"], v["held_free_bytes"], v["largest_held_free_bytes"], v["fits_in_held_free"]),
       ("fragmentation", 9 * MiB, 5 * MiB, True), "9 MiB free in the arena, at most 5 in one gap")
    eq(v["shortfall_bytes"], 6 * MiB, "6 MiB asked of none free")
    eq(v["sentence"], "Fragmentation: the process held 9.00 MiB free inside its own allocations, "
       "enough for the 6.00 MiB request, but its largest free piece was 5.00 MiB.", "sentence")
    eq([(fn(s), s["bytes"]) for s in f["postmortem"]["held"]][:2],
       [("make_arena", 17 * MiB), ("load_weights", 8 * MiB)], "the arena holds most")


def test_fragmentation_over_time_and_page_rounding():
    trace, j = growth_run("marks", "frag")
    fr = j["fragmentation"]
    over = fr["over_time"]
    eq(len(over), 14, "a sample at each of the 14 step marks")
    eq([x["step"] for x in over], list(range(1, 15)), "their steps")
    eq([(x["segment_bytes"], x["free_bytes"]) for x in over[:13]], [(0, 0)] * 13,
       "no blocks during training")
    last = over[13]
    eq((last["segment_bytes"], last["block_bytes"], last["free_bytes"],
        last["largest_free_bytes"], last["fragmentation"]),
       (17 * MiB, 8 * MiB, 9 * MiB, 5 * MiB, round(1 - 5 / 9, 6)), "the arena at the last mark")
    eq((last["pool_reserved_bytes"], last["pool_used_bytes"]), (0, 0), "no pools")
    eq(fr["rounding"], {"page_bytes": 2 * MiB, "waste_bytes_at_peak": 1 * MiB,
                        "waste_bytes_at_end": 0},
       "the 17 MiB arena takes 18 MiB of pages at the peak; all freed at the end")
    eq(fr["pools_at_peak"], {"reserved_bytes": 0, "used_bytes": 0, "free_bytes": 0}, "no pools")
    text = report(trace).stdout
    check("  pages     1.00 MiB more at the peak: sizes rounded up to whole 2.00 MiB pages\n" in text,
          f"the rounding in the text: {text}")


def test_postmortem_survives_a_death_and_the_demo_names_the_leak():
    # The demo job dies of out of memory at step 22 with a 256 MiB leak a step.
    r = run([os.path.join(E.build, "examples", "sim_training")])
    eq(r.rc, 1, "the demo job fails as it should: " + r.err)
    j = report_json(one_trace(r))
    eq([(s["frames"][1]["function"], s["bytes_per_step"]) for s in j["leaks"]["suspects"]],
       [("log_loss", 256 * MiB)], "the leak, 256 MiB a step")
    v = only_failure(j)["verdict"]
    eq((v["cause"], v["shortfall_bytes"]), ("leak", 48 * MiB), "a leak: 256 MiB asked, 208 free")
    # it needed what it held and asked when it failed, not its peak; and its
    # leak outgrows any card
    c = j["capacity"]
    held = 12 * 200 * MiB + 24 * 200 * MiB + 12 * 300 * MiB + 21 * 256 * MiB
    eq((c["peak_bytes"], c["need_bytes"], c["failed_held_bytes"], c["failed_asked_bytes"],
        c["leak_grew"]), (held, held + 256 * MiB, held, 256 * MiB, True), "the card it needs")
    eq(c["fits_on"], "24 GB and larger cards for the 16.05 GiB it needed when it failed "
       "(15.80 GiB held, 256.00 MiB asked): 7.95 GiB spare on 24 GB; but a leak suspect kept "
       "rising: a longer run outgrows any card", "in words")


def test_the_readme_shows_what_the_demo_prints():
    # README.md's excerpt of the demo's report, each line as make demo
    # prints it (the report read from the repository's root, as make demo
    # does), but the times, which vary from run to run; "..." stands for
    # the lines left out between
    root = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(root, "README.md")) as f:
        readme = f.read()
    start = readme.index("```\n", readme.index("the report shows it")) + 4
    excerpt = readme[start:readme.index("\n```", start)].splitlines()
    check(len([ln for ln in excerpt if ln != "..."]) >= 10, f"the README's excerpt: {excerpt}")
    r = run([os.path.join(E.build, "examples", "sim_training")])
    eq(r.rc, 1, "the demo job fails as it should: " + r.err)
    p = subprocess.run([E.gpushim, "report", one_trace(r)], capture_output=True, text=True,
                       cwd=root)
    times = re.compile(r"\d+\.\d{3} s")
    lines = [times.sub("T s", ln) for ln in p.stdout.splitlines()]
    at = 0
    for want in excerpt:
        if want == "...":
            continue
        want = times.sub("T s", want)
        check(want in lines[at:], f"the README's line is not in the report, in order: {want!r}")
        at = lines.index(want, at) + 1
