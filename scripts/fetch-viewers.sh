#!/bin/sh
# Fetches the viewers the tests open gpushim's exports with, from npm, into
# the cache the tests look in (tests/integration/test_export_viewers.py):
#   speedscope  the folded export, loaded in headless Chromium
# GPUSHIM_VIEWERS, else $XDG_CACHE_HOME/gpushim/viewers, else
# ~/.cache/gpushim/viewers. Pinned versions; npm checks each package's
# integrity against the registry. Without npm, or offline, it says so and
# the tests that need a viewer say they were skipped.
set -eu
dir="${GPUSHIM_VIEWERS:-${XDG_CACHE_HOME:-$HOME/.cache}/gpushim/viewers}"
fetch() { # name version
    [ -f "$dir/$1/package.json" ] && grep -q "\"version\": \"$2\"" "$dir/$1/package.json" && return 0
    if ! command -v npm >/dev/null; then
        echo "viewers: no npm here: $1 not fetched (its test is skipped)" >&2
        return 0
    fi
    mkdir -p "$dir" && rm -rf "$dir/$1" && mkdir -p "$dir/$1"
    if (cd "$dir" && npm pack --silent "$1@$2" >/dev/null 2>&1 &&
        tar xzf "$1-$2.tgz" -C "$1" --strip-components=1 && rm -f "$1-$2.tgz"); then
        echo "viewers: $1 $2 in $dir/$1"
    else
        rm -rf "$dir/$1"
        echo "viewers: npm could not fetch $1@$2 (offline?): its test is skipped" >&2
    fi
}
fetch speedscope 1.25.0
