/* tokens.h - a user's API tokens (only their SHA-256 is stored). */
#ifndef AIDC_DB_TOKENS_H
#define AIDC_DB_TOKENS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>

/*
 * scopes: comma-separated; tenant_id NULL for an unbound token; parent_id the
 * token that creates this one (NULL for a session): the new token expires no
 * later than its parent and is revoked with it.
 */
struct db_token_new {
    const char *user_id;
    const char *tenant_id; /* bound to this tenant, or NULL */
    const char *name;
    const char *token_hash;
    const char *scopes; /* comma-separated */
    int expires_in_days;
    const char *parent_id; /* the token that creates it, or NULL */
    const char *node;      /* bound to this node, or NULL */
};
int db_token_create(struct db *db, const struct db_token_new *t, json_t **out);
/*
 * The user's live tokens created after cursor (created_at|id), oldest first;
 * with tenant_id only those bound to that tenant.
 */
int db_token_list(struct db *db, const char *user_id, const char *tenant_id,
                  const char *after_ts, const char *after_id, int limit, struct db_rows *out);
/*
 * Revoke a token and every token it created (recursively); with tenant_id
 * only a token bound to that tenant. AIDC_ENOTFOUND when there is no such
 * live token of the user. *out has "descendants": how many went with it.
 */
int db_token_revoke(struct db *db, const char *user_id, const char *tenant_id,
                    const char *token_id, json_t **out);

extern const struct db_stmt *const db_tokens_stmts[];

#endif
