#!/bin/sh
# ctest-run.sh BINARY CORPUS DICT SECONDS - one fuzz target under ctest: every
# seed of CORPUS once (a regression check: the crash inputs kept there must
# stay fixed), then SECONDS of fuzzing from them. New inputs go to a scratch
# directory, never into the source tree. Fails on any crash, leak, UB report
# or timeout, with the input's path (kept in the build directory) and how to
# repeat it.
set -eu
bin=$1 corpus=$2 dict=$3 secs=$4
name=$(basename "$bin")
art=$(dirname "$bin")/artifacts/$name
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$art"
set -- -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/"
[ -f "$dict" ] && set -- "$@" -dict="$dict"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:halt_on_error=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}:halt_on_error=1
if ! "$bin" "$@" "$scratch" "$corpus" >"$scratch.log" 2>&1; then
    tail -60 "$scratch.log"
    echo "$name: failed; the input is in $art/ (repeat: $bin <that file>)" >&2
    rm -f "$scratch.log"
    exit 1
fi
grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|INFO: seed corpus)' "$scratch.log" || true
rm -f "$scratch.log"
