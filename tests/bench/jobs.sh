#!/usr/bin/env bash
# jobs.sh - figures of the job path: how fast jobs are submitted and admitted
# (figures, not pass/fail; not run by ctest).
#
# From the repository root, after
#     cmake --build build --target aidcd bench_admission
# run
#     tests/bench/jobs.sh
#
# It starts its own PostgreSQL 15 (deploy/pg-up.sh, PGDATA_DIR=/tmp/aidc-bench-jobs-pg,
# port 15451: run.sh's cluster and every other one stay untouched) with two fresh
# databases, and measures:
#   1. admission (build/tests/bench_admission, database aidc_bench_adm): the pure
#      admission function over 10,000 and 100,000 queued jobs (50 tenants, 3 GPU
#      types, 1,000 GPUs) and a simulated drain; then admitter_pass through
#      PostgreSQL: draining 10,000 jobs and one pass over 100,000 queued jobs with
#      its load/decide/write split (see admission.c and admission_db.c);
#   2. aidcd with its workers (database aidc_bench_jobs), a local cluster of 64
#      a100 GPUs and a tenant "bench":
#      (a) submit-to-admitted latency with free capacity: BENCH_LAT_JOBS one-GPU
#          jobs running `true`, submitted one at a time (curl, BENCH_LAT_GAP s
#          apart); p50/p99 of admitted_at - submitted_at, and of the two job
#          events (clock_timestamp() when each row was written, i.e. just before
#          each commit - a pass's admitted_at is its transaction start);
#      (b) POST /api/v1/tenants/bench/projects with wrk (the baseline: insert and
#          audit event, one transaction), then POST /api/v1/tenants/bench/jobs
#          with wrk + post_jobs.lua twice: CPU-only jobs into project "hold"
#          whose quota {"jobs":{"limit":0}} keeps them queued (nothing runs), the
#          second run with the first run's jobs in the queue; a third with reads
#          beside it (wrk -c4 GET a project: their rate and p50/p99);
#      (c) how long admission takes to look at every job of that burst (each
#          submitted job carries the reason "submitted" until a pass wrote why it
#          waits), and the latency of (a) again with that backlog in the queue.
# It prints a table. The exit status is 0 whenever the measurements ran.
#
# Environment (all optional):
#   BUILD_DIR            build tree                                  (default ./build)
#   BENCH_DURATION       seconds per wrk run                         (default 10)
#   BENCH_CONNECTIONS    wrk connections                             (default 64)
#   BENCH_WRK_THREADS    wrk threads                                 (default 2)
#   BENCH_THREADS        HTTP worker threads of aidcd                (default 2)
#   BENCH_WRITE_THREADS  write threads of aidcd (AIDC_WRITE_THREADS; 0: writes on
#                        the HTTP threads, the build before them)   (default: aidcd's)
#   BENCH_ADM_JOBS       jobs of the admission drain                 (default 10000)
#   BENCH_ADM_BIG        jobs of the single large pass (0: none)     (default 100000)
#   BENCH_ADM=0          skip part 1
#   BENCH_LAT_JOBS       jobs of the latency run (a)                 (default 300)
#   BENCH_LAT_GAP        seconds between two of their submissions    (default 0.02)
#   BENCH_LAT_BACKLOG_JOBS  jobs of the latency run of (c)           (default 100)
#   BENCH_PGDATA_DIR, BENCH_PGPORT  the bench cluster  (default /tmp/aidc-bench-jobs-pg, 15451)
#   BENCH_KEEP_PG=1      leave the cluster running at the end (default: stop it)
#   BENCH_OUT            directory for raw outputs         (default /tmp/aidc-bench-jobs-out)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/bench"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
AIDCD="$BUILD_DIR/aidcd"
ADMISSION="$BUILD_DIR/tests/bench_admission"
DURATION=${BENCH_DURATION:-10}
CONNS=${BENCH_CONNECTIONS:-64}
WRK_THREADS=${BENCH_WRK_THREADS:-2}
THREADS=${BENCH_THREADS:-2}
ADM_JOBS=${BENCH_ADM_JOBS:-10000}
ADM_BIG=${BENCH_ADM_BIG:-100000}
LAT_JOBS=${BENCH_LAT_JOBS:-300}
LAT_GAP=${BENCH_LAT_GAP:-0.02}
LAT_BACKLOG_JOBS=${BENCH_LAT_BACKLOG_JOBS:-100}
BENCH_PGDATA_DIR=${BENCH_PGDATA_DIR:-/tmp/aidc-bench-jobs-pg}
BENCH_PGPORT=${BENCH_PGPORT:-15451}
OUT=${BENCH_OUT:-/tmp/aidc-bench-jobs-out}
ADM_DB=aidc_bench_adm
JOBS_DB=aidc_bench_jobs
PASSWORD=bench-password-1234
TENANT=bench

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGBIN
PSQL="$PGBIN/psql"
CLK_TCK=$(getconf CLK_TCK)

say() { printf '\n== %s\n' "$*"; }
die() { echo "bench: $*" >&2; exit 1; }

for b in "$AIDCD" "$ADMISSION"; do
    [ -x "$b" ] || die "$b not found: build first (cmake --build build --target aidcd bench_admission)"
done
for c in wrk curl jq; do command -v "$c" >/dev/null || die "$c not found (deploy/install-deps.sh bench)"; done
[ -x "$PSQL" ] || die "$PSQL not found"

mkdir -p "$OUT"
rm -f "$OUT"/*.out "$OUT"/*.log
TMP=$(mktemp -d /tmp/aidc-bench-jobs.XXXXXX)
chmod 711 "$TMP" # the local executor's jobs pass through it to AIDC_DATA_DIR
AIDCD_PID=

# shellcheck source=tests/bench/lib.sh
. "$ROOT/tests/bench/lib.sh"
cleanup() {
    local rc=$?
    stop_pid "$AIDCD_PID" aidcd
    rm -rf "$TMP"
    stop_bench_pg
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# run copies: a rebuild of build/ during the run must not pull the binaries away
cp "$AIDCD" "$TMP/aidcd" && cp "$ADMISSION" "$TMP/bench_admission"
AIDCD="$TMP/aidcd" ADMISSION="$TMP/bench_admission"



# ---- PostgreSQL: one cluster, a fresh database for each part ----------------------
say "PostgreSQL: own cluster in $BENCH_PGDATA_DIR on port $BENCH_PGPORT"
pg_up() { PGDATA_DIR=$BENCH_PGDATA_DIR PGPORT=$BENCH_PGPORT AIDC_DB=$1 "$ROOT/deploy/pg-up.sh"; }
fresh_db() {  # fresh_db NAME: drop it, create it again (pg-up.sh grants), migrate; sets URLs
    local env
    env=$(pg_up "$1")
    eval "$env"
    "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL_ADMIN" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)"
    env=$(pg_up "$1")
    eval "$env"
    AIDC_DATABASE_URL=$DATABASE_URL AIDC_MIGRATE_DATABASE_URL=$DATABASE_URL_OWNER AIDC_LOG_LEVEL=warn \
        "$AIDCD" migrate
}
declare -A FIG
read_figures() {  # read_figures FILE: "figure KEY VALUE UNIT" lines into FIG
    local k v
    while read -r _ k v _; do FIG[$k]=$v; done < <(grep '^figure ' "$1" || true)
}
fig() { awk -v v="${FIG[$1]:-}" -v d="${2:-1}" 'BEGIN { if (v == "") print "-"; else printf "%.*f", d, v }'; }

# ---- 1. admission -------------------------------------------------------------------
if [ "${BENCH_ADM:-1}" != 0 ]; then
    fresh_db "$ADM_DB"
    say "admission: bench_admission --jobs $ADM_JOBS --big $ADM_BIG (pure, then through PostgreSQL)"
    { "$ADMISSION" --jobs "$ADM_JOBS" --big "$ADM_BIG" --db "$DATABASE_URL_OWNER" "$DATABASE_URL" \
          2>&1 || echo "bench_admission: exit status $?"; } | tee "$OUT/admission.out" | grep -v '^figure '
    ! grep -q '^bench_admission: exit status' "$OUT/admission.out" \
        || die "bench_admission failed (output: $OUT/admission.out)"
    read_figures "$OUT/admission.out"
fi

# ---- 2. aidcd -------------------------------------------------------------------------
fresh_db "$JOBS_DB"
APP_URL=$DATABASE_URL OWNER_URL=$DATABASE_URL_OWNER
q() { "$PSQL" -X -qAt -v ON_ERROR_STOP=1 -d "$OWNER_URL" "$@"; }
export AIDC_DATABASE_URL="$APP_URL" AIDC_MIGRATE_DATABASE_URL="$OWNER_URL"
# a load generator is one address with one credential: no per-client limits
export AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0
export AIDC_LOG_LEVEL=warn AIDC_DATA_DIR="$TMP/data" AIDC_THREADS="$THREADS" AIDC_WORKERS=1
[ -n "${BENCH_WRITE_THREADS:-}" ] && export AIDC_WRITE_THREADS="$BENCH_WRITE_THREADS"
export AIDC_SYNC_INTERVAL_MS=100   # jobs that ended free their GPU within 0.1 s
aidcd_start 18500
say "aidcd (pid $AIDCD_PID) on port $AIDC_PORT: $THREADS HTTP threads, workers on" \
    "(sync every ${AIDC_SYNC_INTERVAL_MS} ms); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

admin_token
expect 201 -X POST "${AUTH[@]}" -d '{"name":"local","kind":"local","options":{"gpus":{"a100":64},"cpus":100000,"memory_gib":1000000}}' \
    "$BASE/api/v1/clusters"
expect 201 -X POST "${AUTH[@]}" -d "{\"slug\":\"$TENANT\",\"name\":\"Bench\"}" "$BASE/api/v1/tenants"
expect 200 -X PUT "${AUTH[@]}" -d '{"resources":{"gpu:a100":{"guaranteed":64,"limit":64}}}' \
    "$BASE/api/v1/tenants/$TENANT/quota"
for p in run hold; do
    expect 201 -X POST "${AUTH[@]}" -d "{\"slug\":\"$p\",\"name\":\"$p\"}" \
        "$BASE/api/v1/tenants/$TENANT/projects"
done
expect 200 -X PUT "${AUTH[@]}" -d '{"resources":{"jobs":{"limit":0}}}' \
    "$BASE/api/v1/tenants/$TENANT/projects/hold/quota"
JOBS_URL="$BASE/api/v1/tenants/$TENANT/jobs"
echo "  cluster local (64 a100), tenant $TENANT (a100 guaranteed 64), projects run and hold" \
     "(hold: jobs limit 0); platform admin API token"

# ---- (a) and (c): submit-to-admitted latency ------------------------------------------
submit_one_by_one() {  # submit_one_by_one PREFIX N: 1-GPU `true` jobs into "run", echo failures
    local bad=0 i code
    for i in $(seq "$2"); do
        code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" -d \
            "{\"project\":\"run\",\"name\":\"$1-$i\",\"command\":[\"true\"],\"gpus\":1,\"gpu_type\":\"a100\",\"cpus\":1,\"memory_gib\":1}" \
            "$JOBS_URL" || true)
        [ "$code" = 201 ] || bad=$((bad + 1))
        sleep "$LAT_GAP"
    done
    echo "$bad"
}
wait_admitted() {  # wait_admitted PREFIX N: until N of them were admitted (120 s at most)
    local n _
    for _ in $(seq 600); do
        n=$(q -c "SELECT count(*) FROM jobs WHERE name LIKE '$1-%' AND admitted_at IS NOT NULL")
        [ "$n" -ge "$2" ] && return 0
        sleep 0.2
    done
    echo "bench: only $n of $2 jobs $1-* admitted after 120 s" >&2
}
declare -A LAT
latency() {  # latency KEY PREFIX N: submit, wait, and read the figures into LAT[KEY.*]
    local key=$1 bad t0 row
    t0=$(date +%s.%N)
    bad=$(submit_one_by_one "$2" "$3")
    LAT[$key.rate]=$(awk -v n="$3" -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", n / (b - a) }')
    wait_admitted "$2" "$3"
    # ms: admitted_at - submitted_at (transaction starts); ems: between the job's two events
    # (clock_timestamp() of the rows, written just before each commit); conc: GPUs held by
    # jobs of this run when each was admitted (64 would mean capacity was not free)
    row=$(q -F ' ' -c "
        WITH j AS (SELECT id, submitted_at, admitted_at, finished_at FROM jobs
                    WHERE name LIKE '$2-%' AND admitted_at IS NOT NULL),
        x AS (SELECT extract(epoch FROM j.admitted_at - j.submitted_at) * 1000 AS ms,
                     (SELECT extract(epoch FROM a.ts - s.ts) * 1000
                        FROM job_events s, job_events a
                       WHERE s.job_id = j.id AND s.from_state IS NULL AND a.job_id = j.id
                         AND a.to_state = 'admitted' ORDER BY a.id LIMIT 1) AS ems,
                     (SELECT count(*) FROM j k WHERE k.admitted_at <= j.admitted_at
                         AND coalesce(k.finished_at, 'infinity') > j.admitted_at) AS conc
                FROM j)
        SELECT count(*),
               round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
               round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1),
               round(max(ms)::numeric, 1),
               round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ems)::numeric, 1),
               round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ems)::numeric, 1),
               round(max(ems)::numeric, 1), max(conc) FROM x")
    local -a v
    read -r -a v <<< "$row"
    local i f=(n p50 p99 max ep50 ep99 emax conc)
    for i in "${!f[@]}"; do LAT[$key.${f[$i]}]=${v[$i]:--}; done
    LAT[$key.bad]=$bad
    printf '  %s jobs submitted (%s/s, %s failed), %s admitted: admitted_at - submitted_at p50 %s' \
        "$3" "${LAT[$key.rate]}" "$bad" "${LAT[$key.n]}" "${LAT[$key.p50]}"
    printf ' p99 %s max %s ms; between the events p50 %s p99 %s max %s ms; most GPUs held %s/64\n' \
        "${LAT[$key.p99]}" "${LAT[$key.max]}" "${LAT[$key.ep50]}" "${LAT[$key.ep99]}" \
        "${LAT[$key.emax]}" "${LAT[$key.conc]}"
}

say "(a) submit-to-admitted latency, capacity free: $LAT_JOBS one-GPU jobs, one at a time"
latency free lat "$LAT_JOBS"

# ---- (b) submit rate ------------------------------------------------------------------
declare -A RPS P50 P99 REQS NON2XX SOCKERR SRV_US PG_US ADM_PCT
to_ms() {  # wrk latency (123.45us, 1.23ms, 1.02s, 2.00m) -> milliseconds
    awk -v v="$1" 'BEGIN {
        if (v == "") { print "-"; exit }
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
        printf "%.2f", n }'
}
admitter_backend() {  # pid of the PostgreSQL backend serving aidcd's admission worker
    q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'aidcd-admitter' LIMIT 1"
}
wal_now() { q -c "SELECT wal_records || '|' || wal_fpi || '|' || wal_bytes FROM pg_stat_wal"; }
run_wrk() {  # run_wrk KEY URL [wrk args...]
    local key=$1 url=$2 out="$OUT/$1.out" s0 p0 a0 s1 p1 a1 apid t0 t1 w0 w1
    shift 2
    apid=$(admitter_backend)
    w0=$(wal_now)
    s0=$(proc_ticks "$AIDCD_PID"); p0=$(pg_ticks); a0=$(proc_ticks "${apid:-0}"); t0=$(date +%s.%N)
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency "$@" "$url" > "$out" 2>&1 \
        || { cat "$out" >&2; die "wrk failed for $key"; }
    s1=$(proc_ticks "$AIDCD_PID"); p1=$(pg_ticks); a1=$(proc_ticks "${apid:-0}"); t1=$(date +%s.%N)
    w1=$(wal_now)
    RPS[$key]=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$out")
    REQS[$key]=$(awk '/ requests in / { print $1 }' "$out")
    P50[$key]=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$out")")
    P99[$key]=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$out")")
    NON2XX[$key]=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$out")
    NON2XX[$key]=${NON2XX[$key]:-0}
    SOCKERR[$key]=$(awk '/Socket errors:/ { gsub(/,/, ""); print $4 + $6 + $8 + $10 }' "$out")
    SOCKERR[$key]=${SOCKERR[$key]:-0}
    local -a v
    read -r -a v < <(awk -v s="$((s1 - s0))" \
        -v p="$((p1 - p0))" -v a="$((a1 - a0))" -v hz="$CLK_TCK" -v n="${REQS[$key]:-0}" \
        -v d="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" 'BEGIN {
            if (n < 1) n = 1
            printf "%.0f %.0f %.0f\n", s / hz * 1e6 / n, p / hz * 1e6 / n, 100 * a / hz / d }')
    SRV_US[$key]=${v[0]} PG_US[$key]=${v[1]} ADM_PCT[$key]=${v[2]}
    printf '  %-10s %8s req/s  p50 %7s ms  p99 %7s ms  non-2xx %s  socket errors %s\n' "$key" \
        "${RPS[$key]}" "${P50[$key]}" "${P99[$key]}" "${NON2XX[$key]}" "${SOCKERR[$key]}"
    # what the cluster wrote to its WAL per request (the workers' writes included):
    # records, full-page images (the first change of a page after a checkpoint), bytes
    awk -v a="$w0" -v b="$w1" -v n="${REQS[$key]:-0}" 'BEGIN {
        split(a, x, "|"); split(b, y, "|"); if (n < 1) n = 1
        printf "             WAL per request: %.1f records, %.2f full-page images, %.0f bytes\n",
            (y[1] - x[1]) / n, (y[2] - x[2]) / n, (y[3] - x[3]) / n }'
}
BENCH_RUN=$(date +%s)
export BENCH_RUN BENCH_PROJECT=hold
say "(b) submit rate: wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s --latency"
run_wrk projects "$BASE/api/v1/tenants/$TENANT/projects" -H "Authorization: Bearer $TOKEN" \
    -s "$HERE/post_projects.lua"
run_wrk jobs1 "$JOBS_URL" -H "Authorization: Bearer $TOKEN" -s "$HERE/post_jobs.lua"
HELD1=$(q -c "SELECT count(*) FROM jobs j JOIN projects p ON p.id = j.project_id WHERE p.slug = 'hold'")
BENCH_RUN=$((BENCH_RUN + 1))
run_wrk jobs2 "$JOBS_URL" -H "Authorization: Bearer $TOKEN" -s "$HERE/post_jobs.lua"
HELD2=$(q -c "SELECT count(*) FROM jobs j JOIN projects p ON p.id = j.project_id WHERE p.slug = 'hold'")
# reads while submits run (what a researcher's page sees while a pipeline submits): GET
# a project on 4 connections beside a third burst; the burst's CPU figures include them
BENCH_RUN=$((BENCH_RUN + 1))
wrk -t1 -c4 -d"${DURATION}s" --latency -H "Authorization: Bearer $TOKEN" \
    "$BASE/api/v1/tenants/$TENANT/projects/hold" > "$OUT/reads-beside-jobs3.out" 2>&1 &
rpid=$!
run_wrk jobs3 "$JOBS_URL" -H "Authorization: Bearer $TOKEN" -s "$HERE/post_jobs.lua"
wait "$rpid" || { cat "$OUT/reads-beside-jobs3.out" >&2; die "wrk failed for the reads"; }
READ_RPS=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$OUT/reads-beside-jobs3.out")
READ_P50=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$OUT/reads-beside-jobs3.out")")
READ_P99=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$OUT/reads-beside-jobs3.out")")
READ_BAD=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$OUT/reads-beside-jobs3.out")
echo "  reads beside it: GET a project, 4 connections: $READ_RPS req/s p50 $READ_P50 ms p99 $READ_P99 ms non-2xx ${READ_BAD:-0}"
t_burst_end=$(date +%s.%N)
HELD=$(q -c "SELECT count(*) FROM jobs j JOIN projects p ON p.id = j.project_id WHERE p.slug = 'hold'")
echo "  $HELD jobs held in the queue ($HELD1 after the first run, $HELD2 after the second)"

# ---- (c) admission after the burst ---------------------------------------------------------
say "(c) admission catching up with the burst, then latency with $HELD jobs in the queue"
unseen=-1
for _ in $(seq 1200); do
    unseen=$(q -c "SELECT count(*) FROM jobs WHERE state = 'queued' AND reason = 'submitted'")
    [ "$unseen" = 0 ] && break
    sleep 0.1
done
CATCHUP=$(awk -v a="$t_burst_end" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if [ "$unseen" = 0 ]; then
    echo "  every held job had its wait reason $CATCHUP s after the end of the burst"
else
    echo "  $unseen held jobs still without a wait reason $CATCHUP s after the burst"
    CATCHUP=">$CATCHUP"
fi
q -c "SELECT '  held jobs by reason: ' || string_agg(reason || ' ' || n, ', ') FROM
      (SELECT reason, count(*) n FROM jobs WHERE state = 'queued' GROUP BY 1 ORDER BY 2 DESC) x"
latency backlog blat "$LAT_BACKLOG_JOBS"
AIDCD_RSS=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$AIDCD_PID/status")
stop_pid "$AIDCD_PID" aidcd
AIDCD_PID=

# ---- report ---------------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
verdict() { awk -v x="$1" -v lim="$2" 'BEGIN { if (x == "-" || x == "") print "n/a";
                                               else print (x + 0 < lim + 0) ? "met" : "NOT met" }'; }
say "results ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs; wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s;" \
    "latencies in ms)"
printf '%-46s %8s %8s %8s %8s %9s %9s %7s\n' "submit rate" "req/s" p50 p99 non-2xx "srv us/rq" \
    "pg us/rq" "adm%"
row() {
    printf '%-46s %8s %8s %8s %8s %9s %9s %7s\n' "$1" "${RPS[$2]:--}" "${P50[$2]:--}" \
        "${P99[$2]:--}" "$(( ${NON2XX[$2]:-0} + ${SOCKERR[$2]:-0} ))" "${SRV_US[$2]:--}" \
        "${PG_US[$2]:--}" "${ADM_PCT[$2]:--}"
}
row "POST /projects (baseline: insert + audit)" projects
row "POST /jobs (queue empty at start)" jobs1
row "POST /jobs ($HELD1 held at start)" jobs2
row "POST /jobs ($HELD2 held), reads beside" jobs3
printf '  the reads beside it: GET a project on 4 connections, %s req/s, p50 %s ms, p99 %s ms\n' \
    "${READ_RPS:--}" "${READ_P50:--}" "${READ_P99:--}"
printf '  jobs/projects = %s (first run), %s (second); adm%% = CPU of the admitter'"'"'s PostgreSQL backend (%% of one CPU)\n' \
    "$(ratio "${RPS[jobs1]}" "${RPS[projects]}")" "$(ratio "${RPS[jobs2]}" "${RPS[projects]}")"
echo
printf '%-46s %6s %8s %8s %8s %9s %9s %6s\n' "submit -> admitted" jobs p50 p99 max "ev p50" \
    "ev p99" "GPUs"
lrow() {
    printf '%-46s %6s %8s %8s %8s %9s %9s %6s\n' "$1" "${LAT[$2.n]:--}" "${LAT[$2.p50]:--}" \
        "${LAT[$2.p99]:--}" "${LAT[$2.max]:--}" "${LAT[$2.ep50]:--}" "${LAT[$2.ep99]:--}" \
        "${LAT[$2.conc]:--}"
}
lrow "capacity free, empty queue" free
lrow "capacity free, $HELD held jobs in the queue" backlog
echo "  (admitted_at - submitted_at; ev = between the job's submit and admit events; GPUs = most"
echo "   held by these jobs at an admission, of 64). Admission saw the $HELD held jobs after $CATCHUP s."
if [ "${BENCH_ADM:-1}" != 0 ]; then
    echo
    echo "admission (bench_admission; 50 tenants, 3 GPU types, 1000 GPUs):"
    printf '  pure, %s queued: pass %s ms (capacity full), %s ms (free); drain: %s passes, %s ms deciding,' \
        "$ADM_JOBS" "$(fig pure_jobs_full_ms 2)" "$(fig pure_jobs_free_ms 2)" "$(fig drain_passes 0)" \
        "$(fig drain_decide_ms 0)"
    printf ' %s admissions/s, %s %% GPU utilisation\n' "$(fig drain_admissions_per_s 0)" \
        "$(fig drain_utilisation_pct 1)"
    printf '  pure, %s queued: pass %s ms (capacity full), %s ms (free)\n' "$ADM_BIG" \
        "$(fig pure_big_full_ms 1)" "$(fig pure_big_free_ms 1)"
    printf '  PostgreSQL, drain %s: %s s in %s passes (%s s wall), %s admissions/s; per pass load %s, decide %s, write %s ms, p99 %s ms\n' \
        "$ADM_JOBS" "$(fig db_drain_s 2)" "$(fig db_drain_passes 0)" "$(fig db_drain_wall_s 1)" \
        "$(fig db_drain_admissions_per_s 0)" "$(fig db_drain_load_ms)" "$(fig db_drain_decide_ms)" \
        "$(fig db_drain_write_ms)" "$(fig db_drain_pass_p99_ms)"
    printf '  PostgreSQL, %s queued: pass %s ms (load %s, decide %s, write %s); first pass %s ms; after ends %s ms\n' \
        "$ADM_BIG" "$(fig db_big_full_ms 0)" "$(fig db_big_full_load_ms 0)" \
        "$(fig db_big_full_decide_ms 0)" "$(fig db_big_full_write_ms 0)" "$(fig db_big_cold_ms 0)" \
        "$(fig db_big_after_ends_ms 0)"
    printf '  PostgreSQL, %s queued: the first pass writes %s reasons at most, %s more passes at once (longest %s ms); queue positions of a page of 100 jobs %s ms\n' \
        "$ADM_BIG" 10000 "$(fig db_big_catchup_passes 0)" "$(fig db_big_catchup_max_ms 0)" \
        "$(fig db_big_positions_page_ms 1)"
fi
echo
echo "issue targets (informational):"
if [ "${BENCH_ADM:-1}" != 0 ] && [ "$ADM_BIG" -gt 0 ]; then
    printf '  one pass over %s queued under 1 s: pure %s (%s ms); PostgreSQL steady %s (%s ms), first pass %s (%s ms)\n' \
        "$ADM_BIG" "$(verdict "$(fig pure_big_full_ms)" 1000)" "$(fig pure_big_full_ms 0)" \
        "$(verdict "$(fig db_big_full_ms)" 1000)" "$(fig db_big_full_ms 0)" \
        "$(verdict "$(fig db_big_cold_ms)" 1000)" "$(fig db_big_cold_ms 0)"
fi
printf '  admission under 50 ms p99 with free capacity: %s (p99 %s ms; %s ms between the events)\n' \
    "$(verdict "${LAT[free.p99]:-}" 50)" "${LAT[free.p99]:--}" "${LAT[free.ep99]:--}"
printf '  ... with %s held jobs in the queue: %s (p99 %s ms; %s ms between the events)\n' "$HELD" \
    "$(verdict "${LAT[backlog.p99]:-}" 50)" "${LAT[backlog.p99]:--}" "${LAT[backlog.ep99]:--}"
echo "  (Kueue's published baseline: 15,000 workloads admitted in about 6 minutes, ~42/s)"
echo "aidcd peak RSS (VmHWM) ${AIDCD_RSS} MiB"
bad=0
for k in projects jobs1 jobs2; do [ "${NON2XX[$k]}" = 0 ] && [ "${SOCKERR[$k]}" = 0 ] || bad=1; done
[ "$bad" = 0 ] || echo "WARNING: some wrk runs had non-2xx answers or socket errors: their figures are suspect"
echo "raw outputs: $OUT"
