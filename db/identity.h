/*
 * identity.h - the queries behind authentication: sessions, API tokens,
 * logins and their throttle, revocation, and periodic clean-up.
 *
 * These run before any tenant context exists (no transaction is open): the
 * tables involved are not tenant-owned, and memberships are read through the
 * SECURITY DEFINER function aidc_user_memberships().
 */
#ifndef AIDC_DB_IDENTITY_H
#define AIDC_DB_IDENTITY_H

#include "../server/request.h"
#include "db.h"

#include <stdbool.h>
#include <time.h>

enum identity_status {
    IDENT_OK = 0,
    IDENT_UNKNOWN,   /* no such user / token */
    IDENT_DISABLED,  /* user disabled */
    IDENT_REVOKED,   /* session logged out, token revoked, or invalidated by a password change */
    IDENT_EXPIRED,   /* token expired */
};

/*
 * Load the actor of a verified session (user id, jti, session epoch) into *a.
 * Returns 0 with *status telling whether the session is still good, or an
 * aidc_err when the database fails.
 */
int db_identity_session(struct db *db, const char *user_id, const char *jti, long epoch,
                        struct actor *a, enum identity_status *status);
/* Same for an API token given by its SHA-256 hex; also refreshes last_used_at. */
int db_identity_token(struct db *db, const char *token_hash, struct actor *a,
                      enum identity_status *status);

/* The user a login names: id, password hash (NULL: none), disabled, epoch. */
struct login_user {
    char id[37];
    long session_epoch;
    char *password_hash;
    bool disabled;
    bool found;
};
int db_identity_login_user(struct db *db, const char *username, struct login_user *out);
void db_identity_login_user_free(struct login_user *u);

/*
 * How long (seconds) logins for user_key / ip_key are still throttled given
 * the limits; 0 when not throttled.
 */
int db_identity_throttle(struct db *db, const char *user_key, const char *ip_key, int max_user,
                         int max_ip, int window_seconds, int *retry_after);
/* Count one failed login against both keys. */
int db_identity_login_failed(struct db *db, const char *user_key, const char *ip_key,
                             int window_seconds);
/* Forget the failures of user_key (after a successful login). */
int db_identity_login_succeeded(struct db *db, const char *user_key);
/* Store a better password hash for user_id (cost parameters raised). */
int db_identity_rehash(struct db *db, const char *user_id, const char *hash);
/* Revoke a session id until its expiry. */
int db_identity_revoke_session(struct db *db, const char *jti, time_t expires);
/* Delete expired revocations, login counters and idempotency keys. */
int db_identity_cleanup(struct db *db);

extern const struct db_stmt *const db_identity_stmts[];

#endif
