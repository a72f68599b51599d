/*
 * test_permissions_matrix.c - the permission matrix of the API: every actor
 * of tests/support/permfixture.h against every authenticated endpoint of
 * api/routes.c, on its own tenant and on another one. The rows of the
 * routes that split_routes (permissions_fixture.h) lists are in other
 * programs: usage, prices, invoices and checkpoints in
 * test_permissions_billing.c, audit and approvals in test_permissions_audit.c.
 *
 * The expectations are written down by hand from docs API.md ("Roles", and
 * "objects of another tenant answer 404, never 403 and never data") and the
 * route table, not computed from the dispatcher, so that a change in either
 * shows up here. Every write runs against an object created for that one
 * cell (a tenant's name and quota: a value of its own); after the request
 * the admin checks that a 2xx really happened and that a refusal left the
 * object as it was. Jobs to cancel are the admin's, submitted for the cell
 * into the project "held", where they stay queued; job reads and logs use
 * the admin's finished job of the setup. The setup registers the one local
 * cluster this build allows, so a permitted POST /clusters answers 409.
 * Deleting a tenant only asks (202), so it stays.
 * Refusals (401/403/404) must be problem+json, and a 404 must not carry the
 * tenant's name or id.
 *
 * The permission checks beside the matrix are in test_permissions.c.
 */
#include "server/router.h"
#include "tests/http/permissions_fixture.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/mismatch.h"
#include "tests/support/permfixture.h"
#include "tests/support/permrun.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- admin-side helpers of the matrix ------------------------------------------ */

/* Create an API token with jwt; the secret and id go to the buffers. */
static void new_token(const char *jwt, const char *name, char *secret, size_t sn, char *id,
                      size_t idn)
{
    char body[256];
    snprintf(body, sizeof body, "{\"name\":\"%s\",\"scopes\":[\"jobs:read\"]}", name);
    struct http_res r;
    long st = reqj("POST", "/api/v1/tokens", jwt, body, &r);
    ck_assert_msg(st == 201, "creating a token answered %ld", st);
    snprintf(secret, sn, "%s", jstr(r.json, "token"));
    snprintf(id, idn, "%s", jstr(r.json, "id"));
    http_res_free(&r);
}

/*
 * Log user in once more: the new session's JWT and id (the session its own
 * list marks current) go to the buffers.
 */
static void new_session(const char *user, const char *pw, char *jwt, size_t jn, char *id,
                        size_t idn)
{
    char *token = login(user, pw);
    ck_assert_msg(token != NULL, "logging in as %s failed", user);
    snprintf(jwt, jn, "%s", token);
    free(token);
    struct http_res r;
    long st = reqj("GET", "/api/v1/me/sessions?limit=1000", jwt, NULL, &r);
    ck_assert_msg(st == 200, "listing the sessions of %s answered %ld", user, st);
    id[0] = '\0';
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(r.json, "items"), i, it)
        if (json_is_true(json_object_get(it, "current")))
            snprintf(id, idn, "%s", jstr(it, "id"));
    http_res_free(&r);
    ck_assert_msg(id[0], "the new session of %s is not in its list", user);
}

/* As the admin: submit a job named name into the tenant's "held" project (it stays queued). */
static void held_job(const char *tenant, const char *name, char *id, size_t idn)
{
    char path[128], body[256];
    snprintf(path, sizeof path, "/api/v1/tenants/%s/jobs", tenant);
    snprintf(body, sizeof body, "{\"project\":\"%s\",\"name\":\"%s\",\"command\":[\"true\"]}",
             HELD_PROJECT, name);
    struct http_res r;
    long st = adm("POST", path, body, &r);
    ck_assert_msg(st == 201 && jstr(r.json, "id"), "submitting a job answered %ld: %s", st,
                  r.body ? r.body : "");
    snprintf(id, idn, "%s", jstr(r.json, "id"));
    http_res_free(&r);
}

/* The cpu limit of the quota at path as the admin reads it, as JSON text ("null" when absent). */
static void cpu_limit(const char *path, char *out, size_t n)
{
    struct http_res r;
    snprintf(out, n, "(unreadable)");
    if (adm("GET", path, NULL, &r) == 200) {
        json_t *res = json_object_get(r.json, "resources");
        json_t *limit = json_object_get(json_object_get(res, "cpu"), "limit");
        char *text = limit ? json_dumps(limit, JSON_ENCODE_ANY) : NULL;
        snprintf(out, n, "%s", text ? text : "null");
        free(text);
    }
    http_res_free(&r);
}

/* ---- the matrix ----------------------------------------------------------------- */

enum kind {
    K_ME,
    K_TOKEN_CREATE,
    K_TOKEN_LIST,
    K_TOKEN_DELETE,
    K_PASSWORD,
    K_SESSION_LIST,
    K_SESSION_DELETE,
    K_USER_CREATE,
    K_USER_LIST,
    K_USER_GET,
    K_USER_PATCH,
    K_TENANT_CREATE,
    K_TENANT_LIST,
    K_TENANT_GET,
    K_TENANT_PATCH,
    K_TENANT_DELETE,
    K_MEMBER_LIST,
    K_MEMBER_PUT,
    K_MEMBER_DELETE,
    K_PROJECT_CREATE,
    K_PROJECT_LIST,
    K_PROJECT_GET,
    K_PROJECT_PATCH,
    K_PROJECT_DELETE,
    K_QUOTA_GET,
    K_QUOTA_PUT,
    K_PQUOTA_GET,
    K_PQUOTA_PUT,
    K_CLUSTER_CREATE,
    K_CLUSTER_LIST,
    K_CLUSTER_GET,
    K_CLUSTER_SYNC,
    K_CLUSTER_DRIFT,
    K_GPU_FAULT_REPORT,
    K_GPU_FAULT_LIST,
    K_GPU_FAULT_RESOLVE,
    K_JOB_SUBMIT,
    K_JOB_LIST,
    K_JOB_GET,
    K_JOB_EVENTS,
    K_JOB_CANCEL,
    K_JOB_LOGS,
    K_CAPACITY,
    K_CAPACITY_NODES,
    K_IDLE_ALL,
    K_IDLE_TENANT,
};

/*
 * As permrun.h's rows: own, the expected status on tenant "own" (or the only
 * one, for routes without {tenant}); other, on tenant "other" - for DELETE
 * /tokens/{id} and /me/sessions/{id}, on somebody else's (see column) - or
 * all 0 where there is no such column.
 */
/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                            ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    {"GET", "/api/v1/me", K_ME,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200}, {0}},
    /* a tenant-bound token may only mint tokens bound to its tenant (the body binds none) */
    {"POST", "/api/v1/tokens", K_TOKEN_CREATE,
        {201, 201, 201, 201, 201, 201, 201, 201, 201, 401, 403, 201, 403, 403, 201}, {0}},
    {"GET", "/api/v1/tokens", K_TOKEN_LIST,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200}, {0}},
    /* own: an unbound token of the actor's own user (a tenant-bound token manages only
     * tokens bound to its tenant: 404); other: a token of another user */
    {"DELETE", "/api/v1/tokens/{id}", K_TOKEN_DELETE,
        {204, 204, 204, 204, 204, 204, 204, 204, 204, 401, 403, 204, 404, 403, 204},
        {404, 404, 404, 404, 404, 404, 404, 404, 404, 401, 403, 404, 404, 403, 404}},
    /* a new password the policy refuses: 400 = let through, nothing changed or counted */
    {"PUT", "/api/v1/me/password", K_PASSWORD,
        {400, 400, 400, 400, 400, 400, 400, 400, 400, 401, 403, 400, 403, 403, 400}, {0}},
    /* sessions are the user's: a token bound to a tenant may not see or end them */
    {"GET", "/api/v1/me/sessions", K_SESSION_LIST,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 403, 200, 403, 200, 200}, {0}},
    /* own: a second session of the actor's own user; other: a session of another user */
    {"DELETE", "/api/v1/me/sessions/{id}", K_SESSION_DELETE,
        {204, 204, 204, 204, 204, 204, 204, 204, 204, 401, 403, 204, 403, 403, 204},
        {404, 404, 404, 404, 404, 404, 404, 404, 404, 401, 403, 404, 403, 403, 404}},
    {"POST", "/api/v1/users", K_USER_CREATE,
        {201, 201, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/users", K_USER_LIST,
        {200, 200, 403, 200, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/users/{username}", K_USER_GET,
        {200, 200, 403, 200, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"PATCH", "/api/v1/users/{username}", K_USER_PATCH,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"POST", "/api/v1/tenants", K_TENANT_CREATE,
        {201, 201, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/tenants", K_TENANT_LIST,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200}, {0}},
    {"GET", "/api/v1/tenants/{tenant}", K_TENANT_GET,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    /* tenant name and suspension are the platform admin's; scope and CSRF checks come first */
    {"PATCH", "/api/v1/tenants/{tenant}", K_TENANT_PATCH,
        {200, 200, 403, 403, 403, 403, 403, 404, 404, 401, 403, 403, 403, 403, 403},
        {200, 200, 403, 403, 404, 404, 404, 403, 404, 401, 403, 404, 404, 403, 404}},
    /* needs dual approval: 202 with the (pending) approval, and the tenant stays */
    {"DELETE", "/api/v1/tenants/{tenant}", K_TENANT_DELETE,
        {202, 202, 403, 403, 403, 403, 403, 404, 404, 401, 403, 403, 403, 403, 403},
        {202, 202, 403, 403, 404, 404, 404, 403, 404, 401, 403, 404, 404, 403, 404}},
    {"GET", "/api/v1/tenants/{tenant}/members", K_MEMBER_LIST,
        {200, 200, 403, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 403, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"PUT", "/api/v1/tenants/{tenant}/members/{username}", K_MEMBER_PUT,
        {200, 200, 403, 403, 200, 403, 403, 404, 404, 401, 403, 200, 200, 403, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 403, 404, 404, 403, 404}},
    {"DELETE", "/api/v1/tenants/{tenant}/members/{username}", K_MEMBER_DELETE,
        {204, 204, 403, 403, 204, 403, 403, 404, 404, 401, 403, 204, 204, 403, 204},
        {204, 204, 403, 403, 404, 404, 404, 204, 404, 401, 403, 404, 404, 403, 404}},
    {"POST", "/api/v1/tenants/{tenant}/projects", K_PROJECT_CREATE,
        {201, 201, 403, 403, 201, 403, 403, 404, 404, 401, 403, 201, 201, 403, 201},
        {201, 201, 403, 403, 404, 404, 404, 201, 404, 401, 403, 404, 404, 403, 404}},
    {"GET", "/api/v1/tenants/{tenant}/projects", K_PROJECT_LIST,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"GET", "/api/v1/tenants/{tenant}/projects/{project}", K_PROJECT_GET,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"PATCH", "/api/v1/tenants/{tenant}/projects/{project}", K_PROJECT_PATCH,
        {200, 200, 403, 403, 200, 403, 403, 404, 404, 401, 403, 200, 200, 403, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 403, 404, 404, 403, 404}},
    {"DELETE", "/api/v1/tenants/{tenant}/projects/{project}", K_PROJECT_DELETE,
        {204, 204, 403, 403, 204, 403, 403, 404, 404, 401, 403, 204, 204, 403, 204},
        {204, 204, 403, 403, 404, 404, 404, 204, 404, 401, 403, 404, 404, 403, 404}},
    {"GET", "/api/v1/tenants/{tenant}/quota", K_QUOTA_GET,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    /* tenant quotas are the platform admin's, not the tenant admin's */
    {"PUT", "/api/v1/tenants/{tenant}/quota", K_QUOTA_PUT,
        {200, 200, 403, 403, 403, 403, 403, 404, 404, 401, 403, 403, 403, 403, 403},
        {200, 200, 403, 403, 404, 404, 404, 403, 404, 401, 403, 404, 404, 403, 404}},
    {"GET", "/api/v1/tenants/{tenant}/projects/{project}/quota", K_PQUOTA_GET,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"PUT", "/api/v1/tenants/{tenant}/projects/{project}/quota", K_PQUOTA_PUT,
        {200, 200, 403, 403, 200, 403, 403, 404, 404, 401, 403, 200, 200, 403, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 403, 404, 404, 403, 404}},
    /* only one local cluster may exist and the setup registered it: 409 shows the
     * permission passed */
    {"POST", "/api/v1/clusters", K_CLUSTER_CREATE,
        {409, 409, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/clusters", K_CLUSTER_LIST,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200}, {0}},
    {"GET", "/api/v1/clusters/{name}", K_CLUSTER_GET,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200}, {0}},
    {"POST", "/api/v1/clusters/{name}/sync", K_CLUSTER_SYNC,
        {202, 202, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* the local cluster keeps no job list of its own: 422 shows the permission passed */
    {"GET", "/api/v1/clusters/{name}/drift", K_CLUSTER_DRIFT,
        {422, 422, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* GPU faults: platform admins (auditors read); no token here has gpu-faults:write
     * (admin does not imply it). A node the cluster lacks is 404: the permission passed */
    {"POST", "/api/v1/clusters/{name}/gpu-faults", K_GPU_FAULT_REPORT,
        {404, 404, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/clusters/{name}/gpu-faults", K_GPU_FAULT_LIST,
        {200, 200, 403, 200, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"DELETE", "/api/v1/clusters/{name}/gpu-faults/{node}", K_GPU_FAULT_RESOLVE,
        {404, 404, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* no token has jobs:write (admin does not imply it): the scope check comes first */
    {"POST", "/api/v1/tenants/{tenant}/jobs", K_JOB_SUBMIT,
        {201, 201, 403, 403, 201, 201, 403, 404, 404, 401, 403, 403, 403, 403, 201},
        {201, 201, 403, 403, 404, 404, 404, 201, 404, 401, 403, 403, 403, 403, 404}},
    /* the cluster view: sums for anyone signed in, nodes for platform admins */
    {"GET", "/api/v1/capacity", K_CAPACITY,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200}, {0}},
    {"GET", "/api/v1/capacity/nodes", K_CAPACITY_NODES,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* the idle-GPU report: platform admins for every tenant, tenant admins for theirs */
    {"GET", "/api/v1/efficiency/idle", K_IDLE_ALL,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/tenants/{tenant}/efficiency/idle", K_IDLE_TENANT,
        {200, 200, 403, 403, 200, 403, 403, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"GET", "/api/v1/tenants/{tenant}/jobs", K_JOB_LIST,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    /* the admin's job: a member reads only its own jobs (404: another's is not there for it,
     * unless its tenant shares them: members_see_all_jobs, test_jobs.c) */
    {"GET", "/api/v1/tenants/{tenant}/jobs/{id}", K_JOB_GET,
        {200, 200, 200, 200, 200, 404, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"GET", "/api/v1/tenants/{tenant}/jobs/{id}/events", K_JOB_EVENTS,
        {200, 200, 200, 200, 200, 404, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    /* the admin's job: a member may cancel only its own, and does not see this one (404);
     * the viewer sees it and may not (403) */
    {"POST", "/api/v1/tenants/{tenant}/jobs/{id}/cancel", K_JOB_CANCEL,
        {202, 202, 403, 403, 202, 404, 403, 404, 404, 401, 403, 403, 403, 403, 202},
        {202, 202, 403, 403, 404, 404, 404, 202, 404, 401, 403, 403, 403, 403, 404}},
    /* the admin's job: its logs are its owner's and the admins' (the viewer: 403) */
    {"GET", "/api/v1/tenants/{tenant}/jobs/{id}/logs", K_JOB_LOGS,
        {200, 200, 403, 403, 200, 404, 403, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

/* Routes tested in test_permissions.c: the public ones and logout; single sign-on's
 * public ones in test_sso_oidc.c. */
static const char *const public_routes[] = {"GET /healthz",
                                            "GET /readyz",
                                            "GET /metrics",
                                            "GET /api/v1/openapi.json",
                                            "POST /api/v1/auth/login",
                                            "GET /api/v1/auth/providers",
                                            "GET /api/v1/auth/oidc/{name}/login",
                                            "GET /api/v1/auth/oidc/{name}/callback"};
#define NPUBLIC (sizeof public_routes / sizeof public_routes[0])

/* K_TOKEN_DELETE puts the target token into c->secret, K_SESSION_DELETE the session's JWT. */
static void prep(struct permrun_cell *c)
{
    const struct tenant *tn = &tenants[c->t];
    const char *ts = tn->slug;
    const char *tag = c->tag;
    c->body[0] = '\0';
    switch ((enum kind)c->r->kind) {
    case K_ME:
        snprintf(c->path, sizeof c->path, "/api/v1/me");
        break;
    case K_TOKEN_CREATE:
        snprintf(c->path, sizeof c->path, "/api/v1/tokens");
        snprintf(c->body, sizeof c->body, "{\"name\":\"%s\",\"scopes\":[\"jobs:read\"]}", tag);
        break;
    case K_TOKEN_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/tokens");
        break;
    case K_TOKEN_DELETE: {
        /* own column: a token of the actor's own user; other: somebody else's */
        const char *jwt;
        if (c->t == 0)
            jwt = c->a == A_ANON ? harness_srv.admin_token : actors[c->a].user_jwt;
        else
            jwt = c->a == A_ADMIN ? actors[A_PA].user_jwt : harness_srv.admin_token;
        char id[64];
        new_token(jwt, tag, c->secret, sizeof c->secret, id, sizeof id);
        snprintf(c->path, sizeof c->path, "/api/v1/tokens/%s", id);
        break;
    }
    case K_PASSWORD:
        snprintf(c->path, sizeof c->path, "/api/v1/me/password");
        snprintf(c->body, sizeof c->body, "{\"current_password\":\"x\",\"new_password\":\"x\"}");
        break;
    case K_SESSION_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/me/sessions");
        break;
    case K_SESSION_DELETE: {
        /* own column: the actor's own user (the admin's for the anonymous); other: pa2's,
         * or the bootstrap admin's for pa2 */
        int who = c->t == 0 ? (c->a == A_ANON ? A_ADMIN : c->a) : (c->a == A_PA ? A_ADMIN : A_PA);
        char id[64];
        new_session(actors[who].user ? actors[who].user : ADMIN_USER,
                    who == A_ADMIN ? ADMIN_PASSWORD : PW, c->secret, sizeof c->secret, id,
                    sizeof id);
        snprintf(c->path, sizeof c->path, "/api/v1/me/sessions/%s", id);
        break;
    }
    case K_USER_CREATE:
        snprintf(c->path, sizeof c->path, "/api/v1/users");
        snprintf(c->body, sizeof c->body, "{\"username\":\"%s\",\"password\":\"%s\"}", tag, PW);
        snprintf(c->check, sizeof c->check, "/api/v1/users/%s", tag);
        break;
    case K_USER_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/users");
        break;
    case K_USER_GET:
        snprintf(c->path, sizeof c->path, "/api/v1/users/%s", actors[A_TA].user);
        break;
    case K_USER_PATCH:
        make_user(tag, PW, NULL);
        snprintf(c->path, sizeof c->path, "/api/v1/users/%s", tag);
        snprintf(c->body, sizeof c->body, "{\"display_name\":\"Patched %s\"}", tag);
        snprintf(c->check, sizeof c->check, "/api/v1/users/%s", tag);
        break;
    case K_TENANT_CREATE:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants");
        snprintf(c->body, sizeof c->body, "{\"slug\":\"%s\",\"name\":\"Tenant %s\"}", tag, tag);
        snprintf(c->check, sizeof c->check, "/api/v1/tenants/%s", tag);
        break;
    case K_TENANT_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants");
        break;
    case K_TENANT_GET:
    case K_TENANT_DELETE:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s", ts);
        break;
    case K_TENANT_PATCH:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s", ts);
        snprintf(c->body, sizeof c->body, "{\"name\":\"Renamed %s\"}", tag);
        break;
    case K_MEMBER_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/members", ts);
        break;
    case K_MEMBER_PUT:
        make_user(tag, PW, NULL);
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/members/%s", ts, tag);
        snprintf(c->body, sizeof c->body, "{\"role\":\"viewer\"}");
        break;
    case K_MEMBER_DELETE:
        make_user(tag, PW, NULL);
        make_member(ts, tag, "viewer");
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/members/%s", ts, tag);
        break;
    case K_PROJECT_CREATE:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/projects", ts);
        snprintf(c->body, sizeof c->body, "{\"slug\":\"%s\",\"name\":\"New %s\"}", tag, tag);
        snprintf(c->check, sizeof c->check, "/api/v1/tenants/%s/projects/%s", ts, tag);
        break;
    case K_PROJECT_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/projects", ts);
        break;
    case K_PROJECT_GET:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/projects/%s", ts, tn->project);
        break;
    case K_PROJECT_PATCH:
    case K_PROJECT_DELETE:
        make_project(ts, tag);
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/projects/%s", ts, tag);
        snprintf(c->check, sizeof c->check, "%s", c->path);
        if (c->r->kind == K_PROJECT_PATCH)
            snprintf(c->body, sizeof c->body, "{\"name\":\"Renamed %s\"}", tag);
        break;
    case K_QUOTA_GET:
    case K_QUOTA_PUT:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/quota", ts);
        if (c->r->kind == K_QUOTA_PUT) /* a limit of its own, told apart from the last cell's */
            snprintf(c->body, sizeof c->body,
                     "{\"resources\":{\"cpu\":{\"guaranteed\":0,\"limit\":%d}}}",
                     64 + 2 * c->a + c->t);
        break;
    case K_PQUOTA_GET:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/projects/%s/quota", ts, tn->project);
        break;
    case K_PQUOTA_PUT:
        make_project(ts, tag);
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/projects/%s/quota", ts, tag);
        snprintf(c->body, sizeof c->body, "{\"resources\":{\"cpu\":{\"limit\":8}}}");
        break;
    case K_CLUSTER_CREATE:
        snprintf(c->path, sizeof c->path, "/api/v1/clusters");
        snprintf(c->body, sizeof c->body,
                 "{\"name\":\"%s\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":1}}}", tag);
        snprintf(c->check, sizeof c->check, "/api/v1/clusters/%s", tag);
        break;
    case K_CLUSTER_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/clusters");
        break;
    case K_CLUSTER_GET:
        snprintf(c->path, sizeof c->path, "/api/v1/clusters/local");
        break;
    case K_CLUSTER_SYNC:
        snprintf(c->path, sizeof c->path, "/api/v1/clusters/local/sync");
        break;
    case K_GPU_FAULT_REPORT:
        snprintf(c->path, sizeof c->path, "/api/v1/clusters/local/gpu-faults");
        snprintf(c->body, sizeof c->body, "{\"node\":\"no-such-node\",\"reason\":\"%s\"}", tag);
        break;
    case K_GPU_FAULT_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/clusters/local/gpu-faults");
        break;
    case K_GPU_FAULT_RESOLVE:
        snprintf(c->path, sizeof c->path, "/api/v1/clusters/local/gpu-faults/no-such-node");
        break;
    case K_CLUSTER_DRIFT:
        snprintf(c->path, sizeof c->path, "/api/v1/clusters/local/drift");
        break;
    case K_JOB_SUBMIT:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/jobs", ts);
        snprintf(c->body, sizeof c->body,
                 "{\"project\":\"%s\",\"name\":\"%s\",\"command\":[\"true\"]}", HELD_PROJECT, tag);
        snprintf(c->check, sizeof c->check, "/api/v1/tenants/%s/jobs?project=%s&limit=1000", ts,
                 HELD_PROJECT);
        break;
    case K_JOB_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/jobs", ts);
        break;
    case K_JOB_GET:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/jobs/%s", ts, tn->done_job);
        break;
    case K_JOB_EVENTS:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/jobs/%s/events", ts, tn->done_job);
        break;
    case K_JOB_CANCEL: {
        char id[64];
        held_job(ts, tag, id, sizeof id);
        snprintf(c->check, sizeof c->check, "/api/v1/tenants/%s/jobs/%s", ts, id);
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/jobs/%s/cancel", ts, id);
        break;
    }
    case K_JOB_LOGS:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/jobs/%s/logs", ts, tn->done_job);
        break;
    case K_CAPACITY:
        snprintf(c->path, sizeof c->path, "/api/v1/capacity");
        break;
    case K_CAPACITY_NODES:
        snprintf(c->path, sizeof c->path, "/api/v1/capacity/nodes");
        break;
    case K_IDLE_ALL:
        snprintf(c->path, sizeof c->path, "/api/v1/efficiency/idle");
        break;
    case K_IDLE_TENANT:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/efficiency/idle", ts);
        break;
    }
    if (c->r->kind == K_TENANT_PATCH) {
        char *name = adm_field(c->path, "name");
        snprintf(c->before, sizeof c->before, "%s", name ? name : "");
        free(name);
    } else if (c->check[0] && (c->r->kind == K_USER_PATCH || c->r->kind == K_PROJECT_PATCH)) {
        char *v = adm_field(c->check, c->r->kind == K_USER_PATCH ? "display_name" : "name");
        snprintf(c->before, sizeof c->before, "%s", v ? v : "");
        free(v);
    } else if (c->r->kind == K_QUOTA_PUT || c->r->kind == K_PQUOTA_PUT) {
        cpu_limit(c->path, c->before, sizeof c->before);
    } else if (c->r->kind == K_JOB_CANCEL) {
        char *v = adm_field(c->check, "state");
        snprintf(c->before, sizeof c->before, "%s", v ? v : "");
        free(v);
    }
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    const struct tenant *tn = &tenants[c->t];
    switch ((enum kind)c->r->kind) {
    case K_ME:
        if (got == 200 && (!jstr(res->json, "username") ||
                           strcmp(jstr(res->json, "username"), actors[c->a].user) != 0))
            note("%s: /me names another user: %s", c->what, res->body);
        break;
    case K_TOKEN_CREATE:
        if (actors[c->a].user_jwt) {
            bool there =
                list_has(actors[c->a].user_jwt, "/api/v1/tokens?limit=1000", "name", c->tag);
            if (there != is_2xx(got))
                note("%s: answered %ld, and the token %s", c->what, got,
                     there ? "exists" : "does not exist");
        }
        if (got == 201 && !jstr(res->json, "token"))
            note("%s: 201 without the secret", c->what);
        break;
    case K_TOKEN_DELETE:
    case K_SESSION_DELETE: {
        struct http_res r;
        long st = reqj("GET", "/api/v1/me", c->secret, NULL, &r);
        http_res_free(&r);
        if (st != (is_2xx(got) ? 401 : 200))
            note("%s: answered %ld, then the target %s gets %ld on /me", c->what, got,
                 c->r->kind == K_TOKEN_DELETE ? "token" : "session", st);
        break;
    }
    case K_USER_CREATE:
    case K_TENANT_CREATE:
    case K_PROJECT_CREATE:
        check_exists(c, got, c->check, true);
        break;
    case K_PROJECT_DELETE:
        check_exists(c, got, c->check, false);
        break;
    case K_USER_PATCH: {
        char want[128];
        snprintf(want, sizeof want, "Patched %s", c->tag);
        check_changed(c, got, c->check, "display_name", want);
        break;
    }
    case K_PROJECT_PATCH:
    case K_TENANT_PATCH: {
        char want[128];
        snprintf(want, sizeof want, "Renamed %s", c->tag);
        check_changed(c, got, c->r->kind == K_TENANT_PATCH ? c->path : c->check, "name", want);
        if (c->r->kind == K_TENANT_PATCH && is_2xx(got)) {
            char body[300];
            snprintf(body, sizeof body, "{\"name\":\"%s\"}", c->before);
            struct http_res r;
            if (adm("PATCH", c->path, body, &r) != 200)
                note("%s: restoring the tenant's name answered %ld", c->what, r.status);
            http_res_free(&r);
        }
        break;
    }
    case K_TENANT_DELETE:
        if (adm_status(c->path) != 200)
            note("%s: answered %ld and the tenant is gone", c->what, got);
        break;
    case K_MEMBER_PUT:
        if (is_member(c->t, c->tag) != is_2xx(got))
            note("%s: answered %ld, and %s is %sa member", c->what, got, c->tag,
                 is_2xx(got) ? "not " : "");
        break;
    case K_MEMBER_DELETE:
        if (is_member(c->t, c->tag) == is_2xx(got))
            note("%s: answered %ld, and %s is %sa member", c->what, got, c->tag,
                 is_2xx(got) ? "still " : "no longer ");
        break;
    case K_TENANT_GET:
        if (got == 200 && (!jstr(res->json, "slug") || strcmp(jstr(res->json, "slug"), tn->slug)))
            note("%s: 200 names another tenant", c->what);
        break;
    case K_PASSWORD:
        if (got == 400 && !strstr(res->body ? res->body : "", "new_password"))
            note("%s: 400 is not about new_password: %s", c->what, res->body ? res->body : "");
        break;
    case K_SESSION_LIST:
        if (got == 200) {
            /* the user's logins, the one of this request marked; an API token is none */
            size_t i, current = 0;
            json_t *it, *items = json_object_get(res->json, "items");
            json_array_foreach(items, i, it) current += json_is_true(json_object_get(it, "current"));
            bool via_token = c->a == A_TOK_ADMIN;
            if (json_array_size(items) == 0 || current != (via_token ? 0 : 1))
                note("%s: %zu sessions, %zu marked current: %s", c->what, json_array_size(items),
                     current, res->body ? res->body : "");
        }
        break;
    case K_CAPACITY:
    case K_CAPACITY_NODES:
    case K_IDLE_ALL:
    case K_IDLE_TENANT:
    case K_TOKEN_LIST:
    case K_USER_LIST:
    case K_TENANT_LIST:
    case K_MEMBER_LIST:
    case K_PROJECT_LIST:
        if (got == 200 && !json_is_array(json_object_get(res->json, "items")))
            note("%s: 200 without items", c->what);
        break;
    case K_USER_GET:
    case K_PROJECT_GET:
        break;
    case K_QUOTA_PUT:
    case K_PQUOTA_PUT: {
        char now[64], want[64];
        cpu_limit(c->path, now, sizeof now);
        snprintf(want, sizeof want, "%d", c->r->kind == K_QUOTA_PUT ? 64 + 2 * c->a + c->t : 8);
        check_value(c, got, "the cpu limit", now, want);
        break;
    }
    case K_QUOTA_GET:
    case K_PQUOTA_GET:
        if (got == 200 && !json_is_object(json_object_get(res->json, "resources")))
            note("%s: 200 without resources", c->what);
        break;
    case K_CLUSTER_CREATE:
        check_exists(c, got, c->check, true);
        break;
    case K_CLUSTER_LIST:
    case K_JOB_LIST:
    case K_JOB_EVENTS:
        if (got == 200 && json_array_size(json_object_get(res->json, "items")) == 0)
            note("%s: 200 without items (there is one)", c->what);
        break;
    case K_CLUSTER_GET:
        if (got == 200 && (!jstr(res->json, "name") || strcmp(jstr(res->json, "name"), "local")))
            note("%s: 200 names another cluster: %s", c->what, res->body ? res->body : "");
        break;
    case K_CLUSTER_DRIFT:
        if (got == 422 && !strstr(res->body ? res->body : "", "no job list"))
            note("%s: 422 does not say why: %s", c->what, res->body ? res->body : "");
        break;
    case K_GPU_FAULT_REPORT:
    case K_GPU_FAULT_RESOLVE:
        if (got == 404 && !strstr(res->body ? res->body : "", "is not a node of cluster"))
            note("%s: 404 does not say why: %s", c->what, res->body ? res->body : "");
        break;
    case K_GPU_FAULT_LIST:
        if (got == 200 && !json_is_array(json_object_get(res->json, "items")))
            note("%s: 200 without items", c->what);
        break;
    case K_CLUSTER_SYNC:
        if (got == 202 &&
            (!jstr(res->json, "cluster") || strcmp(jstr(res->json, "cluster"), "local") ||
             !jstr(res->json, "sync") || strcmp(jstr(res->json, "sync"), "requested")))
            note("%s: 202 is not {\"cluster\":\"local\",\"sync\":\"requested\"}: %s", c->what,
                 res->body ? res->body : "");
        break;
    case K_JOB_SUBMIT: {
        bool there = list_has(harness_srv.admin_token, c->check, "name", c->tag);
        if (there != is_2xx(got))
            note("%s: answered %ld, and the job %s", c->what, got,
                 there ? "exists" : "does not exist");
        if (got == 201 && !jstr(res->json, "id"))
            note("%s: 201 without the job's id", c->what);
        break;
    }
    case K_JOB_GET:
        if (got == 200 && (!jstr(res->json, "id") || strcmp(jstr(res->json, "id"), tn->done_job)))
            note("%s: 200 is not the job: %s", c->what, res->body ? res->body : "");
        break;
    case K_JOB_CANCEL:
        if (strcmp(c->before, "queued") != 0)
            note("%s: the target job was %s before, not queued", c->what, c->before);
        check_changed(c, got, c->check, "state", "cancelled");
        break;
    case K_JOB_LOGS:
        if (got == 200 && (!res->body || !strstr(res->body, "hello")))
            note("%s: 200 without the job's output: %s", c->what, res->body ? res->body : "");
        break;
    }
}

/* The column of a cell, for messages: DELETE /tokens/{id} and /me/sessions/{id} have their
 * own. */
static const char *column(const struct permrun_cell *c)
{
    if (c->r->kind == K_TOKEN_DELETE)
        return c->t ? "another user's token" : "own token";
    if (c->r->kind == K_SESSION_DELETE)
        return c->t ? "another user's session" : "own session";
    return c->t ? "tenant other" : "tenant own";
}

static const struct permrun_matrix this_matrix = {
    .file = NULL, /* the rows of every route that split_routes does not list */
    .tag = "m",
    .rows = rows,
    .nrows = NROWS,
    .split = split_routes,
    .nsplit = NSPLIT_ROUTES,
    .prep = prep,
    .verify = verify,
    .column = column,
};

/* Every authenticated route of the table has a matrix row, here or (split_routes) in
 * another program, which checks it has; the public ones are known. */
START_TEST(every_route_is_in_the_matrix)
{
    reset_notes();
    for (size_t i = 0; i < routes_count; i++) {
        const struct route *rt = &routes[i];
        char key[300];
        snprintf(key, sizeof key, "%s %s", rt->method, rt->pattern);
        bool found = false;
        if (rt->flags & RF_PUBLIC) {
            for (size_t k = 0; k < NPUBLIC; k++)
                found |= strcmp(public_routes[k], key) == 0;
        } else if (strcmp(key, "POST /api/v1/auth/logout") == 0) {
            found = true; /* see test_permissions.c, logout_for_every_kind_of_caller */
        } else {
            found = permrun_split_file(&this_matrix, key) != NULL; /* rows in that program */
            for (size_t k = 0; k < NROWS; k++)
                found |= strcmp(rows[k].method, rt->method) == 0 &&
                         strcmp(rows[k].pattern, rt->pattern) == 0;
        }
        if (!found)
            note("route %s%s has no row in the permission matrix", key,
                 (rt->flags & RF_PUBLIC) ? " (public)" : "");
    }
    finish();
}
END_TEST

/* Beside the matrix, after it (the test reads only the route table and the rows). */
static void route_check(TCase *tc)
{
    tcase_add_test(tc, every_route_is_in_the_matrix);
}

int main(void)
{
    return permrun_main("permissions_matrix", &this_matrix, NULL, route_check);
}
