#!/usr/bin/env bash
# soak.sh - a long run of the benchmark load: do aidcd's memory, file
# descriptors, threads and database connections stay flat? (a measurement,
# not pass/fail; not run by ctest)
#
# From the repository root:
#     tests/bench/soak.sh                       # 30 minutes, a sample a minute
#     SOAK_MINUTES=4 SOAK_SAMPLE_SECONDS=30 tests/bench/soak.sh
#
# It builds aidcd in build-soak/ (or takes SOAK_AIDCD as it is), starts its own
# PostgreSQL 15 (deploy/pg-up.sh, PGDATA_DIR=/tmp/aidc-soak-pg, port 15460: no
# other cluster is touched) with a fresh database aidc_soak, seeds it
# (seed.sql: 20 tenants x 5 projects x 100 users), registers a local cluster
# (256 cores) and serves aidcd with its workers (admitter, dispatcher, syncer,
# meter, audit sealer with a signing key, janitor, registry sync). Then, for SOAK_MINUTES, wrk
# drives soak_mix.lua as tenant-001's admin: job lists and job details, job
# submits (short jobs that end by themselves, long ones cancelled a few seconds
# later: real processes of the local backend), logins and /metrics scrapes,
# paced by a delay after each answer. wrk runs once per sample interval; near
# the end of each (under load) the script samples aidcd's VmRSS and RssAnon
# (/proc/PID/status), open file descriptors (/proc/PID/fd), threads, and its
# PostgreSQL connections (pg_stat_activity, application_name aidcd*), and
# prints a row with the interval's requests/s, p99 and failures, the jobs
# queued/running/ended and what the workers did (/metrics). At the end it
# cancels the jobs still running, prints one more row at rest, aidcd's own time
# per route over the run (/metrics), and a verdict per series: the
# least-squares slope over the second half of the run (per hour) and whether
# the last quarter's highest sample exceeds the first quarter's by more than
# the tolerance (RSS 10 %, fds 5, threads 0, connections 0): "flat" or
# "GROWING". Exit status 0 either way, unless
# SOAK_STRICT=1 (then 1 when a series grows). Ctrl-C stops everything it started.
#
# Environment (all optional):
#   SOAK_MINUTES          length of the load                      (default 30)
#   SOAK_SAMPLE_SECONDS   one wrk run and one sample per interval (default 60)
#   SOAK_WARMUP_SECONDS   load before the first interval          (default 30)
#   SOAK_CONNECTIONS      wrk connections (2 threads)             (default 4)
#   SOAK_DELAY_MS         pause of a connection after each answer (default 40)
#   SOAK_LOGIN_EVERY      a login every N cycles of 20 requests per wrk thread (default 10)
#   SOAK_THREADS          HTTP worker threads of aidcd            (default 2)
#   SOAK_STRICT=1         exit 1 when a series grows
#   SOAK_AIDCD            an aidcd binary to take as it is (no build)
#   BUILD_DIR             build tree for aidcd                    (default ./build-soak)
#   BENCH_PGDATA_DIR, BENCH_PGPORT  the cluster       (default /tmp/aidc-soak-pg, 15460)
#   BENCH_KEEP_PG=1       leave the cluster running at the end
#   BENCH_OUT             raw outputs (wrk runs, series.tsv, logs) (default /tmp/aidc-soak-out)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/bench"
BUILD_DIR=${BUILD_DIR:-$ROOT/build-soak}
MINUTES=${SOAK_MINUTES:-30}
SAMPLE=${SOAK_SAMPLE_SECONDS:-60}
WARMUP=${SOAK_WARMUP_SECONDS:-30}
CONNS=${SOAK_CONNECTIONS:-4}
THREADS=${SOAK_THREADS:-2}
export SOAK_DELAY_MS=${SOAK_DELAY_MS:-40} SOAK_LOGIN_EVERY=${SOAK_LOGIN_EVERY:-10}
BENCH_PGDATA_DIR=${BENCH_PGDATA_DIR:-/tmp/aidc-soak-pg}
BENCH_PGPORT=${BENCH_PGPORT:-15460}
OUT=${BENCH_OUT:-/tmp/aidc-soak-out}
DB=aidc_soak
PASSWORD=bench-password-1234   # the admin's, copied to every seeded user
TENANT=tenant-001
USER_NAME=user-001-0001        # tenant_admin of tenant-001
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGBIN
PSQL="$PGBIN/psql"

say() { printf '\n== %s\n' "$*"; }
die() { echo "soak: $*" >&2; exit 1; }
for v in MINUTES SAMPLE WARMUP CONNS THREADS SOAK_DELAY_MS SOAK_LOGIN_EVERY; do
    case "${!v}" in ''|*[!0-9]*) die "$v must be a whole number, got '${!v}'";; esac
done
[ "$SAMPLE" -ge 10 ] || die "SOAK_SAMPLE_SECONDS must be at least 10"
[ "$CONNS" -ge 2 ] || die "SOAK_CONNECTIONS must be at least 2 (wrk runs 2 threads)"
INTERVALS=$(( MINUTES * 60 / SAMPLE ))
[ "$INTERVALS" -ge 4 ] || die "SOAK_MINUTES * 60 / SOAK_SAMPLE_SECONDS must give at least 4 samples"
for c in wrk curl jq cmake; do command -v "$c" >/dev/null || die "$c not found (deploy/install-deps.sh bench)"; done
[ -x "$PSQL" ] || die "$PSQL not found"

mkdir -p "$OUT"
rm -f "$OUT"/*.out "$OUT"/*.log "$OUT"/*.tsv
TMP=$(mktemp -d /tmp/aidc-soak.XXXXXX)
chmod 711 "$TMP" # the local executor's jobs pass through it to AIDC_DATA_DIR
AIDCD_PID='' WRK_PID=''

# shellcheck source=tests/bench/lib.sh
. "$HERE/lib.sh"

# The local backend's jobs run as shims (`aidcd local-shim DIR`) in their own
# session, each with its job in a process group of its own; both work in
# their job directory under $TMP/data/jobs/, which is how they are found.
job_processes() {
    local p cwd
    for p in /proc/[0-9]*; do
        cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
        case "$cwd" in "$TMP/data/jobs/"*) echo "${p#/proc/}" ;; esac
    done
}
reap_jobs() {  # TERM (the shim ends its job), then KILL whatever is left
    local pids _
    pids=$(job_processes)
    [ -n "$pids" ] || return 0
    echo "soak: stopping $(echo "$pids" | wc -w) job process(es) left by the local backend" >&2
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 50); do [ -n "$(job_processes)" ] || return 0; sleep 0.1; done
    pids=$(job_processes)
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}
cleanup() {
    local rc=$?
    trap - INT TERM
    stop_pid "$WRK_PID" wrk
    stop_pid "$AIDCD_PID" aidcd
    reap_jobs
    rm -rf "$TMP"
    stop_bench_pg
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
nap() { sleep "$1" & wait $! || true; }   # a sleep the traps interrupt

# ---- aidcd: build, or take the one given ---------------------------------------------
if [ -n "${SOAK_AIDCD:-}" ]; then
    [ -x "$SOAK_AIDCD" ] || die "SOAK_AIDCD=$SOAK_AIDCD is not an executable"
    cp "$SOAK_AIDCD" "$TMP/aidcd"
else
    say "building aidcd in $BUILD_DIR"
    [ -f "$BUILD_DIR/CMakeCache.txt" ] \
        || cmake -S "$ROOT" -B "$BUILD_DIR" -DAIDC_TESTS=OFF > "$OUT/build.log" 2>&1 \
        || die "cmake failed (log: $OUT/build.log)"
    nice cmake --build "$BUILD_DIR" -j"$(nproc)" --target aidcd >> "$OUT/build.log" 2>&1 \
        || die "build failed (log: $OUT/build.log)"
    # a run copy: a rebuild during the run must not pull the binary away
    cp "$BUILD_DIR/aidcd" "$TMP/aidcd"
fi
AIDCD="$TMP/aidcd"
COMMIT=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)

# ---- PostgreSQL, schema, data set -----------------------------------------------------
own_pg
ADMIN_URL=$DATABASE_URL_ADMIN OWNER_URL=$DATABASE_URL_OWNER
q() { "$PSQL" -X -qAt -v ON_ERROR_STOP=1 -d "$OWNER_URL" "$@"; }
# a load generator is one address with one credential: no per-client limits
export AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0
export AIDC_LOG_LEVEL=warn AIDC_DATA_DIR="$TMP/data" AIDC_THREADS="$THREADS" AIDC_WORKERS=1
export AIDC_PREEMPT_GRACE_SECONDS=5        # a cancelled job is gone within seconds
export AIDC_AUDIT_CHECKPOINT_SECONDS=60    # the sealer signs a checkpoint every minute
"$AIDCD" migrate
"$AIDCD" audit keygen "$TMP/audit-key.pem" >/dev/null
export AIDC_AUDIT_KEY_FILE="$TMP/audit-key.pem"
AIDC_ADMIN_PASSWORD=$PASSWORD "$AIDCD" bootstrap --admin bench >/dev/null
say "seed: 20 tenants x 5 projects x 100 users (seed.sql)"
q -v tenants=20 -v projects=5 -v users=100 -v admin=bench -f "$HERE/seed.sql" > /dev/null
PROJECTS="project-01 project-02 project-03 project-04 project-05"

# aidcd_start bootstraps the admin (again: a no-op reset) and serves; its log is $OUT/aidcd.log
aidcd_start 18700
kill -0 "$AIDCD_PID" 2>/dev/null || die "aidcd did not start (log: $OUT/aidcd.log)"
admin_token
expect 201 -X POST "${AUTH[@]}" \
    -d '{"name":"local","kind":"local","options":{"gpus":{"a100":8},"cpus":256,"memory_gib":1024}}' \
    "$BASE/api/v1/clusters"
user_token "$USER_NAME" '["jobs:read","jobs:write"]'
JOBS_URL="$BASE/api/v1/tenants/$TENANT/jobs"
say "seed: 50 jobs of $TENANT (sleep 0), submitted one by one"
SEED_IDS=
for i in $(seq 50); do
    expect 201 -X POST "${AUTH[@]}" -d "{\"project\":\"project-0$(( i % 5 + 1 ))\",\"name\":\"seed-$i\",\"command\":[\"sleep\",\"0\"],\"cpus\":1,\"memory_gib\":1}" \
        "$JOBS_URL"
    SEED_IDS="$SEED_IDS $(jq -r .id "$TMP/resp")"
done
export SOAK_TENANT=$TENANT SOAK_PROJECTS=$PROJECTS SOAK_JOB_IDS=$SEED_IDS
export SOAK_USER=$USER_NAME SOAK_PASSWORD=$PASSWORD
for _ in $(seq 300); do
    [ "$(q -c "SELECT count(*) FROM jobs WHERE name LIKE 'seed-%' AND state = 'succeeded'")" = 50 ] && break
    nap 0.2
done
echo "  $(q -c "SELECT count(*) FROM jobs WHERE name LIKE 'seed-%' AND state = 'succeeded'") of 50 ran and succeeded"

# ---- sampling ------------------------------------------------------------------------
status_kib() {  # status_kib PID FIELD: a line of /proc/PID/status (kB, or a count)
    awk -v f="$2:" '$1 == f { print $2; exit }' "/proc/$1/status" 2>/dev/null || echo 0
}
metric() {  # metric NAME: its value in the last scrape ($TMP/metrics)
    awk -v n="$1" '$1 == n { print $2; exit }' "$TMP/metrics"
}
declare -A S
sample() {  # the resource figures of aidcd now, into S
    # first the readings that client connections move: wrk is still running
    S[fds]=$(find "/proc/$AIDCD_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    S[thr]=$(status_kib "$AIDCD_PID" Threads)
    S[load]=$(cut -d' ' -f1 /proc/loadavg)
    # RSS as the lowest of 10 readings over 2 s (and the highest): a login's scrypt holds
    # 32 MiB for a moment, and a reading that hits one says nothing about a leak
    local r a _
    S[rss]='' S[anon]='' S[rsspk]=0
    for _ in $(seq 10); do
        r=$(status_kib "$AIDCD_PID" VmRSS) a=$(status_kib "$AIDCD_PID" RssAnon)
        [ -n "${S[rss]}" ] && [ "${S[rss]}" -le "$r" ] || S[rss]=$r
        [ -n "${S[anon]}" ] && [ "${S[anon]}" -le "$a" ] || S[anon]=$a
        [ "${S[rsspk]}" -ge "$r" ] || S[rsspk]=$r
        sleep 0.2
    done
    S[conns]=$("$PSQL" -X -qAt -d "$ADMIN_URL" -c "SELECT count(*) FROM pg_stat_activity
        WHERE datname = '$DB' AND application_name LIKE 'aidcd%'")
    "$PSQL" -X -qAt -d "$ADMIN_URL" -c "SELECT now(), application_name, state, count(*)
        FROM pg_stat_activity WHERE datname = '$DB' GROUP BY 2, 3 ORDER BY 2, 3" \
        >> "$OUT/connections.log"
    { echo "== $(date +%T)"; cat "/proc/$AIDCD_PID/smaps_rollup"; } >> "$OUT/smaps_rollup.log" 2>/dev/null || true
    local -a j
    read -r -a j <<< "$(q -F ' ' -c "SELECT count(*) FILTER (WHERE state IN ('queued', 'admitted', 'pending')),
        count(*) FILTER (WHERE state = 'running'),
        count(*) FILTER (WHERE state IN ('succeeded', 'failed', 'cancelled', 'preempted')) FROM jobs")"
    S[queued]=${j[0]} S[running]=${j[1]} S[ended]=${j[2]}
    curl -s -o "$TMP/metrics" "$BASE/metrics" || : > "$TMP/metrics"
    S[sealed]=$(metric aidc_audit_sealed_total) S[syncs]=$(metric aidc_sync_rounds_total)
    S[metered]=$(metric aidc_metering_runs_total) S[meterlag]=$(metric aidc_metering_lag_seconds)
}
to_ms() {  # wrk latency (123.45us, 1.23ms, 1.02s) -> milliseconds
    awk -v v="$1" 'BEGIN { if (v == "") { print "-"; exit }
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
        printf "%.1f", n }'
}
declare -A PREV=([ended]=0 [sealed]=0 [syncs]=0 [metered]=0)
HDR=$(printf '%5s %7s %7s %7s %5s %4s %5s %7s %7s %6s %6s %7s %6s %6s %6s %6s %6s %5s' min rss_MiB rss_pk anon_MiB \
      fds thr conns "req/s" p99_ms failed queued running ended sealed syncs meter m_lag load)
row() {  # row LABEL RPS P99 FAILED: print the sample in S (deltas since the last row)
    local k d=()
    for k in ended sealed syncs metered; do
        d+=("$(( ${S[$k]:-0} - ${PREV[$k]} ))"); PREV[$k]=${S[$k]:-0}
    done
    printf '%5s %7.1f %7.1f %7.1f %5s %4s %5s %7s %7s %6s %6s %7s %6s %6s %6s %6s %6.0f %5s\n' "$1" \
        "$(awk -v k="${S[rss]}" 'BEGIN { print k / 1024 }')" \
        "$(awk -v k="${S[rsspk]}" 'BEGIN { print k / 1024 }')" \
        "$(awk -v k="${S[anon]}" 'BEGIN { print k / 1024 }')" "${S[fds]}" "${S[thr]}" \
        "${S[conns]}" "$2" "$3" "$4" "${S[queued]}" "${S[running]}" "${d[0]}" "${d[1]}" "${d[2]}" "${d[3]}" \
        "${S[meterlag]:-0}" "${S[load]}"
}
run_wrk() {  # run_wrk SECONDS OUTFILE [SAMPLE_AT]: wrk in the background, a sample at SAMPLE_AT s
    SOAK_RUN="$(date +%s)$RANDOM" wrk -t2 -c"$CONNS" -d"$1s" --timeout 10s --latency \
        -H "Authorization: Bearer $TOKEN" -s "$HERE/soak_mix.lua" "$BASE" > "$2" 2>&1 &
    WRK_PID=$!
    if [ -n "${3:-}" ]; then nap "$3"; sample; fi
    wait "$WRK_PID" || die "wrk failed (output: $2)"
    WRK_PID=
}

say "soak: ${MINUTES} min of load, a sample every ${SAMPLE} s (near its end, under load);" \
    "aidcd pid $AIDCD_PID on port $AIDC_PORT, commit $COMMIT, $(nproc) CPUs"
echo "   wrk -t2 -c$CONNS, ${SOAK_DELAY_MS} ms after each answer; per wrk thread a cycle of 20:" \
     "8 lists, 8 job reads, 2 submits, 1 cancel, 1 /metrics; a login every $SOAK_LOGIN_EVERY cycles"
if [ "$WARMUP" -gt 0 ]; then
    echo "   warm-up: ${WARMUP} s of the same load (not in the series)"
    run_wrk "$WARMUP" "$OUT/wrk-warmup.out"
    sample; row warm - - - > /dev/null   # the deltas start here
fi
echo "   columns: rss, anon = lowest VmRSS, RssAnon of 10 readings over 2 s, rss_pk the highest;"
echo "   fds, threads, conns = aidcd's PostgreSQL connections;"
echo "   req/s, p99, failed (non-2xx + socket errors) of the interval; jobs queued and running now,"
echo "   ended in the interval; audit events sealed, syncer rounds, job runs metered in the interval;"
echo "   m_lag = metering lag (s: the oldest ended run not yet metered); load = 1-minute load average"
echo "$HDR"
printf 't_s\trss_kib\tanon_kib\tfds\tthreads\tconns\trps\tp99_ms\tfailed\trss_peak_kib\n' > "$OUT/series.tsv"
SAMPLE_AT=$(( SAMPLE * 80 / 100 ))   # under load, done (2 s of RSS readings) before wrk ends
T0=$(date +%s)
for i in $(seq "$INTERVALS"); do
    out="$OUT/wrk-$(printf %03d "$i").out"
    run_wrk "$SAMPLE" "$out" "$SAMPLE_AT"
    rps=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$out")
    p99=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$out")")
    failed=$(awk '/Non-2xx or 3xx responses:/ { n += $NF }
                  /Socket errors:/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 } END { print n + 0 }' "$out")
    t=$(( i * SAMPLE ))
    row "$(awk -v t="$t" 'BEGIN { printf "%.1f", t / 60 }')" "${rps:--}" "$p99" "$failed"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "${S[rss]}" "${S[anon]}" "${S[fds]}" \
        "${S[thr]}" "${S[conns]}" "${rps:-0}" "$p99" "$failed" "${S[rsspk]}" >> "$OUT/series.tsv"
done
ELAPSED=$(( $(date +%s) - T0 ))

# ---- at rest: cancel what still runs, then one more sample ---------------------------------
left=$(q -c "SELECT id FROM jobs WHERE state IN ('queued', 'admitted', 'pending', 'running')")
for id in $left; do
    curl -s -o /dev/null -X POST "${AUTH[@]}" "$JOBS_URL/$id/cancel" || true
done
for _ in $(seq 300); do
    [ "$(q -c "SELECT count(*) FROM jobs WHERE state IN ('queued', 'admitted', 'pending', 'running')")" = 0 ] \
        && [ -z "$(job_processes)" ] && break
    nap 0.2
done
nap 5   # idle HTTP connections close, the workers take a turn
sample
row rest - - -
echo "   (rest: $(echo "$left" | wc -w) jobs cancelled after the load, sampled when all had ended;" \
     "$(job_processes | wc -w) job processes left)"
cp "$TMP/metrics" "$OUT/metrics.txt"
echo
echo "aidcd's own time per route over the whole run (/metrics; all statuses; from the request's"
echo "first byte to the answer, so waiting for a busy HTTP thread is not in it):"
printf '  %-6s %-44s %8s %9s %9s\n' method route requests "mean ms" "p99 <= s"
awk '
    /^aidc_http_request_duration_seconds_(bucket|sum|count)\{/ {
        m = $0; sub(/.*method="/, "", m); sub(/".*/, "", m)
        r = $0; sub(/.*route="/, "", r); sub(/".*/, "", r)
        k = m " " r; seen[k] = 1
        if ($0 ~ /_sum\{/) sum[k] += $2
        else if ($0 ~ /_count\{/) cnt[k] += $2
        else { le = $0; sub(/.*le="/, "", le); sub(/".*/, "", le); b[k, le] += $2; les[le] = 1 }
    }
    END {
        n = 0; for (le in les) if (le != "+Inf") l[++n] = le + 0
        for (i = 2; i <= n; i++) { x = l[i]; for (j = i - 1; j >= 1 && l[j] > x; j--) l[j + 1] = l[j]; l[j + 1] = x }
        for (k in seen) {
            p = "> " l[n]
            for (i = 1; i <= n; i++) if (b[k, sprintf("%g", l[i])] >= 0.99 * cnt[k]) { p = sprintf("%g", l[i]); break }
            split(k, mr, " ")
            printf "  %-6s %-44s %8d %9.2f %9s\n", mr[1], mr[2], cnt[k], cnt[k] ? 1000 * sum[k] / cnt[k] : 0, p
        }
    }' "$OUT/metrics.txt" | sort -k3,3nr | sed -n '1,12p'

# ---- verdicts --------------------------------------------------------------------------------
say "verdicts ($(date -u +%Y-%m-%dT%H:%MZ), commit $COMMIT, $(nproc) CPUs; $INTERVALS samples" \
    "over $((ELAPSED / 60)) min; slope: least squares over the second half, per hour)"
verdicts=$(awk -F '\t' -v strict="${SOAK_STRICT:-0}" '
    NR == 1 { next }
    { n++; t[n] = $1 / 3600; v["rss", n] = $2 / 1024; v["fds", n] = $4; v["thr", n] = $5
      v["conns", n] = $6; v["rps", n] = $7; v["p99", n] = $8 }
    function slope(s,   i, a, sx, sy, sxx, sxy, m) {
        a = int(n / 2) + 1; m = n - a + 1
        for (i = a; i <= n; i++) { sx += t[i]; sy += v[s, i]; sxx += t[i] * t[i]; sxy += t[i] * v[s, i] }
        return (m * sxx - sx * sx) == 0 ? 0 : (m * sxy - sx * sy) / (m * sxx - sx * sx)
    }
    function qmax(s, from, to,   i, x) {
        x = v[s, from]; for (i = from + 1; i <= to; i++) if (v[s, i] > x) x = v[s, i]; return x
    }
    function median(s, from, to,   i, j, k, a, x) {
        k = 0; for (i = from; i <= to; i++) a[++k] = v[s, i]
        for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    function verdict(s, name, unit, rel, abs,   q, first, last, lim, grow) {
        q = int((n + 3) / 4); first = qmax(s, 1, q); last = qmax(s, n - q + 1, n)
        lim = rel ? first * (1 + rel) : first + abs
        grow = last > lim
        if (grow) growing++
        printf "%-18s slope %+9.2f %s/h   max first quarter %8.1f  last quarter %8.1f  (tolerance %s)  %s\n",
            name, slope(s), unit, first, last, rel ? sprintf("+%d %%", rel * 100) : "+" abs,
            grow ? "GROWING" : "flat"
    }
    END {
        if (n < 4) { print "too few samples"; exit 0 }
        verdict("rss", "RSS (lowest)", "MiB", 0.10, 0)
        verdict("fds", "open fds", "fds", 0, 5)
        verdict("thr", "threads", "thr", 0, 0)
        verdict("conns", "db connections", "conn", 0, 0)
        q = int((n + 3) / 4)
        printf "%-18s slope %+9.2f %s/h   median first quarter %6.1f  last quarter %6.1f  (informational)\n",
            "requests/s", slope("rps"), "rq/s", median("rps", 1, q), median("rps", n - q + 1, n)
        printf "%-18s slope %+9.2f %s/h   median first quarter %6.1f  last quarter %6.1f  (informational)\n",
            "p99 latency", slope("p99"), "ms", median("p99", 1, q), median("p99", n - q + 1, n)
        print "growing " growing + 0
    }' "$OUT/series.tsv")
grep -v '^growing ' <<< "$verdicts"
growing=$(awk '/^growing / { print $2 }' <<< "$verdicts")
failed=$(awk -F '\t' 'NR > 1 { n += $9 } END { print n + 0 }' "$OUT/series.tsv")
[ "$failed" = 0 ] || echo "WARNING: $failed requests failed (non-2xx or socket errors; raw wrk outputs in $OUT)"
echo "raw outputs: $OUT (series.tsv, wrk-*.out, connections.log, smaps_rollup.log, metrics.txt, aidcd.log)"
if [ "${SOAK_STRICT:-0}" = 1 ] && [ "${growing:-0}" -gt 0 ]; then
    echo "soak: $growing series growing (SOAK_STRICT=1)" >&2
    exit 1
fi
exit 0
