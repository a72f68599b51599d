/* identity.c - authentication queries (see identity.h). */
#include "identity.h"

#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACTOR_COLUMNS                                                                             \
    " u.id AS user_id, u.username, u.disabled, u.auth_version,"                                    \
    " coalesce((SELECT string_agg(role, ',' ORDER BY role) FROM user_roles r"                      \
    "           WHERE r.user_id = u.id), '') AS roles,"                                            \
    " aidc_user_memberships(u.id) AS memberships,"                                                 \
    " (SELECT v FROM aidc_auth_epoch) AS auth_epoch"

static const struct db_stmt st_session = {
    "identity_session",
    "SELECT" ACTOR_COLUMNS ","
    " u.session_epoch <> $3::int AS stale,"
    " EXISTS (SELECT 1 FROM revoked_sessions s WHERE s.jti = $2::uuid) AS revoked"
    " FROM users u WHERE u.id = $1::uuid",
    3};

/* last_used_at is written at most once a minute per token: a read-mostly path
 * must not turn every request into a committed write. */
static const struct db_stmt st_token = {
    "identity_token",
    "WITH t AS (SELECT id, user_id, tenant_id, scopes, expires_at, last_used_at, revoked_at, node"
    "             FROM api_tokens WHERE token_hash = $1),"
    " touch AS (UPDATE api_tokens a SET last_used_at = now() FROM t"
    "            WHERE a.id = t.id AND t.revoked_at IS NULL AND t.expires_at > now()"
    "              AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '60 seconds')"
    "           RETURNING a.id)"
    " SELECT" ACTOR_COLUMNS ","
    " t.id AS token_id, array_to_string(t.scopes, ',') AS scopes, t.tenant_id AS token_tenant,"
    " t.node AS token_node,"
    " t.expires_at <= now() AS expired, t.revoked_at IS NOT NULL AS revoked,"
    " floor(extract(epoch FROM t.expires_at))::bigint AS token_expires,"
    " (SELECT count(*) FROM touch) AS touched"
    " FROM t JOIN users u ON u.id = t.user_id",
    1};

static const struct db_stmt st_login_user = {
    "identity_login_user",
    "SELECT id, password_hash, disabled, session_epoch,"
    " EXISTS (SELECT 1 FROM user_roles r WHERE r.user_id = users.id AND r.role = 'platform_admin')"
    " FROM users WHERE username = $1",
    1};

static const struct db_stmt st_throttle = {
    "identity_throttle",
    "SELECT key, failures,"
    " ceil(extract(epoch FROM window_start + make_interval(secs => $4::int) - now()))::int"
    " FROM login_failures"
    " WHERE key IN ($1, $2, $3) AND window_start > now() - make_interval(secs => $4::int)",
    4};

static const struct db_stmt st_failed = {
    "identity_login_failed",
    "INSERT INTO login_failures AS f (key, window_start, failures)"
    " VALUES ($1, now(), 1), ($2, now(), 1), ($3, now(), 1)"
    " ON CONFLICT (key) DO UPDATE SET"
    "  failures = CASE WHEN f.window_start > now() - make_interval(secs => $4::int)"
    "                  THEN f.failures + 1 ELSE 1 END,"
    "  window_start = CASE WHEN f.window_start > now() - make_interval(secs => $4::int)"
    "                      THEN f.window_start ELSE now() END",
    4};

static const struct db_stmt st_succeeded = {
    "identity_login_succeeded", "DELETE FROM login_failures WHERE key = $1", 1};

static const struct db_stmt st_rehash = {
    "identity_rehash", "UPDATE users SET password_hash = $2 WHERE id = $1::uuid", 2};

/* Only over the hash the caller proved it knows: a concurrent change wins. */
static const struct db_stmt st_password = {
    "identity_password_change",
    "UPDATE users SET password_hash = $3, session_epoch = session_epoch + 1, updated_at = now()"
    " WHERE id = $1::uuid AND password_hash = $2 AND NOT disabled RETURNING session_epoch",
    3};

static const struct db_stmt st_revoke = {
    "identity_revoke_session",
    "INSERT INTO revoked_sessions (jti, expires_at) VALUES ($1::uuid, to_timestamp($2::bigint))"
    " ON CONFLICT (jti) DO NOTHING",
    2};

static const struct db_stmt st_cleanup = {
    "identity_cleanup",
    "WITH a AS (DELETE FROM revoked_sessions WHERE expires_at < now() RETURNING 1),"
    " b AS (DELETE FROM login_failures WHERE window_start < now() - interval '1 day' RETURNING 1),"
    " c AS (DELETE FROM idempotency_keys WHERE expires_at < now() RETURNING 1),"
    " d AS (DELETE FROM sessions WHERE expires_at < now() RETURNING 1),"
    " e AS (DELETE FROM oidc_logins WHERE expires_at < now() RETURNING 1)"
    " SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b), (SELECT count(*) FROM c),"
    " (SELECT count(*) FROM d), (SELECT count(*) FROM e)",
    0};

const struct db_stmt *const db_identity_stmts[] = {
    &st_session, &st_token, &st_login_user, &st_throttle, &st_failed,
    &st_succeeded, &st_rehash, &st_revoke, &st_cleanup, &st_password, NULL};

static int tenant_role_of(const char *s)
{
    if (strcmp(s, "tenant_admin") == 0)
        return TR_ADMIN;
    if (strcmp(s, "member") == 0)
        return TR_MEMBER;
    if (strcmp(s, "viewer") == 0)
        return TR_VIEWER;
    return TR_NONE;
}

static unsigned global_roles_of(const char *csv)
{
    unsigned bits = 0;
    if (strstr(csv, "platform_admin"))
        bits |= GR_PLATFORM_ADMIN;
    if (strstr(csv, "finance"))
        bits |= GR_FINANCE;
    if (strstr(csv, "auditor"))
        bits |= GR_AUDITOR;
    return bits;
}

/* Fill the user part of *a from row 0 of r. */
static int fill_actor(const PGresult *r, struct actor *a)
{
    const char *v = rowjson_get(r, 0, "user_id");
    if (!v)
        return AIDC_EINTERNAL;
    snprintf(a->user_id, sizeof a->user_id, "%s", v);
    free(a->username);
    a->username = xstrdup(rowjson_get(r, 0, "username"));
    a->roles = global_roles_of(rowjson_get(r, 0, "roles"));
    a->auth_version = strtoll(rowjson_get(r, 0, "auth_version"), NULL, 10);
    a->auth_epoch = strtoll(rowjson_get(r, 0, "auth_epoch"), NULL, 10);
    json_error_t jerr;
    json_t *ms = json_loads(rowjson_get(r, 0, "memberships"), 0, &jerr);
    if (!json_is_array(ms)) {
        json_decref(ms);
        return AIDC_EINTERNAL;
    }
    size_t n = json_array_size(ms);
    a->memberships = n ? xcalloc(n, sizeof *a->memberships) : NULL;
    a->nmemberships = n;
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(ms, i);
        struct membership *dst = &a->memberships[i];
        snprintf(dst->tenant_id, sizeof dst->tenant_id, "%s",
                 json_string_value(json_object_get(m, "tenant_id")));
        dst->slug = xstrdup(json_string_value(json_object_get(m, "tenant")));
        dst->role = tenant_role_of(json_string_value(json_object_get(m, "role")));
        dst->suspended = json_is_true(json_object_get(m, "suspended"));
        dst->members_see_all_jobs = json_is_true(json_object_get(m, "members_see_all_jobs"));
    }
    json_decref(ms);
    return 0;
}

static bool col_true(const PGresult *r, const char *col)
{
    const char *v = rowjson_get(r, 0, col);
    return v && v[0] == 't';
}

int db_identity_session(struct db *db, const char *user_id, const char *jti, long epoch,
                        struct actor *a, enum identity_status *status)
{
    char eps[24];
    snprintf(eps, sizeof eps, "%ld", epoch);
    const char *p[3] = {user_id, jti, eps};
    int e;
    PGresult *r = db_query(db, &st_session, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1) {
        *status = IDENT_UNKNOWN;
    } else if (col_true(r, "disabled")) {
        *status = IDENT_DISABLED;
    } else if (col_true(r, "stale") || col_true(r, "revoked")) {
        *status = IDENT_REVOKED;
    } else {
        *status = IDENT_OK;
        e = fill_actor(r, a);
        if (!e) {
            a->scopes = SC_ALL;
            snprintf(a->jti, sizeof a->jti, "%s", jti);
        }
    }
    PQclear(r);
    return e;
}

static unsigned scopes_of(const char *csv)
{
    static const char *const names[] = {"jobs:read",     "jobs:write",    "images:read",
                                        "images:write",  "usage:read",    "billing:write",
                                        "audit:read",    "audit:ingest",  "admin",
                                        "gpu-faults:write"};
    unsigned bits = 0;
    char *dup = xstrdup(csv), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
        for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(t, names[i]) == 0)
                bits |= 1u << i;
    free(dup);
    return bits;
}

int db_identity_token(struct db *db, const char *token_hash, struct actor *a,
                      enum identity_status *status)
{
    const char *p[1] = {token_hash};
    int e;
    PGresult *r = db_query(db, &st_token, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1) {
        *status = IDENT_UNKNOWN;
    } else if (col_true(r, "revoked")) {
        *status = IDENT_REVOKED;
    } else if (col_true(r, "expired")) {
        *status = IDENT_EXPIRED;
    } else if (col_true(r, "disabled")) {
        *status = IDENT_DISABLED;
    } else {
        *status = IDENT_OK;
        e = fill_actor(r, a);
        if (!e) {
            a->via_token = true;
            snprintf(a->token_id, sizeof a->token_id, "%s", rowjson_get(r, 0, "token_id"));
            a->scopes = scopes_of(rowjson_get(r, 0, "scopes"));
            a->token_expires = (time_t)strtoll(rowjson_get(r, 0, "token_expires"), NULL, 10);
            const char *tt = rowjson_get(r, 0, "token_tenant");
            snprintf(a->token_tenant, sizeof a->token_tenant, "%s", tt ? tt : "");
            const char *tn = rowjson_get(r, 0, "token_node");
            snprintf(a->token_node, sizeof a->token_node, "%s", tn ? tn : "");
        }
    }
    PQclear(r);
    return e;
}

int db_identity_login_user(struct db *db, const char *username, struct login_user *out)
{
    const char *p[1] = {username};
    int e;
    memset(out, 0, sizeof *out);
    PGresult *r = db_query(db, &st_login_user, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 1) {
        out->found = true;
        snprintf(out->id, sizeof out->id, "%s", PQgetvalue(r, 0, 0));
        out->password_hash = PQgetisnull(r, 0, 1) ? NULL : xstrdup(PQgetvalue(r, 0, 1));
        out->disabled = PQgetvalue(r, 0, 2)[0] == 't';
        out->session_epoch = strtol(PQgetvalue(r, 0, 3), NULL, 10);
        out->platform_admin = PQgetvalue(r, 0, 4)[0] == 't';
    }
    PQclear(r);
    return 0;
}

void db_identity_login_user_free(struct login_user *u)
{
    free(u->password_hash);
    u->password_hash = NULL;
}

int db_identity_throttle(struct db *db, const struct login_keys *k, int window_seconds,
                         int *retry_after)
{
    char win[16];
    snprintf(win, sizeof win, "%d", window_seconds);
    const char *p[LOGIN_KEYS + 1] = {k->key[0], k->key[1], k->key[2], win};
    int e;
    *retry_after = 0;
    PGresult *r = db_query(db, &st_throttle, p, &e);
    if (!r)
        return e;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *key = PQgetvalue(r, i, 0);
        int failures = (int)strtol(PQgetvalue(r, i, 1), NULL, 10);
        int left = (int)strtol(PQgetvalue(r, i, 2), NULL, 10);
        for (int j = 0; j < LOGIN_KEYS; j++)
            if (strcmp(key, k->key[j]) == 0 && failures >= k->max[j] && left > *retry_after)
                *retry_after = left < 1 ? 1 : left;
    }
    PQclear(r);
    return 0;
}

int db_identity_login_failed(struct db *db, const struct login_keys *k, int window_seconds)
{
    char win[16];
    snprintf(win, sizeof win, "%d", window_seconds);
    const char *p[LOGIN_KEYS + 1] = {k->key[0], k->key[1], k->key[2], win};
    return db_exec(db, &st_failed, p);
}

int db_identity_login_succeeded(struct db *db, const struct login_keys *k)
{
    const char *p[1] = {k->key[LOGIN_KEY_PAIR]};
    return db_exec(db, &st_succeeded, p);
}

int db_identity_rehash(struct db *db, const char *user_id, const char *hash)
{
    const char *p[2] = {user_id, hash};
    return db_exec(db, &st_rehash, p);
}

int db_identity_password_change(struct db *db, const char *user_id, const char *old_hash,
                                const char *new_hash, long *epoch)
{
    const char *p[3] = {user_id, old_hash, new_hash};
    int e;
    PGresult *r = db_query(db, &st_password, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return AIDC_ECONFLICT;
    }
    *epoch = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}

int db_identity_revoke_session(struct db *db, const char *jti, time_t expires)
{
    char exp[24];
    snprintf(exp, sizeof exp, "%lld", (long long)expires);
    const char *p[2] = {jti, exp};
    return db_exec(db, &st_revoke, p);
}

int db_identity_cleanup(struct db *db)
{
    int e;
    PGresult *r = db_query(db, &st_cleanup, NULL, &e);
    if (!r)
        return e;
    log_debug("clean-up removed %s revocations, %s login counters, %s idempotency keys, "
              "%s sessions, %s unfinished single sign-ons",
              PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3),
              PQgetvalue(r, 0, 4));
    PQclear(r);
    return 0;
}
