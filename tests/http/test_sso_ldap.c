/*
 * test_sso_ldap.c - signing in with a directory's password: POST
 * /auth/login with "provider" against a real slapd (deploy/slapd-up.sh,
 * started once per run by tests/run.sh; StartTLS with the directory's own
 * CA, and LDAPS). Roles from the directory's groups; a wrong password, a
 * locked account and filter injections all answer the 401 of a wrong
 * password and count against the same throttle; an unknown or unreachable
 * provider says so. Skips (77) without AIDC_TEST_LDAP_URL.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADM  harness_srv.admin_token
#define IDPS "/api/v1/identity-providers"

static const char *url, *ldaps, *ca, *bind_dn, *base;

static void setup(void)
{
    char pw[256];
    snprintf(pw, sizeof pw, "AIDC_TEST_LDAP_SVC=%s", getenv("AIDC_TEST_LDAP_BIND_PASSWORD"));
    const char *const env[] = {pw, "AIDC_LOGIN_MAX_FAILURES=4", NULL};
    harness_setup("sso_ldap", env);
    make_tenant("physics");
    make_tenant("chem");
    const char *body =
        fmt("{\"name\":\"dir\",\"kind\":\"ldap\",\"display_name\":\"Campus directory\","
            "\"url\":\"%s\",\"start_tls\":true,\"ca_file\":\"%s\",\"bind_dn\":\"%s\","
            "\"bind_password_ref\":\"env:AIDC_TEST_LDAP_SVC\",\"user_base\":\"ou=people,%s\","
            "\"group_base\":\"ou=groups,%s\",\"role_rules\":["
            "{\"group\":\"physics-staff\",\"tenant\":\"physics\",\"role\":\"member\"},"
            "{\"group\":\"chem-staff\",\"tenant\":\"chem\",\"role\":\"viewer\"}]}",
            url, ca, bind_dn, base, base);
    ck_assert_int_eq(req("POST", IDPS, ADM, body), 201);
}

static void teardown(void)
{
    harness_teardown();
}

static long ldap_login(const char *provider, const char *user, const char *pw, struct http_res *r)
{
    json_t *b =
        json_pack("{s:s, s:s, s:s}", "username", user, "password", pw, "provider", provider);
    char *text = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    long st = reqj("POST", "/api/v1/auth/login", NULL, text, r);
    free(text);
    return st;
}


/* Sign user in through provider; its /me (a new reference). */
static json_t *signed_in(const char *provider, const char *user, const char *pw)
{
    struct http_res r;
    long st = ldap_login(provider, user, pw, &r);
    ck_assert_msg(st == 200, "%s answered %ld: %s", user, st, r.body);
    char *jwt = strdup(jstr(r.json, "access_token"));
    char *cookie = http_set_cookie(&r, "aidc_session");
    ck_assert_ptr_nonnull(cookie); /* the portal's session too */
    free(cookie);
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/me", jwt, NULL, &r), 200);
    json_t *m = json_incref(r.json);
    http_res_free(&r);
    free(jwt);
    return m;
}

START_TEST(directory_users_sign_in_with_their_groups_roles)
{
    json_t *m = signed_in("dir", "alice", "alice-pw");
    ck_assert_str_eq(jstr(m, "username"), "alice");
    ck_assert_str_eq(member_role(m, "physics"), "member");
    ck_assert_ptr_null(member_role(m, "chem"));
    json_decref(m);
    m = signed_in("dir", "dave", "dave-pw");
    ck_assert_str_eq(member_role(m, "physics"), "member");
    ck_assert_str_eq(member_role(m, "chem"), "viewer");
    json_decref(m);
    /* as the directory spells it, whatever the case typed */
    m = signed_in("dir", "ALICE", "alice-pw");
    ck_assert_str_eq(jstr(m, "username"), "alice");
    json_decref(m);
    ck_assert_int_eq(count_items("/api/v1/audit/events?action=auth.login&outcome=success", ADM),
                     4); /* the admin's own, and three */
    /* over LDAPS as well */
    const char *body =
        fmt("{\"name\":\"dirs\",\"kind\":\"ldap\",\"display_name\":\"Directory (LDAPS)\","
            "\"url\":\"%s\",\"ca_file\":\"%s\",\"bind_dn\":\"%s\","
            "\"bind_password_ref\":\"env:AIDC_TEST_LDAP_SVC\",\"user_base\":\"ou=people,%s\"}",
            ldaps, ca, bind_dn, base);
    ck_assert_int_eq(req("POST", IDPS, ADM, body), 201);
    m = signed_in("dirs", "bob", "bob-pw");
    ck_assert_str_eq(jstr(m, "username"), "bob");
    json_decref(m);
}
END_TEST

/* 401 login.failed: the answer of a wrong password, whatever the reason. */
static void refused(const char *user, const char *pw)
{
    struct http_res r;
    long st = ldap_login("dir", user, pw, &r);
    ck_assert_msg(st == 401, "%s answered %ld: %s", user, st, r.body);
    ck_assert_str_eq(jstr(r.json, "code"), "login.failed");
    http_res_free(&r);
}

START_TEST(wrong_locked_and_injected_all_answer_as_a_wrong_password)
{
    refused("alice", "not-alices-pw");
    refused("carol", "carol-pw"); /* locked in the directory, right password */
    refused("*", "alice-pw");
    refused("*)(uid=*", "alice-pw");
    refused("alice)(uid=*", "alice-pw");
    refused("nobody-here", "x");
    /* none became a user */
    ck_assert_int_eq(req("GET", "/api/v1/users/carol", ADM, NULL), 404);
    struct http_res r;
    ck_assert_int_eq(ldap_login("dir", "alice", "", &r), 400); /* never an unauthenticated bind */
    http_res_free(&r);
    /* the same throttle as aidc's own passwords: alice from here, four failures */
    refused("alice", "wrong-1");
    refused("Alice", "wrong-2"); /* the directory ignores case: so does the count */
    refused("ALICE", "wrong-3");
    ck_assert_int_eq(ldap_login("dir", "alice", "alice-pw", &r), 429);
    http_res_free(&r);
    ck_assert_int_ge(count_items("/api/v1/audit/events?action=auth.login&outcome=denied", ADM), 9);
}
END_TEST

START_TEST(unknown_and_unreachable_providers_say_so)
{
    struct http_res r;
    ck_assert_int_eq(ldap_login("nope", "alice", "alice-pw", &r), 400);
    ck_assert_str_eq(jstr(r.json, "code"), "auth.provider_unknown");
    http_res_free(&r);
    ck_assert_int_eq(req("PATCH", IDPS "/dir", ADM, "{\"enabled\":false}"), 200);
    ck_assert_int_eq(ldap_login("dir", "alice", "alice-pw", &r), 400);
    http_res_free(&r);
    ck_assert_int_eq(req("PATCH", IDPS "/dir", ADM, "{\"enabled\":true}"), 200);
    /* nothing listens there */
    ck_assert_int_eq(req("PATCH", IDPS "/dir", ADM, "{\"url\":\"ldap://127.0.0.1:9\"}"), 200);
    ck_assert_int_eq(ldap_login("dir", "alice", "alice-pw", &r), 503);
    ck_assert_str_eq(jstr(r.json, "code"), "auth.provider_unavailable");
    http_res_free(&r);
    /* the directory through a CA that did not sign it: no plaintext fallback */
    ck_assert_int_eq(
        req("PATCH", IDPS "/dir", ADM,
            fmt("{\"url\":\"%s\",\"ca_file\":\"/etc/ssl/certs/ca-certificates.crt\"}", url)),
        200);
    ck_assert_int_eq(ldap_login("dir", "alice", "alice-pw", &r), 503);
    http_res_free(&r);
    /* the public list offers it, pointing at the login route */
    json_t *items = get_items("/api/v1/auth/providers", NULL);
    ck_assert_int_eq(json_array_size(items), 1);
    ck_assert_str_eq(jstr(json_array_get(items, 0), "login_url"), "/api/v1/auth/login");
    ck_assert_str_eq(jstr(json_array_get(items, 0), "kind"), "ldap");
    json_decref(items);
}
END_TEST

int main(void)
{
    harness_require_pg();
    url = getenv("AIDC_TEST_LDAP_URL");
    ldaps = getenv("AIDC_TEST_LDAPS_URL");
    ca = getenv("AIDC_TEST_LDAP_CA");
    bind_dn = getenv("AIDC_TEST_LDAP_BIND_DN");
    base = getenv("AIDC_TEST_LDAP_BASE");
    if (!url || !ldaps || !ca || !bind_dn || !base || !getenv("AIDC_TEST_LDAP_BIND_PASSWORD")) {
        printf("skipped: AIDC_TEST_LDAP_* not set (tests/run.sh starts deploy/slapd-up.sh)\n");
        return 77;
    }
    Suite *s = suite_create("sso_ldap");
    TCase *tc = tcase_create("ldap");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, directory_users_sign_in_with_their_groups_roles);
    tcase_add_test(tc, wrong_locked_and_injected_all_answer_as_a_wrong_password);
    tcase_add_test(tc, unknown_and_unreachable_providers_say_so);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
