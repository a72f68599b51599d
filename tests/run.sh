#!/usr/bin/env bash
# tests/run.sh - the whole test suite, from a fresh Debian 12 machine:
# installs what is missing, starts a private PostgreSQL, builds aidc twice
# (warnings as errors; then with AddressSanitizer + UndefinedBehaviorSanitizer),
# runs every test of both builds through ctest, and stops what it started.
#
# Environment (optional):
#   AIDC_TEST_PGPORT     port of the test PostgreSQL   (default 15434)
#   AIDC_TEST_PGDATA     its data directory            (default /tmp/aidc-test-pg)
#   AIDC_TEST_JOBS       parallel ctest jobs           (default 2)
#   AIDC_TEST_SKIP_ASAN  1 = only the normal build (quicker local runs)
#   CTEST_ARGS           extra arguments for ctest (e.g. "-R http/")
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
say() { printf '\n== %s\n' "$*"; }

say "dependencies"
deploy/install-deps.sh build run test

# below the ephemeral range (32768-60999): no client socket can hold it
port=${AIDC_TEST_PGPORT:-15434}
pgdata=${AIDC_TEST_PGDATA:-/tmp/aidc-test-pg}
jobs=${AIDC_TEST_JOBS:-2}

say "PostgreSQL on 127.0.0.1:$port ($pgdata)"
was_running=0
[ -f "$pgdata/postmaster.pid" ] && kill -0 "$(head -1 "$pgdata/postmaster.pid")" 2>/dev/null && was_running=1
env_out=$(PGDATA_DIR=$pgdata PGPORT=$port deploy/pg-up.sh)
stop_pg() {
    if [ "$was_running" = 0 ]; then
        say "stopping the test PostgreSQL"
        PGDATA_DIR=$pgdata deploy/pg-down.sh || true
    fi
}
trap stop_pg EXIT
app_url=$(sed -n "s/^DATABASE_URL='\(.*\)'$/\1/p" <<<"$env_out")
owner_url=$(sed -n "s/^DATABASE_URL_OWNER='\(.*\)'$/\1/p" <<<"$env_out")
super_url=$(sed -n "s/^DATABASE_URL_ADMIN='\(.*\)'$/\1/p" <<<"$env_out")
export AIDC_TEST_APP_URL=$app_url AIDC_TEST_OWNER_URL=$owner_url AIDC_TEST_SUPERUSER_URL=$super_url
export AIDC_TEST_PGDATA_BASE=/tmp

run_build() {  # name, cmake options...
    local dir=$1; shift
    say "build $dir ($*)"
    cmake -S "$root" -B "$root/$dir" -DAIDC_WERROR=ON -DAIDC_TESTS=ON "$@" >/dev/null
    if ! cmake --build "$root/$dir" -j"$(nproc)" >"$root/$dir/build.log" 2>&1; then
        grep -E 'error|warning' "$root/$dir/build.log" | head -40 >&2 || tail -40 "$root/$dir/build.log" >&2
        echo "build $dir failed (full log: $dir/build.log)" >&2
        exit 1
    fi
    say "tests of $dir"
    (cd "$root/$dir" && ctest --output-on-failure -j"$jobs" ${CTEST_ARGS:-})
}

run_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${AIDC_TEST_SKIP_ASAN:-0}" != 1 ]; then
    export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    run_build build-asan -DCMAKE_BUILD_TYPE=Debug -DAIDC_SANITIZE=ON -DAIDC_LINT=OFF
fi
say "all tests passed"
