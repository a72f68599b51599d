#!/usr/bin/env bash
# audit.sh - figures of the audit log (figures, not pass/fail; not run by ctest).
#
# From the repository root, after `cmake --build build --target aidcd`, run
#     tests/bench/audit.sh
# It builds a second aidcd that writes no audit events (build-bench-noaudit/,
# -DAIDC_BENCH_NO_AUDIT=ON), starts its own PostgreSQL 15 (deploy/pg-up.sh,
# PGDATA_DIR=/tmp/aidc-bench-audit-pg, port 15452) and measures:
#   1. the cost of auditing: POST /api/v1/tenants/bench/projects with wrk against
#      aidcd, then against the build without audit writes, twice each, alternating
#      (every mutating request writes one audit event in its own transaction);
#   2. the sealer: BENCH_EVENTS events written in one INSERT as the owner, spread
#      evenly over the BENCH_SPAN_DAYS days before now (a log of millions of events
#      spans months; its monthly partitions made first), then chained by
#      `aidcd audit seal` (events/s); this runs first, so that the events of part 1
#      come after them in the chain;
#   3. search: wrk with audit_search.lua (one random filter per request: actor,
#      tenant, action, action prefix + outcome, address, network, word, two
#      filters, resource, time window + tenant) over those events: p50/p99; then
#      each filter alone, BENCH_SEARCH_EACH requests one at a time: p50/p99 each;
#   4. export: GET /api/v1/audit/events/export of the newest BENCH_EXPORT_EVENTS
#      events to /dev/null (rows/s) while aidcd's RSS is sampled;
#   5. ingest: BENCH_INGEST_BATCHES NDJSON bodies of 10,000 node records each,
#      posted BENCH_INGEST_PARALLEL at a time with an audit:ingest token (records/s).
# It prints a table. The exit status is 0 whenever the measurements ran.
#
# Environment (all optional):
#   BUILD_DIR                build tree                        (default ./build)
#   BENCH_DURATION           seconds per wrk run               (default 10)
#   BENCH_CONNECTIONS        wrk connections                   (default 32)
#   BENCH_ROUNDS             alternating rounds of part 1      (default 3)
#   BENCH_THREADS            HTTP worker threads of aidcd      (default 2)
#   BENCH_EVENTS             events for search/export          (default 5000000)
#   BENCH_SPAN_DAYS          days those events span            (default 90)
#   BENCH_SEARCH_EACH        requests per filter, one at a time (default 20)
#   BENCH_PARTS              parts to run                      (default "1 2 3 4 5")
#   BENCH_NOAUDIT_BIN        a built aidcd without audit writes (default: build one)
#   BENCH_EXPORT_EVENTS      events exported                   (default 1000000)
#   BENCH_INGEST_BATCHES     10,000-record bodies posted       (default 40)
#   BENCH_INGEST_PARALLEL    bodies in flight                  (default 4)
#   BENCH_PGDATA_DIR, BENCH_PGPORT  the bench cluster  (default /tmp/aidc-bench-audit-pg, 15452)
#   BENCH_AIDC_PORT          first port tried for aidcd        (default 18600)
#   BENCH_KEEP_PG=1          leave the cluster running at the end
#   BENCH_REUSE=1            keep the events of the last run (skip part 2; migrate them)
#   BENCH_OUT                raw outputs                       (default /tmp/aidc-bench-audit-out)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/bench"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
DURATION=${BENCH_DURATION:-10}
ROUNDS=${BENCH_ROUNDS:-3}
CONNS=${BENCH_CONNECTIONS:-32}
THREADS=${BENCH_THREADS:-2}
EVENTS=${BENCH_EVENTS:-5000000}
SPAN_DAYS=${BENCH_SPAN_DAYS:-90}
SEARCH_EACH=${BENCH_SEARCH_EACH:-20}
PARTS=" ${BENCH_PARTS:-1 2 3 4 5} "
EXPORT_EVENTS=${BENCH_EXPORT_EVENTS:-1000000}
INGEST_BATCHES=${BENCH_INGEST_BATCHES:-40}
INGEST_PARALLEL=${BENCH_INGEST_PARALLEL:-4}
BENCH_PGDATA_DIR=${BENCH_PGDATA_DIR:-/tmp/aidc-bench-audit-pg}
BENCH_PGPORT=${BENCH_PGPORT:-15452}
OUT=${BENCH_OUT:-/tmp/aidc-bench-audit-out}
DB=aidc_bench_audit
PASSWORD=bench-password-1234
TENANT=bench
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGBIN
PSQL="$PGBIN/psql"

say() { printf '\n== %s\n' "$*"; }
die() { echo "bench: $*" >&2; exit 1; }
for c in wrk curl jq; do command -v "$c" >/dev/null || die "$c not found (deploy/install-deps.sh bench)"; done
[ -x "$BUILD_DIR/aidcd" ] || die "$BUILD_DIR/aidcd not found: build first"
mkdir -p "$OUT"
rm -f "$OUT"/*.out "$OUT"/*.log
TMP=$(mktemp -d /tmp/aidc-bench-audit.XXXXXX)
AIDCD_PID=
# shellcheck source=tests/bench/lib.sh
. "$HERE/lib.sh"
cleanup() {
    local rc=$?
    stop_pid "$AIDCD_PID" aidcd
    rm -rf "$TMP"
    stop_bench_pg
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

part() { [[ "$PARTS" == *" $1 "* ]]; }
NOAUDIT_BIN=${BENCH_NOAUDIT_BIN:-}
if [ -z "$NOAUDIT_BIN" ] && part 1; then
    say "building aidcd without audit writes (build-bench-noaudit/)"
    cmake -S "$ROOT" -B "$ROOT/build-bench-noaudit" -DAIDC_BENCH_NO_AUDIT=ON -DAIDC_TESTS=OFF >/dev/null
    cmake --build "$ROOT/build-bench-noaudit" -j"$(nproc)" --target aidcd >"$OUT/build-noaudit.log" 2>&1 \
        || die "build failed (log: $OUT/build-noaudit.log)"
    NOAUDIT_BIN=$ROOT/build-bench-noaudit/aidcd
fi
cp "$BUILD_DIR/aidcd" "$TMP/aidcd"
[ -z "$NOAUDIT_BIN" ] || cp "$NOAUDIT_BIN" "$TMP/aidcd-noaudit"
AIDCD="$TMP/aidcd"

own_pg
# a load generator is one address with one credential: no per-client limits
export AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0
export AIDC_LOG_LEVEL=warn AIDC_DATA_DIR="$TMP/data" AIDC_THREADS="$THREADS" AIDC_WORKERS=1
"$AIDCD" migrate
# the key lives beside the cluster, so a reused database keeps verifying
KEY="$BENCH_PGDATA_DIR.audit-key.pem"
[ -f "$KEY" ] && [ "${BENCH_REUSE:-0}" = 1 ] || { rm -f "$KEY"; "$AIDCD" audit keygen "$KEY" >/dev/null; }
export AIDC_AUDIT_KEY_FILE="$KEY"
q() { "$PSQL" -X -qAt -v ON_ERROR_STOP=1 -d "$DATABASE_URL_OWNER" "$@"; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
declare -A FIG

serve() {  # serve BINARY: (re)start aidcd from BINARY
    stop_pid "$AIDCD_PID" aidcd
    AIDCD=$1
    aidcd_start "${BENCH_AIDC_PORT:-18600}"
}

if [ "${BENCH_REUSE:-0}" != 1 ] && part 2; then
# ---- 2. the sealer ------------------------------------------------------------------
say "2. writing $EVENTS events over $SPAN_DAYS days (one INSERT as the owner), then aidcd audit seal"
# the months the events fall in get their partitions, as a log that old has them
q -c "SELECT aidc_audit_partitions(now() - interval '$SPAN_DAYS days', 3)" >/dev/null
t0=$(date +%s.%N)
q -c "INSERT INTO audit_events (ts, actor_username, actor_roles, tenant_slug, source_ip, user_agent,
        request_id, action, resource_type, resource_id, outcome, status, details)
      SELECT now() - make_interval(secs => ($EVENTS - g) * ($SPAN_DAYS * 86400.0 / $EVENTS)),
             'user' || (g % 500), '{}', 'tenant' || (g % 40), ('10.1.' || (g % 200) || '.7')::inet,
             'bench/1.0', md5(g::text),
             (ARRAY['job.submit','job.cancel','project.create','auth.login'])[1 + g % 4], 'job',
             substr(md5((g * 7)::text), 1, 8), CASE WHEN g % 50 = 0 THEN 'denied' ELSE 'success' END,
             CASE WHEN g % 50 = 0 THEN 403 ELSE 201 END,
             jsonb_build_object('project', 'p' || (g % 90), 'gpus', g % 8,
                                'image', 'registry.local/pytorch:2.' || (g % 5))
        FROM generate_series(1, $EVENTS) g"
t1=$(date +%s.%N)
"$AIDCD" audit seal > "$OUT/seal.out"
t2=$(date +%s.%N)
FIG[insert]=$(awk -v n="$EVENTS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
FIG[seal]=$(awk -v n="$EVENTS" -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", n / (b - a) }')
echo "  insert: ${FIG[insert]} events/s; seal: ${FIG[seal]} events/s ($(cat "$OUT/seal.out"))"
q -c "VACUUM ANALYZE audit_events" -c "VACUUM ANALYZE audit_chain"
fi

if part 1; then
# ---- 1. the cost of auditing --------------------------------------------------------
serve "$TMP/aidcd"
admin_token
got=$(curl -s -o "$TMP/resp" -w '%{http_code}' -X POST "${AUTH[@]}" \
      -d "{\"slug\":\"$TENANT\",\"name\":\"Bench\"}" "$BASE/api/v1/tenants")
[ "$got" = 201 ] || [ "$got" = 409 ] || die "creating the tenant answered $got"
say "1. POST projects, $DURATION s x $CONNS connections, audited and not, $ROUNDS rounds"
declare -A RPS CPU
for round in $(seq "$ROUNDS"); do
    for kind in audit noaudit; do
        bin="$TMP/aidcd"; [ $kind = noaudit ] && bin="$TMP/aidcd-noaudit"
        serve "$bin"
        # CPU per request (aidcd and the whole cluster, the sealer's work included: the
        # 2 s after wrk take its last rounds): steadier than req/s on a loaded machine
        ticks0=$(( $(pg_ticks) + $(proc_ticks "$AIDCD_PID") ))
        BENCH_RUN="$round$RANDOM" wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency \
            -H "Authorization: Bearer $TOKEN" -s "$HERE/post_projects.lua" \
            "$BASE/api/v1/tenants/$TENANT/projects" > "$OUT/projects-$kind-$round.out"
        sleep 2
        ticks1=$(( $(pg_ticks) + $(proc_ticks "$AIDCD_PID") ))
        rps=$(awk '/^Requests\/sec:/ { print $2 }' "$OUT/projects-$kind-$round.out")
        non2xx=$(awk '/Non-2xx/ { print $5 }' "$OUT/projects-$kind-$round.out")
        cpu=$(awk -v a="$ticks0" -v b="$ticks1" -v hz="$(getconf CLK_TCK)" \
              -v n="$(awk '/requests in/ { print $1 }' "$OUT/projects-$kind-$round.out")" \
              'BEGIN { printf "%.3f", (n > 0 ? (b - a) * 1000 / hz / n : 0) }')
        echo "  $kind round $round: $rps requests/s, $cpu CPU ms/request ${non2xx:+($non2xx non-2xx)}"
        RPS[$kind]="${RPS[$kind]:-} $rps"
        CPU[$kind]="${CPU[$kind]:-} $cpu"
    done
done
# medians: one noisy round (steal time on a shared VM) moves a sum by 10-20 %
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
FIG[audit]=$(echo "${RPS[audit]}" | median)
FIG[noaudit]=$(echo "${RPS[noaudit]}" | median)
FIG[cost]=$(awk -v a="${FIG[audit]:--}" -v n="${FIG[noaudit]:--}" 'BEGIN { printf "%.1f", (1 - a / n) * 100 }')
echo "  audit cost: ${FIG[cost]} % of the throughput without audit writes (medians)"
FIG[cpu_audit]=$(echo "${CPU[audit]}" | median)
FIG[cpu_noaudit]=$(echo "${CPU[noaudit]}" | median)
FIG[cpu_cost]=$(awk -v a="${FIG[cpu_audit]}" -v n="${FIG[cpu_noaudit]}" 'BEGIN { printf "%.1f", (a > 0 ? (1 - n / a) * 100 : 0) }')
echo "  audit cost by CPU: ${FIG[cpu_audit]} against ${FIG[cpu_noaudit]} ms/request (medians):" \
     "${FIG[cpu_cost]} % of an audited request's CPU"
fi

# ---- 3. search ----------------------------------------------------------------------
serve_session() {  # the audited aidcd and a session of "bench" in TOKEN
    serve "$TMP/aidcd"
    # a session: it has every scope of its user (the API token above has no audit:read)
    expect 200 -X POST -H 'Content-Type: application/json' \
        -d "{\"username\":\"bench\",\"password\":\"$PASSWORD\"}" "$BASE/api/v1/auth/login"
    TOKEN=$(jq -r .access_token "$TMP/resp")
    SESSION=1
}
SESSION=0
if part 3; then
serve_session
say "3. search over $(q -c 'SELECT count(*) FROM audit_events') events: wrk $DURATION s x 8 connections"
wrk -t2 -c8 -d"${DURATION}s" --latency -H "Authorization: Bearer $TOKEN" -s "$HERE/audit_search.lua" \
    "$BASE" > "$OUT/search.out"
FIG[search_rps]=$(awk '/^Requests\/sec:/ { print $2 }' "$OUT/search.out")
FIG[search_p50]=$(awk '$1 == "50%" { print $2 }' "$OUT/search.out")
FIG[search_p99]=$(awk '$1 == "99%" { print $2 }' "$OUT/search.out")
grep -E "Non-2xx|Socket errors" "$OUT/search.out" || true
echo "  ${FIG[search_rps]} searches/s, p50 ${FIG[search_p50]}, p99 ${FIG[search_p99]}"
say "3b. each filter alone: $SEARCH_EACH requests one at a time (ms: p50 / p99 / max, items of the last)"
EACH=("actor=user17" "tenant=tenant3" "action=job.cancel" "action=auth.*&outcome=denied"
      "source_ip=10.1.7.7" "source_ip=10.1.7.0/24" "q=p7" "q=nosuchword"
      "actor=user17&action=job.submit" "resource_id=0badf00d"
      "from=2026-01-01T00:00:00Z&to=2030-01-01T00:00:00Z&tenant=tenant3"
      "from=2020-01-01T00:00:00Z&q=p7" "from=2020-01-01T00:00:00Z&source_ip=10.1.7.0/24"
      "from=2020-01-01T00:00:00Z&action=auth.*&outcome=denied")
for f in "${EACH[@]}"; do
    for _ in $(seq "$SEARCH_EACH"); do
        curl -s -o "$TMP/resp" -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" \
            "$BASE/api/v1/audit/events?limit=50&$f"
    done > "$TMP/each"
    n=$(jq '.items | length' "$TMP/resp" 2>/dev/null || echo '?')
    sort -g "$TMP/each" | awk -v f="$f" -v n="$n" \
        '{ v[NR] = $1 * 1000 } END { printf "  %-62s %6.1f / %6.1f / %6.1f  (%s)\n", f,
           v[int((NR + 1) / 2)], v[int(NR * 0.99 + 0.999)], v[NR], n }' | tee -a "$OUT/search-each.out"
done

fi

# ---- 4. export ----------------------------------------------------------------------
if part 4; then
[ "$SESSION" = 1 ] || serve_session
from=$(q -c "SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM audit_events
             ORDER BY ts DESC, id DESC OFFSET $EXPORT_EVENTS - 1 LIMIT 1")
say "4. export of the newest $EXPORT_EVENTS events (from=$from)"
rss0=$(rss_kib "$AIDCD_PID"); peak=$rss0
( while sleep 0.2; do rss_kib "$AIDCD_PID"; done ) > "$OUT/export-rss.out" &
sampler=$!
t0=$(date +%s.%N)
bytes=$(curl -s -H "Authorization: Bearer $TOKEN" "$BASE/api/v1/audit/events/export?from=$from" \
        -o "$TMP/export.ndjson" -w '%{size_download}')
t1=$(date +%s.%N)
kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
peak=$(sort -n "$OUT/export-rss.out" | tail -1)
lines=$(wc -l < "$TMP/export.ndjson")
FIG[export]=$(awk -v n="$lines" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
echo "  $lines lines, $((bytes / 1048576)) MiB: ${FIG[export]} lines/s; aidcd RSS $rss0 KiB before, $peak KiB at most"
t0=$(date +%s.%N)
# a reused database holds checkpoints signed with the key of its first run
keyarg=(--key "$KEY"); [ "${BENCH_REUSE:-0}" = 1 ] && keyarg=()
env -u AIDC_AUDIT_KEY_FILE "$AIDCD" audit verify-export "$TMP/export.ndjson" "${keyarg[@]}" \
    | tee "$OUT/verify-export.out"
t1=$(date +%s.%N)
FIG[verify_export]=$(awk -v n="$lines" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
rm -f "$TMP/export.ndjson"
FIG[rss0]=$rss0 FIG[rss_peak]=$peak

fi

# ---- 5. ingest ----------------------------------------------------------------------
if part 5; then
[ "$SESSION" = 1 ] || serve_session
say "5. ingest: $INGEST_BATCHES bodies of 10,000 node records, $INGEST_PARALLEL in flight"
ingest_token=$(curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"name":"ingest","scopes":["audit:ingest"],"expires_in_days":1}' "$BASE/api/v1/tokens" | jq -r .token)
now=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
mkdir -p "$TMP/ingest"
for b in $(seq "$INGEST_BATCHES"); do
    awk -v b="$b-$$" -v now="$now" 'BEGIN { for (i = 0; i < 10000; i++)
        printf "{\"ts\":\"%s\",\"host\":\"gpu%02d\",\"user\":\"u%d\",\"uid\":%d,\"session\":\"s%d\",\"cwd\":\"/home/u%d\",\"command\":\"python train.py --epochs %d --lr 0.001\",\"exit_code\":0,\"record_id\":\"b%d-%d\"}\n",
               now, i % 16, i % 50, 1000 + i % 50, i % 100, i % 50, i, b, i }' > "$TMP/ingest/$b.ndjson"
done
t0=$(date +%s.%N)
ls "$TMP"/ingest/*.ndjson | xargs -P "$INGEST_PARALLEL" -I{} curl -s -o /dev/null -w '%{http_code}\n' \
    -H "Authorization: Bearer $ingest_token" -H 'Content-Type: application/x-ndjson' \
    --data-binary @{} "$BASE/api/v1/audit/commands" > "$OUT/ingest.out"
t1=$(date +%s.%N)
ok=$(grep -c '^202$' "$OUT/ingest.out" || true)
FIG[ingest]=$(awk -v n="$((ok * 10000))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
echo "  $ok of $INGEST_BATCHES bodies accepted: ${FIG[ingest]} records/s"
fi

say "figures ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '  %-44s %s\n' \
    "POST projects, audited (req/s, median)" "${FIG[audit]:--}" \
    "POST projects, no audit writes (req/s, median)" "${FIG[noaudit]:--}" \
    "audit cost (target < 10 %)" "${FIG[cost]:--} %" \
    "audit cost by CPU/request" "${FIG[cpu_cost]:--} %" \
    "events written by one INSERT (events/s)" "${FIG[insert]:--}" \
    "sealer (events/s)" "${FIG[seal]:--}" \
    "search p50 / p99 (target p99 < 100 ms)" "${FIG[search_p50]:--} / ${FIG[search_p99]:--}" \
    "searches/s (8 connections)" "${FIG[search_rps]:--}" \
    "export (lines/s)" "${FIG[export]:--}" \
    "export: aidcd RSS before / peak (KiB)" "${FIG[rss0]:--} / ${FIG[rss_peak]:--}" \
    "verify-export (lines/s)" "${FIG[verify_export]:--}" \
    "ingest (records/s, target > 50,000)" "${FIG[ingest]:--}"
