/* quotas.c - quotas and usage (see quotas.h). */
#include "quotas.h"

#include "../lib/xalloc.h"
#include "pgcol.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct db_stmt st_tenant_get = {
    "quota_tenant_get",
    "SELECT resource, guaranteed::text, \"limit\"::text FROM tenant_quotas"
    " WHERE tenant_id = $1::uuid ORDER BY resource",
    1};
static const struct db_stmt st_project_get = {
    "quota_project_get",
    "SELECT resource, \"limit\"::text FROM project_quotas WHERE project_id = $1::uuid"
    " ORDER BY resource",
    1};
/* both of a submit's quotas in one statement: the tenant's rows, then the project's
 * (named as the submit names it, so that it can go before the project's id is known) */
static const struct db_stmt st_both_get = {
    "quota_both_get",
    "SELECT resource, guaranteed::text, \"limit\"::text, true AS of_tenant FROM tenant_quotas"
    " WHERE tenant_id = $1::uuid"
    " UNION ALL SELECT q.resource, q.\"limit\"::text, NULL, false FROM project_quotas q"
    " JOIN projects p ON p.id = q.project_id"
    " WHERE q.tenant_id = $1::uuid AND p.tenant_id = $1::uuid AND p.slug = $2"
    " AND p.deleted_at IS NULL"
    " ORDER BY of_tenant DESC, resource",
    2};

/* when the spaces behind a figure were measured (the oldest of them), whether whole */
#define MEASURED                                                                                   \
    "to_char(min(measured_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"              \
    " bool_and(complete)"

static const struct db_stmt st_usage = {
    "quota_usage",
    "WITH a AS (SELECT * FROM jobs WHERE tenant_id = $1::uuid"
    "             AND ($2::uuid IS NULL OR project_id = $2::uuid)"
    "             AND state IN ('admitted', 'pending', 'running'))"
    " SELECT 'gpu:' || gpu_type, sum(gpus * nodes)::text,"
    "        coalesce(sum(gpus * nodes) FILTER (WHERE preemptible), 0)::text, NULL::text,"
    "        NULL::boolean FROM a WHERE gpu_type IS NOT NULL GROUP BY gpu_type"
    " UNION ALL SELECT 'cpu', coalesce(sum(cpus * nodes), 0)::text,"
    "        coalesce(sum(cpus * nodes) FILTER (WHERE preemptible), 0)::text, NULL, NULL FROM a"
    " UNION ALL SELECT 'memory_gib', coalesce(sum(memory_gib * nodes), 0)::text,"
    "        coalesce(sum(memory_gib * nodes) FILTER (WHERE preemptible), 0)::text, NULL, NULL"
    "   FROM a"
    " UNION ALL SELECT 'jobs', count(*)::text, count(*) FILTER (WHERE preemptible)::text,"
    "        NULL, NULL FROM a"
    /* the same GPU-seconds the admission worker counts and the invoice bills */
    " UNION ALL SELECT 'gpu_hours_month', round(coalesce(sum(s) / 3600, 0), 6)::text, '0',"
    "        NULL, NULL FROM"
    "  (SELECT gpu_seconds AS s FROM usage_monthly WHERE tenant_id = $1::uuid"
    "     AND ($2::uuid IS NULL OR project_id = $2::uuid)"
    "     AND period = (date_trunc('month', now(), 'UTC') AT TIME ZONE 'UTC')::date"
    "   UNION ALL SELECT gpus * extract(epoch FROM e - s)"
    "   FROM aidc_usage_unmetered(date_trunc('month', now(), 'UTC'), now())"
    "   WHERE tenant_id = $1::uuid AND ($2::uuid IS NULL OR project_id = $2::uuid) AND gpus > 0) x"
    /* a tenant's storage_gib is its images' */
    " UNION ALL SELECT 'storage_gib', round(coalesce(sum(size_bytes), 0) / 1073741824.0, 6)::text,"
    "        '0', NULL, NULL FROM images WHERE tenant_id = $1::uuid"
    "        AND deleted_at IS NULL AND upstream_deleted_at IS NULL HAVING $2::uuid IS NULL"
    /* a project's storage_gib is its space's, as last measured (docs/storage-quotas.md) */
    " UNION ALL SELECT 'storage_gib', round(coalesce(sum(bytes), 0) / 1073741824.0, 6)::text,"
    "        '0', " MEASURED " FROM storage_spaces WHERE tenant_id = $1::uuid"
    "        AND project_id = $2::uuid AND kind = 'project' HAVING $2::uuid IS NOT NULL"
    /* each home has the tenant's limit: the largest one is what comes near it */
    " UNION ALL SELECT 'home_storage_gib', round(coalesce(max(bytes), 0) / 1073741824.0, 6)::text,"
    "        '0', " MEASURED " FROM storage_spaces WHERE tenant_id = $1::uuid"
    "        AND kind = 'home' HAVING $2::uuid IS NULL",
    2};

static const struct db_stmt st_tenant_put = {
    "quota_tenant_put",
    "WITH x AS (SELECT * FROM unnest(string_to_array($2, ','), string_to_array($3, ','),"
    "                                string_to_array($4, ',')) AS x(r, g, l)),"
    " up AS (INSERT INTO tenant_quotas (tenant_id, resource, guaranteed, \"limit\")"
    "        SELECT $1::uuid, r, g::numeric, l::numeric FROM x"
    "        ON CONFLICT (tenant_id, resource) DO UPDATE"
    "          SET guaranteed = EXCLUDED.guaranteed, \"limit\" = EXCLUDED.\"limit\" RETURNING 1)"
    " DELETE FROM tenant_quotas WHERE tenant_id = $1::uuid AND resource NOT IN (SELECT r FROM x)",
    4};
static const struct db_stmt st_project_put = {
    "quota_project_put",
    "WITH x AS (SELECT * FROM unnest(string_to_array($3, ','), string_to_array($4, ','))"
    "             AS x(r, l)),"
    " up AS (INSERT INTO project_quotas (tenant_id, project_id, resource, \"limit\")"
    "        SELECT $1::uuid, $2::uuid, r, l::numeric FROM x"
    "        ON CONFLICT (project_id, resource) DO UPDATE SET \"limit\" = EXCLUDED.\"limit\""
    "        RETURNING 1)"
    " DELETE FROM project_quotas WHERE project_id = $2::uuid AND resource NOT IN (SELECT r FROM x)",
    4};
/* The advisory lock serialises quota changes: two admins each adding a
 * guarantee that fits alone must not together exceed the capacity. */
static const struct db_stmt st_lock = {
    "quota_lock", "SELECT pg_advisory_xact_lock(7016966710478138739)", 0};
static const struct db_stmt st_capacity = {
    "quota_capacity",
    "SELECT k.resource, coalesce(o.g, 0)::text, coalesce(c.t, 0)::text FROM"
    " (SELECT resource FROM cluster_inventory WHERE resource LIKE 'gpu:%'"
    "  UNION SELECT resource FROM tenant_quotas WHERE resource LIKE 'gpu:%') k"
    " LEFT JOIN (SELECT resource, sum(guaranteed) AS g FROM tenant_quotas"
    "            WHERE tenant_id <> $1::uuid GROUP BY resource) o ON o.resource = k.resource"
    /* with the GPUs faults hold: a guarantee outlives a failed GPU */
    " LEFT JOIN (SELECT resource, sum(total + faulty) AS t FROM cluster_inventory"
    "            GROUP BY resource) c"
    "            ON c.resource = k.resource",
    1};

const struct db_stmt *const db_quotas_stmts[] = {&st_tenant_get, &st_project_get, &st_both_get,
                                                 &st_usage,      &st_tenant_put,  &st_project_put,
                                                 &st_lock,       &st_capacity,    NULL};

/*
 * The amounts statements hand out: st_tenant_get (guaranteed, limit),
 * st_usage (used, borrowed) and st_capacity (others' guarantees, capacity)
 * a resource and two amounts; st_project_get (limit) one; st_both_get either,
 * and whose (C_OF_TENANT).
 */
enum { C_RESOURCE, C_FIRST, C_SECOND, C_MEASURED_AT, C_COMPLETE };
enum { C_OF_TENANT = C_MEASURED_AT };

/* Row i of r: its resource and amounts (second NULL: the statement has one). */
static int amounts(const PGresult *r, int i, char *resource, double *first, double *second)
{
    int e = pgcol_copy(r, i, C_RESOURCE, resource, DB_QUOTA_RESOURCE_MAX);
    if (!e)
        e = pgcol_double(r, i, C_FIRST, 0, first);
    if (!e && second)
        e = pgcol_double(r, i, C_SECOND, 0, second);
    return e;
}

/* Rows [from, to) of r into out: a tenant's (guaranteed, limit) or a project's (limit). */
static int read_rows(const PGresult *r, int from, int to, bool tenant, struct db_quota_rows *out)
{
    int e = 0;
    out->v = xcalloc((size_t)(to - from) + 1, sizeof *out->v);
    for (int i = from; !e && i < to; i++) {
        struct db_quota_row *q = &out->v[out->n];
        e = tenant ? amounts(r, i, q->resource, &q->guaranteed, &q->limit)
                   : amounts(r, i, q->resource, &q->limit, NULL);
        out->n += !e;
    }
    return e;
}

static int quota_rows(struct db *db, const struct db_stmt *st, const char *id, bool tenant,
                      struct db_quota_rows *out)
{
    const char *p[1] = {id};
    int e;
    memset(out, 0, sizeof *out);
    PGresult *r = db_query(db, st, p, &e);
    if (!r)
        return e;
    e = read_rows(r, 0, PQntuples(r), tenant, out);
    PQclear(r);
    return e;
}

int db_quota_tenant_get(struct db *db, const char *tenant_id, struct db_quota_rows *out)
{
    return quota_rows(db, &st_tenant_get, tenant_id, true, out);
}

int db_quota_project_get(struct db *db, const char *project_id, struct db_quota_rows *out)
{
    return quota_rows(db, &st_project_get, project_id, false, out);
}

void db_quota_both_prefetch(struct db *db, const char *tenant_id, const char *project_slug)
{
    const char *p[2] = {tenant_id, project_slug};
    db_prefetch(db, &st_both_get, p);
}

int db_quota_both_get(struct db *db, const char *tenant_id, const char *project_slug,
                      struct db_quota_rows *tenant, struct db_quota_rows *project)
{
    const char *p[2] = {tenant_id, project_slug};
    int e;
    memset(tenant, 0, sizeof *tenant);
    memset(project, 0, sizeof *project);
    PGresult *r = db_query(db, &st_both_get, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r), split = 0;
    while (split < n && pgcol_bool(r, split, C_OF_TENANT))
        split++;
    e = read_rows(r, 0, split, true, tenant);
    if (!e)
        e = read_rows(r, split, n, false, project);
    PQclear(r);
    return e;
}

void db_quota_rows_free(struct db_quota_rows *rows)
{
    free(rows->v);
    memset(rows, 0, sizeof *rows);
}

int db_quota_usage(struct db *db, const char *tenant_id, const char *project_id,
                   struct db_quota_uses *out)
{
    const char *p[2] = {tenant_id, project_id};
    int e;
    memset(out, 0, sizeof *out);
    PGresult *r = db_query(db, &st_usage, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++) {
        struct db_quota_use *u = &out->v[i];
        e = amounts(r, i, u->resource, &u->used, &u->borrowed);
        if (!e && !PQgetisnull(r, i, C_MEASURED_AT))
            e = pgcol_copy(r, i, C_MEASURED_AT, u->measured_at, sizeof u->measured_at);
        u->complete = PQgetisnull(r, i, C_COMPLETE) ? -1 : pgcol_bool(r, i, C_COMPLETE);
        out->n += !e;
    }
    PQclear(r);
    return e;
}

void db_quota_uses_free(struct db_quota_uses *uses)
{
    free(uses->v);
    memset(uses, 0, sizeof *uses);
}

int db_quota_tenant_put(struct db *db, const char *tenant_id, const char *resources,
                        const char *guaranteed, const char *limits)
{
    const char *p[4] = {tenant_id, resources, guaranteed, limits};
    return db_exec(db, &st_tenant_put, p);
}

int db_quota_project_put(struct db *db, const char *tenant_id, const char *project_id,
                         const char *resources, const char *limits)
{
    const char *p[4] = {tenant_id, project_id, resources, limits};
    return db_exec(db, &st_project_put, p);
}

int db_quota_capacity(struct db *db, const char *tenant_id, struct db_quota_capacities *out)
{
    memset(out, 0, sizeof *out);
    int e = db_exec(db, &st_lock, NULL);
    if (e)
        return e;
    const char *p[1] = {tenant_id};
    PGresult *r = db_query(db, &st_capacity, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++) {
        struct db_quota_capacity *c = &out->v[i];
        e = amounts(r, i, c->resource, &c->others_guaranteed, &c->capacity);
        out->n += !e;
    }
    PQclear(r);
    return e;
}

void db_quota_capacities_free(struct db_quota_capacities *caps)
{
    free(caps->v);
    memset(caps, 0, sizeof *caps);
}
