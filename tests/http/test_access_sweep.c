/*
 * test_access_sweep.c - the access-control sweep: every route of the route
 * table (api/routes.c, walked here, never listed by hand) is sent with every
 * kind of credential that must be refused, and with the ones that must get
 * past the checks, so that a route added later without its checks fails
 * here without anybody writing a line for it.
 *
 * Columns: no credentials; an expired JWT (signed with the server's real
 * key, only exp in the past); a JWT signed with another key; a logged-out
 * JWT; a revoked, an expired and a malformed API token; a JWT and a token of
 * a disabled user -> 401. A token bound to a suspended tenant -> 403 on every
 * route; the tenant admin's own JWT and unbound token -> 403 on every route
 * of that tenant, and no answer elsewhere shows an object of it (routes that
 * filter by ?tenant= get it). A platform admin's token lacking the route's scope -> 403,
 * with exactly that scope -> neither 401 nor 403. Every role (global roles
 * and tenant roles, JWTs): where the route's columns refuse the role, 403
 * (404 for a tenant it cannot see). What a role may do in detail is
 * test_permissions_matrix.c's (hand-written rows, which fails when a route
 * has none); here only the refusals the table implies are swept.
 *
 * Path parameters are real objects of the setup (tenant "own", its project,
 * job, session and image, a token, an invoice, a pending approval, ...), so that a
 * route without checks would act and answer 2xx. Every refusal must be
 * problem+json and must have done nothing: each request carries its own
 * X-Request-Id, and afterwards no audit event of a refused request may be
 * anything but "denied" (and every refusal must have one), and the objects
 * read back as the admin are as before.
 *
 * The short lists below (public routes, optional authentication, routes
 * open to any user, routes without a token scope) must match the table's
 * flags: a new public or unscoped route has to be added to them on purpose.
 * docs/access-control.md describes the sweep.
 */
#include "server/auth.h"
#include "server/router.h"
#include "tests/http/access_sweep_fixture.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/mismatch.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the lists a new route must be added to on purpose ---------------------------- */

/* RF_PUBLIC: no authentication at all. */
static const char *const public_routes[] = {
    "GET /healthz",
    "GET /readyz",
    "GET /metrics",
    "GET /api/v1/openapi.json",
    "POST /api/v1/auth/login",
    "GET /api/v1/auth/providers",
    "GET /api/v1/auth/oidc/{name}/login",
    "GET /api/v1/auth/oidc/{name}/callback",
};
/* RF_OPTIONAL_AUTH: refused credentials are ignored (logout still clears the cookie). */
static const char *const optional_auth_routes[] = {"POST /api/v1/auth/logout"};
/* RF_ANY_USER: any authenticated user passes the dispatcher; the handler narrows. */
static const char *const any_user_routes[] = {
    "POST /api/v1/auth/logout",   "GET /api/v1/me",
    "PUT /api/v1/me/password",    "GET /api/v1/me/sessions",
    "DELETE /api/v1/me/sessions/{id}",
    "GET /api/v1/me/notifications", "PUT /api/v1/me/notifications",
    "GET /api/v1/me/notifications/deliveries",
    "POST /api/v1/tokens",        "GET /api/v1/tokens",
    "DELETE /api/v1/tokens/{id}", "GET /api/v1/tenants",
    "GET /api/v1/clusters",       "GET /api/v1/clusters/{name}",
    "GET /api/v1/images",         "GET /api/v1/prices",
    "GET /api/v1/invoices",       "GET /api/v1/invoices/{id}",
    "POST /api/v1/allocation-requests/{id}/comments",
    "GET /api/v1/templates", /* the platform's job templates */
    "GET /api/v1/templates/{name}",
    "GET /api/v1/capacity",
};
/* Authenticated routes without a token scope: any API token of an allowed user passes,
 * but for a token with machine scopes only (audit:ingest, gpu-faults:write). */
static const char *const scope_free_routes[] = {
    "POST /api/v1/auth/logout",
    "GET /api/v1/me",
    "GET /api/v1/tokens",
    "GET /api/v1/tenants",
    "GET /api/v1/tenants/{tenant}",
    "GET /api/v1/tenants/{tenant}/members",
    "GET /api/v1/tenants/{tenant}/projects",
    "GET /api/v1/tenants/{tenant}/projects/{project}",
    "GET /api/v1/tenants/{tenant}/quota",
    "GET /api/v1/tenants/{tenant}/projects/{project}/quota",
    "GET /api/v1/clusters",
    "GET /api/v1/clusters/{name}",
    "GET /api/v1/clusters/{name}/gpu-faults",
    "GET /api/v1/tenants/{tenant}/allocation-requests",
    "GET /api/v1/tenants/{tenant}/allocation-requests/{id}",
    "GET /api/v1/capacity",
    "GET /api/v1/capacity/nodes",
};

static bool listed(const char *const *list, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], key) == 0)
            return true;
    return false;
}

static void route_key(const struct route *rt, char *out, size_t n)
{
    snprintf(out, n, "%s %s", rt->method, rt->pattern);
}

/* ---- requests ------------------------------------------------------------------------ */

static int seq;

/*
 * Send rt (path filled for t) with bearer; the request id is "<prefix>-<n>".
 * A body route gets "{}": a valid JSON object, so that the refusal cannot
 * hide behind a 400.
 */
static long send_route(const char *prefix, const char *bearer, const struct route *rt,
                       const struct tn *t, struct http_res *out, char *what, size_t wn,
                       const char *label)
{
    char path[400], rid[80];
    fill_path(rt->pattern, t, path, sizeof path);
    if (router_accepts_query(rt, "tenant")) /* a route without {tenant} filtering by one */
        snprintf(path + strlen(path), sizeof path - strlen(path), "?tenant=%s", t->slug);
    snprintf(rid, sizeof rid, "X-Request-Id: %s-%d", prefix, ++seq);
    const char *extra[] = {rid, NULL};
    const char *body = (rt->flags & (RF_BODY | RF_INGEST)) ? "{}" : NULL;
    snprintf(what, wn, "%s %s with %s [%s]", rt->method, path, label, rid + 14);
    long st = http_do(&harness_srv, rt->method, path, bearer, body, extra, out);
    if (getenv("SWEEP_VERBOSE")) /* every answer, to see what the sweep saw */
        fprintf(stderr, "%ld %s %.200s\n", st, what, out->body ? out->body : "");
    return st;
}

static bool is_problem(const struct http_res *r, long status)
{
    char *ct = http_header(r, "Content-Type");
    bool ok = ct && strstr(ct, "application/problem+json") && r->json &&
              json_integer_value(json_object_get(r->json, "status")) == status;
    free(ct);
    return ok;
}

/* A refusal: exactly want, problem+json, and a 404 that names no tenant's data. */
static void check_refusal(const char *what, const struct http_res *r, long want)
{
    if (r->status != want) {
        note("%s: expected %ld, got %ld %.300s", what, want, r->status, r->body ? r->body : "");
        return;
    }
    if (!is_problem(r, want))
        note("%s: %ld is not problem+json", what, want);
    const struct tn *all[] = {&own, &susp, &other};
    for (size_t i = 0; want == 404 && r->body && i < N(all); i++)
        if (strstr(r->body, all[i]->id))
            note("%s: the 404 reveals tenant %s's id", what, all[i]->slug);
}

/* Let through: neither 401 nor 403, and no server error. */
static void check_passed(const char *what, const struct http_res *r)
{
    if (r->status == 401 || r->status == 403 || r->status >= 500 || r->status == 0)
        note("%s: expected to pass the checks, got %ld %.300s", what, r->status,
             r->body ? r->body : "");
}

/* ---- nothing happened: audit events and objects ------------------------------------- */

/* Every request "<prefix>-*" has a "denied" audit event, and none has any other outcome. */
static void check_audit(const char *prefix, int refused)
{
    char like[64], n[16];
    snprintf(like, sizeof like, "%s-%%", prefix);
    const char *p[1] = {like};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT request_id, action, outcome, status FROM audit_log"
                              " WHERE request_id LIKE $1 AND outcome <> 'denied' ORDER BY id",
                              1, p);
    for (int i = 0; r && i < PQntuples(r); i++)
        note("refused request %s was audited as %s %s (status %s): it did something",
             PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3));
    PQclear(r);
    r = harness_sql(harness_srv.owner_url,
                    "SELECT count(DISTINCT request_id) FROM audit_log"
                    " WHERE request_id LIKE $1 AND outcome = 'denied'",
                    1, p);
    snprintf(n, sizeof n, "%d", refused);
    if (!r || PQntuples(r) != 1 || strcmp(PQgetvalue(r, 0, 0), n) != 0)
        note("%s: %s of the %d refusals have a \"denied\" audit event", prefix,
             r && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "?", refused);
    PQclear(r);
}

/* The objects the sweep aims at, as the admin reads them (JSON, keys sorted). */
/*
 * What the background workers change in a queued job or session on their own,
 * whatever the requests do: the admission's reason and estimate for it (under
 * ASan an admission pass may first see the suspended tenant's job between the
 * two snapshots), the queue position, which other jobs move, and how long it has
 * waited or run (counted to now).
 */
static void drop_volatile(json_t *o)
{
    static const char *const keys[] = {"reason",         "estimated_start", "updated_at",
                                       "queue_position", "wait_seconds",    "run_seconds",
                                       NULL};
    for (size_t k = 0; json_is_object(o) && keys[k]; k++)
        (void)json_object_del(o, keys[k]);
    if (json_is_object(json_object_get(o, "job")))
        drop_volatile(json_object_get(o, "job"));
}

static char *snapshot(void)
{
    const char *paths[] = {
        "/api/v1/tenants/own",
        "/api/v1/tenants/susp",
        "/api/v1/tenants/own/projects/proj",
        "/api/v1/tenants/own/quota",
        "/api/v1/tenants/own/projects/proj/quota",
        "/api/v1/tenants/own/members",
        "/api/v1/tenants/susp/members",
        fmt("/api/v1/tenants/own/jobs/%s", own.job),
        fmt("/api/v1/tenants/own/sessions/%s", own.session),
        fmt("/api/v1/tenants/susp/sessions/%s", susp.session),
        fmt("/api/v1/tenants/own/images/%s", own.image),
        fmt("/api/v1/tenants/susp/images/%s", susp.image),
        "/api/v1/users/" SWEEP_USER,
        fmt("/api/v1/invoices/%s", own.invoice),
        fmt("/api/v1/invoices/%s", susp.invoice),
        fmt("/api/v1/approvals/%s", approval_id),
        fmt("/api/v1/tenants/own/allocation-requests/%s", own.alloc),
        fmt("/api/v1/tenants/susp/allocation-requests/%s", susp.alloc),
        "/api/v1/tenants?limit=1000",
        "/api/v1/users?limit=1000",
        "/api/v1/prices",
        "/api/v1/registries",
        "/api/v1/clusters/local/gpu-faults",
        "/api/v1/tenants/own/projects?limit=1000",
        "/api/v1/approvals?limit=1000",
    };
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);
    ck_assert_ptr_nonnull(out);
    for (size_t i = 0; i < N(paths); i++) {
        struct http_res r;
        long st = reqj("GET", paths[i], harness_srv.admin_token, NULL, &r);
        if (strstr(paths[i], "/jobs/") || strstr(paths[i], "/sessions/"))
            drop_volatile(r.json);
        char *text = r.json ? json_dumps(r.json, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
        char *line = NULL;
        int w = asprintf(&line, "%s %ld %s\n", paths[i], st, text ? text : "(no JSON)");
        free(text);
        http_res_free(&r);
        ck_assert_int_gt(w, 0);
        while (len + (size_t)w + 1 > cap) {
            cap *= 2;
            out = realloc(out, cap);
            ck_assert_ptr_nonnull(out);
        }
        memcpy(out + len, line, (size_t)w + 1);
        len += (size_t)w;
        free(line);
    }
    return out;
}

static void check_unchanged(const char *before)
{
    char *after = snapshot();
    if (strcmp(before, after) != 0) {
        /* name the first line that differs */
        const char *a = before, *b = after;
        while (*a && *a == *b)
            a++, b++;
        while (a > before && a[-1] != '\n')
            a--;
        note("after the refusals the admin reads something else:\n   before: %.400s", a);
    }
    free(after);
}

/* ---- the tests ----------------------------------------------------------------------- */

static bool has_tenant(const struct route *rt)
{
    return strstr(rt->pattern, "{tenant}") != NULL;
}

/* The short lists above and the table's flags agree; the table keeps API.md's "Roles". */
START_TEST(lists_match_the_route_table)
{
    char key[300];
    for (size_t i = 0; i < routes_count; i++) {
        const struct route *rt = &routes[i];
        route_key(rt, key, sizeof key);
        bool pub = (rt->flags & RF_PUBLIC) != 0;
        if (pub != listed(public_routes, N(public_routes), key))
            note("%s: RF_PUBLIC is %s, but the sweep's public_routes %s it", key,
                 pub ? "set" : "not set", pub ? "lacks" : "lists");
        bool opt = (rt->flags & RF_OPTIONAL_AUTH) != 0;
        if (opt != listed(optional_auth_routes, N(optional_auth_routes), key))
            note("%s: RF_OPTIONAL_AUTH and optional_auth_routes disagree", key);
        bool any = (rt->flags & RF_ANY_USER) != 0;
        if (any != listed(any_user_routes, N(any_user_routes), key))
            note("%s: RF_ANY_USER and any_user_routes disagree", key);
        bool free_ = !pub && rt->scope == 0;
        if (free_ != listed(scope_free_routes, N(scope_free_routes), key))
            note("%s: a token scope of %s, but scope_free_routes %s it", key,
                 rt->scope ? "its own" : "none", free_ ? "lacks" : "lists");
        if (pub)
            continue;
        /* API.md, Roles: an auditor and a viewer change nothing; finance changes only
         * prices and invoices */
        bool read = strcmp(rt->method, "GET") == 0;
        if ((rt->global_roles & GR_AUDITOR) && !read)
            note("%s: lets auditors change something", key);
        if (rt->tenant_role == TR_VIEWER && !read)
            note("%s: lets viewers change something", key);
        if ((rt->global_roles & GR_FINANCE) && !read &&
            strncmp(rt->pattern, "/api/v1/prices", 14) != 0 &&
            strncmp(rt->pattern, "/api/v1/invoices", 16) != 0)
            note("%s: lets finance change something other than prices and invoices", key);
        if (rt->tenant_role != TR_NONE && !has_tenant(rt))
            note("%s: a minimum tenant role on a route without {tenant}", key);
        if (!rt->global_roles && rt->tenant_role == TR_NONE && !any)
            note("%s: nobody may call it", key);
    }
    finish();
}
END_TEST

/* What the lists (not the flags: a route is listed on purpose) say of rt. */
static bool route_listed(const char *const *list, size_t n, const struct route *rt)
{
    char key[300];
    route_key(rt, key, sizeof key);
    return listed(list, n, key);
}
#define IS_PUBLIC(rt)   route_listed(public_routes, N(public_routes), rt)
#define IS_OPTIONAL(rt) route_listed(optional_auth_routes, N(optional_auth_routes), rt)
#define IS_ANY_USER(rt) route_listed(any_user_routes, N(any_user_routes), rt)

/* A column of refusals: one credential on every route of tenant t. */
struct column {
    const char *prefix; /* of the request ids; the audit check looks them up */
    const char *label;
    const char *bearer;
    const struct tn *t;
    long want; /* 401 or 403 */
    /* only routes with {tenant} are refused; the others are the user's own business, where
     * nothing of t may show */
    bool tenant_routes_only;
};

/*
 * Send col's credential to every route: refused ones must answer col->want,
 * public ones anything but a refusal or a failure. Routes with optional
 * authentication (logout) go last, as a logout that wrongly took the
 * credential would end it for the rest; they must answer 204 and, like
 * every refusal, have done nothing (their ids are "lo<prefix>-n").
 * Returns the number of refusals sent.
 */
static int sweep_column(const struct column *col)
{
    char what[600], lo[32];
    int refused = 0;
    snprintf(lo, sizeof lo, "lo%s", col->prefix);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < routes_count; i++) {
            const struct route *rt = &routes[i];
            struct http_res r;
            if (IS_OPTIONAL(rt) != (pass == 1))
                continue;
            if (pass == 1) {
                if (col->tenant_routes_only)
                    continue; /* logout would end the session this column goes on with */
                send_route(lo, col->bearer, rt, col->t, &r, what, sizeof what, col->label);
                if (r.status != 204)
                    note("%s: expected 204, got %ld", what, r.status);
            } else if (IS_PUBLIC(rt) || (col->tenant_routes_only && !has_tenant(rt))) {
                send_route("ok", col->bearer, rt, col->t, &r, what, sizeof what, col->label);
                if (r.status >= 500 || r.status == 0 ||
                    (IS_PUBLIC(rt) && (r.status == 401 || r.status == 403)))
                    note("%s: answered %ld", what, r.status);
                /* a refusal may repeat the id of its path; an answer shows nothing of t */
                const char *mine[] = {col->t->id, col->t->job, col->t->session, col->t->image,
                                      col->t->invoice};
                for (size_t k = 0; !IS_PUBLIC(rt) && r.body && r.status < 300 && k < N(mine); k++)
                    if (mine[k][0] && strstr(r.body, mine[k]))
                        note("%s: answered %ld with %s of tenant %s", what, r.status, mine[k],
                             col->t->slug);
            } else {
                send_route(col->prefix, col->bearer, rt, col->t, &r, what, sizeof what, col->label);
                check_refusal(what, &r, col->want);
                refused++;
            }
            http_res_free(&r);
        }
    }
    return refused;
}

/* Each refused credential on every route: 401. */
START_TEST(refused_credentials_get_401)
{
    char *before = snapshot();
    int refused = 0;
    for (int c = 0; c < NCREDS; c++) {
        const struct column col = {"sw401", creds[c].label, creds[c].bearer, &own, 401, false};
        refused += sweep_column(&col);
    }
    check_audit("sw401", refused);
    check_audit("losw401", 0);
    check_unchanged(before);
    free(before);
    finish();
}
END_TEST

/*
 * The suspended tenant: a token bound to it is refused everywhere (403); its
 * admin's JWT and unbound token on every route of the tenant, and elsewhere
 * they see nothing of it.
 */
START_TEST(suspended_tenant_gets_403)
{
    char *before = snapshot();
    const struct column cols[] = {
        {"swsusp", "a token bound to the suspended tenant", susp_bound, &susp, 403, false},
        {"swsusp", "the suspended tenant's admin's JWT", susp_jwt, &susp, 403, true},
        {"swsusp", "the suspended tenant's admin's unbound token", susp_unbound, &susp, 403, true},
    };
    int refused = 0;
    for (size_t c = 0; c < N(cols); c++)
        refused += sweep_column(&cols[c]);
    check_audit("swsusp", refused);
    check_audit("loswsusp", 0);
    check_unchanged(before);
    free(before);
    finish();
}
END_TEST

/*
 * Every role on every route of tenant "own": where the route's columns refuse
 * the role, 403, or 404 where it cannot see the tenant. Reads it may make must
 * neither ask for credentials nor fail; the rest is the matrix's.
 */
START_TEST(roles_the_table_refuses_are_refused)
{
    char *before = snapshot();
    char what[600], label[64];
    int refused = 0;
    for (size_t a = 0; a < N(role_actors); a++) {
        const struct role_actor *ra = &role_actors[a];
        snprintf(label, sizeof label, "the JWT of %s", ra->user);
        for (size_t i = 0; i < routes_count; i++) {
            const struct route *rt = &routes[i];
            if (IS_PUBLIC(rt) || IS_OPTIONAL(rt))
                continue;
            bool tenant = has_tenant(rt);
            bool visible = !tenant || ra->global || ra->own_role != TR_NONE;
            bool allowed =
                (ra->global & rt->global_roles) || IS_ANY_USER(rt) ||
                (tenant && rt->tenant_role != TR_NONE && ra->own_role >= rt->tenant_role);
            if (visible && allowed && strcmp(rt->method, "GET") != 0)
                continue; /* a write it may make: the matrix's */
            struct http_res r;
            if (visible && allowed) {
                send_route("ok", ra->jwt, rt, &own, &r, what, sizeof what, label);
                if (r.status == 401 || r.status >= 500 || r.status == 0)
                    note("%s: answered %ld", what, r.status);
            } else {
                send_route("swrole", ra->jwt, rt, &own, &r, what, sizeof what, label);
                check_refusal(what, &r, visible ? 403 : 404);
                refused++;
            }
            http_res_free(&r);
        }
    }
    check_audit("swrole", refused);
    check_unchanged(before);
    free(before);
    finish();
}
END_TEST

/*
 * The platform admin's token without the route's scope: 403 naming it. Then
 * (the last test: these act) with exactly that scope, or any one scope where
 * the route needs none: not 401 or 403.
 */
START_TEST(tokens_need_the_route_scope)
{
    char *before = snapshot();
    char what[600], label[128];
    int refused = 0;
    /* tokens of machines (a node agent, Alertmanager) reach none of the scope-free routes */
    const unsigned machine[] = {SC_AUDIT_INGEST, SC_GPU_FAULTS};
    for (size_t i = 0; i < routes_count; i++) {
        const struct route *rt = &routes[i];
        if (IS_PUBLIC(rt) || IS_OPTIONAL(rt) ||
            !route_listed(scope_free_routes, N(scope_free_routes), rt))
            continue;
        for (size_t m = 0; m < N(machine); m++) {
            const struct scope_tokens *mt = tokens_for(machine[m]);
            ck_assert_ptr_nonnull(mt);
            char *name = scopes_text(machine[m]);
            snprintf(label, sizeof label, "the admin's token with only %s", name);
            free(name);
            struct http_res r;
            send_route("swscope", mt->only, rt, &own, &r, what, sizeof what, label);
            check_refusal(what, &r, 403);
            http_res_free(&r);
            refused++;
        }
    }
    for (size_t i = 0; i < routes_count; i++) {
        const struct route *rt = &routes[i];
        if (IS_PUBLIC(rt) || route_listed(scope_free_routes, N(scope_free_routes), rt))
            continue;
        const struct scope_tokens *st = tokens_for(rt->scope);
        if (!st) {
            note("%s %s: no token scope, and not in scope_free_routes", rt->method, rt->pattern);
            continue;
        }
        char *name = scopes_text(rt->scope);
        snprintf(label, sizeof label, "the admin's token lacking %s", name);
        struct http_res r;
        send_route("swscope", st->lacking, rt, &own, &r, what, sizeof what, label);
        check_refusal(what, &r, 403);
        const char *detail = json_string_value(json_object_get(r.json, "detail"));
        json_t *names = auth_scopes_json(rt->scope);
        const char *first = json_string_value(json_array_get(names, 0));
        if (r.status == 403 && (!detail || !first || !strstr(detail, first)))
            note("%s: the 403 does not name the scope: %s", what, detail ? detail : "");
        json_decref(names);
        free(name);
        http_res_free(&r);
        refused++;
    }
    check_audit("swscope", refused);
    check_unchanged(before);
    free(before);

    const struct scope_tokens *any = tokens_for(SC_JOBS_READ);
    ck_assert_ptr_nonnull(any);
    for (size_t i = 0; i < routes_count; i++) {
        const struct route *rt = &routes[i];
        if (IS_PUBLIC(rt))
            continue;
        const struct scope_tokens *st = rt->scope ? tokens_for(rt->scope) : any;
        char *name = scopes_text(rt->scope ? rt->scope : SC_JOBS_READ);
        snprintf(label, sizeof label, "the admin's token with only %s", name);
        free(name);
        struct http_res r;
        send_route("ok", st->only, rt, &own, &r, what, sizeof what, label);
        check_passed(what, &r);
        http_res_free(&r);
    }
    finish();
}
END_TEST

int main(void)
{
    harness_require_pg();
    /* one worker thread: the second use of a credential meets the actor cache for sure */
    static const char *const env[] = {"AIDC_THREADS=1", NULL};
    harness_setup("access_sweep", env);
    setup_tenants();
    setup_users();
    setup_credentials();

    Suite *s = suite_create("access_sweep");
    TCase *tc = tcase_create("sweep");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, lists_match_the_route_table);
    tcase_add_test(tc, refused_credentials_get_401);
    tcase_add_test(tc, suspended_tenant_gets_403);
    tcase_add_test(tc, roles_the_table_refuses_are_refused);
    tcase_add_test(tc, tokens_need_the_route_scope); /* last: its second half acts */
    suite_add_tcase(s, tc);
    int failed = suite_run(s);
    harness_teardown();
    return failed;
}
