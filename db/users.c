/* users.c - user accounts and global roles. */
#include "users.h"

#include "../lib/err.h"
#include "rowjson.h"

#include <stdio.h>
#include <stdlib.h>

#define USER_COLS                                                                                 \
    "u.id, u.username, u.display_name, u.email,"                                                 \
    " coalesce((SELECT json_agg(r.role ORDER BY r.role) FROM user_roles r"                        \
    "           WHERE r.user_id = u.id), '[]'::json) AS roles,"                                   \
    " u.disabled, u.created_at, u.updated_at"

/* roles: comma-separated; an empty string means none. */
#define ROLES_ARRAY(p) "coalesce(string_to_array(nullif(" p ", ''), ','), '{}')"

static const struct db_stmt st_create = {
    "user_create",
    "WITH u AS (INSERT INTO users (username, password_hash, email, display_name)"
    "           VALUES ($1, $2, coalesce($3, ''), coalesce($4, '')) RETURNING *),"
    " r AS (INSERT INTO user_roles (user_id, role, granted_by)"
    "       SELECT u.id, x, $6::uuid FROM u, unnest(" ROLES_ARRAY("$5") ") AS x RETURNING role)"
    " SELECT u.id, u.username, u.display_name, u.email,"
    " coalesce((SELECT json_agg(role ORDER BY role) FROM r), '[]'::json) AS roles,"
    " u.disabled, u.created_at, u.updated_at FROM u",
    6};
static const struct db_stmt st_list = {
    "user_list",
    "SELECT " USER_COLS ", u.username AS _cursor FROM users u"
    " WHERE $1::text IS NULL OR u.username > $1 ORDER BY u.username LIMIT $2::int + 1",
    2};
static const struct db_stmt st_get = {
    "user_get", "SELECT " USER_COLS " FROM users u WHERE u.username = $1", 1};

/* Roles are replaced in the same statement so the answer shows them; the
 * final SELECT reads user_roles through the CTEs' results, not the table
 * (a statement does not see its own changes). */
static const struct db_stmt st_update = {
    "user_update",
    "WITH u AS (UPDATE users SET display_name = coalesce($2, display_name),"
    "             email = coalesce($3, email), password_hash = coalesce($4, password_hash),"
    "             disabled = coalesce($5::boolean, disabled),"
    "             session_epoch = CASE WHEN $4 IS NOT NULL OR $5::boolean"
    "                 THEN session_epoch + 1 ELSE session_epoch END,"
    "             updated_at = now()"
    "           WHERE username = $1 RETURNING *),"
    " want AS (SELECT x AS role FROM unnest(" ROLES_ARRAY("$6") ") AS x WHERE $6 IS NOT NULL),"
    " del AS (DELETE FROM user_roles r USING u WHERE r.user_id = u.id AND $6 IS NOT NULL"
    "           AND r.role NOT IN (SELECT role FROM want) RETURNING r.role),"
    " ins AS (INSERT INTO user_roles (user_id, role, granted_by)"
    "           SELECT u.id, want.role, $7::uuid FROM u, want ON CONFLICT DO NOTHING RETURNING role),"
    " cur AS (SELECT r.role FROM user_roles r, u WHERE r.user_id = u.id)"
    " SELECT u.id, u.username, u.display_name, u.email,"
    " coalesce((SELECT json_agg(role ORDER BY role) FROM"
    "   (SELECT role FROM want UNION SELECT role FROM cur WHERE $6 IS NULL) z), '[]'::json) AS roles,"
    " u.disabled, u.created_at, u.updated_at FROM u",
    7};
static const struct db_stmt st_other_admins = {
    "user_other_admins",
    "SELECT count(*) FROM users u JOIN user_roles r ON r.user_id = u.id"
    " WHERE r.role = 'platform_admin' AND NOT u.disabled AND u.username <> $1",
    1};
static const struct db_stmt st_me = {
    "user_me",
    "SELECT " USER_COLS ", (SELECT json_agg(json_build_object('tenant', m->>'tenant',"
    "   'role', m->>'role', 'suspended', (m->>'suspended')::boolean,"
    "   'members_see_all_jobs', (m->>'members_see_all_jobs')::boolean))"
    "   FROM json_array_elements(aidc_user_memberships(u.id)) m) AS memberships"
    " FROM users u WHERE u.id = $1::uuid",
    1};
static const struct db_stmt st_bootstrap = {
    "user_bootstrap",
    "WITH old AS (SELECT id FROM users WHERE username = $1),"
    " u AS (INSERT INTO users (username, password_hash) VALUES ($1, $2)"
    "       ON CONFLICT (username) DO UPDATE SET password_hash = EXCLUDED.password_hash,"
    "         disabled = false, session_epoch = users.session_epoch + 1,"
    "         updated_at = now()"
    "       RETURNING id),"
    " r AS (INSERT INTO user_roles (user_id, role) SELECT id, 'platform_admin' FROM u"
    "       ON CONFLICT DO NOTHING RETURNING 1)"
    " SELECT u.id, NOT EXISTS (SELECT 1 FROM old) AS created, (SELECT count(*) FROM r) FROM u",
    2};

const struct db_stmt *const db_users_stmts[] = {&st_create,       &st_list, &st_get,
                                                &st_update,       &st_other_admins,
                                                &st_me,           &st_bootstrap, NULL};

int db_user_create(struct db *db, const char *username, const char *password_hash,
                   const char *email, const char *display_name, const char *roles,
                   const char *granted_by, json_t **out)
{
    const char *p[6] = {username, password_hash, email, display_name, roles ? roles : "",
                        granted_by};
    return rowjson_query_one(db, &st_create, p, out);
}

int db_user_list(struct db *db, const char *after, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[2] = {after, lim};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

int db_user_get(struct db *db, const char *username, json_t **out)
{
    const char *p[1] = {username};
    return rowjson_query_one(db, &st_get, p, out);
}

int db_user_update(struct db *db, const char *username, const char *display_name,
                   const char *email, const char *password_hash, const char *disabled,
                   const char *roles, const char *granted_by, json_t **out)
{
    const char *p[7] = {username, display_name, email, password_hash, disabled, roles,
                        granted_by};
    return rowjson_query_one(db, &st_update, p, out);
}

int db_user_other_admins(struct db *db, const char *username, int *count)
{
    const char *p[1] = {username};
    int e;
    PGresult *r = db_query(db, &st_other_admins, p, &e);
    if (!r)
        return e;
    *count = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}

int db_user_me(struct db *db, const char *user_id, json_t **out)
{
    const char *p[1] = {user_id};
    return rowjson_query_one(db, &st_me, p, out);
}

int db_user_bootstrap(struct db *db, const char *username, const char *password_hash,
                      bool *created, char *id_out)
{
    const char *p[2] = {username, password_hash};
    int e;
    PGresult *r = db_query(db, &st_bootstrap, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return AIDC_EINTERNAL;
    }
    snprintf(id_out, 37, "%s", PQgetvalue(r, 0, 0));
    *created = PQgetvalue(r, 0, 1)[0] == 't';
    PQclear(r);
    return 0;
}
