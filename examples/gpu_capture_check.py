"""gpu_capture_check.py - stream capture under the shim, call by call, on a
machine with a GPU and PyTorch: whether a capture begun through the runtime
(cudaStreamBeginCapture) and through the driver (cuStreamBeginCapture_v2)
is still active right after it began, in each capture mode, with and
without the shim; and whether the driver calls the shim makes while a
capture is under way (cuStreamGetDevice, cuCtxGetDevice) leave it active,
and whether cuStreamGetDevice on another stream, from this thread or another
one, does.

    python3 examples/gpu_capture_check.py [--build build]

PyTorch's CUDAGraph::capture_begin (aten/src/ATen/cuda/CUDAGraph.cpp)
asserts, right after cudaStreamBeginCapture, that cudaStreamGetCaptureInfo
says cudaStreamCaptureStatusActive; a shim that ends or invalidates the
capture in between fails every torch.cuda.graph. Prints one line per case
and "N differ" at the end: each case's status under the shim against the
same case without it.
"""
import argparse
import os
import subprocess
import sys

PROBE = r'''
import ctypes, sys, torch
torch.cuda.init()
torch.empty(1, device="cuda")
rt = ctypes.CDLL("libcudart.so.13")
cu = ctypes.CDLL("libcuda.so.1")
NAMES = {0: "none", 1: "active", 2: "invalidated"}
def status(s):
    st = ctypes.c_int(-1)
    rc = rt.cudaStreamIsCapturing(ctypes.c_void_p(s), ctypes.byref(st))
    return "%s%s" % (NAMES.get(st.value, st.value), "" if rc == 0 else " (rc %d)" % rc)
def case(name, begin, probe=None):
    s = torch.cuda.Stream().cuda_stream
    rc = begin(s)
    if probe:
        probe(s)
    got = status(s)
    g = ctypes.c_void_p()
    end = rt.cudaStreamEndCapture(ctypes.c_void_p(s), ctypes.byref(g))
    rt.cudaGetLastError()
    print("case %-40s begin rc %d, then %-12s end rc %d" % (name, rc, got, end))
for mode in (0, 1, 2):
    case("runtime mode %d" % mode, lambda s: rt.cudaStreamBeginCapture(ctypes.c_void_p(s), mode))
    case("driver mode %d" % mode, lambda s: cu.cuStreamBeginCapture_v2(ctypes.c_void_p(s), mode))
dev = ctypes.c_int()
case("runtime mode 0 + cuStreamGetDevice", lambda s: rt.cudaStreamBeginCapture(ctypes.c_void_p(s), 0),
     lambda s: cu.cuStreamGetDevice(ctypes.c_void_p(s), ctypes.byref(dev)))
case("runtime mode 0 + cuCtxGetDevice", lambda s: rt.cudaStreamBeginCapture(ctypes.c_void_p(s), 0),
     lambda s: cu.cuCtxGetDevice(ctypes.byref(dev)))
other = torch.cuda.Stream().cuda_stream
case("mode 0 + cuStreamGetDevice, other stream", lambda s: rt.cudaStreamBeginCapture(ctypes.c_void_p(s), 0),
     lambda s: cu.cuStreamGetDevice(ctypes.c_void_p(other), ctypes.byref(dev)))
def from_thread(s):
    import threading
    t = threading.Thread(target=lambda: cu.cuStreamGetDevice(ctypes.c_void_p(other), ctypes.byref(dev)))
    t.start()
    t.join()
case("mode 0 + the same from another thread", lambda s: rt.cudaStreamBeginCapture(ctypes.c_void_p(s), 0),
     from_thread)
try:
    g = torch.cuda.CUDAGraph()
    x = torch.ones(16, device="cuda")
    with torch.cuda.graph(g):
        y = x * 2
    g.replay()
    torch.cuda.synchronize()
    print("case %-40s %s" % ("torch.cuda.graph", "ok" if y.sum().item() == 32 else "wrong result"))
except Exception as e:
    print("case %-40s %s" % ("torch.cuda.graph", str(e).splitlines()[0][:60]))
'''


def cases(argv, env):
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("case "):
            out[line[5:45].strip()] = line[45:].strip()
    if not out:
        print("probe failed (%d): %s" % (r.returncode, r.stderr[-800:]))
    return out, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    a = ap.parse_args()
    lib = os.path.join(os.path.abspath(a.build), "libgpushim.so")
    plain, _ = cases([sys.executable, "-c", PROBE], dict(os.environ))
    shim, err = cases([sys.executable, "-c", PROBE],
                      dict(os.environ, LD_PRELOAD=lib, GPUSHIM_OUTPUT="/tmp/capture.%p.trace",
                           GPUSHIM_VERBOSE="1"))
    differ = 0
    for name in plain:
        same = shim.get(name) == plain[name]
        differ += not same
        print("%-7s %-40s without: %s | with: %s"
              % ("ok" if same else "DIFFERS", name, plain[name], shim.get(name)))
    if differ:
        print("shim's stderr:\n" + err[-1500:])
    print("%d differ" % differ)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
