/* clusters.c - clusters and inventory (see clusters.h). */
#include "clusters.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "pgcol.h"
#include "rowjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLUSTER_COLS                                                                              \
    "c.id, c.name, c.kind, c.endpoint, c.credentials_ref, c.options, c.healthy, c.last_sync_at," \
    " c.last_error, aidc_cluster_inventory(c.id) AS inventory, c.created_at, c.updated_at"

static const struct db_stmt st_create = {
    "cluster_create",
    "INSERT INTO clusters AS c (name, kind, endpoint, credentials_ref, options)"
    " VALUES ($1, $2, coalesce($3, ''), coalesce($4, ''), $5::jsonb) RETURNING " CLUSTER_COLS,
    5};
static const struct db_stmt st_list = {
    "cluster_list",
    "SELECT " CLUSTER_COLS ", c.name AS _cursor FROM clusters c"
    " WHERE $1::text IS NULL OR c.name > $1 ORDER BY c.name LIMIT $2::int + 1",
    2};
static const struct db_stmt st_get = {
    "cluster_get", "SELECT " CLUSTER_COLS " FROM clusters c WHERE c.name = $1", 1};
/* a cluster as struct db_cluster: columns in the order of enum cluster_col */
#define CLUSTER_ROW "SELECT id, name, kind, endpoint, credentials_ref, options::text FROM clusters"
enum cluster_col { CC_ID, CC_NAME, CC_KIND, CC_ENDPOINT, CC_CREDREF, CC_OPTIONS };
static const struct db_stmt st_all = {"cluster_all", CLUSTER_ROW " ORDER BY name", 0};
static const struct db_stmt st_find = {"cluster_find", CLUSTER_ROW " WHERE name = $1", 1};
static const struct db_stmt st_synced = {
    "cluster_synced",
    "WITH inv AS (SELECT r, t::bigint AS t FROM unnest(string_to_array($4, ','),"
    "                                              string_to_array($5, ',')) AS x(r, t)"
    "             WHERE $2::boolean),"
    /* total as reported; db_gpu_inventory_apply then takes out what faults hold */
    " up AS (INSERT INTO cluster_inventory (cluster_id, resource, total, reported, updated_at)"
    "        SELECT $1::uuid, r, t, t, now() FROM inv"
    "        ON CONFLICT (cluster_id, resource) DO UPDATE SET total = EXCLUDED.total,"
    "          reported = EXCLUDED.reported, updated_at = now() RETURNING resource),"
    " gone AS (DELETE FROM cluster_inventory WHERE cluster_id = $1::uuid AND $2::boolean"
    "          AND resource NOT IN (SELECT r FROM inv) RETURNING 1)"
    " UPDATE clusters SET healthy = $2::boolean, last_error = $3, last_sync_at = now()"
    " WHERE id = $1::uuid",
    5};
/* the cluster answered for all its jobs (metering cuts open runs up to here) */
static const struct db_stmt st_jobs_seen = {
    "cluster_jobs_seen", "UPDATE clusters SET jobs_seen_at = now() WHERE id = $1::uuid", 1};
enum ledger_col { LC_ID, LC_TENANT, LC_STATE, LC_BACKEND_ID };
static const struct db_stmt st_ledger = {
    "cluster_ledger",
    "SELECT j.id, t.slug, j.state, j.backend_job_id FROM jobs j"
    " JOIN tenants t ON t.id = j.tenant_id"
    " WHERE j.cluster_id = $1::uuid AND (j.backend_job_id = ANY($2::text[])"
    "   OR j.id = ANY($3::uuid[])"
    "   OR (j.backend_job_id IS NOT NULL AND j.state IN ('admitted', 'pending', 'running')))",
    3};
/* the offers follow the order of enum db_cluster_offer, from CA_OFFERS on */
enum candidate_col { CA_ID, CA_NAME, CA_KIND, CA_HEALTHY, CA_OFFERS };
static const struct db_stmt st_candidates = {
    "cluster_candidates",
    "SELECT c.id, c.name, c.kind, c.healthy,"
    /* GPUs out of service for a fault come back: a job waits for them */
    " coalesce((SELECT total + faulty FROM cluster_inventory i WHERE i.cluster_id = c.id"
    "            AND i.resource = 'gpu:' || $1), 0),"
    " CASE WHEN jsonb_typeof(c.options -> 'max_time_limit_minutes') = 'number'"
    "      THEN (c.options ->> 'max_time_limit_minutes')::bigint END,"
    " coalesce((SELECT total FROM cluster_inventory i WHERE i.cluster_id = c.id"
    "            AND i.resource = 'cpu'), 0),"
    " coalesce((SELECT total FROM cluster_inventory i WHERE i.cluster_id = c.id"
    "            AND i.resource = 'memory_gib'), 0)"
    " FROM clusters c ORDER BY c.name",
    1};
static const struct db_stmt st_lookup = {
    "cluster_lookup", "SELECT id, kind, options::text FROM clusters WHERE name = $1", 1};

const struct db_stmt *const db_clusters_stmts[] = {
    &st_create, &st_list,       &st_get,    &st_all,  &st_synced, &st_jobs_seen,
    &st_lookup, &st_candidates, &st_ledger, &st_find, NULL};

int db_cluster_create(struct db *db, const char *name, const char *kind, const char *endpoint,
                      const char *credentials_ref, const char *options_json, json_t **out,
                      bool *second_local)
{
    const char *p[5] = {name, kind, endpoint, credentials_ref, options_json};
    int e = rowjson_query_one(db, &st_create, p, out);
    *second_local = e == AIDC_ECONFLICT &&
                    strcmp(db_last_error(db)->constraint, "clusters_one_local") == 0;
    return e;
}

int db_cluster_list(struct db *db, const char *after, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[2] = {after, lim};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

int db_cluster_get(struct db *db, const char *name, json_t **out)
{
    const char *p[1] = {name};
    return rowjson_query_one(db, &st_get, p, out);
}

void db_cluster_free(struct db_cluster *c)
{
    free(c->name);
    free(c->kind);
    free(c->endpoint);
    free(c->credentials_ref);
    free(c->options_json);
    memset(c, 0, sizeof *c);
}

static int cluster_row(const PGresult *r, int i, struct db_cluster *c)
{
    c->name = pgcol_text(r, i, CC_NAME);
    c->kind = pgcol_text(r, i, CC_KIND);
    c->endpoint = pgcol_text(r, i, CC_ENDPOINT);
    c->credentials_ref = pgcol_text(r, i, CC_CREDREF);
    c->options_json = pgcol_text(r, i, CC_OPTIONS);
    /* every column is NOT NULL in the table */
    bool whole = c->name && c->kind && c->endpoint && c->credentials_ref && c->options_json;
    return whole ? pgcol_copy(r, i, CC_ID, c->id, sizeof c->id) : AIDC_EINTERNAL;
}

void db_clusters_free(struct db_clusters *c)
{
    for (size_t i = 0; c->v && i < c->n; i++)
        db_cluster_free(&c->v[i]);
    free(c->v);
    c->v = NULL;
    c->n = 0;
}

int db_cluster_all(struct db *db, struct db_clusters *out)
{
    *out = (struct db_clusters){0};
    int e;
    PGresult *r = db_query(db, &st_all, NULL, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++, out->n++)
        e = cluster_row(r, i, &out->v[i]);
    PQclear(r);
    if (e)
        db_clusters_free(out);
    return e;
}

int db_cluster_find(struct db *db, const char *name, struct db_cluster *out)
{
    *out = (struct db_cluster){0};
    const char *p[1] = {name};
    int e;
    PGresult *r = db_query(db, &st_find, p, &e);
    if (!r)
        return e;
    e = PQntuples(r) == 0 ? AIDC_ENOTFOUND : cluster_row(r, 0, out);
    PQclear(r);
    if (e)
        db_cluster_free(out);
    return e;
}

void db_ledger_free(struct db_ledger *l)
{
    for (size_t i = 0; l->v && i < l->n; i++) {
        free(l->v[i].tenant);
        free(l->v[i].state);
        free(l->v[i].backend_job_id);
    }
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

int db_cluster_ledger(struct db *db, const char *cluster_id, const char *backend_ids,
                      const char *job_ids, struct db_ledger *out)
{
    *out = (struct db_ledger){0};
    const char *p[3] = {cluster_id, backend_ids, job_ids};
    int e;
    PGresult *r = db_query(db, &st_ledger, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++, out->n++) {
        struct db_ledger_job *j = &out->v[i];
        j->tenant = pgcol_text(r, i, LC_TENANT);
        j->state = pgcol_text(r, i, LC_STATE);
        j->backend_job_id = pgcol_text(r, i, LC_BACKEND_ID);
        e = j->tenant && j->state ? pgcol_copy(r, i, LC_ID, j->id, sizeof j->id) : AIDC_EINTERNAL;
    }
    PQclear(r);
    if (e)
        db_ledger_free(out);
    return e;
}

int db_cluster_jobs_seen(struct db *db, const char *cluster_id)
{
    const char *p[1] = {cluster_id};
    return db_exec(db, &st_jobs_seen, p);
}

int db_cluster_synced(struct db *db, const char *cluster_id, bool healthy, const char *error,
                      const char *resources_csv, const char *totals_csv)
{
    const char *p[5] = {cluster_id, healthy ? "true" : "false", error, resources_csv, totals_csv};
    return db_exec(db, &st_synced, p);
}


int db_cluster_lookup(struct db *db, const char *name, char *id_out, char *kind_out,
                      size_t kindsz, char **options_json)
{
    const char *p[1] = {name};
    int e;
    PGresult *r = db_query(db, &st_lookup, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    snprintf(id_out, 37, "%s", PQgetvalue(r, 0, 0));
    snprintf(kind_out, kindsz, "%s", PQgetvalue(r, 0, 1));
    if (options_json)
        *options_json = xstrdup(PQgetvalue(r, 0, 2));
    PQclear(r);
    return 0;
}

void db_cluster_candidates_free(struct db_cluster_candidates *c)
{
    for (size_t i = 0; c->v && i < c->n; i++) {
        free(c->v[i].name);
        free(c->v[i].kind);
    }
    free(c->v);
    c->v = NULL;
    c->n = 0;
}

static int candidate_row(const PGresult *r, int i, struct db_cluster_candidate *c)
{
    c->name = pgcol_text(r, i, CA_NAME);
    c->kind = pgcol_text(r, i, CA_KIND);
    c->healthy = pgcol_bool(r, i, CA_HEALTHY);
    int e = c->name && c->kind ? pgcol_copy(r, i, CA_ID, c->id, sizeof c->id) : AIDC_EINTERNAL;
    /* no max_time_limit_minutes (NULL) reads as 0: no limit */
    for (int k = 0; !e && k < DB_OFFER_COUNT; k++)
        e = pgcol_ll(r, i, CA_OFFERS + k, 0, &c->offer[k]);
    return e;
}

void db_cluster_candidates_prefetch(struct db *db, const char *gpu_type)
{
    const char *p[1] = {gpu_type};
    db_prefetch(db, &st_candidates, p);
}

int db_cluster_candidates(struct db *db, const char *gpu_type, struct db_cluster_candidates *out)
{
    *out = (struct db_cluster_candidates){0};
    const char *p[1] = {gpu_type};
    int e;
    PGresult *r = db_query(db, &st_candidates, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++, out->n++)
        e = candidate_row(r, i, &out->v[i]);
    PQclear(r);
    if (e)
        db_cluster_candidates_free(out);
    return e;
}
