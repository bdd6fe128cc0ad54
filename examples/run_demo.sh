#!/bin/sh
# make demo: a simulated training job (examples/sim_training.c) under the
# shim, on a simulated 16 GiB GPU, then the report of what it did.
set -u
build=${1:-build}
trace="$build/demo.trace"
rm -f "$trace"
echo "== $build/gpushim run -o $trace -- $build/examples/sim_training"
"$build/gpushim" run -o "$trace" -- "$build/examples/sim_training"
echo "(the job ended with status $?, as a job that runs out of GPU memory does)"
echo
echo "== $build/gpushim report $trace"
exec "$build/gpushim" report "$trace"
