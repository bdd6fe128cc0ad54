"""harness.py - what the integration tests share: running a program with and
without the shim, reading its trace through `gpushim report --json`, and
exact comparisons that say what differed.
"""
import json
import os
import re
import subprocess
import tempfile

MiB = 1024 * 1024
KiB = 1024
# Steps of a churn (an allocation of 4 to 68 KiB and its free each,
# progs.h's churn_size) that a trace bounded to 4 MiB is rotated within: its
# sizes keep format 3 at about 3.3 bytes a step on any machine (6.0 MB here,
# drv_chdir), and the shim rotates a 4 MiB trace past 2.62 MiB.
ROTATED_CHURN = 1_800_000


class Env:
    """Paths and the way to preload the shim in this build (set by the runner)."""

    def configure(self, build, sanitized, tsan=False, valgrind=None, unwind_check=False,
                  again=False):
        self.build = os.path.abspath(build)
        # --again: a further pass of make test over the same sources (the
        # sanitized and the clang builds); the tests marked once() are the
        # first pass's alone
        self.again = again
        # --unwind-check: every run under the shim compares the fast
        # unwinder's stacks with libunwind's (GPUSHIM_UNWIND=check, unless
        # the test sets GPUSHIM_UNWIND); run() takes the shim's summary line
        # out of stderr, adds it to unwind_tally, and fails on a difference.
        self.unwind_check = unwind_check
        self.unwind_tally = {"runs": 0, "stacks": 0, "walked": 0, "went_on": 0, "all_checked": 0,
                             "alone": 0}
        self.shim = os.path.join(self.build, "libgpushim.so")
        self.gpushim = os.path.join(self.build, "gpushim")
        self.preload = self.shim
        self.sanitized = sanitized or tsan
        self.tsan = tsan
        self.valgrind = valgrind  # the tool's name, or None
        self.env = {}
        # make check-valgrind: the runs under the shim go through valgrind
        # (memcheck or helgrind); its messages on stderr, or its exit status
        # 99, fail the test (run() looks for them).
        self.wrapper = []
        if valgrind:
            supp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "valgrind",
                                valgrind + ".supp")
            # --fair-sched=yes: valgrind runs one thread at a time, and by
            # default a thread that makes no system call keeps that turn; a
            # thread allocating in a loop with stacks captured by the fast
            # unwinder (no syscall an event, where libunwind's address probe
            # made one) then starved drv_fork's main thread for minutes
            self.wrapper = ["valgrind", "--tool=" + valgrind, "-q", "--fair-sched=yes",
                            "--error-exitcode=99", "--suppressions=" + os.path.normpath(supp)]
            if valgrind == "memcheck":
                self.wrapper.append("--leak-check=no")
        if tsan:
            # A ThreadSanitizer build (make check-tsan): its runtime first, as
            # below; every report fails the test (run() looks for one). A
            # child of a threaded fork may start threads (the writer's).
            self.env["LD_LIBRARY_PATH"] = os.path.join(self.build, "sim")
            self.env["TSAN_OPTIONS"] = "halt_on_error=1:die_after_fork=0"
            cc = os.environ.get("CC", "cc")
            libtsan = subprocess.run([cc, "-print-file-name=libtsan.so"], capture_output=True,
                                     text=True).stdout.strip()
            self.preload = libtsan + ":" + self.shim
        elif sanitized:
            # Sanitizers intercept dlopen, which then searches the run paths of
            # the sanitizer's runtime instead of the program's: say where the
            # simulated driver is.
            self.env["LD_LIBRARY_PATH"] = os.path.join(self.build, "sim")
            # The sanitizer runtime must come before any instrumented library.
            cc = os.environ.get("CC", "cc")
            libasan = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                                     text=True).stdout.strip()
            self.preload = libasan + ":" + self.shim

    def prog(self, name):
        return os.path.join(self.build, "progs", name)


E = Env()  # configured by run_tests.py before any test runs


class Run:
    def __init__(self, p, files):
        self.rc = p.returncode
        self.out = p.stdout
        self.err = p.stderr
        self.files = files


def churn_sizes(n):
    """The sizes of a churn's first n allocations (progs.h's churn_size)."""
    x, m, sizes = 88172645463325252, (1 << 64) - 1, []
    for _ in range(n):
        x ^= (x << 13) & m
        x ^= x >> 7
        x ^= (x << 17) & m
        sizes.append(4 * KiB + (x >> 48))
    return sizes


def run(argv, shim=True, env=None, cwd=None, output=None, timeout=120, preexec=None):
    """Runs argv in a fresh directory (or cwd), with env added to the
    environment (a value of None unsets); returns Run with the trace files it
    left there."""
    cwd = cwd or tempfile.mkdtemp(prefix="gpushim-test-")
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e.pop("GPUSHIM_OUTPUT", None)
    e.update(E.env)
    for k, v in (env or {}).items():  # None: unset it
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    if shim:
        e["LD_PRELOAD"] = E.preload
        argv = E.wrapper + list(argv)
        if E.unwind_check and "GPUSHIM_UNWIND" not in (env or {}):
            e["GPUSHIM_UNWIND"] = "check"
    if output:
        e["GPUSHIM_OUTPUT"] = output
    p = subprocess.run(argv, capture_output=True, text=True, env=e, cwd=cwd, timeout=timeout,
                       preexec_fn=preexec)
    if e.get("GPUSHIM_UNWIND") == "check" and "GPUSHIM_UNWIND" not in (env or {}):
        p.stderr = unwind_checked(p.stderr, argv)
    files = sorted(f for f in os.listdir(cwd) if f.endswith(".trace"))
    no_tsan_report(p.stderr, argv)
    if E.wrapper and (p.returncode == 99 or "\n==" in "\n" + p.stderr):
        raise AssertionError(f"valgrind's report running {argv} (status {p.returncode}):\n"
                             + p.stderr[:6000])
    return Run(p, [os.path.join(cwd, f) for f in files])


UNWIND_LINE = re.compile(r"gpushim: unwind check: (\d+) stacks, (\d+) walked \((\d+) going on from "
                         r"the walk before, (\d+) of them checked to the end\), (\d+) by "
                         r"libunwind alone, (\d+) differed\n")


def unwind_checked(err, argv):
    """The run's stderr without the lines of GPUSHIM_UNWIND=check (one for
    each process that captured a stack), counted in E.unwind_tally; a stack
    that differed fails the test."""
    if err is None:
        return err
    check("gpushim: unwind check: a stack differs" not in err,
          f"the fast unwinder differed from libunwind running {argv}:\n{err[:3000]}")
    for m in UNWIND_LINE.finditer(err):
        stacks, walked, went_on, all_checked, alone, differed = map(int, m.groups())
        eq(differed, 0, f"stacks that differed from libunwind's running {argv}")
        t = E.unwind_tally
        t["runs"] += 1
        t["stacks"] += stacks
        t["walked"] += walked
        t["went_on"] += went_on
        t["all_checked"] += all_checked
        t["alone"] += alone
    return UNWIND_LINE.sub("", err)


def no_tsan_report(err, argv):
    """In a ThreadSanitizer build, a report in a run's stderr fails the test."""
    if E.tsan and "WARNING: ThreadSanitizer" in (err or ""):
        raise AssertionError(f"ThreadSanitizer report running {argv}:\n" + err[:6000])


def once(why):
    """Marks a test whose outcome cannot depend on how the project was built
    (it checks a tool of its own build, or a viewer on an export the
    analyzer writes the same in every build), which make test's further
    passes (run_tests.py --again) leave to its first: why says so."""
    def mark(test):
        def run_once():
            if E.again:
                return f"{why}: make test's first pass ran it"
            return test()
        run_once.__name__ = test.__name__
        run_once.__doc__ = test.__doc__
        return run_once
    return mark


def shown_path(path):
    """A source file as the text report shows it: relative to the working
    directory when under it (report_text.c's shown_path)."""
    cwd = os.getcwd()
    return path[len(cwd) + 1:] if cwd != "/" and path.startswith(cwd + "/") else path


def report(trace, *args):
    p = subprocess.run([E.gpushim, "report", *args, trace], capture_output=True, text=True,
                       timeout=120)
    return p


def report_json(trace):
    """report --json: exit 0 and "complete" with no warnings, or exit 4, each
    warning said on stderr as in the JSON, and "complete" false."""
    p = report(trace, "--json")
    check(p.returncode in (0, 4), f"report --json failed ({p.returncode}): {p.stderr}")
    d = json.loads(p.stdout)
    incomplete_as_said("report", p, d)
    return d


def warned(cmd, p):
    """gpushim CMD exited 4: its stderr is warnings, then the line that says
    why the status is 4."""
    lines = p.stderr.splitlines()
    eq((p.returncode, lines[-1:]),
       (4, [f"gpushim {cmd}: what was read is incomplete: exit status 4 (--partial: 0)"]),
       f"gpushim {cmd}'s last line")
    check(len(lines) > 1 and all(x.startswith(f"gpushim {cmd}: warning: ") for x in lines[:-1]),
          f"warnings before it: {p.stderr}")


def incomplete_as_said(cmd, p, d):
    """The exit status, stderr and the JSON's "complete" and "warnings" of
    gpushim CMD agree (docs/commands.md, "Exit status")."""
    said = [x for x in p.stderr.splitlines() if x.startswith(f"gpushim {cmd}: warning: ")]
    eq((d["complete"], p.returncode == 4, len(said)),
       (not d["warnings"], bool(d["warnings"]), len(d["warnings"])),
       f"complete, exit 4 and the warnings said: {p.stderr}")
    for w, line in zip(d["warnings"], said):
        check(line.endswith(": " + w["message"]), f"said as in the JSON: {line} / {w}")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def eq(got, want, what):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def one_trace(r):
    eq(len(r.files), 1, f"trace files left ({r.files}); stderr: {r.err}")
    return r.files[0]


def site_summary(sites):
    """[(bytes, count, innermost function)] of a list of SITEs."""
    return [(s["bytes"], s["count"], s["frames"][0]["function"] if s["frames"] else None)
            for s in sites]


def same_behaviour(argv, env=None):
    """Runs argv with and without the shim; checks that the program sees the
    same; returns the run under the shim."""
    bare = run(argv, shim=False, env=env)
    shimmed = run(argv, shim=True, env=env)
    eq(shimmed.rc, bare.rc, "exit status under the shim")
    eq(shimmed.out, bare.out, "stdout under the shim")
    eq(shimmed.err, bare.err, "stderr under the shim")
    return shimmed


def chunk_offsets(data):
    """Offsets of the chunks of a trace, found by walking its framing."""
    hlen = int.from_bytes(data[12:16], "little")
    off = 16 + hlen + 4
    out = []
    while off + 16 <= len(data):
        check(data[off:off + 4] == b"GBLK", f"chunk magic at {off}")
        out.append(off)
        off += 16 + int.from_bytes(data[off + 4:off + 8], "little")
    return out


def launcher_env():
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e.pop("GPUSHIM_OUTPUT", None)
    e.update(E.env)
    if E.preload != E.shim:  # sanitized: the runtime goes first, the launcher adds the shim
        e["LD_PRELOAD"] = E.preload.split(":")[0]
    return e
