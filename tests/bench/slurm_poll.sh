#!/usr/bin/env bash
# slurm_poll.sh - a full Slurm poll (the syncer's GET jobs, every job slurmctld
# holds) at a growing job count: its time and the poller's peak memory, old
# code against new in the same run (figures, not pass/fail; not run by ctest).
#
# As root, from the repository root, after `cmake --build build --target bench_slurm_poll`
# and the same for the baseline in BASE_BUILD_DIR (a build tree of the base commit
# with tests/bench/slurm_poll.c and its CMake lines copied in):
#   SLURM_DIR=/tmp/i27-poll-slurm SLURMCTLD_PORT=7017 SLURMD_PORT_BASE=7040 \
#   SLURMRESTD_PORT=7020 BASE_BUILD_DIR=/tmp/base/build tests/bench/slurm_poll.sh
# It starts a Slurm of its own (SLURM_MAX_JOB_COUNT 50000), submits held jobs
# as user aidc straight to slurmrestd (BENCH_POLL_STEPS, cumulative, default
# "7000 40000"; curl, 16 at a time), and after each step runs each poller
# BENCH_POLL_RUNS times (default 2). Each line: build, jobs in slurmctld, jobs
# reported, seconds, VmHWM (KiB). Stops its Slurm at the end.
set -euo pipefail
BUILD_DIR=${BUILD_DIR:-build}
BASE_BUILD_DIR=${BASE_BUILD_DIR:?a build tree of the base commit}
: "${SLURM_DIR:?a Slurm directory of its own}"
export SLURM_DIR SLURM_MAX_JOB_COUNT=${SLURM_MAX_JOB_COUNT:-50000}
steps=${BENCH_POLL_STEPS:-"7000 40000"}
runs=${BENCH_POLL_RUNS:-2}
env_out=$(deploy/slurm-up.sh)
trap 'deploy/slurm-down.sh --quiet || true' EXIT
var() { sed -n "s/^export $1='\(.*\)'$/\1/p" <<<"$env_out"; }
url=$(var SLURMRESTD_URL)
export SLURM_CONF=$(var SLURM_CONF)
key=$SLURM_DIR/etc/jwt_hs256.key
jwt=$(var SLURM_JWT)
cfg=$(mktemp)
have=0
for n in $steps; do
    t0=$(date +%s.%N)
    # straight to slurmrestd, 16 at a time (sbatch, one process a job, does ~30 a second here)
    seq $((have + 1)) "$n" | while read -r i; do
        [ "$i" -gt $((have + 1)) ] && echo next
        printf 'url = "%s/slurm/v0.0.38/job/submit"\nrequest = "POST"\noutput = "/dev/null"\n' "$url"
        printf 'header = "Content-Type: application/json"\nheader = "X-SLURM-USER-NAME: aidc"\n'
        printf 'header = "X-SLURM-USER-TOKEN: %s"\n' "$jwt"
        printf 'data = "{\\"job\\":{\\"name\\":\\"bench-%s\\",\\"partition\\":\\"gpu\\",\\"time_limit\\":5,\\"hold\\":true,\\"cpus_per_task\\":1,\\"current_working_directory\\":\\"/tmp\\",\\"environment\\":{\\"PATH\\":\\"/bin\\"}},\\"script\\":\\"#!/bin/sh\\\\ntrue\\\\n\\"}"\n' "$i"
    done >"$cfg"
    # "next" between the entries: without it each -d is joined to all the earlier ones
    curl -s --parallel --parallel-max 16 -K "$cfg"
    t1=$(date +%s.%N)
    have=$n
    held=$(squeue -h -t all | wc -l)
    echo "submitted up to $n held jobs: $(echo "$t1 - $t0" | bc) s; slurmctld holds $held; load $(cut -d' ' -f1-3 /proc/loadavg)"
    for r in $(seq "$runs"); do
        for b in base:"$BASE_BUILD_DIR" head:"$BUILD_DIR"; do
            printf '%s jobs=%s %s\n' "${b%%:*}" "$held" \
                "$("${b#*:}/tests/bench_slurm_poll" "$url" "$key" aidc || true)"
        done
    done
done
