#!/usr/bin/env bash
# array_cancel.sh - what the cancel of a 10,000-task array costs in its request,
# before and after migration 0030 (figures, not pass/fail; not run by ctest).
#
# From the repository root, after `cmake --build build --target aidcd`, with the
# test PostgreSQL's URLs set (source /tmp/testenv.sh, or AIDC_TEST_OWNER_URL and
# AIDC_TEST_APP_URL), run
#     tests/bench/array_cancel.sh
# It creates its own database there (aidc_bench_arraycancel_<pid>, dropped at the
# end), migrates it with build/aidcd, seeds as the owner a tenant with a
# 10,000-task array (BENCH_TASKS) held by a dependency, then times, each
# BENCH_RUNS times in a transaction rolled back:
#   baseline: the old cascade's work in one statement (0022's aidc_job_ended: every
#             queued task cancelled, with its event and its triggers), which the
#             cancel request used to run;
#   new:      the cancel of the parent as it is now (its state; 0030's trigger marks
#             it for the array-cancel worker);
#   batch:    one worker batch (500 tasks cancelled, with their events) after the
#             parent's cancel - what each of the worker's transactions costs (the
#             last statement's time).
# It prints the median of each, the ratio baseline / new and the load average.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
TASKS=${BENCH_TASKS:-10000}
RUNS=${BENCH_RUNS:-3}
: "${AIDC_TEST_OWNER_URL:?source /tmp/testenv.sh first}" "${AIDC_TEST_APP_URL:?}"
DB=aidc_bench_arraycancel_$$
OWN=${AIDC_TEST_OWNER_URL%/*}/$DB
APP=${AIDC_TEST_APP_URL%/*}/$DB
cleanup() { psql "$AIDC_TEST_OWNER_URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; }
trap cleanup EXIT
psql "$AIDC_TEST_OWNER_URL" -qc "CREATE DATABASE $DB" >/dev/null
AIDC_DATABASE_URL=$APP AIDC_MIGRATE_DATABASE_URL=$OWN "$BUILD_DIR/aidcd" migrate >/dev/null 2>&1
psql "$OWN" -q -v ON_ERROR_STOP=1 -v tasks="$TASKS" >/dev/null 2>&1 <<'SQL'
INSERT INTO tenants (slug, name) VALUES ('chem', 'chem');
INSERT INTO projects (tenant_id, slug, name) SELECT id, 'mol', 'mol' FROM tenants;
INSERT INTO users (username) VALUES ('ann');
INSERT INTO jobs (tenant_id, project_id, user_id, username, name, command)
SELECT t.id, p.id, u.id, 'ann', 'gate', '["true"]' FROM tenants t, projects p, users u;
INSERT INTO jobs (tenant_id, project_id, user_id, username, name, command, array_count,
                  array_max_parallel, has_deps, reason)
SELECT t.id, p.id, u.id, 'ann', 'big', '["true"]', :tasks, :tasks, true, 'array'
  FROM tenants t, projects p, users u;
INSERT INTO jobs (tenant_id, project_id, user_id, username, name, command, array_parent,
                  array_index, has_deps, reason)
SELECT b.tenant_id, b.project_id, b.user_id, 'ann', 'big', '["true"]', b.id, i, true,
       'array:max_parallel'
  FROM jobs b, generate_series(0, :tasks - 1) i WHERE b.array_count IS NOT NULL;
INSERT INTO job_dependencies (job_id, tenant_id, peer_id, condition, position)
SELECT b.id, b.tenant_id, g.id, 'succeeded', 0 FROM jobs b, jobs g
 WHERE b.array_count IS NOT NULL AND g.name = 'gate';
INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)
SELECT id, tenant_id, NULL, 'queued', 'submitted' FROM jobs;
ANALYZE jobs;
ANALYZE job_events;
SQL
PID=$(psql "$OWN" -Atc "SELECT id FROM jobs WHERE array_count IS NOT NULL")

# ms SQL: milliseconds of SQL's last statement in a transaction rolled back (psql's
# \timing), run once before to warm the session (aidcd's connections are long-lived:
# a new session's first call compiles the trigger functions)
ms() {
    psql "$OWN" -q -v pid="$PID" 2>/dev/null <<SQL | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
BEGIN;
SAVEPOINT warm;
$1
ROLLBACK TO SAVEPOINT warm;
\\timing on
$1
\\timing off
ROLLBACK;
SQL
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

BASE="WITH u AS (UPDATE jobs SET state = 'cancelled', finished_at = now(), updated_at = now(),
  estimated_start = NULL, reason = 'cancelled by ann' WHERE array_parent = :'pid' AND state = 'queued'
  RETURNING id, tenant_id)
INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)
SELECT id, tenant_id, 'queued', 'cancelled', 'cancelled by ann' FROM u;"
NEW="UPDATE jobs SET state = 'cancelled', finished_at = now(), updated_at = now(),
  reason = 'cancelled by ann' WHERE id = :'pid' AND state = 'queued';"
# the parent is cancelled first, as the worker finds it (the tasks' end then leaves it be)
BATCH="$NEW
WITH t AS (SELECT id FROM jobs WHERE array_parent = :'pid' AND state = 'queued'
  ORDER BY array_index LIMIT 500 FOR UPDATE SKIP LOCKED),
 q AS (UPDATE jobs j SET state = 'cancelled', finished_at = now(), updated_at = now(),
  estimated_start = NULL, reason = 'cancelled by ann' FROM t WHERE j.id = t.id RETURNING j.id, j.tenant_id)
INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)
SELECT id, tenant_id, 'queued', 'cancelled', 'cancelled by ann' FROM q;"

b=() n=() k=()
for _ in $(seq "$RUNS"); do # interleaved: the machine's load falls on both alike
    b+=("$(ms "$BASE")")
    n+=("$(ms "$NEW")")
    k+=("$(ms "$BATCH")")
done
mb=$(printf '%s\n' "${b[@]}" | median)
mn=$(printf '%s\n' "${n[@]}" | median)
mk=$(printf '%s\n' "${k[@]}" | median)
echo "array_cancel: $TASKS tasks, median of $RUNS runs (ms), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '  %-52s %10s   runs: %s\n' "baseline: old cascade in the cancel's statement" "$mb" "${b[*]}"
printf '  %-52s %10s   runs: %s\n' "new: the parent's cancel (mark)" "$mn" "${n[*]}"
printf '  %-52s %10s   runs: %s\n' "new: one worker batch (500 tasks)" "$mk" "${k[*]}"
awk -v b="$mb" -v n="$mn" -v k="$mk" 'BEGIN { printf "  ratio baseline / new cancel: %.0f; worker batches for all tasks: %d, about %.0f ms in all\n", b / n, '"$TASKS"' / 500, k * '"$TASKS"' / 500 }'
