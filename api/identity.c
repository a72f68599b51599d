/*
 * identity.c - login, logout, /me, the caller's password and sessions.
 *
 * Login runs without a request transaction (RF_NO_TX): a failed attempt must
 * still count against the throttle, which a rolled-back transaction would
 * forget. Unknown user, wrong password and a user without a password cost the
 * same scrypt verification and get the same 401.
 */
#include "identity.h"

#include "../db/db.h"
#include "../db/identity.h"
#include "../db/sessions.h"
#include "../db/users.h"
#include "../lib/config.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "../server/auth.h"
#include "../server/password.h"
#include "../server/ratelimit.h"
#include "../server/session.h"
#include "../server/validate.h"
#include "ldaplogin.h"
#include "paging.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct vfield login_fields[] = {
    {"username", V_STRING, V_REQUIRED, 1, 256, NULL, 0},
    {"password", V_STRING, V_REQUIRED, 1, 1024, NULL, 0},
    {"provider", V_STRING, 0, 2, 32, NULL, 0}, /* an LDAP provider checks the password */
};

bool api_identity_cookie_secure(const struct req *rq)
{
    switch (rq->cfg->cookie_secure) {
    case COOKIE_SECURE_ON:
        return true;
    case COOKIE_SECURE_OFF:
        return false;
    default:
        return !config_listen_is_loopback(rq->cfg);
    }
}

/*
 * The session cookie, and beside it a hint the portal's script can read (the
 * session cookie is HttpOnly): "1" while a session cookie was set, with the same
 * lifetime, cleared with it. It holds no secret and grants nothing; it spares a
 * signed-out browser a GET /me that could only answer 401 (and be audited).
 */
#define SIGNED_IN_HINT "aidc_signed_in"

static void set_cookie(struct req *rq, struct resp *rs, const char *value, int max_age)
{
    const char *secure = api_identity_cookie_secure(rq) ? "; Secure" : "";
    char *c = xasprintf("%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d%s", AUTH_COOKIE,
                        value, max_age, secure);
    resp_header(rs, MHD_HTTP_HEADER_SET_COOKIE, c);
    free(c);
    c = xasprintf("%s=%s; Path=/; SameSite=Strict; Max-Age=%d%s", SIGNED_IN_HINT,
                  value[0] ? "1" : "", max_age, secure);
    resp_header(rs, MHD_HTTP_HEADER_SET_COOKIE, c);
    free(c);
}

/*
 * The failed-password counters of username from this client. A name alone
 * would let anyone lock its owner out with a few wrong passwords: the tight
 * limit is per name and address, the address has its own, and only many
 * failures from many addresses close the name.
 */
struct throttle {
    char *pair, *ip, *user;
    struct login_keys keys;
};

static void throttle_init(struct throttle *t, const struct req *rq, const char *typed)
{
    /* A directory matches "ALICE" and " alice " as alice: counted apart, each
     * spelling would get its own failures. Folded: ASCII case, spaces gone. */
    char username[257];
    size_t n = 0;
    for (const char *c = typed; *c && n + 1 < sizeof username; c++) {
        if (*c == ' ')
            continue;
        username[n] = *c;
        if (*c >= 'A' && *c <= 'Z')
            username[n] = (char)(*c - 'A' + 'a');
        n++;
    }
    username[n] = '\0';
    char addr[64];
    ratelimit_address_key(rq->source_ip, addr, sizeof addr);
    t->pair = xasprintf("pair:%s %s", addr, username);
    t->ip = xasprintf("ip:%s", addr);
    t->user = xasprintf("user:%s", username);
    t->keys = (struct login_keys){
        .key =
            {[LOGIN_KEY_PAIR] = t->pair, [LOGIN_KEY_ADDRESS] = t->ip, [LOGIN_KEY_USER] = t->user},
        .max = {[LOGIN_KEY_PAIR] = rq->cfg->login_max_failures,
                [LOGIN_KEY_ADDRESS] = rq->cfg->login_max_failures_per_ip,
                [LOGIN_KEY_USER] = rq->cfg->login_max_failures_per_user}};
}

static void throttle_free(struct throttle *t)
{
    free(t->pair);
    free(t->ip);
    free(t->user);
}

/* 0 when a password may be tried now; else 429 with Retry-After (or a database error). */
static int throttle_check(struct req *rq, struct resp *rs, const struct throttle *t)
{
    int retry = 0;
    int e = db_identity_throttle(rq->db, &t->keys, rq->cfg->login_window_seconds, &retry);
    if (e || retry <= 0)
        return e;
    e = api_problem(rs, PROBLEM_LOGIN_THROTTLED, json_pack("{s:i}", "seconds", retry));
    rs->err.retry_after = retry;
    return e;
}

int api_identity_session_start(struct req *rq, struct resp *rs, const char *user_id, long epoch,
                               char **jwt_out)
{
    struct session_claims c;
    char *jwt = session_mint(user_id, epoch, rq->cfg->jwt_ttl_seconds, &c);
    if (!jwt)
        return AIDC_EINTERNAL;
    const struct db_session_new rec = {.jti = c.jti,
                                       .user_id = user_id,
                                       .epoch = epoch,
                                       .expires = c.exp,
                                       .source_ip = rq->source_ip,
                                       .user_agent = rq->user_agent};
    int e = db_session_record(rq->db, &rec);
    if (e) {
        free(jwt);
        return e;
    }
    set_cookie(rq, rs, jwt, rq->cfg->jwt_ttl_seconds);
    if (!rs->audit.details)
        rs->audit.details = json_object();
    json_object_set_new(rs->audit.details, "session", json_string(c.jti));
    if (jwt_out)
        *jwt_out = jwt;
    else
        free(jwt);
    return 0;
}

/* A new session for the user, its JWT in the answer (200, as login's). */
static int open_session(struct req *rq, struct resp *rs, const char *user_id, long epoch)
{
    char *jwt = NULL;
    int e = api_identity_session_start(rq, rs, user_id, epoch, &jwt);
    if (e)
        return e;
    resp_json(rs, MHD_HTTP_OK,
              json_pack("{s:s, s:s, s:i}", "access_token", jwt, "token_type", "Bearer",
                        "expires_in", rq->cfg->jwt_ttl_seconds));
    free(jwt);
    return 0;
}

/* Count the failure, and answer the one 401 of every refused login. */
static int login_refused(struct req *rq, struct resp *rs, const struct login_keys *keys)
{
    int e = db_identity_login_failed(rq->db, keys, rq->cfg->login_window_seconds);
    if (e)
        return e;
    return api_problem(rs, PROBLEM_LOGIN_FAILED, NULL);
}

/* The password checked by an LDAP provider; the throttle counts as for aidc's own. */
static int directory_login(struct req *rq, struct resp *rs, const struct throttle *t,
                           const char *provider, const char *username, const char *password)
{
    bool refused = false;
    char *jwt = NULL;
    int e = ldaplogin_run(rq, rs, provider, username, password, &refused, &jwt);
    if (!e && refused)
        return login_refused(rq, rs, &t->keys);
    if (!e)
        e = db_identity_login_succeeded(rq->db, &t->keys);
    if (!e)
        resp_json(rs, MHD_HTTP_OK,
                  json_pack("{s:s, s:s, s:i}", "access_token", jwt, "token_type", "Bearer",
                            "expires_in", rq->cfg->jwt_ttl_seconds));
    free(jwt);
    return e;
}

int api_identity_login(struct req *rq, struct resp *rs)
{
    if (!validate_object(rq->json, login_fields, 3, rs))
        return api_fail_fields(rs);
    const char *username = vstr(rq->json, "username");
    const char *password = vstr(rq->json, "password");
    const char *provider = vstr(rq->json, "provider");
    resp_audit(rs, "user", username, json_pack("{s:s}", "username", username));
    struct throttle t;
    throttle_init(&t, rq, username);
    struct login_user u = {0};
    int e = throttle_check(rq, rs, &t);
    if (e)
        goto out;
    if (provider) {
        e = directory_login(rq, rs, &t, provider, username, password);
        goto out;
    }
    e = db_identity_login_user(rq->db, username, &u);
    if (e)
        goto out;
    bool ok = password_verify(password, u.found ? u.password_hash : NULL);
    if (!ok) {
        e = login_refused(rq, rs, &t.keys);
        goto out;
    }
    if (u.disabled) {
        /* the same answer as a wrong password: no oracle for passwords of
         * disabled accounts; the audit record says why */
        json_object_set_new(rs->audit.details, "reason", json_string("user is disabled"));
        e = login_refused(rq, rs, &t.keys);
        goto out;
    }
    if (rq->cfg->password_login == PASSWORD_LOGIN_ADMINS && !u.platform_admin) {
        /* told only to whoever knows the password: no oracle */
        json_object_set_new(rs->audit.details, "reason",
                            json_string("password sign-in is for platform admins only"));
        e = api_problem(rs, PROBLEM_AUTH_PASSWORD_LOGIN_OFF, NULL);
        goto out;
    }
    e = db_identity_login_succeeded(rq->db, &t.keys);
    if (e)
        goto out;
    if (password_needs_rehash(u.password_hash)) {
        char *h = password_hash(password);
        if (h && db_identity_rehash(rq->db, u.id, h) != 0)
            log_warn("could not upgrade the password hash of %s", username);
        free(h);
    }
    /* the audit event names who logged in */
    snprintf(rq->actor.user_id, sizeof rq->actor.user_id, "%s", u.id);
    free(rq->actor.username);
    rq->actor.username = xstrdup(username);
    e = open_session(rq, rs, u.id, u.session_epoch);
out:
    db_identity_login_user_free(&u);
    throttle_free(&t);
    return e;
}

/*
 * Sessions and the password are the user's, not a tenant's: a token bound to
 * one speaks for that tenant only. 0, or the 403 p saying what it cannot do.
 */
static int tenant_bound_refused(const struct req *rq, struct resp *rs, enum problem p)
{
    if (!rq->actor.token_tenant[0])
        return 0;
    return api_problem(rs, p, NULL);
}

static const struct vfield password_fields[] = {
    {"current_password", V_STRING, V_REQUIRED, 1, 1024, NULL, 0},
    {"new_password", V_STRING, V_REQUIRED, 1, 1024, NULL, 0},
};

/*
 * Like a login, it runs without a request transaction (RF_NO_TX): a wrong
 * current password counts against the same throttle, so this is no way
 * around it to guess a stolen session's owner's password.
 */
int api_identity_password(struct req *rq, struct resp *rs)
{
    int refused = tenant_bound_refused(rq, rs, PROBLEM_TOKEN_BOUND_PASSWORD);
    if (refused)
        return refused;
    if (!validate_object(rq->json, password_fields, 2, rs))
        return api_fail_fields(rs);
    const char *current = vstr(rq->json, "current_password");
    const char *next = vstr(rq->json, "new_password");
    if (validate_password(next, "new_password", rs) && strcmp(current, next) == 0)
        api_field_problem(rs, "new_password", PROBLEM_PASSWORD_UNCHANGED, NULL);
    if (rs->err.nfields)
        return api_fail_fields(rs);
    resp_audit(rs, "user", rq->actor.username, json_pack("{s:b}", "sessions_ended", 1));
    struct throttle t;
    throttle_init(&t, rq, rq->actor.username);
    struct login_user u = {0};
    char *hash = NULL;
    long epoch = 0;
    int e = throttle_check(rq, rs, &t);
    if (!e)
        e = db_identity_login_user(rq->db, rq->actor.username, &u);
    if (e)
        goto out;
    if (!password_verify(current, u.found ? u.password_hash : NULL)) {
        e = db_identity_login_failed(rq->db, &t.keys, rq->cfg->login_window_seconds);
        if (!e) {
            api_field_problem(rs, "current_password", PROBLEM_PASSWORD_CURRENT_WRONG, NULL);
            e = api_fail_fields(rs);
        }
        goto out;
    }
    hash = password_hash(next);
    e = hash ? db_identity_password_change(rq->db, u.id, u.password_hash, hash, &epoch)
             : AIDC_EINTERNAL;
    if (e == AIDC_ECONFLICT) {
        e = api_problem(rs, PROBLEM_PASSWORD_CHANGED_MEANWHILE, NULL);
        goto out;
    }
    if (!e)
        e = db_identity_login_succeeded(rq->db, &t.keys);
    /* every other session is over; the caller goes on in a new one */
    if (!e)
        e = open_session(rq, rs, u.id, epoch);
out:
    free(hash);
    db_identity_login_user_free(&u);
    throttle_free(&t);
    return e;
}

int api_identity_logout(struct req *rq, struct resp *rs)
{
    set_cookie(rq, rs, "", 0);
    if (!rq->actor.authenticated) {
        rs->audit.skip = true; /* nothing ended: no session was presented */
        return resp_json(rs, MHD_HTTP_NO_CONTENT, NULL);
    }
    if (rq->actor.jti[0]) {
        int e = db_identity_revoke_session(rq->db, rq->actor.jti, rq->actor.session_expires);
        if (e)
            return e;
    }
    resp_audit(rs, "session", rq->actor.jti[0] ? rq->actor.jti : NULL, NULL);
    return resp_json(rs, MHD_HTTP_NO_CONTENT, NULL);
}

int api_identity_me(struct req *rq, struct resp *rs)
{
    json_t *me = NULL;
    int e = db_user_me(rq->db, rq->actor.user_id, &me);
    if (e)
        return e;
    json_object_del(me, "disabled");
    if (!json_is_array(json_object_get(me, "memberships")))
        json_object_set_new(me, "memberships", json_array());
    if (rq->actor.token_tenant[0]) {
        /* a tenant-bound token speaks for its tenant only */
        json_t *all = json_object_get(me, "memberships"), *mine = json_array();
        size_t i;
        json_t *m;
        json_array_foreach(all, i, m) if (rq->actor.nmemberships &&
                                          strcmp(json_string_value(json_object_get(m, "tenant")),
                                                 rq->actor.memberships[0].slug) == 0)
            json_array_append(mine, m);
        json_object_set_new(me, "memberships", mine);
        json_object_set_new(me, "roles", json_array());
    }
    if (rq->actor.via_token) {
        json_object_set_new(me, "token",
                            json_pack("{s:s, s:o}", "id", rq->actor.token_id, "scopes",
                                      auth_scopes_json(rq->actor.scopes)));
        if (rq->actor.token_tenant[0] && rq->actor.nmemberships)
            json_object_set_new(json_object_get(me, "token"), "tenant",
                                json_string(rq->actor.memberships[0].slug));
    }
    return resp_json(rs, MHD_HTTP_OK, me);
}

int api_identity_sessions(struct req *rq, struct resp *rs)
{
    int refused = tenant_bound_refused(rq, rs, PROBLEM_TOKEN_BOUND_SESSIONS);
    if (refused)
        return refused;
    struct page pg;
    int e = paging_parse_keyed(rq, rs, &pg);
    if (e)
        return e;
    e = db_session_list(rq->db, rq->actor.user_id, rq->actor.jti[0] ? rq->actor.jti : NULL,
                        pg.after, pg.after_id, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

int api_identity_session_end(struct req *rq, struct resp *rs)
{
    int refused = tenant_bound_refused(rq, rs, PROBLEM_TOKEN_BOUND_SESSIONS);
    if (refused)
        return refused;
    const char *id = req_param(rq, "id");
    if (!crypto_uuid_valid(id)) {
        api_field_problem(rs, "id", PROBLEM_V_UUID, NULL);
        return api_fail_fields(rs);
    }
    json_t *s = NULL;
    int e = db_session_end(rq->db, rq->actor.user_id, id, &s);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_SESSION_NOT_FOUND, json_pack("{s:s}", "id", id));
    if (e)
        return e;
    /* where and when it began: what its owner recognised it by */
    resp_audit(rs, "session", id,
               json_pack("{s:O, s:O, s:O}", "created_at", json_object_get(s, "created_at"),
                         "source_ip", json_object_get(s, "source_ip"), "user_agent",
                         json_object_get(s, "user_agent")));
    json_decref(s);
    if (strcasecmp(id, rq->actor.jti) == 0)
        set_cookie(rq, rs, "", 0); /* the caller's own: it is logged out */
    return resp_json(rs, MHD_HTTP_NO_CONTENT, NULL);
}
