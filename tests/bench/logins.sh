#!/usr/bin/env bash
# logins.sh - reads' latency while logins run: the base commit (scrypt on the
# HTTP threads) against this tree (scrypt on the password threads), in one run.
#
# From the repository root, after `cmake --build build`:
#     tests/bench/logins.sh
#
# It builds the base commit's aidcd in its own tree (BASE_BUILD_DIR), starts its
# own PostgreSQL 15 (deploy/pg-up.sh), a fresh database seeded by seed.sql, and
# for each of base and new: wrk on an authenticated GET (a project, with a
# session JWT, as run.sh's (c)) alone, then the same while logins arrive at
# LOGINS_PER_S (curl started on a fixed schedule, not closed loop). It prints
# p50/p99 of the reads and the ratios with/without logins and new/base.
# Figures, not pass/fail.
#
# Environment (all optional):
#   BUILD_DIR        this tree's build                      (default ./build)
#   BASE_COMMIT      the baseline                            (default a933829)
#   BASE_BUILD_DIR   where the baseline is built             (default /tmp/aidc-logins-base)
#   BENCH_DURATION   seconds per measurement                 (default 10)
#   BENCH_CONNECTIONS wrk connections                        (default 16)
#   BENCH_THREADS    aidcd HTTP threads                      (default 2)
#   LOGINS_PER_S     login rate during the loaded runs       (default 10)
#   BENCH_PGDATA_DIR, BENCH_PGPORT the bench cluster         (default /tmp/aidc-logins-pg, 15470)
#   BENCH_PORT       aidcd's port                            (default BENCH_PGPORT + 1)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/bench"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BASE_COMMIT=${BASE_COMMIT:-a933829}
BASE_BUILD_DIR=${BASE_BUILD_DIR:-/tmp/aidc-logins-base}
DURATION=${BENCH_DURATION:-10}
CONNS=${BENCH_CONNECTIONS:-16}
THREADS=${BENCH_THREADS:-2}
RATE=${LOGINS_PER_S:-10}
BENCH_PGDATA_DIR=${BENCH_PGDATA_DIR:-/tmp/aidc-logins-pg}
BENCH_PGPORT=${BENCH_PGPORT:-15470}
PORT=${BENCH_PORT:-$((BENCH_PGPORT + 1))}
DB=aidc_bench_logins
PASSWORD=bench-password-1234
PSQL=${PGBIN:-/usr/lib/postgresql/15/bin}/psql
TMP=$(mktemp -d)
AIDCD_PID=

die() { echo "logins.sh: $*" >&2; exit 1; }
say() { printf '\n== %s\n' "$*"; }
cleanup() {
    [ -n "$AIDCD_PID" ] && kill "$AIDCD_PID" 2>/dev/null && wait "$AIDCD_PID" 2>/dev/null
    PGDATA_DIR=$BENCH_PGDATA_DIR PGPORT=$BENCH_PGPORT "$ROOT/deploy/pg-down.sh" >/dev/null 2>&1 || true
    rm -rf "$TMP"
}
trap cleanup EXIT
[ -x "$BUILD_DIR/aidcd" ] || die "$BUILD_DIR/aidcd not found: build first"
command -v wrk >/dev/null || die "wrk not found"

say "baseline $BASE_COMMIT built in $BASE_BUILD_DIR"
mkdir -p "$BASE_BUILD_DIR/src"
git -C "$ROOT" archive "$BASE_COMMIT" | tar -x -C "$BASE_BUILD_DIR/src"
cmake -S "$BASE_BUILD_DIR/src" -B "$BASE_BUILD_DIR/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BASE_BUILD_DIR/build" -j2 --target aidcd 2>&1 | tail -1
cp "$BASE_BUILD_DIR/build/aidcd" "$TMP/aidcd-base"
cp "$BUILD_DIR/aidcd" "$TMP/aidcd-new"

say "PostgreSQL in $BENCH_PGDATA_DIR on port $BENCH_PGPORT"
pg_up() { PGDATA_DIR=$BENCH_PGDATA_DIR PGPORT=$BENCH_PGPORT AIDC_DB=$DB "$ROOT/deploy/pg-up.sh"; }
eval "$(pg_up)"
"$PSQL" -X -q -d "$DATABASE_URL_ADMIN" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
eval "$(pg_up)"
export AIDC_DATABASE_URL="$DATABASE_URL" AIDC_MIGRATE_DATABASE_URL="$DATABASE_URL_OWNER"
export AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0
export AIDC_LOGIN_MAX_FAILURES_PER_IP=100000 AIDC_LOGIN_MAX_FAILURES_PER_USER=100000
export AIDC_LOG_LEVEL=warn AIDC_DATA_DIR="$TMP/data" AIDC_THREADS="$THREADS"
export AIDC_LISTEN="127.0.0.1:$PORT"
"$TMP/aidcd-base" migrate
AIDC_ADMIN_PASSWORD=$PASSWORD "$TMP/aidcd-base" bootstrap --admin bench
"$PSQL" -X -q -d "$DATABASE_URL_OWNER" -v tenants=10 -v projects=2 -v users=10 -v admin=bench \
    -f "$HERE/seed.sql"
BASE="http://127.0.0.1:$PORT"
LOGIN_BODY="{\"username\":\"bench\",\"password\":\"$PASSWORD\"}"

start() {
    "$1" serve >"$TMP/$2.log" 2>&1 &
    AIDCD_PID=$!
    for _ in $(seq 1 200); do
        curl -fs "$BASE/healthz" >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    die "aidcd ($2) did not start; see its log"
}
stop() { kill "$AIDCD_PID"; wait "$AIDCD_PID" 2>/dev/null || true; AIDCD_PID=; }

# logins at a fixed rate (open loop) until $TMP/stop exists; statuses to $1
login_load() {
    local gap
    gap=$(awk -v r="$RATE" 'BEGIN { printf "%.4f", 1 / r }')
    while [ ! -e "$TMP/stop" ]; do
        curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' \
            -d "$LOGIN_BODY" "$BASE/api/v1/auth/login" >>"$1" &
        sleep "$gap"
    done
    wait
}

to_ms() {
    awk -v v="$1" 'BEGIN { n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; printf "%.2f", n }'
}
declare -A P50 P99 RPS LOK
measure() { # KEY URL TOKEN
    local out="$TMP/$1.wrk"
    wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency -H "Authorization: Bearer $3" "$2" >"$out"
    P50[$1]=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$out")")
    P99[$1]=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$out")")
    RPS[$1]=$(awk '/Requests\/sec/ { printf "%.0f", $2 }' "$out")
}

for v in base new; do
    say "$v: reads alone, then with $RATE logins/s"
    start "$TMP/aidcd-$v" "$v"
    JWT=$(curl -fs -H 'Content-Type: application/json' -d "$LOGIN_BODY" "$BASE/api/v1/auth/login" \
        | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
    [ -n "$JWT" ] || die "login failed ($v)"
    URL="$BASE/api/v1/tenants/tenant-001/projects/project-01"
    measure "$v-alone" "$URL" "$JWT"
    rm -f "$TMP/stop" "$TMP/$v.logins"
    login_load "$TMP/$v.logins" &
    LPID=$!
    measure "$v-logins" "$URL" "$JWT"
    touch "$TMP/stop"
    wait "$LPID"
    LOK[$v]="$(grep -c '^200$' "$TMP/$v.logins" || true)/$(wc -l <"$TMP/$v.logins")"
    stop
done

say "results (load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $CONNS connections, ${DURATION}s each)"
printf '%-14s %9s %9s %9s %12s\n' run p50_ms p99_ms req/s logins_200
for k in base-alone base-logins new-alone new-logins; do
    v=${k%%-*}
    l="-"; [ "${k#*-}" = logins ] && l=${LOK[$v]}
    printf '%-14s %9s %9s %9s %12s\n' "$k" "${P50[$k]}" "${P99[$k]}" "${RPS[$k]}" "$l"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
echo
echo "p99 with logins / alone:  base $(ratio "${P99[base-logins]}" "${P99[base-alone]}")" \
     "  new $(ratio "${P99[new-logins]}" "${P99[new-alone]}")"
echo "p99 with logins, new / base: $(ratio "${P99[new-logins]}" "${P99[base-logins]}")"
