/* tokens.h - a user's API tokens (only their SHA-256 is stored). */
#ifndef AIDC_DB_TOKENS_H
#define AIDC_DB_TOKENS_H

#include "db.h"

#include <jansson.h>

/* scopes: comma-separated; tenant_id NULL for an unbound token. */
int db_token_create(struct db *db, const char *user_id, const char *tenant_id, const char *name,
                    const char *token_hash, const char *scopes, int expires_in_days,
                    json_t **out);
/* The user's live tokens created after cursor (created_at|id), oldest first. */
int db_token_list(struct db *db, const char *user_id, const char *after_ts,
                  const char *after_id, int limit, PGresult **out);
/* Revoke; AIDC_ENOTFOUND when the user has no such live token. */
int db_token_revoke(struct db *db, const char *user_id, const char *token_id, json_t **out);

extern const struct db_stmt *const db_tokens_stmts[];

#endif
