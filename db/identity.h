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

#include "../lib/actor.h"
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
    bool platform_admin;
    bool found;
};
int db_identity_login_user(struct db *db, const char *username, struct login_user *out);
void db_identity_login_user_free(struct login_user *u);

/*
 * The failed-login counters a login attempt is checked against, each with
 * its limit: the user name from this client address, the client address,
 * and the user name from anywhere.
 */
enum { LOGIN_KEY_PAIR, LOGIN_KEY_ADDRESS, LOGIN_KEY_USER, LOGIN_KEYS };
struct login_keys {
    const char *key[LOGIN_KEYS];
    int max[LOGIN_KEYS];
};
/*
 * How long (seconds) a login with these keys is still throttled (any key at
 * its limit within the window); 0 when not throttled.
 */
int db_identity_throttle(struct db *db, const struct login_keys *k, int window_seconds,
                         int *retry_after);
/* Count one failed login against every key. */
int db_identity_login_failed(struct db *db, const struct login_keys *k, int window_seconds);
/*
 * Forget the failures of the name from this address (after a successful
 * login). The name's count from anywhere stays: guessing from many addresses
 * is not reset by its owner's login.
 */
int db_identity_login_succeeded(struct db *db, const struct login_keys *k);
/* Store a better password hash for user_id (cost parameters raised). */
int db_identity_rehash(struct db *db, const char *user_id, const char *hash);
/*
 * Replace the user's password hash old_hash with new_hash and end every
 * session (the new session_epoch goes to *epoch). AIDC_ECONFLICT when the
 * hash is no longer old_hash or the user is disabled.
 */
int db_identity_password_change(struct db *db, const char *user_id, const char *old_hash,
                                const char *new_hash, long *epoch);
/* Revoke a session id until its expiry. */
int db_identity_revoke_session(struct db *db, const char *jti, time_t expires);
/* Delete expired revocations, login counters and idempotency keys. */
int db_identity_cleanup(struct db *db);

extern const struct db_stmt *const db_identity_stmts[];

#endif
