#!/usr/bin/env bash
# billing.sh - figures of usage reports and invoices over a year of metered usage
# (figures, not pass/fail; not run by ctest).
#
# From the repository root, after `cmake --build build --target aidcd`, run
#     tests/bench/billing.sh
# It starts its own PostgreSQL 15 (deploy/pg-up.sh, PGDATA_DIR=/tmp/aidc-bench-billing-pg,
# port 15453), seeds it as the owner role - seed.sql (200 tenants x 10 projects x 20
# users) then billing_seed.sql: 500,000 closed, fully metered runs cut into 5,000,000
# hour-long usage intervals over the 12 UTC months before the current one, their jobs,
# usage_monthly, a local cluster, default prices, a few tenant discounts, one price change
# in the middle of the last month and final invoices for every earlier month (steady state:
# their intervals are billed) - and measures over HTTP, as a finance user
# with an API token (usage:read, billing:write), against aidcd with its workers:
#   1. the tenant report: wrk with billing_usage.lua, GET /api/v1/tenants/{t}/usage
#      ?from=&to=&group_by=project,resource of a random tenant and a random whole month
#      (p50/p99; target p99 < 100 ms), then the largest tenant alone (curl, one at a time);
#      baseline: the same figures straight from usage_intervals as the owner with pgbench
#      (billing_tenant.sql: no HTTP, no row-level security, a custom plan);
#   2. the platform report of the last month, GET /api/v1/usage?group_by=tenant,resource,
#      up to BENCH_PLATFORM_RUNS times, the first failure (e.g. aidcd's 30 s statement
#      timeout) ending them (target < 2 s); baseline: the same query straight in psql;
#      then the same report of one day (the 15th), 3 times;
#   3. the invoices of the last month: POST /api/v1/invoices for every tenant, one at a
#      time, then again (drafts deleted first) 2 at a time (target: all of them < 10 s);
#      baseline: every tenant's lines from aidc_invoice_compute in one psql statement;
#      3b. (BENCH_JIT_DIAG=1) the same two rounds with jit = off for the application role
#      in this database (ALTER ROLE ... IN DATABASE, reset after): what JIT costs them;
#   4. CSV export: GET /api/v1/usage?group_by=BENCH_CSV_GROUP&format=csv of the last
#      month (a coarser grouping if that is over 100,000 rows: 422), then of one day, 3
#      times each, a failure ending them (rows/s); baseline: COPY of the same rows
#      straight from psql;
#   5. (BENCH_EXPLAIN=1) the plans aidcd's statements ran with: auto_explain for the
#      application role in this database only, one request of each kind, plans into
#      $BENCH_OUT/explain-*.txt; EXPLAIN ANALYZE of the baselines beside them.
# aidcd's VmRSS is read before, sampled during each part, and read after. It prints a
# table with the targets. The exit status is 0 whenever the measurements ran.
#
# Environment (all optional):
#   BUILD_DIR              build tree                                (default ./build)
#   BENCH_RUNS             runs seeded; 10 intervals each on average (default 500000)
#   BENCH_TENANTS / BENCH_PROJECTS / BENCH_USERS  tenants, projects and users per tenant
#                                                                   (default 200 / 10 / 20)
#   BENCH_DURATION         seconds of wrk and pgbench for the tenant report (default 60)
#   BENCH_CONNECTIONS      connections of wrk and pgbench            (default 2)
#   BENCH_THREADS          HTTP worker threads of aidcd              (default 2)
#   BENCH_PLATFORM_RUNS    platform reports                          (default 5)
#   BENCH_CSV_GROUP        group_by of the CSV export       (default tenant,project,user)
#   BENCH_JIT_DIAG=0       skip part 3b
#   BENCH_EXPLAIN=0        skip part 5
#   BENCH_PGDATA_DIR, BENCH_PGPORT  the bench cluster (default /tmp/aidc-bench-billing-pg, 15453)
#   BENCH_KEEP_PG=1        leave the cluster running at the end
#   BENCH_REUSE=1          keep the data set of the last run (skip the seeding)
#   BENCH_OUT              raw outputs                 (default /tmp/aidc-bench-billing-out)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/bench"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
RUNS=${BENCH_RUNS:-500000}
N_TENANTS=${BENCH_TENANTS:-200}
N_PROJECTS=${BENCH_PROJECTS:-10}
N_USERS=${BENCH_USERS:-20}
N_MONTHS=12
DURATION=${BENCH_DURATION:-60}
CONNS=${BENCH_CONNECTIONS:-2}
THREADS=${BENCH_THREADS:-2}
PLATFORM_RUNS=${BENCH_PLATFORM_RUNS:-5}
CSV_GROUP=${BENCH_CSV_GROUP:-tenant,project,user}
EXPLAIN=${BENCH_EXPLAIN:-1}
JIT_DIAG=${BENCH_JIT_DIAG:-1}
BENCH_PGDATA_DIR=${BENCH_PGDATA_DIR:-/tmp/aidc-bench-billing-pg}
BENCH_PGPORT=${BENCH_PGPORT:-15453}
OUT=${BENCH_OUT:-/tmp/aidc-bench-billing-out}
DB=aidc_bench_billing
PASSWORD=bench-password-1234
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGBIN
PSQL="$PGBIN/psql"
PGBENCH="$PGBIN/pgbench"

say() { printf '\n== %s\n' "$*"; }
die() { echo "bench: $*" >&2; exit 1; }
for c in wrk curl jq awk; do command -v "$c" >/dev/null || die "$c not found (deploy/install-deps.sh bench)"; done
[ -x "$PSQL" ] && [ -x "$PGBENCH" ] || die "psql/pgbench not found in $PGBIN"
[ -x "$BUILD_DIR/aidcd" ] || die "$BUILD_DIR/aidcd not found: build first (cmake --build build --target aidcd)"
[ $((RUNS % 20)) = 0 ] && [ "$RUNS" -gt 0 ] || die "BENCH_RUNS must be a positive multiple of 20"
[ "$N_TENANTS" -le 999 ] && [ "$N_PROJECTS" -le 99 ] && [ "$N_USERS" -le 9999 ] \
    || die "seed.sql names allow at most 999 tenants, 99 projects and 9999 users per tenant"
case "$CSV_GROUP" in *[!a-z,]*) die "BENCH_CSV_GROUP: a comma-separated list of group keys";; esac
mkdir -p "$OUT"
rm -f "$OUT"/*.out "$OUT"/*.log "$OUT"/*.txt "$OUT"/pgb-*
TMP=$(mktemp -d /tmp/aidc-bench-billing.XXXXXX)
AIDCD_PID=
ROLE_SET=0
# shellcheck source=tests/bench/lib.sh
. "$HERE/lib.sh"
admin_sql() { "$PSQL" -X -qAt -v ON_ERROR_STOP=1 -d "$DATABASE_URL_ADMIN" "$@"; }
RSS_SAMPLER=
cleanup() {
    local rc=$?
    [ -z "$RSS_SAMPLER" ] || kill "$RSS_SAMPLER" 2>/dev/null || true
    stop_pid "$AIDCD_PID" aidcd
    [ "$ROLE_SET" = 0 ] || admin_sql -c "ALTER ROLE aidc_app IN DATABASE $DB RESET ALL" || true
    rm -rf "$TMP"
    stop_bench_pg
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# a run copy: a rebuild of the build tree during the run must not pull it away
cp "$BUILD_DIR/aidcd" "$TMP/aidcd"
AIDCD="$TMP/aidcd"

own_pg
# a run stopped in part 3b or 5 may have left settings on the application role
admin_sql -c "ALTER ROLE aidc_app IN DATABASE $DB RESET ALL"
# a load generator is one address with one credential: no per-client limits
export AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0
export AIDC_LOG_LEVEL=warn AIDC_DATA_DIR="$TMP/data" AIDC_THREADS="$THREADS" AIDC_WORKERS=1
"$AIDCD" migrate
AIDC_ADMIN_PASSWORD=$PASSWORD "$AIDCD" bootstrap --admin bench >/dev/null
q() { "$PSQL" -X -qAt -v ON_ERROR_STOP=1 -d "$DATABASE_URL_OWNER" "$@"; }
declare -A FIG

# ---- 0. the data set ------------------------------------------------------------------
if [ "${BENCH_REUSE:-0}" != 1 ] || [ "$(q -c 'SELECT count(*) > 0 FROM usage_intervals')" != t ]; then
    START=$(date -u -d "$(date -u +%Y-%m-01) -$N_MONTHS months" +%Y-%m-01)
    say "seeding: $N_TENANTS tenants x $N_PROJECTS projects x $N_USERS users; $RUNS runs," \
        "$((RUNS * 10)) usage intervals over $N_MONTHS months from $START"
    t0=$(date +%s.%N)
    q -v tenants="$N_TENANTS" -v projects="$N_PROJECTS" -v users="$N_USERS" -v admin=bench \
      -f "$HERE/seed.sql" > "$OUT/seed.out"
    t1=$(date +%s.%N)
    q -v runs="$RUNS" -v tenants="$N_TENANTS" -v projects="$N_PROJECTS" -v users="$N_USERS" \
      -v start="$START" -v months="$N_MONTHS" -v admin=bench -f "$HERE/billing_seed.sql" \
      | tee "$OUT/billing_seed.out"
    t2=$(date +%s.%N)
    q -c "VACUUM (ANALYZE) usage_intervals, usage_monthly, jobs, job_runs, prices, tenants, projects, users"
    t3=$(date +%s.%N)
    FIG[seed]=$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" \
        'BEGIN { printf "%.0f s (tenants %.0f s, usage %.0f s, VACUUM ANALYZE %.0f s)", d - a, b - a, c - b, d - c }')
    echo "  seeded in ${FIG[seed]}"
else
    say "BENCH_REUSE=1: the data set of the last run"
fi
START=$(q -c "SELECT to_char(min(period), 'YYYY-MM-DD') FROM usage_intervals")
MONTH_LIST=$(q -c "SELECT string_agg(to_char(p, 'YYYY-MM'), ' ' ORDER BY p)
                     FROM (SELECT DISTINCT period AS p FROM usage_intervals) x")
N_MONTHS=$(wc -w <<< "$MONTH_LIST")
MONTH=${MONTH_LIST##* }                           # the last month: invoices, platform, CSV
FROM="$MONTH-01T00:00:00Z"
TO="$(date -u -d "$MONTH-01 +1 month" +%Y-%m-01)T00:00:00Z"
T0=$(date -u -d "$START" +%s)
N_INTERVALS=$(q -c "SELECT count(*) FROM usage_intervals")
N_MONTH_INTERVALS=$(q -c "SELECT count(*) FROM usage_intervals WHERE period = '$MONTH-01'")
N_TENANTS=$(q -c "SELECT count(*) FROM tenants WHERE slug ~ '^tenant-[0-9]+\$'")
echo "  $N_INTERVALS usage intervals ($N_MONTH_INTERVALS in $MONTH), $(q -c "SELECT count(*) FROM job_runs") runs," \
     "$(q -c "SELECT count(*) FROM jobs") jobs, $N_TENANTS tenants, months $START .. $MONTH"
q -c "SELECT 'usage_intervals: table ' || pg_size_pretty(pg_relation_size('usage_intervals'))
             || ', indexes ' || pg_size_pretty(pg_indexes_size('usage_intervals'))" | sed 's/^/  /'
q -c "SELECT '  tenant sizes in $MONTH (intervals): largest ' || max(n) || ', median '
             || percentile_disc(0.5) WITHIN GROUP (ORDER BY n) || ', smallest ' || min(n)
        FROM (SELECT count(*) AS n FROM usage_intervals WHERE period = '$MONTH-01' GROUP BY tenant_id) x"

# ---- aidcd, the finance user's token, memory ------------------------------------------
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
rss_watch() {  # rss_watch NAME: sample aidcd's VmRSS every 0.2 s into $OUT/rss-NAME.out
    ( while sleep 0.2; do rss_kib "$AIDCD_PID"; done ) > "$OUT/rss-$1.out" &
    RSS_SAMPLER=$!
}
rss_peak() {  # rss_peak NAME: stop the sampler, echo the highest sample (KiB)
    kill "$RSS_SAMPLER" 2>/dev/null || true
    wait "$RSS_SAMPLER" 2>/dev/null || true
    RSS_SAMPLER=
    sort -n "$OUT/rss-$1.out" | tail -1
}
finance_token() {  # finance logs in and makes an API token: sets TOKEN and AUTH
    user_token finance '["usage:read","billing:write"]'
}
aidcd_start 18700
finance_token
FIG[rss0]=$(rss_kib "$AIDCD_PID")
say "aidcd (pid $AIDCD_PID) on port $AIDC_PORT: $THREADS HTTP threads, workers on; VmRSS ${FIG[rss0]} KiB;" \
    "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

ms_stats() {  # ms_stats FILE (one time in ms a line) -> "n p50 p99 max"
    sort -n "$1" | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "0 - - -"; exit }
        i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
        printf "%d %.1f %.1f %.1f\n", NR, v[i50], v[i99], v[NR] }'
}
wrk_ms() {  # wrk latency (123.45us, 1.23ms, 1.02s) -> milliseconds
    awk -v v="$1" 'BEGIN { n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
        printf "%.1f", n }'
}
curl_times() {  # curl_times N FILE curl-args...: up to N requests one after the other, the
    # times (ms) of the 200s into FILE; the first other answer ends it, "code ms" in FILE.fail
    local n=$1 f=$2 code t
    shift 2
    : > "$f"
    rm -f "$f.fail"
    for _ in $(seq "$n"); do
        read -r code t < <(curl -s -o "$TMP/body" -w '%{http_code} %{time_total}\n' "$@")
        t=$(awk -v t="$t" 'BEGIN { printf "%.1f", t * 1000 }')
        if [ "$code" != 200 ]; then
            echo "$code $t $(jq -r .detail "$TMP/body" 2>/dev/null || true)" > "$f.fail"
            echo "  answered $code after $t ms: $(head -c 300 "$TMP/body")"
            return 0
        fi
        echo "$t" >> "$f"
    done
}
failed() {  # failed FILE: "code after N s" when curl_times FILE ended on a failure
    [ -s "$1.fail" ] && awk '{ printf "%s after %.1f s", $1, $2 / 1000 }' "$1.fail"
}
sql_times() {  # sql_times N FILE SQL: run SQL N times in one psql session, times (ms) into FILE
    local n=$1 f=$2 sql=$3
    { printf '%s\n' '\timing on'; for _ in $(seq "$n"); do echo "$sql;"; done; } \
        | "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL_OWNER" -o /dev/null \
        | awk '/^Time: / { print $2 }' > "$f"
}
PER_RESOURCE="CROSS JOIN LATERAL (VALUES ('gpu:' || u.gpu_type, u.gpus, 'gpu_hour'),
                 ('cpu', u.cpus::numeric, 'core_hour'), ('memory_gib', u.memory_gib::numeric, 'gib_hour')) v(res, n, unit)"
QTY="round(sum(v.n * extract(epoch FROM u.ended_at - u.started_at)) / 3600, 6)"
IN_MONTH="u.started_at >= '$FROM' AND u.started_at < '$TO' AND v.n > 0 AND v.res IS NOT NULL"
DAY="$MONTH-15"                                    # one day of the month, for the smaller exports
DFROM="${DAY}T00:00:00Z" DTO="$(date -u -d "$DAY +1 day" +%Y-%m-%d)T00:00:00Z"

# ---- 1. a tenant's month, by project and resource ----------------------------------------
say "1. tenant report: wrk ${DURATION} s x $CONNS connections, random tenant and month, group_by=project,resource"
TENANT_URL="$BASE/api/v1/tenants/tenant-001/usage?from=$FROM&to=$TO&group_by=project,resource"
expect 200 "${AUTH[@]}" "$TENANT_URL"
api_rows=$(jq '.rows | length' "$TMP/resp")
api_gpuh=$(jq '[.rows[] | select(.resource | startswith("gpu:")) | .quantity] | add | . * 100 | round / 100' "$TMP/resp")
read -r sql_rows sql_gpuh < <(q -F' ' -c "SELECT count(*), round(sum(q) FILTER (WHERE res LIKE 'gpu:%'), 2) FROM (
    SELECT v.res, $QTY AS q FROM usage_intervals u $PER_RESOURCE
     WHERE u.tenant_id = (SELECT id FROM tenants WHERE slug = 'tenant-001') AND $IN_MONTH
     GROUP BY u.project_id, v.res) x")
echo "  check, tenant-001 in $MONTH: API $api_rows rows, $api_gpuh GPU-hours; SQL $sql_rows rows, $sql_gpuh GPU-hours"
rss_watch tenant
BENCH_TENANTS=$N_TENANTS BENCH_MONTH_LIST=$MONTH_LIST wrk -t"$CONNS" -c"$CONNS" -d3s --timeout 60s \
    "${AUTH[@]}" -s "$HERE/billing_usage.lua" "$BASE" > "$OUT/tenant-warmup.out"
BENCH_TENANTS=$N_TENANTS BENCH_MONTH_LIST=$MONTH_LIST wrk -t"$CONNS" -c"$CONNS" -d"${DURATION}s" \
    --timeout 60s --latency "${AUTH[@]}" -s "$HERE/billing_usage.lua" "$BASE" > "$OUT/tenant.out"
FIG[rss_tenant]=$(rss_peak tenant)
FIG[t_rps]=$(awk '/^Requests\/sec:/ { printf "%.1f", $2 }' "$OUT/tenant.out")
FIG[t_n]=$(awk '/ requests in / { print $1 }' "$OUT/tenant.out")
for p in 50 90 99; do FIG[t_p$p]=$(wrk_ms "$(awk -v p="$p%" '$1 == p { print $2 }' "$OUT/tenant.out")"); done
FIG[t_max]=$(wrk_ms "$(awk '$1 == "Latency" { print $4; exit }' "$OUT/tenant.out")")
FIG[t_bad]=$(awk '/Non-2xx|Socket errors/' "$OUT/tenant.out" | tr -s ' ' | paste -sd';' -)
echo "  ${FIG[t_n]} requests, ${FIG[t_rps]}/s; p50 ${FIG[t_p50]} ms, p90 ${FIG[t_p90]} ms, p99 ${FIG[t_p99]} ms," \
     "max ${FIG[t_max]} ms ${FIG[t_bad]:+(${FIG[t_bad]})}"
curl_times 5 "$OUT/tenant-largest.out" "${AUTH[@]}" "$TENANT_URL"
read -r _ "FIG[big_p50]" _ "FIG[big_max]" < <(ms_stats "$OUT/tenant-largest.out")
echo "  the largest tenant (tenant-001, $MONTH) alone, 5 times: p50 ${FIG[big_p50]} ms, max ${FIG[big_max]} ms"

say "1b. baseline: the same report straight from usage_intervals (owner, pgbench ${DURATION} s x $CONNS)"
"$PGBENCH" -n -c"$CONNS" -j"$CONNS" -T"$DURATION" -D tenants="$N_TENANTS" -D months="$N_MONTHS" \
    -D t0="$T0" -f "$HERE/billing_tenant.sql" -l --log-prefix="$OUT/pgb-tenant" \
    "$DATABASE_URL_OWNER" > "$OUT/pgbench-tenant.out" 2>&1 \
    || { cat "$OUT/pgbench-tenant.out" >&2; die "pgbench failed"; }
cat "$OUT"/pgb-tenant.* | awk '{ printf "%.3f\n", $3 / 1000 }' > "$OUT/pgbench-tenant-ms.out"
read -r "FIG[b_n]" "FIG[b_p50]" "FIG[b_p99]" "FIG[b_max]" < <(ms_stats "$OUT/pgbench-tenant-ms.out")
FIG[b_tps]=$(awk '/^tps = / { printf "%.1f", $3 }' "$OUT/pgbench-tenant.out")
echo "  ${FIG[b_n]} reports, ${FIG[b_tps]}/s; p50 ${FIG[b_p50]} ms, p99 ${FIG[b_p99]} ms, max ${FIG[b_max]} ms"
BASE_TENANT_SQL="SELECT coalesce(pr.slug, u.project_id::text), v.res, min(v.unit), $QTY
  FROM usage_intervals u LEFT JOIN projects pr ON pr.id = u.project_id $PER_RESOURCE
 WHERE u.tenant_id = (SELECT id FROM tenants WHERE slug = 'tenant-001') AND $IN_MONTH
 GROUP BY 1, 2 ORDER BY 1, 2"
sql_times 5 "$OUT/baseline-largest.out" "$BASE_TENANT_SQL"
read -r _ "FIG[bbig_p50]" _ "FIG[bbig_max]" < <(ms_stats "$OUT/baseline-largest.out")
echo "  the largest tenant alone, 5 times: p50 ${FIG[bbig_p50]} ms, max ${FIG[bbig_max]} ms"

# ---- 2. the platform report ---------------------------------------------------------------
say "2. platform report of $MONTH, group_by=tenant,resource: up to $PLATFORM_RUNS runs (the first failure ends them)"
PLATFORM_URL="$BASE/api/v1/usage?from=$FROM&to=$TO&group_by=tenant,resource"
rss_watch platform
curl_times "$PLATFORM_RUNS" "$OUT/platform.out" "${AUTH[@]}" "$PLATFORM_URL"
FIG[rss_platform]=$(rss_peak platform)
if [ -s "$OUT/platform.out" ]; then
    FIG[p_rows]=$(jq '.rows | length' "$TMP/body")
    read -r _ "FIG[p_p50]" _ "FIG[p_max]" < <(ms_stats "$OUT/platform.out")
    FIG[p_min]=$(sort -n "$OUT/platform.out" | head -1)
    FIG[p_fig]="${FIG[p_min]} / ${FIG[p_p50]} / ${FIG[p_max]}"
    echo "  ${FIG[p_rows]} rows; min ${FIG[p_min]} ms, median ${FIG[p_p50]} ms, max ${FIG[p_max]} ms ($(paste -sd' ' "$OUT/platform.out"))"
else
    FIG[p_p50]=999999 FIG[p_fig]="failed: $(failed "$OUT/platform.out")"
fi
BASE_PLATFORM_SQL="SELECT t.slug, v.res, min(v.unit), $QTY
  FROM usage_intervals u JOIN tenants t ON t.id = u.tenant_id $PER_RESOURCE
 WHERE $IN_MONTH GROUP BY 1, 2 ORDER BY 1, 2"
sql_times 3 "$OUT/baseline-platform.out" "$BASE_PLATFORM_SQL"
read -r _ "FIG[bp_p50]" _ "FIG[bp_max]" < <(ms_stats "$OUT/baseline-platform.out")
FIG[bp_min]=$(sort -n "$OUT/baseline-platform.out" | head -1)
echo "  baseline, the same query straight in psql (owner), 3 runs: min ${FIG[bp_min]} ms, median ${FIG[bp_p50]} ms"
say "2b. the platform report of one day ($DAY), 3 runs"
PLATFORM_DAY_URL="$BASE/api/v1/usage?from=$DFROM&to=$DTO&group_by=tenant,resource"
curl_times 3 "$OUT/platform-day.out" "${AUTH[@]}" "$PLATFORM_DAY_URL"
read -r _ "FIG[pd_p50]" _ "FIG[pd_max]" < <(ms_stats "$OUT/platform-day.out")
echo "  median ${FIG[pd_p50]} ms, max ${FIG[pd_max]} ms $(failed "$OUT/platform-day.out" || true)"

# ---- 3. invoices --------------------------------------------------------------------------
TENANT_LIST=$(q -c "SELECT slug FROM tenants WHERE slug ~ '^tenant-[0-9]+\$' ORDER BY slug")
drop_drafts() { q -c "DELETE FROM invoices WHERE period = '$MONTH-01' AND state = 'draft'"; }
invoices() {  # invoices PARALLEL FILE: POST /invoices for every tenant over PARALLEL connections
    # (one curl each, its requests one after the other on one kept-alive connection: a curl
    # process per request would add its start-up, ~40 ms here); "code seconds" lines into FILE
    local par=$1 f=$2 k t args pids=()
    for ((k = 0; k < par; k++)); do
        args=()
        while read -r t; do
            [ ${#args[@]} = 0 ] || args+=(--next)
            args+=(-s -o /dev/null -w '%{http_code} %{time_total}\n' -X POST "${AUTH[@]}"
                   -H 'Content-Type: application/json' -d "{\"tenant\":\"$t\",\"period\":\"$MONTH\"}"
                   "$BASE/api/v1/invoices")
        done < <(awk -v k="$k" -v p="$par" 'NR % p == k' <<< "$TENANT_LIST")
        curl "${args[@]}" > "$f.$k" &
        pids+=($!)
    done
    wait "${pids[@]}"
    cat "$f".* > "$f"
    rm -f "$f".*
}
invoice_rounds() {  # invoice_rounds KEY: every invoice one at a time, then 2 at a time (drafts
    # deleted before each round: each one generates, none regenerates); figures FIG[KEY1..]
    local key=$1 par t0 t1
    for par in 1 2; do
        drop_drafts
        rss_watch "$key-$par"
        t0=$(date +%s.%N)
        invoices "$par" "$OUT/$key-$par.out"
        t1=$(date +%s.%N)
        FIG[rss_$key$par]=$(rss_peak "$key-$par")
        FIG[$key$par]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
        FIG[${key}${par}_ok]=$(grep -c '^201 ' "$OUT/$key-$par.out" || true)
        awk '{ printf "%.1f\n", $2 * 1000 }' "$OUT/$key-$par.out" > "$OUT/$key-$par-ms.out"
        read -r _ "FIG[${key}${par}_p50]" _ "FIG[${key}${par}_max]" < <(ms_stats "$OUT/$key-$par-ms.out")
        echo "  $par at a time: ${FIG[$key$par]} s for ${FIG[${key}${par}_ok]} of $N_TENANTS answered 201;" \
             "per invoice p50 ${FIG[${key}${par}_p50]} ms, max ${FIG[${key}${par}_max]} ms" \
             "$(awk '$1 != 201 { print $1 }' "$OUT/$key-$par.out" | sort | uniq -c | paste -sd' ' -)"
    done
}
say "3. invoices of $MONTH for $N_TENANTS tenants: one at a time, then 2 at a time"
invoice_rounds inv
FIG[inv_lines]=$(q -c "SELECT count(*) FROM invoice_lines l JOIN invoices i ON i.id = l.invoice_id
                        WHERE i.period = '$MONTH-01'")
echo "  $(q -c "SELECT count(DISTINCT i.id) || ' invoices, ${FIG[inv_lines]} lines (' || count(*) FILTER (WHERE l.kind = 'credit')
             || ' credits), total ' || (SELECT sum(total) FROM invoices WHERE period = '$MONTH-01') || ' '
             || min(i.currency) || '; gpu:a100 prices in tenant-002''s: '
             || (SELECT string_agg(DISTINCT l2.unit_price::text, ', ') FROM invoice_lines l2
                   JOIN invoices i2 ON i2.id = l2.invoice_id JOIN tenants t ON t.id = i2.tenant_id
                  WHERE t.slug = 'tenant-002' AND i2.period = '$MONTH-01' AND l2.resource = 'gpu:a100')
             FROM invoice_lines l JOIN invoices i ON i.id = l.invoice_id WHERE i.period = '$MONTH-01'")"
BASE_INVOICE_SQL="SELECT count(*), sum(c.quantity) FROM tenants t
  CROSS JOIN LATERAL aidc_invoice_compute(t.id, '$MONTH-01', NULL) c WHERE t.slug ~ '^tenant-[0-9]+\$'"
sql_times 1 "$OUT/baseline-invoices.out" "$BASE_INVOICE_SQL"
FIG[binv]=$(awk '{ printf "%.1f", $1 / 1000 }' "$OUT/baseline-invoices.out")
echo "  baseline: every tenant's lines from aidc_invoice_compute in one psql statement (owner): ${FIG[binv]} s"
if [ "$JIT_DIAG" = 1 ]; then
    say "3b. diagnosis: the invoices again with jit = off for aidc_app in $DB (JIT compiles the invoice statement)"
    ROLE_SET=1
    FIG[rss_mid]=$(rss_kib "$AIDCD_PID")
    admin_sql -c "ALTER ROLE aidc_app IN DATABASE $DB SET jit = off"
    stop_pid "$AIDCD_PID" aidcd   # new connections pick the setting up
    aidcd_start 18700
    finance_token
    invoice_rounds invj
    admin_sql -c "ALTER ROLE aidc_app IN DATABASE $DB RESET ALL"
    ROLE_SET=0
    stop_pid "$AIDCD_PID" aidcd
    aidcd_start 18700
    finance_token
fi

# ---- 4. CSV export ------------------------------------------------------------------------
csv_expr() {  # the SQL expression of a group key
    case $1 in
        tenant) echo "t.slug" ;; project) echo "coalesce(pr.slug, u.project_id::text)" ;;
        user) echo "u.username" ;; day) echo "to_char(u.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')" ;;
        week) echo "to_char(u.started_at AT TIME ZONE 'UTC', 'IYYY-\"W\"IW')" ;;
        month) echo "to_char(u.started_at AT TIME ZONE 'UTC', 'YYYY-MM')" ;;
        *) die "BENCH_CSV_GROUP: unknown key $1" ;;
    esac
}
csv_case() {  # csv_case NAME FROM TO GROUP RUNS: the export RUNS times, then the baseline COPY
    local name=$1 from=$2 to=$3 group=$4 runs=$5 url keys=() n=0 g code t bytes rows sql t0 t1 brows
    unset "FIG[csv_$name]"
    url="$BASE/api/v1/usage?from=$from&to=$to&group_by=$group&format=csv"
    : > "$OUT/csv-$name.out"
    for _ in $(seq "$runs"); do
        read -r code t bytes < <(curl -s -o "$TMP/usage.csv" -w '%{http_code} %{time_total} %{size_download}\n' \
                                      "${AUTH[@]}" "$url")
        if [ "$code" != 200 ]; then
            FIG[csv_$name]="failed: $code after $(awk -v t="$t" 'BEGIN { printf "%.1f", t }') s"
            echo "  group_by=$group: ${FIG[csv_$name]} ($(head -c 300 "$TMP/usage.csv"))"
            [ "$code" != 422 ] || return 0
            break
        fi
        rows=$(( $(wc -l < "$TMP/usage.csv") - 1 ))
        echo "$rows $t $bytes" >> "$OUT/csv-$name.out"
    done
    if [ -s "$OUT/csv-$name.out" ]; then
        read -r rows t bytes < <(sort -k2 -n "$OUT/csv-$name.out" | awk -v m=$(( ($(wc -l < "$OUT/csv-$name.out") + 1) / 2 )) 'NR == m')
        FIG[csv_$name]="$(awk -v n="$rows" -v t="$t" 'BEGIN { printf "%.0f", n / t }') ($rows rows in $(awk -v t="$t" 'BEGIN { printf "%.2f", t }') s)"
        echo "  group_by=$group: $rows rows, $((bytes / 1024)) KiB; median $(awk -v t="$t" 'BEGIN { printf "%.2f", t }') s:" \
             "${FIG[csv_$name]%% *} rows/s (runs: $(awk '{ printf "%s%.2f s", (NR > 1 ? ", " : ""), $2 }' "$OUT/csv-$name.out"))"
        read -r code t < <(curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "${AUTH[@]}" "${url%&format=csv}")
        echo "  the same report as JSON: $code in $(awk -v t="$t" 'BEGIN { printf "%.2f", t }') s"
    fi
    IFS=, read -ra groups <<< "$group"
    for g in "${groups[@]}"; do [ "$g" = resource ] || { keys+=("$(csv_expr "$g")"); n=$((n + 1)); }; done
    sql="SELECT $(IFS=,; echo "${keys[*]}"), v.res, $QTY, min(v.unit)
      FROM usage_intervals u JOIN tenants t ON t.id = u.tenant_id LEFT JOIN projects pr ON pr.id = u.project_id
      $PER_RESOURCE WHERE u.started_at >= '$from' AND u.started_at < '$to' AND v.n > 0 AND v.res IS NOT NULL
      GROUP BY $(seq -s, 1 $((n + 1)))"
    t0=$(date +%s.%N)
    brows=$(q -c "COPY ($sql) TO STDOUT (FORMAT csv)" | wc -l)
    t1=$(date +%s.%N)
    FIG[bcsv_$name]="$(awk -v n="$brows" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f (%d rows in %.2f s)", n / (b - a), n, b - a }')"
    echo "  baseline: COPY of the same rows straight from psql (owner): ${FIG[bcsv_$name]%% *} rows/s ${FIG[bcsv_$name]#* }"
}
say "4. CSV export of $MONTH (platform, 3 runs; a failure ends them)"
rss_watch csv
# a report of more than 100,000 rows is refused (422): then a coarser grouping
for g in "$CSV_GROUP" tenant,project,week tenant,project; do
    CSV_GROUP=$g
    csv_case month "$FROM" "$TO" "$CSV_GROUP" 3
    [[ "${FIG[csv_month]}" = "failed: 422"* ]] || break
done
say "4b. CSV export of one day ($DAY, platform, group_by=$CSV_GROUP), 3 runs"
csv_case day "$DFROM" "$DTO" "$CSV_GROUP" 3
FIG[rss_csv]=$(rss_peak csv)
FIG[rss1]=$(rss_kib "$AIDCD_PID")

# ---- 5. plans ---------------------------------------------------------------------------
if [ "$EXPLAIN" = 1 ]; then
    say "5. plans: auto_explain (ANALYZE, BUFFERS) for aidc_app in $DB, one request of each kind"
    LOG="$BENCH_PGDATA_DIR/server.log"
    ROLE_SET=1
    admin_sql \
        -c "ALTER ROLE aidc_app IN DATABASE $DB SET session_preload_libraries = 'auto_explain'" \
        -c "ALTER ROLE aidc_app IN DATABASE $DB SET auto_explain.log_min_duration = '10ms'" \
        -c "ALTER ROLE aidc_app IN DATABASE $DB SET auto_explain.log_analyze = on" \
        -c "ALTER ROLE aidc_app IN DATABASE $DB SET auto_explain.log_buffers = on" \
        -c "ALTER ROLE aidc_app IN DATABASE $DB SET auto_explain.log_nested_statements = on"
    stop_pid "$AIDCD_PID" aidcd   # new connections pick the settings up
    aidcd_start 18700
    finance_token
    explain_of() {  # explain_of NAME curl-args...: one request, the plans it logged into explain-NAME.txt
        local size
        size=$(stat -c %s "$LOG")
        curl -s -o /dev/null -w "  $1: %{http_code} in %{time_total} s" "${@:2}"
        sleep 0.5
        tail -c +"$((size + 1))" "$LOG" | sed -n '/duration: .* plan:/,$p' > "$OUT/explain-$1.txt"
        echo "; $(grep -c 'duration: .* plan:' "$OUT/explain-$1.txt" || true) plan(s) in $OUT/explain-$1.txt"
    }
    explain_of tenant-largest "${AUTH[@]}" "$TENANT_URL"
    explain_of tenant-median "${AUTH[@]}" "${TENANT_URL/tenant-001/tenant-100}"
    explain_of platform-day "${AUTH[@]}" "$PLATFORM_DAY_URL"
    explain_of invoice-largest -X POST "${AUTH[@]}" -H 'Content-Type: application/json' \
        -d "{\"tenant\":\"tenant-001\",\"period\":\"$MONTH\"}" "$BASE/api/v1/invoices"
    explain_of invoice-median -X POST "${AUTH[@]}" -H 'Content-Type: application/json' \
        -d "{\"tenant\":\"tenant-100\",\"period\":\"$MONTH\"}" "$BASE/api/v1/invoices"
    admin_sql -c "ALTER ROLE aidc_app IN DATABASE $DB RESET ALL"
    ROLE_SET=0
    for b in TENANT PLATFORM INVOICE; do
        v="BASE_${b}_SQL"
        q -c "EXPLAIN (ANALYZE, BUFFERS) ${!v}" > "$OUT/explain-baseline-${b,,}.txt"
    done
    echo "  baselines: $OUT/explain-baseline-{tenant,platform,invoice}.txt"
fi

# ---- figures --------------------------------------------------------------------------------
verdict() { awk -v x="$1" -v lim="$2" 'BEGIN { if (x == "" || x == "-") print "n/a";
    else print (x + 0 < lim + 0) ? "met" : "NOT met" }'; }
say "figures ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)); $N_INTERVALS intervals, month $MONTH"
printf '  %-58s | %-34s | %s\n' "what" "aidcd over HTTP" "baseline: SQL straight (owner)"
printf '  %-58s | %-34s | %s\n' \
    "tenant report p50 / p99 ms (target p99 < 100: $(verdict "${FIG[t_p99]}" 100))" \
    "${FIG[t_p50]} / ${FIG[t_p99]} (${FIG[t_n]} requests)" "${FIG[b_p50]} / ${FIG[b_p99]} (${FIG[b_n]})" \
    "tenant reports/s ($CONNS connections)" "${FIG[t_rps]}" "${FIG[b_tps]}" \
    "largest tenant alone, p50 / max ms" "${FIG[big_p50]} / ${FIG[big_max]}" "${FIG[bbig_p50]} / ${FIG[bbig_max]}" \
    "platform month min / median / max ms (< 2 s: $(verdict "${FIG[p_p50]}" 2000))" \
    "${FIG[p_fig]}" "${FIG[bp_min]} / ${FIG[bp_p50]} / ${FIG[bp_max]}" \
    "platform report of one day, median ms" "${FIG[pd_p50]}" "" \
    "all $N_TENANTS invoices, one at a time, s (< 10: $(verdict "${FIG[inv1]}" 10))" \
    "${FIG[inv1]} (${FIG[inv1_ok]} x 201; p50 ${FIG[inv1_p50]} ms)" "${FIG[binv]} (compute only, 1 statement)" \
    "all $N_TENANTS invoices, 2 at a time, s (< 10: $(verdict "${FIG[inv2]}" 10))" \
    "${FIG[inv2]} (${FIG[inv2_ok]} x 201; p50 ${FIG[inv2_p50]} ms)" "" \
    "  the same with jit = off: one at a time / 2 at a time, s" \
    "${FIG[invj1]:--} / ${FIG[invj2]:--} (p50 ${FIG[invj1_p50]:--} ms)" "" \
    "CSV rows/s, month, $CSV_GROUP" "${FIG[csv_month]:-}" "${FIG[bcsv_month]:-}" \
    "CSV rows/s, one day, $CSV_GROUP" "${FIG[csv_day]:-}" "${FIG[bcsv_day]:-}"
echo "  aidcd VmRSS (KiB): before ${FIG[rss0]}${FIG[rss_mid]:+, after parts 1-3 ${FIG[rss_mid]} (restarted for 3b)}; peak during tenant ${FIG[rss_tenant]}, platform" \
     "${FIG[rss_platform]}, invoices ${FIG[rss_inv1]} / ${FIG[rss_inv2]} (jit off ${FIG[rss_invj1]:--} / ${FIG[rss_invj2]:--}), CSV ${FIG[rss_csv]}; after ${FIG[rss1]}"
[ -z "${FIG[seed]:-}" ] || echo "  seeding: ${FIG[seed]}"
echo "  raw outputs: $OUT"
