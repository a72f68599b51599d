/*
 * test_identity.c - login, throttling, sessions and cookies, logout, /me,
 * API tokens, user administration, lock-outs that take effect at once, and
 * `aidcd bootstrap`, against the real aidcd and PostgreSQL.
 *
 * The server trusts X-Forwarded-For from 127.0.0.1 here, so each test that
 * fails logins does it from an address of its own and the per-address
 * throttle of one test cannot lock out another.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "lib/clock.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const server_env[] = {
    "AIDC_LOGIN_MAX_FAILURES=3",
    "AIDC_LOGIN_MAX_FAILURES_PER_IP=6",
    "AIDC_LOGIN_MAX_FAILURES_PER_USER=8",
    "AIDC_LOGIN_WINDOW_SECONDS=600",
    "AIDC_TRUSTED_PROXIES=127.0.0.1",
    /* the real cost: an unknown user's dummy check must take as long as a real one */
    "AIDC_PASSWORD_HASH_COST=15",
    NULL,
};

static void setup(void)
{
    harness_setup("identity", server_env);
}

static void teardown(void)
{
    harness_teardown();
}

/* POST /auth/login from a given client address; returns the status. */
static long login_from(const char *ip, const char *user, const char *pw, struct http_res *out)
{
    const char *xff[] = {fmt("X-Forwarded-For: %s", ip), NULL};
    const char *body = fmt("{\"username\":\"%s\",\"password\":\"%s\"}", user, pw);
    return http_do(&harness_srv, "POST", "/api/v1/auth/login", NULL, body, xff, out);
}

/* Number of audit events matching action/outcome and a details substring. */
static int audit_count(const char *action, const char *outcome, const char *needle)
{
    const char *p[3] = {action, outcome, needle ? needle : ""};
    PGresult *r =
        harness_sql(harness_srv.owner_url,
                    "SELECT count(*) FROM audit_log WHERE action = $1 AND outcome = $2"
                    " AND (details::text || coalesce(source_ip::text, '')) LIKE '%' || $3 || '%'",
                    3, p);
    ck_assert_ptr_nonnull(r);
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* POST /api/v1/tokens as bearer with scopes (a JSON array) and tenant (or NULL);
 * the status, the answer in *r. */
static long token_as(const char *bearer, const char *scopes, const char *tenant, struct http_res *r)
{
    const char *body =
        tenant ? fmt("{\"name\":\"scoped\",\"scopes\":%s,\"tenant\":\"%s\"}", scopes, tenant)
               : fmt("{\"name\":\"scoped\",\"scopes\":%s}", scopes);
    return reqj("POST", "/api/v1/tokens", bearer, body, r);
}

/* The same, expecting want; a refusal must be token.scope_role naming scope. */
static void token_scope(const char *bearer, const char *scopes, const char *tenant, long want,
                        const char *scope)
{
    struct http_res r;
    long st = token_as(bearer, scopes, tenant, &r);
    ck_assert_msg(st == want, "token %s%s%s: %ld, not %ld: %s", scopes, tenant ? " bound to " : "",
                  tenant ? tenant : "", st, want, r.body ? r.body : "");
    if (want == 403) {
        expect_problem(&r, "token.scope_role", "scope", scope);
        ck_assert_ptr_null(json_object_get(r.json, "token"));
    }
    http_res_free(&r);
}

START_TEST(login_answers_token_and_cookie)
{
    struct http_res r;
    ck_assert_int_eq(login_from("10.1.0.1", ADMIN_USER, ADMIN_PASSWORD, &r), 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "token_type")), "Bearer");
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "expires_in")), 28800);
    const char *tok = json_string_value(json_object_get(r.json, "access_token"));
    ck_assert_ptr_nonnull(tok);
    char *cookie = http_header(&r, "Set-Cookie");
    ck_assert_ptr_nonnull(cookie);
    ck_assert_ptr_nonnull(strstr(cookie, fmt("aidc_session=%s", tok)));
    ck_assert_ptr_nonnull(strstr(cookie, "HttpOnly"));
    ck_assert_ptr_nonnull(strstr(cookie, "SameSite=Strict"));
    ck_assert_ptr_nonnull(strstr(cookie, "Path=/"));
    ck_assert_ptr_null(strstr(cookie, "Secure")); /* loopback listener: auto = off */
    free(cookie);
    ck_assert_int_eq(req("GET", "/api/v1/me", tok, NULL), 200);
    http_res_free(&r);
    /* the success is audited with the client address from X-Forwarded-For */
    ck_assert_int_ge(audit_count("auth.login", "success", "10.1.0.1"), 1);
}
END_TEST

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(unknown_user_and_wrong_password_look_the_same)
{
    /* medians of five alternating samples: one each was at the mercy of a parallel test */
    double unknown[5], wrong[5];
    struct http_res a, b;
    for (int i = 0; i < 5; i++) {
        double t0 = clock_now_ms() / 1e3;
        login_from(fmt("10.2.0.%d", i + 1), "no-such-user", "whatever-password", &a);
        double t1 = clock_now_ms() / 1e3;
        login_from(fmt("10.2.1.%d", i + 1), ADMIN_USER, "wrong-password!", &b);
        unknown[i] = t1 - t0;
        wrong[i] = clock_now_ms() / 1e3 - t1;
        ck_assert(a.status == 401 && b.status == 401);
        ck_assert_str_eq(jstr(a.json, "detail"), jstr(b.json, "detail"));
        http_res_free(&a);
        http_res_free(&b);
    }
    qsort(unknown, 5, sizeof *unknown, cmp_double);
    qsort(wrong, 5, sizeof *wrong, cmp_double);
    double mu = unknown[2], mw = wrong[2]; /* both ran the KDF: neither answered at once */
    ck_assert_msg(mu > 0.01 && mw > 0.01, "unknown %.4fs, wrong %.4fs", mu, mw);
    ck_assert_msg(mu / mw > 0.33 && mu / mw < 3.0, "timings differ: %.4fs vs %.4fs", mu, mw);
    /* failed logins are audited, without the password */
    ck_assert_int_ge(audit_count("auth.login", "denied", "no-such-user"), 1);
    ck_assert_int_eq(audit_count("auth.login", "denied", "whatever-password"), 0);
    ck_assert_int_eq(audit_count("auth.login", "denied", "wrong-password!"), 0);
}
END_TEST

/* One login from ip that must answer want. */
static void expect_login(const char *ip, const char *user, const char *pw, long want)
{
    struct http_res r;
    ck_assert_int_eq(login_from(ip, user, pw, &r), want);
    http_res_free(&r);
}

/*
 * n wrong passwords for user, each 401: from addr, or with numbered from
 * addr followed by 1, 2, ... (a prefix such as "10.6.0.").
 */
static void fail_logins(const char *user, const char *addr, bool numbered, int n)
{
    for (int i = 0; i < n; i++) {
        struct http_res r;
        const char *from = numbered ? fmt("%s%d", addr, i + 1) : addr;
        ck_assert_int_eq(login_from(from, user, "bad-password!", &r), 401);
        http_res_free(&r);
    }
}

static void expect_429(struct http_res *r)
{
    char *ra = http_header(r, "Retry-After");
    ck_assert_ptr_nonnull(ra);
    ck_assert_int_gt(atoi(ra), 0);
    ck_assert_int_le(atoi(ra), 600);
    free(ra);
    ck_assert_str_eq(json_string_value(json_object_get(r->json, "title")), "Too Many Requests");
}

START_TEST(throttle_per_username_and_address)
{
    make_user("victim", "victim-password-1", NULL);
    struct http_res r;
    fail_logins("victim", "10.3.0.1", false, 3);
    /* even the right password is refused now from that address */
    ck_assert_int_eq(login_from("10.3.0.1", "victim", "victim-password-1", &r), 429);
    expect_429(&r);
    http_res_free(&r);
    ck_assert_int_ge(audit_count("auth.login", "denied", "too many failed logins"), 1);
    /* but the guesser has not locked its owner out: from elsewhere she gets in */
    expect_login("10.3.1.1", "victim", "victim-password-1", 200);
    /* and other users from the guesser's address are not affected */
    expect_login("10.3.0.1", ADMIN_USER, ADMIN_PASSWORD, 200);
}
END_TEST

/* A success forgets the failures of that name from that address. */
START_TEST(success_resets_the_count_of_its_address)
{
    make_user("forgetful", "forgetful-password-1", NULL);
    for (int round = 0; round < 2; round++) {
        fail_logins("forgetful", "10.5.0.1", false, 2);
        expect_login("10.5.0.1", "forgetful", "forgetful-password-1", 200);
    }
}
END_TEST

/* Guessing one name from many addresses closes the name everywhere. */
START_TEST(throttle_per_username_from_many_addresses)
{
    make_user("target", "target-password-1", NULL);
    struct http_res r;
    fail_logins("target", "10.6.0.", true, 8);
    ck_assert_int_eq(login_from("10.6.1.1", "target", "target-password-1", &r), 429);
    expect_429(&r);
    http_res_free(&r);
    /* her own success from an address of hers does not reopen the name */
    expect_login("10.6.0.1", "target", "target-password-1", 429);
}
END_TEST

/* IPv6 addresses count by their /64: a host has a whole one to pick from. */
START_TEST(throttle_counts_ipv6_by_its_64)
{
    make_user("sixer", "sixer-password-1", NULL);
    fail_logins("sixer", "2001:db8:6:6::", true, 3);
    expect_login("2001:db8:6:6:ffff::9", "sixer", "sixer-password-1", 429);
    expect_login("2001:db8:6:7::1", "sixer", "sixer-password-1", 200);
}
END_TEST

START_TEST(throttle_per_address)
{
    for (int i = 0; i < 6; i++)
        expect_login("10.4.0.9", fmt("nobody%d", i), "bad-password!", 401);
    expect_login("10.4.0.9", ADMIN_USER, ADMIN_PASSWORD, 429);
    /* another address still gets in */
    expect_login("10.4.0.10", ADMIN_USER, ADMIN_PASSWORD, 200);
}
END_TEST

START_TEST(me_lists_roles_and_memberships)
{
    make_user("melody", "melody-password-1", "[\"auditor\"]");
    make_tenant("me-tenant");
    make_member("me-tenant", "melody", "viewer");
    char *tok = login("melody", "melody-password-1");
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/me", tok, NULL, &r), 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "username")), "melody");
    json_t *roles = json_object_get(r.json, "roles");
    ck_assert_int_eq(json_array_size(roles), 1);
    ck_assert_str_eq(json_string_value(json_array_get(roles, 0)), "auditor");
    json_t *m = json_array_get(json_object_get(r.json, "memberships"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(m, "tenant")), "me-tenant");
    ck_assert_str_eq(json_string_value(json_object_get(m, "role")), "viewer");
    ck_assert_ptr_null(json_object_get(r.json, "password_hash"));
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/me", NULL, NULL), 401);
    ck_assert_int_eq(req("GET", "/api/v1/me", "not-a-jwt", NULL), 401);
    free(tok);
}
END_TEST

START_TEST(logout_revokes_the_session)
{
    char *tok = login(ADMIN_USER, ADMIN_PASSWORD);
    ck_assert_int_eq(req("GET", "/api/v1/me", tok, NULL), 200);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/auth/logout", tok, NULL, &r), 204);
    char *cookie = http_header(&r, "Set-Cookie");
    ck_assert_ptr_nonnull(cookie);
    ck_assert_ptr_nonnull(strstr(cookie, "Max-Age=0"));
    free(cookie);
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/me", tok, NULL), 401);
    /* logging out without a (valid) session still clears the cookie */
    ck_assert_int_eq(req("POST", "/api/v1/auth/logout", NULL, NULL), 204);
    ck_assert_int_eq(req("POST", "/api/v1/auth/logout", tok, NULL), 204);
    free(tok);
}
END_TEST

/* The id of the session tok is, from its owner's list. */
static char *current_session_id(const char *tok)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/me/sessions", tok, NULL, &r), 200);
    char *id = NULL;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(r.json, "items"), i,
                       it) if (json_is_true(json_object_get(it, "current"))) id =
        strdup(json_string_value(json_object_get(it, "id")));
    http_res_free(&r);
    ck_assert_ptr_nonnull(id);
    return id;
}

/* A hint cookie that is cleared (value empty, Max-Age=0) in r. */
static void assert_hint_cleared(const struct http_res *r)
{
    char *hint = http_set_cookie(r, "aidc_signed_in");
    ck_assert_ptr_nonnull(hint);
    ck_assert_ptr_nonnull(strstr(hint, "aidc_signed_in=;"));
    ck_assert_ptr_nonnull(strstr(hint, "Max-Age=0"));
    free(hint);
}

/*
 * The portal cannot read the HttpOnly session cookie; the aidc_signed_in hint beside
 * it says only that one was set, so a signed-out portal need not ask GET /me (a 401
 * and an audit event per visit). Set at login with the session's lifetime, readable
 * by scripts, no secret in it; cleared wherever the session cookie is.
 */
START_TEST(login_sets_a_signed_in_hint_that_logout_clears)
{
    struct http_res r;
    ck_assert_int_eq(login_from("10.1.0.9", ADMIN_USER, ADMIN_PASSWORD, &r), 200);
    char *tok = strdup(json_string_value(json_object_get(r.json, "access_token")));
    char *session = http_set_cookie(&r, "aidc_session");
    char *hint = http_set_cookie(&r, "aidc_signed_in");
    ck_assert_ptr_nonnull(session);
    ck_assert_ptr_nonnull(hint);
    ck_assert_ptr_nonnull(strstr(session, "HttpOnly")); /* the session cookie as it was */
    ck_assert_ptr_nonnull(strstr(hint, "aidc_signed_in=1;"));
    ck_assert_ptr_nonnull(strstr(hint, "Path=/"));
    ck_assert_ptr_nonnull(strstr(hint, "SameSite=Strict"));
    ck_assert_ptr_nonnull(strstr(hint, "Max-Age=28800")); /* the session's lifetime */
    ck_assert_ptr_nonnull(strstr(session, "Max-Age=28800"));
    ck_assert_ptr_null(strstr(hint, "HttpOnly")); /* the portal reads it */
    ck_assert_ptr_null(strstr(hint, "Secure"));   /* loopback, as the session's */
    ck_assert_ptr_null(strstr(hint, tok));        /* no secret in it */
    free(session);
    free(hint);
    http_res_free(&r);

    ck_assert_int_eq(reqj("POST", "/api/v1/auth/logout", tok, NULL, &r), 204);
    assert_hint_cleared(&r);
    http_res_free(&r);
    /* a stale hint with no session behind it is cleared by logging out too */
    ck_assert_int_eq(reqj("POST", "/api/v1/auth/logout", NULL, NULL, &r), 204);
    assert_hint_cleared(&r);
    http_res_free(&r);
    free(tok);

    /* ending one's own session logs out; ending another one leaves both cookies alone */
    char *mine = login(ADMIN_USER, ADMIN_PASSWORD);
    char *other = login(ADMIN_USER, ADMIN_PASSWORD);
    char *other_id = current_session_id(other);
    ck_assert_int_eq(reqj("DELETE", fmt("/api/v1/me/sessions/%s", other_id), mine, NULL, &r), 204);
    ck_assert_ptr_null(http_set_cookie(&r, "aidc_signed_in"));
    ck_assert_ptr_null(http_set_cookie(&r, "aidc_session"));
    http_res_free(&r);
    char *mine_id = current_session_id(mine);
    ck_assert_int_eq(reqj("DELETE", fmt("/api/v1/me/sessions/%s", mine_id), mine, NULL, &r), 204);
    assert_hint_cleared(&r);
    http_res_free(&r);
    free(mine_id);
    free(other_id);
    free(mine);
    free(other);
}
END_TEST

START_TEST(cookie_sessions_need_the_portal_header_to_change_things)
{
    char *tok = login(ADMIN_USER, ADMIN_PASSWORD);
    const char *cookie[] = {fmt("Cookie: theme=dark; aidc_session=%s", tok), NULL};
    const char *cookie_xrw[] = {fmt("Cookie: aidc_session=%s", tok),
                                "X-Requested-With: aidc-portal", NULL};
    struct http_res r;
    ck_assert_int_eq(http_do(&harness_srv, "GET", "/api/v1/me", NULL, NULL, cookie, &r), 200);
    http_res_free(&r);
    const char *body = "{\"slug\":\"cookie-made\",\"name\":\"x\"}";
    ck_assert_int_eq(http_do(&harness_srv, "POST", "/api/v1/tenants", NULL, body, cookie, &r), 403);
    ck_assert_ptr_nonnull(
        strstr(json_string_value(json_object_get(r.json, "detail")), "X-Requested-With"));
    http_res_free(&r);
    ck_assert_int_eq(http_do(&harness_srv, "POST", "/api/v1/tenants", NULL, body, cookie_xrw, &r),
                     201);
    http_res_free(&r);
    free(tok);
}
END_TEST

START_TEST(disabling_a_user_locks_it_out_at_once)
{
    make_user("dora", "dora-password-1", NULL);
    char *jwt = login("dora", "dora-password-1");
    char *tok = make_token(jwt, "[\"jobs:read\"]", NULL);
    ck_assert_int_eq(req("GET", "/api/v1/me", jwt, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1/me", tok, NULL), 200);
    ck_assert_int_eq(
        req("PATCH", "/api/v1/users/dora", harness_srv.admin_token, "{\"disabled\":true}"), 200);
    ck_assert_int_eq(req("GET", "/api/v1/me", jwt, NULL), 401);
    ck_assert_int_eq(req("GET", "/api/v1/me", tok, NULL), 401);
    struct http_res r;
    ck_assert_int_eq(login_from("10.5.0.1", "dora", "dora-password-1", &r), 401);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "detail")),
                     "invalid username or password"); /* no oracle for the password */
    expect_problem(&r, "login.failed", NULL, NULL);
    http_res_free(&r);
    /* enabled again: the token works again, the old session stays void */
    ck_assert_int_eq(
        req("PATCH", "/api/v1/users/dora", harness_srv.admin_token, "{\"disabled\":false}"), 200);
    ck_assert_int_eq(req("GET", "/api/v1/me", tok, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1/me", jwt, NULL), 401);
    free(jwt);
    free(tok);
}
END_TEST

START_TEST(password_change_ends_sessions)
{
    make_user("paul", "paul-password-1", NULL);
    char *old = login("paul", "paul-password-1");
    ck_assert_int_eq(req("PATCH", "/api/v1/users/paul", harness_srv.admin_token,
                         "{\"password\":\"paul-password-2\"}"),
                     200);
    ck_assert_int_eq(req("GET", "/api/v1/me", old, NULL), 401);
    char *fresh = login("paul", "paul-password-2");
    ck_assert_ptr_nonnull(fresh);
    ck_assert_int_eq(req("GET", "/api/v1/me", fresh, NULL), 200);
    /* the audit record of the change holds no password */
    ck_assert_int_eq(audit_count("user.update", "success", "paul-password-2"), 0);
    ck_assert_int_ge(audit_count("user.update", "success", "[redacted]"), 1);
    free(old);
    free(fresh);
}
END_TEST

START_TEST(api_tokens_lifecycle)
{
    struct http_res r;
    const char *body = "{\"name\":\"ci pipeline\",\"scopes\":[\"jobs:read\",\"jobs:write\"],"
                       "\"expires_in_days\":30}";
    ck_assert_int_eq(reqj("POST", "/api/v1/tokens", harness_srv.admin_token, body, &r), 201);
    const char *secret = json_string_value(json_object_get(r.json, "token"));
    ck_assert_ptr_nonnull(secret);
    ck_assert_int_eq((long)strlen(secret), 48);
    ck_assert(strncmp(secret, "aidc_", 5) == 0);
    char *sec = strdup(secret);
    char *id = strdup(json_string_value(json_object_get(r.json, "id")));
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "scopes")), 2);
    http_res_free(&r);

    /* only the hash is stored, and the secret is in no audit record */
    const char *p[1] = {sec};
    PGresult *q =
        harness_sql(harness_srv.owner_url,
                    "SELECT (SELECT count(*) FROM api_tokens WHERE token_hash = "
                    "encode(sha256(convert_to($1, 'UTF8')), 'hex')),"
                    " (SELECT count(*) FROM api_tokens t WHERE t::text LIKE '%' || $1 || '%'),"
                    " (SELECT count(*) FROM audit_log a WHERE a::text LIKE '%' || $1 || '%')",
                    1, p);
    ck_assert_str_eq(PQgetvalue(q, 0, 0), "1");
    ck_assert_str_eq(PQgetvalue(q, 0, 1), "0");
    ck_assert_str_eq(PQgetvalue(q, 0, 2), "0");
    PQclear(q);

    /* the token works, and its use is recorded */
    ck_assert_int_eq(req("GET", "/api/v1/tenants", sec, NULL), 200);
    ck_assert_int_eq(reqj("GET", "/api/v1/tokens", harness_srv.admin_token, NULL, &r), 200);
    json_t *item, *found = NULL;
    size_t i;
    json_array_foreach(json_object_get(r.json, "items"), i,
                       item) if (strcmp(json_string_value(json_object_get(item, "id")), id) == 0)
        found = item;
    ck_assert_ptr_nonnull(found);
    ck_assert_ptr_null(json_object_get(found, "token"));
    ck_assert(json_is_string(json_object_get(found, "last_used_at")));
    http_res_free(&r);

    /* scopes narrow the owner's rights: no admin scope, no tenancy changes */
    ck_assert_int_eq(req("POST", "/api/v1/tenants", sec, "{\"slug\":\"tok-made\",\"name\":\"x\"}"),
                     403);
    /* a token cannot mint a token with more scopes than its own */
    ck_assert_int_eq(req("POST", "/api/v1/tokens", sec, "{\"name\":\"x\",\"scopes\":[\"admin\"]}"),
                     403);
    char *minter = make_token(harness_srv.admin_token, "[\"admin\",\"jobs:read\"]", NULL);
    ck_assert_int_eq(token_as(minter, "[\"jobs:read\",\"audit:read\",\"usage:read\"]", NULL, &r),
                     403);
    expect_problem(&r, "token.scope_not_held", "scope", "usage:read"); /* the first it lacks */
    http_res_free(&r);
    free(minter);

    /* revoked: refused at once */
    ck_assert_int_eq(req("DELETE", fmt("/api/v1/tokens/%s", id), harness_srv.admin_token, NULL),
                     204);
    ck_assert_int_eq(req("GET", "/api/v1/tenants", sec, NULL), 401);
    ck_assert_int_eq(
        reqj("DELETE", fmt("/api/v1/tokens/%s", id), harness_srv.admin_token, NULL, &r), 404);
    expect_problem(&r, "token.not_found", "id", id);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "detail")),
                     fmt("token %s not found", id));
    http_res_free(&r);
    free(sec);
    free(id);
}
END_TEST

START_TEST(expired_and_malformed_tokens_are_refused)
{
    char *sec = make_token(harness_srv.admin_token, "[\"jobs:read\"]", NULL);
    ck_assert_int_eq(req("GET", "/api/v1/me", sec, NULL), 200);
    char hash_sql[] = "UPDATE api_tokens SET expires_at = now() - interval '1 second'"
                      " WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')";
    const char *p[1] = {sec};
    PQclear(harness_sql(harness_srv.owner_url, hash_sql, 1, p));
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/me", sec, NULL, &r), 401);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "detail")), "token has expired");
    char *www = http_header(&r, "WWW-Authenticate");
    ck_assert_ptr_nonnull(www);
    free(www);
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/me", "aidc_short", NULL), 401);
    ck_assert_int_eq(
        req("GET", "/api/v1/me", "aidc_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL), 401);
    const char *basic[] = {"Authorization: Basic YWRtaW46eA==", NULL};
    ck_assert_int_eq(http_do(&harness_srv, "GET", "/api/v1/me", NULL, NULL, basic, &r), 401);
    http_res_free(&r);
    free(sec);
}
END_TEST

/*
 * A token carries no scope its creator's roles do not use (API.md: scopes
 * narrow the owner's rights; api/tokens.c, scopes_allowed): a member may not
 * give it the admin scope (403 naming it, nothing created, audited as denied)
 * nor a platform scope, but still jobs:read, jobs:write and the other tenant
 * scopes; a tenant admin may give it admin, bound to its tenant or not, but
 * not bound to a tenant where it is a member only; finance billing:write, not
 * audit:read; an auditor audit:read and admin, not billing:write; a platform
 * admin every scope.
 */
START_TEST(token_scopes_stay_within_the_creators_roles)
{
    make_tenant("scope-lab");
    make_tenant("scope-other");
    make_user("sam", "sam-password-1", NULL);
    make_member("scope-lab", "sam", "member");
    make_user("tara", "tara-password-1", NULL);
    make_member("scope-lab", "tara", "tenant_admin");
    make_member("scope-other", "tara", "member");
    make_user("fiona", "fiona-password-1", "[\"finance\"]");
    make_user("audrey", "audrey-password-1", "[\"auditor\"]");
    char *sam = login("sam", "sam-password-1");
    char *tara = login("tara", "tara-password-1");
    char *fiona = login("fiona", "fiona-password-1");
    char *audrey = login("audrey", "audrey-password-1");

    /* a member: no admin scope, bound to its tenant or not */
    struct http_res r;
    ck_assert_int_eq(token_as(sam, "[\"jobs:read\",\"admin\"]", NULL, &r), 403);
    expect_problem(&r, "token.scope_role", "scope", "admin");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "detail")),
                     "your roles do not allow a token with the admin scope");
    http_res_free(&r);
    ck_assert_int_ge(audit_count("token.create", "denied", "with the admin scope"), 1);
    token_scope(sam, "[\"admin\"]", "scope-lab", 403, "admin");
    token_scope(sam, "[\"billing:write\"]", NULL, 403, "billing:write");
    token_scope(sam, "[\"audit:read\"]", NULL, 403, "audit:read");
    token_scope(sam, "[\"audit:ingest\"]", NULL, 403, "audit:ingest");
    token_scope(sam, "[\"gpu-faults:write\"]", NULL, 403, "gpu-faults:write");
    ck_assert_int_eq(reqj("GET", "/api/v1/tokens", sam, NULL, &r), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0); /* none was made */
    http_res_free(&r);
    /* ... but the scopes of its work, and they work */
    token_scope(sam, "[\"jobs:read\",\"jobs:write\"]", NULL, 201, NULL);
    token_scope(sam, "[\"jobs:read\",\"jobs:write\"]", "scope-lab", 201, NULL);
    token_scope(sam, "[\"images:read\",\"images:write\",\"usage:read\"]", NULL, 201, NULL);
    char *ci = make_token(sam, "[\"jobs:read\"]", "scope-lab");
    ck_assert_int_eq(req("GET", "/api/v1/tenants/scope-lab/jobs", ci, NULL), 200);
    free(ci);

    /* a tenant admin: admin for its tenant's administration, not where it is a member */
    token_scope(tara, "[\"admin\",\"jobs:read\"]", NULL, 201, NULL);
    token_scope(tara, "[\"admin\"]", "scope-other", 403, "admin");
    char *adm = make_token(tara, "[\"admin\",\"jobs:read\"]", "scope-lab");
    ck_assert_int_eq(req("POST", "/api/v1/tenants/scope-lab/projects", adm,
                         "{\"slug\":\"by-token\",\"name\":\"x\"}"),
                     201);
    /* a token it made may make tokens of its scopes, still not of others' */
    token_scope(adm, "[\"jobs:read\"]", "scope-lab", 201, NULL);
    token_scope(tara, "[\"audit:read\"]", NULL, 403, "audit:read");
    free(adm);

    /* global roles: each its own scopes */
    token_scope(fiona, "[\"billing:write\",\"usage:read\"]", NULL, 201, NULL);
    token_scope(fiona, "[\"audit:read\"]", NULL, 403, "audit:read");
    token_scope(fiona, "[\"admin\"]", NULL, 403, "admin");
    token_scope(audrey, "[\"audit:read\",\"admin\"]", NULL, 201, NULL);
    token_scope(audrey, "[\"billing:write\"]", NULL, 403, "billing:write");
    token_scope(audrey, "[\"audit:ingest\"]", NULL, 403, "audit:ingest");
    token_scope(harness_srv.admin_token,
                "[\"jobs:read\",\"jobs:write\",\"images:read\",\"images:write\",\"usage:read\","
                "\"billing:write\",\"audit:read\",\"audit:ingest\",\"admin\",\"gpu-faults:write\"]",
                NULL, 201, NULL);
    free(sam);
    free(tara);
    free(fiona);
    free(audrey);
}
END_TEST

START_TEST(tenant_bound_tokens_stay_in_their_tenant)
{
    make_user("tina", "tina-password-1", NULL);
    make_tenant("tina-home");
    make_tenant("tina-away");
    make_member("tina-home", "tina", "tenant_admin");
    make_member("tina-away", "tina", "tenant_admin");
    make_project("tina-home", "p1");
    make_project("tina-away", "p1");
    char *jwt = login("tina", "tina-password-1");
    char *tok = make_token(jwt, "[\"admin\"]", "tina-home");
    ck_assert_int_eq(req("GET", "/api/v1/tenants/tina-home/projects/p1", tok, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/tina-away/projects/p1", tok, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/tina-away/projects/p1", jwt, NULL), 200);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants", tok, NULL, &r), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    http_res_free(&r);
    /* binding to a tenant the user is not in is refused */
    ck_assert_int_eq(reqj("POST", "/api/v1/tokens", jwt,
                          "{\"name\":\"x\",\"scopes\":[\"jobs:read\"],\"tenant\":\"me-tenant\"}",
                          &r),
                     422);
    expect_problem(&r, "token.tenant_not_member", "tenant", "me-tenant");
    expect_problem(&r, "token.tenant_not_member", "field", "tenant");
    http_res_free(&r);
    /* and a token bound to one tenant makes no token for another (it knows of no
     * other), nor an unbound one */
    ck_assert_int_eq(token_as(tok, "[\"admin\"]", "tina-away", &r), 422);
    expect_problem(&r, "token.tenant_not_member", "tenant", "tina-away");
    http_res_free(&r);
    ck_assert_int_eq(token_as(tok, "[\"admin\"]", NULL, &r), 403);
    expect_problem(&r, "token.bound_create", NULL, NULL);
    http_res_free(&r);
    free(jwt);
    free(tok);
}
END_TEST

START_TEST(user_administration)
{
    struct http_res r;
    const char *body = "{\"username\":\"ursula\",\"password\":\"ursula-password-1\","
                       "\"email\":\"ursula@example.org\",\"display_name\":\"Ursula 王\","
                       "\"roles\":[\"finance\"]}";
    /* the user is created at once; the global role waits for a second admin */
    ck_assert_int_eq(reqj("POST", "/api/v1/users", harness_srv.admin_token, body, &r), 202);
    json_t *user = json_object_get(r.json, "user");
    ck_assert_str_eq(json_string_value(json_object_get(user, "display_name")), "Ursula 王");
    ck_assert_int_eq(json_array_size(json_object_get(user, "roles")), 0);
    ck_assert_ptr_null(json_object_get(user, "password"));
    ck_assert_ptr_null(json_object_get(user, "password_hash"));
    ck_assert_ptr_null(strstr(r.body, "ursula-password-1"));
    json_t *op = json_object_get(json_object_get(r.json, "approval"), "operation");
    ck_assert_str_eq(json_string_value(json_object_get(op, "method")), "PATCH");
    ck_assert_str_eq(json_string_value(json_object_get(op, "path")), "/api/v1/users/ursula");
    char *grant1 =
        strdup(json_string_value(json_object_get(json_object_get(r.json, "approval"), "id")));
    char *loc = http_header(&r, "Location");
    ck_assert_str_eq(loc, "/api/v1/users/ursula");
    free(loc);
    http_res_free(&r);
    make_user("second", "second-password-1", "[\"platform_admin\"]");
    char *second = login("second", "second-password-1");
    ck_assert_int_eq(req("POST", fmt("/api/v1/approvals/%s/approve", grant1), second, NULL), 200);
    free(grant1);
    ck_assert_int_eq(reqj("POST", "/api/v1/users", harness_srv.admin_token, body, &r), 409);
    expect_problem(&r, "user.exists", "username", "ursula");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "detail")),
                     "user \"ursula\" already exists");
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", "/api/v1/users", harness_srv.admin_token,
                          "{\"username\":\"weak\",\"password\":\"short\"}", &r),
                     400);
    expect_problem(&r, "password.too_short", "min", "10");
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/users/ursula", harness_srv.admin_token, NULL, &r), 200);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r.json, "roles"), 0)),
                     "finance");
    http_res_free(&r);
    /* a password cannot wait for approval with a grant */
    ck_assert_int_eq(reqj("PATCH", "/api/v1/users/ursula", harness_srv.admin_token,
                          "{\"roles\":[\"auditor\",\"finance\"],\"password\":\"new-password-1\"}",
                          &r),
                     400);
    expect_problem(&r, "user.password_with_grant", "field", "password");
    http_res_free(&r);
    ck_assert_int_eq(reqj("PATCH", "/api/v1/users/ursula", harness_srv.admin_token,
                          "{\"roles\":[\"auditor\",\"finance\"],\"email\":\"u@example.org\"}", &r),
                     202);
    char *grant2 =
        strdup(json_string_value(json_object_get(json_object_get(r.json, "approval"), "id")));
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/approvals/%s/approve", grant2), second, NULL, &r),
                     200);
    json_t *result = json_object_get(r.json, "result"); /* the approval, with the outcome */
    ck_assert_int_eq(json_integer_value(json_object_get(result, "status")), 200);
    json_t *changed = json_object_get(result, "body");
    ck_assert_int_eq(json_array_size(json_object_get(changed, "roles")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(changed, "email")), "u@example.org");
    http_res_free(&r);
    free(grant2);
    free(second);
    ck_assert_int_eq(reqj("GET", "/api/v1/users/nobody-here", harness_srv.admin_token, NULL, &r),
                     404);
    expect_problem(&r, "user.not_found", "username", "nobody-here");
    http_res_free(&r);
    ck_assert_int_eq(req("PATCH", "/api/v1/users/nobody-here", harness_srv.admin_token,
                         "{\"display_name\":\"x\"}"),
                     404);
    /* the acting admin cannot lock itself out */
    ck_assert_int_eq(reqj("PATCH", "/api/v1/users/" ADMIN_USER, harness_srv.admin_token,
                          "{\"disabled\":true}", &r),
                     409);
    expect_problem(&r, "user.disable_self", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(
        reqj("PATCH", "/api/v1/users/" ADMIN_USER, harness_srv.admin_token, "{\"roles\":[]}", &r),
        409);
    expect_problem(&r, "user.remove_own_admin", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(reqj("PATCH", "/api/v1/users/ursula", harness_srv.admin_token, "{}", &r), 400);
    expect_problem(&r, "request.nothing_to_change", NULL, NULL);
    http_res_free(&r);
    /* non-admins cannot manage users */
    char *fin = login("ursula", "ursula-password-1");
    ck_assert_int_eq(
        req("POST", "/api/v1/users", fin, "{\"username\":\"x1\",\"password\":\"x1-password-1\"}"),
        403);
    ck_assert_int_eq(req("GET", "/api/v1/users", fin, NULL), 200); /* auditor reads */
    free(fin);
}
END_TEST

START_TEST(bootstrap_is_idempotent_and_resets_the_password)
{
    char *before = login(ADMIN_USER, ADMIN_PASSWORD);
    const char *args[] = {"bootstrap", "--admin", ADMIN_USER, NULL};
    const char *env[] = {"AIDC_ADMIN_PASSWORD=another-password-9", NULL};
    char out[320];
    snprintf(out, sizeof out, "%s/bootstrap2.log", harness_srv.data_dir);
    ck_assert_int_eq(harness_run_aidcd(&harness_srv, args, env, out), 0);
    char *log = harness_read_file(out);
    ck_assert_ptr_nonnull(strstr(log, "reset the password"));
    free(log);
    ck_assert_int_eq(req("GET", "/api/v1/me", before, NULL), 401);
    char *after = login(ADMIN_USER, "another-password-9");
    ck_assert_ptr_nonnull(after);
    /* back to the suite's password; weak passwords and bad names are refused */
    const char *env2[] = {"AIDC_ADMIN_PASSWORD=" ADMIN_PASSWORD, NULL};
    ck_assert_int_eq(harness_run_aidcd(&harness_srv, args, env2, out), 0);
    const char *weak[] = {"AIDC_ADMIN_PASSWORD=short", NULL};
    ck_assert_int_eq(harness_run_aidcd(&harness_srv, args, weak, out), 2);
    const char *badname[] = {"bootstrap", "--admin", "Bad Name", NULL};
    ck_assert_int_eq(harness_run_aidcd(&harness_srv, badname, env2, out), 2);
    const char *noname[] = {"bootstrap", NULL};
    ck_assert_int_eq(harness_run_aidcd(&harness_srv, noname, env2, out), 2);
    free(before);
    free(after);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("identity");
    TCase *tc = tcase_create("identity");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, login_answers_token_and_cookie);
    tcase_add_test(tc, unknown_user_and_wrong_password_look_the_same);
    tcase_add_test(tc, throttle_per_username_and_address);
    tcase_add_test(tc, success_resets_the_count_of_its_address);
    tcase_add_test(tc, throttle_per_username_from_many_addresses);
    tcase_add_test(tc, throttle_counts_ipv6_by_its_64);
    tcase_add_test(tc, throttle_per_address);
    tcase_add_test(tc, me_lists_roles_and_memberships);
    tcase_add_test(tc, logout_revokes_the_session);
    tcase_add_test(tc, login_sets_a_signed_in_hint_that_logout_clears);
    tcase_add_test(tc, cookie_sessions_need_the_portal_header_to_change_things);
    tcase_add_test(tc, disabling_a_user_locks_it_out_at_once);
    tcase_add_test(tc, password_change_ends_sessions);
    tcase_add_test(tc, api_tokens_lifecycle);
    tcase_add_test(tc, expired_and_malformed_tokens_are_refused);
    tcase_add_test(tc, token_scopes_stay_within_the_creators_roles);
    tcase_add_test(tc, tenant_bound_tokens_stay_in_their_tenant);
    tcase_add_test(tc, user_administration);
    tcase_add_test(tc, bootstrap_is_idempotent_and_resets_the_password);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
