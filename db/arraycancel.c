/* arraycancel.c - a cancelled array's tasks in batches (see arraycancel.h). */
#include "arraycancel.h"

#include <stdio.h>
#include <stdlib.h>

/* A task still to end or to ask: open, and not asked to stop for good yet. */
#define TASK_LEFT(j)                                                                               \
    "(" j ".state = 'queued' OR (" j ".state IN ('admitted', 'pending', 'running')"                \
    " AND " j ".stop_requested IS DISTINCT FROM 'cancel'))"

/* FOR NO KEY UPDATE: job_events of the parent (a foreign key to it) may still be
 * written meanwhile; another worker replica takes another array. Round robin:
 * the next after $1 (the last one tried), so that an array whose batch keeps
 * failing, or a tenant cancelling many, holds back no other array. */
static const struct db_stmt st_next = {
    "arraycancel_next",
    "SELECT id FROM jobs WHERE array_cancel IS NOT NULL"
    " ORDER BY $1::uuid IS NOT NULL AND id <= $1::uuid, id LIMIT 1"
    " FOR NO KEY UPDATE SKIP LOCKED",
    1};
/*
 * The parent is locked first (st_next), the tasks after it with SKIP LOCKED:
 * a task's end locks the task, then its open parent (0022's aidc_job_ended),
 * so this order never waits for a transaction that waits for it. Each task
 * cancelled fires that trigger (its dependants are settled, as before).
 */
static const struct db_stmt st_batch = {
    "arraycancel_batch",
    "WITH p AS (SELECT array_cancel AS why, array_hold IS NULL AS alone FROM jobs"
    "             WHERE id = $1::uuid AND array_cancel IS NOT NULL),"
    " t AS (SELECT j.id, j.state FROM jobs j WHERE j.array_parent = $1::uuid"
    "         AND j.state IN ('queued', 'admitted', 'pending', 'running') AND " TASK_LEFT(
        "j") "       ORDER BY j.array_index LIMIT $2::int FOR UPDATE SKIP LOCKED),"
             " q AS (UPDATE jobs j SET state = 'cancelled', finished_at = now(), updated_at = "
             "now(),"
             "         estimated_start = NULL, reason = p.why"
             "       FROM t, p WHERE j.id = t.id AND t.state = 'queued'"
             "       RETURNING j.id, j.tenant_id, j.reason),"
             " qe AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)"
             "       SELECT id, tenant_id, 'queued', 'cancelled', reason FROM q),"
             " s AS (UPDATE jobs j SET stop_requested = 'cancel', stop_requested_at = now(),"
             "         updated_at = now(), reason = 'cancel requested with its array'"
             "       FROM t, p WHERE j.id = t.id AND t.state <> 'queued'"
             "       RETURNING j.id, j.tenant_id, j.state, j.cluster_id, p.alone),"
             " se AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)"
             "       SELECT id, tenant_id, state, state, 'cancel requested with its array' FROM s"
             "        WHERE alone),"
             " o AS (INSERT INTO outbox (job_id, tenant_id, cluster_id, action)"
             "       SELECT id, tenant_id, cluster_id, 'cancel' FROM s"
             "        WHERE alone AND cluster_id IS NOT NULL RETURNING 1)"
             " SELECT (SELECT count(*) FROM q) + (SELECT count(*) FROM s),"
             "  CASE WHEN EXISTS (SELECT 1 FROM o) THEN pg_notify('aidc_outbox', 'cancel') END",
    2};
static const struct db_stmt st_finish = {
    "arraycancel_finish",
    "UPDATE jobs p SET array_cancel = NULL WHERE p.id = $1::uuid AND p.array_cancel IS NOT NULL"
    " AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.array_parent = p.id"
    "   AND j.state IN ('queued', 'admitted', 'pending', 'running') AND " TASK_LEFT("j") ")",
    1};

const struct db_stmt *const db_arraycancel_stmts[] = {&st_next, &st_batch, &st_finish, NULL};

int db_arraycancel_next(struct db *db, const char *after, char parent[37], bool *found)
{
    int e;
    *found = false;
    const char *p[1] = {after};
    PGresult *r = db_query(db, &st_next, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 1) {
        snprintf(parent, 37, "%s", PQgetvalue(r, 0, 0));
        *found = true;
    }
    PQclear(r);
    return 0;
}

int db_arraycancel_batch(struct db *db, const char *parent, int limit, long *n)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[2] = {parent, lim};
    int e;
    *n = 0;
    PGresult *r = db_query(db, &st_batch, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 1)
        *n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}

int db_arraycancel_finish(struct db *db, const char *parent, bool *done)
{
    const char *p[1] = {parent};
    int e;
    *done = false;
    PGresult *r = db_query(db, &st_finish, p, &e);
    if (!r)
        return e;
    *done = strtol(PQcmdTuples(r), NULL, 10) == 1;
    PQclear(r);
    return 0;
}
