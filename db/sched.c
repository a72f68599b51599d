/* sched.c - statements of the background workers (see sched.h). */
#include "sched.h"

#include "../lib/imgref.h"

#include "../lib/err.h"
#include "schedrows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACTIVE "('admitted', 'pending', 'running')"
/* A run ends when its backend says (at), never before its start nor before
 * what the metering worker has already cut of it (which it cuts only up to
 * where the cluster last said the job still ran). */
#define RUN_END(at) "greatest(r.started_at, coalesce(r.metered_to, r.started_at), " at ")"

static const struct db_stmt st_notify_jobs = {"sched_notify_jobs",
                                              "SELECT pg_notify('aidc_jobs', '')", 0};
static const struct db_stmt st_notify_outbox = {"sched_notify_outbox",
                                                "SELECT pg_notify('aidc_outbox', '')", 0};
static const struct db_stmt st_notify_sync = {"sched_notify_sync",
                                              "SELECT pg_notify('aidc_sync', '')", 0};
static const struct db_stmt st_notify_registries = {"sched_notify_registries",
                                                    "SELECT pg_notify('aidc_registries', '')", 0};
/*
 * A notification in a transaction of its own, sent after the work it announces
 * committed (server/waker.c). Not flushed: PostgreSQL commits notifying
 * transactions one at a time under a database-wide lock, so a NOTIFY in every
 * submit made the submits wait for each other's WAL flush (pgbench here: 2,552
 * inserts/s with a NOTIFY each, 10,550 without); a notification lost in a crash
 * costs only a wait for the next timed pass.
 */
static const struct db_stmt st_wake_after = {
    "sched_wake_after",
    /* the commit waits for the lock above: not forever behind a commit that hangs */
    "SELECT set_config('synchronous_commit', 'off', true), set_config('lock_timeout', '5s', true),"
    " pg_notify($1, $2)",
    2};
/* 0x61696463 = "aidc": the high half keeps clear of other users' advisory locks */
static const struct db_stmt st_lock = {
    "sched_lock", "SELECT pg_try_advisory_xact_lock(1634296931, $1::int)", 1};

/* Session-scoped: held while the worker's connection lives (leadership, db/worker.c) */
static const struct db_stmt st_lead = {
    "sched_lead", "SELECT pg_try_advisory_lock(1634296931, $1::int)", 1};
static const struct db_stmt st_unlead = {
    "sched_unlead", "SELECT pg_advisory_unlock(1634296931, $1::int)", 1};
/* A new dispatcher leader: deliveries its predecessor had claimed are due now
 * (it is gone: its lease would only delay them), and so is what waits on a backoff. */
static const struct db_stmt st_outbox_release = {
    "outbox_release",
    "UPDATE outbox SET next_attempt_at = now() WHERE delivered_at IS NULL AND next_attempt_at > now()",
    0};

/* ---- decisions ---------------------------------------------------------------------- */

/* An array's task only while its parent is still queued: the parent's row is
 * locked (FOR SHARE, against its cancel) and read again, so that no task is
 * admitted once its array's cancel has answered (migrations/0030). */
static const struct db_stmt st_admit = {
    "sched_admit",
    "WITH x AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::text[])"
    "             AS x(id, cluster, pre, idx)),"
    " a AS (SELECT p.id FROM jobs p WHERE p.state = 'queued' AND p.id IN (SELECT t.array_parent"
    "         FROM jobs t JOIN x ON t.id = x.id WHERE t.array_parent IS NOT NULL)"
    "       FOR SHARE OF p),"
    " u AS (UPDATE jobs j SET state = 'admitted', cluster_id = x.cluster, preemptible = x.pre,"
    "         gpu_indexes = x.idx::int[], admitted_at = now(), reason = NULL,"
    "         estimated_start = NULL, updated_at = now()"
    "       FROM x WHERE j.id = x.id AND j.state = 'queued'"
    "         AND (j.array_parent IS NULL OR j.array_parent IN (SELECT id FROM a))"
    "       RETURNING j.id, j.tenant_id, j.cluster_id, j.preemptible),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason, details)"
    "       SELECT u.id, u.tenant_id, 'queued', 'admitted',"
    "              CASE WHEN u.preemptible THEN 'borrowing idle GPUs (preemptible)'"
    "                   ELSE 'within quota' END,"
    "              json_build_object('cluster', c.name, 'preemptible', u.preemptible)"
    "         FROM u JOIN clusters c ON c.id = u.cluster_id),"
    " o AS (INSERT INTO outbox (job_id, tenant_id, cluster_id, action)"
    "       SELECT id, tenant_id, cluster_id, 'submit' FROM u)"
    " SELECT count(*), CASE WHEN count(*) > 0 THEN pg_notify('aidc_outbox', 'submit') END FROM u",
    4};
static const struct db_stmt st_preempt = {
    "sched_preempt",
    /* only for a job still queued (and a task's array too): one cancelled since the
     * pass read it - whose notice reaches the admitter after the pass - stops nobody */
    "WITH x AS (SELECT x.id, x.by, t.slug AS by_tenant"
    "             FROM unnest($1::uuid[], $2::uuid[]) AS x(id, by)"
    "             JOIN jobs b ON b.id = x.by JOIN tenants t ON t.id = b.tenant_id"
    "            WHERE b.state = 'queued' AND (b.array_parent IS NULL OR EXISTS (SELECT 1"
    "              FROM jobs p WHERE p.id = b.array_parent AND p.state = 'queued'))),"
    " u AS (UPDATE jobs j SET stop_requested = 'preempt', stop_requested_at = now(),"
    "         preempt_by = x.by, updated_at = now(),"
    "         reason = 'preemption requested by job ' || x.by || ' of tenant ' || x.by_tenant"
    "       FROM x WHERE j.id = x.id AND j.state IN " ACTIVE " AND j.stop_requested IS NULL"
    "       RETURNING j.id, j.tenant_id, j.cluster_id, j.state, x.by, x.by_tenant),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason, details)"
    "       SELECT id, tenant_id, state, state, 'preemption requested',"
    "              json_build_object('preempted_by_job', by, 'preempted_by_tenant', by_tenant,"
    "                                'grace_seconds', $3::int) FROM u),"
    " o AS (INSERT INTO outbox (job_id, tenant_id, cluster_id, action)"
    "       SELECT id, tenant_id, cluster_id, 'preempt' FROM u)"
    " SELECT count(*), CASE WHEN count(*) > 0 THEN pg_notify('aidc_outbox', 'preempt') END FROM u",
    3};
static const struct db_stmt st_waits = {
    "sched_waits",
    "UPDATE jobs j SET reason = x.r, estimated_start = to_timestamp(x.e), updated_at = now()"
    " FROM unnest($1::uuid[], $2::text[], $3::float8[]) AS x(id, r, e)"
    " WHERE j.id = x.id AND j.state = 'queued'",
    3};
static const struct db_stmt st_follow = {"sched_follow_queue", "SELECT aidc_jobs_follow_queue()",
                                         0};

/*
 * The marks that changed: those past the end of a queue go (each list of gone
 * positions is the tail of its GPU type's marks, sched/queuemarks.c, so one
 * cutoff per type deletes them), the rows of the others are written - in place
 * where their position has a mark, so that the update is HOT and a pass that
 * moves every mark leaves no dead rows for a vacuum (0036). Each mark reaches
 * its row through the unique index of (gpu_type, pos) (0043): no join of the
 * marks with queue_marks, whose policy the planner takes for a filter that
 * leaves almost nothing and so compared every mark with every other.
 */
static const struct db_stmt st_marks = {
    "sched_marks",
    "WITH d AS (DELETE FROM queue_marks m"
    "           USING (SELECT g, min(p) AS p FROM unnest($1::text[], $2::bigint[]) AS x(g, p)"
    "                  GROUP BY g) x"
    "           WHERE m.gpu_type = x.g AND m.pos >= x.p)"
    /* the epoch of extract() (numeric text) comes back to the same microsecond */
    " INSERT INTO queue_marks (gpu_type, pos, queue_rank, submitted_at, job_id)"
    " SELECT g, p, r, to_timestamp(t), i FROM unnest($3::text[], $4::bigint[], $5::smallint[],"
    "          $6::float8[], $7::uuid[]) AS x(g, p, r, t, i)"
    " ON CONFLICT (gpu_type, pos) DO UPDATE SET queue_rank = EXCLUDED.queue_rank,"
    "   submitted_at = EXCLUDED.submitted_at, job_id = EXCLUDED.job_id",
    7};

/* ---- outbox ------------------------------------------------------------------------- */

static const struct db_stmt st_claim = {
    "outbox_claim",
    "WITH c AS (SELECT o.id FROM outbox o"
    "            WHERE o.job_id IS NOT NULL AND o.delivered_at IS NULL"
    "              AND o.next_attempt_at <= now()"
    "              AND o.cluster_id <> ALL (coalesce($3::uuid[], '{}'))"
    "              AND o.id <> ALL (coalesce($4::bigint[], '{}'))"
    "              AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.job_id = o.job_id"
    "                               AND p.delivered_at IS NULL AND p.id < o.id)"
    "            ORDER BY o.id LIMIT $1::int FOR UPDATE SKIP LOCKED),"
    " u AS (UPDATE outbox o SET attempts = o.attempts + 1,"
    "         next_attempt_at = now() + $2::int * interval '1 second'"
    "       FROM c WHERE o.id = c.id RETURNING o.*)"
    " SELECT u.id, u.action, u.attempts, j.id, " RUN_KEY("j") ", j.state, j.stop_requested,"
    "  j.backend_job_id, t.slug, p.slug, j.username, j.name, coalesce(j.image_ref, j.image),"
    "  j.command::text, j.script,"
    "  j.env::text, j.gpus, j.gpu_type, j.cpus, j.memory_gib, j.nodes, j.time_limit_minutes,"
    "  j.preemptible, j.gpu_indexes::text, cl.id, cl.name, cl.kind, cl.endpoint,"
    "  cl.credentials_ref, cl.options::text, j.priority,"
    "  floor(extract(epoch FROM coalesce(j.admitted_at, now())))::bigint, j.image_digest,"
    "  j.image_tagged, t.number, reg.url, reg.credentials_ref, j.mounts::text,"
    "  j.kind = 'interactive',"
    /* a whole array (0022): one job array in the cluster */
    "  CASE WHEN j.array_hold > 0 THEN j.array_count ELSE 0 END,"
    "  CASE WHEN j.array_hold > 0 THEN j.array_max_parallel ELSE 0 END,"
    /* the dependencies Slurm keeps: on jobs in the same Slurm cluster, not ended */
    "  (SELECT string_agg(CASE d.condition WHEN 'succeeded' THEN 'afterok'"
    "                       WHEN 'failed' THEN 'afternotok' ELSE 'afterany' END"
    "                     || ':' || p.backend_job_id, ',' ORDER BY d.position)"
    "     FROM job_dependencies d JOIN jobs p ON p.id = d.peer_id"
    "    WHERE d.job_id = j.id AND cl.kind = 'slurm' AND p.cluster_id = j.cluster_id"
    "      AND p.backend_job_id IS NOT NULL AND p.state IN " ACTIVE ")"
    " FROM u JOIN jobs j ON j.id = u.job_id JOIN tenants t ON t.id = j.tenant_id"
    " JOIN projects p ON p.id = j.project_id JOIN clusters cl ON cl.id = u.cluster_id"
    " LEFT JOIN images i ON i.id = j.image_id LEFT JOIN registries reg ON reg.id = i.registry_id"
    " ORDER BY u.id",
    4};
enum {
    C_ID,
    C_ACTION,
    C_ATTEMPTS,
    C_JOB,
    C_RUN,
    C_STATE,
    C_STOP,
    C_BACKEND_ID,
    C_TENANT,
    C_PROJECT,
    C_USER,
    C_NAME,
    C_IMAGE,
    C_COMMAND,
    C_SCRIPT,
    C_ENV,
    C_GPUS,
    C_GPU_TYPE,
    C_CPUS,
    C_MEM,
    C_NODES,
    C_TIME,
    C_PREEMPTIBLE,
    C_INDEXES,
    C_CL_ID,
    C_CL_NAME,
    C_CL_KIND,
    C_CL_ENDPOINT,
    C_CL_CRED,
    C_CL_OPTIONS,
    C_PRIORITY,
    C_ADMITTED,
    C_IMAGE_DIGEST,
    C_IMAGE_TAGGED,
    C_TENANT_NUMBER,
    C_REGISTRY_URL,
    C_REGISTRY_CRED,
    C_MOUNTS,
    C_APP,
    C_ARRAY_COUNT,
    C_ARRAY_MAX,
    C_DEPENDENCY
};
static const struct db_stmt st_done = {
    "outbox_done", "UPDATE outbox SET delivered_at = now(), last_error = NULL WHERE id = $1::bigint",
    1};
static const struct db_stmt st_failed = {
    "outbox_failed",
    "WITH o AS (UPDATE outbox SET last_error = left($2, 1000),"
    "             next_attempt_at = now() + $3::int * interval '1 second'"
    "           WHERE id = $1::bigint RETURNING job_id, action)"
    /* a job the cluster has not taken yet says why it waits */
    " UPDATE jobs j SET reason = 'backend-unavailable', updated_at = now() FROM o"
    " WHERE j.id = o.job_id AND o.action = 'submit' AND j.state = 'admitted'"
    "   AND j.reason IS DISTINCT FROM 'backend-unavailable'",
    3};
static const struct db_stmt st_delivered = {
    "job_delivered",
    "WITH old AS (SELECT id, state FROM jobs WHERE id = $1::uuid AND state IN " ACTIVE
    "             FOR UPDATE),"
    " u AS (UPDATE jobs j SET backend_job_id = $2, updated_at = now(), reason = NULL,"
    "         state = CASE WHEN old.state = 'admitted' THEN 'pending' ELSE old.state END"
    "       FROM old WHERE j.id = old.id"
    "       RETURNING j.id, j.tenant_id, j.state, j.cluster_id, old.state AS was),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason, details)"
    "       SELECT u.id, u.tenant_id, u.was, u.state, 'handed to the cluster',"
    "              json_build_object('cluster', c.name, 'backend_job_id', $2)"
    "         FROM u JOIN clusters c ON c.id = u.cluster_id WHERE u.was = 'admitted')"
    /* a job waiting for this one may leave that to Slurm now (DB_SCHED_DEP_IN_SLURM): the
     * admitter looks at the whole queue, not only at the new jobs */
    " SELECT pg_notify('aidc_jobs', 'delivered') FROM u"
    "  WHERE EXISTS (SELECT 1 FROM job_dependencies d WHERE d.peer_id = u.id)",
    2};

/* ---- transitions -------------------------------------------------------------------- */

static const struct db_stmt st_sync_active = {
    "sched_active",
    "SELECT j.id, j.cluster_id, j.state, j.backend_job_id, " RUN_KEY("j") ", j.stop_requested"
    ", coalesce(j.array_hold, 0) > 0"
    " FROM jobs j WHERE j.state IN " ACTIVE " AND j.backend_job_id IS NOT NULL"
    " ORDER BY j.cluster_id, j.id",
    0};
enum { A_ID, A_CLUSTER, A_STATE, A_BACKEND_ID, A_RUN, A_STOP, A_WHOLE_ARRAY };
/* a job's stop request now, under the row's lock (it may have come after the round's snapshot) */
static const struct db_stmt st_stop_now = {
    "sched_stop_now", "SELECT stop_requested FROM jobs WHERE id = $1::uuid FOR UPDATE", 1};
/* pending or running; a run (metering, GPU-hour budgets) opens when it runs, and
 * closes when the cluster requeues it by itself (running -> pending) */
static const struct db_stmt st_to_active = {
    "job_to_active",
    "WITH u AS (UPDATE jobs SET state = $3, updated_at = now(),"
    "             started_at = CASE WHEN $3 = 'running'"
    "               THEN coalesce(started_at, to_timestamp($4::float8), now()) END,"
    "             reason = CASE WHEN stop_requested IS NULL THEN NULL ELSE reason END"
    "           WHERE id = $1::uuid AND state = $2"
    "           RETURNING id, tenant_id, project_id, gpus * nodes AS g, gpu_type,"
    "             cpus * nodes AS c, memory_gib * nodes AS m, started_at, cluster_id),"
    " r AS (INSERT INTO job_runs (job_id, tenant_id, project_id, gpus, gpu_type, cpus,"
    "         memory_gib, started_at, cluster_id)"
    "       SELECT id, tenant_id, project_id, g, gpu_type, c, m, started_at, cluster_id FROM u"
    "        WHERE $3 = 'running'),"
    " closed AS (UPDATE job_runs r SET ended_at = " RUN_END("now()") " FROM u"
    "            WHERE $2 = 'running' AND $3 = 'pending' AND r.job_id = u.id"
    "              AND r.ended_at IS NULL),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)"
    "       SELECT id, tenant_id, $2, $3, $5 FROM u)"
    " SELECT count(*) FROM u",
    5};
/* what a pending job waits for in its cluster (pulling its image): its reason, no event */
static const struct db_stmt st_pending_reason = {
    "job_pending_reason",
    "UPDATE jobs SET reason = $2, updated_at = now()"
    " WHERE id = $1::uuid AND state = 'pending' AND stop_requested IS NULL"
    "   AND reason IS DISTINCT FROM $2",
    2};
/* succeeded, failed or cancelled: the run closes (or is recorded whole when
 * the job started and ended between two looks) */
static const struct db_stmt st_to_final = {
    "job_to_final",
    "WITH u AS (UPDATE jobs SET state = $3, updated_at = now(),"
    "             finished_at = coalesce(to_timestamp($5::float8), now()),"
    "             started_at = coalesce(started_at, to_timestamp($4::float8)),"
    "             exit_code = $6::int, estimated_start = NULL,"
    "             reason = CASE WHEN $3 = 'cancelled' AND reason LIKE 'dependency\\_failed:%'"
    "                           THEN reason ELSE $7 END"
    "           WHERE id = $1::uuid AND state = $2"
    "           RETURNING id, tenant_id, project_id, gpus * nodes AS g, gpu_type,"
    "             cpus * nodes AS c, memory_gib * nodes AS m, started_at, finished_at, cluster_id),"
    " closed AS (UPDATE job_runs r SET ended_at = " RUN_END("u.finished_at")
    "            FROM u WHERE r.job_id = u.id AND r.ended_at IS NULL),"
    " whole AS (INSERT INTO job_runs (job_id, tenant_id, project_id, gpus, gpu_type, cpus,"
    "             memory_gib, started_at, ended_at, cluster_id)"
    "           SELECT id, tenant_id, project_id, g, gpu_type, c, m, started_at,"
    "                  greatest(started_at, finished_at), cluster_id FROM u"
    "            WHERE u.started_at IS NOT NULL AND NOT EXISTS"
    "              (SELECT 1 FROM job_runs r WHERE r.job_id = u.id AND r.ended_at IS NULL)),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason, details)"
    "       SELECT id, tenant_id, $2, $3, $7,"
    "              CASE WHEN $6::int IS NULL THEN '{}'::jsonb"
    "                   ELSE jsonb_build_object('exit_code', $6::int) END FROM u)"
    " SELECT count(*), CASE WHEN count(*) > 0 THEN pg_notify('aidc_jobs', 'end') END FROM u",
    7};
/* preempted: back to the queue, naming who took the GPUs (or the GPU fault that
 * stopped it) and how long it ran */
static const struct db_stmt st_requeue = {
    "job_requeue",
    "WITH info AS (SELECT j.id, j.tenant_id, j.preempt_by, t.slug AS by_tenant, j.checkpoint_at,"
    "                f.id AS fault, f.node, f.gpu_index, f.reason AS why,"
    "                coalesce(extract(epoch FROM coalesce(to_timestamp($3::float8), now())"
    "                                            - j.started_at)::bigint, 0) AS ran"
    "               FROM jobs j LEFT JOIN jobs b ON b.id = j.preempt_by"
    "               LEFT JOIN tenants t ON t.id = b.tenant_id"
    "               LEFT JOIN gpu_faults f ON f.id = j.preempt_fault"
    "              WHERE j.id = $1::uuid AND j.state = $2),"
    " u AS (UPDATE jobs j SET state = 'queued', preemption_count = j.preemption_count + 1,"
    "         cluster_id = NULL, backend_job_id = NULL, gpu_indexes = NULL,"
    "         stop_requested = NULL, stop_requested_at = NULL, preempt_by = NULL,"
    "         preempt_fault = NULL,"
    "         admitted_at = NULL, started_at = NULL, preemptible = false, exit_code = NULL,"
    "         checkpoint_at = NULL, updated_at = now(),"
    "         reason = CASE WHEN info.fault IS NULL THEN 'preempted' ELSE 'gpu-fault' END"
    "       FROM info WHERE j.id = info.id AND j.state = $2 RETURNING j.id),"
    /* a run a fault ended is a preempted run: its lost GPU time is credited alike */
    " closed AS (UPDATE job_runs r"
    "              SET ended_at = " RUN_END("coalesce(to_timestamp($3::float8), now())") ","
    "                  end_reason = 'preempted', checkpoint_at = info.checkpoint_at"
    "             FROM u JOIN info ON info.id = u.id"
    "            WHERE r.job_id = u.id AND r.ended_at IS NULL),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason, details)"
    "       SELECT info.id, info.tenant_id, $2, 'preempted',"
    "              CASE WHEN info.fault IS NOT NULL"
    "                THEN 'GPU fault on node ' || info.node"
    "                     || coalesce(' (GPU ' || info.gpu_index || ')', ' (all GPUs)')"
    "                     || ': ' || info.why || ', after running ' || info.ran || ' s'"
    "                ELSE 'preempted by job ' || coalesce(info.preempt_by::text, 'unknown')"
    "                     || ' of tenant ' || coalesce(info.by_tenant, 'unknown')"
    "                     || ' after running ' || info.ran || ' s' END,"
    "              CASE WHEN info.fault IS NOT NULL"
    "                THEN jsonb_build_object('gpu_fault', jsonb_build_object('id', info.fault,"
    "                       'node', info.node, 'gpu', info.gpu_index, 'reason', info.why),"
    "                       'ran_seconds', info.ran)"
    "                ELSE jsonb_build_object('preempted_by_job', info.preempt_by,"
    "                                 'preempted_by_tenant', info.by_tenant,"
    "                                 'ran_seconds', info.ran) END"
    "         FROM info JOIN u ON u.id = info.id"
    "       UNION ALL"
    "       SELECT info.id, info.tenant_id, 'preempted', 'queued',"
    "              CASE WHEN info.fault IS NOT NULL"
    "                THEN 'requeued after a GPU fault on node ' || info.node"
    "                ELSE coalesce($4, 'requeued') END,"
    "              '{}'::jsonb FROM info JOIN u ON u.id = info.id)"
    " SELECT count(*), CASE WHEN count(*) > 0 THEN pg_notify('aidc_jobs', 'requeue') END FROM u",
    4};

const struct db_stmt *const db_sched_stmts[] = {&st_notify_jobs,
                                                &st_wake_after,
                                                &st_notify_outbox,
                                                &st_notify_sync,
                                                &st_notify_registries,
                                                &st_lock,
                                                &st_admit,
                                                &st_preempt,
                                                &st_waits,
                                                &st_follow,
                                                &st_claim,
                                                &st_done,
                                                &st_failed,
                                                &st_delivered,
                                                &st_sync_active,
                                                &st_pending_reason,
                                                &st_to_active,
                                                &st_to_final,
                                                &st_requeue,
                                                &st_marks,
                                                &st_stop_now,
                                                &st_lead,
                                                &st_outbox_release,
                                                &st_unlead,
                                                NULL};

int db_sched_wake(struct db *db, const char *channel)
{
    const struct db_stmt *st = strcmp(channel, "aidc_outbox") == 0 ? &st_notify_outbox
                               : strcmp(channel, "aidc_sync") == 0 ? &st_notify_sync
                               : strcmp(channel, "aidc_registries") == 0 ? &st_notify_registries
                                                                         : &st_notify_jobs;
    return db_queue(db, st, NULL);
}

int db_sched_wake_after(struct db *db, const char *channel, const char *payload)
{
    const char *p[2] = {channel, payload};
    return db_exec(db, &st_wake_after, p);
}

int db_sched_lock(struct db *db, int which, bool *got)
{
    char key[16];
    snprintf(key, sizeof key, "%d", which);
    const char *p[1] = {key};
    int e;
    PGresult *r = db_query(db, &st_lock, p, &e);
    if (!r)
        return e;
    *got = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return 0;
}

int db_sched_lead(struct db *db, int key, bool *got)
{
    char k[16];
    snprintf(k, sizeof k, "%d", key);
    const char *p[1] = {k};
    int e;
    *got = false;
    PGresult *r = db_query(db, &st_lead, p, &e);
    if (!r)
        return e;
    *got = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return 0;
}

int db_sched_unlead(struct db *db, int key)
{
    char k[16];
    snprintf(k, sizeof k, "%d", key);
    const char *p[1] = {k};
    return db_exec(db, &st_unlead, p);
}

int db_outbox_release(struct db *db)
{
    return db_exec(db, &st_outbox_release, NULL);
}

/* Run a counting statement: *count from its first column. */
static int counted(struct db *db, const struct db_stmt *st, const char *const *p, long *count)
{
    int e;
    PGresult *r = db_query(db, st, p, &e);
    if (!r)
        return e;
    if (count)
        *count = PQntuples(r) ? strtol(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    return 0;
}

int db_sched_admit(struct db *db, const char *ids, const char *clusters, const char *preemptible,
                   const char *gpu_indexes, long *count)
{
    const char *p[4] = {ids, clusters, preemptible, gpu_indexes};
    return counted(db, &st_admit, p, count);
}

int db_sched_preempt(struct db *db, const char *ids, const char *for_ids, int grace_seconds,
                     long *count)
{
    char grace[16];
    snprintf(grace, sizeof grace, "%d", grace_seconds);
    const char *p[3] = {ids, for_ids, grace};
    return counted(db, &st_preempt, p, count);
}

int db_sched_waits(struct db *db, const char *ids, const char *reasons, const char *estimates)
{
    const char *p[3] = {ids, reasons, estimates};
    return db_exec(db, &st_waits, p);
}

int db_sched_follow_queue(struct db *db, enum db_follow *found)
{
    int e;
    *found = DB_FOLLOW_KNOWN;
    PGresult *r = db_query(db, &st_follow, NULL, &e);
    if (!r)
        return e;
    if (PQgetisnull(r, 0, 0))
        *found = DB_FOLLOW_BUSY;
    else if (PQgetvalue(r, 0, 0)[0] == 't')
        *found = DB_FOLLOW_ANALYZED;
    PQclear(r);
    return 0;
}

int db_sched_marks(struct db *db, const char *gone_types, const char *gone_positions,
                   const char *types, const char *positions, const char *ranks,
                   const char *submitted, const char *ids)
{
    const char *p[7] = {gone_types, gone_positions, types, positions, ranks, submitted, ids};
    return db_exec(db, &st_marks, p);
}

static void read_claim(struct rowreader *rd, void *row)
{
    struct db_outbox_job *j = row;
    j->id = rowreader_ll(rd, C_ID);
    j->action = rowreader_text0(rd, C_ACTION);
    j->attempts = rowreader_int(rd, C_ATTEMPTS);
    rowreader_uuid(rd, C_JOB, j->job_id);
    j->run_key = rowreader_text0(rd, C_RUN);
    j->state = rowreader_text0(rd, C_STATE);
    j->stop = rowreader_text(rd, C_STOP);
    j->backend_job_id = rowreader_text(rd, C_BACKEND_ID);
    j->tenant = rowreader_text0(rd, C_TENANT);
    j->project = rowreader_text0(rd, C_PROJECT);
    j->user = rowreader_text0(rd, C_USER);
    j->name = rowreader_text0(rd, C_NAME);
    j->image = rowreader_text(rd, C_IMAGE);
    j->command = rowreader_text(rd, C_COMMAND);
    j->script = rowreader_text(rd, C_SCRIPT);
    j->env = rowreader_text0(rd, C_ENV);
    j->gpus = rowreader_int(rd, C_GPUS);
    j->gpu_type = rowreader_text(rd, C_GPU_TYPE);
    j->cpus = rowreader_int(rd, C_CPUS);
    j->memory_gib = rowreader_int(rd, C_MEM);
    j->nodes = rowreader_int(rd, C_NODES);
    j->time_limit_minutes = rowreader_int(rd, C_TIME);
    j->preemptible = rowreader_bool(rd, C_PREEMPTIBLE);
    j->gpu_indexes = rowreader_ints(rd, C_INDEXES, &j->ngpu_indexes);
    rowreader_outbox_cluster(rd, C_CL_ID, &j->cluster);
    j->priority = rowreader_text0(rd, C_PRIORITY);
    j->admitted_at = rowreader_ll(rd, C_ADMITTED);
    j->image_digest = rowreader_text(rd, C_IMAGE_DIGEST);
    j->image_tagged = rowreader_text(rd, C_IMAGE_TAGGED);
    j->tenant_number = rowreader_ll(rd, C_TENANT_NUMBER);
    j->registry_url = rowreader_text(rd, C_REGISTRY_URL);
    j->registry_credentials_ref = rowreader_text(rd, C_REGISTRY_CRED);
    j->mounts = rowreader_text0(rd, C_MOUNTS);
    j->app = rowreader_bool(rd, C_APP);
    j->array_count = rowreader_int(rd, C_ARRAY_COUNT);
    j->array_max_parallel = rowreader_int(rd, C_ARRAY_MAX);
    j->dependency = rowreader_text(rd, C_DEPENDENCY);
}

int db_outbox_claim(struct db *db, int limit, int lease_seconds, const char *skip_clusters,
                    const char *skip_ids, struct db_outbox_jobs *out)
{
    char lim[16], lease[16];
    snprintf(lim, sizeof lim, "%d", limit);
    snprintf(lease, sizeof lease, "%d", lease_seconds);
    const char *p[4] = {lim, lease, skip_clusters, skip_ids};
    memset(out, 0, sizeof *out);
    int e = 0;
    PGresult *r = db_query(db, &st_claim, p, &e);
    if (!r)
        return e;
    void *v = NULL;
    e = rowreader_all(r, sizeof *out->v, read_claim, &v, &out->n, &out->strings, st_claim.name);
    out->v = v;
    PQclear(r);
    return e;
}

void db_outbox_jobs_free(struct db_outbox_jobs *rows)
{
    free(rows->v);
    db_strings_free(rows->strings);
    memset(rows, 0, sizeof *rows);
}

int db_outbox_done(struct db *db, long long outbox_id)
{
    char id[24];
    snprintf(id, sizeof id, "%lld", outbox_id);
    const char *p[1] = {id};
    return db_exec(db, &st_done, p);
}

int db_outbox_failed(struct db *db, long long outbox_id, const char *error, int delay_seconds)
{
    char id[24], delay[16];
    snprintf(id, sizeof id, "%lld", outbox_id);
    snprintf(delay, sizeof delay, "%d", delay_seconds);
    const char *p[3] = {id, error, delay};
    return db_exec(db, &st_failed, p);
}

int db_job_delivered(struct db *db, const char *job_id, const char *backend_job_id)
{
    const char *p[2] = {job_id, backend_job_id};
    return db_exec(db, &st_delivered, p);
}

int db_sched_stop_now(struct db *db, const char *job_id, char *stop, size_t n)
{
    const char *p[1] = {job_id};
    int e = 0;
    PGresult *r = db_query(db, &st_stop_now, p, &e);
    if (!r)
        return e;
    snprintf(stop, n, "%s", PQntuples(r) && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return 0;
}

static void read_active(struct rowreader *rd, void *row)
{
    struct db_active_job *j = row;
    rowreader_uuid(rd, A_ID, j->id);
    rowreader_uuid(rd, A_CLUSTER, j->cluster_id);
    j->state = rowreader_text0(rd, A_STATE);
    j->backend_job_id = rowreader_text0(rd, A_BACKEND_ID);
    j->run_key = rowreader_text0(rd, A_RUN);
    j->stop = rowreader_text(rd, A_STOP);
    j->whole_array = rowreader_bool(rd, A_WHOLE_ARRAY);
}

int db_sched_active(struct db *db, struct db_active_jobs *out)
{
    memset(out, 0, sizeof *out);
    int e = 0;
    PGresult *r = db_query(db, &st_sync_active, NULL, &e);
    if (!r)
        return e;
    void *v = NULL;
    e = rowreader_all(r, sizeof *out->v, read_active, &v, &out->n, &out->strings,
                      st_sync_active.name);
    out->v = v;
    PQclear(r);
    return e;
}

void db_active_jobs_free(struct db_active_jobs *rows)
{
    free(rows->v);
    db_strings_free(rows->strings);
    memset(rows, 0, sizeof *rows);
}

int db_job_pending_reason(struct db *db, const char *job_id, const char *reason)
{
    const char *p[2] = {job_id, reason};
    return counted(db, &st_pending_reason, p, NULL);
}

int db_job_transition(struct db *db, const struct db_transition *t, bool *changed)
{
    char started[32] = "", finished[32] = "", code[16] = "";
    if (t->started_at > 0)
        snprintf(started, sizeof started, "%.3f", t->started_at);
    if (t->finished_at > 0)
        snprintf(finished, sizeof finished, "%.3f", t->finished_at);
    if (t->exit_code >= 0)
        snprintf(code, sizeof code, "%d", t->exit_code);
    const char *st = started[0] ? started : NULL, *fin = finished[0] ? finished : NULL;
    long n = 0;
    int e;
    if (strcmp(t->to, "pending") == 0 || strcmp(t->to, "running") == 0) {
        const char *p[5] = {t->job_id, t->from, t->to, st, t->reason};
        e = counted(db, &st_to_active, p, &n);
    } else if (strcmp(t->to, "queued") == 0) {
        const char *p[4] = {t->job_id, t->from, fin, t->reason};
        e = counted(db, &st_requeue, p, &n);
    } else {
        const char *p[7] = {t->job_id, t->from, t->to, st, fin, code[0] ? code : NULL, t->reason};
        e = counted(db, &st_to_final, p, &n);
    }
    if (changed)
        *changed = n > 0;
    return e;
}
