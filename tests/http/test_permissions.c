/*
 * test_permissions.c - the permission checks beside the matrix of
 * test_permissions_matrix.c, with the same actors (tests/support/permfixture.h):
 * the public endpoints need no credentials, logout for every kind of caller,
 * the tenant and user lists show only what the caller may see, /me for every
 * actor, a tenant the caller may not see answers like a missing one, deleting
 * a tenant only asks for approval (202) and keeps it, cookie sessions need
 * the portal header to write. Refusals (401/403/404) must be problem+json, and a 404 must not carry
 * the tenant's name or id.
 *
 * The last test case suspends tenant "own" and restores it.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/mismatch.h"
#include "tests/support/permfixture.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one request, one expected status ------------------------------------------ */

/* One request with an expected status; refusals must be problem+json. */
static void expect(int a, const char *method, const char *path, const char *body, long want)
{
    struct http_res r;
    long got = as(a, method, path, body, &r);
    if (got != want)
        note("%s %s as %s: expected %ld, got %ld %s", method, path, actors[a].label, want, got,
             r.body ? r.body : "");
    if ((got == 401 || got == 403 || got == 404) && !is_problem(&r, got))
        note("%s %s as %s: %ld is not problem+json", method, path, actors[a].label, got);
    if (got == 404)
        check_no_leak(path, &r);
    http_res_free(&r);
}

/* ---- the public endpoints ------------------------------------------------------- */

START_TEST(public_endpoints_need_no_credentials)
{
    ck_assert_int_eq(req("GET", "/healthz", NULL, NULL), 200);
    ck_assert_int_eq(req("GET", "/readyz", NULL, NULL), 200);
    ck_assert_int_eq(req("GET", "/metrics", NULL, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1/openapi.json", NULL, NULL), 200);
    struct http_res r;
    char body[200];
    snprintf(body, sizeof body, "{\"username\":\"%s\",\"password\":\"%s\"}", actors[A_NOMEM].user,
             PW);
    ck_assert_int_eq(reqj("POST", "/api/v1/auth/login", NULL, body, &r), 200);
    ck_assert_ptr_nonnull(jstr(r.json, "access_token"));
    http_res_free(&r);
    snprintf(body, sizeof body, "{\"username\":\"%s\",\"password\":\"wrong-password\"}",
             actors[A_NOMEM].user);
    ck_assert_int_eq(reqj("POST", "/api/v1/auth/login", NULL, body, &r), 401);
    ck_assert(is_problem(&r, 401));
    http_res_free(&r);
}
END_TEST

/* ---- logout ---------------------------------------------------------------------- */

START_TEST(logout_for_every_kind_of_caller)
{
    reset_notes();
    /* anonymous: nothing to end, still 204 */
    expect(A_ANON, "POST", "/api/v1/auth/logout", NULL, 204);
    /* a fresh session of each user: 204, and the JWT is dead afterwards */
    for (int a = 0; a < NACTORS; a++) {
        if (a == A_ANON || actors[a].bearer != actors[a].user_jwt)
            continue;
        char *jwt = login(actors[a].user, a == A_ADMIN ? ADMIN_PASSWORD : PW);
        ck_assert_ptr_nonnull(jwt);
        long st = req("POST", "/api/v1/auth/logout", jwt, NULL);
        if (st != 204)
            note("POST /api/v1/auth/logout as %s: expected 204, got %ld", actors[a].label, st);
        st = req("GET", "/api/v1/me", jwt, NULL);
        if (st != 401)
            note("after logout, %s's JWT gets %ld on /me (expected 401)", actors[a].label, st);
        free(jwt);
        /* the actor's other session lives on */
        expect(a, "GET", "/api/v1/me", NULL, 200);
    }
    /* a cookie session: the CSRF header is needed for logout too */
    char *jwt = login(actors[A_TA].user, PW);
    ck_assert_ptr_nonnull(jwt);
    char cookie[1400];
    snprintf(cookie, sizeof cookie, "Cookie: aidc_session=%s", jwt);
    const char *no_xrw[] = {cookie, NULL};
    const char *xrw[] = {cookie, "X-Requested-With: aidc-portal", NULL};
    struct http_res r;
    http_do(&harness_srv, "POST", "/api/v1/auth/logout", NULL, NULL, no_xrw, &r);
    if (r.status != 403 || !is_problem(&r, 403))
        note("cookie logout without X-Requested-With: expected 403 problem, got %ld", r.status);
    http_res_free(&r);
    if (req("GET", "/api/v1/me", jwt, NULL) != 200)
        note("a refused cookie logout ended the session");
    http_do(&harness_srv, "POST", "/api/v1/auth/logout", NULL, NULL, xrw, &r);
    if (r.status != 204)
        note("cookie logout with X-Requested-With: expected 204, got %ld", r.status);
    http_res_free(&r);
    if (req("GET", "/api/v1/me", jwt, NULL) != 401)
        note("after a cookie logout the session still works");
    free(jwt);
    finish();
}
END_TEST

/* ---- focused checks ----------------------------------------------------------------- */

/* The slugs GET /api/v1/tenants shows the actor (the whole body in *body). */
static json_t *tenant_slugs(int a, char **body)
{
    struct http_res r;
    json_t *slugs = json_array();
    if (as(a, "GET", "/api/v1/tenants?limit=1000", NULL, &r) == 200) {
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(r.json, "items"), i, it)
            json_array_append_new(slugs, json_string(jstr(it, "slug")));
    } else {
        note("GET /api/v1/tenants as %s answered %ld", actors[a].label, r.status);
    }
    *body = strdup(r.body ? r.body : "");
    http_res_free(&r);
    return slugs;
}

static bool has_slug(const json_t *slugs, const char *slug)
{
    size_t i;
    json_t *s;
    json_array_foreach(slugs, i, s) if (strcmp(json_string_value(s), slug) == 0) return true;
    return false;
}

START_TEST(tenant_list_shows_only_what_the_caller_may_see)
{
    reset_notes();
    for (int a = 0; a < NACTORS; a++) {
        if (a == A_ANON)
            continue;
        char *body;
        json_t *slugs = tenant_slugs(a, &body);
        bool platform = a == A_ADMIN || a == A_PA || a == A_FIN || a == A_AUD;
        bool sees_own = platform || (a >= A_TA && a <= A_VIEW) || a >= A_TOK_NOADMIN;
        bool sees_other = platform || a == A_FOREIGN;
        for (int t = 0; t < 2; t++) {
            bool want = t == 0 ? sees_own : sees_other;
            if (has_slug(slugs, tenants[t].slug) != want)
                note("GET /api/v1/tenants as %s: tenant \"%s\" %s", actors[a].label,
                     tenants[t].slug, want ? "is missing" : "is listed");
            if (!want && (strstr(body, tenants[t].name) || strstr(body, tenants[t].id)))
                note("GET /api/v1/tenants as %s reveals tenant \"%s\"", actors[a].label,
                     tenants[t].slug);
        }
        if (!platform && json_array_size(slugs) != (size_t)(sees_own + sees_other))
            note("GET /api/v1/tenants as %s lists %zu tenants, expected %d", actors[a].label,
                 json_array_size(slugs), sees_own + sees_other);
        json_decref(slugs);
        free(body);
    }
    expect(A_ANON, "GET", "/api/v1/tenants", NULL, 401);
    finish();
}
END_TEST

START_TEST(user_list_is_for_platform_admin_and_auditor)
{
    reset_notes();
    for (int a = 0; a < NACTORS; a++) {
        long want = a == A_ANON ? 401 : (a == A_ADMIN || a == A_PA || a == A_AUD) ? 200 : 403;
        expect(a, "GET", "/api/v1/users", NULL, want);
    }
    struct http_res r;
    ck_assert_int_eq(as(A_AUD, "GET", "/api/v1/users?limit=1000", NULL, &r), 200);
    bool seen = false;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(r.json, "items"), i, it) seen |=
        jstr(it, "username") && strcmp(jstr(it, "username"), actors[A_FOREIGN].user) == 0;
    ck_assert_msg(seen, "the auditor's user list lacks %s", actors[A_FOREIGN].user);
    ck_assert_ptr_null(strstr(r.body, "password_hash"));
    http_res_free(&r);
    finish();
}
END_TEST

/* Every user sees the clusters a submit needs; how they are reached only platform admins. */
static void check_cluster_fields(int a, const char *what, const json_t *c)
{
    static const char *const common[] = {"name", "kind", "healthy", "inventory"};
    static const char *const operator_only[] = {"endpoint", "credentials_ref", "options",
                                                "last_error"};
    bool admin = a == A_ADMIN || a == A_PA;
    for (size_t k = 0; k < sizeof common / sizeof *common; k++)
        if (!json_object_get(c, common[k]))
            note("%s as %s lacks \"%s\"", what, actors[a].label, common[k]);
    for (size_t k = 0; k < sizeof operator_only / sizeof *operator_only; k++)
        if ((json_object_get(c, operator_only[k]) != NULL) != admin)
            note("%s as %s %s \"%s\"", what, actors[a].label, admin ? "lacks" : "shows",
                 operator_only[k]);
}

START_TEST(cluster_details_are_for_platform_admins)
{
    reset_notes();
    for (int a = 0; a < NACTORS; a++) {
        struct http_res r;
        long got = as(a, "GET", "/api/v1/clusters", NULL, &r);
        long want = a == A_ANON ? 401 : 200;
        if (got != want)
            note("GET /api/v1/clusters as %s: expected %ld, got %ld", actors[a].label, want, got);
        json_t *items = got == 200 ? json_object_get(r.json, "items") : NULL;
        if (got == 200 && json_array_size(items) != 1)
            note("GET /api/v1/clusters as %s: %zu clusters, expected 1", actors[a].label,
                 json_array_size(items));
        if (json_array_size(items) == 1)
            check_cluster_fields(a, "GET /api/v1/clusters", json_array_get(items, 0));
        http_res_free(&r);
        got = as(a, "GET", "/api/v1/clusters/local", NULL, &r);
        if (got != want)
            note("GET /api/v1/clusters/local as %s: expected %ld, got %ld", actors[a].label, want,
                 got);
        if (got == 200)
            check_cluster_fields(a, "GET /api/v1/clusters/local", r.json);
        http_res_free(&r);
    }
    finish();
}
END_TEST

START_TEST(me_works_for_every_authenticated_actor)
{
    reset_notes();
    for (int a = 0; a < NACTORS; a++) {
        struct http_res r;
        long st = as(a, "GET", "/api/v1/me", NULL, &r);
        if (a == A_ANON) {
            if (st != 401 || !is_problem(&r, 401))
                note("/me without credentials: expected 401 problem, got %ld", st);
            http_res_free(&r);
            continue;
        }
        if (st != 200) {
            note("/me as %s: expected 200, got %ld", actors[a].label, st);
            http_res_free(&r);
            continue;
        }
        const char *u = jstr(r.json, "username");
        if (!u || strcmp(u, actors[a].user) != 0)
            note("/me as %s names \"%s\"", actors[a].label, u ? u : "(none)");
        json_t *ms = json_object_get(r.json, "memberships");
        if (!json_is_array(ms) || !json_is_array(json_object_get(r.json, "roles")))
            note("/me as %s lacks roles or memberships", actors[a].label);
        if (a == A_NOMEM && json_array_size(ms) != 0)
            note("/me of a user without membership lists memberships");
        if (a == A_TA || a == A_FOREIGN) {
            json_t *m0 = json_array_get(ms, 0);
            const char *want = a == A_TA ? "own" : "other";
            if (json_array_size(ms) != 1 || !jstr(m0, "tenant") ||
                strcmp(jstr(m0, "tenant"), want) != 0 || !jstr(m0, "role") ||
                strcmp(jstr(m0, "role"), "tenant_admin") != 0)
                note("/me as %s: memberships are %s", actors[a].label, r.body);
        }
        if (a == A_TOK_TENANT) {
            json_t *tok = json_object_get(r.json, "token");
            if (!jstr(tok, "tenant") || strcmp(jstr(tok, "tenant"), "own") != 0)
                note("/me of a tenant-bound token does not name its tenant: %s", r.body);
        }
        http_res_free(&r);
    }
    finish();
}
END_TEST

/* The detail of a refusal with the tenant's slug replaced by "*" (malloc'd). */
static char *detail_without(const struct http_res *r, const char *slug)
{
    const char *d = jstr(r->json, "detail");
    char out[1024] = "";
    size_t n = strlen(slug), len = 0;
    for (const char *p = d ? d : ""; *p && len + 2 < sizeof out;) {
        if (strncmp(p, slug, n) == 0) {
            out[len++] = '*';
            p += n;
        } else {
            out[len++] = *p++;
        }
    }
    out[len] = '\0';
    return strdup(out);
}

/*
 * A tenant the caller may not see answers exactly like one that does not
 * exist: same status, same detail - also where the scope or the CSRF rule
 * refuses (403) before the tenant is looked at.
 */
START_TEST(invisible_tenants_look_like_missing_ones)
{
    reset_notes();
    static const struct {
        const char *method, *suffix, *body;
    } probes[] = {
        {"GET", "", NULL},
        {"PATCH", "", "{\"name\":\"x\"}"},
        {"DELETE", "", NULL},
        {"GET", "/members", NULL},
        {"PUT", "/members/nobody", "{\"role\":\"viewer\"}"},
        {"DELETE", "/members/nobody", NULL},
        {"GET", "/projects", NULL},
        {"POST", "/projects", "{\"slug\":\"ghost\",\"name\":\"x\"}"},
        {"GET", "/projects/p1", NULL},
        {"PATCH", "/projects/p1", "{\"name\":\"x\"}"},
        {"DELETE", "/projects/p1", NULL},
    };
    const char *missing = "no-such-tenant";
    for (int a = A_TA; a < NACTORS; a++) {
        if (a == A_ANON)
            continue;
        const char *hidden = a == A_FOREIGN ? "own" : "other";
        for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
            char p1[200], p2[200];
            snprintf(p1, sizeof p1, "/api/v1/tenants/%s%s", hidden, probes[k].suffix);
            snprintf(p2, sizeof p2, "/api/v1/tenants/%s%s", missing, probes[k].suffix);
            struct http_res r1, r2;
            long s1 = as(a, probes[k].method, p1, probes[k].body, &r1);
            long s2 = as(a, probes[k].method, p2, probes[k].body, &r2);
            char *d1 = detail_without(&r1, hidden), *d2 = detail_without(&r2, missing);
            if (s1 != s2 || strcmp(d1, d2) != 0)
                note("%s %s as %s: %ld \"%s\", but for a missing tenant %ld \"%s\"",
                     probes[k].method, p1, actors[a].label, s1, d1, s2, d2);
            if (s1 != 403 && s1 != 404)
                note("%s %s as %s: %ld", probes[k].method, p1, actors[a].label, s1);
            if (s1 == 404)
                check_no_leak(p1, &r1);
            free(d1);
            free(d2);
            http_res_free(&r1);
            http_res_free(&r2);
        }
    }
    finish();
}
END_TEST

START_TEST(deleting_a_tenant_asks_for_approval_and_keeps_it)
{
    struct http_res r;
    long st = as(A_PA, "DELETE", "/api/v1/tenants/other", NULL, &r);
    ck_assert_int_eq(st, 202);
    json_t *ap = json_object_get(r.json, "approval");
    ck_assert_str_eq(jstr(ap, "state"), "pending");
    ck_assert_str_eq(jstr(json_object_get(ap, "operation"), "method"), "DELETE");
    ck_assert_str_eq(jstr(json_object_get(ap, "operation"), "path"), "/api/v1/tenants/other");
    char *id = strdup(jstr(ap, "id"));
    http_res_free(&r);
    ck_assert_int_eq(adm("GET", "/api/v1/tenants/other", NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "name"), tenants[1].name);
    http_res_free(&r);
    ck_assert_int_eq(adm_status("/api/v1/tenants/other/projects/other-p"), 200);
    ck_assert(is_member(1, actors[A_FOREIGN].user));
    ck_assert_int_eq(as(A_FOREIGN, "GET", "/api/v1/tenants/other", NULL, &r), 200);
    http_res_free(&r);
    /* withdrawn (or, in the matrix's program, left pending: nobody approves there) */
    char path[128];
    snprintf(path, sizeof path, "/api/v1/approvals/%s/reject", id);
    ck_assert_int_eq(as(A_PA, "POST", path, "{}", &r), 200);
    http_res_free(&r);
    free(id);
}
END_TEST

/* The cookie rule wants exactly "aidc-portal"; reads need no header. */
START_TEST(cookie_sessions_need_the_portal_header_to_write)
{
    reset_notes();
    char cookie[1400];
    snprintf(cookie, sizeof cookie, "Cookie: aidc_session=%s", actors[A_COOKIE].cookie);
    const char *wrong[] = {cookie, "X-Requested-With: XMLHttpRequest", NULL};
    struct http_res r;
    http_do(&harness_srv, "POST", "/api/v1/tenants/own/projects", NULL,
            "{\"slug\":\"ck-wrong\",\"name\":\"x\"}", wrong, &r);
    if (r.status != 403 || !is_problem(&r, 403))
        note("cookie POST with a wrong X-Requested-With: expected 403 problem, got %ld", r.status);
    http_res_free(&r);
    if (adm_status("/api/v1/tenants/own/projects/ck-wrong") != 404)
        note("the refused cookie POST created the project");
    expect(A_COOKIE, "GET", "/api/v1/tenants/own/projects", NULL, 200);
    expect(A_COOKIE, "POST", "/api/v1/tenants/own/projects",
           "{\"slug\":\"ck-none\",\"name\":\"x\"}", 403);
    if (adm_status("/api/v1/tenants/own/projects/ck-none") != 404)
        note("the refused cookie POST created the project");
    expect(A_COOKIE_XRW, "POST", "/api/v1/tenants/own/projects",
           "{\"slug\":\"ck-ok\",\"name\":\"x\"}", 201);
    if (adm_status("/api/v1/tenants/own/projects/ck-ok") != 200)
        note("the cookie POST with the header did not create the project");
    finish();
}
END_TEST

/* ---- a suspended tenant --------------------------------------------------------- */

static void set_suspended(bool on)
{
    struct http_res r;
    long st = adm("PATCH", "/api/v1/tenants/own",
                  on ? "{\"suspended\":true}" : "{\"suspended\":false}", &r);
    ck_assert_msg(st == 200, "PATCH suspended=%d answered %ld", on, st);
    ck_assert(json_is_true(json_object_get(r.json, "suspended")) == on);
    http_res_free(&r);
}

/* unchecked teardown of the tcase: whatever happened, un-suspend */
static void unsuspend(void)
{
    req("PATCH", "/api/v1/tenants/own", harness_srv.admin_token, "{\"suspended\":false}");
}

START_TEST(suspended_tenant)
{
    reset_notes();
    set_suspended(true);
    static const char *const reads[] = {"/api/v1/tenants/own", "/api/v1/tenants/own/projects",
                                        "/api/v1/tenants/own/projects/own-p",
                                        "/api/v1/tenants/own/members"};
    /* the tenant's own people (and the tenant_admin's unbound token and cookie) are shut out */
    const int inside[] = {A_TA, A_MEM, A_VIEW, A_TOK_ADMIN, A_COOKIE, A_COOKIE_XRW};
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        int a = inside[i];
        for (size_t k = 0; k < sizeof reads / sizeof reads[0]; k++)
            expect(a, "GET", reads[k], NULL, 403);
        expect(a, "POST", "/api/v1/tenants/own/projects", "{\"slug\":\"susp-in\",\"name\":\"x\"}",
               403);
        expect(a, "PATCH", "/api/v1/tenants/own/projects/own-p", "{\"name\":\"Suspended\"}", 403);
    }
    if (adm_status("/api/v1/tenants/own/projects/susp-in") != 404)
        note("a refused POST on the suspended tenant created a project");
    char *name = adm_field("/api/v1/tenants/own/projects/own-p", "name");
    if (!name || strcmp(name, "Project own-p") != 0)
        note("a refused PATCH on the suspended tenant renamed the project to %s", name);
    free(name);
    /* a token bound to the suspended tenant stops working everywhere */
    expect(A_TOK_TENANT, "GET", "/api/v1/me", NULL, 403);
    expect(A_TOK_TENANT, "GET", "/api/v1/tokens", NULL, 403);
    expect(A_TOK_TENANT, "GET", "/api/v1/tenants", NULL, 403);
    for (size_t k = 0; k < sizeof reads / sizeof reads[0]; k++)
        expect(A_TOK_TENANT, "GET", reads[k], NULL, 403);
    expect(A_TOK_TENANT, "POST", "/api/v1/tenants/own/projects",
           "{\"slug\":\"susp-tok\",\"name\":\"x\"}", 403);
    expect(A_TOK_TENANT, "GET", "/api/v1/tenants/other", NULL, 403);
    /* the platform keeps reading it; the platform admin keeps managing it */
    const int platform[] = {A_ADMIN, A_PA, A_FIN, A_AUD};
    for (size_t i = 0; i < sizeof platform / sizeof platform[0]; i++) {
        int a = platform[i];
        expect(a, "GET", "/api/v1/tenants/own", NULL, 200);
        expect(a, "GET", "/api/v1/tenants/own/projects", NULL, 200);
        expect(a, "GET", "/api/v1/tenants/own/projects/own-p", NULL, 200);
    }
    expect(A_PA, "GET", "/api/v1/tenants/own/members", NULL, 200);
    expect(A_AUD, "GET", "/api/v1/tenants/own/members", NULL, 200);
    expect(A_PA, "POST", "/api/v1/tenants/own/projects", "{\"slug\":\"susp-pa\",\"name\":\"x\"}",
           201);
    /* nobody outside sees more than before, and the other tenant is untouched */
    expect(A_FOREIGN, "GET", "/api/v1/tenants/own", NULL, 404);
    expect(A_NOMEM, "GET", "/api/v1/tenants/own", NULL, 404);
    expect(A_FOREIGN, "GET", "/api/v1/tenants/other/projects", NULL, 200);
    expect(A_FOREIGN, "POST", "/api/v1/tenants/other/projects",
           "{\"slug\":\"susp-other\",\"name\":\"x\"}", 201);

    /* restored: everything works again */
    set_suspended(false);
    expect(A_TA, "GET", "/api/v1/tenants/own", NULL, 200);
    expect(A_MEM, "GET", "/api/v1/tenants/own/projects", NULL, 200);
    expect(A_VIEW, "GET", "/api/v1/tenants/own/projects/own-p", NULL, 200);
    expect(A_TOK_TENANT, "GET", "/api/v1/me", NULL, 200);
    expect(A_TOK_TENANT, "GET", "/api/v1/tenants/own", NULL, 200);
    expect(A_TA, "POST", "/api/v1/tenants/own/projects", "{\"slug\":\"susp-after\",\"name\":\"x\"}",
           201);
    finish();
}
END_TEST

int main(void)
{
    harness_require_pg();
    global_setup("permissions");
    Suite *s = suite_create("permissions");

    TCase *tc = tcase_create("focused");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, public_endpoints_need_no_credentials);
    tcase_add_test(tc, tenant_list_shows_only_what_the_caller_may_see);
    tcase_add_test(tc, user_list_is_for_platform_admin_and_auditor);
    tcase_add_test(tc, me_works_for_every_authenticated_actor);
    tcase_add_test(tc, cluster_details_are_for_platform_admins);
    tcase_add_test(tc, invisible_tenants_look_like_missing_ones);
    tcase_add_test(tc, deleting_a_tenant_asks_for_approval_and_keeps_it);
    tcase_add_test(tc, cookie_sessions_need_the_portal_header_to_write);
    tcase_add_test(tc, logout_for_every_kind_of_caller);
    suite_add_tcase(s, tc);

    TCase *susp = tcase_create("suspended");
    tcase_set_timeout(susp, 120);
    tcase_add_unchecked_fixture(susp, NULL, unsuspend);
    tcase_add_test(susp, suspended_tenant);
    suite_add_tcase(s, susp);

    int failed = suite_run(s);
    harness_teardown();
    return failed;
}
