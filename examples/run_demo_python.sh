#!/bin/sh
# make demo-python: examples/sim_torch/leak.py, PyTorch's leaked-loss loop
# with tensors of the simulated GPU whose allocations release the GIL, under
# the shim, then the report of what it did.
set -u
build=${1:-build}
trace="$build/demo-python.trace"
rm -f "$trace"
export PYTHONPATH="$build/examples/python${PYTHONPATH:+:$PYTHONPATH}"
echo "== $build/gpushim run -o $trace -- python3 examples/sim_torch/leak.py"
"$build/gpushim" run -o "$trace" -- python3 examples/sim_torch/leak.py || exit
echo
echo "== $build/gpushim report $trace"
exec "$build/gpushim" report "$trace"
