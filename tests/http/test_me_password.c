/*
 * test_me_password.c - a user changes their own password (PUT /api/v1/me/password):
 * only with the current one; every session ends and the caller gets a new
 * one; API tokens keep working; the policy applies and the new password must
 * differ; a wrong current password counts against the login throttle (429
 * after AIDC_LOGIN_MAX_FAILURES, the password unchanged); tokens bound to a
 * tenant or without the admin scope may not. Audited. Refusals carry their
 * catalog code and params.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PASSWORD "/api/v1/me/password"

static void setup(void)
{
    harness_setup("mepassword", NULL);
}

static void teardown(void)
{
    harness_teardown();
}

/* PUT the change as token; the status, the answer kept in *r. */
static long change(const char *token, const char *current, const char *next, struct http_res *r)
{
    char body[300];
    snprintf(body, sizeof body, "{\"current_password\":\"%s\",\"new_password\":\"%s\"}", current,
             next);
    return reqj("PUT", PASSWORD, token, body, r);
}

START_TEST(the_current_password_changes_it_and_ends_every_session)
{
    make_user("ann", "ann-password-1", NULL);
    char *a = login("ann", "ann-password-1");
    char *b = login("ann", "ann-password-1");
    char *tok = make_token(a, "[\"jobs:read\"]", NULL);
    struct http_res r;
    ck_assert_int_eq(change(a, "ann-password-1", "ann-password-2", &r), 200);
    const char *fresh = jstr(r.json, "access_token");
    ck_assert_ptr_nonnull(fresh);
    char *cookie = http_header(&r, "Set-Cookie");
    ck_assert_ptr_nonnull(cookie);
    ck_assert_ptr_nonnull(strstr(cookie, "HttpOnly"));
    free(cookie);
    /* both old sessions are over, the new one works and is the one listed */
    ck_assert_int_eq(req("GET", "/api/v1/me", a, NULL), 401);
    ck_assert_int_eq(req("GET", "/api/v1/me", b, NULL), 401);
    struct http_res l;
    ck_assert_int_eq(reqj("GET", "/api/v1/me/sessions", fresh, NULL, &l), 200);
    json_t *items = json_object_get(l.json, "items");
    ck_assert_int_eq(json_array_size(items), 1);
    ck_assert(json_is_true(json_object_get(json_array_get(items, 0), "current")));
    http_res_free(&l);
    http_res_free(&r);
    /* the API token was not a session */
    ck_assert_int_eq(req("GET", "/api/v1/me", tok, NULL), 200);
    /* the old password is gone, the new one logs in */
    char *old = login("ann", "ann-password-1");
    ck_assert_ptr_null(old);
    char *now = login("ann", "ann-password-2");
    ck_assert_ptr_nonnull(now);
    json_t *ev = audittest_event_with("user.password_change", "ann", 10);
    ck_assert_str_eq(jstr(ev, "outcome"), "success");
    char *text = json_dumps(ev, 0);
    ck_assert_ptr_null(strstr(text, "ann-password")); /* no password in the record */
    free(text);
    json_decref(ev);
    free(now);
    free(tok);
    free(a);
    free(b);
}
END_TEST

START_TEST(a_wrong_current_password_is_refused_and_throttled)
{
    make_user("bob", "bob-password-1", NULL);
    char *bob = login("bob", "bob-password-1");
    struct http_res r;
    for (int i = 0; i < 5; i++) { /* AIDC_LOGIN_MAX_FAILURES */
        ck_assert_int_eq(change(bob, "guess-guess-1", "bob-password-2", &r), 400);
        ck_assert_ptr_nonnull(strstr(r.body, "current_password"));
        expect_problem(&r, "password.current_wrong", "field", "current_password");
        http_res_free(&r);
    }
    ck_assert_int_eq(change(bob, "bob-password-1", "bob-password-2", &r), 429);
    expect_problem(&r, "login.throttled", NULL, NULL);
    ck_assert(json_integer_value(json_object_get(json_object_get(r.json, "params"), "seconds")) >
              0);
    char *ra = http_header(&r, "Retry-After");
    ck_assert_ptr_nonnull(ra);
    free(ra);
    http_res_free(&r);
    /* nothing changed: the session still works, the password is the old one */
    ck_assert_int_eq(req("GET", "/api/v1/me", bob, NULL), 200);
    const char *p[1] = {"bob"};
    PGresult *q = harness_sql(harness_srv.owner_url,
                              "SELECT session_epoch FROM users WHERE username = $1", 1, p);
    ck_assert_str_eq(PQgetvalue(q, 0, 0), "0");
    PQclear(q);
    free(bob);
}
END_TEST

START_TEST(the_policy_applies_and_the_new_one_must_differ)
{
    make_user("cara", "cara-password-1", NULL);
    char *cara = login("cara", "cara-password-1");
    struct http_res r;
    ck_assert_int_eq(change(cara, "cara-password-1", "short", &r), 400);
    ck_assert_ptr_nonnull(strstr(r.body, "new_password"));
    expect_problem(&r, "password.too_short", "min", "10");
    ck_assert_str_eq(jstr(r.json, "detail"), "new_password: must be at least 10 characters");
    http_res_free(&r);
    ck_assert_int_eq(change(cara, "cara-password-1", "cara-password-1", &r), 400);
    ck_assert_ptr_nonnull(strstr(r.body, "must differ"));
    expect_problem(&r, "password.unchanged", "field", "new_password");
    http_res_free(&r);
    ck_assert_int_eq(reqj("PUT", PASSWORD, cara, "{\"new_password\":\"cara-password-2\"}", &r),
                     400);
    ck_assert_ptr_nonnull(strstr(r.body, "current_password"));
    http_res_free(&r);
    ck_assert_int_eq(req("PUT", PASSWORD, cara,
                         "{\"current_password\":\"cara-password-1\",\"new_password\":"
                         "\"cara-password-2\",\"also\":1}"),
                     400);
    /* none of these changed anything */
    ck_assert_int_eq(req("GET", "/api/v1/me", cara, NULL), 200);
    free(cara);
}
END_TEST

START_TEST(tokens_bound_to_a_tenant_or_without_admin_may_not)
{
    make_user("dan", "dan-password-1", NULL);
    make_tenant("lab");
    make_member("lab", "dan", "tenant_admin"); /* whose tokens may have the admin scope */
    char *dan = login("dan", "dan-password-1");
    char *bound = make_token(dan, "[\"admin\"]", "lab");
    char *reader = make_token(dan, "[\"jobs:read\"]", NULL);
    struct http_res r;
    ck_assert_int_eq(change(bound, "dan-password-1", "dan-password-2", &r), 403);
    expect_problem(&r, "token.bound_password", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(change(reader, "dan-password-1", "dan-password-2", &r), 403);
    http_res_free(&r);
    ck_assert_int_eq(change(NULL, "dan-password-1", "dan-password-2", &r), 401);
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/me", dan, NULL), 200);
    free(reader);
    free(bound);
    free(dan);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("me_password");
    TCase *tc = tcase_create("me_password");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, the_current_password_changes_it_and_ends_every_session);
    tcase_add_test(tc, a_wrong_current_password_is_refused_and_throttled);
    tcase_add_test(tc, the_policy_applies_and_the_new_one_must_differ);
    tcase_add_test(tc, tokens_bound_to_a_tenant_or_without_admin_may_not);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
