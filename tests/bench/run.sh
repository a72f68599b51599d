#!/usr/bin/env bash
# run.sh - aidcd throughput against the physical limit of its design, measured
# in the same run (see docs/performance.md).
#
# From the repository root, after `cmake --build build`:
#     tests/bench/run.sh
#
# It starts its own PostgreSQL 15 (deploy/pg-up.sh, PGDATA_DIR=/tmp/aidc-bench-pg,
# port 15450: no other cluster is touched), creates a fresh database aidc_bench,
# migrates it, seeds it (seed.sql), then measures with wrk (loopback, 2 threads,
# 64 connections, --latency):
#   ceiling  build/tests/bench_ceiling: libmicrohttpd + one prepared PK SELECT
#   (a)      GET /healthz
#   (b)      GET /api/v1/tenants/{t}/projects/{p}  with an API token
#   (c)      the same with a session JWT
#   (d)      POST /api/v1/tenants/{t}/projects      (insert + audit event, one tx)
# and pgbench (-S built-in select-only on pgbench's own tables in the same
# database, plus the ceiling's query as a custom script). It prints a table,
# the ratios to the ceiling and aidcd's memory. Figures, not pass/fail: the
# exit status is 0 whenever the measurements ran.
#
# Environment (all optional):
#   BUILD_DIR         build tree                               (default ./build)
#   BENCH_DURATION    seconds per measurement                  (default 10)
#   BENCH_CONNECTIONS wrk connections                          (default 64)
#   BENCH_WRK_THREADS wrk threads                              (default 2)
#   BENCH_THREADS     worker threads of aidcd and the ceiling  (default 2)
#   BENCH_TENANTS / BENCH_PROJECTS / BENCH_USERS  data set: tenants, projects per
#                     tenant, users per tenant                 (default 100 / 10 / 1000)
#   BENCH_PGBENCH_SCALE  scale of `pgbench -i`                 (default 1, as pgbench's own)
#   BENCH_PGDATA_DIR, BENCH_PGPORT  the bench cluster          (default /tmp/aidc-bench-pg, 15450)
#   BENCH_CEILING_PORT, BENCH_AIDC_PORT  first port tried for each server (default 18480, 18490)
#   BENCH_KEEP_PG=1   leave the cluster running at the end (default: stop it)
#   BENCH_OUT         directory for raw outputs                (default /tmp/aidc-bench-out)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/bench"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
AIDCD="$BUILD_DIR/aidcd"
CEILING="$BUILD_DIR/tests/bench_ceiling"
DURATION=${BENCH_DURATION:-10}
CONNS=${BENCH_CONNECTIONS:-64}
WRK_THREADS=${BENCH_WRK_THREADS:-2}
THREADS=${BENCH_THREADS:-2}
N_TENANTS=${BENCH_TENANTS:-100}
N_PROJECTS=${BENCH_PROJECTS:-10}
N_USERS=${BENCH_USERS:-1000}
PGBENCH_SCALE=${BENCH_PGBENCH_SCALE:-1}
BENCH_PGDATA_DIR=${BENCH_PGDATA_DIR:-/tmp/aidc-bench-pg}
BENCH_PGPORT=${BENCH_PGPORT:-15450}
OUT=${BENCH_OUT:-/tmp/aidc-bench-out}
DB=aidc_bench
PASSWORD=bench-password-1234   # the admin's, copied to every seeded user
TENANT=tenant-001
PROJECT=project-01
USER_NAME=user-001-0001        # tenant_admin of tenant-001

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGBIN
PSQL="$PGBIN/psql"
PGBENCH="$PGBIN/pgbench"
[ -x "$PGBENCH" ] || PGBENCH=$(command -v pgbench || true)
CLK_TCK=$(getconf CLK_TCK)

say() { printf '\n== %s\n' "$*"; }
die() { echo "bench: $*" >&2; exit 1; }

for b in "$AIDCD" "$CEILING"; do
    [ -x "$b" ] || die "$b not found: build first (cmake -S . -B build && cmake --build build)"
done
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v curl >/dev/null || die "curl not found"
command -v jq >/dev/null || die "jq not found"
[ -x "$PSQL" ] || die "$PSQL not found"
[ -n "$PGBENCH" ] && [ -x "$PGBENCH" ] || die "pgbench not found"
[ "$N_TENANTS" -le 999 ] && [ "$N_PROJECTS" -le 99 ] && [ "$N_USERS" -le 9999 ] \
    || die "seed.sql names allow at most 999 tenants, 99 projects and 9999 users per tenant"

mkdir -p "$OUT"
rm -f "$OUT"/*.out "$OUT"/*.time "$OUT"/*.log "$OUT"/*.rss "$OUT"/*.rss.stop
TMP=$(mktemp -d /tmp/aidc-bench.XXXXXX)
AIDCD_PID=
CEILING_PID=

# shellcheck source=tests/bench/lib.sh
. "$ROOT/tests/bench/lib.sh"
cleanup() {
    local rc=$?
    stop_pid "$CEILING_PID" bench_ceiling
    stop_pid "$AIDCD_PID" aidcd
    rm -rf "$TMP"
    stop_bench_pg
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# run copies: a rebuild of build/ during the run must not pull the binaries away
cp "$AIDCD" "$TMP/aidcd" && cp "$CEILING" "$TMP/bench_ceiling"
AIDCD="$TMP/aidcd" CEILING="$TMP/bench_ceiling"


# ---- CPU accounting (clock ticks) ---------------------------------------------
machine_busy_ticks() {  # all CPUs: everything but idle and iowait
    awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}
rss_kib() {  # rss_kib PID VmRSS|VmHWM -> KiB (pure bash: the sampler runs it often)
    local k v _
    while read -r k v _; do
        [ "$k" = "$2:" ] && { echo "$v"; return; }
    done < "/proc/$1/status" 2>/dev/null || true
    echo 0
}
rss_sampler() {  # rss_sampler PID FILE: highest VmRSS every 0.2 s until FILE.stop exists
    local max=0 v
    while [ ! -e "$2.stop" ]; do
        v=$(rss_kib "$1" VmRSS)
        [ "${v:-0}" -gt "$max" ] && { max=$v; echo "$max" > "$2"; }
        sleep 0.2
    done
}

# ---- 1. PostgreSQL and the bench database -------------------------------------
say "PostgreSQL: own cluster in $BENCH_PGDATA_DIR on port $BENCH_PGPORT"
pg_up() { PGDATA_DIR=$BENCH_PGDATA_DIR PGPORT=$BENCH_PGPORT AIDC_DB=$DB "$ROOT/deploy/pg-up.sh"; }
pgenv=$(pg_up)
eval "$pgenv"
# a fresh database every run: drop it, and let pg-up.sh create it again with its grants
"$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL_ADMIN" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
pgenv=$(pg_up)
eval "$pgenv"
APP_URL=$DATABASE_URL
OWNER_URL=$DATABASE_URL_OWNER

export AIDC_DATABASE_URL="$APP_URL" AIDC_MIGRATE_DATABASE_URL="$OWNER_URL"
# a load generator is one address with one credential: no per-client limits
export AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0
export AIDC_LOG_LEVEL=warn AIDC_DATA_DIR="$TMP/data" AIDC_THREADS="$THREADS"
say "migrate, bootstrap, seed ($N_TENANTS tenants x $N_PROJECTS projects x $N_USERS users)"
"$AIDCD" migrate
AIDC_ADMIN_PASSWORD=$PASSWORD "$AIDCD" bootstrap --admin bench
t0=$(date +%s.%N)
"$PSQL" -X -q -d "$OWNER_URL" -v tenants="$N_TENANTS" -v projects="$N_PROJECTS" \
        -v users="$N_USERS" -v admin=bench -f "$HERE/seed.sql"
awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "seeded in %.1f s\n", b - a }'
PROJECT_ID=$("$PSQL" -X -qAt -d "$OWNER_URL" -c \
    "SELECT p.id FROM projects p JOIN tenants t ON t.id = p.tenant_id
      WHERE t.slug = '$TENANT' AND p.slug = '$PROJECT'")
[ -n "$PROJECT_ID" ] || die "seeded project $TENANT/$PROJECT not found"

say "pgbench -i -s $PGBENCH_SCALE (pgbench's own tables, in the same database $DB)"
"$PGBENCH" -i -q -s "$PGBENCH_SCALE" "$OWNER_URL" > "$OUT/pgbench-init.log" 2>&1 \
    || { cat "$OUT/pgbench-init.log" >&2; die "pgbench -i failed"; }
tail -1 "$OUT/pgbench-init.log"

# ---- measurement helpers --------------------------------------------------------
declare -A RPS P50 P99 REQS NON2XX SOCKERR SRV_US PG_US WRK_US BUSY OTHER RSS_MAX

to_ms() {  # wrk latency (123.45us, 1.23ms, 1.02s, 2.00m) -> milliseconds
    awk -v v="$1" 'BEGIN {
        if (v == "") { print "-"; exit }
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
        printf "%.2f", n }'
}

# run_wrk KEY SERVER_PID URL [wrk args...]
run_wrk() {
    local key=$1 pid=$2 url=$3
    shift 3
    local out="$OUT/$key.out" tfile="$OUT/$key.time"
    local s0 p0 m0 t0 s1 p1 m1 t1 spid
    rm -f "$OUT/$key.rss" "$OUT/$key.rss.stop"
    rss_sampler "$pid" "$OUT/$key.rss" &
    spid=$!
    s0=$(proc_ticks "$pid"); p0=$(pg_ticks); m0=$(machine_busy_ticks); t0=$(date +%s.%N)
    ( TIMEFORMAT='%U %S'; time wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency \
          "$@" "$url" > "$out" 2>&1 ) 2> "$tfile" \
        || { touch "$OUT/$key.rss.stop"; cat "$out" >&2; die "wrk failed for $key"; }
    s1=$(proc_ticks "$pid"); p1=$(pg_ticks); m1=$(machine_busy_ticks); t1=$(date +%s.%N)
    touch "$OUT/$key.rss.stop"
    wait "$spid" || true
    rm -f "$OUT/$key.rss.stop"
    RSS_MAX[$key]=$(cat "$OUT/$key.rss" 2>/dev/null || echo 0)
    RPS[$key]=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$out")
    REQS[$key]=$(awk '/ requests in / { print $1 }' "$out")
    P50[$key]=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$out")")
    P99[$key]=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$out")")
    NON2XX[$key]=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$out")
    NON2XX[$key]=${NON2XX[$key]:-0}
    SOCKERR[$key]=$(awk '/Socket errors:/ { gsub(/,/, ""); print $4 + $6 + $8 + $10 }' "$out")
    SOCKERR[$key]=${SOCKERR[$key]:-0}
    local reqs=${REQS[$key]:-0} wrk_s
    wrk_s=$(awk '{ print $1 + $2 }' "$tfile" | tail -1)
    # CPU per request (microseconds) of the server, of PostgreSQL and of wrk;
    # machine busy % of all CPUs, and what nobody of ours used ("other" load)
    local srv_us pg_us wrk_us busy other
    read -r srv_us pg_us wrk_us busy other < <(awk \
        -v s="$((s1 - s0))" -v p="$((p1 - p0))" -v m="$((m1 - m0))" -v w="$wrk_s" \
        -v hz="$CLK_TCK" -v n="$reqs" -v d="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
        -v cpus="$(nproc)" 'BEGIN {
            if (n < 1) n = 1
            o = m / hz - s / hz - p / hz - w; if (o < 0) o = 0
            printf "%.0f %.0f %.0f %.0f %.0f\n", s / hz * 1e6 / n, p / hz * 1e6 / n,
                   w * 1e6 / n, 100 * m / hz / (d * cpus), 100 * o / (d * cpus) }')
    SRV_US[$key]=$srv_us PG_US[$key]=$pg_us WRK_US[$key]=$wrk_us BUSY[$key]=$busy OTHER[$key]=$other
    printf '  %-9s %8s req/s  p50 %6s ms  p99 %6s ms  non-2xx %s  socket errors %s\n' "$key" \
        "${RPS[$key]}" "${P50[$key]}" "${P99[$key]}" "${NON2XX[$key]}" "${SOCKERR[$key]}"
}

wait_http() {  # wait_http URL PID NAME: until the URL answers 200
    local _
    for _ in $(seq 150); do
        kill -0 "$2" 2>/dev/null || die "$3 exited during start (log: $OUT/$3.log)"
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$1" || true)" = 200 ] && return 0
        sleep 0.1
    done
    die "$3 did not answer $1 within 15 s"
}

expect() {  # expect STATUS curl-args...: one request, die unless it answers STATUS
    local want=$1 got
    shift
    got=$(curl -s -o "$TMP/resp" -w '%{http_code}' "$@" || true)
    [ "$got" = "$want" ] || { cat "$TMP/resp" >&2 2>/dev/null; echo >&2;
                              die "expected $want, got $got from: curl $*"; }
}

say "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg);" \
    "wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s --latency on loopback"

# ---- 2. the ceiling ---------------------------------------------------------------
CEIL_PORT=$(pick_port "${BENCH_CEILING_PORT:-18480}")
"$CEILING" "$OWNER_URL" "$CEIL_PORT" "$PROJECT_ID" "$THREADS" > "$OUT/bench_ceiling.log" 2>&1 &
CEILING_PID=$!
wait_http "http://127.0.0.1:$CEIL_PORT/" "$CEILING_PID" bench_ceiling
say "ceiling: bench_ceiling (pid $CEILING_PID) on port $CEIL_PORT, project $PROJECT_ID"
run_wrk ceiling "$CEILING_PID" "http://127.0.0.1:$CEIL_PORT/"
CEIL_HWM=$(rss_kib "$CEILING_PID" VmHWM)
stop_pid "$CEILING_PID" bench_ceiling
CEILING_PID=

# ---- 3. aidcd -----------------------------------------------------------------------
AIDC_PORT=$(pick_port "${BENCH_AIDC_PORT:-18490}")
BASE="http://127.0.0.1:$AIDC_PORT"
AIDC_LISTEN="127.0.0.1:$AIDC_PORT" AIDC_PORTAL_DIR="$ROOT/portal" "$AIDCD" serve \
    > "$OUT/aidcd.log" 2>&1 &
AIDCD_PID=$!
wait_http "$BASE/readyz" "$AIDCD_PID" aidcd
say "aidcd (pid $AIDCD_PID) on port $AIDC_PORT, $THREADS threads; RSS after start" \
    "$(( $(rss_kib "$AIDCD_PID" VmRSS) / 1024 )) MiB"

expect 200 -X POST -H 'Content-Type: application/json' \
    -d "{\"username\":\"$USER_NAME\",\"password\":\"$PASSWORD\"}" "$BASE/api/v1/auth/login"
JWT=$(jq -r .access_token "$TMP/resp")
expect 201 -X POST -H "Authorization: Bearer $JWT" -H 'Content-Type: application/json' \
    -d '{"name":"bench","scopes":["jobs:read","admin"],"expires_in_days":1}' "$BASE/api/v1/tokens"
TOKEN=$(jq -r .token "$TMP/resp")
[ -n "$JWT" ] && [ "$JWT" != null ] && [ -n "$TOKEN" ] && [ "$TOKEN" != null ] \
    || die "no JWT or API token"
PROJECT_URL="$BASE/api/v1/tenants/$TENANT/projects/$PROJECT"
CREATE_URL="$BASE/api/v1/tenants/$TENANT/projects"
expect 200 "$BASE/healthz"
expect 200 -H "Authorization: Bearer $TOKEN" "$PROJECT_URL"
expect 200 -H "Authorization: Bearer $JWT" "$PROJECT_URL"
expect 201 -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"slug":"probe","name":"probe"}' "$CREATE_URL"
echo "  logged in as $USER_NAME (tenant_admin of $TENANT); API token and JWT answer 200/201"

say "aidcd: (a) healthz, (b) project by API token, (c) project by JWT, (d) create project"
run_wrk a "$AIDCD_PID" "$BASE/healthz"
run_wrk b "$AIDCD_PID" "$PROJECT_URL" -H "Authorization: Bearer $TOKEN"
run_wrk c "$AIDCD_PID" "$PROJECT_URL" -H "Authorization: Bearer $JWT"
BENCH_RUN=$(date +%s)
export BENCH_RUN
run_wrk d "$AIDCD_PID" "$CREATE_URL" -H "Authorization: Bearer $TOKEN" \
    -s "$HERE/post_projects.lua"
AIDCD_HWM=$(rss_kib "$AIDCD_PID" VmHWM)
AIDCD_RSS=$(rss_kib "$AIDCD_PID" VmRSS)
CREATED=$("$PSQL" -X -qAt -d "$OWNER_URL" -c \
    "SELECT count(*) FROM projects WHERE slug LIKE 'w%'")
# audit_log: the chained events and those still in the inbox (moved within a second)
AUDITED=$("$PSQL" -X -qAt -d "$OWNER_URL" -c \
    "SELECT count(*) FROM audit_log WHERE action = 'project.create' AND outcome = 'success'")
stop_pid "$AIDCD_PID" aidcd
AIDCD_PID=

# ---- 4. pgbench -------------------------------------------------------------------
run_pgbench() {  # run_pgbench KEY pgbench-args...
    local key=$1 out="$OUT/$1.out" m0 m1 t0 t1
    shift
    m0=$(machine_busy_ticks); t0=$(date +%s.%N)
    "$PGBENCH" -n -c 8 -j 2 -T "$DURATION" "$@" "$OWNER_URL" > "$out" 2>&1 \
        || { cat "$out" >&2; die "pgbench failed for $key"; }
    m1=$(machine_busy_ticks); t1=$(date +%s.%N)
    RPS[$key]=$(awk '/^tps = / { printf "%.0f", $3 }' "$out")
    P50[$key]=$(awk '/^latency average = / { printf "%.2f", $4 }' "$out")
    REQS[$key]=$(awk '/^number of transactions actually processed:/ { print $NF }' "$out")
    NON2XX[$key]=$(awk '/^number of failed transactions:/ { print $5 }' "$out")
    NON2XX[$key]=${NON2XX[$key]:-0}
    BUSY[$key]=$(awk -v m="$((m1 - m0))" -v hz="$CLK_TCK" -v a="$t0" -v b="$t1" -v c="$(nproc)" \
                 'BEGIN { printf "%.0f", 100 * m / hz / ((b - a) * c) }')
    printf '  %-9s %8s tps    latency avg %s ms  failed %s\n' "$key" "${RPS[$key]}" \
        "${P50[$key]}" "${NON2XX[$key]}"
}
say "pgbench -c 8 -j 2 -T $DURATION (TCP loopback, owner role)"
run_pgbench pgbench_S -S
printf 'SELECT id, slug, name FROM projects WHERE id = :pid;\n' > "$TMP/pk.sql"
run_pgbench pgbench_pk -M prepared -D pid="$PROJECT_ID" -f "$TMP/pk.sql"

# ---- 5. report ---------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

say "results ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs; wrk -t$WRK_THREADS -c$CONNS" \
    "-d${DURATION}s; latencies in ms)"
printf '%-44s %9s %8s %8s %9s %8s\n' case "req/s" p50 p99 "non-2xx" "sock.err"
row() {
    printf '%-44s %9s %8s %8s %9s %8s\n' "$1" "${RPS[$2]:--}" "${P50[$2]:--}" "${P99[$2]:--}" \
        "${NON2XX[$2]:--}" "${SOCKERR[$2]:--}"
}
row "ceiling (MHD + 1 prepared PK SELECT)" ceiling
row "(a) GET /healthz" a
row "(b) GET project, API token" b
row "(c) GET project, JWT" c
row "(d) POST project (insert + audit, 1 tx)" d
printf '%-44s %9s %8s %8s %9s\n' "pgbench -S -c 8 -j 2 (tps, latency avg)" \
    "${RPS[pgbench_S]}" "${P50[pgbench_S]}" - "${NON2XX[pgbench_S]}"
printf '%-44s %9s %8s %8s %9s\n' "pgbench ceiling query -M prepared -c 8 -j 2" \
    "${RPS[pgbench_pk]}" "${P50[pgbench_pk]}" - "${NON2XX[pgbench_pk]}"

echo
echo "ratios to the ceiling:"
printf '  (b)/ceiling = %s   (c)/ceiling = %s   (d)/ceiling = %s   (a)/ceiling = %s\n' \
    "$(ratio "${RPS[b]}" "${RPS[ceiling]}")" "$(ratio "${RPS[c]}" "${RPS[ceiling]}")" \
    "$(ratio "${RPS[d]}" "${RPS[ceiling]}")" "$(ratio "${RPS[a]}" "${RPS[ceiling]}")"
printf '  p99 (b)/ceiling = %s   p99 (c)/ceiling = %s   ceiling/pgbench -S = %s\n' \
    "$(ratio "${P99[b]}" "${P99[ceiling]}")" "$(ratio "${P99[c]}" "${P99[ceiling]}")" \
    "$(ratio "${RPS[ceiling]}" "${RPS[pgbench_S]}")"

echo
echo "CPU per request (microseconds; server = bench_ceiling or aidcd, postgres = the whole"
echo "cluster, wrk = the load generator), machine load (% of all CPUs; other = processes"
echo "that are not part of this benchmark) and the CPU-bound estimate: req/s if all $(nproc)"
echo "CPUs went to server + postgres + wrk (what a quiet machine would allow at most):"
declare -A EST
printf '  %-9s %8s %9s %6s %7s %7s %10s\n' case server postgres wrk busy% other% "est. req/s"
for k in ceiling a b c d; do
    EST[$k]=$(awk -v a="${SRV_US[$k]}" -v b="${PG_US[$k]}" -v c="${WRK_US[$k]}" -v n="$(nproc)" \
              'BEGIN { t = a + b + c; if (t > 0) printf "%.0f", n * 1e6 / t; else print "-" }')
    printf '  %-9s %8s %9s %6s %7s %7s %10s\n' "$k" "${SRV_US[$k]}" "${PG_US[$k]}" \
        "${WRK_US[$k]}" "${BUSY[$k]}" "${OTHER[$k]}" "${EST[$k]}"
done
printf '  %-9s %8s %9s %6s %7s %7s\n' pgbench_S - - - "${BUSY[pgbench_S]}" -
printf '  %-9s %8s %9s %6s %7s %7s\n' pgbench_pk - - - "${BUSY[pgbench_pk]}" -
printf '  estimated ratios: (b)/ceiling = %s   (c)/ceiling = %s   (d)/ceiling = %s\n' \
    "$(ratio "${EST[b]}" "${EST[ceiling]}")" "$(ratio "${EST[c]}" "${EST[ceiling]}")" \
    "$(ratio "${EST[d]}" "${EST[ceiling]}")"

echo
echo "memory (RSS, MiB):"
printf '  aidcd: highest VmRSS sampled during a %s  b %s  c %s  d %s; at the end %s\n' \
    "$(mib "${RSS_MAX[a]}")" "$(mib "${RSS_MAX[b]}")" "$(mib "${RSS_MAX[c]}")" \
    "$(mib "${RSS_MAX[d]}")" "$(mib "$AIDCD_RSS")"
printf '  aidcd: VmHWM (peak since start, includes the one login: scrypt needs 32 MiB) %s\n' \
    "$(mib "$AIDCD_HWM")"
printf '  bench_ceiling: highest VmRSS sampled %s, VmHWM %s\n' "$(mib "${RSS_MAX[ceiling]}")" \
    "$(mib "$CEIL_HWM")"
echo "(d) created $CREATED projects; $AUDITED project.create audit events in total" \
     "(one more of each: the probe request)"

echo
echo "issue targets (informational):"
verdict() { awk -v x="$1" -v lim="$2" -v op="$3" 'BEGIN {
    if (x == "-" || x == "") { print "n/a"; exit }
    ok = (op == ">=") ? (x + 0 >= lim + 0) : (op == "<") ? (x + 0 < lim + 0) : (x + 0 <= lim + 0)
    print ok ? "met" : "NOT met" }'; }
rb=$(ratio "${RPS[b]}" "${RPS[ceiling]}"); rc=$(ratio "${RPS[c]}" "${RPS[ceiling]}")
qb=$(ratio "${P99[b]}" "${P99[ceiling]}"); qc=$(ratio "${P99[c]}" "${P99[ceiling]}")
printf '  (b) >= 0.60 of the ceiling: %s (%s); p99 <= 2x: %s (%s)\n' "$(verdict "$rb" 0.60 '>=')" \
    "$rb" "$(verdict "$qb" 2 '<=')" "$qb"
printf '  (c) >= 0.60 of the ceiling: %s (%s); p99 <= 2x: %s (%s)\n' "$(verdict "$rc" 0.60 '>=')" \
    "$rc" "$(verdict "$qc" 2 '<=')" "$qc"
RSS_RUN=0
for k in a b c d; do [ "${RSS_MAX[$k]:-0}" -gt "$RSS_RUN" ] && RSS_RUN=${RSS_MAX[$k]}; done
printf '  aidcd RSS < 64 MiB during the runs: %s (highest sample %s MiB; VmHWM %s MiB)\n' \
    "$(verdict "$(mib "$RSS_RUN")" 64 '<')" "$(mib "$RSS_RUN")" "$(mib "$AIDCD_HWM")"
bad=0
for k in ceiling a b c d; do
    [ "${NON2XX[$k]}" = 0 ] && [ "${SOCKERR[$k]}" = 0 ] || bad=1
done
[ "$bad" = 0 ] || echo "WARNING: some runs had non-2xx answers or socket errors: their figures are suspect (raw output in $OUT)"
echo
echo "raw outputs: $OUT"
