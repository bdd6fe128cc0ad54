"""test_python_handoff.py - an allocation on a thread that ran no Python,
made for a thread that waits for it (issue 42 item 1): PyTorch's autograd
engine threads allocate the gradients while the thread that called
backward() waits in torch/autograd/graph.py's _engine_run_backward with the
GIL released. The engine thread of tests/progs/python/gsext.c is made as
PythonEngine::thread_init makes PyTorch's (a thread state, no frames), the
wait is in a stand-in of torch/autograd/graph.py (tests/progs/python/
handoff); the site then shows the waiting thread's Python lines, marked as
its (JSON "waiter"), on every CPython here. GPUSHIM_HANDOFF names other
waits, or none ("0"); a C pool thread with no thread state stays native
(test_python_nogil.py).
"""
import os

from harness import MiB, check, eq, one_trace, report, report_json, run
from test_python import PROGS, at, for_version, prog, pythons
from test_python_nogil import EXT_SRC, ext_env

HANDOFF = os.path.join(PROGS, "handoff")
GRAPH = os.path.join(HANDOFF, "torch", "autograd", "graph.py")


def engine_line():
    with open(EXT_SRC) as f:
        for n, text in enumerate(f, 1):
            if "cuMemAlloc_v2(&job->out[i], job->size)" in text:
                return n
    raise AssertionError("no engine allocation in gsext.c")


def graph_line():
    with open(GRAPH) as f:
        return next(n for n, t in enumerate(f, 1) if t.rstrip().endswith("# site: engine"))


def run_handoff(py, *args, n=1, **env):
    e = ext_env(py, **env)
    e["PYTHONPATH"] = os.pathsep.join([e["PYTHONPATH"], HANDOFF])
    r = run([py, prog("handoff_train.py"), *args], env=e)
    eq((r.rc, r.out, r.err), (0, f"{3 * n}\n", ""), f"{py}: the run")
    return one_trace(r)


def site(trace, n=1):
    d = report_json(trace)
    eq((d["leaks"]["bytes"], d["leaks"]["count"]), (3 * n * MiB, 3 * n), "the gradients, kept")
    eq(len(d["leaks"]["sites"]), 1, "one site")
    return d["leaks"]["sites"][0]


def python_frames(s):
    return [(f["function"], f["file"], f["line"]) for f in s["frames"] if f["language"] == "python"]


def outer(marker):
    return [at("handoff_train.py", "train_step", marker), at("handoff_train.py", "main", "step"),
            at("handoff_train.py", "<module>", "main")]


def test_an_engine_threads_allocation_shows_the_waiting_threads_lines():
    for py in pythons():
        trace = run_handoff(py)
        s = site(trace)
        native = [(f["function"], f["line"]) for f in s["frames"] if f["language"] == "native"]
        eq(native[0], ("engine_thread", engine_line()), f"{py}: the engine's own frame first")
        eq(python_frames(s), for_version(py, [("_engine_run_backward", GRAPH, graph_line())]
                                         + outer("backward")),
           f"{py}: then the lines of the thread that waited in _engine_run_backward")
        eq((s["gil"], s["waiter"], s["threads"]),
           (False, True, [{"name": "pt_autograd_0", "allocations": 3}]), f"{py}: whose lines")
        text = report(trace).stdout
        check("thread pt_autograd_0: for the thread that waited in _engine_run_backward "
              "(its Python lines)" in text, f"{py}: the text says whose lines they are")
        # four gradients a backward: the link kept for its task
        # (get_current_graph_task_id) after the first, the same lines
        many = site(run_handoff(py, "4", n=4), n=4)
        eq((python_frames(many), many["waiter"], many["threads"]),
           (python_frames(s), True, [{"name": "pt_autograd_0", "allocations": 12}]),
           f"{py}: every gradient of a backward, the same lines")


def test_handoff_names_other_waits_or_none():
    py = pythons()[0]
    s = site(run_handoff(py, "own", GPUSHIM_HANDOFF="handoff_train.py:wait_for_engine"))
    eq(python_frames(s), for_version(py, [at("handoff_train.py", "wait_for_engine", "own")]
                                     + outer("own backward")), "a wait GPUSHIM_HANDOFF names")
    eq(s["waiter"], True, "its lines, the waiter's")
    s = site(run_handoff(py, "own"))
    eq((python_frames(s), s["waiter"], s["gil"]), ([], False, False),
       "a wait not named: the engine's native stack alone")
    s = site(run_handoff(py, GPUSHIM_HANDOFF="0"))
    eq((python_frames(s), s["waiter"]), ([], False), "GPUSHIM_HANDOFF=0: none, PyTorch's neither")
