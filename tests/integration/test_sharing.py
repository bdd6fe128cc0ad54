"""test_sharing.py - what a trace keeps of the command line, and what the
analyzer leaves out for a trace to be shared (docs/commands.md "What a
trace holds, and sharing one"): GPUSHIM_COMMAND=0 keeps none of it, =name
the program's name alone; --redact leaves the host and the command line
out of every screen of every command that reads traces.

The program is drv_schedule, given an argument it does not read: a secret.
"""
import gzip
import json
import os
import socket
import subprocess
import tempfile

from harness import E, check, eq, one_trace, run

SECRET = "--token=hunter2-s3cr3t"


def recorded(command=None):
    env = {"GPUSHIM_COMMAND": command} if command is not None else {}
    r = run([E.prog("drv_schedule"), SECRET], env=env)
    eq(r.rc, 0, r.err)
    return r, one_trace(r)


def gpushim(*args):
    p = subprocess.run([E.gpushim, *args], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, f"gpushim {' '.join(args)}: {p.stderr}")
    return p.stdout


def test_gpushim_command_keeps_all_the_name_or_none_of_the_command_line():
    prog = E.prog("drv_schedule")
    for command, want, text in ((None, f"{prog} {SECRET}", f"{prog} {SECRET}"),
                                ("1", f"{prog} {SECRET}", f"{prog} {SECRET}"),
                                ("name", "drv_schedule", "drv_schedule"),
                                ("0", "", "(not recorded)")):
        r, trace = recorded(command)
        eq(r.err if not E.wrapper else "", "", f"GPUSHIM_COMMAND={command}: nothing said")
        d = json.loads(gpushim("report", "--json", trace))
        eq(d["process"]["command"], want, f"GPUSHIM_COMMAND={command}")
        check(f"  command   {text}\n" in gpushim("report", trace), f"{command}: the text's line")
        with open(trace, "rb") as f:
            eq(SECRET.encode() in f.read(), command in (None, "1"),
               f"GPUSHIM_COMMAND={command}: the secret's bytes in the trace file")
    r, trace = recorded("sometimes")
    check("gpushim: GPUSHIM_COMMAND=sometimes is not 0, name or 1; the whole command line is kept"
          in r.err, r.err)
    eq(json.loads(gpushim("report", "--json", trace))["process"]["command"], f"{prog} {SECRET}",
       "a bad value: the default")


def test_redact_leaves_the_host_and_command_out_of_every_screen():
    _, trace = recorded()
    host = socket.gethostname()
    outs = {}
    for args in (["report"], ["report", "--json"], ["export", "--format=json"],
                 ["export", "--format=html"], ["export", "--format=perfetto"],
                 ["export", "--format=folded"], ["diff", trace], ["diff", "--json", trace],
                 ["report", trace], ["report", "--json", trace]):
        plain = gpushim(*args, trace)
        red = gpushim(*args, "--redact", trace)
        outs[" ".join(args)] = red
        check(SECRET not in red, f"{args}: the command line left out")
        if SECRET in plain:
            check(len(red) < len(plain), f"{args}: shorter by it")
    d = json.loads(outs["report --json"])
    eq((d["process"]["host"], d["process"]["command"]), (None, None), "JSON: null")
    check(d["process"]["pid"] > 0, "the rest as it was")
    check("  process   " in outs["report"] and " on (left out: --redact), " in outs["report"]
          and "  command   (left out: --redact)\n" in outs["report"], outs["report"][:300])
    d = json.loads(outs[f"diff --json {trace}"])
    eq((d["a"]["host"], d["b"]["host"]), (None, None), "diff's hosts")
    ranks = json.loads(outs[f"report --json {trace}"])
    eq([r["host"] for r in ranks["ranks"]], [None, None], "the ranks' hosts")
    check(f" on {host}" in gpushim("report", trace), "without --redact, the host is shown")
    eq(json.loads(outs["export --format=perfetto"])["otherData"]["command"], None, "perfetto")
    # the binary formats, written to a file: pprof's comments and the
    # snapshot's pickle hold no command line either
    for fmt in ("pprof", "torch-snapshot"):
        got = {}
        for redact in ([], ["--redact"]):
            out = os.path.join(tempfile.mkdtemp(prefix="gpushim-share-"), f"shared.{fmt}")
            p = subprocess.run([E.gpushim, "export", f"--format={fmt}", *redact, "-o", out, trace],
                               capture_output=True, timeout=60)
            eq(p.returncode, 0, p.stderr)
            with open(out, "rb") as f:
                data = f.read()
            got[bool(redact)] = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        check(SECRET.encode() not in got[True], f"{fmt}: the command line left out")
        if SECRET.encode() in got[False]:
            check(b"(left out: --redact)" in got[True], f"{fmt}: says what it left out")
