/*
 * test_permissions_billing.c - the permission matrix of usage, prices,
 * invoices and job checkpoints: every actor of tests/support/permfixture.h against
 * the routes that split_routes (permissions_fixture.h) gives to this
 * program, on its own tenant and on another one. These rows belong to the
 * matrix of test_permissions_matrix.c and follow its conventions
 * (expectations written by hand from docs/billing.md and the route table;
 * objects of another tenant answer 404; refusals are problem+json and a 404
 * carries neither the tenant's name nor its id); they live in a program of
 * their own so that neither file outgrows the house limit. That program checks that every
 * other route has a row there; this one, that every route listed for it has
 * one here.
 *
 * The setup adds, through dual approval, a default price and one price each
 * for "own" and "other"; last month's invoices of "own" and "other" (no
 * usage then: drafts without lines); and this month's draft of a tenant
 * "quiet" without jobs, which cannot be finalized before the month ends (a
 * permitted finalize answers 409). Prices asked for in a cell are unique to
 * it and only wait for approval (202), so nothing is priced; an invoice
 * generated in a cell is this month's of a tenant made for that cell, which
 * has no usage (201, no lines). A checkpoint is reported for the admin's
 * finished job of the setup: a permitted request answers 409 (only a running
 * job checkpoints).
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
#include <time.h>

#define DEFAULT_PRICE "10.00"
#define QUIET_TENANT  "quiet"

static const char *const tenant_price[2] = {"8.00", "9.00"}; /* own's and other's own prices */
static char period_now[8], period_last[8];                   /* YYYY-MM, UTC */
static char last_invoice[2][64]; /* last month's invoices of own and other */
static char quiet_draft[64];     /* this month's draft of QUIET_TENANT */

/* ---- setup ---------------------------------------------------------------------------- */

static void periods(void)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(period_now, sizeof period_now, "%Y-%m", &tm);
    tm.tm_mday = 1; /* the first of last month: timegm carries a month before January over */
    tm.tm_mon -= 1;
    t = timegm(&tm);
    gmtime_r(&t, &tm);
    strftime(period_last, sizeof period_last, "%Y-%m", &tm);
}

/* As the admin, approved by the second platform admin: a price in effect since 2020. */
static void approved_price(const char *tenant, const char *unit_price)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"resource\":\"gpu:a100\",\"unit_price\":\"%s\",\"currency\":\"CNY\","
             "\"effective_from\":\"2020-01-01T00:00:00Z\"%s%s%s}",
             unit_price, tenant ? ",\"tenant\":\"" : "", tenant ? tenant : "", tenant ? "\"" : "");
    struct http_res r;
    setup_request("POST", "/api/v1/prices", body, 202, &r);
    const char *id = jstr(json_object_get(r.json, "approval"), "id");
    char path[128];
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", id ? id : "");
    http_res_free(&r);
    struct http_res a;
    long st = reqj("POST", path, actors[A_PA].user_jwt, NULL, &a);
    json_t *result = json_object_get(a.json, "result");
    if (st != 200 || json_integer_value(json_object_get(result, "status")) != 201) {
        fprintf(stderr, "test setup: approving the price %s answered %ld: %s\n", unit_price, st,
                a.body ? a.body : "");
        exit(1);
    }
    http_res_free(&a);
}

/* As the admin: the draft of tenant for period (it must have no usage then); its id. */
static void draft(const char *tenant, const char *period, char *id, size_t n)
{
    char body[128];
    snprintf(body, sizeof body, "{\"tenant\":\"%s\",\"period\":\"%s\"}", tenant, period);
    struct http_res r;
    setup_request("POST", "/api/v1/invoices", body, 201, &r);
    snprintf(id, n, "%s", jstr(r.json, "id") ? jstr(r.json, "id") : "");
    http_res_free(&r);
}

static void billing_setup(void)
{
    /* the visibility expected below rests on these memberships */
    if (!is_member(0, actors[A_VIEW].user) || !is_member(1, actors[A_FOREIGN].user)) {
        fprintf(stderr, "test setup: the fixture's memberships are not as expected\n");
        exit(1);
    }
    periods();
    approved_price(NULL, DEFAULT_PRICE);
    for (int t = 0; t < 2; t++) {
        approved_price(tenants[t].slug, tenant_price[t]);
        draft(tenants[t].slug, period_last, last_invoice[t], sizeof last_invoice[t]);
    }
    make_tenant(QUIET_TENANT);
    draft(QUIET_TENANT, period_now, quiet_draft, sizeof quiet_draft);
}

/* ---- the rows ------------------------------------------------------------------------- */

enum kind {
    K_CHECKPOINT,
    K_USAGE,
    K_USAGE_JOBS,
    K_USAGE_PLATFORM,
    K_USAGE_PLATFORM_JOBS,
    K_UTILIZATION,
    K_PRICE_LIST,
    K_PRICE_CREATE,
    K_INVOICE_CREATE,
    K_INVOICE_LIST,
    K_INVOICE_GET,
    K_INVOICE_FINALIZE,
};

/* As in test_permissions_matrix.c: own and other columns, all 0 where there is no other. */
/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                            ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    /* the admin's finished job: the tenant's admins pass (409: not running), a member does
     * not see another's job (404); no token has jobs:write, and a cookie without the
     * portal header may not write */
    {"POST", "/api/v1/tenants/{tenant}/jobs/{id}/checkpoint", K_CHECKPOINT,
        {409, 409, 403, 403, 409, 404, 403, 404, 404, 401, 403, 403, 403, 403, 409},
        {409, 409, 403, 403, 404, 404, 404, 409, 404, 401, 403, 403, 403, 403, 404}},
    /* usage: the tenant's viewers and up, finance, platform admins; no token has usage:read */
    {"GET", "/api/v1/tenants/{tenant}/usage", K_USAGE,
        {200, 200, 200, 403, 200, 200, 200, 404, 404, 401, 403, 403, 403, 200, 200},
        {200, 200, 200, 403, 404, 404, 404, 200, 404, 401, 403, 403, 403, 404, 404}},
    {"GET", "/api/v1/tenants/{tenant}/usage/jobs", K_USAGE_JOBS,
        {200, 200, 200, 403, 200, 200, 200, 404, 404, 401, 403, 403, 403, 200, 200},
        {200, 200, 200, 403, 404, 404, 404, 200, 404, 401, 403, 403, 403, 404, 404}},
    /* platform-wide usage: finance and platform admins */
    {"GET", "/api/v1/usage", K_USAGE_PLATFORM,
        {200, 200, 200, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/usage/jobs", K_USAGE_PLATFORM_JOBS,
        {200, 200, 200, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/usage/utilization", K_UTILIZATION,
        {200, 200, 200, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* any user; what each sees is checked in verify() */
    {"GET", "/api/v1/prices", K_PRICE_LIST,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 403, 403, 403, 200, 200}, {0}},
    /* finance and platform admins, through dual approval (202) */
    {"POST", "/api/v1/prices", K_PRICE_CREATE,
        {202, 202, 202, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"POST", "/api/v1/invoices", K_INVOICE_CREATE,
        {201, 201, 201, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/invoices", K_INVOICE_LIST,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 403, 403, 403, 200, 200}, {0}},
    /* own: last month's invoice of own; other: of other. Finance, platform admins and the
     * tenant's admins read it; for anyone else it does not exist */
    {"GET", "/api/v1/invoices/{id}", K_INVOICE_GET,
        {200, 200, 200, 404, 200, 404, 404, 404, 404, 401, 403, 403, 403, 200, 200},
        {200, 200, 200, 404, 404, 404, 404, 200, 404, 401, 403, 403, 403, 404, 404}},
    /* this month's draft: the month has not ended (409) */
    {"POST", "/api/v1/invoices/{id}/finalize", K_INVOICE_FINALIZE,
        {409, 409, 409, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

/* Whether actor a acts as own's tenant admin: itself, its tokens and its sessions. */
static bool as_own_admin(int a)
{
    return actors[a].user && strcmp(actors[a].user, actors[A_TA].user) == 0;
}

/* Whether actor a sees tenant t's own prices (the tenant's readers, finance, admins; not
 * auditors, whose reading is the audit log's). */
static bool sees_price(int a, int t)
{
    if (a == A_ADMIN || a == A_PA || a == A_FIN)
        return true;
    return t == 0 ? a == A_MEM || a == A_VIEW || as_own_admin(a) : a == A_FOREIGN;
}

/* Whether actor a sees tenant t's invoices (the tenant's admins, finance, platform admins). */
static bool sees_invoice(int a, int t)
{
    if (a == A_ADMIN || a == A_PA || a == A_FIN)
        return true;
    return t == 0 ? as_own_admin(a) : a == A_FOREIGN;
}

/* K_PRICE_CREATE: the price cell c asks for, one no other cell asks for. */
static void unit_price_of(const struct permrun_cell *c, char *out, size_t n)
{
    snprintf(out, n, "1.%02d%02d", c->ri, c->a);
}

static void prep(struct permrun_cell *c)
{
    const struct tenant *tn = &tenants[c->t];
    const char *ts = tn->slug;
    char unit_price[32];
    c->body[0] = '\0';
    switch ((enum kind)c->r->kind) {
    case K_CHECKPOINT:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/jobs/%s/checkpoint", ts,
                 tn->done_job);
        snprintf(c->check, sizeof c->check, "/api/v1/tenants/%s/jobs/%s", ts, tn->done_job);
        break;
    case K_USAGE:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/usage?group_by=project,day", ts);
        break;
    case K_USAGE_JOBS:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/usage/jobs?limit=10", ts);
        break;
    case K_USAGE_PLATFORM:
        snprintf(c->path, sizeof c->path, "/api/v1/usage?group_by=tenant,project");
        break;
    case K_USAGE_PLATFORM_JOBS:
        snprintf(c->path, sizeof c->path, "/api/v1/usage/jobs");
        break;
    case K_UTILIZATION:
        snprintf(c->path, sizeof c->path, "/api/v1/usage/utilization?cluster=local");
        break;
    case K_PRICE_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/prices?limit=1000");
        break;
    case K_PRICE_CREATE:
        /* effective far ahead, at a price no other cell asks for */
        unit_price_of(c, unit_price, sizeof unit_price);
        snprintf(c->path, sizeof c->path, "/api/v1/prices");
        snprintf(c->body, sizeof c->body,
                 "{\"resource\":\"gpu:a100\",\"unit_price\":\"%s\",\"currency\":\"CNY\","
                 "\"effective_from\":\"2040-01-01T00:00:00Z\"}",
                 unit_price);
        break;
    case K_INVOICE_CREATE:
        make_tenant(c->tag);
        snprintf(c->path, sizeof c->path, "/api/v1/invoices");
        snprintf(c->body, sizeof c->body, "{\"tenant\":\"%s\",\"period\":\"%s\"}", c->tag,
                 period_now);
        snprintf(c->check, sizeof c->check, "/api/v1/invoices?tenant=%s", c->tag);
        break;
    case K_INVOICE_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/invoices?limit=1000");
        break;
    case K_INVOICE_GET:
        snprintf(c->path, sizeof c->path, "/api/v1/invoices/%s", last_invoice[c->t]);
        break;
    case K_INVOICE_FINALIZE:
        snprintf(c->path, sizeof c->path, "/api/v1/invoices/%s/finalize", quiet_draft);
        snprintf(c->check, sizeof c->check, "/api/v1/invoices/%s", quiet_draft);
        break;
    }
}

/* Whether the admin sees a pending approval, or a price, for this unit price. */
static bool price_asked(const char *unit_price, bool *priced)
{
    struct http_res r;
    bool asked = false;
    if (adm("GET", "/api/v1/approvals?state=pending&limit=1000", NULL, &r) == 200) {
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(r.json, "items"), i, it)
        {
            json_t *body = json_object_get(json_object_get(it, "operation"), "body");
            const char *v = jstr(body, "unit_price");
            asked |= v && strcmp(v, unit_price) == 0;
        }
    } else {
        note("GET /api/v1/approvals (check) answered %ld", r.status);
    }
    http_res_free(&r);
    *priced = false;
    if (adm("GET", "/api/v1/prices?resource=gpu:a100&limit=1000", NULL, &r) == 200)
        *priced = items_have(&r, "unit_price", unit_price);
    else
        note("GET /api/v1/prices (check) answered %ld", r.status);
    http_res_free(&r);
    return asked;
}

/* A read answered 200 must have this array. */
static void need_array(const struct permrun_cell *c, long got, const struct http_res *res,
                       const char *key)
{
    if (got == 200 && !json_is_array(json_object_get(res->json, key)))
        note("%s: 200 without %s: %s", c->what, key, res->body ? res->body : "");
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    const char *body = res->body ? res->body : "";
    switch ((enum kind)c->r->kind) {
    case K_CHECKPOINT: {
        if (got == 409 && !strstr(body, "only a running job checkpoints"))
            note("%s: 409 does not say why: %s", c->what, body);
        char *state = adm_field(c->check, "state");
        if (!state || strcmp(state, "succeeded") != 0)
            note("%s: the job is %s after it, not succeeded", c->what,
                 state ? state : "unreadable");
        free(state);
        break;
    }
    case K_USAGE:
    case K_USAGE_PLATFORM:
        need_array(c, got, res, "rows");
        if (got == 200 && json_array_size(json_object_get(res->json, "group_by")) != 2)
            note("%s: group_by is not the two keys asked for: %s", c->what, body);
        break;
    case K_USAGE_JOBS:
    case K_USAGE_PLATFORM_JOBS:
        need_array(c, got, res, "items");
        if (got == 200 && !jstr(res->json, "from"))
            note("%s: 200 without from: %s", c->what, body);
        break;
    case K_UTILIZATION:
        need_array(c, got, res, "hours");
        if (got == 200 && json_array_size(json_object_get(json_object_get(res->json, "heatmap"),
                                                          "utilization")) != 7)
            note("%s: the heat map has not 7 rows: %s", c->what, body);
        break;
    case K_PRICE_LIST:
        if (got != 200)
            break;
        if (!items_have(res, "unit_price", DEFAULT_PRICE))
            note("%s: the default price is not listed", c->what);
        for (int t = 0; t < 2; t++)
            if (items_have(res, "unit_price", tenant_price[t]) != sees_price(c->a, t))
                note("%s: tenant %s's price is %s", c->what, tenants[t].slug,
                     sees_price(c->a, t) ? "missing" : "listed");
        break;
    case K_PRICE_CREATE: {
        char unit_price[32];
        unit_price_of(c, unit_price, sizeof unit_price);
        bool priced;
        bool asked = price_asked(unit_price, &priced);
        if (asked != (got == 202))
            note("%s: answered %ld, and a pending approval for it %s", c->what, got,
                 asked ? "exists" : "does not exist");
        if (priced)
            note("%s: answered %ld, and the price exists without approval", c->what, got);
        if (got == 202 && !jstr(json_object_get(res->json, "approval"), "id"))
            note("%s: 202 without the approval: %s", c->what, body);
        break;
    }
    case K_INVOICE_CREATE: {
        bool there = list_has(harness_srv.admin_token, c->check, "tenant", c->tag);
        if (there != (got == 201))
            note("%s: answered %ld, and the invoice %s", c->what, got,
                 there ? "exists" : "does not exist");
        if (got == 201 &&
            (!jstr(res->json, "id") || json_array_size(json_object_get(res->json, "lines")) != 0))
            note("%s: 201 is not a draft without lines: %s", c->what, body);
        if (got == 201 && jstr(res->json, "id") &&
            adm_status(fmt("/api/v1/invoices/%s", jstr(res->json, "id"))) != 200)
            note("%s: 201, but the admin cannot read the invoice", c->what);
        break;
    }
    case K_INVOICE_LIST:
        if (got != 200)
            break;
        need_array(c, got, res, "items");
        for (int t = 0; t < 2; t++)
            if (items_have(res, "id", last_invoice[t]) != sees_invoice(c->a, t))
                note("%s: tenant %s's invoice is %s", c->what, tenants[t].slug,
                     sees_invoice(c->a, t) ? "missing" : "listed");
        break;
    case K_INVOICE_GET:
        if (got == 200 &&
            (!jstr(res->json, "id") || strcmp(jstr(res->json, "id"), last_invoice[c->t]) != 0))
            note("%s: 200 is not the invoice: %s", c->what, body);
        need_array(c, got, res, "lines");
        break;
    case K_INVOICE_FINALIZE: {
        if (got == 409 && !strstr(body, "has not ended"))
            note("%s: 409 does not say why: %s", c->what, body);
        char *state = adm_field(c->check, "state");
        if (!state || strcmp(state, got == 200 ? "final" : "draft") != 0)
            note("%s: answered %ld, and the invoice is %s", c->what, got,
                 state ? state : "unreadable");
        free(state);
        break;
    }
    }
}

static const struct permrun_matrix this_matrix = {
    .file = BILLING_ROWS,
    .tag = "b",
    .rows = rows,
    .nrows = NROWS,
    .split = split_routes,
    .nsplit = NSPLIT_ROUTES,
    .prep = prep,
    .verify = verify,
};

int main(void)
{
    return permrun_main("permissions_billing", &this_matrix, billing_setup, NULL);
}
