/* allocations.c - allocation requests and their comments (see allocations.h). */
#include "allocations.h"

#include "../lib/err.h"
#include "pgcol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TODAY "(now() AT TIME ZONE 'UTC')::date"
/* a period's bounds as instants: the start of starts_on to the end of ends_on, UTC */
#define PERIOD_FROM "(a.starts_on::timestamp AT TIME ZONE 'UTC')"
#define PERIOD_TO   "((a.ends_on + 1)::timestamp AT TIME ZONE 'UTC')"
#define USED        "round(aidc_allocation_used(a.project_id, " PERIOD_FROM ", " PERIOD_TO "), 3)::float8"
#define STATE                                                                                      \
    "CASE WHEN a.state = 'approved' AND a.ends_on < " TODAY " THEN 'expired' ELSE a.state END"

/* The columns of a request; $N of the statement is the notice window in days. */
#define ALLOC_COLS(N)                                                                              \
    "a.id, t.slug AS tenant, p.slug AS project, p.pi_username AS pi, " STATE " AS state,"          \
    " a.requested_by_name AS requested_by, a.resources, a.gpu_hours::float8 AS gpu_hours,"         \
    " a.storage_gib::float8 AS storage_gib, a.starts_on::text AS starts_on,"                       \
    " a.ends_on::text AS ends_on, a.justification, a.funding_ref, a.renews,"                       \
    " CASE WHEN a.state = 'approved' THEN json_build_object('resources', a.approved_resources,"    \
    "   'gpu_hours', a.approved_gpu_hours::float8, 'storage_gib', a.approved_storage_gib::float8)" \
    " END AS approved, a.decided_by_name AS decided_by, a.decided_at, a.reason,"                   \
    " json_build_object('gpu_hours_used', " USED ") AS usage,"                                     \
    " CASE WHEN a.state = 'approved' AND a.ends_on >= " TODAY " AND a.ends_on - " TODAY            \
    "   <= $" #N "::int THEN a.ends_on - " TODAY " END AS expires_in_days,"                        \
    " a.created_at, a.updated_at"
#define ALLOC_FROM                                                                                 \
    " FROM allocation_requests a JOIN projects p ON p.id = a.project_id"                           \
    " JOIN tenants t ON t.id = a.tenant_id"

static const struct db_stmt st_project = {
    "alloc_project",
    "SELECT id, pi_user_id IS NOT DISTINCT FROM $3::uuid FROM projects"
    " WHERE tenant_id = $1::uuid AND slug = $2 AND deleted_at IS NULL",
    3};
enum { PR_ID, PR_IS_PI };

static const struct db_stmt st_insert = {
    "alloc_insert",
    "INSERT INTO allocation_requests (tenant_id, project_id, requested_by, requested_by_name,"
    " resources, gpu_hours, storage_gib, starts_on, ends_on, justification, funding_ref, renews)"
    " VALUES ($1::uuid, $2::uuid, $3::uuid, (SELECT username FROM users WHERE id = $3::uuid),"
    " $4::jsonb, $5::numeric, $6::numeric, $7::date, $8::date, $9, coalesce($10, ''), $11::uuid)"
    " RETURNING id::text",
    11};

static const struct db_stmt st_of_project = {
    "alloc_of_project",
    "SELECT 1 FROM allocation_requests WHERE id = $1::uuid AND project_id = $2::uuid", 2};

static const struct db_stmt st_get = {
    "alloc_get",
    "SELECT " ALLOC_COLS(
        3) ", (SELECT coalesce(json_agg(json_build_object('id', c.id,"
           "   'author', c.author_name, 'kind', c.kind, 'text', c.text, 'created_at',"
           "   to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))"
           "   ORDER BY c.created_at, c.id), '[]') FROM allocation_comments c"
           "   WHERE c.request_id = a.id) AS comments" ALLOC_FROM
           " WHERE ($1::uuid IS NULL OR a.tenant_id = $1::uuid) AND a.id = $2::uuid",
    3};

/* $1 tenant (NULL: all, oldest first), $2 state, $3 project slug, $4/$5 cursor, $6 limit */
static const struct db_stmt st_list = {
    "alloc_list",
    "SELECT * FROM (SELECT " ALLOC_COLS(
        7) ", a.created_at::text || '|' || a.id AS _cursor" ALLOC_FROM
           " WHERE ($1::uuid IS NULL OR a.tenant_id = $1::uuid)"
           " AND ($3::text IS NULL OR p.slug = $3)"
           " AND ($2::text IS NULL OR " STATE " = $2)"
           " AND ($4::timestamptz IS NULL OR CASE WHEN $1::uuid IS NULL"
           "      THEN (a.created_at, a.id) > ($4::timestamptz, $5::uuid)"
           "      ELSE (a.created_at, a.id) < ($4::timestamptz, $5::uuid) END)"
           " ORDER BY CASE WHEN $1::uuid IS NULL THEN extract(epoch FROM a.created_at)"
           "          ELSE -extract(epoch FROM a.created_at) END,"
           "   CASE WHEN $1::uuid IS NULL THEN a.id::text END,"
           "   CASE WHEN $1::uuid IS NOT NULL THEN a.id::text END DESC"
           " LIMIT $6::int + 1) x",
    7};

#define LOCK_SQL                                                                                   \
    "SELECT a.id, a.tenant_id, a.project_id, a.requested_by, a.state, t.slug,"                     \
    " a.ends_on < " TODAY ", a.gpu_hours::float8, a.storage_gib::float8, a.resources::text"        \
    " FROM allocation_requests a JOIN tenants t ON t.id = a.tenant_id WHERE a.id = $1::uuid"
static const struct db_stmt st_lock = {"alloc_lock", LOCK_SQL " FOR UPDATE OF a", 1};
/* FOR UPDATE needs the update policy too: a reader who may not change the
 * request (a member who comments) must still find it to be told 403 */
static const struct db_stmt st_read = {"alloc_read", LOCK_SQL, 1};
enum {
    LK_ID,
    LK_TENANT,
    LK_PROJECT,
    LK_BY,
    LK_STATE,
    LK_SLUG,
    LK_ENDED,
    LK_GPU_HOURS,
    LK_STORAGE,
    LK_RESOURCES
};

static const struct db_stmt st_approve = {
    "alloc_approve",
    "UPDATE allocation_requests SET state = 'approved', approved_resources = $2::jsonb,"
    " approved_gpu_hours = $3::numeric, approved_storage_gib = $4::numeric,"
    " decided_by = $5::uuid, decided_by_name = (SELECT username FROM users WHERE id = $5::uuid),"
    " decided_at = now(), updated_at = now()"
    " WHERE id = $1::uuid AND state IN ('pending', 'needs_info')",
    5};
static const struct db_stmt st_reject = {
    "alloc_reject",
    "UPDATE allocation_requests SET state = 'rejected', reason = $2, decided_by = $3::uuid,"
    " decided_by_name = (SELECT username FROM users WHERE id = $3::uuid), decided_at = now(),"
    " updated_at = now() WHERE id = $1::uuid AND state IN ('pending', 'needs_info')",
    3};
static const struct db_stmt st_set_state = {
    "alloc_set_state",
    "UPDATE allocation_requests SET state = $2, updated_at = now()"
    " WHERE id = $1::uuid AND state IN ('pending', 'needs_info')",
    2};
static const struct db_stmt st_comment = {
    "alloc_comment",
    "INSERT INTO allocation_comments (request_id, tenant_id, author_id, author_name, kind, text)"
    " VALUES ($1::uuid, $2::uuid, $3::uuid, (SELECT username FROM users WHERE id = $3::uuid),"
    " $4, $5)",
    5};

/* The approved resources' limits, plus storage_gib, become the project's quota. */
static const struct db_stmt st_apply = {
    "alloc_apply_quota",
    "WITH x AS (SELECT key AS r, (value->>'limit')::numeric AS l FROM jsonb_each($3::jsonb)"
    "             WHERE key <> 'storage_gib' OR $4::numeric IS NULL"
    "           UNION ALL SELECT 'storage_gib', $4::numeric WHERE $4::numeric IS NOT NULL),"
    " up AS (INSERT INTO project_quotas (tenant_id, project_id, resource, \"limit\")"
    "        SELECT $1::uuid, $2::uuid, r, l FROM x"
    "        ON CONFLICT (project_id, resource) DO UPDATE SET \"limit\" = EXCLUDED.\"limit\""
    "        RETURNING 1)"
    " DELETE FROM project_quotas WHERE project_id = $2::uuid AND resource NOT IN (SELECT r FROM x)",
    4};

static const struct db_stmt st_report = {
    "alloc_report",
    "SELECT t.slug AS tenant, p.slug AS project, p.pi_username AS pi, a.funding_ref,"
    " a.starts_on::text AS starts_on, a.ends_on::text AS ends_on,"
    " a.approved_gpu_hours::float8 AS gpu_hours, " USED " AS gpu_hours_used,"
    " a.approved_storage_gib::float8 AS storage_gib, " STATE " AS state, a.id AS request" ALLOC_FROM
    " WHERE a.state = 'approved' AND ($2::date IS NULL OR a.starts_on <= $2::date)"
    " AND ($1::date IS NULL OR a.ends_on >= $1::date)"
    " ORDER BY t.slug, p.slug, a.starts_on, a.id",
    2};

static const struct db_stmt st_notice = {
    "alloc_notice",
    "WITH n AS (UPDATE allocation_requests a SET expiry_noticed_at = now()"
    "  WHERE a.state = 'approved' AND a.expiry_noticed_at IS NULL AND a.ends_on >= " TODAY
    "    AND a.ends_on - " TODAY " <= $1::int RETURNING a.*)"
    " SELECT coalesce(json_agg(json_build_object('id', a.id, 'tenant_id', a.tenant_id,"
    "   'tenant', t.slug, 'project', p.slug, 'ends_on', a.ends_on, 'expires_in_days', a.ends_on "
    "- " TODAY ")), '[]')"
    " AS items FROM n a JOIN projects p ON p.id = a.project_id JOIN tenants t ON t.id = "
    "a.tenant_id",
    1};

const struct db_stmt *const db_allocations_stmts[] = {
    &st_project, &st_insert, &st_of_project, &st_get,    &st_list,
    &st_lock,    &st_read,   &st_approve,    &st_reject, &st_set_state,
    &st_comment, &st_apply,  &st_report,     &st_notice, NULL};

int db_alloc_project(struct db *db, const char *tenant_id, const char *slug, const char *user_id,
                     struct db_alloc_project *out)
{
    memset(out, 0, sizeof *out);
    const char *p[3] = {tenant_id, slug, user_id};
    int e = 0;
    PGresult *r = db_query(db, &st_project, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1)
        e = AIDC_ENOTFOUND;
    else
        e = pgcol_copy(r, 0, PR_ID, out->id, sizeof out->id);
    if (!e)
        out->is_pi = pgcol_bool(r, 0, PR_IS_PI);
    PQclear(r);
    return e;
}

int db_alloc_insert(struct db *db, const struct db_alloc_new *n, char *id_out)
{
    const char *p[11] = {n->tenant_id,     n->project_id,  n->user_id,   n->resources,
                         n->gpu_hours,     n->storage_gib, n->starts_on, n->ends_on,
                         n->justification, n->funding_ref, n->renews};
    int e = 0;
    PGresult *r = db_query(db, &st_insert, p, &e);
    if (!r)
        return e;
    e = PQntuples(r) == 1 ? pgcol_copy(r, 0, 0, id_out, 37) : AIDC_EINTERNAL;
    PQclear(r);
    return e;
}

int db_alloc_of_project(struct db *db, const char *id, const char *project_id, bool *yes)
{
    const char *p[2] = {id, project_id};
    int e = 0;
    PGresult *r = db_query(db, &st_of_project, p, &e);
    if (!r)
        return e;
    *yes = PQntuples(r) == 1;
    PQclear(r);
    return 0;
}

int db_alloc_get(struct db *db, const char *tenant_id, const char *id, int notice_days,
                 json_t **out)
{
    char nd[16];
    snprintf(nd, sizeof nd, "%d", notice_days);
    const char *p[3] = {tenant_id, id, nd};
    return rowjson_query_one(db, &st_get, p, out);
}

int db_alloc_list(struct db *db, const char *tenant_id, const char *state, const char *project,
                  const char *after_ts, const char *after_id, int limit, int notice_days,
                  struct db_rows *out)
{
    char lim[16], nd[16];
    snprintf(lim, sizeof lim, "%d", limit);
    snprintf(nd, sizeof nd, "%d", notice_days);
    const char *p[7] = {tenant_id, state, project, after_ts, after_id, lim, nd};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

static int read_lock(const PGresult *r, struct db_alloc_row *out)
{
    int e = pgcol_copy(r, 0, LK_ID, out->id, sizeof out->id);
    if (!e)
        e = pgcol_copy(r, 0, LK_TENANT, out->tenant_id, sizeof out->tenant_id);
    if (!e)
        e = pgcol_copy(r, 0, LK_PROJECT, out->project_id, sizeof out->project_id);
    if (!e && !PQgetisnull(r, 0, LK_BY))
        e = pgcol_copy(r, 0, LK_BY, out->requested_by, sizeof out->requested_by);
    if (!e)
        e = pgcol_copy(r, 0, LK_STATE, out->state, sizeof out->state);
    if (!e)
        e = pgcol_copy(r, 0, LK_SLUG, out->tenant_slug, sizeof out->tenant_slug);
    if (!e)
        e = pgcol_double(r, 0, LK_GPU_HOURS, -1, &out->gpu_hours);
    if (!e)
        e = pgcol_double(r, 0, LK_STORAGE, -1, &out->storage_gib);
    out->ended = pgcol_bool(r, 0, LK_ENDED);
    if (!e) {
        out->resources = json_loads(PQgetvalue(r, 0, LK_RESOURCES), 0, NULL);
        if (!out->resources)
            e = AIDC_EINTERNAL;
    }
    return e;
}

int db_alloc_lock(struct db *db, const char *id, bool lock, struct db_alloc_row *out)
{
    memset(out, 0, sizeof *out);
    const char *p[1] = {id};
    int e = 0;
    PGresult *r = db_query(db, lock ? &st_lock : &st_read, p, &e);
    if (!r)
        return e;
    e = PQntuples(r) == 1 ? read_lock(r, out) : AIDC_ENOTFOUND;
    PQclear(r);
    return e;
}

void db_alloc_row_free(struct db_alloc_row *r)
{
    json_decref(r->resources);
    r->resources = NULL;
}

int db_alloc_approve(struct db *db, const char *id, const char *resources, const char *gpu_hours,
                     const char *storage_gib, const char *user_id)
{
    const char *p[5] = {id, resources, gpu_hours, storage_gib, user_id};
    return db_exec(db, &st_approve, p);
}

int db_alloc_reject(struct db *db, const char *id, const char *reason, const char *user_id)
{
    const char *p[3] = {id, reason, user_id};
    return db_exec(db, &st_reject, p);
}

int db_alloc_set_state(struct db *db, const char *id, const char *state)
{
    const char *p[2] = {id, state};
    return db_exec(db, &st_set_state, p);
}

int db_alloc_comment(struct db *db, const char *id, const char *tenant_id, const char *user_id,
                     const char *kind, const char *text)
{
    const char *p[5] = {id, tenant_id, user_id, kind, text};
    return db_exec(db, &st_comment, p);
}

int db_alloc_apply_quota(struct db *db, const char *tenant_id, const char *project_id,
                         const char *resources, const char *storage_gib)
{
    const char *p[4] = {tenant_id, project_id, resources, storage_gib};
    return db_exec(db, &st_apply, p);
}

int db_alloc_report(struct db *db, const char *from, const char *to, struct db_rows *out)
{
    const char *p[2] = {from, to};
    return rowjson_query_rows(db, &st_report, p, false, out);
}

int db_alloc_notice(struct db *db, int notice_days, json_t **out)
{
    char nd[16];
    snprintf(nd, sizeof nd, "%d", notice_days);
    const char *p[1] = {nd};
    json_t *row = NULL;
    int e = rowjson_query_one(db, &st_notice, p, &row);
    if (!e) {
        *out = json_incref(json_object_get(row, "items"));
        json_decref(row);
    }
    return e;
}
