#!/usr/bin/env bash
# slurm.sh - aidc in front of a real Slurm against slurmrestd on its own: what
# the detour through aidc costs when submitting, and what its database buys when
# reading (figures, not pass/fail; not run by ctest).
#
# From the repository root, as root (deploy/slurm-up.sh starts Slurm's daemons
# as root; the JWT key is readable by root only), after
#     cmake --build build --target aidcd
# run
#     tests/bench/slurm.sh            # about 2 minutes
#
# Slurm: if slurmrestd answers at $SLURMRESTD_URL (default http://127.0.0.1:6820)
# that cluster is reused (its SLURM_DIR, default /tmp/aidc-slurm, must be the one
# behind it: the key etc/jwt_hs256.key and the work directory jobs/ are read from
# there) and left running; otherwise deploy/slurm-up.sh starts it and
# deploy/slurm-down.sh stops it at the end. Do not run this on the shared Slurm
# next to tests/run.sh: the tests stop slurmrestd (test_slurm_outage), run.sh
# stops a Slurm it started, and this run's thousands of jobs stay in slurmctld
# for MinJobAge (see 5); a Slurm of its own (below) avoids all that. PostgreSQL: its own cluster (deploy/pg-up.sh, PGDATA_DIR
# /tmp/aidc-bench-slurm-pg, port 15452), database aidc_bench_slurm made afresh.
# aidcd: 2 HTTP threads, workers on, a Slurm cluster "hpc" registered as
# docs/operations.md says (user_name aidc, partitions gpu/preempt, workdir
# $SLURM_DIR/jobs, credentials_ref file:<jwt key>), tenant "sbench" with a quota
# (cpu 64, memory 512 GiB), projects "run", "hold" and "gate" ({"jobs":{"limit":0}}).
# A platform admin's API token for aidc; an HS256 token for Slurm user aidc that
# this script mints from the key (1 hour).
#
# Measured, on the same machine in the same run (slurmrestd v0.0.38):
#   1. submit end to end: BENCH_E2E_JOBS one-core `true` jobs at once (curl,
#      16 transfers at a time), BENCH_E2E_ROUNDS times: straight to slurmrestd
#      (POST job/submit; a job is in Slurm when the answer comes), then, once
#      Slurm ran those, through aidc (POST /api/v1/tenants/sbench/jobs; 201
#      means queued in aidc; the job is in Slurm when the dispatcher recorded
#      its backend_job_id, the event "handed to the cluster"). Figures: how long
#      until all were answered, until all were in Slurm, and per job (from
#      job_events, clock_timestamp() of each row) submit -> admitted -> handed
#      to the cluster. Then the dispatcher alone: the same jobs queued in
#      project "gate" (jobs limit 0) and released by one quota change, so one
#      admission pass hands it all of them: first admitted -> last handed over.
#      aidc admits only what fits the cluster (32 cores here),
#      so N is at most that; a round waits for the previous one to end. The
#      jobs really run: slurmd launching them shares the CPUs with the rest.
#   2. GET one job: GET /api/v1/tenants/sbench/jobs/{id} (PostgreSQL) against
#      GET /slurm/v0.0.38/job/{its Slurm id} (slurmctld), wrk -c16, same job
#      (finished, from round 1).
#   3. submit rate: wrk -c16 POST job/submit with "hold": true (slurm_submit.lua)
#      against POST /jobs into project "hold" (post_jobs.lua: queued, never
#      admitted): the request paths, each ending with the job queued.
#   4. listing: aidc gets 10,000 finished jobs inserted as the owner role (1,000
#      in tenant "list", 9,000 in "other-1".."other-9"); Slurm gets held jobs up
#      to BENCH_SLURM_HELD (the wrk run of 3 and a top-up with curl). wrk -c2
#      GET /api/v1/tenants/list/jobs?limit=1000 against GET /slurm/v0.0.38/jobs,
#      which lists every job slurmctld holds (all users, finished ones too).
#   5. the held jobs are cancelled (DELETE job/{id}, curl, 16 at a time; the
#      rate is printed). slurmctld keeps cancelled jobs MinJobAge (3600 s in
#      slurm-up.sh's cluster), and MaxJobCount (10,000 by default) counts them:
#      each run leaves ~BENCH_SLURM_HELD+ jobs there for an hour. The script
#      checks the room first and holds fewer jobs (saying so) when it is short.
# Around each wrk run: CPU time of aidcd, of the PostgreSQL cluster, of
# slurmrestd and of slurmctld per request (µs), and how busy the machine was.
# It prints a table and where the raw outputs are. Exit status 0 when the
# measurements ran.
#
# Environment (all optional):
#   BUILD_DIR             build tree                                   (default ./build)
#   AIDCD                 the aidcd to measure, e.g. one built from an older commit in a
#                         worktree of its own, to compare dispatchers    (default $BUILD_DIR/aidcd)
#   BENCH_AIDC_PORT       first port tried for aidcd                   (default 18520)
#   BENCH_E2E_ONLY=1      part 1 only (submit end to end), then its report: a run of ~30 s to
#                         alternate two aidcd binaries or settings on a loaded machine
#   BENCH_DURATION        seconds per wrk run of 2 and 4              (default 10)
#   BENCH_SUBMIT_DURATION seconds per wrk run of 3                    (default 3)
#   BENCH_SUBMIT_ROUNDS   alternating rounds (slurmrestd, aidc) of 3   (default 3)
#   BENCH_CONNECTIONS     wrk connections of 2 and 3                  (default 16)
#   BENCH_LIST_CONNECTIONS wrk connections of 4                       (default 2)
#   BENCH_WRK_THREADS     wrk threads                                  (default 2)
#   BENCH_THREADS         HTTP worker threads of aidcd                 (default 2)
#   BENCH_E2E_JOBS        jobs per burst of 1                          (default 32)
#   BENCH_E2E_ROUNDS      bursts of 1                                  (default 3)
#   BENCH_SLURM_HELD      held jobs in Slurm for 4                     (default 3000)
#   BENCH_AIDC_JOBS       jobs inserted into aidc for 4                (default 10000)
#   BENCH_LIST_TENANT_JOBS  of which in the measured tenant            (default 1000)
#   SLURM_DIR, SLURMRESTD_URL  the Slurm to use or start  (default /tmp/aidc-slurm, http://127.0.0.1:6820)
#   SLURMRESTD_PORT, SLURMCTLD_PORT, SLURMD_PORT_BASE  passed on to slurm-up.sh: with a SLURM_DIR
#                         of its own, a private Slurm next to the shared one, e.g.
#     SLURM_DIR=/tmp/aidc-bench-slurm SLURMCTLD_PORT=6917 SLURMD_PORT_BASE=6940 \
#     SLURMRESTD_PORT=6920 tests/bench/slurm.sh
#                         (started afresh and stopped again: every run finds an empty slurmctld)
#   BENCH_PGDATA_DIR, BENCH_PGPORT  the bench PostgreSQL  (default /tmp/aidc-bench-slurm-pg, 15452)
#   BENCH_KEEP_PG=1       leave PostgreSQL running at the end
#   BENCH_OUT             directory for raw outputs       (default /tmp/aidc-bench-slurm-out)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/bench"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
AIDCD=${AIDCD:-$BUILD_DIR/aidcd}
E2E_ONLY=${BENCH_E2E_ONLY:-0}
DURATION=${BENCH_DURATION:-10}
SUBMIT_DURATION=${BENCH_SUBMIT_DURATION:-3}
SUBMIT_ROUNDS=${BENCH_SUBMIT_ROUNDS:-3}
CONNS=${BENCH_CONNECTIONS:-16}
LIST_CONNS=${BENCH_LIST_CONNECTIONS:-2}
WRK_THREADS=${BENCH_WRK_THREADS:-2}
THREADS=${BENCH_THREADS:-2}
E2E_JOBS=${BENCH_E2E_JOBS:-32}
E2E_ROUNDS=${BENCH_E2E_ROUNDS:-3}
HELD=${BENCH_SLURM_HELD:-3000}
AIDC_JOBS=${BENCH_AIDC_JOBS:-10000}
LIST_TENANT_JOBS=${BENCH_LIST_TENANT_JOBS:-1000}
SLURM_DIR=${SLURM_DIR:-/tmp/aidc-slurm}
SLURMRESTD_URL=${SLURMRESTD_URL:-http://${SLURMRESTD_HOST:-127.0.0.1}:${SLURMRESTD_PORT:-6820}}
SLURM_USER=aidc
BENCH_PGDATA_DIR=${BENCH_PGDATA_DIR:-/tmp/aidc-bench-slurm-pg}
BENCH_PGPORT=${BENCH_PGPORT:-15452}
OUT=${BENCH_OUT:-/tmp/aidc-bench-slurm-out}
DB=aidc_bench_slurm
PASSWORD=bench-password-1234
TENANT=sbench
PARALLEL=16   # curl transfers at a time (bursts, top-up, cancel)
PREFIX="aidcbench-$(date +%s)"   # names of the jobs this run submits straight to Slurm

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
export PGBIN
PSQL="$PGBIN/psql"
CLK_TCK=$(getconf CLK_TCK)

say() { printf '\n== %s\n' "$*"; }
die() { echo "bench: $*" >&2; exit 1; }

[ -x "$AIDCD" ] || die "$AIDCD not found: build first (cmake --build build --target aidcd)"
for c in wrk curl jq openssl xxd; do command -v "$c" >/dev/null || die "$c not found"; done
[ -x "$PSQL" ] || die "$PSQL not found"
[ "$(id -u)" = 0 ] || die "run as root (Slurm's JWT key is root's; slurm-up.sh needs root)"
if [ "$E2E_JOBS" -lt 1 ] || [ "$E2E_ROUNDS" -lt 1 ]; then die "BENCH_E2E_JOBS and BENCH_E2E_ROUNDS must be >= 1"; fi
[ "$LIST_TENANT_JOBS" -le "$AIDC_JOBS" ] || die "BENCH_LIST_TENANT_JOBS exceeds BENCH_AIDC_JOBS"

mkdir -p "$OUT"
rm -f "$OUT"/*.out "$OUT"/*.log "$OUT"/*.tsv "$OUT"/*.json
TMP=$(mktemp -d /tmp/aidc-bench-slurm.XXXXXX)
AIDCD_PID='' SLURM_STARTED=0 SLURM_TOKEN=''

# shellcheck source=tests/bench/lib.sh
. "$ROOT/tests/bench/lib.sh"

# ---- Slurm helpers ----------------------------------------------------------------------
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
mint_token() {  # an HS256 JWT for SLURM_USER from the cluster's key, valid 1 hour
    local hdr pl now
    now=$(date +%s)
    hdr=$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)
    pl=$(printf '{"exp":%d,"iat":%d,"sun":"%s"}' $((now + 3600)) "$now" "$SLURM_USER" | b64url)
    printf '%s.%s.%s' "$hdr" "$pl" "$(printf '%s.%s' "$hdr" "$pl" | openssl dgst -sha256 -mac HMAC \
        -macopt "hexkey:$(xxd -p -c 256 "$SLURM_DIR/etc/jwt_hs256.key")" -binary | b64url)"
}
slurm_api() {  # slurm_api METHOD PATH [BODY]: the answer on stdout; fails unless 2xx
    local code
    code=$(curl -sS -m 120 -o "$TMP/slurm.resp" -w '%{http_code}' -X "$1" \
        -H "X-SLURM-USER-NAME: $SLURM_USER" -H "X-SLURM-USER-TOKEN: $SLURM_TOKEN" \
        -H 'Content-Type: application/json' ${3:+-d "$3"} "$SLURMRESTD_URL/slurm/v0.0.38/$2") || code=000
    case $code in
        2??) cat "$TMP/slurm.resp" ;;
        *) echo "bench: slurmrestd $1 $2 answered $code: $(head -c 300 "$TMP/slurm.resp" 2>/dev/null)" >&2
           return 1 ;;
    esac
}
# cfg FILE METHOD URL [BODY] < ids: one curl transfer per line of stdin (%ID% in URL and
# BODY replaced by the line), with the headers of CFG_HDRS (no quotes or backslashes in
# them or in URL), written as a curl config file
cfg() {
    local body=${4:-}
    body=${body//\\/\\\\}
    body=${body//\"/\\\"}
    CFG_URL=$3 CFG_BODY=$body CFG_METHOD=$2 CFG_H=$(printf '%s\n' "${CFG_HDRS[@]}") awk '
        BEGIN { nh = split(ENVIRON["CFG_H"], h, "\n") }
        NF { u = ENVIRON["CFG_URL"]; gsub(/%ID%/, $1, u); b = ENVIRON["CFG_BODY"]; gsub(/%ID%/, $1, b)
             if (n++) print "next"
             print "url = \"" u "\""; print "request = " ENVIRON["CFG_METHOD"]; print "silent"
             print "output = \"/dev/null\""; print "write-out = \"%{http_code} %{time_total}\\n\""
             for (i = 1; i <= nh; i++) if (h[i] != "") print "header = \"" h[i] "\""
             if (b != "") print "data-binary = \"" b "\"" }' > "$1"
}
# burst NAME CONFIG: its transfers, PARALLEL at a time; "<status> <seconds>" lines in
# $OUT/NAME.tsv; sets BURST_S (wall seconds), BURST_N (transfers) and BURST_BAD (not 2xx)
burst() {
    local t0 t1
    t0=$(date +%s.%N)
    curl -s --no-progress-meter --parallel --parallel-immediate --parallel-max "$PARALLEL" -K "$2" > "$OUT/$1.tsv" \
        2> "$OUT/$1.err" || true
    t1=$(date +%s.%N)
    BURST_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    BURST_N=$(awk 'END { print NR }' "$OUT/$1.tsv")
    BURST_BAD=$(awk '$1 !~ /^2/ { n++ } END { print n + 0 }' "$OUT/$1.tsv")
}
pct() {  # pct FILE... : "p50 p99 max" in ms of the second column
    cat "$@" | awk '{ print $2 * 1000 }' | sort -n | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "- - -"; exit }
        i50 = int(0.5 * NR + 0.5); if (i50 < 1) i50 = 1; i99 = int(0.99 * NR + 0.999); if (i99 > NR) i99 = NR
        printf "%.1f %.1f %.1f\n", v[i50], v[i99], v[NR] }'
}
SLURM_HDRS=("X-SLURM-USER-NAME: $SLURM_USER" "Content-Type: application/json")
mine_pending() {  # ids of this run's jobs in Slurm that have not ended (ours: name prefix, or
                  # aidc's comment "aidc <run> sbench/...")
    slurm_api GET jobs | jq -r --arg p "$PREFIX" --arg t " $TENANT/" '.jobs[]
        | select((.name | startswith($p)) or ((.comment // "") | startswith("aidc ") and contains($t)))
        | select(.job_state == "PENDING" or .job_state == "RUNNING" or .job_state == "CONFIGURING"
                 or .job_state == "SUSPENDED" or .job_state == "COMPLETING")
        | .job_id'
}
cancel_ids() {  # cancel_ids NAME FILE: DELETE job/{id} for each id of FILE; sets BURST_*
    CFG_HDRS=("${SLURM_HDRS[@]}" "X-SLURM-USER-TOKEN: $SLURM_TOKEN")
    cfg "$TMP/$1.cfg" DELETE "$SLURMRESTD_URL/slurm/v0.0.38/job/%ID%" < "$2"
    burst "$1" "$TMP/$1.cfg"
}

cleanup() {
    local rc=$?
    set +e
    stop_pid "$AIDCD_PID" aidcd
    if [ -n "$SLURM_TOKEN" ] && [ "$SLURM_STARTED" = 0 ]; then
        # a reused Slurm: take back what this run left pending there
        mine_pending > "$TMP/left.ids" 2>/dev/null
        if [ -s "$TMP/left.ids" ]; then
            echo "bench: cancelling $(wc -l < "$TMP/left.ids") jobs of this run left in Slurm" >&2
            cancel_ids cleanup "$TMP/left.ids"
        fi
    fi
    if [ "$SLURM_STARTED" = 1 ]; then
        echo "bench: stopping the Slurm this run started ($SLURM_DIR)" >&2
        SLURM_DIR=$SLURM_DIR "$ROOT/deploy/slurm-down.sh" --quiet
    fi
    rm -rf "$TMP"
    stop_bench_pg
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
AIDCD_SRC=$AIDCD
cp "$AIDCD" "$TMP/aidcd"   # a rebuild of build/ during the run must not pull it away
AIDCD="$TMP/aidcd"

# ---- Slurm: reuse or start ----------------------------------------------------------------
code=$(curl -s -m 3 -o /dev/null -w '%{http_code}' "$SLURMRESTD_URL/slurm/v0.0.38/ping" || true)
if [ "$code" != 000 ] && [ -n "$code" ]; then
    say "Slurm: slurmrestd answers at $SLURMRESTD_URL (HTTP $code without a token): reused, left running"
else
    say "Slurm: nothing answers at $SLURMRESTD_URL: starting it (deploy/slurm-up.sh, SLURM_DIR=$SLURM_DIR)"
    SLURM_STARTED=1
    SLURM_DIR=$SLURM_DIR "$ROOT/deploy/slurm-up.sh" > "$TMP/slurm.env" 2> "$OUT/slurm-up.log" \
        || { tail -20 "$OUT/slurm-up.log" >&2; die "deploy/slurm-up.sh failed (log: $OUT/slurm-up.log)"; }
    SLURMRESTD_URL=$(sed -n "s/^export SLURMRESTD_URL='\(.*\)'$/\1/p" "$TMP/slurm.env")
    SLURM_DIR=$(sed -n "s/^export SLURM_DIR='\(.*\)'$/\1/p" "$TMP/slurm.env")
fi
[ -r "$SLURM_DIR/etc/jwt_hs256.key" ] || die "no $SLURM_DIR/etc/jwt_hs256.key: set SLURM_DIR to the directory of the Slurm at $SLURMRESTD_URL"
[ -d "$SLURM_DIR/jobs" ] || die "no $SLURM_DIR/jobs (the job user's work directory)"
SLURM_TOKEN=$(mint_token)
slurm_api GET ping > "$TMP/ping.json" || die "slurmrestd refuses a token minted from $SLURM_DIR/etc/jwt_hs256.key"
MAXJOBS=$(sed -n 's/^MaxJobCount=\([0-9]*\).*/\1/p' "$SLURM_DIR/etc/slurm.conf" 2>/dev/null | tail -1)
MAXJOBS=${MAXJOBS:-10000}
MINAGE=$(sed -n 's/^MinJobAge=\([0-9]*\).*/\1/p' "$SLURM_DIR/etc/slurm.conf" 2>/dev/null | tail -1)
MINAGE=${MINAGE:-300}
PRESENT=$(slurm_api GET jobs | jq '.jobs | length')
# this run adds 2 * E2E_JOBS * E2E_ROUNDS jobs and the held ones; each wrk run of 3 alone may
# make more than HELD (slurmrestd took up to ~800 held jobs/s here): reckon with 1,000/s
AVAIL=$((MAXJOBS - PRESENT - 2 * E2E_JOBS * E2E_ROUNDS - 200))
[ "$AVAIL" -ge $((1000 * SUBMIT_DURATION * SUBMIT_ROUNDS)) ] || { [ "$E2E_ONLY" = 1 ] && [ "$AVAIL" -ge 0 ]; } \
    || die "slurmctld holds $PRESENT jobs of MaxJobCount $MAXJOBS (ended ones stay MinJobAge $MINAGE s): too full for this run; wait, or give the run a Slurm of its own (SLURM_DIR, ports: see the header)"
if [ "$AVAIL" -lt "$HELD" ]; then
    echo "  slurmctld holds $PRESENT jobs of MaxJobCount $MAXJOBS: holding $AVAIL jobs instead of $HELD"
    HELD=$AVAIL
fi
slurm_pid() { tr -dc '0-9' < "$SLURM_DIR/run/$1.pid" 2>/dev/null || echo 0; }
echo "  $SLURM_DIR; slurmctld pid $(slurm_pid slurmctld), slurmrestd pid $(slurm_pid slurmrestd);" \
     "$PRESENT jobs in slurmctld (MaxJobCount $MAXJOBS, MinJobAge $MINAGE s); job names $PREFIX-*"

# ---- PostgreSQL and aidcd ------------------------------------------------------------------------
say "PostgreSQL: own cluster in $BENCH_PGDATA_DIR on port $BENCH_PGPORT"
pg_up() { PGDATA_DIR=$BENCH_PGDATA_DIR PGPORT=$BENCH_PGPORT AIDC_DB=$DB "$ROOT/deploy/pg-up.sh"; }
pgenv=$(pg_up)
eval "$pgenv"
"$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL_ADMIN" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
pgenv=$(pg_up)
eval "$pgenv"
APP_URL=$DATABASE_URL OWNER_URL=$DATABASE_URL_OWNER
q() { "$PSQL" -X -qAt -v ON_ERROR_STOP=1 -d "$OWNER_URL" "$@"; }
export AIDC_DATABASE_URL="$APP_URL" AIDC_MIGRATE_DATABASE_URL="$OWNER_URL"
# a load generator is one address with one credential: no per-client limits
export AIDC_RATE_LIMIT_PER_ADDRESS=0 AIDC_RATE_LIMIT_PER_TOKEN=0 AIDC_MAX_CONNECTIONS_PER_ADDRESS=0
export AIDC_LOG_LEVEL=warn AIDC_DATA_DIR="$TMP/data" AIDC_THREADS="$THREADS" AIDC_WORKERS=1
export AIDC_SYNC_INTERVAL_MS=500   # a round's jobs that ended free their cores within 0.5 s
"$AIDCD" migrate
aidcd_start "${BENCH_AIDC_PORT:-18520}"
say "aidcd (pid $AIDCD_PID) on port $AIDC_PORT: $THREADS HTTP threads, workers on (sync every" \
    "${AIDC_SYNC_INTERVAL_MS} ms); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

admin_token
WORKDIR="$SLURM_DIR/jobs"
expect 201 -X POST "${AUTH[@]}" -d "{\"name\":\"hpc\",\"kind\":\"slurm\",\"endpoint\":\"$SLURMRESTD_URL\",
    \"credentials_ref\":\"file:$SLURM_DIR/etc/jwt_hs256.key\",
    \"options\":{\"user_name\":\"$SLURM_USER\",\"partition\":\"gpu\",\"preemptible_partition\":\"preempt\",
                 \"workdir\":\"$WORKDIR\"}}" "$BASE/api/v1/clusters"
CORES=0
for _ in $(seq 300); do   # the syncer reads the inventory of a new cluster at once
    expect 200 "${AUTH[@]}" "$BASE/api/v1/clusters/hpc"
    CORES=$(jq -r '.inventory.cpu.total // 0' "$TMP/resp")
    [ "$(jq -r .healthy "$TMP/resp")" = true ] && [ "$CORES" -gt 0 ] && break
    sleep 0.1
done
[ "$CORES" -gt 0 ] || die "cluster hpc has no inventory after 30 s: $(cat "$TMP/resp")"
INVENTORY=$(jq -c '.inventory | with_entries(.value = .value.total)' "$TMP/resp")
[ "$E2E_JOBS" -le "$CORES" ] || die "BENCH_E2E_JOBS ($E2E_JOBS) is more than the cluster's $CORES cores: aidc would admit only $CORES at a time"
expect 201 -X POST "${AUTH[@]}" -d "{\"slug\":\"$TENANT\",\"name\":\"Slurm bench\"}" "$BASE/api/v1/tenants"
expect 200 -X PUT "${AUTH[@]}" -d '{"resources":{"cpu":{"limit":64},"memory_gib":{"limit":512}}}' \
    "$BASE/api/v1/tenants/$TENANT/quota"
for p in run hold gate; do
    expect 201 -X POST "${AUTH[@]}" -d "{\"slug\":\"$p\",\"name\":\"$p\"}" \
        "$BASE/api/v1/tenants/$TENANT/projects"
done
for p in hold gate; do
    expect 200 -X PUT "${AUTH[@]}" -d '{"resources":{"jobs":{"limit":0}}}' \
        "$BASE/api/v1/tenants/$TENANT/projects/$p/quota"
done
JOBS_URL="$BASE/api/v1/tenants/$TENANT/jobs"
echo "  cluster hpc (slurm, $SLURMRESTD_URL): inventory $INVENTORY, healthy;" \
     "tenant $TENANT (cpu limit 64, memory 512 GiB), projects run and hold (jobs limit 0)"

# the list data set: finished jobs inserted as the owner (row-level security does not apply)
if [ "$E2E_ONLY" != 1 ]; then
t0=$(date +%s.%N)
q -v n="$AIDC_JOBS" -v mine="$LIST_TENANT_JOBS" > /dev/null <<'SQL'
BEGIN;
INSERT INTO tenants (slug, name) SELECT 'list', 'Listed tenant'
UNION ALL SELECT format('other-%s', t), format('Other tenant %s', t) FROM generate_series(1, 9) t;
INSERT INTO projects (tenant_id, slug, name, description, created_by, created_by_name)
SELECT t.id, 'p1', 'Project 1', 'seeded by tests/bench/slurm.sh', u.id, u.username
  FROM tenants t, users u WHERE u.username = 'bench' AND (t.slug = 'list' OR t.slug LIKE 'other-%');
WITH s AS (
    SELECT n, CASE WHEN n <= :mine THEN 'list'
                   ELSE format('other-%s', (n - :mine - 1) % 9 + 1) END AS slug,
           now() - make_interval(secs => (:n - n) * 17) AS sub,
           CASE WHEN n % 10 = 0 THEN 'failed' WHEN n % 10 = 1 THEN 'cancelled' ELSE 'succeeded' END AS st,
           (n % 3) * (1 + n % 4) AS g
      FROM generate_series(1, :n) n)
INSERT INTO jobs (tenant_id, project_id, user_id, username, name, state, reason, priority,
                  cluster_id, backend_job_id, gpus, gpu_type, cpus, memory_gib, nodes,
                  time_limit_minutes, command, env, submitted_at, admitted_at, started_at,
                  finished_at, exit_code)
SELECT t.id, p.id, u.id, u.username, format('train-%s', s.n), s.st,
       CASE s.st WHEN 'cancelled' THEN 'cancelled by bench' WHEN 'failed' THEN 'exit code 1' END,
       CASE WHEN s.n % 7 = 0 THEN 'high' ELSE 'normal' END, c.id, (900000 + s.n)::text,
       s.g, CASE WHEN s.g > 0 THEN (CASE WHEN s.n % 2 = 0 THEN 'a100' ELSE 'h100' END) END,
       4, 16, 1, 120, '["python3","train.py","--epochs","10"]'::jsonb,
       jsonb_build_object('SEED', s.n::text), s.sub, s.sub + interval '2 s',
       s.sub + interval '5 s', s.sub + interval '10 min',
       CASE s.st WHEN 'succeeded' THEN 0 WHEN 'failed' THEN 1 END
  FROM s JOIN tenants t ON t.slug = s.slug JOIN projects p ON p.tenant_id = t.id
  CROSS JOIN (SELECT id, username FROM users WHERE username = 'bench') u
  CROSS JOIN (SELECT id FROM clusters WHERE name = 'hpc') c;
COMMIT;
ANALYZE jobs, tenants, projects;
SQL
echo "  inserted $(q -c "SELECT count(*) FROM jobs") finished jobs into aidc:" \
     "$(q -c "SELECT count(*) FROM jobs j JOIN tenants t ON t.id = j.tenant_id WHERE t.slug = 'list'")" \
     "in tenant list, the rest in other-1..9 ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"
fi

# ---- accounting around wrk -----------------------------------------------------------------
machine_busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
to_ms() {  # wrk latency (123.45us, 1.23ms, 1.02s, 2.00m) -> milliseconds
    awk -v v="$1" 'BEGIN {
        if (v == "") { print "-"; exit }
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
        printf "%.2f", n }'
}
declare -A RPS P50 P99 REQS ERRS BYTES SRV_US PG_US RESTD_US CTLD_US BUSY OTHER RSS
run_wrk() {  # run_wrk KEY CONNECTIONS DURATION URL [wrk args...]
    local key=$1 c=$2 d=$3 url=$4 out="$OUT/$1.out" s0 p0 r0 c0 m0 s1 p1 r1 c1 m1 t0 t1 rpid cpid w
    shift 4
    rpid=$(slurm_pid slurmrestd) cpid=$(slurm_pid slurmctld)
    [[ $key != *aidc* ]] || pg_ticks_by_app "$DATABASE_URL_ADMIN" > "$OUT/$key.pg0" || true
    s0=$(proc_ticks "$AIDCD_PID"); p0=$(pg_ticks); r0=$(proc_ticks "$rpid"); c0=$(proc_ticks "$cpid")
    m0=$(machine_busy_ticks); t0=$(date +%s.%N)
    ( TIMEFORMAT='%U %S'; time wrk -t"$WRK_THREADS" -c"$c" -d"${d}s" --latency --timeout 60s \
          "$@" "$url" > "$out" 2>&1 ) 2> "$OUT/$key.time" || { cat "$out" >&2; die "wrk failed for $key"; }
    s1=$(proc_ticks "$AIDCD_PID"); p1=$(pg_ticks); r1=$(proc_ticks "$rpid"); c1=$(proc_ticks "$cpid")
    m1=$(machine_busy_ticks); t1=$(date +%s.%N)
    [[ $key != *aidc* ]] || pg_ticks_by_app "$DATABASE_URL_ADMIN" > "$OUT/$key.pg1" || true
    w=$(awk '{ print $1 + $2 }' "$OUT/$key.time" | tail -1)
    RPS[$key]=$(awk '/^Requests\/sec:/ { printf($2 < 10 ? "%.2f" : "%.0f", $2) }' "$out")
    REQS[$key]=$(awk '/ requests in / { print $1 }' "$out")
    BYTES[$key]=$(awk '/ requests in / { print $5 }' "$out" | tr -d ',')
    P50[$key]=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$out")")
    P99[$key]=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$out")")
    ERRS[$key]=$(awk '/Non-2xx or 3xx responses:/ { n += $NF }
                      /Socket errors:/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 } END { print n + 0 }' "$out")
    local -a v
    # CPU per request (µs) of aidcd, PostgreSQL, slurmrestd, slurmctld; machine busy % of all
    # CPUs and "other": what none of them nor wrk used (the tests of someone else, say)
    read -r -a v < <(awk -v s="$((s1 - s0))" -v p="$((p1 - p0))" -v r="$((r1 - r0))" \
        -v c="$((c1 - c0))" -v m="$((m1 - m0))" -v w="${w:-0}" -v hz="$CLK_TCK" -v n="${REQS[$key]:-0}" \
        -v cpus="$(nproc)" -v d="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" 'BEGIN {
            if (n < 1) n = 1
            f = 1e6 / hz / n
            o = (m - s - p - r - c) / hz - w; if (o < 0) o = 0
            printf "%.0f %.0f %.0f %.0f %.0f %.0f\n", s * f, p * f, r * f, c * f, 100 * m / hz / d / cpus,
                   100 * o / d / cpus }')
    SRV_US[$key]=${v[0]} PG_US[$key]=${v[1]} RESTD_US[$key]=${v[2]} CTLD_US[$key]=${v[3]} BUSY[$key]=${v[4]}
    OTHER[$key]=${v[5]}
    RSS[$key]=$(awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$AIDCD_PID/status")
    printf '  %-12s %8s req/s  p50 %8s ms  p99 %8s ms  (%s requests, %s errors, %s read)\n' "$key" \
        "${RPS[$key]}" "${P50[$key]}" "${P99[$key]}" "${REQS[$key]}" "${ERRS[$key]}" "${BYTES[$key]}"
    # where PostgreSQL's time went, by connection (µs per request; a process that ended
    # during the run is missing here, not in the pg column)
    [[ $key != *aidc* ]] ||
        echo "    PostgreSQL by connection: $(pg_app_split "$OUT/$key.pg0" "$OUT/$key.pg1" "${REQS[$key]:-0}")"
}
SLURM_WRK_H=(-H "X-SLURM-USER-NAME: $SLURM_USER" -H "X-SLURM-USER-TOKEN: $SLURM_TOKEN")

# ---- 1. submit end to end ------------------------------------------------------------------------
say "1. submit end to end: $E2E_ROUNDS rounds of $E2E_JOBS one-core jobs at once ($PARALLEL at a time)," \
    "straight to slurmrestd, then through aidc"
SLURM_E2E_BODY="{\"job\":{\"name\":\"$PREFIX-e-%ID%\",\"partition\":\"gpu\",\"time_limit\":5,"
SLURM_E2E_BODY+="\"cpus_per_task\":1,\"memory_per_node\":1024,\"minimum_nodes\":1,\"requeue\":false,"
SLURM_E2E_BODY+="\"current_working_directory\":\"$WORKDIR\",\"standard_output\":\"/dev/null\","
SLURM_E2E_BODY+="\"standard_error\":\"/dev/null\",\"environment\":{\"PATH\":\"/usr/bin:/bin\"}},"
SLURM_E2E_BODY+="\"script\":\"#!/bin/sh\\ntrue\\n\"}"
AIDC_E2E_BODY='{"project":"run","name":"e2e-%ID%","command":["true"],"cpus":1,"memory_gib":1,"time_limit_minutes":5}'
declare -a E2E_S_ANS E2E_A_ANS E2E_A_IN E2E_G_IN E2E_G_PASSES
snap() { echo "$(proc_ticks "$AIDCD_PID") $(pg_ticks) $(proc_ticks "$(slurm_pid slurmrestd)")" \
              "$(proc_ticks "$(slurm_pid slurmctld)") $(machine_busy_ticks) $(date +%s.%N)"; }
E2E_SNAP0=$(snap)
unfinished() {  # unfinished PREFIX SINCE: jobs named PREFIX* changed since SINCE not yet ended
    slurm_api GET "jobs?update_time=$2" | jq --arg p "$1" '[.jobs[] | select((.name | startswith($p))
        and (.job_state == "PENDING" or .job_state == "RUNNING" or .job_state == "CONFIGURING"
             or .job_state == "COMPLETING"))] | length'
}
for r in $(seq "$E2E_ROUNDS"); do
    seq -f "$r-%g" "$E2E_JOBS" > "$TMP/e2e.ids"
    CFG_HDRS=("${SLURM_HDRS[@]}" "X-SLURM-USER-TOKEN: $SLURM_TOKEN")
    cfg "$TMP/s.cfg" POST "$SLURMRESTD_URL/slurm/v0.0.38/job/submit" "$SLURM_E2E_BODY" < "$TMP/e2e.ids"
    since=$(($(date +%s) - 2))
    burst "e2e-slurm-$r" "$TMP/s.cfg"
    [ "$BURST_BAD" = 0 ] || die "round $r: $BURST_BAD of $BURST_N submits to slurmrestd failed ($OUT/e2e-slurm-$r.tsv)"
    E2E_S_ANS[r]=$BURST_S
    # Slurm runs them at once: let them end, so that their launches do not load aidc's round
    n=1
    for _ in $(seq 240); do
        n=$(unfinished "$PREFIX-e-$r-" "$since")
        [ "$n" = 0 ] && break
        sleep 0.25
    done
    [ "$n" = 0 ] || echo "  round $r: $n of the jobs submitted straight still not ended after 60 s"
    CFG_HDRS=("Authorization: Bearer $TOKEN" "Content-Type: application/json")
    cfg "$TMP/a.cfg" POST "$JOBS_URL" "$AIDC_E2E_BODY" < "$TMP/e2e.ids"
    t0=$(date +%s.%N)
    burst "e2e-aidc-$r" "$TMP/a.cfg"
    [ "$BURST_BAD" = 0 ] || die "round $r: $BURST_BAD of $BURST_N submits to aidc failed ($OUT/e2e-aidc-$r.tsv)"
    E2E_A_ANS[r]=$BURST_S
    n=0
    for _ in $(seq 240); do   # a slow look: polling must not load the machine
        n=$(q -c "SELECT count(*) FROM jobs WHERE name LIKE 'e2e-$r-%' AND backend_job_id IS NOT NULL")
        [ "$n" -ge "$E2E_JOBS" ] && break
        sleep 0.25
    done
    [ "$n" -ge "$E2E_JOBS" ] || die "round $r: only $n of $E2E_JOBS jobs reached Slurm within 60 s: $(q -c "SELECT string_agg(DISTINCT coalesce(reason, state), '; ') FROM jobs WHERE name LIKE 'e2e-$r-%' AND backend_job_id IS NULL")"
    # in Slurm: when the last hand-over was written (clock_timestamp() of its event)
    E2E_A_IN[r]=$(q -c "SELECT round((extract(epoch FROM max(e.ts)) - $t0)::numeric, 3) FROM job_events e
                        JOIN jobs j ON j.id = e.job_id WHERE j.name LIKE 'e2e-$r-%'
                         AND e.reason = 'handed to the cluster'")
    printf '  round %s: straight, all %s answered after %.2f s; aidc, all answered after %.2f s, all in Slurm after %.2f s\n' \
        "$r" "$E2E_JOBS" "${E2E_S_ANS[r]}" "${E2E_A_ANS[r]}" "${E2E_A_IN[r]}"
    for _ in $(seq 1200); do   # the next round needs the cores back
        n=$(q -c "SELECT count(*) FROM jobs WHERE name LIKE 'e2e-$r-%' AND state IN ('succeeded','failed','cancelled')")
        [ "$n" -ge "$E2E_JOBS" ] && break
        sleep 0.1
    done
    [ "$n" -ge "$E2E_JOBS" ] || echo "  round $r: only $n of $E2E_JOBS ended within 120 s"
    # the dispatcher alone: the same jobs queued in project gate (jobs limit 0), then released
    # by one quota change, so one admission pass hands the dispatcher all of them at once
    CFG_HDRS=("Authorization: Bearer $TOKEN" "Content-Type: application/json")
    cfg "$TMP/g.cfg" POST "$JOBS_URL" "${AIDC_E2E_BODY/\"run\",\"name\":\"e2e-/\"gate\",\"name\":\"gate-}" \
        < "$TMP/e2e.ids"
    burst "e2e-gate-$r" "$TMP/g.cfg"
    [ "$BURST_BAD" = 0 ] || die "round $r: $BURST_BAD of $BURST_N submits into project gate failed"
    expect 200 -X PUT "${AUTH[@]}" -d '{"resources":{"jobs":{"limit":100000}}}' \
        "$BASE/api/v1/tenants/$TENANT/projects/gate/quota"
    for _ in $(seq 240); do
        n=$(q -c "SELECT count(*) FROM jobs WHERE name LIKE 'gate-$r-%' AND backend_job_id IS NOT NULL")
        [ "$n" -ge "$E2E_JOBS" ] && break
        sleep 0.25
    done
    [ "$n" -ge "$E2E_JOBS" ] || die "round $r: only $n of $E2E_JOBS released jobs reached Slurm within 60 s"
    expect 200 -X PUT "${AUTH[@]}" -d '{"resources":{"jobs":{"limit":0}}}' \
        "$BASE/api/v1/tenants/$TENANT/projects/gate/quota"
    read -r E2E_G_IN[r] E2E_G_PASSES[r] < <(q -F ' ' -c "SELECT round(extract(epoch FROM
            max(e.ts) FILTER (WHERE e.reason = 'handed to the cluster')
          - min(e.ts) FILTER (WHERE e.to_state = 'admitted'))::numeric, 3), count(DISTINCT j.admitted_at)
        FROM job_events e JOIN jobs j ON j.id = e.job_id WHERE j.name LIKE 'gate-$r-%'")
    printf '  round %s: %s jobs released at once (%s admission passes): first admitted -> all in Slurm %.2f s\n' \
        "$r" "$E2E_JOBS" "${E2E_G_PASSES[r]}" "${E2E_G_IN[r]}"
    for _ in $(seq 1200); do
        n=$(q -c "SELECT count(*) FROM jobs WHERE name LIKE 'gate-$r-%' AND state IN ('succeeded','failed','cancelled')")
        [ "$n" -ge "$E2E_JOBS" ] && break
        sleep 0.1
    done
    [ "$n" -ge "$E2E_JOBS" ] || echo "  round $r: only $n of $E2E_JOBS released jobs ended within 120 s"
done
E2E_HWM=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$AIDCD_PID/status")
# the machine during part 1: busy % of all CPUs, and the share of aidcd, PostgreSQL, slurmrestd,
# slurmctld (curl, psql, slurmd and the jobs themselves are in "other")
E2E_LOAD=$(awk -v a="$E2E_SNAP0" -v b="$(snap)" -v hz="$CLK_TCK" -v cpus="$(nproc)" 'BEGIN {
    split(a, x, " "); split(b, y, " "); d = (y[6] - x[6]) * hz * cpus
    printf "busy %.0f %%: aidcd %.0f, PostgreSQL %.0f, slurmrestd %.0f, slurmctld %.0f, other %.0f", 100 * (y[5] - x[5]) / d,
        100 * (y[1] - x[1]) / d, 100 * (y[2] - x[2]) / d, 100 * (y[3] - x[3]) / d, 100 * (y[4] - x[4]) / d,
        100 * ((y[5] - x[5]) - (y[1] - x[1]) - (y[2] - x[2]) - (y[3] - x[3]) - (y[4] - x[4])) / d }')
E2E_STATES=$(q -c "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) n FROM jobs
                    WHERE name LIKE 'e2e-%' GROUP BY 1 ORDER BY 1) x")
read -r ES50 ES99 ESMAX < <(pct "$OUT"/e2e-slurm-*.tsv)
read -r EA50 EA99 EAMAX < <(pct "$OUT"/e2e-aidc-*.tsv)
# per job, from its events: submit (insert) -> admitted -> handed to the cluster; per round the
# span from the first submit event to the last hand-over, and the dispatcher's pace
q -F ' ' -c "
    WITH e AS (SELECT j.name, split_part(j.name, '-', 2) AS round,
                 min(ev.ts) FILTER (WHERE ev.from_state IS NULL) AS sub,
                 min(ev.ts) FILTER (WHERE ev.to_state = 'admitted') AS adm,
                 min(ev.ts) FILTER (WHERE ev.reason = 'handed to the cluster') AS handed,
                 j.admitted_at
               FROM jobs j JOIN job_events ev ON ev.job_id = j.id
              WHERE j.name LIKE 'e2e-%' GROUP BY j.name, j.admitted_at),
    x AS (SELECT extract(epoch FROM handed - sub) * 1000 AS total,
                 extract(epoch FROM adm - sub) * 1000 AS admit,
                 extract(epoch FROM handed - adm) * 1000 AS disp FROM e),
    r AS (SELECT round, extract(epoch FROM max(handed) - min(sub)) AS span,
                 (count(*) - 1) / nullif(extract(epoch FROM max(handed) - min(handed)), 0) AS pace,
                 count(DISTINCT admitted_at) AS passes FROM e GROUP BY round)
    SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY total)::numeric, 1),
           round(percentile_cont(0.99) WITHIN GROUP (ORDER BY total)::numeric, 1),
           round(max(total)::numeric, 1),
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY admit)::numeric, 1),
           round(percentile_cont(0.99) WITHIN GROUP (ORDER BY admit)::numeric, 1),
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY disp)::numeric, 1),
           round(percentile_cont(0.99) WITHIN GROUP (ORDER BY disp)::numeric, 1),
           (SELECT round(min(span)::numeric, 2) || '-' || round(max(span)::numeric, 2) FROM r),
           (SELECT round(min(pace)::numeric, 0) || '-' || round(max(pace)::numeric, 0) FROM r),
           (SELECT round(avg(passes)::numeric, 1) FROM r)
      FROM x" > "$TMP/e2e.fig"
read -r EV50 EV99 EVMAX EADM50 EADM99 EDISP50 EDISP99 ESPAN EPACE EPASSES < "$TMP/e2e.fig"
range() { printf '%s\n' "$@" | sort -n | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.2f-%.2f", a, b }'; }
rate_range() {  # rate_range SECONDS...: jobs/s of E2E_JOBS in each, low-high
    printf '%s\n' "$@" | awk -v n="$E2E_JOBS" '{ print n / $1 }' | sort -n |
        awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.0f-%.0f", a, b }'
}
echo "  per request (all rounds): straight p50 $ES50 p99 $ES99 max $ESMAX ms; aidc p50 $EA50 p99 $EA99 max $EAMAX ms"
echo "  per job through aidc, submit -> handed to Slurm: p50 $EV50 p99 $EV99 max $EVMAX ms (admission p50" \
     "$EADM50 p99 $EADM99, dispatch p50 $EDISP50 p99 $EDISP99); first submit -> last hand-over $ESPAN s;" \
     "dispatcher $EPACE jobs/s; $EPASSES admission passes per round; jobs: $E2E_STATES"
echo "  machine during part 1 (% of all CPUs): $E2E_LOAD; aidcd VmHWM $E2E_HWM MiB"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
e2e_report() {
    echo "submit end to end: $E2E_ROUNDS rounds of $E2E_JOBS one-core jobs at once, $PARALLEL at a time (curl)"
    printf '%-44s %14s %14s %22s\n' "" "all answered s" "all in Slurm s" "per request p50/p99 ms"
    printf '%-44s %14s %14s %22s\n' "straight to slurmrestd" "$(range "${E2E_S_ANS[@]}")" \
        "$(range "${E2E_S_ANS[@]}")" "$ES50 / $ES99"
    printf '%-44s %14s %14s %22s\n' "through aidc (201 = queued)" "$(range "${E2E_A_ANS[@]}")" \
        "$(range "${E2E_A_IN[@]}")" "$EA50 / $EA99"
    printf '  jobs/s into Slurm: straight %s, through aidc %s (all in Slurm); aidc / straight time to Slurm: %s\n' \
        "$(rate_range "${E2E_S_ANS[@]}")" "$(rate_range "${E2E_A_IN[@]}")" \
        "$(ratio "$(printf '%s\n' "${E2E_A_IN[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" \
                 "$(printf '%s\n' "${E2E_S_ANS[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')") (medians)"
    printf '  per job through aidc (events): submit -> in Slurm p50 %s p99 %s max %s; admission p50 %s p99 %s;' \
        "$EV50" "$EV99" "$EVMAX" "$EADM50" "$EADM99"
    printf ' dispatch p50 %s p99 %s\n' "$EDISP50" "$EDISP99"
    printf '  dispatcher pace %s jobs/s (first to last hand-over of a round); %s admission passes per round\n' \
        "$EPACE" "$EPASSES"
    echo "  machine during these rounds (% of all CPUs): $E2E_LOAD"
    # per round, aidc's time to Slurm over the straight burst just before it (the same load)
    local r pr=''
    for r in $(seq "$E2E_ROUNDS"); do pr+=" $(ratio "${E2E_A_IN[r]}" "${E2E_S_ANS[r]}")"; done
    echo "  aidc / straight time to Slurm per round:$pr"
    printf '  dispatcher alone, %s jobs admitted at once, first admitted -> all in Slurm: %s s (%s jobs/s);' \
        "$E2E_JOBS" "$(range "${E2E_G_IN[@]}")" "$(rate_range "${E2E_G_IN[@]}")"
    pr=''
    for r in $(seq "$E2E_ROUNDS"); do pr+=" $(ratio "${E2E_G_IN[r]}" "${E2E_S_ANS[r]}")"; done
    echo " / straight per round:$pr"
}
if [ "$E2E_ONLY" = 1 ]; then
    say "results ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
        "AIDC_DISPATCH_CONCURRENCY ${AIDC_DISPATCH_CONCURRENCY:-default}, AIDC_DISPATCH_PER_CLUSTER" \
        "${AIDC_DISPATCH_PER_CLUSTER:-default}; aidcd $AIDCD_SRC)"
    e2e_report
    exit 0
fi
GET_ID=$(q -c "SELECT id FROM jobs WHERE name = 'e2e-1-1'")
GET_BID=$(q -c "SELECT backend_job_id FROM jobs WHERE name = 'e2e-1-1'")

# ---- 2. GET one job ------------------------------------------------------------------------------
say "2. GET one job (aidc $GET_ID = Slurm $GET_BID): wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s"
expect 200 "${AUTH[@]}" "$JOBS_URL/$GET_ID"
cp "$TMP/resp" "$OUT/get-aidc.json"
slurm_api GET "job/$GET_BID" > "$OUT/get-slurm.json"
echo "  answer sizes: aidc $(wc -c < "$OUT/get-aidc.json") bytes (state $(jq -r .state "$OUT/get-aidc.json")), slurmrestd" \
     "$(wc -c < "$OUT/get-slurm.json") bytes (job_state $(jq -r '.jobs[0].job_state' "$OUT/get-slurm.json"))"
run_wrk get-slurm "$CONNS" "$DURATION" "$SLURMRESTD_URL/slurm/v0.0.38/job/$GET_BID" "${SLURM_WRK_H[@]}"
run_wrk get-aidc "$CONNS" "$DURATION" "$JOBS_URL/$GET_ID" -H "Authorization: Bearer $TOKEN"

# ---- 3. submit rate ------------------------------------------------------------------------------
say "3. submit rate: wrk -t$WRK_THREADS -c$CONNS -d${SUBMIT_DURATION}s; held jobs straight to slurmrestd," \
    "jobs into aidc's project hold"
export BENCH_PREFIX=$PREFIX BENCH_SLURM_WORKDIR=$WORKDIR BENCH_SLURM_PARTITION=gpu
# alternating rounds: both queues grow as the run goes (slurmctld's held jobs, aidc's queued
# ones), and a Slurm reused across runs slows with the jobs it keeps; round r of each side
# meets the same growth, so the per-round ratios and their median compare like with like
for r in $(seq "$SUBMIT_ROUNDS"); do
    run_wrk "submit-slurm-$r" "$CONNS" "$SUBMIT_DURATION" "$SLURMRESTD_URL/slurm/v0.0.38/job/submit" \
        "${SLURM_WRK_H[@]}" -s "$HERE/slurm_submit.lua"
    BENCH_RUN=$(date +%s)$r BENCH_PROJECT=hold run_wrk "submit-aidc-$r" "$CONNS" "$SUBMIT_DURATION" \
        "$JOBS_URL" -H "Authorization: Bearer $TOKEN" -s "$HERE/post_jobs.lua"
done
AIDC_HELD=$(q -c "SELECT count(*) FROM jobs j JOIN projects p ON p.id = j.project_id WHERE p.slug = 'hold'")
# out of the list data set again (and out of admission's way)
q -c "DELETE FROM jobs j USING projects p WHERE p.id = j.project_id AND p.slug = 'hold'; SELECT pg_notify('aidc_jobs', 'cancel')" > /dev/null
q -c "VACUUM ANALYZE jobs" > /dev/null
echo "  aidc queued $AIDC_HELD jobs (deleted again as the owner afterwards)"

# ---- 4. listing ------------------------------------------------------------------------------------
slurm_api GET jobs > "$TMP/jobs.json"
MY_HELD=$(jq --arg p "$PREFIX-w-" '[.jobs[] | select((.name | startswith($p)) and .job_state == "PENDING")] | length' "$TMP/jobs.json")
TOPUP=$((HELD - MY_HELD))
if [ "$TOPUP" -gt 0 ]; then
    seq "$TOPUP" > "$TMP/topup.ids"
    CFG_HDRS=("${SLURM_HDRS[@]}" "X-SLURM-USER-TOKEN: $SLURM_TOKEN")
    cfg "$TMP/t.cfg" POST "$SLURMRESTD_URL/slurm/v0.0.38/job/submit" \
        "${SLURM_E2E_BODY/\"name\":\"$PREFIX-e-%ID%\"/\"name\":\"$PREFIX-h-%ID%\",\"hold\":true}" < "$TMP/topup.ids"
    burst topup-slurm "$TMP/t.cfg"
    TOPUP_RATE=$(awk -v n="$BURST_N" -v s="$BURST_S" 'BEGIN { printf "%.0f", n / s }')
    echo "  topped up with $BURST_N held jobs (curl, $PARALLEL at a time): $TOPUP_RATE jobs/s, $BURST_BAD failed"
else
    TOPUP_RATE=-
fi
slurm_api GET jobs > "$TMP/jobs.json"
SLURM_LISTED=$(jq '.jobs | length' "$TMP/jobs.json")
MY_HELD=$(jq --arg p "$PREFIX" '[.jobs[] | select((.name | startswith($p)) and .job_state == "PENDING")] | length' "$TMP/jobs.json")
one() {  # one URL curl-args...: "bytes seconds" of one GET
    local url=$1; shift
    curl -s -o /dev/null -w '%{size_download} %{time_total}\n' "$@" "$url"
}
read -r SLURM_LIST_BYTES SLURM_LIST_S < <(one "$SLURMRESTD_URL/slurm/v0.0.38/jobs" "${SLURM_WRK_H[@]}")
LIST_URL="$BASE/api/v1/tenants/list/jobs?limit=1000"
expect 200 "${AUTH[@]}" "$LIST_URL"
AIDC_LISTED=$(jq '.items | length' "$TMP/resp")
read -r AIDC_LIST_BYTES AIDC_LIST_S < <(one "$LIST_URL" -H "Authorization: Bearer $TOKEN")
AIDC_TOTAL=$(q -c "SELECT count(*) FROM jobs")
say "4. listing: slurmrestd GET jobs ($SLURM_LISTED jobs in slurmctld, $MY_HELD of them held by this run;" \
    "$SLURM_LIST_BYTES bytes, $SLURM_LIST_S s alone) against aidc GET tenants/list/jobs?limit=1000" \
    "($AIDC_LISTED of $AIDC_TOTAL jobs; $AIDC_LIST_BYTES bytes, $AIDC_LIST_S s alone);" \
    "wrk -t$WRK_THREADS -c$LIST_CONNS -d${DURATION}s"
[ "$AIDC_LISTED" = "$LIST_TENANT_JOBS" ] || [ "$LIST_TENANT_JOBS" -gt 1000 ] \
    || die "aidc listed $AIDC_LISTED jobs, expected $LIST_TENANT_JOBS"
[ "$LIST_CONNS" -ge "$WRK_THREADS" ] || WRK_THREADS=$LIST_CONNS
run_wrk list-slurm "$LIST_CONNS" "$DURATION" "$SLURMRESTD_URL/slurm/v0.0.38/jobs" "${SLURM_WRK_H[@]}"
run_wrk list-aidc "$LIST_CONNS" "$DURATION" "$LIST_URL" -H "Authorization: Bearer $TOKEN"

# ---- 5. cancel the held jobs --------------------------------------------------------------------
jq -r --arg p "$PREFIX" '.jobs[] | select((.name | startswith($p)) and .job_state == "PENDING") | .job_id' \
    "$TMP/jobs.json" > "$TMP/held.ids"
cancel_ids cancel-slurm "$TMP/held.ids"
CANCEL_RATE=$(awk -v n="$BURST_N" -v s="$BURST_S" 'BEGIN { printf "%.0f", n / s }')
read -r CP50 CP99 _ < <(pct "$OUT/cancel-slurm.tsv")
LEFT=$(mine_pending | awk 'END { print NR }')
say "5. cancelled $BURST_N held jobs (DELETE job/{id}, $PARALLEL at a time): $CANCEL_RATE jobs/s," \
    "p50 $CP50 p99 $CP99 ms, $BURST_BAD failed; $LEFT of this run's jobs still pending or running"
AIDCD_HWM=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$AIDCD_PID/status")
SYNC_ERR=$(curl -s "${AUTH[@]}" "$BASE/api/v1/clusters/hpc" | jq -r '.last_error // "none"')

# ---- report ----------------------------------------------------------------------------------------
say "results ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, Slurm $(jq -r '.meta.Slurm.release // "?"' "$TMP/ping.json")," \
    "slurmrestd v0.0.38; latencies in ms; CPU in µs per request)"
printf '%-44s %8s %8s %8s %6s %7s %6s %7s %6s %5s %6s %4s\n' case req/s p50 p99 errors aidcd pg restd ctld \
    busy% other% rss
row() {
    printf '%-44s %8s %8s %8s %6s %7s %6s %7s %6s %5s %6s %4s\n' "$1" "${RPS[$2]:--}" "${P50[$2]:--}" \
        "${P99[$2]:--}" "${ERRS[$2]:--}" "${SRV_US[$2]:--}" "${PG_US[$2]:--}" "${RESTD_US[$2]:--}" \
        "${CTLD_US[$2]:--}" "${BUSY[$2]:--}" "${OTHER[$2]:--}" "${RSS[$2]:--}"
}
for r in $(seq "$SUBMIT_ROUNDS"); do
    row "submit $r, slurmrestd POST job/submit (held)" "submit-slurm-$r"
    row "submit $r, aidc POST /jobs (queued in aidc)" "submit-aidc-$r"
done
row "GET one job, slurmrestd job/{id}" get-slurm
row "GET one job, aidc jobs/{id}" get-aidc
row "list, slurmrestd GET jobs ($SLURM_LISTED jobs)" list-slurm
row "list, aidc jobs?limit=1000 (of $AIDC_TOTAL)" list-aidc
SUB_R='' SUB_P=''
for r in $(seq "$SUBMIT_ROUNDS"); do
    SUB_R+=" $(ratio "${RPS[submit-aidc-$r]}" "${RPS[submit-slurm-$r]}")"
    SUB_P+=" $(ratio "${P99[submit-aidc-$r]}" "${P99[submit-slurm-$r]}")"
done
median() { printf '%s\n' "$@" | grep -v '^-$' | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }
# shellcheck disable=SC2086  # the words are the rounds
printf '  submit, aidc / slurmrestd per round: req/s%s (median %s); p99%s (median %s)\n' "$SUB_R" \
    "$(median $SUB_R)" "$SUB_P" "$(median $SUB_P)"
printf '  aidc / slurmrestd, req/s: GET one %s, list %s; p99: GET one %s, list %s\n' \
    "$(ratio "${RPS[get-aidc]}" "${RPS[get-slurm]}")" \
    "$(ratio "${RPS[list-aidc]}" "${RPS[list-slurm]}")" \
    "$(ratio "${P99[get-aidc]}" "${P99[get-slurm]}")" "$(ratio "${P99[list-aidc]}" "${P99[list-slurm]}")"
printf '  wrk: -c%s (submit -d%ss, GET -d%ss), -c%s for lists; answers: list slurmrestd %s bytes, aidc %s bytes\n' \
    "$CONNS" "$SUBMIT_DURATION" "$DURATION" "$LIST_CONNS" "$SLURM_LIST_BYTES" "$AIDC_LIST_BYTES"
echo "  (CPU µs per request of aidcd, its PostgreSQL, slurmrestd, slurmctld; busy% = all CPUs; other% = used"
echo "   by none of them nor wrk; rss = aidcd's VmRSS MiB after the run)"
echo
e2e_report
echo
echo "Slurm side: $MY_HELD held jobs listed (top-up $TOPUP_RATE jobs/s), cancelled at $CANCEL_RATE jobs/s;" \
     "slurmctld keeps them MinJobAge $MINAGE s (MaxJobCount $MAXJOBS)"
echo "aidcd peak RSS (VmHWM) $E2E_HWM MiB after part 1, $AIDCD_HWM MiB at the end; cluster hpc last_error: $SYNC_ERR"
bad=0
for k in get-slurm get-aidc list-slurm list-aidc $(for r in $(seq "$SUBMIT_ROUNDS"); do echo "submit-slurm-$r submit-aidc-$r"; done); do
    [ "${ERRS[$k]:-1}" = 0 ] || bad=1
done
[ "$bad" = 0 ] || echo "WARNING: some wrk runs had non-2xx answers or socket errors: their figures are suspect"
echo "raw outputs: $OUT"
