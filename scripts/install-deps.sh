#!/bin/sh
# Makes sure what gpushim needs is installed (Debian and Ubuntu package names).
#   build:  a C compiler, make, zlib, libdeflate (the analyzer's inflating),
#           elfutils' libdw
#   run:    libunwind (opened at run time for call stacks)
#   tests:  Criterion, python3
# With the argument "test" (make test), also what only the tests use: the
# tools that read gpushim's exports, which the tests check them with; with
# "python" (make demo-python), the Python headers its extension needs.
# As root with apt-get, missing packages are installed; otherwise the exact
# command to install them is printed and the script fails.
set -eu
need="make gcc zlib1g-dev libdeflate-dev libdw-dev libelf-dev libunwind8 libcriterion-dev python3"
# Only for the tests: golang-go for `go tool pprof` (export --format=pprof),
# python3-dev for the C extension the Python tests build and the layout test,
# chromium to render the HTML export (export --format=html), valgrind for
# make check-valgrind, debuginfod (a local server) and binutils (objcopy,
# strip) for a trace read where its program is stripped or gone,
# python3-torch (CPU) for the gpushim Python module's PyTorch helpers,
# python3-cffi for allocations made through cffi (their FFI frames left out).
test_only="golang-go chromium valgrind python3-dev debuginfod binutils python3-torch python3-cffi"
if [ "${1:-}" = test ]; then
    need="$need $test_only"
elif [ "${1:-}" = python ]; then
    need="$need python3-dev" # make demo-python: its extension module
fi
missing=""
for p in $need; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
    exit 0
fi
echo "gpushim needs:$missing" >&2
echo "install them with:  sudo apt-get install$missing" >&2
exit 1
