/* jobarrays.c - job arrays and dependencies at submission (see jobarrays.h). */
#include "jobarrays.h"

#include "../lib/err.h"
#include "schedrows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Making the parent one: it says how many tasks it has and how many run at once. */
static const struct db_stmt st_mark = {
    "jobarray_mark",
    "UPDATE jobs SET array_count = $3::int, array_max_parallel = $4::int,"
    "   reason = 'array', updated_at = now(),"
    /* named a Slurm or Kubernetes cluster: one job array there, holding max_parallel tasks */
    "   array_hold = CASE WHEN (SELECT c.kind FROM clusters c"
    "                            WHERE c.id = jobs.requested_cluster)"
    "                          IN ('slurm', 'kubernetes') THEN $4::int END"
    " WHERE tenant_id = $1::uuid AND id = $2::uuid AND state = 'queued'"
    "   AND array_parent IS NULL AND array_count IS NULL RETURNING 1",
    4};
/* The tasks $3..$4 of a parent marked by st_mark in this transaction. They copy
 * what the job runs; what admission and the backends write stays at its
 * defaults. A task past the first max_parallel says why it waits until the
 * admitter looks at it. */
static const struct db_stmt st_tasks = {
    "jobarray_tasks",
    "WITH p AS (SELECT * FROM jobs WHERE tenant_id = $1::uuid AND id = $2::uuid"
    "             AND state = 'queued' AND array_parent IS NULL AND array_count IS NOT NULL),"
    " t AS (INSERT INTO jobs (tenant_id, project_id, user_id, username, name, priority,"
    "         requested_cluster, gpus, gpu_type, cpus, memory_gib, nodes, time_limit_minutes,"
    "         image, command, script, env, reason, image_id, image_digest, image_ref,"
    "         image_tagged, mounts, kind, submitted_at, array_parent, array_index, array_hold)"
    "       SELECT p.tenant_id, p.project_id, p.user_id, p.username,"
    "         left(p.name, 190) || '[' || g || ']', p.priority, p.requested_cluster, p.gpus,"
    "         p.gpu_type, p.cpus, p.memory_gib, p.nodes, p.time_limit_minutes, p.image,"
    "         p.command, p.script,"
    "         p.env || jsonb_build_object('AIDC_ARRAY_INDEX', g::text,"
    "                                     'SLURM_ARRAY_TASK_ID', g::text),"
    "         CASE WHEN g < p.array_max_parallel THEN 'submitted' ELSE 'array:max_parallel' END,"
    "         p.image_id, p.image_digest, p.image_ref, p.image_tagged, p.mounts, p.kind,"
    "         p.submitted_at, p.id, g, CASE WHEN p.array_hold IS NOT NULL THEN 0 END"
    "       FROM p, generate_series($3::int, least($4::int, p.array_count - 1)) AS g"
    "       RETURNING id, tenant_id),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)"
    "       SELECT id, tenant_id, NULL, 'queued', 'submitted' FROM t)"
    " SELECT count(*) FROM t",
    4};
/* the queued tasks of an array being cancelled (migrations/0030) never run: not
 * counted; its running ones still hold their place until they have ended */
static const struct db_stmt st_open = {
    "jobarray_open",
    "SELECT count(*) FROM jobs WHERE tenant_id = $1::uuid AND array_parent IS NOT NULL"
    " AND state IN ('queued', 'admitted', 'pending', 'running')"
    " AND NOT (state = 'queued'"
    "          AND array_parent IN (SELECT id FROM jobs WHERE array_cancel IS NOT NULL))",
    1};
static const struct db_stmt st_task_waits = {
    "jobarray_task_waits",
    "SELECT 1 FROM jobs WHERE tenant_id = $1::uuid AND id = $2::uuid AND array_hold = 0"
    " AND state = 'queued'",
    2};
static const struct db_stmt st_whole = {
    "jobarray_whole", "SELECT kind IN ('slurm', 'kubernetes') FROM clusters WHERE id = $1::uuid",
    1};
static const struct db_stmt st_unknown = {
    "jobarray_unknown_peer",
    "SELECT min(x.pos) - 1 FROM unnest($3::uuid[]) WITH ORDINALITY AS x(peer, pos)"
    " WHERE NOT EXISTS (SELECT 1 FROM jobs p WHERE p.id = x.peer AND p.tenant_id = $1::uuid"
    "                     AND ($2::uuid IS NULL OR (p.id <> $2::uuid"
    "                          AND p.array_parent IS DISTINCT FROM $2::uuid)))",
    3};
static const struct db_stmt st_depend = {
    "jobarray_depend",
    "INSERT INTO job_dependencies (job_id, tenant_id, peer_id, condition, position)"
    " SELECT $2::uuid, $1::uuid, x.peer, x.cond, x.pos - 1"
    "   FROM unnest($3::uuid[], $4::text[]) WITH ORDINALITY AS x(peer, cond, pos)"
    "  WHERE EXISTS (SELECT 1 FROM jobs p WHERE p.id = x.peer AND p.tenant_id = $1::uuid"
    "                  AND p.id <> $2::uuid AND p.array_parent IS DISTINCT FROM $2::uuid)"
    "  ORDER BY x.pos",
    4};

/* $2 is checked by the caller: digits, '_', digits */
static const struct db_stmt st_task_seen = {
    "jobarray_task_seen",
    "WITH t AS (SELECT t.id FROM jobs p JOIN jobs t ON t.array_parent = p.id"
    "            WHERE p.cluster_id = $1::uuid AND p.array_hold > 0"
    "              AND p.backend_job_id = split_part($2, '_', 1)"
    "              AND t.array_index = split_part($2, '_', 2)::int AND t.state = 'queued'"
    "            FOR UPDATE OF t),"
    " u AS (UPDATE jobs j SET state = 'pending', cluster_id = $1::uuid, backend_job_id = $2,"
    "         admitted_at = now(), updated_at = now(), reason = NULL, estimated_start = NULL"
    "       FROM t WHERE j.id = t.id"
    "       RETURNING j.id, j.tenant_id, j.stop_requested, j.preemption_count),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason, details)"
    "       SELECT id, tenant_id, 'queued', 'pending', 'in the cluster with its array',"
    "              jsonb_build_object('backend_job_id', $2) FROM u)"
    " SELECT u.id, " RUN_KEY("u") ", coalesce(u.stop_requested, '') FROM u",
    2};

const struct db_stmt *const db_jobarrays_stmts[] = {&st_open,   &st_task_waits, &st_mark,
                                                    &st_tasks,  &st_whole,      &st_unknown,
                                                    &st_depend, &st_task_seen,  NULL};

int db_jobarray_open_tasks(struct db *db, const char *tenant_id, long *n)
{
    const char *p[1] = {tenant_id};
    int e;
    *n = 0;
    PGresult *r = db_query(db, &st_open, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 1)
        *n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}

int db_jobarray_task_waits(struct db *db, const char *tenant_id, const char *id, bool *waits)
{
    const char *p[2] = {tenant_id, id};
    int e;
    *waits = false;
    PGresult *r = db_query(db, &st_task_waits, p, &e);
    if (!r)
        return e;
    *waits = PQntuples(r) == 1;
    PQclear(r);
    return 0;
}

int db_jobarray_whole(struct db *db, const char *cluster_id, bool *whole)
{
    const char *p[1] = {cluster_id};
    int e;
    *whole = false;
    PGresult *r = db_query(db, &st_whole, p, &e);
    if (!r)
        return e;
    *whole = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return 0;
}

int db_jobarray_task_seen(struct db *db, const char *cluster_id, const char *backend_id,
                          struct db_jobarray_task *out, bool *found)
{
    const char *p[2] = {cluster_id, backend_id};
    int e;
    *found = false;
    PGresult *r = db_query(db, &st_task_seen, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 1) {
        snprintf(out->id, sizeof out->id, "%s", PQgetvalue(r, 0, 0));
        snprintf(out->run_key, sizeof out->run_key, "%s", PQgetvalue(r, 0, 1));
        snprintf(out->stop, sizeof out->stop, "%s", PQgetvalue(r, 0, 2));
        *found = true;
    }
    PQclear(r);
    return 0;
}

int db_jobarray_make(struct db *db, const char *tenant_id, const char *parent_id, int count,
                     int max_parallel)
{
    char c[16], m[16];
    snprintf(c, sizeof c, "%d", count);
    snprintf(m, sizeof m, "%d", max_parallel);
    const char *p[4] = {tenant_id, parent_id, c, m};
    int e;
    PGresult *r = db_query(db, &st_mark, p, &e);
    if (!r)
        return e;
    bool marked = PQntuples(r) == 1;
    PQclear(r);
    if (!marked)
        return AIDC_ENOTFOUND;
    /* One statement per chunk: each stays far inside the statement timeout on a
     * busy server, where 10,000 tasks in one took 6-30 s. */
    char lo[16], hi[16];
    const char *tp[4] = {tenant_id, parent_id, lo, hi};
    for (int from = 0; from < count; from += DB_JOBARRAY_CHUNK) {
        int to = from + DB_JOBARRAY_CHUNK < count ? from + DB_JOBARRAY_CHUNK : count;
        snprintf(lo, sizeof lo, "%d", from);
        snprintf(hi, sizeof hi, "%d", to - 1);
        r = db_query(db, &st_tasks, tp, &e);
        if (!r)
            return e;
        long n = PQntuples(r) == 1 ? strtol(PQgetvalue(r, 0, 0), NULL, 10) : 0;
        PQclear(r);
        if (n != to - from)
            return AIDC_ENOTFOUND;
    }
    return 0;
}

int db_jobarray_unknown_peer(struct db *db, const char *tenant_id, const char *job_id,
                             const char *peers, long *unknown)
{
    const char *p[3] = {tenant_id, job_id, peers};
    int e;
    *unknown = -1;
    PGresult *r = db_query(db, &st_unknown, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        *unknown = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}

int db_jobarray_depend(struct db *db, const char *tenant_id, const char *job_id, const char *peers,
                       const char *conditions)
{
    const char *p[4] = {tenant_id, job_id, peers, conditions};
    return db_exec(db, &st_depend, p);
}
