/*
 * users.h - user accounts and their global roles (platform-wide objects;
 * only platform admins reach these through the API).
 */
#ifndef AIDC_DB_USERS_H
#define AIDC_DB_USERS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>

/*
 * Create a user. roles is a comma-separated list of global roles ("" for
 * none); granted_by the acting user (NULL for bootstrap). AIDC_ECONFLICT:
 * username taken.
 */
int db_user_create(struct db *db, const char *username, const char *password_hash,
                   const char *email, const char *display_name, const char *roles,
                   const char *granted_by, json_t **out);
/* Up to limit+1 users with username > after, by username. */
int db_user_list(struct db *db, const char *after, int limit, struct db_rows *out);
int db_user_get(struct db *db, const char *username, json_t **out);
/*
 * Change the given fields (NULL = keep). roles replaces the global roles
 * when not NULL. A new password hash or disabling ends existing sessions.
 */
int db_user_update(struct db *db, const char *username, const char *display_name,
                   const char *email, const char *password_hash, const char *disabled,
                   const char *roles, const char *granted_by, json_t **out);
/* Number of enabled platform admins other than username. */
int db_user_other_admins(struct db *db, const char *username, int *count);
/* The user object of id (for /me), with memberships. */
int db_user_me(struct db *db, const char *user_id, json_t **out);
/*
 * Bootstrap: create username as an enabled platform admin with this password
 * hash, or reset an existing one to that. *created tells which.
 */
int db_user_bootstrap(struct db *db, const char *username, const char *password_hash,
                      bool *created, char *id_out);

extern const struct db_stmt *const db_users_stmts[];

#endif
