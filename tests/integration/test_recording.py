"""test_recording.py - recording and reporting: each caller style of issue 2
with the exact figures of its schedule (tests/progs/*.c), failures, damaged
traces, the launcher, and the trace file's rules.
"""
import os
import stat
import subprocess
import tempfile

from harness import (E, KiB, MiB, check, eq, launcher_env, one_trace, chunk_offsets, report,
                     report_json, run, same_behaviour, site_summary)


def test_driver_schedule_exact_figures():
    r = same_behaviour([E.prog("drv_schedule")])
    trace = one_trace(r)
    eq(stat.S_IMODE(os.stat(trace).st_mode), 0o600, "trace file mode")
    eq(os.path.basename(trace), "gpushim.%d.trace" % report_json(trace)["process"]["pid"],
       "default trace name")
    d = report_json(trace)
    eq(d["events"], {"allocations": 13, "frees": 6, "failed": 0, "frees_unknown": 1, "references": 0}, "events")
    eq(d["peak"]["bytes"], 8 * MiB + 3 * 256 * KiB, "peak bytes")
    eq(site_summary(d["peak"]["sites"]),
       [(4 * MiB, 4, "load_weights"), (4 * MiB, 2, "make_activation"),
        (768 * KiB, 3, "remember_in_cache")], "peak sites")
    eq(d["leaks"]["bytes"], 4 * MiB + 768 * KiB, "leaked bytes")
    eq(d["leaks"]["count"], 7, "leaked allocations")
    eq(site_summary(d["leaks"]["sites"]),
       [(4 * MiB, 4, "load_weights"), (768 * KiB, 3, "remember_in_cache")], "leak sites")
    f = d["leaks"]["sites"][1]["frames"]
    eq([x["function"] for x in f], ["remember_in_cache", "train_step", "main"], "leak stack")
    check(f[0]["file"].endswith("tests/progs/drv_schedule.c"), f"source file: {f[0]['file']}")
    eq(f[0]["line"], 32, "source line of the leak")
    eq(d["leaks"]["sites"][0]["api"], "cuMemAlloc_v2", "api label")
    eq(d["devices"], [{"device": 0, "peak_bytes": 8 * MiB + 768 * KiB, "peak_time_ns":
                       d["devices"][0]["peak_time_ns"], "live_bytes_at_end": 4 * MiB + 768 * KiB,
                       "allocations": 13}], "devices")
    eq(d["trace"]["complete"], True, "trace complete")
    eq(d["failures"], [], "failures")
    check(d["process"]["command"].endswith("drv_schedule"), "command line")
    text = report(trace)
    eq(text.returncode, 0, "text report status")
    for want in ["Peak: 8.75 MiB", "load_weights", "remember_in_cache", "Unfreed at the end: 4.75 MiB",
                 "trace     complete"]:
        check(want in text.stdout, f"text report lacks {want!r}:\n{text.stdout}")


def test_inlined_frames():
    r = same_behaviour([E.prog("drv_inline")])
    d = report_json(one_trace(r))
    eq(len(d["leaks"]["sites"]), 1, "one site")
    s = d["leaks"]["sites"][0]
    eq((s["bytes"], s["count"]), (192 * KiB, 3), "leak")
    eq([(f["function"], os.path.basename(f["file"] or ""), f["line"]) for f in s["frames"]],
       [("grab_buffer", "drv_inline.c", 15), ("load_table", "drv_inline.c", 21),
        ("main", "drv_inline.c", 28)], "frames, the inlined one first")


def test_module_loaded_late_is_symbolized():
    r = same_behaviour([E.prog("drv_plugin")])
    d = report_json(one_trace(r))
    sites = d["leaks"]["sites"]
    eq(site_summary(sites), [(96 * KiB, 1, "plugin_allocate"), (32 * KiB, 1, "own_allocation")],
       "leak sites")
    f = sites[0]["frames"][0]
    eq((os.path.basename(f["file"]), f["line"], os.path.basename(f["module"])),
       ("gsplugin.c", 11, "libgsplugin.so"), "the plugin's frame")


def test_dlopen_and_both_dlsym_versions():
    r = same_behaviour([E.prog("dl_dlsym")])
    d = report_json(one_trace(r))
    eq(d["events"]["allocations"], 4, "allocations")
    eq(d["events"]["frees"], 1, "frees")
    eq(d["peak"]["bytes"], 6000, "peak")
    eq(site_summary(d["leaks"]["sites"]),
       [(3000, 1, "alloc_old_style"), (2000, 2, "alloc_three")], "leak sites")


def test_cuGetProcAddress_both_abis_and_ptsz():
    r = same_behaviour([E.prog("dl_getproc")])
    check("status 1 null" in r.out and "status 2 null" in r.out, "failed lookups keep status:\n" + r.out)
    d = report_json(one_trace(r))
    eq(d["events"], {"allocations": 3, "frees": 2, "failed": 0, "frees_unknown": 0, "references": 0}, "events")
    eq(d["peak"]["bytes"], 2 * MiB, "peak")
    peak = [(s["frames"][0]["function"], s["bytes"], s["count"], s["api"]) for s in d["peak"]["sites"]]
    eq(peak, [("alloc_v2_path", MiB, 1, "cuMemAlloc_v2"),
              ("alloc_ptsz_path", 512 * KiB, 1, "cuMemAllocAsync_ptsz"),
              ("alloc_ptsz_path", 512 * KiB, 1, "cuMemAllocAsync_ptsz")], "peak sites, APIs")
    eq(site_summary(d["leaks"]["sites"]), [(512 * KiB, 1, "alloc_ptsz_path")], "leak sites")


def test_dlsym_and_getproc_entry_points_both_recorded():
    """The driver hands out internal entry points from cuGetProcAddress, at
    addresses that are not dlsym's; calls through either are recorded, and a
    free through one of what the other allocated is no unknown free."""
    plain = run([E.prog("dl_entry_points"), "addresses"], shim=False)
    eq(plain.out, "alloc distinct, free distinct\n", "the driver's own entry points differ")
    r = same_behaviour([E.prog("dl_entry_points")])
    eq(r.out, "done\n", "output")
    d = report_json(one_trace(r))
    eq(d["events"], {"allocations": 3, "frees": 2, "failed": 0, "frees_unknown": 0, "references": 0},
       "events")
    eq(d["peak"]["bytes"], 4 * MiB, "peak")
    eq(site_summary(d["leaks"]["sites"]), [(4 * MiB, 1, "by_getproc")], "leak sites")


def test_runtime_labels_one_event_per_call_and_oom():
    env = {"SIMCUDA_MEMORY": "64M"}
    r = same_behaviour([E.prog("rt_runtime")], env=env)
    d = report_json(one_trace(r))
    eq(d["events"], {"allocations": 4, "frees": 2, "failed": 1, "frees_unknown": 0, "references": 0}, "events")
    eq(d["peak"]["bytes"], 3 * MiB + 10240 + 64 * KiB, "device peak")
    apis = {s["frames"][0]["function"]: s["api"] for s in d["peak"]["sites"]}
    eq(apis, {"scratch": "cudaMalloc", "image": "cudaMallocPitch", "main": "cudaMallocAsync"},
       "runtime labels")
    eq([(s["bytes"], s["count"], s["api"]) for s in d["leaks"]["sites"]],
       [(10240, 1, "cudaMallocPitch")], "leaks")
    eq(d["categories"]["managed"], {"peak_bytes": MiB, "live_bytes_at_end": MiB, "allocations": 1},
       "managed memory")
    eq(d["categories"]["device"]["allocations"], 3, "device allocations")
    eq(len(d["failures"]), 1, "failures")
    f = d["failures"][0]
    eq((f["api"], f["requested_bytes"], f["result"], f["result_name"], f["device"]),
       ("cudaMalloc", 128 * MiB, 2, "CUDA_ERROR_OUT_OF_MEMORY", 0), "failure")
    # free: less the managed MiB, the pitched 10240 bytes, and the 2 MiB the
    # default pool keeps after the cudaFreeAsync until a synchronization
    eq((f["free_bytes"], f["total_bytes"]), (64 * MiB - MiB - 10240 - 2 * MiB, 64 * MiB),
       "free/total at failure")
    eq(f["process_bytes"], 10240, "device bytes held at the failure")
    eq(f["frames"][0]["function"], "too_big", "failure site")


def test_threads_exact_counts():
    r = same_behaviour([E.prog("drv_threads")])
    d = report_json(one_trace(r))
    eq(d["events"], {"allocations": 4010, "frees": 4000, "failed": 0, "frees_unknown": 0, "references": 0}, "events")
    eq(site_summary(d["leaks"]["sites"]), [(80 * KiB, 10, "keep_some")], "leaks")


def test_oom_failure_with_free_and_total():
    r = same_behaviour([E.prog("drv_oom")], env={"SIMCUDA_MEMORY": "16M"})
    eq(r.out, "4 blocks before out of memory; 0 of 16777216 free\n", "program output")
    d = report_json(one_trace(r))
    eq(d["events"], {"allocations": 4, "frees": 4, "failed": 1, "frees_unknown": 0, "references": 0}, "events")
    eq(d["peak"]["bytes"], 16 * MiB, "peak")
    eq(d["leaks"]["count"], 0, "leaks")
    f = d["failures"][0]
    eq((f["requested_bytes"], f["free_bytes"], f["total_bytes"], f["process_bytes"], f["api"]),
       (4 * MiB, 0, 16 * MiB, 16 * MiB, "cuMemAlloc_v2"), "failure")
    eq(f["frames"][0]["function"], "grow_until_oom", "failure site")
    text = report(r.files[0]).stdout
    check("CUDA_ERROR_OUT_OF_MEMORY" in text and "0 B free of 16.00 MiB" in text,
          "text report of the failure:\n" + text)


def test_program_without_cuda_is_untouched():
    r = same_behaviour([E.prog("nocuda"), "a", "b"])
    eq(r.rc, 3, "exit status")
    eq(r.files, [], "trace files")
    for cmd in (["/bin/sh", "-c", "echo shell; exit 4"], ["python3", "-c", "print(6*7)"]):
        # (a sanitized shim brings LeakSanitizer into programs that leak by design)
        s = same_behaviour(cmd, env={"ASAN_OPTIONS": "detect_leaks=0"})
        eq(s.files, [], f"trace files of {cmd[0]}")


def test_truncated_and_damaged_traces():
    # the writer's tick (100 ms by default) held off, so that a stall of the
    # machine within the run's events cannot make them two chunks
    r = run([E.prog("drv_schedule")], env={"GPUSHIM_FLUSH_MS": "10000"})
    trace = one_trace(r)
    data = open(trace, "rb").read()
    tmp = tempfile.mkdtemp(prefix="gpushim-cut-")

    def variant(name, content):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(content)
        return path

    # Cut inside the last chunk (the END record): every event is there,
    # the trace is marked incomplete.
    chunks = chunk_offsets(data)
    eq(len(chunks), 2, "chunks in the schedule's trace")
    cut = variant("cut.trace", data[:chunks[-1] + 10])
    d = report_json(cut)
    eq((d["trace"]["complete"], d["trace"]["finished"], d["trace"]["truncated_at"]),
       (False, False, chunks[-1]), "cut trace")
    eq(d["events"]["allocations"], 13, "events read from a cut trace")
    check("INCOMPLETE" in report(cut).stdout, "text report says incomplete")

    # A flipped byte in the first chunk: skipped, counted, the rest is read.
    bad = bytearray(data)
    bad[chunks[0] + 20] ^= 0xff
    d = report_json(variant("damaged.trace", bytes(bad)))
    eq((d["trace"]["complete"], d["trace"]["damaged_blocks"], d["trace"]["blocks"]),
       (False, 1, 1), "damaged trace")
    eq(d["events"]["allocations"], 0, "events of a skipped chunk")
    eq((d["trace"]["damaged_chunks"], d["trace"]["chunks"]),
       (d["trace"]["damaged_blocks"], d["trace"]["blocks"]), "the old keys kept, the same values")

    # Files that are not traces at all: one line naming the file and offset.
    for name, content, want in [("empty.trace", b"", "empty: nothing was recorded"),
                                ("short.trace", data[:7], "too short"),
                                ("text.trace", b"hello world, not a trace\n", "bad magic"),
                                ("header.trace", data[:20], "header length"),
                                ("crc.trace", data[:16] + bytes([data[16] ^ 1]) + data[17:],
                                 "checksum")]:
        path = variant(name, content)
        p = report(path)
        eq(p.returncode, 1, f"status for {name}")
        eq(p.stdout, "", f"stdout for {name}")
        check(p.stderr.count("\n") == 1 and path in p.stderr and "offset" in p.stderr
              and want in p.stderr, f"error for {name}: {p.stderr!r}")
    p = report(tmp)
    eq(p.returncode, 1, "a directory")


def test_a_large_trace_read_ahead_skips_what_one_thread_skips():
    # 11.2 M events, about 3.3 MB (format 3 holds drv_longhaul's regular
    # steps in 0.3 bytes an event): the analyzer reads it ahead on a second
    # thread (reader.c). A damaged chunk must be skipped, and a cut last
    # chunk end the trace, as when the same chunks are read in turn: the
    # same figures as a file without that chunk at all.
    r = run([E.prog("drv_longhaul"), "700000"])
    trace = one_trace(r)
    data = open(trace, "rb").read()
    chunks = chunk_offsets(data)
    check(len(data) >= 2 * MiB and len(chunks) >= 4, f"{len(data)} bytes in {len(chunks)} chunks")
    whole = report_json(trace)
    eq((whole["events"]["allocations"], whole["events"]["frees"], whole["events"]["failed"],
        whole["events"]["frees_unknown"]), (5600702, 5600001, 1, 0),
       "drv_longhaul 700000, read ahead: every free after its allocation")
    # the peak at step 70000 (drv_longhaul.c): weights, 71 leaks, 36 activations, the burst
    eq(whole["peak"]["bytes"], 100 * MiB + 71 * 4 * KiB + 36 * 64 * KiB + 64 * MiB, "the peak")
    eq((whole["trace"]["complete"], whole["trace"]["blocks"]), (True, len(chunks)), "whole")

    tmp = tempfile.mkdtemp(prefix="gpushim-ahead-")
    bad = bytearray(data[:chunks[-1] + 10])
    bad[chunks[1] + 20] ^= 0xff
    damaged_path = os.path.join(tmp, "damaged.trace")
    with open(damaged_path, "wb") as f:
        f.write(bad)
    removed_path = os.path.join(tmp, "removed.trace")
    with open(removed_path, "wb") as f:
        f.write(data[:chunks[1]] + data[chunks[2]:chunks[-1] + 10])
    damaged, removed = report_json(damaged_path), report_json(removed_path)
    eq((damaged["trace"]["complete"], damaged["trace"]["damaged_blocks"],
        damaged["trace"]["blocks"], damaged["trace"]["truncated_at"]),
       (False, 1, len(chunks) - 2, chunks[-1]), "the damaged and cut trace")
    eq((removed["trace"]["damaged_blocks"], removed["trace"]["blocks"]), (0, len(chunks) - 2),
       "the trace without that chunk")
    check(damaged["events"]["allocations"] < whole["events"]["allocations"],
          "the damaged chunk's events are missing")
    for key in ("events", "peak", "leaks", "devices"):
        eq(damaged[key], removed[key], f"{key}: a damaged chunk skipped = a chunk never there")


def test_launcher():
    tmp = tempfile.mkdtemp(prefix="gpushim-run-")
    p = subprocess.run([E.gpushim, "run", "-o", os.path.join(tmp, "job.%p.trace"), "--",
                        E.prog("drv_schedule")], capture_output=True, text=True,
                       env=launcher_env())
    eq(p.returncode, 0, "status of run")
    eq(p.stdout, "schedule done\n", "the command's output")
    files = os.listdir(tmp)
    eq(len(files), 1, "traces written")
    path = os.path.join(tmp, files[0])
    check(f"trace written to {path}" in p.stderr and f"gpushim report {path}" in p.stderr,
          "run tells where the trace is: " + p.stderr)
    eq(report_json(path)["events"]["allocations"], 13, "allocations seen through run")

    p = subprocess.run([E.gpushim, "run", "--", E.prog("nocuda")], capture_output=True, text=True,
                       cwd=tmp, env=launcher_env())
    eq(p.returncode, 3, "run passes the exit status on")
    p = subprocess.run([E.gpushim, "run", "--", "/nonexistent/program"], capture_output=True,
                       text=True, cwd=tmp, env=launcher_env())
    eq(p.returncode, 127, "status for a command that does not exist")
    p = subprocess.run([E.gpushim, "run", "--", "/bin/sh", "-c", "kill -TERM $$"],
                       capture_output=True, text=True, cwd=tmp, env=launcher_env())
    eq(p.returncode, 128 + 15, "status for a command ended by a signal")
    for argv, status, want in [(["--help"], 0, "run [-o FILE]"), (["help", "report"], 0, "--json"),
                               (["run", "--help"], 0, "GPUSHIM_OUTPUT"), (["report"], 2, "which trace"),
                               (["report", "--top", "x", "t"], 2, "--top"), (["frobnicate"], 2, "no command"),
                               (["run"], 2, "which command"), (["--version"], 0, "gpushim "),
                               (["help", "frobnicate"], 2, "gpushim help: no command 'frobnicate'")]:
        p = subprocess.run([E.gpushim, *argv], capture_output=True, text=True, env=launcher_env())
        eq(p.returncode, status, f"status of gpushim {' '.join(argv)}")
        check(want in p.stdout + p.stderr, f"gpushim {' '.join(argv)} says {want!r}")


def test_never_overwrites_or_follows_symlinks():
    tmp = tempfile.mkdtemp(prefix="gpushim-files-")
    target = os.path.join(tmp, "precious")
    with open(target, "w") as f:
        f.write("keep me")
    os.symlink(target, os.path.join(tmp, "fixed.trace"))
    r = run([E.prog("drv_schedule")], cwd=tmp, output="fixed.trace")
    eq(r.rc, 0, "status")
    eq(open(target).read(), "keep me", "the symlink's target")
    check(os.path.islink(os.path.join(tmp, "fixed.trace")), "the symlink is left alone")
    check(f"{tmp}/fixed.trace exists; writing {tmp}/fixed-1.trace instead" in r.err,
          "says so, with the full names: " + r.err)
    eq(report_json(os.path.join(tmp, "fixed-1.trace"))["events"]["allocations"], 13, "the new file")


def test_bad_settings_and_unwritable_output():
    r = same_behaviour([E.prog("drv_schedule")])  # the reference output
    bad = run([E.prog("drv_schedule")], env={"GPUSHIM_STACK_DEPTH": "lots"})
    eq((bad.rc, bad.out), (r.rc, r.out), "program unaffected by a bad setting")
    eq(bad.err.count("gpushim: GPUSHIM_STACK_DEPTH=lots is not a number"), 1, "said once: " + bad.err)
    # A path that cannot be made, even by root: a plain file stands where a
    # directory would have to be created.
    blocker = os.path.join(tempfile.mkdtemp(prefix="gpushim-blocked-"), "plain")
    open(blocker, "w").close()
    target = os.path.join(blocker, "dir", "t.trace")
    gone = run([E.prog("drv_schedule")], output=target)
    eq((gone.rc, gone.out), (r.rc, r.out), "program unaffected by an unwritable trace")
    eq(gone.err.count(f"gpushim: cannot create trace {target}: Not a directory"), 1,
       "said once: " + gone.err)


def test_descriptor_taken_by_the_program():
    tmp = tempfile.mkdtemp(prefix="gpushim-fds-")
    mine = os.path.join(tmp, "mine.txt")
    r = run([E.prog("drv_closefds"), mine], cwd=tmp)
    eq((r.rc, r.out), (0, "closefds done\n"), "the program ran")
    eq(open(mine).read(), "mine\n", "the program's own file")
    eq(r.err.count("gpushim: cannot write trace"), 1, "said once: " + r.err)


def test_stack_depth_setting():
    r = run([E.prog("drv_schedule")], env={"GPUSHIM_STACK_DEPTH": "3"})
    d = report_json(one_trace(r))
    for s in d["leaks"]["sites"]:
        check(len(s["frames"]) <= 3, f"at most 3 frames: {s['frames']}")
    eq(d["leaks"]["bytes"], 4 * MiB + 768 * KiB, "same figures with short stacks")


def test_real_nvidia_runtime_without_driver():
    exe = E.prog("real_cudart")
    if not os.path.exists(exe):
        return "SKIP (no nvcc on this machine)"
    env = {"LD_LIBRARY_PATH": ""}
    r = same_behaviour([exe], env=env)
    check("cudaGetDeviceCount" in r.out, "the program ran: " + r.out)
    eq(r.files, [], "trace files (nothing reached a driver)")


def test_names_for_multi_process_jobs():
    tmp = tempfile.mkdtemp(prefix="gpushim-names-")
    env = launcher_env()
    env.update({"RANK": "5", "LOCAL_RANK": "1"})
    tmpl = os.path.join(tmp, "new", "dir", "job-r%r-l%l-%t.trace")
    p = subprocess.run([E.gpushim, "run", "-o", tmpl, "--", E.prog("drv_schedule")],
                       capture_output=True, text=True, env=env)
    eq(p.returncode, 0, "status of run")
    made = os.listdir(os.path.join(tmp, "new", "dir"))
    eq(len(made), 1, "one trace, in directories made for it")
    check(made[0].startswith("job-r5-l1-") and len(made[0]) == len("job-r5-l1-20261202-153000.trace"),
          f"name: {made[0]}")
    path = os.path.join(tmp, "new", "dir", made[0])
    check(f"trace written to {path}" in p.stderr, "run finds it, whatever the time: " + p.stderr)


def test_runtime_in_a_library_opened_locally():
    r = same_behaviour([E.prog("dl_rt_plugin")])
    eq(r.out, "cudaMalloc returned 0\n", "the call reached the library's own runtime")
    d = report_json(one_trace(r))
    eq([(s["bytes"], s["api"], s["frames"][0]["function"]) for s in d["leaks"]["sites"]],
       [(2 * MiB, "cudaMalloc", "plugin_cuda_malloc")], "the event, labelled")


def test_rtld_next_from_the_program_with_another_preload_first():
    other = E.prog("libgsnext.so")
    env = dict(os.environ)
    env.update(E.env)
    outs = []
    for preload in (E.preload.replace(E.shim, other), E.preload.replace(E.shim, other + ":" + E.shim)):
        env["LD_PRELOAD"] = preload
        p = subprocess.run([E.prog("dl_next")], capture_output=True, text=True, env=env,
                           cwd=tempfile.mkdtemp())
        outs.append((p.returncode, p.stdout))
    eq(outs[0], (0, "probe found 42\ngetpid found\n"), "without the shim")
    eq(outs[1], outs[0], "with the shim after another preloaded library")
