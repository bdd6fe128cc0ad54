#!/bin/sh
# gpu_check.sh - runs the examples on a machine with a GPU, each under the
# shim, and keeps their reports in OUT (default ./gpu-reports): the prepared
# script for a session that is lent a GPU. Needs the project built (make),
# and for the Python examples a python3 with torch (and jax) installed;
# those missing are skipped and said.
#
# usage: examples/gpu_check.sh [OUT]
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-gpu-reports}
mkdir -p "$out"
g="$here/build/gpushim"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$out/gpu.txt" 2>&1
run() { # name, then the command
    name=$1
    shift
    echo "== $name"
    "$g" run -o "$out/$name.%p.trace" "$@" >"$out/$name.out" 2>&1
    echo "   exit $?"
    for t in "$out/$name".*.trace; do
        [ -e "$t" ] || continue
        "$g" report "$t" >"$t.txt" 2>&1
        "$g" report --json "$t" >"$t.json" 2>&1
    done
}
if [ -x "$here/build/examples/cuda_leak" ]; then
    run cuda_leak "$here/build/examples/cuda_leak"
else
    echo "== cuda_leak: not built (no nvcc)"
fi
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    run pytorch_leak --per-tensor -- python3 "$here/examples/pytorch_leak.py"
    run pytorch_leak_default -- python3 "$here/examples/pytorch_leak.py"
    run pytorch_oom -- python3 "$here/examples/pytorch_oom.py"
    # every stack of a per-tensor PyTorch job unwound both ways: the fast
    # unwinder against libunwind through libtorch, libcudart and Python
    echo "== the fast unwinder against libunwind (GPUSHIM_UNWIND=check)"
    GPUSHIM_UNWIND=check "$g" run --per-tensor -o "$out/unwind_check.%p.trace" -- \
        python3 "$here/examples/pytorch_leak.py" 2>&1 | grep "unwind check" | tee "$out/unwind_check.txt"
else
    echo "== pytorch examples: no torch with CUDA here"
fi
if python3 -c "import jax; assert jax.devices('gpu')" 2>/dev/null; then
    run jax_example --per-tensor -- python3 "$here/examples/jax_example.py"
else
    echo "== jax example: no jax with a GPU here"
fi
echo "== gpushim against PyTorch's own counters (examples/gpu_torch_check.py)"
python3 "$here/examples/gpu_torch_check.py" --build "$here/build" --out "$out/torch-check"
echo "== gpushim whatif against PyTorch's own reserved memory (examples/gpu_whatif_check.py)"
python3 "$here/examples/gpu_whatif_check.py" --build "$here/build" --out "$out/whatif-check"
echo "== stream capture with and without the shim (examples/gpu_capture_check.py)"
python3 "$here/examples/gpu_capture_check.py" --build "$here/build"
echo "== what recording costs a per-tensor PyTorch job (examples/gpu_overhead.py)"
python3 "$here/examples/gpu_overhead.py" --build "$here/build" --out "$out/overhead"
echo "reports in $out"
