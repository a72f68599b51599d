/* templates.c - job templates (see templates.h). */
#include "templates.h"

#include "../lib/err.h"

#include <stdio.h>
#include <string.h>

/* $1 is the tenant's id or NULL: "IS NOT DISTINCT FROM" matches both */
#define TPL_COLS                                                                                   \
    "t.name, CASE WHEN t.tenant_id IS NULL THEN 'platform' ELSE 'tenant' END AS scope,"            \
    " t.spec AS _spec, t.created_by, t.created_at, t.updated_at"

static const struct db_stmt st_list = {
    "template_list",
    "SELECT " TPL_COLS ", t.name AS _cursor FROM job_templates t"
    " WHERE t.tenant_id IS NOT DISTINCT FROM $1::uuid AND ($2::text IS NULL OR t.name > $2)"
    " ORDER BY t.name LIMIT $3::int + 1",
    3};
static const struct db_stmt st_get = {"template_get",
                                      "SELECT " TPL_COLS " FROM job_templates t"
                                      " WHERE t.tenant_id IS NOT DISTINCT FROM $1::uuid"
                                      " AND t.name = $2",
                                      2};
/* the tenant's own first: it shadows the platform's of the same name */
static const struct db_stmt st_find = {
    "template_find",
    "SELECT " TPL_COLS " FROM job_templates t"
    " WHERE (t.tenant_id = $1::uuid OR t.tenant_id IS NULL) AND t.name = $2"
    " ORDER BY t.tenant_id IS NULL LIMIT 1",
    2};
/* the count and the insert in one statement; two racing creates may both pass
 * the count by one, which the limit tolerates */
static const struct db_stmt st_create = {
    "template_create",
    "INSERT INTO job_templates AS t (tenant_id, name, spec, created_by)"
    " SELECT $1::uuid, $2, $3::jsonb, $4"
    " WHERE (SELECT count(*) FROM job_templates c"
    "        WHERE c.tenant_id IS NOT DISTINCT FROM $1::uuid) < $5::int"
    " RETURNING " TPL_COLS,
    5};
static const struct db_stmt st_update = {
    "template_update",
    "UPDATE job_templates t SET spec = $3::jsonb, updated_at = now()"
    " WHERE t.tenant_id IS NOT DISTINCT FROM $1::uuid AND t.name = $2 RETURNING " TPL_COLS,
    3};
static const struct db_stmt st_delete = {
    "template_delete",
    "DELETE FROM job_templates t WHERE t.tenant_id IS NOT DISTINCT FROM $1::uuid AND t.name = $2",
    2};
static const struct db_stmt st_exists = {"template_exists",
                                         "SELECT 1 FROM job_templates t"
                                         " WHERE t.tenant_id IS NOT DISTINCT FROM $1::uuid"
                                         " AND t.name = $2",
                                         2};

const struct db_stmt *const db_templates_stmts[] = {&st_list,   &st_get,    &st_find,   &st_create,
                                                    &st_update, &st_delete, &st_exists, NULL};

/* Row i of r as the API shows it: the spec's fields beside the row's. */
static json_t *shaped(const PGresult *r, int i)
{
    json_t *item = rowjson_object(r, i);
    const char *text = rowjson_get(r, i, "_spec");
    json_t *spec = text ? json_loads(text, 0, NULL) : NULL;
    if (!item || !json_is_object(spec)) {
        json_decref(item);
        json_decref(spec);
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(spec, k, v)
    {
        if (!json_object_get(item, k))
            json_object_set(item, k, v);
    }
    json_decref(spec);
    return item;
}

static int one(struct db *db, const struct db_stmt *st, const char *const *p, json_t **out)
{
    int e;
    PGresult *r = db_query(db, st, p, &e);
    if (!r)
        return e;
    e = PQntuples(r) == 1 ? 0 : AIDC_ENOTFOUND;
    if (!e) {
        *out = shaped(r, 0);
        e = *out ? 0 : AIDC_EINTERNAL;
    }
    PQclear(r);
    return e;
}

int db_template_list(struct db *db, const char *tenant_id, const char *after, int limit,
                     struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[3] = {tenant_id, after, lim};
    int e;
    PGresult *r = db_query(db, &st_list, p, &e);
    if (!r)
        return e;
    e = rowjson_rows(r, false, out);
    for (int i = 0; !e && i < PQntuples(r); i++) {
        json_t *item = shaped(r, i);
        if (!item)
            e = AIDC_EINTERNAL;
        else
            json_array_set_new(out->items, (size_t)i, item);
    }
    PQclear(r);
    if (e)
        db_rows_free(out);
    return e;
}

int db_template_get(struct db *db, const char *tenant_id, const char *name, json_t **out)
{
    const char *p[2] = {tenant_id, name};
    return one(db, &st_get, p, out);
}

int db_template_find(struct db *db, const char *tenant_id, const char *name, json_t **out)
{
    const char *p[2] = {tenant_id, name};
    return one(db, &st_find, p, out);
}

int db_template_create(struct db *db, const char *tenant_id, const char *name, const char *spec,
                       const char *created_by, int max, json_t **out)
{
    char mx[16];
    snprintf(mx, sizeof mx, "%d", max);
    const char *p[5] = {tenant_id, name, spec, created_by, mx};
    int e = one(db, &st_create, p, out);
    if (e != AIDC_ENOTFOUND)
        return e;
    /* no row: the name is taken (a unique violation says so first) or the limit is reached */
    const char *q[2] = {tenant_id, name};
    PGresult *r = db_query(db, &st_exists, q, &e);
    if (!r)
        return e;
    e = PQntuples(r) ? AIDC_ECONFLICT : AIDC_ETOOBIG;
    PQclear(r);
    return e;
}

int db_template_update(struct db *db, const char *tenant_id, const char *name, const char *spec,
                       json_t **out)
{
    const char *p[3] = {tenant_id, name, spec};
    return one(db, &st_update, p, out);
}

int db_template_delete(struct db *db, const char *tenant_id, const char *name)
{
    const char *p[2] = {tenant_id, name};
    int e;
    PGresult *r = db_query(db, &st_delete, p, &e);
    if (!r)
        return e;
    e = strcmp(PQcmdTuples(r), "1") == 0 ? 0 : AIDC_ENOTFOUND;
    PQclear(r);
    return e;
}
