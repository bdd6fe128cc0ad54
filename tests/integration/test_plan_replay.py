"""test_plan_replay.py - gpushim plan's replay (issue 17, item 4): the run of
the largest batch replayed at other batches, its requests scaled per call
site, through the model of PyTorch 2.12's caching allocator, on the schedule
of tests/progs/rt_batch_tensors.c (one cudaMalloc per tensor):

  weights 5 MiB kept; 2 steps of labels B x 1 KiB and activations
  B x 1.25 MiB, both freed.

The straight line: the peak is 5 MiB + B x 1281 KiB, so the largest batch on
a card of C bytes is (C - 5 MiB) / 1281 KiB: 15 on 24 MiB (19456 / 1281), 27
on 40 MiB (35840 / 1281), 814 on 1 GiB (1043456 / 1281).

The allocator (c10/cuda/CUDACachingAllocator.cpp at 13eab2b, the model's
version), at batch X:
- the weights (5 MiB, large pool: over kSmallSize, 1 MiB) get a 20 MiB
  segment (get_allocation_size: under kMinLargeAlloc, 10 MiB, a kLargeBuffer)
  and split it (should_split: the large pool splits when more than kSmallSize
  remains): 15 MiB stay free there;
- the labels (X KiB, at most 1 MiB up to X = 1024) go to the small pool: one
  2 MiB segment (kSmallBuffer);
- the activations (1.25X MiB) fit the 15 MiB left by the weights while
  X <= 12 (get_free_block: the best fit); beyond, a segment of 1.25X rounded
  up to 2 MiB (kRoundLarge), since they are 10 MiB or more.
- When cudaMalloc would pass the card, the allocator frees its cached
  segments that hold nothing (release_cached_blocks) and tries again; here
  every segment holds a live tensor then, so it runs out.
Reserved at the peak: 22 MiB for X <= 12, else 22 MiB + roundup(1.25X, 2 MiB).
- 24 MiB: 12 fits (22 MiB); 13 needs 22 + 18 = 40: largest 12, the line off
  by +3 (25 %).
- 40 MiB: 14 needs 22 + 18 (17.5 rounded) = 40 and fits; 15 needs 22 + 20:
  largest 14, peak 40 MiB; the line off by +13 (92.9 %).
- 1 GiB: 801 needs 22 + 1002 (1001.25 rounded) = 1024; 802 needs 22 + 1004:
  largest 801, peak 1 GiB; the line off by +13 (1.6 %).

The probe (rt_batch_tensors B probe: B x 1 MiB freed before the weights)
in the batch-8 run only is a site of one run: kept at its 8 MiB. It takes a
20 MiB segment, freed whole, which the weights then split as before: the
answers are those above. In the runs of both batches it grows (1 MiB a
sample) and is replayed at X MiB: its segment (roundup(X, 2 MiB) from X = 10
on) then holds the weights and cannot be freed, and the activations need
their own: 24 MiB: 9 (a 20 MiB segment for the probe up to X = 9; at 10, 10
+ 2 + 14 = 26); 40 MiB: 16 (16 + 2 + 20 = 38; at 17, 18 + 2 + 22 = 42);
1 GiB: 454 (454 + 2 + 568 = 1024; at 455, 456 + 2 + 570).
"""
import json
import os
import subprocess
import tempfile

from harness import E, MiB, check, eq, launcher_env

CARDS = ["--card", "24M", "--card", "40M", "--card", "1G", "--context", "0"]


def gpushim(*args):
    return subprocess.run([E.gpushim, *args], capture_output=True, text=True, timeout=300)


def plan_json(*args):
    p = gpushim("plan", "--json", *args)
    eq(p.returncode, 0, f"gpushim plan {' '.join(args)}: {p.stderr}")
    return json.loads(p.stdout)


def record(tmp, batch, mode=None):
    """rt_batch_tensors at batch, recorded with gpushim run."""
    name = f"{mode or 'b'}{batch}.trace"
    path = os.path.join(tmp, name)
    argv = [E.gpushim, "run", "-o", path, "--", E.prog("rt_batch_tensors"), str(batch)]
    p = subprocess.run(argv + ([mode] if mode else []), capture_output=True, text=True,
                       env=launcher_env(), timeout=120)
    eq(p.returncode, 0, f"rt_batch_tensors {batch} {mode or ''}: {p.stderr}")
    check(os.path.exists(path), f"{name} written")
    return path


def replayed(d):
    return [(c["name"], c["largest_batch"], c["replayed"]["batch"], c["replayed"]["peak_bytes"],
             c["replayed"]["setting"], c["replayed"]["linear_batch"],
             c["replayed"]["linear_off_by"]) for c in d["cards"]]


def test_plan_replay_rounding_on_each_card():
    tmp = tempfile.mkdtemp(prefix="gpushim-plan-replay-")
    a, b = record(tmp, 4), record(tmp, 8)
    d = plan_json(*CARDS, a, b)
    eq((d["fit"]["fixed_bytes"], d["fit"]["per_sample_bytes"]), (5.0 * MiB, 1281.0 * 1024),
       "the straight line: 5 MiB + 1281 KiB a sample")
    eq(replayed(d), [("24M", 15, 12, 22 * MiB, "default", 15, 3),
                     ("40M", 27, 14, 40 * MiB, "default", 27, 13),
                     ("1G", 814, 801, 1024 * MiB, "default", 814, 13)],
       "the replay's largest batch per card, its peak, the line's answer and how far off")
    for c, pct in zip(d["cards"], (25.0, 1300 / 14, 1300 / 801)):
        check(abs(c["replayed"]["linear_off_by_percent"] - pct) < 1e-4,
              f"{c['name']}: off by {pct} %: {c['replayed']}")
    r = d["replay"]
    eq((r["reference"], r["reference_batch"], r["setting"], r["sites_scaled"], r["sites_fixed"]),
       (b, 8, "default", 2, 1), "the batch-8 run replayed; labels and activations scaled")
    check(isinstance(r["passes"], int) and r["passes"] >= 1, f"passes: {r}")
    eq(d["replay_unavailable"], None, "the replay was made")

    p = gpushim("plan", *CARDS, a, b)
    eq(p.returncode, 0, p.stderr)
    check(f"Replay  the batch 8 run ({b}) through PyTorch's caching allocator (default), its "
          "requests scaled per call site: 2 sites grow with the batch, 1 fixed; " in p.stdout,
          p.stdout)
    check("  1G             1.00 GiB            814  814 .. 814\n"
          "    with PyTorch's caching allocator (default): largest batch 801, peak 1.00 GiB; "
          "the straight line said 814: off by +13 (+1.6 %)\n" in p.stdout, p.stdout)

    # A card where not one sample fits: the weights' 20 MiB segment and the
    # labels' 2 MiB one pass 21 MiB; the line says (21 - 5) MiB / 1281 KiB.
    d21 = plan_json("--card", "21M", "--context", "0", a, b)
    eq(d21["cards"][0]["replayed"], {"batch": 0, "peak_bytes": None, "setting": "default",
                                   "linear_batch": 12, "linear_off_by": 12,
                                   "linear_off_by_percent": None}, "none fits 21 MiB")
    check("with PyTorch's caching allocator (default): not one sample fits; the straight line "
          "said 12: off by +12\n" in gpushim("plan", "--card", "21M", "--context", "0", a, b).stdout,
          "the text says it")

    # Three runs: the sites fitted by least squares, the largest batch the
    # reference; the same schedule at every batch gives the same answers.
    c = record(tmp, 16)
    d3 = plan_json(*CARDS, a, c, b)
    eq((d3["replay"]["reference"], d3["replay"]["reference_batch"]), (c, 16), "the largest batch")
    eq(replayed(d3), replayed(d), "three runs on the same lines")

    # A setting: expandable segments map 20 MiB pages; on 40 MiB the 13th
    # sample's 16.25 MiB overflows the first page's 15 MiB free and maps a
    # second: 20 + 20 + 2 > 40.
    d = plan_json(*CARDS, "--setting", "expandable_segments:True", a, b)
    eq((d["replay"]["setting"], d["cards"][1]["replayed"]["setting"],
        d["cards"][1]["replayed"]["batch"]), ("expandable_segments:True",) * 2 + (12,),
       "the setting asked for")


def test_plan_replay_site_in_one_run_is_fixed():
    tmp = tempfile.mkdtemp(prefix="gpushim-plan-probe-")
    a, p8 = record(tmp, 4), record(tmp, 8, "probe")
    d = plan_json(*CARDS, a, p8)
    eq((d["replay"]["sites_scaled"], d["replay"]["sites_fixed"]), (2, 2),
       "the probe, in the batch-8 run only, is fixed beside the weights")
    eq([c["replayed"]["batch"] for c in d["cards"]], [12, 14, 801],
       "kept at 8 MiB, the probe changes nothing")
    # Every site fixed (the batch-8 probe run told it is batch 4: the same
    # sizes at "both" batches): the replay is the same at any batch, 22 MiB.
    d = plan_json("--card", "21M", "--card", "24M", "--context", "0", p8 + ":4", record(tmp, 8))
    eq((d["replay"]["sites_scaled"], d["replay"]["sites_fixed"], d["replay"]["passes"]), (0, 3, 1),
       "no site grows: one pass tells")
    eq([(c["replayed"]["batch"], c["replayed"]["peak_bytes"], c["replayed"]["linear_batch"],
         c["replayed"]["linear_off_by"]) for c in d["cards"]],
       [(0, None, None, None), (None, 22 * MiB, None, None)],
       "21 MiB: not one sample; 24 MiB: any batch, as the line says")
    # In both runs it grows, and is scaled: its segment then holds the weights.
    p4 = record(tmp, 4, "probe")
    d = plan_json(*CARDS, p4, p8)
    eq((d["replay"]["sites_scaled"], d["replay"]["sites_fixed"]), (3, 1), "the probe scaled")
    eq([(c["replayed"]["batch"], c["replayed"]["peak_bytes"]) for c in d["cards"]],
       [(9, 22 * MiB), (16, 38 * MiB), (454, 1024 * MiB)], "scaled, the probe costs batches")


def test_plan_replay_needs_tensor_level_runs():
    tmp = tempfile.mkdtemp(prefix="gpushim-plan-managed-")
    m4, m8 = record(tmp, 4, "managed"), record(tmp, 8, "managed")
    d = plan_json(*CARDS, m4, m8)
    eq(d["replay"], None, "no replay")
    why = d["replay_unavailable"]
    check(why.startswith(f"{m8} has no tensor-level allocation to replay: record the runs with "
                         "gpushim run --per-tensor"), why)
    eq([c["replayed"] for c in d["cards"]], [None] * 3, "no card has a replayed answer")
    p = gpushim("plan", *CARDS, m4, m8)
    eq(p.returncode, 0, p.stderr)
    check(f"Replay  none: {m8} has no tensor-level allocation" in p.stdout, p.stdout)
    check("with PyTorch's caching allocator" not in p.stdout, p.stdout)
    # The reference is named first; a tensor-level run beside it changes nothing.
    b4 = record(tmp, 4)
    d = plan_json(*CARDS, b4, m8)
    check(d["replay_unavailable"].startswith(f"{m8} has no tensor-level"), d["replay_unavailable"])
    d = plan_json(*CARDS, m4, record(tmp, 8))
    check(d["replay_unavailable"].startswith(f"{m4} has no tensor-level"), d["replay_unavailable"])
    for args, want in [(["--setting", "bogus:1"], "gpushim plan: --setting 'bogus:1': unknown option"),
                       (["--setting", "default", "--setting", "default"], "gpushim plan: one --setting at a time")]:
        p = gpushim("plan", *args, m4, m8)
        eq(p.returncode, 2, f"plan {args}: {p.stderr}")
        check(p.stderr.startswith(want), f"plan {args} says {want!r}: {p.stderr}")
        eq(p.stdout, "", "prints nothing")


def test_plan_replay_of_a_jax_run_through_the_bfc_model():
    """The same schedule in a JAX process (the xla_extension.so stub loaded,
    XLA_PYTHON_CLIENT_ALLOCATOR=platform) is replayed through XLA's BFC
    allocator as JAX builds it (xla/tsl/framework/bfc_allocator.cc): its pool
    is 0.75 of the card, preallocated. The weights' 5 MiB are split off it;
    the labels (X KiB) then the activations (1.25X MiB) must fit what is left
    (a chunk is split, or taken whole when less than twice the request is
    left and under 128 MiB would be wasted: either way the request fits iff
    the rest holds it). So X fits iff 5 MiB + X KiB + 1.25X MiB <= 0.75 C:
    on 24 MiB (18) X <= 13312 / 1281 = 10; on 40 MiB (30) 25600 / 1281 = 19;
    on 1 GiB (768) 781312 / 1281 = 609. The pool is the peak: 18, 30, 768 MiB."""
    tmp = tempfile.mkdtemp(prefix="gpushim-plan-jax-")
    stub = "lib=" + os.path.join(E.build, "progs", "fw", "xla_extension.so")
    env = dict(launcher_env(), XLA_PYTHON_CLIENT_ALLOCATOR="platform")
    paths = []
    for b in (4, 8):
        path = os.path.join(tmp, f"j{b}.trace")
        p = subprocess.run([E.gpushim, "run", "-o", path, "--", E.prog("rt_batch_tensors"),
                            str(b), stub], capture_output=True, text=True, env=env, timeout=120)
        eq(p.returncode, 0, p.stderr)
        paths.append(f"{path}:{b}")
    d = plan_json(*CARDS, *paths)
    eq(d["replay"]["allocator"], "xla", "a JAX run: the BFC model")
    eq(replayed(d), [("24M", 15, 10, 18 * MiB, "default", 15, 5),
                     ("40M", 27, 19, 30 * MiB, "default", 27, 8),
                     ("1G", 814, 609, 768 * MiB, "default", 814, 205)],
       "the BFC pool's answers")
    text = gpushim("plan", *CARDS, *paths).stdout
    check("with XLA's BFC allocator (default): largest batch 10, peak 18.00 MiB" in text, text)
    d = plan_json(*CARDS, "--setting", "XLA_PYTHON_CLIENT_MEM_FRACTION=1", *paths)
    eq([c["replayed"]["batch"] for c in d["cards"]], [15, 27, 814],
       "the whole card: (C - 5 MiB) / 1281 KiB, the straight line's")
