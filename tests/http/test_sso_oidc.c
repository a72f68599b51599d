/*
 * test_sso_oidc.c - single sign-on with OpenID Connect against a real,
 * certified provider (oidc-provider, tests/oidc/provider.mjs, started once
 * per run by tests/run.sh): the code flow with PKCE end to end through a
 * cookie-keeping client, roles from the provider's groups at every sign-in,
 * users keyed on the subject (a local user's name is never taken over),
 * every ID token a relying party must refuse (expired, wrong audience,
 * HS256 keyed with the public key, unsigned, wrong nonce), a replayed or
 * foreign state, the provider's refusal, a key rotation, and providers'
 * configuration with its every limit. The server runs with
 * AIDC_PASSWORD_LOGIN=admins: local passwords only for platform admins.
 *
 * Skips (77) without AIDC_TEST_OIDC_ISSUER.
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

static const char *issuer, *rot_issuer;

static void setup(void)
{
    static const char *const env[] = {"AIDC_PASSWORD_LOGIN=admins",
                                      "AIDC_TEST_SSO_SECRET=aidc-test-secret",
                                      /* the per-address ceiling of sign-ins, not the rate */
                                      "AIDC_RATE_LIMIT_PER_ADDRESS=0", NULL};
    harness_setup("sso_oidc", env);
    make_tenant("physics");
    make_tenant("chem");
    const char *body =
        fmt("{\"name\":\"campus\",\"kind\":\"oidc\",\"display_name\":\"Test University\","
            "\"issuer\":\"%s\",\"client_id\":\"aidc-portal\","
            "\"client_secret_ref\":\"env:AIDC_TEST_SSO_SECRET\","
            "\"scopes\":[\"openid\",\"profile\",\"email\",\"groups\"],"
            "\"role_rules\":[{\"claim\":\"groups\",\"value\":\"physics-staff\","
            "\"tenant\":\"physics\",\"role\":\"member\"},"
            "{\"group\":\"chem-admins\",\"tenant\":\"chem\",\"role\":\"tenant_admin\"}]}",
            issuer);
    ck_assert_int_eq(req("POST", IDPS, ADM, body), 201);
}

static void teardown(void)
{
    harness_teardown();
}

static const char *login_url(const char *provider, const char *hint, const char *back)
{
    return fmt("%s/api/v1/auth/oidc/%s/login?login_hint=%s%s%s", harness_srv.base, provider, hint,
               back ? "&return_to=" : "", back ? back : "");
}

/* Sign hint in through provider: the session JWT (malloc'd); the test fails otherwise. */
static char *sso(const char *provider, const char *hint)
{
    struct browser b;
    browser_open(&b);
    ck_assert_msg(browser_to_callback(&b, harness_srv.base, login_url(provider, hint, NULL)),
                  "no way to the callback, last: %ld %s", b.status, b.location);
    ck_assert_int_eq(browser_get(&b, b.location), 302);
    ck_assert_msg(strcmp(b.location, fmt("%s/", harness_srv.base)) == 0, "landed at %s",
                  b.location);
    char *jwt = browser_cookie(&b, "aidc_session");
    ck_assert_ptr_nonnull(jwt);
    browser_close(&b);
    return jwt;
}

/* Sign hint in, expecting the portal's sign-in page with problem code. */
static void sso_refused(const char *provider, const char *hint, const char *code)
{
    struct browser b;
    browser_open(&b);
    ck_assert(browser_to_callback(&b, harness_srv.base, login_url(provider, hint, NULL)));
    ck_assert_int_eq(browser_get(&b, b.location), 302);
    ck_assert_str_eq(b.location, fmt("%s/#/login?sso_error=%s", harness_srv.base, code));
    char *jwt = browser_cookie(&b, "aidc_session");
    ck_assert_msg(!jwt || !jwt[0], "a session for a refused sign-in");
    free(jwt);
    browser_close(&b);
}

static json_t *me(const char *jwt)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/me", jwt, NULL, &r), 200);
    json_t *out = json_incref(r.json);
    http_res_free(&r);
    return out;
}

static long audit_count(const char *action, const char *outcome)
{
    return (long)count_items(fmt("/api/v1/audit/events?action=%s&outcome=%s", action, outcome),
                             ADM);
}

/* ---- the tests ------------------------------------------------------------------------- */

START_TEST(the_code_flow_signs_in_with_roles_from_groups)
{
    long before = audit_count("auth.sso_login", "success");
    char *jwt = sso("campus", "alice");
    json_t *m = me(jwt);
    ck_assert_str_eq(jstr(m, "username"), "alice");
    ck_assert_str_eq(jstr(m, "email"), "alice@example.org"); /* verified by the provider */
    ck_assert_str_eq(jstr(m, "display_name"), "Alice Test");
    ck_assert_str_eq(member_role(m, "physics"), "member");
    ck_assert_ptr_null(member_role(m, "chem"));
    json_decref(m);
    ck_assert_int_eq(audit_count("auth.sso_login", "success"), before + 1);
    /* the session is a session like any: listed, and ended by logout */
    ck_assert_int_eq(count_items("/api/v1/me/sessions", jwt), 1);
    ck_assert_int_eq(req("POST", "/api/v1/auth/logout", jwt, NULL), 204);
    ck_assert_int_eq(req("GET", "/api/v1/me", jwt, NULL), 401);
    free(jwt);
    /* the same subject again: the same user, not a new one */
    jwt = sso("campus", "alice");
    m = me(jwt);
    ck_assert_str_eq(jstr(m, "username"), "alice");
    json_decref(m);
    free(jwt);
    /* carol: two groups, two tenants; an e-mail the provider did not verify is not taken */
    jwt = sso("campus", "carol");
    m = me(jwt);
    ck_assert_str_eq(member_role(m, "physics"), "member");
    ck_assert_str_eq(member_role(m, "chem"), "tenant_admin");
    ck_assert_str_eq(jstr(m, "email"), "");
    json_decref(m);
    free(jwt);
}
END_TEST

START_TEST(roles_follow_the_rules_at_every_sign_in)
{
    char *jwt = sso("campus", "alice");
    free(jwt);
    /* an admin's own grant elsewhere: rules never touch it */
    make_member("chem", "alice", "viewer");
    ck_assert_int_eq(req("PATCH", IDPS "/campus", ADM,
                         "{\"role_rules\":[{\"claim\":\"groups\",\"value\":\"physics-staff\","
                         "\"tenant\":\"physics\",\"role\":\"viewer\"}]}"),
                     200);
    jwt = sso("campus", "alice");
    json_t *m = me(jwt);
    ck_assert_str_eq(member_role(m, "physics"), "viewer");
    ck_assert_str_eq(member_role(m, "chem"), "viewer");
    json_decref(m);
    free(jwt);
    /* the group's rule gone: its role goes at the next sign-in; the admin's stays */
    ck_assert_int_eq(req("PATCH", IDPS "/campus", ADM, "{\"role_rules\":[]}"), 200);
    jwt = sso("campus", "alice");
    m = me(jwt);
    ck_assert_ptr_null(member_role(m, "physics"));
    ck_assert_str_eq(member_role(m, "chem"), "viewer");
    json_decref(m);
    free(jwt);
}
END_TEST

START_TEST(a_local_user_name_is_never_taken_over)
{
    make_user("bob", "bob-local-password-1", NULL);
    char *jwt = sso("campus", "bob");
    json_t *m = me(jwt);
    ck_assert_str_eq(jstr(m, "username"), "bob-2");
    json_decref(m);
    free(jwt);
    /* and local passwords are for platform admins only here */
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/auth/login", NULL,
                          "{\"username\":\"bob\",\"password\":\"bob-local-password-1\"}", &r),
                     403);
    ck_assert_str_eq(jstr(r.json, "code"), "auth.password_login_off");
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", "/api/v1/auth/login", NULL,
                          "{\"username\":\"bob\",\"password\":\"wrong-password-1\"}", &r),
                     401); /* the wrong password learns nothing more */
    http_res_free(&r);
}
END_TEST

START_TEST(tokens_a_relying_party_must_refuse_are_refused)
{
    long before = audit_count("auth.sso_login", "error") + audit_count("auth.sso_login", "denied");
    sso_refused("campus", "expired", "sso.token");
    sso_refused("campus", "wrongaud", "sso.token");
    sso_refused("campus", "hs256", "sso.token");
    sso_refused("campus", "none", "sso.token");
    sso_refused("campus", "badnonce", "sso.token");
    long after = audit_count("auth.sso_login", "error") + audit_count("auth.sso_login", "denied");
    ck_assert_int_eq(after, before + 5);
    /* none of them became a user */
    ck_assert_int_eq(req("GET", "/api/v1/users/expired", ADM, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/users/hs256", ADM, NULL), 404);
}
END_TEST

START_TEST(a_state_is_this_browsers_and_used_once)
{
    struct browser b, other;
    browser_open(&b);
    ck_assert(browser_to_callback(&b, harness_srv.base, login_url("campus", "alice", "/%23/jobs")));
    char cb[4096];
    snprintf(cb, sizeof cb, "%s", b.location);
    /* another browser (no state cookie) cannot finish it */
    browser_open(&other);
    ck_assert_int_eq(browser_get(&other, cb), 302);
    ck_assert_str_eq(other.location, fmt("%s/#/login?sso_error=sso.state", harness_srv.base));
    browser_close(&other);
    /* this one can, once: back where the sign-in began */
    ck_assert_int_eq(browser_get(&b, cb), 302);
    ck_assert_str_eq(b.location, fmt("%s/#/jobs", harness_srv.base));
    char *jwt = browser_cookie(&b, "aidc_session");
    ck_assert_ptr_nonnull(jwt);
    free(jwt);
    ck_assert_int_eq(browser_get(&b, cb), 302);
    ck_assert_str_eq(b.location, fmt("%s/#/login?sso_error=sso.state", harness_srv.base));
    browser_close(&b);
    /* a callback nobody started */
    browser_open(&b);
    ck_assert_int_eq(browser_get(&b, fmt("%s/api/v1/auth/oidc/campus/callback?code=x&state=y",
                                         harness_srv.base)),
                     302);
    ck_assert_str_eq(b.location, fmt("%s/#/login?sso_error=sso.state", harness_srv.base));
    browser_close(&b);
}
END_TEST

START_TEST(the_providers_refusal_ends_on_the_sign_in_page)
{
    struct browser b;
    browser_open(&b);
    /* no login_hint: the provider shows its form; cancel it */
    browser_get(&b, fmt("%s/api/v1/auth/oidc/campus/login", harness_srv.base));
    ck_assert_int_eq(b.status, 302);
    char next[4200];
    snprintf(next, sizeof next, "%s", b.location);
    browser_get(&b, next); /* the provider's /auth: to its interaction page */
    ck_assert_int_eq(b.status / 100, 3);
    const char *uid = strstr(b.location, "/interaction/");
    ck_assert_ptr_nonnull(uid);
    snprintf(next, sizeof next, "%s/abort", b.location);
    ck_assert(browser_to_callback(&b, harness_srv.base, next));
    ck_assert_ptr_nonnull(strstr(b.location, "error=access_denied"));
    ck_assert_int_eq(browser_get(&b, b.location), 302);
    ck_assert_str_eq(b.location,
                     fmt("%s/#/login?sso_error=sso.denied&error=access_denied", harness_srv.base));
    browser_close(&b);
}
END_TEST

START_TEST(a_rotated_key_is_fetched_when_it_signs)
{
    const char *body = fmt("{\"name\":\"rot\",\"kind\":\"oidc\",\"display_name\":\"Rotating\","
                           "\"issuer\":\"%s\",\"client_id\":\"aidc-portal\","
                           "\"client_secret_ref\":\"env:AIDC_TEST_SSO_SECRET\"}",
                           rot_issuer);
    ck_assert_int_eq(req("POST", IDPS, ADM, body), 201);
    char *jwt = sso("rot", "alice");
    free(jwt);
    /* the provider signs with a new key now: aidc has only the old one */
    ck_assert_int_eq(browser_post_empty(fmt("%s/_test/rotate", rot_issuer)), 200);
    jwt = sso("rot", "bob");
    json_t *m = me(jwt);
    ck_assert_str_eq(jstr(m, "username"), "bob");
    json_decref(m);
    free(jwt);
}
END_TEST

START_TEST(a_disabled_user_is_refused)
{
    char *jwt = sso("campus", "alice");
    free(jwt);
    ck_assert_int_eq(req("PATCH", "/api/v1/users/alice", ADM, "{\"disabled\":true}"), 200);
    sso_refused("campus", "alice", "sso.disabled");
    ck_assert_int_eq(req("PATCH", "/api/v1/users/alice", ADM, "{\"disabled\":false}"), 200);
}
END_TEST

START_TEST(sign_in_start_checks_what_it_is_given)
{
    struct http_res r;
    ck_assert_int_eq(
        reqj("GET", "/api/v1/auth/oidc/campus/login?return_to=//evil.example/x", NULL, NULL, &r),
        400);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "errors"), 0), "code"),
                     "auth.return_to");
    http_res_free(&r);
    ck_assert_int_eq(
        req("GET", "/api/v1/auth/oidc/campus/login?return_to=https://evil.example/", NULL, NULL),
        400);
    ck_assert_int_eq(req("GET", "/api/v1/auth/oidc/nope/login", NULL, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/auth/oidc/campus/login?bogus=1", NULL, NULL), 400);
    /* a disabled provider is not offered and does not start */
    ck_assert_int_eq(req("PATCH", IDPS "/campus", ADM, "{\"enabled\":false}"), 200);
    ck_assert_int_eq(req("GET", "/api/v1/auth/oidc/campus/login", NULL, NULL), 404);
    ck_assert_int_eq(count_items("/api/v1/auth/providers", NULL), 0);
    ck_assert_int_eq(req("PATCH", IDPS "/campus", ADM, "{\"enabled\":true}"), 200);
    json_t *items = get_items("/api/v1/auth/providers", NULL);
    ck_assert_int_eq(json_array_size(items), 1);
    json_t *p = json_array_get(items, 0);
    ck_assert_str_eq(jstr(p, "name"), "campus");
    ck_assert_str_eq(jstr(p, "kind"), "oidc");
    ck_assert_str_eq(jstr(p, "display_name"), "Test University");
    ck_assert_str_eq(jstr(p, "login_url"), "/api/v1/auth/oidc/campus/login");
    ck_assert_ptr_null(json_object_get(p, "client_secret_ref")); /* nothing of the setup */
    ck_assert_ptr_null(json_object_get(p, "issuer"));
    json_decref(items);
    /* the sign-in goes where the provider says, with PKCE, state and nonce */
    ck_assert_int_eq(reqj("GET", "/api/v1/auth/oidc/campus/login", NULL, NULL, &r), 302);
    char *loc = http_header(&r, "Location");
    ck_assert_ptr_nonnull(loc);
    ck_assert_msg(strstr(loc, fmt("%s/auth?", issuer)) == loc, "%s", loc);
    ck_assert_ptr_nonnull(strstr(loc, "code_challenge_method=S256"));
    ck_assert_ptr_nonnull(strstr(loc, "&state="));
    ck_assert_ptr_nonnull(strstr(loc, "&nonce="));
    ck_assert_ptr_nonnull(strstr(loc, "&code_challenge="));
    ck_assert_ptr_nonnull(strstr(loc, "redirect_uri=http%3A%2F%2F127.0.0.1%3A"));
    free(loc);
    char *cookie = http_set_cookie(&r, "aidc_sso");
    ck_assert_ptr_nonnull(cookie);
    ck_assert_ptr_nonnull(strstr(cookie, "HttpOnly"));
    ck_assert_ptr_nonnull(strstr(cookie, "SameSite=Lax"));
    ck_assert_ptr_nonnull(strstr(cookie, "Path=/api/v1/auth/oidc/campus/callback"));
    free(cookie);
    http_res_free(&r);
    /* the provider's session can be ended from the portal too (its discovery is known now) */
    items = get_items("/api/v1/auth/providers", NULL);
    const char *lo = jstr(json_array_get(items, 0), "logout_url");
    ck_assert_ptr_nonnull(lo);
    ck_assert_msg(strstr(lo, fmt("%s/session/end?client_id=aidc-portal&post_logout_redirect_uri=",
                                 issuer)) == lo,
                  "%s", lo);
    json_decref(items);
}
END_TEST

/* POST a provider, expecting 400 with a field error on field with code. */
static void refused(const char *body, const char *field, const char *code)
{
    struct http_res r;
    long st = reqj("POST", IDPS, ADM, body, &r);
    ck_assert_msg(st == 400, "%s answered %ld: %s", body, st, r.body);
    bool hit = false;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r.json, "errors"), i, e) hit =
        hit || (strcmp(jstr(e, "field"), field) == 0 && strcmp(jstr(e, "code"), code) == 0);
    ck_assert_msg(hit, "%s: no %s on %s in %s", body, code, field, r.body);
    http_res_free(&r);
}

#define OIDC_OK                                                                                    \
    "\"kind\":\"oidc\",\"display_name\":\"X\",\"issuer\":\"https://idp.example.edu\","             \
    "\"client_id\":\"c\",\"client_secret_ref\":\"env:X_SECRET\""
#define LDAP_OK                                                                                    \
    "\"kind\":\"ldap\",\"display_name\":\"Directory\",\"url\":\"ldaps://ldap.example.edu\","       \
    "\"bind_dn\":\"cn=svc,dc=example,dc=edu\",\"bind_password_ref\":\"env:X_BIND\","               \
    "\"user_base\":\"ou=people,dc=example,dc=edu\""

START_TEST(providers_are_configured_and_checked)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", IDPS, ADM, "{\"name\":\"dir\"," LDAP_OK "}", &r), 201);
    ck_assert_str_eq(jstr(r.json, "user_filter"), "(&(objectClass=inetOrgPerson)(uid={username}))");
    ck_assert(json_is_false(json_object_get(r.json, "start_tls"))); /* ldaps */
    ck_assert(json_is_true(json_object_get(r.json, "enabled")));
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", IDPS "/dir", ADM, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "bind_password_ref"), "env:X_BIND");
    http_res_free(&r);
    ck_assert_int_eq(count_items(IDPS, ADM), 2);
    ck_assert_int_eq(req("POST", IDPS, ADM, "{\"name\":\"dir\"," LDAP_OK "}"), 409);
    ck_assert_int_eq(req("PATCH", IDPS "/dir", ADM, "{\"kind\":\"oidc\"}"), 400);
    ck_assert_int_eq(reqj("PATCH", IDPS "/dir", ADM, "{\"display_name\":\"Campus directory\"}", &r),
                     200);
    ck_assert_str_eq(jstr(r.json, "display_name"), "Campus directory");
    ck_assert_str_eq(jstr(r.json, "url"), "ldaps://ldap.example.edu");
    http_res_free(&r);
    ck_assert_int_eq(req("DELETE", IDPS "/dir", ADM, NULL), 204);
    ck_assert_int_eq(req("DELETE", IDPS "/dir", ADM, NULL), 404);
    ck_assert_int_eq(req("GET", IDPS "/dir", ADM, NULL), 404);
    ck_assert_int_eq(req("GET", IDPS "/NOT_A_NAME", ADM, NULL), 400);

    refused("{\"name\":\"A\"," OIDC_OK "}", "name", "idp.name");
    refused("{\"name\":\"x\"," OIDC_OK "}", "name", "idp.name");
    refused("{\"name\":\"abcdefghijabcdefghijabcdefghijabc\"," OIDC_OK "}", "name", "idp.name");
    refused("{\"name\":\"k\",\"kind\":\"saml\",\"display_name\":\"X\"}", "kind", "idp.kind");
    refused("{\"name\":\"o1\",\"kind\":\"oidc\",\"display_name\":\"X\",\"issuer\":"
            "\"http://idp.example.edu\",\"client_id\":\"c\",\"client_secret_ref\":\"env:X\"}",
            "issuer", "idp.issuer");
    refused("{\"name\":\"o2\"," OIDC_OK ",\"scopes\":[\"profile\"]}", "scopes", "idp.scopes");
    refused("{\"name\":\"o3\"," OIDC_OK ",\"scopes\":[\"open id\"]}", "scopes", "idp.scopes");
    refused("{\"name\":\"o4\",\"kind\":\"oidc\",\"display_name\":\"X\",\"issuer\":"
            "\"https://i.example\",\"client_id\":\"c\",\"client_secret_ref\":\"plain-secret\"}",
            "client_secret_ref", "idp.secret_ref");
    refused("{\"name\":\"o5\"," OIDC_OK ",\"url\":\"ldaps://x\"}", "url", "idp.other_kind");
    refused("{\"name\":\"o6\"," OIDC_OK ",\"secret\":\"s\"}", "secret", "validation.unknown_field");
    refused("{\"name\":\"o7\",\"kind\":\"oidc\",\"display_name\":\"X\"}", "issuer",
            "validation.required");
    refused("{\"name\":\"l1\",\"kind\":\"ldap\",\"display_name\":\"D\",\"url\":"
            "\"http://ldap.example.edu\",\"bind_dn\":\"cn=s\",\"bind_password_ref\":\"env:B\","
            "\"user_base\":\"ou=p\"}",
            "url", "idp.ldap_url");
    refused("{\"name\":\"l2\",\"kind\":\"ldap\",\"display_name\":\"D\",\"url\":"
            "\"ldap://ldap.example.edu\",\"start_tls\":false,\"bind_dn\":\"cn=s\","
            "\"bind_password_ref\":\"env:B\",\"user_base\":\"ou=p\"}",
            "start_tls", "idp.cleartext");
    refused("{\"name\":\"l3\"," LDAP_OK ",\"user_filter\":\"(uid=alice)\"}", "user_filter",
            "idp.filter");
    refused("{\"name\":\"l4\"," LDAP_OK ",\"group_filter\":\"member={dn}\"}", "group_filter",
            "idp.filter");
    refused("{\"name\":\"l5\"," LDAP_OK ",\"ca_file\":\"relative.pem\"}", "ca_file", "idp.path");
    refused("{\"name\":\"r1\"," OIDC_OK ",\"role_rules\":{}}", "role_rules", "idp.rule");
    refused("{\"name\":\"r2\"," OIDC_OK ",\"role_rules\":[{\"claim\":\"groups\",\"value\":\"g\","
            "\"tenant\":\"physics\",\"role\":\"platform_admin\"}]}",
            "role_rules[0]", "idp.rule");
    refused("{\"name\":\"r3\"," OIDC_OK ",\"role_rules\":[{\"claim\":\"groups\",\"group\":\"g\","
            "\"value\":\"g\",\"tenant\":\"physics\",\"role\":\"member\"}]}",
            "role_rules[0]", "idp.rule");
    refused("{\"name\":\"r4\"," OIDC_OK ",\"role_rules\":[{\"claim\":\"groups\","
            "\"tenant\":\"physics\",\"role\":\"member\"}]}",
            "role_rules[0]", "idp.rule");
    /* the list limit of rules */
    char *big = malloc(64 * 1024);
    ck_assert_ptr_nonnull(big);
    size_t n = (size_t)snprintf(big, 64 * 1024, "{\"name\":\"r5\"," OIDC_OK ",\"role_rules\":[");
    for (int i = 0; i < 201; i++)
        n += (size_t)snprintf(big + n, 64 * 1024 - n,
                              "%s{\"group\":\"g%d\",\"tenant\":\"physics\",\"role\":\"member\"}",
                              i ? "," : "", i);
    snprintf(big + n, 64 * 1024 - n, "]}");
    refused(big, "role_rules", "validation.items");
    free(big);
    /* only platform admins; nobody anonymous */
    ck_assert_int_eq(req("GET", IDPS, NULL, NULL), 401);
}
END_TEST

/* Anyone may start sign-ins: each is a row for ten minutes, so an address has a ceiling. */
START_TEST(an_address_has_a_ceiling_of_sign_ins_on_their_way)
{
    int started = 0;
    long st = 302;
    while (st == 302 && started < 400) {
        st = req("GET", "/api/v1/auth/oidc/campus/login", NULL, NULL);
        if (st == 302)
            started++;
    }
    ck_assert_int_eq(started, 300);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/auth/oidc/campus/login", NULL, NULL, &r), 429);
    ck_assert_str_eq(jstr(r.json, "code"), "login.throttled");
    char *ra = http_header(&r, "Retry-After");
    ck_assert_ptr_nonnull(ra);
    free(ra);
    http_res_free(&r);
    /* the 300 are kept; the refused one wrote nothing */
    PGresult *res =
        harness_sql(harness_srv.owner_url,
                    "SELECT count(*) FROM oidc_logins WHERE source_ip = '127.0.0.1'", 0, NULL);
    ck_assert_ptr_nonnull(res);
    ck_assert_str_eq(PQgetvalue(res, 0, 0), "300");
    PQclear(res);
}
END_TEST

int main(void)
{
    harness_require_pg();
    issuer = getenv("AIDC_TEST_OIDC_ISSUER");
    rot_issuer = getenv("AIDC_TEST_OIDC_ROTATE_ISSUER");
    if (!issuer || !rot_issuer) {
        printf("skipped: AIDC_TEST_OIDC_ISSUER / AIDC_TEST_OIDC_ROTATE_ISSUER not set "
               "(tests/run.sh starts tests/oidc/provider.mjs)\n");
        return 77;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("sso_oidc");
    TCase *tc = tcase_create("oidc");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, the_code_flow_signs_in_with_roles_from_groups);
    tcase_add_test(tc, roles_follow_the_rules_at_every_sign_in);
    tcase_add_test(tc, a_local_user_name_is_never_taken_over);
    tcase_add_test(tc, tokens_a_relying_party_must_refuse_are_refused);
    tcase_add_test(tc, a_state_is_this_browsers_and_used_once);
    tcase_add_test(tc, the_providers_refusal_ends_on_the_sign_in_page);
    tcase_add_test(tc, a_rotated_key_is_fetched_when_it_signs);
    tcase_add_test(tc, a_disabled_user_is_refused);
    tcase_add_test(tc, sign_in_start_checks_what_it_is_given);
    tcase_add_test(tc, providers_are_configured_and_checked);
    tcase_add_test(tc, an_address_has_a_ceiling_of_sign_ins_on_their_way);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
