/* jobs.c - jobs for the API (see jobs.h). */
#include "jobs.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "jobarrays.h"
#include "rowjson.h"
#include "schedrows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * How long a job waited (until it started, ended unstarted, or now) and has
 * run (until it ended, or now): whole seconds, as sacct shows them, never
 * below 0 (a backend's start time without a fraction can precede the submit's).
 */
#define JOB_WAIT_AT(J, NOW)                                                                       \
    "extract(epoch FROM coalesce(" J ".started_at, " J ".finished_at, " NOW ") - " J ".submitted_at)"
#define JOB_RUN_AT(J, NOW) "extract(epoch FROM coalesce(" J ".finished_at, " NOW ") - " J ".started_at)"
#define JOB_TIMES                                                                                 \
    " greatest(0, floor(" JOB_WAIT_AT("j", "now()") "))::bigint AS wait_seconds,"               \
    " CASE WHEN j.started_at IS NOT NULL"                                                      \
    "   THEN greatest(0, floor(" JOB_RUN_AT("j", "now()") "))::bigint END AS run_seconds"

/*
 * The job object of API.md (plus explanations of the queue); POS is how the
 * row finds its place in the queue, CLUSTER, EFF and ARRAY_COLS its cluster's
 * name, its efficiency and its array and dependency fields.
 */
#define JOB_COLS_OF(POS, CLUSTER, EFF, ARRAY_COLS)                                                 \
    "j.id, t.slug AS tenant, p.slug AS project, j.username AS \"user\", j.name, j.state,"          \
    " j.reason, j.priority, j.preemptible, " CLUSTER " AS cluster, j.backend_job_id,"              \
    " json_build_object('gpus', j.gpus, 'gpu_type', j.gpu_type, 'cpus', j.cpus,"                   \
    "   'memory_gib', j.memory_gib, 'nodes', j.nodes, 'time_limit_minutes',"                       \
    "   j.time_limit_minutes) AS resources,"                                                       \
    " j.image, j.image_digest, j.command, j.script, j.env, j.submitted_at, j.admitted_at,"         \
    " j.started_at, j.finished_at, j.exit_code, j.preemption_count,"                               \
    " CASE WHEN j.state = 'queued' THEN " POS " END AS queue_position,"                            \
    " j.estimated_start, j.stop_requested, to_json(j.gpu_indexes) AS gpu_indexes, j.mounts,"       \
    " j.kind, " EFF " AS efficiency," ARRAY_COLS "," JOB_TIMES
#define JOB_COLS_AT(POS)                                                                           \
    JOB_COLS_OF(POS, "(SELECT name FROM clusters WHERE id = j.cluster_id)",                        \
                "aidc_job_efficiency(j.id)", DB_JOBARRAY_COLS)
/*
 * A job just inserted has no cluster, no efficiency, no array and no
 * dependencies yet (an array or a dependency is recorded after the insert,
 * and its job read again: api_jobarray_record): constants, where every
 * subquery and function call would be set up and run for a known answer
 * (aidc_job_efficiency alone: 100 us a call in a burst of submits). The
 * efficiency is what aidc_job_efficiency answers for a job without figures.
 */
#define JOB_NO_EFFICIENCY                                                                          \
    "json_build_object('gpu_util_avg', NULL, 'gpu_util_peak', NULL, 'gpu_mem_peak_gib', NULL,"     \
    " 'cpu_efficiency', NULL, 'mem_peak_gib', NULL, 'mem_efficiency', NULL)"
#define JOB_COLS_NEW(POS)                                                                          \
    JOB_COLS_OF(POS, "NULL::text", JOB_NO_EFFICIENCY,                                              \
                " j.array_parent, j.array_index, NULL::json AS \"array\","                         \
                " NULL::json AS array_tasks, '[]'::json AS depends_on")
#define JOB_COLS JOB_COLS_AT("aidc_queue_position(j.id)")

static const struct db_stmt st_insert = {
    "job_insert",
    "WITH p AS (SELECT id FROM projects WHERE tenant_id = $1::uuid AND slug = $2"
    "             AND deleted_at IS NULL),"
    " j AS (INSERT INTO jobs (tenant_id, project_id, user_id, username, name, priority,"
    "         requested_cluster, gpus, gpu_type, cpus, memory_gib, nodes, time_limit_minutes,"
    "         image, command, script, env, reason, image_id, image_digest, image_ref,"
    "         image_tagged, mounts, kind)"
    "       SELECT $1::uuid, p.id, $3::uuid, $4, $5, $6, $7::uuid, $8::int, $9, $10::int,"
    "         $11::int, $12::int, $13::int, $14, $15::jsonb, $16, $17::jsonb, 'submitted',"
    "         $18::uuid, $19, $20, $21, $22::jsonb, coalesce($23, 'batch') FROM p"
    "       RETURNING *),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)"
    "       SELECT id, tenant_id, NULL, 'queued', 'submitted' FROM j RETURNING 1)"
    /* no NOTIFY here: the caller wakes the admitter after the commit (server/waker.h) */
    /* the new row is not visible to the statement that inserts it; its position is
     * counted at most 300 jobs past the nearest mark (0044): a burst that outran
     * the admitter made every answer count its whole backlog */
    " SELECT " JOB_COLS_NEW("aidc_queue_position_at(j.gpu_type, j.queue_rank, j.submitted_at,"
                            " j.id, 300)") ", t.number AS _tenant_number"
    " FROM j JOIN tenants t ON t.id = j.tenant_id JOIN projects p ON p.id = j.project_id",
    23};
static const struct db_stmt st_get = {
    "job_get",
    "SELECT " JOB_COLS " FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
    " JOIN projects p ON p.id = j.project_id WHERE j.tenant_id = $1::uuid AND j.id = $2::uuid",
    2};
#define JOB_FROM                                                                                  \
    " FROM jobs j JOIN tenants t ON t.id = j.tenant_id JOIN projects p ON p.id = j.project_id"
/*
 * The filters of a list ($1..$15, see db_job_list); NULL parameters pass all
 * but $15: an array's tasks are listed by their parent (?array_parent=), not
 * among all jobs.
 */
#define JOB_FILTERS                                                                               \
    " WHERE j.tenant_id = $1::uuid AND ($2::text[] IS NULL OR j.state = ANY ($2::text[]))"       \
    " AND ($3::text IS NULL OR p.slug = $3) AND ($4::text IS NULL OR j.username = $4)"           \
    " AND ($5::text IS NULL OR j.cluster_id = (SELECT id FROM clusters WHERE name = $5))"        \
    " AND ($6::text IS NULL OR j.gpu_type = $6) AND ($7::text IS NULL OR j.name ILIKE $7)"       \
    " AND ($8::int IS NULL OR j.exit_code = $8::int)"                                            \
    " AND ($9::timestamptz IS NULL OR j.submitted_at >= $9::timestamptz)"                        \
    " AND ($10::timestamptz IS NULL OR j.submitted_at < $10::timestamptz)"                       \
    " AND ($11::timestamptz IS NULL OR j.started_at >= $11::timestamptz)"                        \
    " AND ($12::timestamptz IS NULL OR j.started_at < $12::timestamptz)"                         \
    " AND ($13::timestamptz IS NULL OR j.finished_at >= $13::timestamptz)"                       \
    " AND ($14::timestamptz IS NULL OR j.finished_at < $14::timestamptz)"                        \
    " AND CASE WHEN $15::uuid IS NULL THEN j.array_parent IS NULL"                               \
    "     ELSE j.array_parent = $15::uuid END"
/* newest (or oldest) first: the order jobs_tenant_list keeps, so an index scan */
#define JOB_LIST_BY_SUBMIT(NAME, CMP, DIR)                                                        \
    {NAME,                                                                                        \
     "SELECT " JOB_COLS ", j.submitted_at::text || '|' || j.id AS _cursor" JOB_FROM JOB_FILTERS      \
     " AND ($16::timestamptz IS NULL OR (j.submitted_at, j.id) " CMP                              \
     " ($16::timestamptz, $17::uuid))"                                                            \
     " ORDER BY j.submitted_at " DIR ", j.id " DIR " LIMIT $18::int + 1",                         \
     18}
static const struct db_stmt st_list = JOB_LIST_BY_SUBMIT("job_list", "<", "DESC");
static const struct db_stmt st_list_asc = JOB_LIST_BY_SUBMIT("job_list_asc", ">", "ASC");
/*
 * Any other order ($19): one numeric key, negated for descending ($20 false),
 * with the jobs that lack it (Infinity) last either way; ties by id. Waits
 * and runs still going are measured to the first page's now, which the
 * cursor carries ("key@now"), so that later pages see the same order.
 */
static const struct db_stmt st_list_sorted = {
    "job_list_sorted",
    "WITH ref AS (SELECT coalesce(nullif(split_part($16, '@', 2), '')::timestamptz, now()) AS now)"
    " SELECT " JOB_COLS ", s.k::text || '@' || ref.now::text || '|' || j.id AS _cursor" JOB_FROM
    " CROSS JOIN ref CROSS JOIN LATERAL (SELECT coalesce(CASE WHEN $20::bool THEN x.v ELSE -x.v"
    "   END, 'Infinity'::numeric) AS k FROM (SELECT CASE $19::text"
    "     WHEN 'started' THEN extract(epoch FROM j.started_at)"
    "     WHEN 'ended' THEN extract(epoch FROM j.finished_at)"
    "     WHEN 'wait' THEN " JOB_WAIT_AT("j", "ref.now") " WHEN 'runtime' THEN "
    JOB_RUN_AT("j", "ref.now") " END AS v) x) s" JOB_FILTERS
    " AND ($16::text IS NULL OR (s.k, j.id) > (split_part($16, '@', 1)::numeric, $17::uuid))"
    " ORDER BY s.k, j.id LIMIT $18::int + 1",
    20};
static const struct db_stmt st_events = {
    "job_events",
    "SELECT e.ts, e.from_state AS \"from\", e.to_state AS \"to\", e.reason, e.details,"
    " e.id::text AS _cursor FROM job_events e"
    " WHERE e.tenant_id = $1::uuid AND e.job_id = $2::uuid"
    " AND ($3::bigint IS NULL OR e.id > $3::bigint) ORDER BY e.id LIMIT $4::int + 1",
    4};
/* A queued job ends here; one in a backend is asked to stop (the syncer sees
 * it end). A job already asked to stop is left as it is. */
static const struct db_stmt st_cancel = {
    "job_cancel",
    "WITH old AS (SELECT id, state, stop_requested, cluster_id, tenant_id FROM jobs"
    "               WHERE tenant_id = $1::uuid AND id = $2::uuid FOR UPDATE),"
    " q AS (UPDATE jobs j SET state = 'cancelled', finished_at = now(), updated_at = now(),"
    "         reason = 'cancelled by ' || $3, estimated_start = NULL"
    "       FROM old WHERE j.id = old.id AND old.state = 'queued' RETURNING j.id),"
    " s AS (UPDATE jobs j SET stop_requested = 'cancel', stop_requested_at = now(),"
    "         updated_at = now(), reason = 'cancel requested by ' || $3"
    "       FROM old WHERE j.id = old.id AND old.state IN ('admitted', 'pending', 'running')"
    "         AND old.stop_requested IS DISTINCT FROM 'cancel' RETURNING j.id),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)"
    "       SELECT old.id, old.tenant_id, old.state,"
    "              CASE WHEN old.state = 'queued' THEN 'cancelled' ELSE old.state END,"
    "              CASE WHEN old.state = 'queued' THEN 'cancelled by ' || $3"
    "                   ELSE 'cancel requested by ' || $3 END"
    "       FROM old WHERE EXISTS (SELECT 1 FROM q) OR EXISTS (SELECT 1 FROM s) RETURNING 1),"
    " o AS (INSERT INTO outbox (job_id, tenant_id, cluster_id, action)"
    "       SELECT old.id, old.tenant_id, old.cluster_id, 'cancel' FROM old"
    "       WHERE EXISTS (SELECT 1 FROM s) AND old.cluster_id IS NOT NULL),"
    " n AS (SELECT pg_notify('aidc_outbox', 'cancel'), pg_notify('aidc_jobs', 'cancel'))"
    " SELECT old.state FROM old, n",
    3};
static const struct db_stmt st_placement = {
    "job_placement",
    "SELECT j.username, j.state, c.id, c.kind, c.options::text, " RUN_KEY("j")
    " FROM jobs j LEFT JOIN clusters c ON c.id = j.cluster_id"
    " WHERE j.tenant_id = $1::uuid AND j.id = $2::uuid",
    2};

/* Jobs not yet ended, oldest first (a tenant's deletion cancels each). */
static const struct db_stmt st_active = {
    "job_active",
    "SELECT id FROM jobs WHERE tenant_id = $1::uuid"
    " AND state IN ('queued', 'admitted', 'pending', 'running') ORDER BY submitted_at, id",
    1};

const struct db_stmt *const db_jobs_stmts[] = {
    &st_insert, &st_get,    &st_list,      &st_list_asc, &st_list_sorted,
    &st_events, &st_cancel, &st_placement, &st_active,   NULL};

int db_job_insert(struct db *db, const struct db_job_new *j, json_t **out,
                  long long *tenant_number)
{
    char gpus[16], cpus[16], mem[16], nodes[16], tl[16];
    snprintf(gpus, sizeof gpus, "%d", j->gpus);
    snprintf(cpus, sizeof cpus, "%d", j->cpus);
    snprintf(mem, sizeof mem, "%d", j->memory_gib);
    snprintf(nodes, sizeof nodes, "%d", j->nodes);
    snprintf(tl, sizeof tl, "%d", j->time_limit_minutes);
    const char *p[23] = {j->tenant_id,  j->project_slug, j->user_id,     j->username,
                         j->name,       j->priority,     j->requested_cluster, gpus,
                         j->gpu_type,   cpus,            mem,            nodes,
                         tl,            j->image,        j->command_json, j->script,
                         j->env_json,   j->image_id,     j->image_digest, j->image_ref,
                         j->image_tagged, j->mounts_json ? j->mounts_json : "[]", j->kind};
    int e;
    PGresult *r = db_query(db, &st_insert, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    const char *number = rowjson_get(r, 0, "_tenant_number");
    *tenant_number = number ? strtoll(number, NULL, 10) : -1;
    *out = rowjson_object(r, 0);
    PQclear(r);
    return *out ? 0 : AIDC_EINTERNAL;
}

int db_job_get(struct db *db, const char *tenant_id, const char *id, json_t **out)
{
    const char *p[2] = {tenant_id, id};
    return rowjson_query_one(db, &st_get, p, out);
}

int db_job_list(struct db *db, const char *tenant_id, const struct db_job_filter *f,
                const char *after_key, const char *after_id, int limit, struct db_rows *out)
{
    static const char *const sorts[] = {"submitted", "started", "ended", "wait", "runtime"};
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[20] = {tenant_id,         f->states,       f->project,      f->user,
                         f->cluster,        f->gpu_type,     f->name_like,    f->exit_code,
                         f->submitted_from, f->submitted_to, f->started_from, f->started_to,
                         f->ended_from,     f->ended_to,     f->array_parent, after_key,
                         after_id,          lim,             sorts[f->sort],  f->ascending ? "true" : "false"};
    const struct db_stmt *st = &st_list_sorted;
    if (f->sort == DB_JOB_SORT_SUBMITTED)
        st = f->ascending ? &st_list_asc : &st_list;
    return rowjson_query_rows(db, st, p, false, out);
}

int db_job_events(struct db *db, const char *tenant_id, const char *id, const char *after,
                  int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[4] = {tenant_id, id, after, lim};
    return rowjson_query_rows(db, &st_events, p, false, out);
}

int db_job_cancel(struct db *db, const char *tenant_id, const char *id, const char *by,
                  char *state, size_t statesz, json_t **out)
{
    const char *p[3] = {tenant_id, id, by};
    int e;
    PGresult *r = db_query(db, &st_cancel, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    snprintf(state, statesz, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
        strcmp(state, "cancelled") == 0)
        return AIDC_ECONFLICT;
    return db_job_get(db, tenant_id, id, out);
}

int db_job_active(struct db *db, const char *tenant_id, struct db_job_ids *out)
{
    const char *p[1] = {tenant_id};
    int e;
    memset(out, 0, sizeof *out);
    PGresult *r = db_query(db, &st_active, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; i < n; i++)
        snprintf(out->v[i], sizeof out->v[i], "%s", PQgetvalue(r, i, 0));
    out->n = (size_t)n;
    PQclear(r);
    return 0;
}

void db_job_ids_free(struct db_job_ids *ids)
{
    free(ids->v);
    ids->v = NULL;
    ids->n = 0;
}

int db_job_placement(struct db *db, const char *tenant_id, const char *id,
                     struct db_job_placement *out)
{
    const char *p[2] = {tenant_id, id};
    int e;
    PGresult *r = db_query(db, &st_placement, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    memset(out, 0, sizeof *out);
    snprintf(out->user, sizeof out->user, "%s", PQgetvalue(r, 0, 0));
    snprintf(out->state, sizeof out->state, "%s", PQgetvalue(r, 0, 1));
    snprintf(out->cluster_id, sizeof out->cluster_id, "%s", PQgetvalue(r, 0, 2));
    snprintf(out->kind, sizeof out->kind, "%s", PQgetvalue(r, 0, 3));
    snprintf(out->run_key, sizeof out->run_key, "%s", PQgetvalue(r, 0, 5));
    out->options_json = PQgetisnull(r, 0, 4) ? NULL : xstrdup(PQgetvalue(r, 0, 4));
    PQclear(r);
    return 0;
}
