/*
 * permissions_fixture.h - what the permission test programs share
 * (test_permissions_matrix.c, the parts of its matrix in
 * test_permissions_billing.c and test_permissions_audit.c, and
 * test_permissions.c): which routes' matrix rows are in which of those
 * programs and the check of it, the actors (global roles, tenant roles,
 * foreign tenant admin, user without membership, anonymous, API tokens with
 * and without the admin scope, a tenant-bound token, cookie sessions with
 * and without X-Requested-With), tenants "own" and "other", the collected
 * mismatches, requests as an actor, the admin's checks afterwards, and the
 * setup that creates all of it: besides the actors, the local cluster, a
 * project "held" in each tenant whose quota admits no job (jobs submitted
 * there stay queued), and in each tenant one job of the admin that has run
 * to completion (its logs say "hello").
 *
 * The definitions are static (static inline where not every program uses
 * them) and each program includes this header once, so each has its own
 * copy: they serve these programs only, which is why they are not in the
 * test support library.
 */
#ifndef AIDC_TEST_PERMISSIONS_FIXTURE_H
#define AIDC_TEST_PERMISSIONS_FIXTURE_H

#include "server/router.h"
#include "tests/http/mismatch.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"

#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PW "perm-password-1"

/* ---- the matrix in several files ------------------------------------------------- */

/* The programs that hold part of the matrix besides test_permissions_matrix.c. */
#define BILLING_ROWS "test_permissions_billing.c"
#define AUDIT_ROWS   "test_permissions_audit.c"

/*
 * The routes ("METHOD pattern") whose permission matrix rows are in another
 * program than test_permissions_matrix.c, and that program;
 * test_permissions_matrix.c has rows for every other authenticated route.
 * Each program fails when a route of its part has no row (see
 * check_split_rows), so a new route needs rows in one of them (and, outside
 * test_permissions_matrix.c, an entry here).
 */
struct split_route {
    const char *route; /* "METHOD pattern" */
    const char *file;  /* the program with its rows */
};

static const struct split_route split_routes[] = {
    {"POST /api/v1/tenants/{tenant}/jobs/{id}/checkpoint", BILLING_ROWS},
    {"GET /api/v1/tenants/{tenant}/usage", BILLING_ROWS},
    {"GET /api/v1/tenants/{tenant}/usage/jobs", BILLING_ROWS},
    {"GET /api/v1/usage", BILLING_ROWS},
    {"GET /api/v1/usage/jobs", BILLING_ROWS},
    {"GET /api/v1/usage/utilization", BILLING_ROWS},
    {"GET /api/v1/prices", BILLING_ROWS},
    {"POST /api/v1/prices", BILLING_ROWS},
    {"POST /api/v1/invoices", BILLING_ROWS},
    {"GET /api/v1/invoices", BILLING_ROWS},
    {"GET /api/v1/invoices/{id}", BILLING_ROWS},
    {"POST /api/v1/invoices/{id}/finalize", BILLING_ROWS},
    {"GET /api/v1/audit/events", AUDIT_ROWS},
    {"GET /api/v1/audit/events/export", AUDIT_ROWS},
    {"GET /api/v1/audit/verify", AUDIT_ROWS},
    {"GET /api/v1/audit/checkpoints", AUDIT_ROWS},
    {"GET /api/v1/audit/public-key", AUDIT_ROWS},
    {"POST /api/v1/audit/commands", AUDIT_ROWS},
    {"GET /api/v1/audit/commands", AUDIT_ROWS},
    {"GET /api/v1/approvals", AUDIT_ROWS},
    {"GET /api/v1/approvals/{id}", AUDIT_ROWS},
    {"POST /api/v1/approvals/{id}/approve", AUDIT_ROWS},
    {"POST /api/v1/approvals/{id}/reject", AUDIT_ROWS},
    {"GET /api/v1/images", "test_permissions_images.c"},
    {"GET /api/v1/tenants/{tenant}/images", "test_permissions_images.c"},
    {"POST /api/v1/tenants/{tenant}/images", "test_permissions_images.c"},
    {"GET /api/v1/tenants/{tenant}/images/{id}", "test_permissions_images.c"},
    {"PATCH /api/v1/tenants/{tenant}/images/{id}", "test_permissions_images.c"},
    {"DELETE /api/v1/tenants/{tenant}/images/{id}", "test_permissions_images.c"},
    {"POST /api/v1/registries", "test_permissions_images.c"},
    {"GET /api/v1/registries", "test_permissions_images.c"},
    {"GET /api/v1/registries/{name}", "test_permissions_images.c"},
    {"POST /api/v1/registries/{name}/sync", "test_permissions_images.c"},
};
#define NSPLIT_ROUTES (sizeof split_routes / sizeof split_routes[0])

/* ---- actors ------------------------------------------------------------------------ */

enum {
    A_ADMIN,       /* bootstrap platform_admin */
    A_PA,          /* a second platform_admin */
    A_FIN,         /* finance */
    A_AUD,         /* auditor */
    A_TA,          /* tenant_admin of "own" */
    A_MEM,         /* member of "own" */
    A_VIEW,        /* viewer of "own" */
    A_FOREIGN,     /* tenant_admin of "other" */
    A_NOMEM,       /* no membership, no global role */
    A_ANON,        /* no credentials */
    A_TOK_NOADMIN, /* API token of own's tenant_admin, scopes [jobs:read] */
    A_TOK_ADMIN,   /* API token of own's tenant_admin, scopes [admin, jobs:read] */
    A_TOK_TENANT,  /* as A_TOK_ADMIN, bound to tenant "own" */
    A_COOKIE,      /* session cookie of own's tenant_admin, no X-Requested-With */
    A_COOKIE_XRW,  /* session cookie of own's tenant_admin with X-Requested-With */
    NACTORS
};

struct caller {
    const char *label;
    const char *user; /* the user it acts as (NULL: anonymous) */
    char *user_jwt;   /* a JWT of that user, for preparing and checking */
    char *bearer;     /* sent as Authorization: Bearer */
    char *cookie;     /* sent as Cookie: aidc_session= */
    bool xrw;         /* sends X-Requested-With: aidc-portal */
};

static struct caller actors[NACTORS] = {
    [A_ADMIN] = {"platform_admin(bootstrap)", ADMIN_USER, NULL, NULL, NULL, false},
    [A_PA] = {"platform_admin", "pa2", NULL, NULL, NULL, false},
    [A_FIN] = {"finance", "fin", NULL, NULL, NULL, false},
    [A_AUD] = {"auditor", "aud", NULL, NULL, NULL, false},
    [A_TA] = {"tenant_admin(own)", "own-admin", NULL, NULL, NULL, false},
    [A_MEM] = {"member(own)", "own-member", NULL, NULL, NULL, false},
    [A_VIEW] = {"viewer(own)", "own-viewer", NULL, NULL, NULL, false},
    [A_FOREIGN] = {"tenant_admin(other)", "other-admin", NULL, NULL, NULL, false},
    [A_NOMEM] = {"no-membership", "nobody", NULL, NULL, NULL, false},
    [A_ANON] = {"anonymous", NULL, NULL, NULL, NULL, false},
    [A_TOK_NOADMIN] = {"token(own-admin, no admin scope)", "own-admin", NULL, NULL, NULL, false},
    [A_TOK_ADMIN] = {"token(own-admin, admin scope)", "own-admin", NULL, NULL, NULL, false},
    [A_TOK_TENANT] = {"token(own-admin, bound to own)", "own-admin", NULL, NULL, NULL, false},
    [A_COOKIE] = {"cookie(own-admin) without X-Requested-With", "own-admin", NULL, NULL, NULL,
                  false},
    [A_COOKIE_XRW] = {"cookie(own-admin) with X-Requested-With", "own-admin", NULL, NULL, NULL,
                      true},
};

struct tenant {
    const char *slug;
    const char *name;    /* as make_tenant names it */
    const char *project; /* a project that exists in it */
    const char *project_name;
    char id[64];
    char done_job[64]; /* the admin's finished job in project, which wrote "hello" */
};

/* A project in each tenant whose quota admits no job: what is submitted there stays queued. */
#define HELD_PROJECT "held"

static struct tenant tenants[2] = {
    {"own", "Tenant own", "own-p", "Project own-p", "", ""},
    {"other", "Tenant other", "other-p", "Project other-p", "", ""},
};

/* ---- the matrix in several files: which rows are where ------------------------------ */

/* The program of split_routes with the rows of route key ("METHOD pattern"), or NULL. */
static inline const char *split_route_file(const char *key)
{
    for (size_t k = 0; k < NSPLIT_ROUTES; k++)
        if (strcmp(split_routes[k].route, key) == 0)
            return split_routes[k].file;
    return NULL;
}

/* Whether api/routes.c has route key ("METHOD pattern"). */
static inline bool route_in_table(const char *key)
{
    char rk[300];
    for (size_t i = 0; i < routes_count; i++) {
        snprintf(rk, sizeof rk, "%s %s", routes[i].method, routes[i].pattern);
        if (strcmp(rk, key) == 0)
            return true;
    }
    return false;
}

/*
 * For a program with part of the matrix (file, as in split_routes; row_route
 * writes the route of its row i as "METHOD pattern"): every route that
 * split_routes gives to file is a route of api/routes.c with a row there,
 * and each of its nrows rows is of such a route (test_permissions_matrix.c
 * relies on split_routes for the routes it has no rows for). Mismatches are
 * noted.
 */
static inline void check_split_rows(const char *file, size_t nrows,
                                    void (*row_route)(size_t i, char *key, size_t n))
{
    char key[300];
    for (size_t k = 0; k < NSPLIT_ROUTES; k++) {
        const char *want = split_routes[k].route;
        if (strcmp(split_routes[k].file, file) != 0)
            continue;
        bool has_row = false;
        for (size_t i = 0; i < nrows; i++) {
            row_route(i, key, sizeof key);
            has_row |= strcmp(key, want) == 0;
        }
        if (!route_in_table(want))
            note("%s is in split_routes but not in the route table", want);
        if (!has_row)
            note("route %s has no row in the permission matrix of %s", want, file);
    }
    for (size_t i = 0; i < nrows; i++) {
        row_route(i, key, sizeof key);
        const char *owner = split_route_file(key);
        if (!owner)
            note("the row of %s in %s is not listed in split_routes", key, file);
        else if (strcmp(owner, file) != 0)
            note("the row of %s in %s is listed in split_routes for %s", key, file, owner);
    }
}

/* ---- requests ------------------------------------------------------------------- */

static long as(int a, const char *method, const char *path, const char *body, struct http_res *out)
{
    const struct caller *ac = &actors[a];
    const char *extra[3] = {NULL, NULL, NULL};
    char cookie[1400];
    size_t n = 0;
    if (ac->cookie) {
        snprintf(cookie, sizeof cookie, "Cookie: aidc_session=%s", ac->cookie);
        extra[n++] = cookie;
    }
    if (ac->xrw)
        extra[n++] = "X-Requested-With: aidc-portal";
    return http_do(&harness_srv, method, path, ac->bearer, body, extra, out);
}

static long adm(const char *method, const char *path, const char *body, struct http_res *out)
{
    return reqj(method, path, harness_srv.admin_token, body, out);
}

static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static bool is_problem(const struct http_res *r, long status)
{
    char *ct = http_header(r, "Content-Type");
    bool ok = ct && strstr(ct, "application/problem+json") != NULL && r->json &&
              json_integer_value(json_object_get(r->json, "status")) == status &&
              jstr(r->json, "title") != NULL;
    free(ct);
    return ok;
}

/* A 404 must not reveal anything about the tenant: neither its name nor its id. */
static void check_no_leak(const char *what, const struct http_res *r)
{
    for (int t = 0; t < 2; t++) {
        if (r->body && (strstr(r->body, tenants[t].name) || strstr(r->body, tenants[t].id) ||
                        strstr(r->body, tenants[t].project_name)))
            note("%s: the 404 reveals data of tenant \"%s\": %s", what, tenants[t].slug, r->body);
    }
}

/* ---- admin-side checks ---------------------------------------------------------- */

static inline bool is_2xx(long st)
{
    return st >= 200 && st < 300;
}

static inline long adm_status(const char *path)
{
    struct http_res r;
    long st = adm("GET", path, NULL, &r);
    http_res_free(&r);
    return st;
}

/* The value of a string field of GET path as the admin (malloc'd) or NULL. */
static char *adm_field(const char *path, const char *field)
{
    struct http_res r;
    char *v = NULL;
    if (adm("GET", path, NULL, &r) == 200 && jstr(r.json, field))
        v = strdup(jstr(r.json, field));
    http_res_free(&r);
    return v;
}

/* Whether a list (GET path, as token) has an item whose key equals value. */
static bool list_has(const char *token, const char *path, const char *key, const char *value)
{
    struct http_res r;
    bool found = false;
    if (reqj("GET", path, token, NULL, &r) == 200) {
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(r.json, "items"), i, it)
        {
            const char *v = jstr(it, key);
            found |= v && strcmp(v, value) == 0;
        }
    } else {
        note("GET %s (check) answered %ld", path, r.status);
    }
    http_res_free(&r);
    return found;
}

static inline bool is_member(int t, const char *username)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/tenants/%s/members?limit=1000", tenants[t].slug);
    return list_has(harness_srv.admin_token, path, "username", username);
}

/* ---- setup -------------------------------------------------------------------------- */

static char *must_login(const char *user, const char *pw)
{
    char *jwt = login(user, pw);
    if (!jwt) {
        fprintf(stderr, "test setup: cannot log in as %s\n", user);
        exit(1);
    }
    return jwt;
}

/* As the admin, outside any test: method path must answer want; the answer goes to out
 * (or is freed); otherwise the program exits. */
static void setup_request(const char *method, const char *path, const char *body, long want,
                          struct http_res *out)
{
    struct http_res r;
    long st = adm(method, path, body, &r);
    if (st != want) {
        fprintf(stderr, "test setup: %s %s answered %ld (expected %ld): %s\n", method, path, st,
                want, r.body ? r.body : "");
        exit(1);
    }
    if (out)
        *out = r;
    else
        http_res_free(&r);
}

/* The cluster, the "held" projects and the jobs to wait for in setup_jobs_wait. */
static void setup_jobs_start(void)
{
    char path[256], body[256];
    setup_request("POST", "/api/v1/clusters",
                  "{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":4}}}",
                  201, NULL);
    for (int t = 0; t < 2; t++) {
        const char *ts = tenants[t].slug;
        make_project(ts, HELD_PROJECT);
        snprintf(path, sizeof path, "/api/v1/tenants/%s/projects/%s/quota", ts, HELD_PROJECT);
        setup_request("PUT", path, "{\"resources\":{\"jobs\":{\"limit\":0}}}", 200, NULL);
        snprintf(path, sizeof path, "/api/v1/tenants/%s/jobs", ts);
        snprintf(
            body, sizeof body,
            "{\"project\":\"%s\",\"name\":\"logs\",\"command\":[\"sh\",\"-c\",\"echo hello\"]}",
            tenants[t].project);
        struct http_res r;
        setup_request("POST", path, body, 201, &r);
        const char *id = jstr(r.json, "id");
        snprintf(tenants[t].done_job, sizeof tenants[t].done_job, "%s", id ? id : "");
        http_res_free(&r);
    }
}

/* Wait (polling, with a deadline) until the jobs of setup_jobs_start have succeeded. */
static void setup_jobs_wait(void)
{
    char path[256];
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int t = 0; t < 2;) {
        snprintf(path, sizeof path, "/api/v1/tenants/%s/jobs/%s", tenants[t].slug,
                 tenants[t].done_job);
        char *state = adm_field(path, "state");
        bool done = state && strcmp(state, "succeeded") == 0;
        bool ended = state && (strcmp(state, "failed") == 0 || strcmp(state, "cancelled") == 0);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (ended || (!done && now.tv_sec - start.tv_sec >= 60)) {
            fprintf(stderr, "test setup: job %s is %s (expected succeeded)\n", path,
                    state ? state : "unreadable");
            exit(1);
        }
        free(state);
        if (done) {
            t++;
            continue;
        }
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/*
 * harness_setup(name) with fast scheduling workers, then the tenants, the
 * cluster and jobs of setup_jobs_start, the users, memberships, tokens and
 * sessions of the actors.
 */
static void global_setup(const char *name)
{
    static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=100", "AIDC_ADMISSION_INTERVAL_MS=200",
                                      NULL};
    harness_setup(name, env);
    for (int t = 0; t < 2; t++) {
        make_tenant(tenants[t].slug);
        make_project(tenants[t].slug, tenants[t].project);
        char path[128];
        snprintf(path, sizeof path, "/api/v1/tenants/%s", tenants[t].slug);
        char *id = adm_field(path, "id");
        if (!id) {
            fprintf(stderr, "test setup: no id for tenant %s\n", tenants[t].slug);
            exit(1);
        }
        snprintf(tenants[t].id, sizeof tenants[t].id, "%s", id);
        free(id);
    }
    setup_jobs_start();
    make_user(actors[A_PA].user, PW, "[\"platform_admin\"]");
    make_user(actors[A_FIN].user, PW, "[\"finance\"]");
    make_user(actors[A_AUD].user, PW, "[\"auditor\"]");
    make_user(actors[A_TA].user, PW, NULL);
    make_user(actors[A_MEM].user, PW, NULL);
    make_user(actors[A_VIEW].user, PW, NULL);
    make_user(actors[A_FOREIGN].user, PW, NULL);
    make_user(actors[A_NOMEM].user, PW, NULL);
    make_member("own", actors[A_TA].user, "tenant_admin");
    make_member("own", actors[A_MEM].user, "member");
    make_member("own", actors[A_VIEW].user, "viewer");
    make_member("other", actors[A_FOREIGN].user, "tenant_admin");

    actors[A_ADMIN].user_jwt = strdup(harness_srv.admin_token);
    for (int a = A_PA; a <= A_NOMEM; a++)
        actors[a].user_jwt = must_login(actors[a].user, PW);
    for (int a = 0; a <= A_NOMEM; a++)
        actors[a].bearer = actors[a].user_jwt;
    char *ta = actors[A_TA].user_jwt;
    for (int a = A_TOK_NOADMIN; a < NACTORS; a++)
        actors[a].user_jwt = ta;
    actors[A_TOK_NOADMIN].bearer = make_token(ta, "[\"jobs:read\"]", NULL);
    actors[A_TOK_ADMIN].bearer = make_token(ta, "[\"admin\",\"jobs:read\"]", NULL);
    actors[A_TOK_TENANT].bearer = make_token(ta, "[\"admin\",\"jobs:read\"]", "own");
    /* a session of its own, so that nothing else here ends it */
    char *cookie = must_login(actors[A_TA].user, PW);
    actors[A_COOKIE].cookie = cookie;
    actors[A_COOKIE_XRW].cookie = cookie;
    setup_jobs_wait();
}

#endif
