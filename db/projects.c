/* projects.c - projects. */
#include "projects.h"

#include "rowjson.h"

#include <stdio.h>

/* The tenant's slug is added by the caller, who knows it: no join, no second
 * row-level-security check per row. The PI's name is the row's own (0042): a
 * subquery on users was set up for every read, PI or not. */
#define PROJECT_COLS                                                                              \
    "p.id, p.slug, p.name, p.description, p.created_by_name AS created_by,"                      \
    " p.created_at, p.updated_at, p.pi_username AS pi"

static const struct db_stmt st_create = {
    "project_create",
    "WITH p AS (INSERT INTO projects (tenant_id, slug, name, description, created_by,"
    "                                 created_by_name)"
    "           VALUES ($1::uuid, $2, $3, coalesce($4, ''), $5::uuid,"
    "                   (SELECT username FROM users WHERE id = $5::uuid)) RETURNING *)"
    " SELECT " PROJECT_COLS " FROM p",
    5};
static const struct db_stmt st_list = {
    "project_list",
    "SELECT " PROJECT_COLS ", p.slug AS _cursor FROM projects p"
    " WHERE p.tenant_id = $1::uuid AND p.deleted_at IS NULL AND ($2::text IS NULL OR p.slug > $2)"
    " ORDER BY p.slug LIMIT $3::int + 1",
    3};
static const struct db_stmt st_get = {
    "project_get",
    "SELECT " PROJECT_COLS " FROM projects p"
    " WHERE p.tenant_id = $1::uuid AND p.slug = $2 AND p.deleted_at IS NULL",
    2};
static const struct db_stmt st_update = {
    "project_update",
    "WITH p AS (UPDATE projects SET name = coalesce($3, name),"
    "           description = coalesce($4, description),"
    "           pi_user_id = CASE WHEN $5::bool THEN $6::uuid ELSE pi_user_id END,"
    "           pi_username = CASE WHEN $5::bool"
    "                         THEN (SELECT username FROM users WHERE id = $6::uuid)"
    "                         ELSE pi_username END,"
    "           updated_at = now()"
    "           WHERE tenant_id = $1::uuid AND slug = $2 AND deleted_at IS NULL RETURNING *)"
    " SELECT " PROJECT_COLS " FROM p",
    6};
/* who may be a project's PI: a member or admin of its tenant (a viewer asks for nothing) */
static const struct db_stmt st_pi_user = {
    "project_pi_user",
    "SELECT u.id FROM users u JOIN memberships m ON m.user_id = u.id"
    " WHERE m.tenant_id = $1::uuid AND u.username = $2 AND m.role IN ('member', 'tenant_admin')",
    2};
/* A project with unfinished jobs stays ("busy": the caller answers 409). */
static const struct db_stmt st_delete = {
    "project_delete",
    "WITH p AS (SELECT id, aidc_project_has_active_jobs(id) AS busy FROM projects"
    "             WHERE tenant_id = $1::uuid AND slug = $2 AND deleted_at IS NULL FOR UPDATE),"
    " u AS (UPDATE projects x SET deleted_at = now(), updated_at = now() FROM p"
    "       WHERE x.id = p.id AND NOT p.busy RETURNING x.id)"
    " SELECT p.id, p.busy FROM p",
    2};
static const struct db_stmt st_id = {
    "project_id",
    "SELECT id FROM projects WHERE tenant_id = $1::uuid AND slug = $2 AND deleted_at IS NULL", 2};

const struct db_stmt *const db_projects_stmts[] = {&st_create, &st_list, &st_get,     &st_update,
                                                   &st_delete, &st_id,   &st_pi_user, NULL};

int db_project_create(struct db *db, const char *tenant_id, const char *slug, const char *name,
                      const char *description, const char *created_by, json_t **out)
{
    const char *p[5] = {tenant_id, slug, name, description, created_by};
    return rowjson_query_one(db, &st_create, p, out);
}

int db_project_list(struct db *db, const char *tenant_id, const char *after, int limit,
                    struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[3] = {tenant_id, after, lim};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

int db_project_get(struct db *db, const char *tenant_id, const char *slug, struct sbuf *out)
{
    const char *p[2] = {tenant_id, slug};
    return rowjson_query_one_text(db, &st_get, p, out);
}

int db_project_update(struct db *db, const char *tenant_id, const char *slug, const char *name,
                      const char *description, bool set_pi, const char *pi_user_id, json_t **out)
{
    const char *p[6] = {tenant_id, slug, name, description, set_pi ? "true" : "false", pi_user_id};
    return rowjson_query_one(db, &st_update, p, out);
}

int db_project_delete(struct db *db, const char *tenant_id, const char *slug, json_t **out)
{
    const char *p[2] = {tenant_id, slug};
    return rowjson_query_one(db, &st_delete, p, out);
}

int db_project_id(struct db *db, const char *tenant_id, const char *slug, char *id_out)
{
    const char *p[2] = {tenant_id, slug};
    json_t *out = NULL;
    int e = rowjson_query_one(db, &st_id, p, &out);
    if (!e)
        snprintf(id_out, 37, "%s", json_string_value(json_object_get(out, "id")));
    json_decref(out);
    return e;
}

int db_project_pi_user(struct db *db, const char *tenant_id, const char *username, char *id_out)
{
    const char *p[2] = {tenant_id, username};
    json_t *out = NULL;
    int e = rowjson_query_one(db, &st_pi_user, p, &out);
    if (!e)
        snprintf(id_out, 37, "%s", json_string_value(json_object_get(out, "id")));
    json_decref(out);
    return e;
}
