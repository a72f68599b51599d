#!/usr/bin/env bash
# tests/run.sh - the whole test suite, from a fresh Debian 12 machine:
# installs what is missing, starts a private PostgreSQL and (as root) a private
# Slurm, builds aidc twice (warnings as errors; then with AddressSanitizer +
# UndefinedBehaviorSanitizer), runs every test of both builds through ctest,
# and stops what it started.
#
# Environment (optional):
#   AIDC_TEST_PGPORT     port of the test PostgreSQL   (default 15434)
#   AIDC_TEST_PGDATA     its data directory            (default /tmp/aidc-test-pg)
#   AIDC_TEST_SLURM_DIR  directory of the test Slurm   (default /tmp/aidc-slurm)
#   AIDC_TEST_SKIP_SLURM 1 = no Slurm (its tests skip)
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

# Slurm (deploy/slurm-up.sh) for the Slurm backend's tests. They skip without
# AIDC_TEST_SLURM_URL, so where Slurm cannot start we say why and go on.
slurm_dir=${AIDC_TEST_SLURM_DIR:-/tmp/aidc-slurm}
unset AIDC_TEST_SLURM_URL AIDC_TEST_SLURM_USER AIDC_TEST_SLURM_JWT AIDC_TEST_SLURM_JWT_KEY AIDC_TEST_SLURM_DIR
slurm_was_running=1   # until run.sh starts it, there is nothing of ours to stop
stop_slurm() {
    if [ "$slurm_was_running" = 0 ]; then
        say "stopping the test Slurm"
        SLURM_DIR=$slurm_dir deploy/slurm-down.sh --quiet || true
    fi
}
trap 'stop_slurm; stop_pg' EXIT
slurm_skip=
if [ "${AIDC_TEST_SKIP_SLURM:-0}" = 1 ]; then
    slurm_skip="AIDC_TEST_SKIP_SLURM=1"
elif [ "$(id -u)" -ne 0 ]; then
    slurm_skip="not root (deploy/slurm-up.sh starts its daemons as root)"
elif ! command -v slurmctld >/dev/null || ! command -v slurmrestd >/dev/null || ! command -v munged >/dev/null; then
    slurm_skip="Slurm is not installed (deploy/install-deps.sh test)"
fi
if [ -n "$slurm_skip" ]; then
    say "Slurm: not started, its tests skip: $slurm_skip"
else
    say "Slurm ($slurm_dir)"
    # running already (someone's cluster): use it, leave it running at exit
    slurm_was_running=0
    ctld=$(tr -dc '0-9' 2>/dev/null <"$slurm_dir/run/slurmctld.pid" || true)
    [ -n "$ctld" ] && [ "$(cat "/proc/$ctld/comm" 2>/dev/null)" = slurmctld ] && slurm_was_running=1
    if slurm_env=$(SLURM_DIR=$slurm_dir deploy/slurm-up.sh); then
        slurm_var() { sed -n "s/^export $1='\(.*\)'$/\1/p" <<<"$slurm_env"; }
        AIDC_TEST_SLURM_URL=$(slurm_var SLURMRESTD_URL)
        AIDC_TEST_SLURM_USER=$(slurm_var SLURM_USER_NAME)
        AIDC_TEST_SLURM_JWT=$(slurm_var SLURM_JWT)
        AIDC_TEST_SLURM_DIR=$(slurm_var SLURM_DIR)
        AIDC_TEST_SLURM_JWT_KEY=$AIDC_TEST_SLURM_DIR/etc/jwt_hs256.key
        export AIDC_TEST_SLURM_URL AIDC_TEST_SLURM_USER AIDC_TEST_SLURM_JWT AIDC_TEST_SLURM_DIR AIDC_TEST_SLURM_JWT_KEY
        echo "slurmrestd at $AIDC_TEST_SLURM_URL as $AIDC_TEST_SLURM_USER"
    else
        echo "Slurm did not come up (above; logs in $slurm_dir/log): its tests skip" >&2
        stop_slurm   # what slurm-up.sh started before it failed
        slurm_was_running=1
    fi
fi

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
