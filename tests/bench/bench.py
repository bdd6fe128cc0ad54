#!/usr/bin/env python3
"""bench.py - what `make bench` runs: gpushim's recording and analysis cost,
side by side with heaptrack's on the same events.

Usage: bench.py --build DIR [--events N] [--repeat R] [--frames F] [--unwind MODE]

Runs build/bench/bench_workload (N driver events from 16 call sites F frames
deep, 20 unless told; see tests/bench/bench_workload.c) on the simulated driver with
SIMCUDA_HOST_MALLOC=1, so that each device allocation and free is also one
heap allocation and free, which heaptrack sees. Each measurement is the best
of R runs, interleaved:

  baseline   the workload alone
  gpushim    under LD_PRELOAD=libgpushim.so, writing a trace
  heaptrack  under `heaptrack -o FILE` (its wrapper, interpreter and
             compressor included: what a user runs)

and each again with a tiny workload (STARTUP_EVENTS events) to tell the
fixed startup cost from the cost per event. Then each tool's analyzer on its
trace: `gpushim report --json` and `heaptrack_print`. It prints one table:

  recording overhead per event   (t_tool - t_baseline) / N, wall clock
    the same, less startup       the same after taking off the startup cost:
                                 what one more event costs
  recording startup cost         t_tool - t_baseline with STARTUP_EVENTS events
  recording CPU per event        as the first row, in user + system time of
                                 the whole process tree (heaptrack records in
                                 three processes, which run in parallel)
  trace bytes per event          trace file size / N
  analyzer events per second     N / analyzer wall time
    the same, less start-up      (N - STARTUP_EVENTS) / (its wall time less
                                 that of the tiny workload's trace): what
                                 reading more events costs
  analyzer start-up              its wall time on the tiny workload's trace
                                 (loading, symbolizing the stacks)
  analyzer peak memory           the analyzer's peak RSS (wait4's ru_maxrss)
  analyzer on one CPU            N / analyzer wall time, the analyzer kept to
                                 one CPU (sched_setaffinity): a container's
                                 or a batch job's single CPU
  the two rows of events per second and start-up again, gpushim's
  symbols cached                 with a symbol cache that an analysis of
                                 the same traces filled before (docs/commands.md,
                                 "The symbol cache"): every analysis after the
                                 first; the rows above are all with
                                 GPUSHIM_SYMBOL_CACHE=off, a first analysis.
                                 heaptrack's column is its same figures

then the cost of the model of PyTorch's caching allocator that `gpushim
whatif` replays a trace through (build/bench/bench_whatif, see
tests/bench/bench_whatif.c): CPU time per request under each of its six
settings, best of min(R, 3) runs of WHATIF_REQUESTS requests each, gpushim's
column alone; and, last, the analysis of one large trace (BIG_EVENTS events, recorded by
gpushim alone): its wall time, events per second and peak memory, which
must stay bounded by the live set and the distinct stacks, not grow with
the events. The table has a ratio column that reads "times better for gpushim" on every row:
heaptrack / gpushim for costs, gpushim / heaptrack for throughput. Without
heaptrack it prints gpushim's figures alone. It checks that gpushim's trace
holds exactly N events, and exits non-zero if not or if any run fails.
Builds nothing; standard library only.
"""
import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

STARTUP_EVENTS = 1000
BIG_EVENTS = 100000000
WHATIF_REQUESTS = 20000000


def fail(msg):
    print("bench: error: " + msg, file=sys.stderr)
    sys.exit(1)


def one_cpu():
    """Keeps the calling (forked) process to the first CPU it may run on."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def run(cmd, env, tmp, name, on_one_cpu=False):
    """Runs cmd (on the first CPU alone where on_one_cpu); returns (wall seconds,
    CPU seconds, peak RSS in KiB) of it and its waited-for descendants. Output
    goes to a file, shown on failure."""
    log = os.path.join(tmp, name + ".log")
    with open(log, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT,
                                preexec_fn=one_cpu if on_one_cpu else None)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        with open(log, "rb") as f:
            tail = f.read()[-2000:].decode(errors="replace")
        fail("%s exited with %d:\n%s\n%s" % (" ".join(cmd), proc.returncode, tail, "-" * 40))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def machine_info():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    print("machine   %s, %d CPUs (nproc), Linux %s" % (model, len(os.sched_getaffinity(0)),
                                                       platform.release()))
    print("date      %s" % time.strftime("%Y-%m-%d %H:%M:%S %Z"))


def heaptrack_version(exe):
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "heaptrack"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="the build directory (default: build)")
    ap.add_argument("--events", type=int, default=1000000, help="events N (default 1000000)")
    ap.add_argument("--repeat", type=int, default=7, help="runs per figure, best taken (default 7)")
    ap.add_argument("--big-events", type=int, default=BIG_EVENTS,
                    help="events of the large trace analyzed once (default %d; 0: none)"
                    % BIG_EVENTS)
    ap.add_argument("--whatif-requests", type=int, default=WHATIF_REQUESTS,
                    help="requests per setting of the whatif model's rows (default %d; 0: none)"
                    % WHATIF_REQUESTS)
    ap.add_argument("--frames", type=int, default=20,
                    help="the call sites' depth, 4 to 1000 (default 20; both tools record "
                         "every frame)")
    ap.add_argument("--unwind", choices=["fast", "libunwind"], default="fast",
                    help="how gpushim captures stacks (GPUSHIM_UNWIND; default fast)")
    args = ap.parse_args()
    n = args.events
    if not 4 <= args.frames <= 1000:
        fail("--frames must be from 4 to 1000")
    if n < 2 * STARTUP_EVENTS:
        fail("--events must be at least %d" % (2 * STARTUP_EVENTS))

    build = os.path.abspath(args.build)
    workload = os.path.join(build, "bench", "bench_workload")
    shim = os.path.join(build, "libgpushim.so")
    gpushim = os.path.join(build, "gpushim")
    whatif_bench = os.path.join(build, "bench", "bench_whatif")
    for path in (workload, shim, gpushim) + ((whatif_bench,) if args.whatif_requests else ()):
        if not os.path.exists(path):
            fail("%s is missing: run `make all progs` first" % path)
    heaptrack = shutil.which("heaptrack")
    heaptrack_print = shutil.which("heaptrack_print")

    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith(("GPUSHIM_", "SIMCUDA_"))}
    env.update(SIMCUDA_HOST_MALLOC="1", SIMCUDA_MEMORY="1T", GPUSHIM_SYMBOL_CACHE="off")

    machine_info()
    print("workload  %s: %d events (%d with the tiny workload), %d frames deep, best of %d runs"
          % (os.path.relpath(workload), n, STARTUP_EVENTS, args.frames, args.repeat))
    if heaptrack:
        print("heaptrack %s" % heaptrack_version(heaptrack).replace("heaptrack ", "", 1))
    else:
        print("heaptrack is not installed: gpushim's figures alone")
    sys.stdout.flush()

    with tempfile.TemporaryDirectory(prefix="gpushim-bench-") as tmp:
        trace = os.path.join(tmp, "b.trace")
        hbase = os.path.join(tmp, "h")

        def heaptrack_file():
            found = glob.glob(hbase + ".*")
            return found[0] if len(found) == 1 else None

        def clean():
            # (the shim does not overwrite a trace: it would pick b-1.trace)
            for path in glob.glob(os.path.join(tmp, "b*.trace")) + glob.glob(hbase + ".*"):
                os.remove(path)

        # every frame recorded, as heaptrack records them
        gs_env = dict(env, LD_PRELOAD=shim, GPUSHIM_OUTPUT=trace, GPUSHIM_UNWIND=args.unwind,
                      GPUSHIM_STACK_DEPTH=str(max(64, min(256, args.frames + 8))))
        tools = ["baseline", "gpushim"] + (["heaptrack"] if heaptrack else [])

        def command(tool, events):
            prefix = [heaptrack, "-o", hbase] if tool == "heaptrack" else []
            return prefix + [workload, str(events), str(args.frames)]

        def tool_env(tool):
            return gs_env if tool == "gpushim" else env

        # Recording, interleaved so that drift touches every tool alike.
        best = {}  # (tool, events) -> [wall, cpu]
        for _ in range(args.repeat):
            for events in (n, STARTUP_EVENTS):
                for tool in tools:
                    clean()
                    wall, cpu, _ = run(command(tool, events), tool_env(tool), tmp, tool)
                    b = best.setdefault((tool, events), [wall, cpu])
                    b[0], b[1] = min(b[0], wall), min(b[1], cpu)
        # The traces to analyze and measure: one last run at N of each tool.
        clean()
        run(command("gpushim", n), gs_env, tmp, "gpushim")
        trace_bytes = {"gpushim": os.path.getsize(trace)}
        if heaptrack:
            run(command("heaptrack", n), env, tmp, "heaptrack")
            hfile = heaptrack_file()
            if not hfile:
                fail("heaptrack wrote no single %s.* file: %s" % (hbase, os.listdir(tmp)))
            trace_bytes["heaptrack"] = os.path.getsize(hfile)

        # And of the tiny workload, whose analysis is each analyzer's start-up:
        # reading its own binary and libraries, symbolizing the stacks.
        tiny = os.path.join(tmp, "tiny.trace")
        run([workload, str(STARTUP_EVENTS), str(args.frames)], dict(gs_env, GPUSHIM_OUTPUT=tiny),
            tmp, "gpushim")
        if heaptrack:
            tbase = os.path.join(tmp, "t")
            run([heaptrack, "-o", tbase, workload, str(STARTUP_EVENTS), str(args.frames)], env,
                tmp, "heaptrack")
            found = glob.glob(tbase + ".*")
            if len(found) != 1:
                fail("heaptrack wrote no single %s.* file: %s" % (tbase, os.listdir(tmp)))
            htiny = found[0]

        # gpushim's trace must hold exactly the workload's events.
        out = subprocess.run([gpushim, "report", "--json", trace], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            fail("gpushim report --json failed (%d): %s" % (out.returncode, out.stderr))
        ev = json.loads(out.stdout)["events"]
        if ev["allocations"] + ev["frees"] != n:
            fail("gpushim's trace holds %d allocations + %d frees, not %d events"
                 % (ev["allocations"], ev["frees"], n))

        # The analyzers.
        analyzers = {"gpushim": lambda path: [gpushim, "report", "--json", path]}
        traces = {"gpushim": (trace, tiny)}
        if heaptrack and heaptrack_print:
            analyzers["heaptrack"] = lambda path: [heaptrack_print, "--print-leaks", "-f", path]
            traces["heaptrack"] = (hfile, htiny)
        # gpushim's again, with a symbol cache that a first analysis fills
        cached_env = dict(env, GPUSHIM_SYMBOL_CACHE=os.path.join(tmp, "symcache"))
        analyzers["gpushim-cached"] = analyzers["gpushim"]
        traces["gpushim-cached"] = traces["gpushim"]
        run(analyzers["gpushim"](tiny), cached_env, tmp, "gpushim-cache-filled")
        ana = {}  # tool -> [wall, peak KiB, wall of the tiny trace, wall on one CPU]
        for _ in range(args.repeat):
            for tool, cmd in analyzers.items():
                big_trace, tiny_trace = traces[tool]
                tenv = cached_env if tool == "gpushim-cached" else env
                wall_t, _, _ = run(cmd(tiny_trace), tenv, tmp, tool + "-tiny-analyzer")
                wall, _, rss = run(cmd(big_trace), tenv, tmp, tool + "-analyzer")
                wall_1 = wall
                if tool != "gpushim-cached":
                    wall_1, _, _ = run(cmd(big_trace), tenv, tmp, tool + "-analyzer-1cpu",
                                       on_one_cpu=True)
                a = ana.setdefault(tool, [wall, rss, wall_t, wall_1])
                a[0], a[1], a[2] = min(a[0], wall), min(a[1], rss), min(a[2], wall_t)
                a[3] = min(a[3], wall_1)
        if "heaptrack" in analyzers:
            with open(os.path.join(tmp, "heaptrack-analyzer.log")) as f:
                for line in f:
                    if line.startswith("calls to allocation functions:"):
                        calls = int(line.split(":")[1].split()[0])
                        if calls < n // 2:
                            print("warning: heaptrack saw %d allocations, fewer than %d"
                                  % (calls, n // 2))

    # The figures: a row is (label, unit, gpushim, heaptrack, cost?).
    base_n, base_s = best[("baseline", n)], best[("baseline", STARTUP_EVENTS)]

    def recording(tool):
        """Overhead per event over the whole run, less the startup cost, the
        startup cost, and CPU per event over the whole run."""
        wall_n, cpu_n = best[(tool, n)]
        wall_s = best[(tool, STARTUP_EVENTS)][0]
        over_n, over_s = wall_n - base_n[0], wall_s - base_s[0]
        return (over_n / n * 1e9, (over_n - over_s) / (n - STARTUP_EVENTS) * 1e9, over_s * 1e3,
                (cpu_n - base_n[1]) / n * 1e9)

    figures = {}
    cached = ana.get("gpushim-cached")
    for tool in ("gpushim", "heaptrack"):
        rec = recording(tool) if tool in tools else (None,) * 4
        a = ana.get(tool)
        marginal = None
        if a and a[0] > a[2]:
            marginal = (n - STARTUP_EVENTS) / (a[0] - a[2])
        figures[tool] = list(rec) + [trace_bytes[tool] / n if tool in trace_bytes else None,
                                     n / a[0] if a else None, marginal,
                                     a[2] * 1e3 if a else None, a[1] / 1024 if a else None,
                                     n / a[3] if a else None]
        c = cached if tool == "gpushim" else a
        figures[tool] += [n / c[0] if c else None, c[2] * 1e3 if c else None]
    rows = [("recording overhead per event", "ns", "%.0f", True),
            ("  the same, less startup", "ns", "%.0f", True),
            ("recording startup cost", "ms", "%.1f", True),
            ("recording CPU per event", "ns", "%.0f", True),
            ("trace bytes per event", "B", "%.2f", True),
            ("analyzer events per second", "M/s", "%.2f", False),
            ("  the same, less start-up", "M/s", "%.2f", False),
            ("analyzer start-up", "ms", "%.1f", True),
            ("analyzer peak memory", "MiB", "%.1f", True),
            ("analyzer on one CPU", "M/s", "%.2f", False),
            ("analyzer, symbols cached", "M/s", "%.2f", False),
            ("  start-up, symbols cached", "ms", "%.1f", True)]

    def fmt(spec, v, scale=1.0):
        return "n/a" if v is None else spec % (v * scale)

    print()
    with_h = "heaptrack" in tools
    head = "%-34s %12s" % ("best of %d runs" % args.repeat, "gpushim")
    if with_h:
        head += " %12s %9s" % ("heaptrack", "ratio")
    print(head)
    for i, (label, unit, spec, cost) in enumerate(rows):
        scale = 1e-6 if unit == "M/s" else 1.0
        g, h = figures["gpushim"][i], figures["heaptrack"][i]
        line = "%-34s %12s" % ("%s (%s)" % (label, unit), fmt(spec, g, scale))
        if with_h:
            ratio = None
            if g is not None and h is not None and g > 0 and h > 0:
                ratio = h / g if cost else g / h
            line += " %12s %9s" % (fmt(spec, h, scale), fmt("%.2fx", ratio))
        print(line)
    if with_h:
        print("ratio: times better for gpushim (heaptrack/gpushim for costs, gpushim/heaptrack"
              " for events per second); > 1 favours gpushim")
    print("baseline: %.1f ms for %d events without a profiler" % (base_n[0] * 1e3, n))
    if args.whatif_requests:
        whatif(whatif_bench, args.whatif_requests, min(args.repeat, 3), env, with_h)
    if args.big_events:
        big(args.big_events, workload, dict(env, LD_PRELOAD=shim), gpushim, env)


def whatif(exe, requests, repeat, env, with_h):
    """The whatif model's rows: bench_whatif's CPU ns per request for each
    setting, the best of `repeat` runs, in the table's format."""
    sys.stdout.flush()
    best = {}  # setting -> ns per request
    order = []
    with tempfile.TemporaryDirectory(prefix="gpushim-bench-whatif-") as tmp:
        for _ in range(repeat):
            run([exe, str(requests)], env, tmp, "whatif")
            with open(os.path.join(tmp, "whatif.log")) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) < 3 or parts[2] != "ns/request":
                        fail("bench_whatif printed an unexpected line: %r" % line)
                    name, ns = parts[0], float(parts[1])
                    if name not in best:
                        order.append(name)
                    best[name] = min(best.get(name, ns), ns)
    if len(order) != 6:
        fail("bench_whatif printed %d settings, not 6" % len(order))
    print()
    print("whatif model, CPU per request (ns), %d requests" % requests)
    for name in order:
        line = "%-34s %12s" % ("  " + name, "%.1f" % best[name])
        if with_h:
            line += " %12s %9s" % ("n/a", "n/a")
        print(line)


def big(events, workload, gs_env, gpushim, env):
    """Records a trace of `events` events and analyzes it once: the analysis
    of a long run, with its peak memory."""
    sys.stdout.flush()
    with tempfile.TemporaryDirectory(prefix="gpushim-bench-big-") as tmp:
        trace = os.path.join(tmp, "big.trace")
        rec, _, _ = run([workload, str(events)], dict(gs_env, GPUSHIM_OUTPUT=trace), tmp,
                        "big-gpushim")
        size = os.path.getsize(trace)
        wall, _, rss = run([gpushim, "report", "--json", trace], env, tmp, "big-analyzer")
        with open(os.path.join(tmp, "big-analyzer.log")) as f:
            ev = json.load(f)["events"]
        if ev["allocations"] + ev["frees"] != events:
            fail("the large trace holds %d allocations + %d frees, not %d events"
                 % (ev["allocations"], ev["frees"], events))
        # gpushim whatif: the six settings it compares by default, side by
        # side in one pass (no failure in this trace: no limit, one card)
        wwall, _, wrss = run([gpushim, "whatif", "--json", trace], env, tmp, "big-whatif")
        with open(os.path.join(tmp, "big-whatif.log")) as f:
            w = json.load(f)
        nset = len(w["settings"])
        nmodels = w["devices"][0]["models"]
        if w["devices"][0]["requests"] != ev["allocations"]:
            fail("whatif replayed %d requests, not the trace's %d allocations"
                 % (w["devices"][0]["requests"], ev["allocations"]))
    print()
    print("large trace: %d events recorded in %.1f s, %.0f MB" % (events, rec, size / 1e6))
    print("  analyzed (report --json) in %.2f s: %.2f M events/s, peak memory %.1f MiB"
          % (wall, events / wall / 1e6, rss / 1024))
    print("  whatif --json, %d settings side by side (%d models), in %.2f s: %.2f M events/s,"
          " peak memory %.1f MiB; %.2fx the report's time"
          % (nset, nmodels, wwall, events / wwall / 1e6, wrss / 1024, wwall / wall))


if __name__ == "__main__":
    main()
