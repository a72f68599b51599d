/*
 * test_sso_attacks.c - an attacker's look at single sign-on (issue 25): each
 * test is one attack, shown to fail.
 *
 * OpenID Connect (against tests/oidc/provider.mjs):
 *  - open redirects through return_to: "//host", "/\host", backslashes and
 *    "//" arriving URL-encoded, control characters, CR/LF header splitting,
 *    DEL, another scheme; a doubly encoded "/%2f%2fhost" stays on this site;
 *  - what the provider's error= brings back is reflected into the portal's
 *    URL: markup and quotes never reach it, only [a-z_], 64 at most;
 *  - mix-up (RFC 9207): an answer whose iss is not the provider's is refused,
 *    and its state is spent;
 *  - login CSRF: the victim's browser, with a sign-in of its own on the way,
 *    given the attacker's callback URL (code and state), gets no session;
 *  - password sign-in switched off for non-admins (AIDC_PASSWORD_LOGIN=admins)
 *    is not bypassed by naming an OpenID provider (or none that exists) in
 *    "provider".
 * LDAP (against the test slapd):
 *  - the failed-login throttle is not bypassed by spelling the user name in
 *    other letter case or with spaces the directory ignores (it matches
 *    "ALICE" and " alice" as alice): fixed, the throttle keys on the folded name;
 *  - a NUL (\u0000) or bytes that are not UTF-8 in the user name, password or
 *    provider are refused before the directory sees them.
 *
 * Each part skips when its service is not configured; the whole file 77
 * without either.
 */
#include "tests/support/browser.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADM  harness_srv.admin_token
#define IDPS "/api/v1/identity-providers"

static const char *issuer;

/* ---- OpenID Connect --------------------------------------------------------------------- */

static void oidc_setup(void)
{
    static const char *const env[] = {"AIDC_PASSWORD_LOGIN=admins",
                                      "AIDC_TEST_SSO_SECRET=aidc-test-secret", NULL};
    harness_setup("sso_attacks", env);
    const char *body = fmt("{\"name\":\"campus\",\"kind\":\"oidc\",\"display_name\":\"Uni\","
                           "\"issuer\":\"%s\",\"client_id\":\"aidc-portal\","
                           "\"client_secret_ref\":\"env:AIDC_TEST_SSO_SECRET\","
                           "\"scopes\":[\"openid\",\"profile\",\"email\",\"groups\"]}",
                           issuer);
    ck_assert_int_eq(req("POST", IDPS, ADM, body), 201);
}

static void teardown(void)
{
    harness_teardown();
}

static void no_session(struct browser *b)
{
    char *jwt = browser_cookie(b, "aidc_session");
    ck_assert_msg(!jwt || !jwt[0], "a session for a refused sign-in");
    free(jwt);
}

static const char *login_url(const char *hint, const char *back)
{
    return fmt("%s/api/v1/auth/oidc/campus/login?login_hint=%s%s%s", harness_srv.base, hint,
               back ? "&return_to=" : "", back ? back : "");
}

START_TEST(return_to_cannot_leave_the_site)
{
    static const char *const evil[] = {
        "//evil.example",
        "/\\evil.example",
        "/%5Cevil.example",
        "/%5C%5Cevil.example",
        "%2F%2Fevil.example",
        "/%2F%2Fevil.example",
        "/%2F/evil.example",
        "/%09/evil.example",
        "/%0D%0ALocation:%20http://evil",
        "/%7Fevil",
        "https://evil.example/",
        "https:evil.example",
        "evil.example",
        "/x%20y",
        "/%E2%80%AE",
        "/%C0%AF%C0%AFevil",
    };
    for (size_t i = 0; i < sizeof evil / sizeof *evil; i++) {
        long st =
            req("GET", fmt("/api/v1/auth/oidc/campus/login?return_to=%s", evil[i]), NULL, NULL);
        ck_assert_msg(st == 400, "return_to=%s answered %ld", evil[i], st);
    }
    /* doubly encoded: arrives as "/%2f%2fevil.example", a path of this site */
    struct browser b;
    browser_open(&b);
    ck_assert(
        browser_to_callback(&b, harness_srv.base, login_url("bob", "/%252f%252fevil.example")));
    ck_assert_int_eq(browser_get(&b, b.location), 302);
    ck_assert_str_eq(b.location, fmt("%s/%%2f%%2fevil.example", harness_srv.base));
    browser_close(&b);
    /* "%00" is left undecoded by libmicrohttpd: a path of this site, as typed */
    browser_open(&b);
    ck_assert(browser_to_callback(&b, harness_srv.base, login_url("bob", "/%00//evil.example")));
    ck_assert_int_eq(browser_get(&b, b.location), 302);
    ck_assert_str_eq(b.location, fmt("%s/%%00//evil.example", harness_srv.base));
    browser_close(&b);
}
END_TEST

/* The state= of an authorization request URL. */
static const char *state_of(const char *loc)
{
    const char *s = strstr(loc, "&state=");
    ck_assert_ptr_nonnull(s);
    s += 7;
    return fmt("%.*s", (int)strcspn(s, "&"), s);
}

START_TEST(the_providers_error_is_inert_in_the_portal_url)
{
    static const char *const errors[] = {
        "%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "access_denied%22%20onmouseover%3D%22alert(1)",
        "x%26sso_error%3Djavascript%3Aalert(1)",
        "%23%2Flogin%3Freturn_to%3D%2F%2Fevil",
        "%E2%80%AEaccess_denied%0D%0ASet-Cookie%3A%20a%3Db",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    };
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++) {
        struct browser b;
        browser_open(&b);
        ck_assert_int_eq(browser_get(&b, fmt("%s/api/v1/auth/oidc/campus/login", harness_srv.base)),
                         302);
        const char *state = state_of(b.location);
        ck_assert_int_eq(
            browser_get(&b, fmt("%s/api/v1/auth/oidc/campus/callback?state=%s&error=%s",
                                harness_srv.base, state, errors[i])),
            302);
        const char *head = fmt("%s/#/login?sso_error=sso.denied&error=", harness_srv.base);
        ck_assert_msg(strncmp(b.location, head, strlen(head)) == 0, "%s", b.location);
        const char *v = b.location + strlen(head);
        ck_assert_msg(strspn(v, "abcdefghijklmnopqrstuvwxyz_") == strlen(v), "reflected: %s", v);
        ck_assert_uint_le(strlen(v), 64);
        no_session(&b);
        browser_close(&b);
    }
}
END_TEST

/* url with the value of iss= replaced by what. */
static const char *with_iss(const char *url, const char *what)
{
    const char *i = strstr(url, "iss=");
    if (!i)
        return fmt("%s&iss=%s", url, what);
    const char *end = i + 4 + strcspn(i + 4, "&");
    return fmt("%.*siss=%s%s", (int)(i - url), url, what, end);
}

START_TEST(a_mixed_up_issuer_is_refused)
{
    struct browser b;
    browser_open(&b);
    ck_assert(browser_to_callback(&b, harness_srv.base, login_url("alice", NULL)));
    char cb[4096];
    snprintf(cb, sizeof cb, "%s", b.location);
    ck_assert_int_eq(browser_get(&b, with_iss(cb, "http%3A%2F%2Fevil.example")), 302);
    ck_assert_str_eq(b.location, fmt("%s/#/login?sso_error=sso.token", harness_srv.base));
    no_session(&b);
    /* the state is spent: the genuine answer afterwards is refused too */
    ck_assert_int_eq(browser_get(&b, cb), 302);
    ck_assert_str_eq(b.location, fmt("%s/#/login?sso_error=sso.state", harness_srv.base));
    no_session(&b);
    browser_close(&b);
}
END_TEST

START_TEST(login_csrf_gives_the_victim_no_session)
{
    /* the attacker signs in as bob up to the callback, and stops there */
    struct browser att, vic;
    browser_open(&att);
    ck_assert(browser_to_callback(&att, harness_srv.base, login_url("bob", NULL)));
    /* the victim has a sign-in of its own on the way (its own aidc_sso) */
    browser_open(&vic);
    ck_assert_int_eq(browser_get(&vic, fmt("%s/api/v1/auth/oidc/campus/login", harness_srv.base)),
                     302);
    ck_assert_int_eq(browser_get(&vic, att.location), 302);
    ck_assert_str_eq(vic.location, fmt("%s/#/login?sso_error=sso.state", harness_srv.base));
    no_session(&vic);
    /* the victim's own state with the attacker's code: the code was PKCE-bound to another verifier
     */
    const char *code = strstr(att.location, "code=");
    ck_assert_ptr_nonnull(code);
    code += 5;
    ck_assert_int_eq(browser_get(&vic, fmt("%s/api/v1/auth/oidc/campus/login", harness_srv.base)),
                     302);
    const char *vstate = state_of(vic.location);
    ck_assert_int_eq(
        browser_get(&vic, fmt("%s/api/v1/auth/oidc/campus/callback?code=%.*s&state=%s",
                              harness_srv.base, (int)strcspn(code, "&"), code, vstate)),
        302);
    ck_assert_str_eq(vic.location, fmt("%s/#/login?sso_error=sso.token", harness_srv.base));
    no_session(&vic);
    browser_close(&att);
    browser_close(&vic);
}
END_TEST

START_TEST(password_login_off_is_not_bypassed_through_provider)
{
    make_user("mallory", "mallory-password-1", NULL);
    static const char *const providers[] = {"campus", "nope", "Campus", "campus "};
    for (size_t i = 0; i < sizeof providers / sizeof *providers; i++) {
        struct http_res r;
        long st = reqj("POST", "/api/v1/auth/login", NULL,
                       fmt("{\"username\":\"mallory\",\"password\":\"mallory-password-1\","
                           "\"provider\":\"%s\"}",
                           providers[i]),
                       &r);
        char *cookie = http_set_cookie(&r, "aidc_session");
        ck_assert_msg(st == 400 && !cookie, "provider %s answered %ld", providers[i], st);
        free(cookie);
        http_res_free(&r);
    }
    /* and without it, the setting refuses her */
    ck_assert_int_eq(req("POST", "/api/v1/auth/login", NULL,
                         "{\"username\":\"mallory\",\"password\":\"mallory-password-1\"}"),
                     403);
}
END_TEST

/*
 * The SECURITY DEFINER door runs as the owner: callable by anyone who can
 * connect (PUBLIC, Postgres' default for a function) it would make users and
 * grant tenant_admin anywhere. Only the application role may call it.
 */
START_TEST(the_definer_function_is_the_application_roles_alone)
{
    static const char *const sig = "aidc_external_login(text,text,text,text,text,jsonb)";
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT has_function_privilege('public', $1, 'EXECUTE')", 1, &sig);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "f");
    PQclear(r);
    /* and the application role still can: a sign-in works */
    struct browser b;
    browser_open(&b);
    ck_assert(browser_to_callback(&b, harness_srv.base, login_url("carol", NULL)));
    ck_assert_int_eq(browser_get(&b, b.location), 302);
    ck_assert_str_eq(b.location, fmt("%s/", harness_srv.base));
    browser_close(&b);
}
END_TEST

/* ---- LDAP ------------------------------------------------------------------------------- */

static void ldap_setup(void)
{
    char pw[256];
    snprintf(pw, sizeof pw, "AIDC_TEST_LDAP_SVC=%s", getenv("AIDC_TEST_LDAP_BIND_PASSWORD"));
    const char *const env[] = {pw, "AIDC_LOGIN_MAX_FAILURES=4", NULL};
    harness_setup("sso_attacks_ldap", env);
    const char *base = getenv("AIDC_TEST_LDAP_BASE");
    const char *body =
        fmt("{\"name\":\"dir\",\"kind\":\"ldap\",\"display_name\":\"Directory\","
            "\"url\":\"%s\",\"start_tls\":true,\"ca_file\":\"%s\",\"bind_dn\":\"%s\","
            "\"bind_password_ref\":\"env:AIDC_TEST_LDAP_SVC\",\"user_base\":\"ou=people,%s\"}",
            getenv("AIDC_TEST_LDAP_URL"), getenv("AIDC_TEST_LDAP_CA"),
            getenv("AIDC_TEST_LDAP_BIND_DN"), base);
    ck_assert_int_eq(req("POST", IDPS, ADM, body), 201);
}

static long ldap_login(const char *user, const char *pw)
{
    json_t *b = json_pack("{s:s, s:s, s:s}", "username", user, "password", pw, "provider", "dir");
    char *text = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    long st = req("POST", "/api/v1/auth/login", NULL, text);
    free(text);
    return st;
}

START_TEST(the_throttle_is_not_bypassed_by_letter_case_or_spaces)
{
    /* the directory matches these as alice */
    ck_assert_int_eq(ldap_login("ALICE", "alice-pw"), 200);
    ck_assert_int_eq(ldap_login(" alice ", "alice-pw"), 200);
    /* four failures for alice, each spelt differently */
    ck_assert_int_eq(ldap_login("alice", "wrong-1"), 401);
    ck_assert_int_eq(ldap_login("Alice", "wrong-2"), 401);
    ck_assert_int_eq(ldap_login("aLiCe", "wrong-3"), 401);
    ck_assert_int_eq(ldap_login("alice ", "wrong-4"), 401);
    /* alice is held back now, however she is spelt */
    static const char *const spellings[] = {"alice", "ALICE", "alicE", " alice", "al ice"};
    for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
        long st = ldap_login(spellings[i], "alice-pw");
        ck_assert_msg(st == 429, "\"%s\" answered %ld", spellings[i], st);
    }
    /* bob is not; nor can a NUL or bytes that are not UTF-8 cut or smuggle a name */
    static const char *const odd[] = {
        "{\"username\":\"bob\\u0000x\",\"password\":\"bob-pw\",\"provider\":\"dir\"}",
        "{\"username\":\"bob\xff\",\"password\":\"bob-pw\",\"provider\":\"dir\"}",
        "{\"username\":\"bob\",\"password\":\"bob-pw\\u0000x\",\"provider\":\"dir\"}",
        "{\"username\":\"bob\",\"password\":\"bob-pw\",\"provider\":\"dir\\u0000x\"}",
    };
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        long st = req("POST", "/api/v1/auth/login", NULL, odd[i]);
        ck_assert_msg(st == 400, "%s answered %ld", odd[i], st);
    }

    ck_assert_int_eq(ldap_login("bob", "bob-pw"), 200);
}
END_TEST

int main(void)
{
    harness_require_pg();
    issuer = getenv("AIDC_TEST_OIDC_ISSUER");
    bool ldap = getenv("AIDC_TEST_LDAP_URL") && getenv("AIDC_TEST_LDAP_CA") &&
                getenv("AIDC_TEST_LDAP_BIND_DN") && getenv("AIDC_TEST_LDAP_BASE") &&
                getenv("AIDC_TEST_LDAP_BIND_PASSWORD");
    if (!issuer && !ldap) {
        printf("skipped: neither AIDC_TEST_OIDC_ISSUER nor AIDC_TEST_LDAP_* set\n");
        return 77;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("sso_attacks");
    if (issuer) {
        TCase *tc = tcase_create("oidc");
        tcase_add_checked_fixture(tc, oidc_setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, return_to_cannot_leave_the_site);
        tcase_add_test(tc, the_providers_error_is_inert_in_the_portal_url);
        tcase_add_test(tc, a_mixed_up_issuer_is_refused);
        tcase_add_test(tc, login_csrf_gives_the_victim_no_session);
        tcase_add_test(tc, password_login_off_is_not_bypassed_through_provider);
        tcase_add_test(tc, the_definer_function_is_the_application_roles_alone);
        suite_add_tcase(s, tc);
    }
    if (ldap) {
        TCase *tc = tcase_create("ldap");
        tcase_add_checked_fixture(tc, ldap_setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, the_throttle_is_not_bypassed_by_letter_case_or_spaces);
        suite_add_tcase(s, tc);
    }
    return suite_run(s);
}
