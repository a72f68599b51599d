/*
 * test_permissions.c - the permission matrix of the API: every actor (global
 * roles, tenant roles, foreign tenant admin, user without membership,
 * anonymous, API tokens with and without the admin scope, a tenant-bound
 * token, cookie sessions with and without X-Requested-With) against every
 * authenticated endpoint of api/routes.c, on its own tenant and on another
 * one.
 *
 * The expectations are written down by hand from docs API.md ("Roles", and
 * "objects of another tenant answer 404, never 403 and never data") and the
 * route table, not computed from the dispatcher, so that a change in either
 * shows up here. Every write runs against an object created for that one
 * cell; after the request the admin checks that a 2xx really happened and
 * that a refusal left the object as it was. Refusals (401/403/404) must be
 * problem+json, and a 404 must not carry the tenant's name or id.
 *
 * The last test case suspends tenant "own" and restores it.
 */
#include "server/router.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"

#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PW "perm-password-1"

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
};

static struct tenant tenants[2] = {
    {"own", "Tenant own", "own-p", "Project own-p", ""},
    {"other", "Tenant other", "other-p", "Project other-p", ""},
};

/* ---- collecting mismatches ------------------------------------------------------ */

static char errs[6000];
static size_t errs_len;
static int nerrs;

static void note(const char *f, ...) __attribute__((format(printf, 1, 2)));

static void note(const char *f, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, f);
    vsnprintf(line, sizeof line, f, ap);
    va_end(ap);
    fprintf(stderr, "MISMATCH: %s\n", line);
    nerrs++;
    if (errs_len + strlen(line) + 3 < sizeof errs) {
        errs_len += (size_t)snprintf(errs + errs_len, sizeof errs - errs_len, "\n  %s", line);
    } else if (errs_len + 8 < sizeof errs && !strstr(errs, "\n  ...")) {
        errs_len += (size_t)snprintf(errs + errs_len, sizeof errs - errs_len, "\n  ...");
    }
}

static void reset_notes(void)
{
    errs[0] = '\0';
    errs_len = 0;
    nerrs = 0;
}

static void finish(void)
{
    ck_assert_msg(nerrs == 0, "%d mismatch(es):%s", nerrs, errs);
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

/* ---- admin-side checks ---------------------------------------------------------- */

static long adm_status(const char *path)
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

static bool is_member(int t, const char *username)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/tenants/%s/members?limit=1000", tenants[t].slug);
    return list_has(harness_srv.admin_token, path, "username", username);
}

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

static bool is_2xx(long st)
{
    return st >= 200 && st < 300;
}

/* ---- the matrix ----------------------------------------------------------------- */

enum kind {
    K_ME,
    K_TOKEN_CREATE,
    K_TOKEN_LIST,
    K_TOKEN_DELETE,
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
};

/*
 * own: the expected status on tenant "own" (or the only one, for routes
 * without {tenant}); other: on tenant "other" - for DELETE /tokens/{id}, on
 * somebody else's token - or all 0 where there is no such column.
 */
struct row {
    const char *method;
    const char *pattern;
    enum kind kind;
    int own[NACTORS];
    int other[NACTORS];
};

/* clang-format off */
static const struct row rows[] = {
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
    /* needs dual approval, which this version does not offer: 501 */
    {"DELETE", "/api/v1/tenants/{tenant}", K_TENANT_DELETE,
        {501, 501, 403, 403, 403, 403, 403, 404, 404, 401, 403, 403, 403, 403, 403},
        {501, 501, 403, 403, 404, 404, 404, 403, 404, 401, 403, 404, 404, 403, 404}},
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
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

/* Routes tested elsewhere in this file: the public ones and logout. */
static const char *const public_routes[] = {"GET /healthz", "GET /readyz", "GET /metrics",
                                            "GET /api/v1/openapi.json", "POST /api/v1/auth/login"};
#define NPUBLIC (sizeof public_routes / sizeof public_routes[0])

struct cell {
    const struct row *r;
    int a, t;       /* actor, column (0 own, 1 other) */
    char what[500]; /* for messages */
    char tag[32];   /* unique name for what this cell creates */
    char path[300];
    char body[400];
    char check[300];  /* where the admin looks afterwards */
    char before[256]; /* a value that a refusal must leave as it was */
    char secret[128]; /* K_TOKEN_DELETE: the target token */
};

static void prep(struct cell *c)
{
    const struct tenant *tn = &tenants[c->t];
    const char *ts = tn->slug;
    const char *tag = c->tag;
    c->body[0] = '\0';
    switch (c->r->kind) {
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
    }
    if (c->r->kind == K_TENANT_PATCH) {
        char *name = adm_field(c->path, "name");
        snprintf(c->before, sizeof c->before, "%s", name ? name : "");
        free(name);
    } else if (c->check[0] && (c->r->kind == K_USER_PATCH || c->r->kind == K_PROJECT_PATCH)) {
        char *v = adm_field(c->check, c->r->kind == K_USER_PATCH ? "display_name" : "name");
        snprintf(c->before, sizeof c->before, "%s", v ? v : "");
        free(v);
    }
}

/* A field of the object the admin reads at path: changed to want after a 2xx, else as before. */
static void check_changed(const struct cell *c, long got, const char *path, const char *field,
                          const char *want)
{
    char *now = adm_field(path, field);
    if (is_2xx(got) && (!now || strcmp(now, want) != 0))
        note("%s: answered %ld but %s is \"%s\", not \"%s\"", c->what, got, field,
             now ? now : "(none)", want);
    if (!is_2xx(got) && (!now || strcmp(now, c->before) != 0))
        note("%s: refused (%ld) but %s changed from \"%s\" to \"%s\"", c->what, got, field,
             c->before, now ? now : "(none)");
    free(now);
}

/* Whether the object at path exists for the admin: after a 2xx exactly when `after_2xx`. */
static void check_exists(const struct cell *c, long got, const char *path, bool after_2xx)
{
    long st = adm_status(path);
    bool want = is_2xx(got) ? after_2xx : !after_2xx;
    if (st != (want ? 200 : 404))
        note("%s: answered %ld, then GET %s answers %ld to the admin (expected %d)", c->what, got,
             path, st, want ? 200 : 404);
}

static void verify(const struct cell *c, long got, const struct http_res *res)
{
    const struct tenant *tn = &tenants[c->t];
    switch (c->r->kind) {
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
    case K_TOKEN_DELETE: {
        struct http_res r;
        long st = reqj("GET", "/api/v1/me", c->secret, NULL, &r);
        http_res_free(&r);
        if (st != (is_2xx(got) ? 401 : 200))
            note("%s: answered %ld, then the target token gets %ld on /me", c->what, got, st);
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
    }
}

static void run_cell(const struct row *r, int ri, int a, int t)
{
    struct cell c = {.r = r, .a = a, .t = t};
    int want = t ? r->other[a] : r->own[a];
    snprintf(c.tag, sizeof c.tag, "m%02da%02d%c", ri, a, t ? 'x' : 'o');
    prep(&c);
    snprintf(c.what, sizeof c.what, "%s %s as %s (%s)", r->method, c.path, actors[a].label,
             r->kind == K_TOKEN_DELETE ? (t ? "another user's token" : "own token")
                                       : (t ? "tenant other" : "tenant own"));
    struct http_res res;
    long got = as(a, r->method, c.path, c.body[0] ? c.body : NULL, &res);
    if (got != want)
        note("%s: expected %d, got %ld %s", c.what, want, got, res.body ? res.body : "");
    if ((got == 401 || got == 403 || got == 404 || got == 501) && !is_problem(&res, got))
        note("%s: %ld is not problem+json", c.what, got);
    if (got == 404)
        check_no_leak(c.what, &res);
    verify(&c, got, &res);
    http_res_free(&res);
}

START_TEST(matrix)
{
    const struct row *r = &rows[_i];
    reset_notes();
    for (int a = 0; a < NACTORS; a++) {
        run_cell(r, _i, a, 0);
        if (r->other[0])
            run_cell(r, _i, a, 1);
    }
    finish();
}
END_TEST

/* Every authenticated route of the table has a matrix row; the public ones are known. */
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
            found = true; /* see logout_for_every_kind_of_caller */
        } else {
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

START_TEST(deleting_a_tenant_is_501_and_keeps_it)
{
    struct http_res r;
    long st = as(A_PA, "DELETE", "/api/v1/tenants/other", NULL, &r);
    ck_assert_int_eq(st, 501);
    ck_assert(is_problem(&r, 501));
    http_res_free(&r);
    ck_assert_int_eq(adm("GET", "/api/v1/tenants/other", NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "name"), tenants[1].name);
    http_res_free(&r);
    ck_assert_int_eq(adm_status("/api/v1/tenants/other/projects/other-p"), 200);
    ck_assert(is_member(1, actors[A_FOREIGN].user));
    ck_assert_int_eq(as(A_FOREIGN, "GET", "/api/v1/tenants/other", NULL, &r), 200);
    http_res_free(&r);
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

static void global_setup(void)
{
    harness_setup("permissions", NULL);
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
}

int main(void)
{
    harness_require_pg();
    global_setup();
    Suite *s = suite_create("permissions");

    TCase *tc = tcase_create("matrix");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_route_is_in_the_matrix);
    tcase_add_test(tc, public_endpoints_need_no_credentials);
    tcase_add_loop_test(tc, matrix, 0, (int)NROWS);
    tcase_add_test(tc, tenant_list_shows_only_what_the_caller_may_see);
    tcase_add_test(tc, user_list_is_for_platform_admin_and_auditor);
    tcase_add_test(tc, me_works_for_every_authenticated_actor);
    tcase_add_test(tc, invisible_tenants_look_like_missing_ones);
    tcase_add_test(tc, deleting_a_tenant_is_501_and_keeps_it);
    tcase_add_test(tc, cookie_sessions_need_the_portal_header_to_write);
    tcase_add_test(tc, logout_for_every_kind_of_caller);
    suite_add_tcase(s, tc);

    TCase *susp = tcase_create("suspended");
    tcase_set_timeout(susp, 120);
    tcase_add_unchecked_fixture(susp, NULL, unsuspend);
    tcase_add_test(susp, suspended_tenant);
    suite_add_tcase(s, susp);

    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    harness_teardown();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
