/*
 * access_sweep_fixture.h - the world of test_access_sweep.c: tenants "own",
 * "susp" (suspended once the setup is done) and "other", each with projects
 * "proj" and "held" (a job limit of 0, so its job stays queued), a queued
 * job, a queued interactive session, an image, a pending allocation request and (own, susp)
 * a draft invoice; the local cluster, a
 * registry, a token to delete, a pending approval; the users of every role;
 * and the credentials of every column: refused ones (each made to stop
 * working only after it worked once, so the actor cache has seen it), the
 * suspended tenant's admin's, and the admin's tokens per route scope.
 * param_value/fill_path put real objects into a route's {params}.
 *
 * Included once by test_access_sweep.c, which is why its definitions are
 * static and it is no part of the test support library (unlike
 * tests/support/permfixture.h, which the permission tests share).
 */
#ifndef AIDC_TEST_ACCESS_SWEEP_FIXTURE_H
#define AIDC_TEST_ACCESS_SWEEP_FIXTURE_H

#include "server/auth.h"
#include "lib/crypto.h"
#include "server/router.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"

#include <jwt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N(a)         (sizeof(a) / sizeof((a)[0]))
#define PW           "sweep-password-1"
#define SWEEP_USER   "sweep-u" /* {username}: a viewer of own and susp */
#define REGISTRY     "reg"
#define NO_SUCH_NODE "no-such-node"
#define PLAUSIBLE_ID "00000000-0000-4000-8000-000000000000"
/* {name} of a tenant's templates: one made in each tenant */
#define TENANT_TEMPLATE "sweep-tpl"

/* ---- the world the routes are sent to ----------------------------------------------- */

struct tn {
    const char *slug;
    char id[64];
    char job[64];     /* a queued job of the admin */
    char session[64]; /* a queued interactive session of the admin */
    char image[64];   /* an image of the tenant */
    char invoice[64]; /* a draft invoice of the tenant (own and susp) */
    char alloc[64];   /* a pending allocation request of its project proj */
};

static struct tn own = {"own", "", "", "", "", "", ""};
static struct tn susp = {"susp", "", "", "", "", "", ""}; /* suspended after the setup */
static struct tn other = {"other", "", "", "", "", "", ""};

static char token_id[64];    /* an API token of the admin ({id} of /tokens) */
static char approval_id[64]; /* pending, asked by pa2 */

/* The value for {param} in pattern at p (the segment before it names the kind). */
static const char *param_value(const char *pattern, const char *p, const char *name,
                               const struct tn *t)
{
    char prev[64] = "";
    const char *end = p > pattern ? p - 1 : p; /* the '/' before {param} */
    const char *start = end;
    while (start > pattern && start[-1] != '/')
        start--;
    snprintf(prev, sizeof prev, "%.*s", (int)(end - start), start);
    if (strcmp(name, "tenant") == 0)
        return t->slug;
    if (strcmp(name, "project") == 0)
        return "proj";
    if (strcmp(name, "username") == 0)
        return SWEEP_USER;
    if (strcmp(name, "node") == 0)
        return NO_SUCH_NODE;
    if (strcmp(name, "name") == 0 && strcmp(prev, "templates") == 0) /* a tenant's, a seeded one */
        return strstr(pattern, "/tenants/{tenant}/") ? TENANT_TEMPLATE : "jupyter";
    if (strcmp(name, "name") == 0)
        return strcmp(prev, "registries") == 0 ? REGISTRY : "local";
    if (strcmp(name, "id") == 0) {
        if (strcmp(prev, "tokens") == 0)
            return token_id;
        if (strcmp(prev, "jobs") == 0)
            return t->job;
        /* a tenant's interactive sessions (not /me/sessions: the caller's logins) */
        if (strcmp(prev, "sessions") == 0 && strstr(pattern, "/tenants/{tenant}/sessions/"))
            return t->session;
        if (strcmp(prev, "images") == 0)
            return t->image;
        if (strcmp(prev, "invoices") == 0)
            return t->invoice[0] ? t->invoice : own.invoice;
        if (strcmp(prev, "approvals") == 0)
            return approval_id;
        /* /tenants/{tenant}/allocation-requests/{id}, and the platform's routes of one */
        if (strcmp(prev, "allocation-requests") == 0)
            return t->alloc[0] ? t->alloc : own.alloc;
        return PLAUSIBLE_ID; /* a new kind of {id}: swept all the same */
    }
    return "plausible-slug";
}

/* pattern with its {params} filled for tenant t. */
static void fill_path(const char *pattern, const struct tn *t, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = pattern; *p && o + 1 < n;) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        if (!close) {
            out[o++] = *p++;
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(close - p - 1), p + 1);
        int w = snprintf(out + o, n - o, "%s", param_value(pattern, p, name, t));
        o += w > 0 ? (size_t)w : 0;
        p = close + 1;
    }
    out[o < n ? o : n - 1] = '\0';
}

/* ---- credentials ------------------------------------------------------------------------ */

enum { NKEY = 256 };
static unsigned char jwt_key[NKEY]; /* the server's session key (<data dir>/jwt.key) */
static size_t jwt_keylen;

/* A session JWT like the server's own, with the given key and times. */
static char *mint(const unsigned char *key, size_t keylen, const char *sub, long sep, long iat,
                  long exp)
{
    jwt_t *j = NULL;
    char *tok = NULL;
    char jti[37];
    crypto_uuid_new(jti);
    if (jwt_new(&j) == 0 && jwt_set_alg(j, JWT_ALG_HS256, key, (int)keylen) == 0 &&
        jwt_add_grant(j, "iss", "aidc") == 0 && jwt_add_grant(j, "sub", sub) == 0 &&
        jwt_add_grant(j, "jti", jti) == 0 && jwt_add_grant_int(j, "iat", iat) == 0 &&
        jwt_add_grant_int(j, "exp", exp) == 0 && jwt_add_grant_int(j, "sep", sep) == 0)
        tok = jwt_encode_str(j);
    jwt_free(j);
    if (!tok)
        abort();
    return tok;
}

/* The refused credentials of the 401 column, each with its label. */
struct cred {
    const char *label;
    char *bearer; /* NULL: no credentials */
};
enum {
    C_NONE,
    C_EXPIRED_JWT,
    C_FORGED_JWT,
    C_LOGGED_OUT_JWT,
    C_REVOKED_TOKEN,
    C_EXPIRED_TOKEN,
    C_MALFORMED_TOKEN,
    C_DISABLED_JWT,
    C_DISABLED_TOKEN,
    NCREDS
};
static struct cred creds[NCREDS] = {
    [C_NONE] = {"no credentials", NULL},
    [C_EXPIRED_JWT] = {"an expired JWT (valid signature)", NULL},
    [C_FORGED_JWT] = {"a JWT signed with another key", NULL},
    [C_LOGGED_OUT_JWT] = {"a logged-out JWT", NULL},
    [C_REVOKED_TOKEN] = {"a revoked API token", NULL},
    [C_EXPIRED_TOKEN] = {"an expired API token", NULL},
    [C_MALFORMED_TOKEN] = {"a malformed API token", NULL},
    [C_DISABLED_JWT] = {"a disabled platform admin's JWT", NULL},
    [C_DISABLED_TOKEN] = {"a disabled platform admin's API token", NULL},
};

/* The suspended tenant's admin: a token bound to it, its JWT, an unbound token. */
static char *susp_bound, *susp_jwt, *susp_unbound;

/* The roles, as JWTs. */
struct role_actor {
    const char *user;
    unsigned global; /* enum global_role bits */
    int own_role;    /* enum tenant_role in "own" */
    char *jwt;
};
static struct role_actor role_actors[] = {
    {"pa2", GR_PLATFORM_ADMIN, TR_NONE, NULL},
    {"fin", GR_FINANCE, TR_NONE, NULL},
    {"aud", GR_AUDITOR, TR_NONE, NULL},
    {"own-admin", 0, TR_ADMIN, NULL},
    {"own-member", 0, TR_MEMBER, NULL},
    {"own-viewer", 0, TR_VIEWER, NULL},
    {"other-admin", 0, TR_NONE, NULL}, /* tenant_admin of "other" */
    {"nobody", 0, TR_NONE, NULL},
};

/* The admin's tokens with exactly a route's scope and with every scope but it. */
struct scope_tokens {
    unsigned scope;
    char *only, *lacking;
};
static struct scope_tokens scope_tokens[16];
static size_t nscope_tokens;

/* ---- setup ---------------------------------------------------------------------------- */

static void setup_fail(const char *what, long st, const struct http_res *r)
{
    fprintf(stderr, "test setup: %s answered %ld: %s\n", what, st, r && r->body ? r->body : "");
    harness_teardown();
    exit(1);
}

/* method path as jwt must answer want; a string field of the answer goes to out (if any). */
static void must_do(const char *jwt, const char *method, const char *path, const char *body,
                    long want, const char *field, char *out, size_t n)
{
    struct http_res r;
    long st = reqj(method, path, jwt, body, &r);
    const char *v = field ? json_string_value(json_object_get(r.json, field)) : NULL;
    if (st != want || (field && !v))
        setup_fail(fmt("%s %s", method, path), st, &r);
    if (field)
        snprintf(out, n, "%s", v);
    http_res_free(&r);
}

/* An API token of jwt's user (scopes as JSON, tenant or NULL): the secret; its id to id. */
static char *new_token(const char *jwt, const char *scopes, const char *tenant, char *id,
                       size_t idn)
{
    char body[400];
    snprintf(body, sizeof body, "{\"name\":\"sweep\",\"scopes\":%s%s%s%s}", scopes,
             tenant ? ",\"tenant\":\"" : "", tenant ? tenant : "", tenant ? "\"" : "");
    struct http_res r;
    long st = reqj("POST", "/api/v1/tokens", jwt, body, &r);
    const char *secret = json_string_value(json_object_get(r.json, "token"));
    const char *tid = json_string_value(json_object_get(r.json, "id"));
    if (st != 201 || !secret || !tid)
        setup_fail("POST /api/v1/tokens", st, &r);
    if (id)
        snprintf(id, idn, "%s", tid);
    char *s = strdup(secret);
    http_res_free(&r);
    if (!s)
        abort();
    return s;
}

static char *must_login(const char *user, const char *pw)
{
    char *jwt = login(user, pw);
    if (!jwt)
        setup_fail(fmt("logging in as %s", user), 0, NULL);
    return jwt;
}

/* The server's session key, and the admin's user id and session epoch from its JWT. */
static void read_session_key(char *sub, size_t subn, long *sep)
{
    char path[400];
    snprintf(path, sizeof path, "%s/jwt.key", harness_srv.data_dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        setup_fail(fmt("opening %s", path), 0, NULL);
    jwt_keylen = fread(jwt_key, 1, sizeof jwt_key, f);
    fclose(f);
    jwt_t *j = NULL;
    if (jwt_keylen < 32 || jwt_decode(&j, harness_srv.admin_token, jwt_key, (int)jwt_keylen) != 0 ||
        !j)
        setup_fail("decoding the admin's JWT with the server's key", 0, NULL);
    const char *s = jwt_get_grant(j, "sub");
    snprintf(sub, subn, "%s", s ? s : "");
    *sep = jwt_get_grant_int(j, "sep");
    jwt_free(j);
}

/* A bearer that works now (GET /me answers 200), before it is made to stop working. */
static void must_work(const char *bearer, const char *what)
{
    long st = req("GET", "/api/v1/me", bearer, NULL);
    if (st != 200)
        setup_fail(fmt("GET /api/v1/me with %s", what), st, NULL);
}

/* Tenants, projects, the cluster, a queued job and an image in each tenant. */
static void setup_tenants(void)
{
    const char *admin = harness_srv.admin_token;
    must_do(admin, "POST", "/api/v1/clusters",
            "{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":4}}}", 201,
            NULL, NULL, 0);
    struct tn *all[] = {&own, &susp, &other};
    for (size_t i = 0; i < N(all); i++) {
        struct tn *t = all[i];
        make_tenant(t->slug);
        make_project(t->slug, "proj");
        make_project(t->slug, "held");
        must_do(admin, "GET", fmt("/api/v1/tenants/%s", t->slug), NULL, 200, "id", t->id,
                sizeof t->id);
        /* a job limit of 0: what is submitted there stays queued */
        must_do(admin, "PUT", fmt("/api/v1/tenants/%s/projects/held/quota", t->slug),
                "{\"resources\":{\"jobs\":{\"limit\":0}}}", 200, NULL, NULL, 0);
        must_do(admin, "POST", fmt("/api/v1/tenants/%s/jobs", t->slug),
                "{\"project\":\"held\",\"name\":\"sweep\",\"command\":[\"true\"]}", 201, "id",
                t->job, sizeof t->job);
        must_do(admin, "POST", fmt("/api/v1/tenants/%s/sessions", t->slug),
                "{\"project\":\"held\",\"app\":\"web\",\"command\":[\"true\"]}", 201, "id",
                t->session, sizeof t->session);
        must_do(admin, "POST", fmt("/api/v1/tenants/%s/images", t->slug),
                fmt("{\"repository\":\"%s/base\",\"tag\":\"v1\",\"digest\":\"sha256:%064zu\","
                    "\"size_bytes\":1024}",
                    t->slug, i + 1),
                201, "id", t->image, sizeof t->image);
        must_do(admin, "POST", fmt("/api/v1/tenants/%s/templates", t->slug),
                "{\"name\":\"" TENANT_TEMPLATE "\",\"script\":\"true\"}", 201, NULL, NULL, 0);
        char today[11], later[11]; /* a period from today: it may not end in the past */
        time_t now = time(NULL), then = now + 30 * 86400;
        struct tm tm;
        strftime(today, sizeof today, "%Y-%m-%d", gmtime_r(&now, &tm));
        strftime(later, sizeof later, "%Y-%m-%d", gmtime_r(&then, &tm));
        must_do(admin, "POST", fmt("/api/v1/tenants/%s/allocation-requests", t->slug),
                fmt("{\"project\":\"proj\",\"gpu_hours\":10,\"starts_on\":\"%s\","
                    "\"ends_on\":\"%s\",\"justification\":\"sweep\"}",
                    today, later),
                201, "id", t->alloc, sizeof t->alloc);
    }
    must_do(admin, "POST", "/api/v1/registries",
            "{\"name\":\"" REGISTRY "\",\"url\":\"http://127.0.0.1:9\","
            "\"options\":{\"timeout_seconds\":2}}",
            201, NULL, NULL, 0);
    must_do(admin, "POST", "/api/v1/invoices", "{\"tenant\":\"own\",\"period\":\"2026-01\"}", 201,
            "id", own.invoice, sizeof own.invoice);
    must_do(admin, "POST", "/api/v1/invoices", "{\"tenant\":\"susp\",\"period\":\"2026-01\"}", 201,
            "id", susp.invoice, sizeof susp.invoice);
}

/* The users of the roles, the suspended tenant's admin, SWEEP_USER, and their JWTs. */
static void setup_users(void)
{
    for (size_t i = 0; i < N(role_actors); i++) {
        struct role_actor *ra = &role_actors[i];
        const char *roles = ra->global == GR_PLATFORM_ADMIN ? "[\"platform_admin\"]"
                            : ra->global == GR_FINANCE      ? "[\"finance\"]"
                            : ra->global == GR_AUDITOR      ? "[\"auditor\"]"
                                                            : NULL;
        make_user(ra->user, PW, roles);
        if (ra->own_role != TR_NONE)
            make_member("own", ra->user,
                        ra->own_role == TR_ADMIN    ? "tenant_admin"
                        : ra->own_role == TR_MEMBER ? "member"
                                                    : "viewer");
        ra->jwt = must_login(ra->user, PW);
    }
    make_member("other", "other-admin", "tenant_admin");
    make_user("susp-admin", PW, NULL);
    make_member("susp", "susp-admin", "tenant_admin");
    make_user(SWEEP_USER, PW, NULL);
    make_member("own", SWEEP_USER, "viewer");
    make_member("susp", SWEEP_USER, "viewer");
    make_user("asked", PW, NULL);
    /* pending, and asked by pa2: the admin may approve it in the last column */
    struct http_res r;
    long st =
        reqj("PATCH", "/api/v1/users/asked", role_actors[0].jwt, "{\"roles\":[\"finance\"]}", &r);
    const char *id = json_string_value(json_object_get(json_object_get(r.json, "approval"), "id"));
    if (st != 202 || !id)
        setup_fail("asking for a role grant", st, &r);
    snprintf(approval_id, sizeof approval_id, "%.40s", id);
    http_res_free(&r);
}

static const char *const all_scopes =
    "[\"jobs:read\",\"jobs:write\",\"images:read\",\"images:write\",\"usage:read\","
    "\"billing:write\",\"audit:read\",\"audit:ingest\",\"admin\",\"gpu-faults:write\"]";

/* What a tenant admin without a global role may put in a token (a token never
 * exceeds its creator's roles: api/tokens.c). */
static const char *const tenant_admin_scopes =
    "[\"jobs:read\",\"jobs:write\",\"images:read\",\"images:write\",\"usage:read\","
    "\"admin\"]";

/* scopes as a JSON array text (malloc'd). */
static char *scopes_text(unsigned scopes)
{
    json_t *a = auth_scopes_json(scopes);
    char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!s)
        abort();
    return s;
}

/* The credentials of every column; each refused one worked once before it stopped. */
static void setup_credentials(void)
{
    const char *admin = harness_srv.admin_token;
    char sub[64], id[64];
    long sep;
    read_session_key(sub, sizeof sub, &sep);
    long now = (long)time(NULL);
    /* the same claims with a future exp work: so the refusals below are about exp and key */
    char *good = mint(jwt_key, jwt_keylen, sub, sep, now - 10, now + 3600);
    must_work(good, "a JWT minted here with the server's key");
    free(good);
    creds[C_EXPIRED_JWT].bearer = mint(jwt_key, jwt_keylen, sub, sep, now - 7200, now - 3600);
    const unsigned char other_key[32] = "not the server's key, 32 bytes!";
    creds[C_FORGED_JWT].bearer = mint(other_key, sizeof other_key, sub, sep, now - 10, now + 3600);

    char *out = must_login(ADMIN_USER, ADMIN_PASSWORD);
    must_work(out, "the admin's second session");
    must_do(out, "POST", "/api/v1/auth/logout", NULL, 204, NULL, NULL, 0);
    creds[C_LOGGED_OUT_JWT].bearer = out;

    char *rev = new_token(admin, all_scopes, NULL, id, sizeof id);
    must_work(rev, "the token to revoke");
    must_do(admin, "DELETE", fmt("/api/v1/tokens/%s", id), NULL, 204, NULL, NULL, 0);
    creds[C_REVOKED_TOKEN].bearer = rev;

    char *exp = new_token(admin, all_scopes, NULL, id, sizeof id);
    must_work(exp, "the token to expire");
    const char *p[1] = {id};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "UPDATE api_tokens SET expires_at = now() - interval '1 minute'"
                              " WHERE id = $1::uuid",
                              1, p);
    if (!r || strcmp(PQcmdTuples(r), "1") != 0)
        setup_fail("expiring a token", 0, NULL);
    PQclear(r);
    creds[C_EXPIRED_TOKEN].bearer = exp;
    creds[C_MALFORMED_TOKEN].bearer = strdup("aidc_not-a-token");

    make_user("gone", PW, "[\"platform_admin\"]");
    creds[C_DISABLED_JWT].bearer = must_login("gone", PW);
    creds[C_DISABLED_TOKEN].bearer =
        new_token(creds[C_DISABLED_JWT].bearer, all_scopes, NULL, NULL, 0);
    must_work(creds[C_DISABLED_TOKEN].bearer, "the disabled user's token");
    must_do(admin, "PATCH", "/api/v1/users/gone", "{\"disabled\":true}", 200, NULL, NULL, 0);

    /* the target of DELETE /tokens/{id} */
    free(new_token(admin, "[\"jobs:read\"]", NULL, token_id, sizeof token_id));

    /* the suspended tenant's admin, before the suspension */
    susp_jwt = must_login("susp-admin", PW);
    susp_bound = new_token(susp_jwt, tenant_admin_scopes, "susp", NULL, 0);
    susp_unbound = new_token(susp_jwt, tenant_admin_scopes, NULL, NULL, 0);
    must_work(susp_bound, "the token bound to susp");
    must_work(susp_unbound, "susp-admin's unbound token");
    must_do(admin, "PATCH", "/api/v1/tenants/susp", "{\"suspended\":true}", 200, NULL, NULL, 0);

    /* for every scope a route needs: the admin's token with it alone, and with all but it */
    for (size_t i = 0; i < routes_count; i++) {
        unsigned sc = routes[i].scope;
        bool have = sc == 0;
        for (size_t k = 0; k < nscope_tokens; k++)
            have |= scope_tokens[k].scope == sc;
        if (have)
            continue;
        if (nscope_tokens == N(scope_tokens))
            setup_fail("more distinct scopes than scope_tokens holds", 0, NULL);
        struct scope_tokens *st = &scope_tokens[nscope_tokens++];
        char *only = scopes_text(sc), *lacking = scopes_text(SC_ALL & ~sc);
        st->scope = sc;
        st->only = new_token(admin, only, NULL, NULL, 0);
        st->lacking = new_token(admin, lacking, NULL, NULL, 0);
        free(only);
        free(lacking);
    }
}

static const struct scope_tokens *tokens_for(unsigned scope)
{
    for (size_t k = 0; k < nscope_tokens; k++)
        if (scope_tokens[k].scope == scope)
            return &scope_tokens[k];
    return NULL;
}

#endif
