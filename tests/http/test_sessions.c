/*
 * test_sessions.c - a user's own login sessions (GET/DELETE /api/v1/me/sessions):
 * each login is listed, newest first, with where (the client behind a trusted
 * proxy) and with what it began; ending one stops it at once and leaves the
 * others working; nobody ends another user's session; ending the current one
 * is a logout; sessions ended by logout, a password change or expiry leave
 * the list, and expired ones leave the table too. Every end is audited with
 * what the owner recognised the session by.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SESSIONS "/api/v1/me/sessions"

/* aidcd trusts the test as a proxy, so X-Forwarded-For names the client */
static const char *const env[] = {"AIDC_TRUSTED_PROXIES=127.0.0.1/32", NULL};

static void setup(void)
{
    harness_setup("sessions", env);
}

static void teardown(void)
{
    harness_teardown();
}

/* Log user in from client address ip with User-Agent ua; the JWT (malloc'd). */
static char *login_from(const char *user, const char *ip, const char *ua)
{
    char xff[80], agent[200], body[200];
    snprintf(xff, sizeof xff, "X-Forwarded-For: %s", ip);
    snprintf(agent, sizeof agent, "User-Agent: %s", ua);
    snprintf(body, sizeof body, "{\"username\":\"%s\",\"password\":\"%s-password-1\"}", user,
             user);
    const char *extra[] = {xff, agent, NULL};
    struct http_res r;
    ck_assert_int_eq(http_do(&harness_srv, "POST", "/api/v1/auth/login", NULL, body, extra, &r),
                     200);
    char *jwt = strdup(json_string_value(json_object_get(r.json, "access_token")));
    http_res_free(&r);
    return jwt;
}

/* The caller's session list (new reference), asserting 200. */
static json_t *sessions_of(const char *jwt)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", SESSIONS "?limit=1000", jwt, NULL, &r), 200);
    json_t *items = json_incref(json_object_get(r.json, "items"));
    http_res_free(&r);
    ck_assert_ptr_nonnull(items);
    return items;
}

/* The item of list whose user_agent is ua, or NULL (borrowed). */
static json_t *by_agent(json_t *list, const char *ua)
{
    size_t i;
    json_t *it;
    json_array_foreach(list, i, it) {
        const char *v = json_string_value(json_object_get(it, "user_agent"));
        if (v && strcmp(v, ua) == 0)
            return it;
    }
    return NULL;
}

/* The id of jwt's own session (the one its list marks current; malloc'd). */
static char *own_id(const char *jwt)
{
    json_t *list = sessions_of(jwt);
    char *id = NULL;
    size_t i;
    json_t *it;
    json_array_foreach(list, i, it) if (json_is_true(json_object_get(it, "current"))) {
        ck_assert_ptr_null(id); /* exactly one */
        id = strdup(json_string_value(json_object_get(it, "id")));
    }
    json_decref(list);
    ck_assert_ptr_nonnull(id);
    return id;
}

START_TEST(each_login_is_listed_with_where_and_how_it_began)
{
    make_user("ann", "ann-password-1", NULL);
    char *laptop = login_from("ann", "203.0.113.7", "ann-laptop");
    char *phone = login_from("ann", "2001:db8::42", "ann-phone");
    json_t *list = sessions_of(laptop);
    ck_assert_int_eq(json_array_size(list), 2);
    /* newest first */
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "user_agent")),
                     "ann-phone");
    json_t *l = by_agent(list, "ann-laptop"), *p = by_agent(list, "ann-phone");
    ck_assert_str_eq(json_string_value(json_object_get(l, "source_ip")), "203.0.113.7");
    ck_assert_str_eq(json_string_value(json_object_get(p, "source_ip")), "2001:db8::42");
    ck_assert(json_is_true(json_object_get(l, "current")));
    ck_assert(json_is_false(json_object_get(p, "current")));
    double created = jobs_ts(json_object_get(l, "created_at"));
    double expires = jobs_ts(json_object_get(l, "expires_at"));
    ck_assert(created > jobs_now() - 60 && created <= jobs_now() + 1);
    ck_assert(expires > created + 28700 && expires < created + 28900); /* AIDC_JWT_TTL_SECONDS */
    json_decref(list);
    /* the other one's view marks the other as current */
    list = sessions_of(phone);
    ck_assert(json_is_true(json_object_get(by_agent(list, "ann-phone"), "current")));
    json_decref(list);
    /* an API token (with the admin scope: ann administers a tenant) sees the same
     * sessions, none of them its own */
    make_tenant("ann-lab");
    make_member("ann-lab", "ann", "tenant_admin");
    char *tok = make_token(laptop, "[\"admin\"]", NULL);
    list = sessions_of(tok);
    ck_assert_int_eq(json_array_size(list), 2);
    ck_assert(json_is_false(json_object_get(by_agent(list, "ann-laptop"), "current")));
    json_decref(list);
    /* nobody else's: bob's list holds bob's only */
    make_user("bob", "bob-password-1", NULL);
    char *bob = login_from("bob", "198.51.100.1", "bob-desk");
    list = sessions_of(bob);
    ck_assert_int_eq(json_array_size(list), 1);
    ck_assert_ptr_nonnull(by_agent(list, "bob-desk"));
    json_decref(list);
    free(bob);
    free(tok);
    free(laptop);
    free(phone);
}
END_TEST

START_TEST(ending_one_session_stops_it_and_leaves_the_others)
{
    make_user("cara", "cara-password-1", NULL);
    char *mine = login_from("cara", "203.0.113.8", "cara-desk");
    char *stolen = login_from("cara", "192.0.2.66", "curl/8.0 (not mine)");
    char *stolen_id = own_id(stolen);
    ck_assert_int_eq(req("DELETE", fmt(SESSIONS "/%s", stolen_id), mine, NULL), 204);
    ck_assert_int_eq(req("GET", "/api/v1/me", stolen, NULL), 401);
    ck_assert_int_eq(req("GET", "/api/v1/me", mine, NULL), 200);
    json_t *list = sessions_of(mine);
    ck_assert_int_eq(json_array_size(list), 1);
    ck_assert_ptr_nonnull(by_agent(list, "cara-desk"));
    json_decref(list);
    /* audited with what its owner recognised it by */
    json_t *ev = audittest_event_with("session.delete", stolen_id, 10);
    json_t *d = json_object_get(ev, "details");
    ck_assert_str_eq(json_string_value(json_object_get(d, "source_ip")), "192.0.2.66");
    ck_assert_str_eq(json_string_value(json_object_get(d, "user_agent")), "curl/8.0 (not mine)");
    ck_assert_str_eq(json_string_value(json_object_get(ev, "outcome")), "success");
    json_decref(ev);
    /* gone is gone; and a path that is no session id is a clear 400 */
    struct http_res r;
    ck_assert_int_eq(reqj("DELETE", fmt(SESSIONS "/%s", stolen_id), mine, NULL, &r), 404);
    ck_assert_ptr_nonnull(strstr(r.body, "not found"));
    ck_assert_str_eq(jstr(r.json, "code"), "session.not_found");
    ck_assert_str_eq(jstr(json_object_get(r.json, "params"), "id"), stolen_id);
    http_res_free(&r);
    ck_assert_int_eq(reqj("DELETE", SESSIONS "/not-a-uuid", mine, NULL, &r), 400);
    ck_assert_ptr_nonnull(strstr(r.body, "must be a UUID"));
    ck_assert_str_eq(jstr(r.json, "code"), "validation.uuid");
    http_res_free(&r);
    free(stolen_id);
    free(stolen);
    free(mine);
}
END_TEST

START_TEST(nobody_ends_another_users_session)
{
    make_user("dan", "dan-password-1", NULL);
    make_user("eve", "eve-password-1", NULL);
    char *dan = login_from("dan", "203.0.113.9", "dan-desk");
    char *eve = login_from("eve", "203.0.113.10", "eve-desk");
    char *dan_id = own_id(dan);
    ck_assert_int_eq(req("DELETE", fmt(SESSIONS "/%s", dan_id), eve, NULL), 404);
    /* nor a platform admin through this path: it is each user's own */
    ck_assert_int_eq(req("DELETE", fmt(SESSIONS "/%s", dan_id), harness_srv.admin_token, NULL),
                     404);
    ck_assert_int_eq(req("GET", "/api/v1/me", dan, NULL), 200);
    /* a token bound to a tenant speaks for the tenant, not for the user's logins */
    make_tenant("lab");
    make_member("lab", "dan", "tenant_admin"); /* whose tokens may have the admin scope */
    char *bound = make_token(dan, "[\"admin\"]", "lab");
    struct http_res r;
    ck_assert_int_eq(reqj("GET", SESSIONS, bound, NULL, &r), 403);
    ck_assert_str_eq(jstr(r.json, "code"), "token.bound_sessions");
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", fmt(SESSIONS "/%s", dan_id), bound, NULL), 403);
    /* and one without the admin scope may not either */
    char *reader = make_token(dan, "[\"jobs:read\"]", NULL);
    ck_assert_int_eq(req("GET", SESSIONS, reader, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/me", dan, NULL), 200);
    free(reader);
    free(bound);
    free(dan_id);
    free(eve);
    free(dan);
}
END_TEST

START_TEST(ending_the_current_session_is_a_logout)
{
    make_user("fay", "fay-password-1", NULL);
    char *jwt = login_from("fay", "203.0.113.11", "fay-desk");
    char *id = own_id(jwt);
    struct http_res r;
    ck_assert_int_eq(reqj("DELETE", fmt(SESSIONS "/%s", id), jwt, NULL, &r), 204);
    char *cookie = http_header(&r, "Set-Cookie");
    ck_assert_ptr_nonnull(cookie);
    ck_assert_ptr_nonnull(strstr(cookie, "Max-Age=0"));
    free(cookie);
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/me", jwt, NULL), 401);
    free(id);
    free(jwt);
}
END_TEST

START_TEST(ended_and_expired_sessions_leave_the_list)
{
    make_user("gus", "gus-password-1", NULL);
    char *a = login_from("gus", "203.0.113.12", "gus-a");
    char *b = login_from("gus", "203.0.113.12", "gus-b");
    char *c = login_from("gus", "203.0.113.12", "gus-c");
    /* a logout */
    ck_assert_int_eq(req("POST", "/api/v1/auth/logout", b, NULL), 204);
    json_t *list = sessions_of(a);
    ck_assert_int_eq(json_array_size(list), 2);
    ck_assert_ptr_null(by_agent(list, "gus-b"));
    json_decref(list);
    /* paging, newest first, each once */
    struct http_res r;
    ck_assert_int_eq(reqj("GET", SESSIONS "?limit=1", a, NULL, &r), 200);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "items"), 0), "user_agent"),
                     "gus-c");
    char *cursor = strdup(jstr(r.json, "next_cursor"));
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", fmt(SESSIONS "?limit=1&cursor=%s", qesc(cursor)), a, NULL, &r),
                     200);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "items"), 0), "user_agent"),
                     "gus-a");
    ck_assert(json_is_null(json_object_get(r.json, "next_cursor")));
    http_res_free(&r);
    free(cursor);
    ck_assert_int_eq(req("GET", SESSIONS "?limit=1001", a, NULL), 400);
    ck_assert_int_eq(req("GET", SESSIONS "?cursor=bm90LWEtY3Vyc29y", a, NULL), 400);
    /* an expired one is not listed, and the janitor removes it (it runs at start) */
    const char *p[1] = {"gus-c"};
    PQclear(harness_sql(harness_srv.owner_url,
                        "UPDATE sessions SET expires_at = now() - interval '1 second'"
                        " WHERE user_agent = $1",
                        1, p));
    list = sessions_of(a);
    ck_assert_int_eq(json_array_size(list), 1);
    json_decref(list);
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    ck_assert_int_eq(jobs_restart_server(env), 0);
    double until = jobs_now() + 20;
    long left = 1;
    while (left > 0 && jobs_now() < until) {
        PGresult *q = harness_sql(harness_srv.owner_url,
                                  "SELECT count(*) FROM sessions WHERE user_agent = $1", 1, p);
        left = atol(PQgetvalue(q, 0, 0));
        PQclear(q);
        if (left > 0)
            jobs_nap_ms(50);
    }
    ck_assert_int_eq(left, 0);
    /* a password change ends every session: none is listed */
    ck_assert_int_eq(req("PATCH", "/api/v1/users/gus", harness_srv.admin_token,
                         "{\"password\":\"gus-password-2\"}"),
                     200);
    ck_assert_int_eq(req("GET", SESSIONS, a, NULL), 401);
    char *after = login("gus", "gus-password-2");
    ck_assert_ptr_nonnull(after);
    list = sessions_of(after);
    ck_assert_int_eq(json_array_size(list), 1);
    ck_assert(json_is_true(json_object_get(json_array_get(list, 0), "current")));
    json_decref(list);
    free(after);
    free(a);
    free(b);
    free(c);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("sessions");
    TCase *tc = tcase_create("sessions");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, each_login_is_listed_with_where_and_how_it_began);
    tcase_add_test(tc, ending_one_session_stops_it_and_leaves_the_others);
    tcase_add_test(tc, nobody_ends_another_users_session);
    tcase_add_test(tc, ending_the_current_session_is_a_logout);
    tcase_add_test(tc, ended_and_expired_sessions_leave_the_list);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* one test restarts aidcd */
}
