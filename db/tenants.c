/* tenants.c - tenants and memberships. */
#include "tenants.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "rowjson.h"

#include <stdio.h>
#include <string.h>

/* storage_over_quota_since: a registry sync found its images over storage_gib */
#define TENANT_COLS                                                                               \
    "id, slug, name, suspended, members_see_all_jobs, created_at, updated_at,"                   \
    " storage_over_quota_at AS storage_over_quota_since"

/* A deleted tenant keeps its row (and its slug) for the audit retention period,
 * but no lookup or list finds it any more. */
static const struct db_stmt st_resolve = {
    "tenant_resolve", "SELECT id, suspended FROM tenants WHERE slug = $1 AND deleted_at IS NULL",
    1};
static const struct db_stmt st_create = {
    "tenant_create",
    "INSERT INTO tenants (slug, name) VALUES ($1, $2) RETURNING " TENANT_COLS, 2};
static const struct db_stmt st_list = {
    "tenant_list",
    "SELECT " TENANT_COLS ", slug AS _cursor FROM tenants"
    " WHERE deleted_at IS NULL AND ($1::text IS NULL OR slug > $1) ORDER BY slug LIMIT $2::int + 1",
    2};
static const struct db_stmt st_get = {
    "tenant_get", "SELECT " TENANT_COLS " FROM tenants WHERE id = $1::uuid AND deleted_at IS NULL",
    1};
static const struct db_stmt st_update = {
    "tenant_update",
    "UPDATE tenants SET name = coalesce($2, name), suspended = coalesce($3::boolean, suspended),"
    " members_see_all_jobs = coalesce($4::boolean, members_see_all_jobs),"
    " updated_at = now() WHERE id = $1::uuid AND deleted_at IS NULL RETURNING " TENANT_COLS,
    4};
/*
 * Soft delete. FOR UPDATE first: it waits for transactions still inserting
 * jobs of the tenant (their foreign-key check holds a key-share lock on the
 * row, which an UPDATE of other columns would not wait for), so the caller's
 * cancel afterwards sees their jobs. Suspended too, so that a job slipping in
 * later is never admitted (the admitter holds back suspended tenants' jobs).
 */
static const struct db_stmt st_delete = {
    "tenant_delete",
    "WITH l AS (SELECT id FROM tenants WHERE id = $1::uuid AND deleted_at IS NULL FOR UPDATE)"
    " UPDATE tenants t SET deleted_at = now(), suspended = true, updated_at = now() FROM l"
    " WHERE t.id = l.id RETURNING t.id, t.slug, t.name, t.suspended, t.created_at, t.updated_at,"
    " t.deleted_at",
    1};

#define MEMBER_COLS                                                                               \
    "u.username, u.display_name, m.role, m.created_at, m.updated_at"

static const struct db_stmt st_member_list = {
    "member_list",
    "SELECT " MEMBER_COLS ", u.username AS _cursor FROM memberships m"
    " JOIN users u ON u.id = m.user_id"
    " WHERE m.tenant_id = $1::uuid AND ($2::text IS NULL OR u.username > $2)"
    " ORDER BY u.username LIMIT $3::int + 1",
    3};
static const struct db_stmt st_member_put = {
    "member_put",
    "WITH u AS (SELECT id, username, display_name FROM users WHERE username = $2),"
    " old AS (SELECT m.role FROM memberships m, u WHERE m.tenant_id = $1::uuid AND m.user_id = u.id),"
    " up AS (INSERT INTO memberships (tenant_id, user_id, role) SELECT $1::uuid, u.id, $3 FROM u"
    "        ON CONFLICT (tenant_id, user_id) DO UPDATE SET role = EXCLUDED.role, updated_at = now()"
    "        RETURNING role, created_at, updated_at)"
    " SELECT u.username, u.display_name, up.role, up.created_at, up.updated_at,"
    " (SELECT role FROM old) AS _previous FROM u, up",
    3};
static const struct db_stmt st_member_delete = {
    "member_delete",
    "DELETE FROM memberships m USING users u"
    " WHERE m.tenant_id = $1::uuid AND m.user_id = u.id AND u.username = $2 RETURNING m.role",
    2};

const struct db_stmt *const db_tenants_stmts[] = {
    &st_resolve, &st_create,      &st_list,       &st_get,           &st_update,
    &st_delete,  &st_member_list, &st_member_put, &st_member_delete, NULL};

int db_tenant_resolve(struct db *db, const char *slug, char *id_out, bool *suspended)
{
    const char *p[1] = {slug};
    int e;
    PGresult *r = db_query(db, &st_resolve, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 1) {
        snprintf(id_out, 37, "%s", PQgetvalue(r, 0, 0));
        *suspended = PQgetvalue(r, 0, 1)[0] == 't';
    } else {
        e = AIDC_ENOTFOUND;
    }
    PQclear(r);
    return e;
}

int db_tenant_create(struct db *db, const char *slug, const char *name, json_t **out)
{
    const char *p[2] = {slug, name};
    return rowjson_query_one(db, &st_create, p, out);
}

int db_tenant_list(struct db *db, const char *after, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[2] = {after, lim};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

int db_tenant_get(struct db *db, const char *tenant_id, json_t **out)
{
    const char *p[1] = {tenant_id};
    return rowjson_query_one(db, &st_get, p, out);
}

int db_tenant_update(struct db *db, const char *tenant_id, const char *name,
                     const char *suspended, const char *members_see_all_jobs, json_t **out)
{
    const char *p[4] = {tenant_id, name, suspended, members_see_all_jobs};
    return rowjson_query_one(db, &st_update, p, out);
}

int db_tenant_delete(struct db *db, const char *tenant_id, json_t **out)
{
    const char *p[1] = {tenant_id};
    return rowjson_query_one(db, &st_delete, p, out);
}

int db_member_list(struct db *db, const char *tenant_id, const char *after, int limit,
                   struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[3] = {tenant_id, after, lim};
    return rowjson_query_rows(db, &st_member_list, p, false, out);
}

int db_member_put(struct db *db, const char *tenant_id, const char *username, const char *role,
                  json_t **out, bool *created, char **previous_role)
{
    const char *p[3] = {tenant_id, username, role};
    int e;
    PGresult *r = db_query(db, &st_member_put, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    const char *prev = rowjson_get(r, 0, "_previous");
    *created = prev == NULL;
    *previous_role = prev ? xstrdup(prev) : NULL;
    *out = rowjson_object(r, 0);
    PQclear(r);
    return *out ? 0 : AIDC_EINTERNAL;
}

int db_member_delete(struct db *db, const char *tenant_id, const char *username)
{
    const char *p[2] = {tenant_id, username};
    int e;
    PGresult *r = db_query(db, &st_member_delete, p, &e);
    if (!r)
        return e;
    e = PQntuples(r) == 0 ? AIDC_ENOTFOUND : 0;
    PQclear(r);
    return e;
}
