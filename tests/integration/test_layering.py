"""test_layering.py - tests/layering/check_layers.py (make layering): small
trees written in a temporary directory, each breaking one rule (an include
up a layer or across to the other side, a call up a layer or through a seam
it may not use, two files calling each other, an analyzer-only symbol in a
libgpushim.so built here with cc), must be reported, with exit status 1, 0
under --warn; a clean tree passes. Then this tree: it must keep every rule
(make layering, which make check runs, fails on it too)."""
import os
import re
import subprocess
import sys
import tempfile

from harness import E, check, eq

# checks tests/layering/check_layers.py on trees made here (make layering
# checks each build's own tree and library): the same in every pass
ONCE = "the layering checker on trees of its own, not this build"

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CHECKER = os.path.join(ROOT, "tests", "layering", "check_layers.py")

def key(line):
    """A report line without what changes with unrelated edits: the line
    number of an include, the symbols of a call, the way round a cycle."""
    line = re.sub(r"^(\S+?):\d+: ", r"\1: ", line[len("layering: "):])
    return line.split(" (")[0]


def layering(root, *args):
    """The checker's exit status and its report as keys (less the summary)."""
    p = subprocess.run([sys.executable, CHECKER, "--root", root] + list(args),
                       capture_output=True, text=True)
    lines = p.stdout.splitlines()
    check(lines and not p.stderr, f"the checker ran: {p.stdout}{p.stderr}")
    problems = [key(x) for x in lines[:-1]]
    if problems:
        eq(lines[-1].split(" (")[0], f"layering: {len(problems)} problem(s)", "the summary")
    return p.returncode, problems


def tree(files):
    """A tree of these files ({path: text}) in a new directory."""
    root = tempfile.mkdtemp(prefix="gpushim-layering-")
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    return root


def header(name):
    return f"/* {name} - a header. Included by: the fixture. */\n"


def reported(files, want, *args):
    """Checks the tree's report is exactly want, with status 1 (0 with --warn)."""
    root = tree(files)
    rc, got = layering(root, *args)
    eq(sorted(got), sorted(want), "the problems reported")
    eq(rc, 1 if want else 0, "the exit status")
    if want:
        eq(layering(root, "--warn", *args)[0], 0, "the exit status with --warn")


def test_layering_an_include_up_a_layer_or_across_sides():
    reported({
        "include/gpushim_trace.h": "",
        "analyzer/symbols/symbolize.h": header("symbolize.h"),
        "shim/record/pyread.h": header("pyread.h") + '#include "gpushim_trace.h"\n',
        "analyzer/symbols/sites.c": '#include "symbolize.h"\n',     # beside: its own layer
        "analyzer/trace/decode.c": '#include "gpushim_trace.h"\n'
                                   '#include "analyzer/symbols/symbolize.h"\n',
        "analyzer/symbols/pyframes.c": '#include "../../shim/record/pyread.h"\n',
        "shim/record/python.c": '#include "pyread.h"\n#include "nowhere.h"\n',
        "analyzer/new.c": "",
    }, ["analyzer/trace/decode.c: includes analyzer/symbols/symbolize.h",
        "analyzer/symbols/pyframes.c: includes shim/record/pyread.h",
        "shim/record/python.c: includes \"nowhere.h\"",
        "analyzer/new.c: in no layer"], "--no-objects")


def test_layering_headers_that_include_each_other_long_ones_and_one_in_no_layer():
    reported({
        "analyzer/model/model.h": header("model.h") + '#include "analyzer/model/marks.h"\n',
        "analyzer/model/marks.h": header("marks.h") + '#include "analyzer/model/model.h"\n',
        "shim/base/base.h": "/* base.h - no line saying who includes it */\n" + "\n" * 300,
        "analyzer/analyzer.h": header("analyzer.h"),  # a header of the whole side: no layer
        "shim/bound/bound.c": '#include "shim/base/base.h"\n#include "analyzer/model/model.h"\n',
        "shim/file/ring.c": '#include "shim/base/base.h"\n#include "analyzer/analyzer.h"\n',
        "tests/unit/test_idmap.c": '#include "../../analyzer/analyzer.h"\n'
                                   '#include "../../shim/base/base.h"\n',
    }, ["analyzer/analyzer.h: in no layer",
        "shim/base/base.h: longer than 300 lines",
        "shim/base/base.h: its first comment does not say \"Included by:\"",
        "headers include each other: analyzer/model/marks.h analyzer/model/model.h"],
             "--no-objects")


# A tree with objects: C files compiled with cc as make does (build/obj and,
# position-independent, build/obj/pic) and a libgpushim.so of the pic ones.
CLEAN = {
    "analyzer/util/idmap.c": "int gs_idmap_new(void) { return 1; }\n",
    "analyzer/trace/decode.c": "int gs_idmap_new(void);\n"
                               "int gs_decode_chunk(void) { return gs_idmap_new(); }\n",
    "analyzer/model/replay.c": "int gs_decode_chunk(void);\n"
                         "int gs_replay_init(void) { return gs_decode_chunk(); }\n",
    "analyzer/model/checkpoint.c": "int gs_replay_init(void);\n"
                             "int gs_checkpoint_write(void) { return gs_replay_init(); }\n",
    "shim/bound/bound.c": "int gs_replay_init(void);\nint gs_checkpoint_write(void);\n"
                    "int gs_bound_start(void) { return gs_replay_init() + gs_checkpoint_write(); }\n",
    "shim/writer/writer.c": "int gs_bound_start(void);\nint gs_decode_chunk(void);\n"
                     "int gs_emit(void) { return gs_bound_start() + gs_decode_chunk(); }\n",
    "analyzer/report/report_text.c": "int gs_replay_init(void);\n"
                                     "int gs_report_text(void) { return gs_replay_init(); }\n",
}
IN_SHIM = ["analyzer/util/idmap.c", "analyzer/trace/decode.c", "analyzer/model/replay.c",
           "analyzer/model/checkpoint.c"]


def built(files, in_shim):
    """The tree, its objects, and libgpushim.so of shim/*.c and in_shim."""
    root = tree(files)
    build = os.path.join(root, "build")
    pic = []
    for src in sorted(files):
        if not src.endswith(".c"):
            continue
        variants = [("", [])] if src.startswith("analyzer/") else []
        if src.startswith("shim/") or src in in_shim:
            variants.append(("pic", ["-fPIC", "-fvisibility=hidden"]))
        for variant, flags in variants:
            o = os.path.join(build, "obj", variant, src[:-2] + ".o")
            os.makedirs(os.path.dirname(o), exist_ok=True)
            p = subprocess.run(["cc", "-c", "-O2", "-MMD", "-I" + root] + flags
                               + [os.path.join(root, src), "-o", o], capture_output=True, text=True)
            eq(p.returncode, 0, f"cc {src}: {p.stderr}")
            if variant:
                pic.append(o)
    p = subprocess.run(["cc", "-shared", "-o", os.path.join(build, "libgpushim.so")] + pic,
                       capture_output=True, text=True)
    eq(p.returncode, 0, f"linking libgpushim.so: {p.stderr}")
    return root, build


def reported_built(files, in_shim, want):
    root, build = built(files, in_shim)
    rc, got = layering(root, "--build", build)
    eq(sorted(got), sorted(want), "the problems reported")
    eq(rc, 1 if want else 0, "the exit status")
    if want:
        eq(layering(root, "--build", build, "--warn")[0], 0, "the exit status with --warn")


def test_layering_a_tree_that_keeps_the_rules_passes():
    reported_built(CLEAN, IN_SHIM, [])


def test_layering_calls_up_a_layer_or_through_a_seam():
    files = dict(CLEAN)
    files["analyzer/findings/growth.c"] = "int gs_growth_on_mark(void) { return 2; }\n"
    files["analyzer/model/marks.c"] = ("int gs_growth_on_mark(void);\n"
                                 "int gs_marks_on_mark(void) { return gs_growth_on_mark(); }\n")
    files["shim/record/record.c"] = ("int gs_replay_init(void);\n"
                              "int gs_record_alloc(void) { return gs_replay_init(); }\n")
    reported_built(files, IN_SHIM, ["analyzer/model/marks.c calls analyzer/findings/growth.c",
                                    "shim/record/record.c calls analyzer/model/replay.c"])


def test_layering_includes_only_the_compiler_sees():
    # <...> and an include through a macro pass the regex; the compiler's
    # dependency file (-MMD) names what was read, each header's own
    # includes too
    files = dict(CLEAN)
    files["analyzer/findings/growth.h"] = header("growth.h")
    files["analyzer/findings/oom.h"] = header("oom.h") + '#include "analyzer/findings/growth.h"\n'
    files["analyzer/model/state.c"] = "#include <analyzer/findings/growth.h>\n"
    files["analyzer/model/marks.c"] = ('#define FINDINGS "analyzer/findings/oom.h"\n'
                                       "#include FINDINGS\n")
    reported_built(files, IN_SHIM, [
        "analyzer/model/state.c is built from analyzer/findings/growth.h",
        "analyzer/model/marks.c is built from analyzer/findings/oom.h",
        "analyzer/model/marks.c is built from analyzer/findings/growth.h"])


def test_layering_a_screen_built_from_the_model_struct():
    # a screen of the findings formats struct gs_findings: one that the
    # model's struct reaches, even through a header, is reported
    files = dict(CLEAN)
    files["analyzer/model/replay.h"] = header("replay.h")
    files["analyzer/report/roles_report.h"] = header("roles_report.h") + \
        '#include "analyzer/model/replay.h"\n'
    files["analyzer/report/report_text.c"] = ('#include "analyzer/report/roles_report.h"\n'
                                              + CLEAN["analyzer/report/report_text.c"])
    files["analyzer/report/load.c"] = '#include "analyzer/model/replay.h"\n'
    reported_built(files, IN_SHIM, [
        "analyzer/report/report_text.c is built from analyzer/model/replay.h"])


def test_layering_two_files_calling_each_other():
    files = dict(CLEAN)
    files["analyzer/util/ordmap.c"] = ("int gs_idmap_put(void);\n"
                                       "int gs_ordmap_put(void) { return gs_idmap_put(); }\n")
    files["analyzer/util/idmap.c"] += ("int gs_ordmap_put(void);\n"
                                       "int gs_idmap_put(void) { return gs_ordmap_put(); }\n")
    reported_built(files, IN_SHIM, ["gpushim: a cycle of 2 files: "
                                    "analyzer/util/idmap.c analyzer/util/ordmap.c"])


def test_layering_analyzer_only_symbols_in_libgpushim_so():
    files = dict(CLEAN)
    files["analyzer/model/checkpoint.c"] += (
        "int gs_checkpoint_load(void) { return 3; }\n"
        # a part the compiler split off a function (as gcc names them)
        "int split(void) __asm__(\"gs_oom_on_failure.cold\");\nint split(void) { return 6; }\n")
    files["analyzer/findings/growth.c"] = "int gs_growth_on_mark(void) { return 2; }\n"
    files["analyzer/findings/allocator_view.c"] = "int gs_allocator_mode(void) { return 4; }\n"
    files["analyzer/findings/verdict.c"] = "int gs_oom_verdict(void) { return 5; }\n"  # not linked
    reported_built(files, IN_SHIM + ["analyzer/findings/growth.c", "analyzer/findings/allocator_view.c"],
                   ["libgpushim.so holds gs_checkpoint_load",   # by its name
                    "libgpushim.so holds gs_oom_on_failure",
                    "libgpushim.so holds gs_growth_on_mark",
                    "libgpushim.so holds gs_allocator_mode"])   # by the object defining it


def test_layering_libgpushim_so_must_be_the_shim():
    files = dict(CLEAN)
    files["shim/writer/writer.c"] = "int gs_write(void) { return 0; }\n"
    reported_built(files, IN_SHIM, ["libgpushim.so lacks gs_emit"])


def test_layering_this_tree_keeps_the_rules():
    rc, got = layering(ROOT, "--build", E.build)
    check(not got, "layering violations (make layering says what and where):\n  "
          + "\n  ".join(got))
    eq(rc, 0, "the exit status")
