/* tokens.c - API tokens. */
#include "tokens.h"

#include "rowjson.h"

#include <stdio.h>

#define TOKEN_COLS                                                                                \
    "k.id, k.name, to_json(k.scopes) AS scopes,"                                                 \
    " (SELECT slug FROM tenants WHERE id = k.tenant_id) AS tenant,"                              \
    " k.node, k.expires_at, k.last_used_at, k.created_at"

static const struct db_stmt st_create = {
    "token_create",
    "WITH k AS (INSERT INTO api_tokens (user_id, tenant_id, name, token_hash, scopes, expires_at,"
    "                                   parent_id, node)"
    "           VALUES ($1::uuid, $2::uuid, $3, $4, string_to_array($5, ','),"
    "                   least(now() + make_interval(days => $6::int),"
    "                         coalesce((SELECT expires_at FROM api_tokens WHERE id = $7::uuid),"
    "                                  'infinity')),"
    "                   $7::uuid, $8) RETURNING *)"
    " SELECT " TOKEN_COLS " FROM k",
    8};
/* Cursor: created_at (exact text) and id, so tokens created at the same instant page correctly.
 * A tenant-bound caller ($5) sees only the tokens bound to its tenant. */
static const struct db_stmt st_list = {
    "token_list",
    "SELECT " TOKEN_COLS ","
    " k.created_at::text || '|' || k.id AS _cursor"
    " FROM api_tokens k WHERE k.user_id = $1::uuid AND k.revoked_at IS NULL"
    " AND ($5::uuid IS NULL OR k.tenant_id = $5::uuid)"
    " AND ($2::timestamptz IS NULL OR (k.created_at, k.id) > ($2::timestamptz, $3::uuid))"
    " ORDER BY k.created_at, k.id LIMIT $4::int + 1",
    5};
/* Revoking a token revokes every token it created, and theirs, at once. */
static const struct db_stmt st_revoke = {
    "token_revoke",
    "WITH RECURSIVE tree AS ("
    "   SELECT id FROM api_tokens WHERE id = $2::uuid AND user_id = $1::uuid"
    "     AND revoked_at IS NULL AND ($3::uuid IS NULL OR tenant_id = $3::uuid)"
    "   UNION SELECT c.id FROM api_tokens c JOIN tree ON c.parent_id = tree.id"
    "     WHERE c.revoked_at IS NULL),"
    " gone AS (UPDATE api_tokens t SET revoked_at = now() FROM tree WHERE t.id = tree.id"
    "          RETURNING t.*)"
    " SELECT " TOKEN_COLS ", (SELECT count(*) FROM gone) - 1 AS descendants"
    " FROM gone k WHERE k.id = $2::uuid",
    3};

const struct db_stmt *const db_tokens_stmts[] = {&st_create, &st_list, &st_revoke, NULL};

int db_token_create(struct db *db, const struct db_token_new *t, json_t **out)
{
    char days[16];
    snprintf(days, sizeof days, "%d", t->expires_in_days);
    const char *p[8] = {t->user_id, t->tenant_id, t->name,      t->token_hash,
                        t->scopes,  days,         t->parent_id, t->node};
    return rowjson_query_one(db, &st_create, p, out);
}

int db_token_list(struct db *db, const char *user_id, const char *tenant_id,
                  const char *after_ts, const char *after_id, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[5] = {user_id, after_ts, after_id, lim, tenant_id};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

int db_token_revoke(struct db *db, const char *user_id, const char *tenant_id,
                    const char *token_id, json_t **out)
{
    const char *p[3] = {user_id, token_id, tenant_id};
    return rowjson_query_one(db, &st_revoke, p, out);
}
