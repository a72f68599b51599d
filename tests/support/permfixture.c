/*
 * permfixture.c - the actors, tenants, requests and setup of the permission
 * test programs (permfixture.h).
 */
#include "tests/support/permfixture.h"

#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/mismatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct caller actors[NACTORS] = {
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

struct tenant tenants[2] = {
    {"own", "Tenant own", "own-p", "Project own-p", "", ""},
    {"other", "Tenant other", "other-p", "Project other-p", "", ""},
};

/* ---- requests ------------------------------------------------------------------- */

long as(int a, const char *method, const char *path, const char *body, struct http_res *out)
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

long adm(const char *method, const char *path, const char *body, struct http_res *out)
{
    return reqj(method, path, harness_srv.admin_token, body, out);
}

bool is_problem(const struct http_res *r, long status)
{
    char *ct = http_header(r, "Content-Type");
    bool ok = ct && strstr(ct, "application/problem+json") != NULL && r->json &&
              json_integer_value(json_object_get(r->json, "status")) == status &&
              jstr(r->json, "title") != NULL;
    free(ct);
    return ok;
}

void check_no_leak(const char *what, const struct http_res *r)
{
    for (int t = 0; t < 2; t++) {
        if (r->body && (strstr(r->body, tenants[t].name) || strstr(r->body, tenants[t].id) ||
                        strstr(r->body, tenants[t].project_name)))
            note("%s: the 404 reveals data of tenant \"%s\": %s", what, tenants[t].slug, r->body);
    }
}

/* ---- admin-side checks ---------------------------------------------------------- */

bool is_2xx(long st)
{
    return st >= 200 && st < 300;
}

long adm_status(const char *path)
{
    struct http_res r;
    long st = adm("GET", path, NULL, &r);
    http_res_free(&r);
    return st;
}

char *adm_field(const char *path, const char *field)
{
    struct http_res r;
    char *v = NULL;
    if (adm("GET", path, NULL, &r) == 200 && jstr(r.json, field))
        v = strdup(jstr(r.json, field));
    http_res_free(&r);
    return v;
}

bool list_has(const char *token, const char *path, const char *key, const char *value)
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

bool items_have(const struct http_res *r, const char *key, const char *value)
{
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(r->json, "items"), i, it)
    {
        const char *v = jstr(it, key);
        if (v && strcmp(v, value) == 0)
            return true;
    }
    return false;
}

bool is_member(int t, const char *username)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/tenants/%s/members?limit=1000", tenants[t].slug);
    return list_has(harness_srv.admin_token, path, "username", username);
}

/* ---- setup -------------------------------------------------------------------------- */

char *must_login(const char *user, const char *pw)
{
    char *jwt = login(user, pw);
    if (!jwt) {
        fprintf(stderr, "test setup: cannot log in as %s\n", user);
        exit(1);
    }
    return jwt;
}

void setup_request(const char *method, const char *path, const char *body, long want,
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

void global_setup(const char *name)
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
