#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] [TARGET...] - fuzz each target (all by default)
# for SECONDS (default 60), after building the fuzz build (build-fuzz: clang,
# -DAIDC_FUZZ=ON) if needed. Prints each target's executions, coverage and
# any crash file; exits 1 when a target crashed, leaked, hit undefined
# behaviour or timed out. docs/fuzzing.md says more.
#
# Environment:
#   FUZZ_JOBS=N     targets run at once (default 1; nice'd either way)
#   FUZZ_MERGE=1    merge the new inputs that add coverage into
#                   tests/fuzz/corpus/<target> (-merge=1; keep corpora small)
#   FUZZ_BUILD=dir  build directory (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-60}
shift || true
build=${FUZZ_BUILD:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-1}

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DAIDC_FUZZ=ON \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
nice cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1 ||
    { tail -40 "$build/build.log" >&2; echo "fuzz build failed ($build/build.log)" >&2; exit 1; }

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in "$root"/tests/fuzz/fuzz_*.c; do
        n=$(basename "$f" .c)
        targets+=("${n#fuzz_}")
    done
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:halt_on_error=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}:halt_on_error=1
logs=$build/fuzz-logs
mkdir -p "$logs"

# fuzz_one NAME: run it; its log in $logs/NAME.log, new inputs in $logs/NAME.new
fuzz_one() {
    local t=$1 bin=$build/fuzz/fuzz_$1 corpus=$root/tests/fuzz/corpus/$1
    local art=$build/fuzz/artifacts/fuzz_$1 new=$logs/$1.new
    local dict=() 
    [ -f "$root/tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
    mkdir -p "$art" "$new" "$corpus"
    nice "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/" "${dict[@]}" "$new" "$corpus" >"$logs/$t.log" 2>&1
}

declare -A pids
for t in "${targets[@]}"; do
    [ -x "$build/fuzz/fuzz_$t" ] || { echo "no target fuzz_$t" >&2; exit 2; }
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    echo "fuzzing $t for ${secs}s"
    fuzz_one "$t" &
    pids[$t]=$!
done

failed=0
printf '\n%-12s %12s %8s %8s  %s\n' target execs cov ft result
for t in "${targets[@]}"; do
    rc=0
    wait "${pids[$t]}" || rc=$?
    log=$logs/$t.log
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    result=ok
    if [ "$rc" -ne 0 ]; then
        failed=1
        art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        result="FAILED (exit $rc): ${art:-see $log}"
        grep -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$log" |
            head -3 | sed 's/^/    /' >&2 || true
    fi
    printf '%-12s %12s %8s %8s  %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$result"
    if [ "${FUZZ_MERGE:-0}" = 1 ] && [ "$rc" -eq 0 ]; then
        nice "$build/fuzz/fuzz_$t" -merge=1 "$root/tests/fuzz/corpus/$t" "$logs/$t.new" \
            >>"$logs/$t.merge.log" 2>&1 || echo "merge of $t failed ($logs/$t.merge.log)" >&2
    fi
    rm -rf "$logs/$t.new"
done
exit "$failed"
