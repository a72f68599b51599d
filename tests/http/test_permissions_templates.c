/*
 * test_permissions_templates.c - the permission matrix of job templates
 * (docs/templates.md): every actor of tests/support/permfixture.h against the
 * routes that split_routes (permissions_fixture.h) gives to this program. These
 * rows follow test_permissions_matrix.c's conventions (expectations written by
 * hand from the route table; another tenant's answer 404; refusals are
 * problem+json).
 *
 * Platform templates: every signed-in caller reads them (jobs:read); only
 * platform admins write them (the admin scope: the own-admin's admin token is
 * no platform admin). Tenant templates: the tenant's readers (and finance,
 * auditors) read them; its admins and platform admins write them, with
 * jobs:write, which none of the fixture's tokens holds (the scope check comes
 * before the tenant's). Every cell that needs a template gets a new one (made
 * by the admin); what a 2xx did is checked: the template made, listed, read,
 * changed, deleted.
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

enum kind {
    K_CREATE,
    K_LIST,
    K_GET,
    K_UPDATE,
    K_DELETE,
    K_TCREATE,
    K_TLIST,
    K_TGET,
    K_TUPDATE,
    K_TDELETE
};

/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                   ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    {"POST", "/api/v1/templates", K_CREATE,
        {201, 201, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/templates", K_LIST,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200}, {0}},
    {"GET", "/api/v1/templates/{name}", K_GET,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 200, 200, 200, 200, 200}, {0}},
    {"PUT", "/api/v1/templates/{name}", K_UPDATE,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"DELETE", "/api/v1/templates/{name}", K_DELETE,
        {204, 204, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"POST", "/api/v1/tenants/{tenant}/templates", K_TCREATE,
        {201, 201, 403, 403, 201, 403, 403, 404, 404, 401, 403, 403, 403, 403, 201},
        {201, 201, 403, 403, 404, 404, 404, 201, 404, 401, 403, 403, 403, 403, 404}},
    {"GET", "/api/v1/tenants/{tenant}/templates", K_TLIST,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"GET", "/api/v1/tenants/{tenant}/templates/{name}", K_TGET,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"PUT", "/api/v1/tenants/{tenant}/templates/{name}", K_TUPDATE,
        {200, 200, 403, 403, 200, 403, 403, 404, 404, 401, 403, 403, 403, 403, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 403, 403, 403, 403, 404}},
    {"DELETE", "/api/v1/tenants/{tenant}/templates/{name}", K_TDELETE,
        {204, 204, 403, 403, 204, 403, 403, 404, 404, 401, 403, 403, 403, 403, 204},
        {204, 204, 403, 403, 404, 404, 404, 204, 404, 401, 403, 403, 403, 403, 404}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

/* A template's name for the cell: its tag, lower-cased, as a slug. */
static void name_of(const struct permrun_cell *c, char *out, size_t n)
{
    size_t k = 0;
    out[k++] = 't';
    for (const char *p = c->tag; *p && k + 1 < n && k < 60; p++) {
        char ch = *p;
        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
            ch = '-';
        out[k++] = ch;
    }
    out[k] = '\0';
}

static void prep(struct permrun_cell *c)
{
    char name[64], base[120], b[200];
    name_of(c, name, sizeof name);
    bool tenant = c->r->kind >= K_TCREATE;
    int kind = tenant ? c->r->kind - K_TCREATE : c->r->kind;
    if (tenant)
        snprintf(base, sizeof base, "/api/v1/tenants/%s/templates", tenants[c->t].slug);
    else
        snprintf(base, sizeof base, "/api/v1/templates");
    snprintf(c->check, sizeof c->check, "%s/%s", base, name);
    snprintf(b, sizeof b, "{\"name\":\"%s\",\"description\":\"first\",\"script\":\"echo hi\"}",
             name);
    if (kind == K_CREATE) {
        snprintf(c->path, sizeof c->path, "%s", base);
        snprintf(c->body, sizeof c->body, "%s", b);
        return;
    }
    setup_request("POST", base, b, 201, NULL);
    if (kind == K_LIST) {
        snprintf(c->path, sizeof c->path, "%s?limit=1000", base);
        return;
    }
    if (kind == K_UPDATE)
        snprintf(c->body, sizeof c->body, "{\"description\":\"changed\",\"script\":\"echo hi\"}");
    snprintf(c->path, sizeof c->path, "%s", c->check);
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    struct http_res r;
    long st = adm("GET", c->check, NULL, &r);
    const char *desc = st == 200 ? jstr(r.json, "description") : NULL;
    const char *name = strrchr(c->check, '/') + 1;
    int kind = c->r->kind >= K_TCREATE ? c->r->kind - K_TCREATE : c->r->kind;
    switch ((enum kind)kind) {
    case K_CREATE:
        if ((st == 200) != is_2xx(got))
            note("%s: answered %ld, and the template %s", c->what, got,
                 st == 200 ? "exists" : "does not exist");
        break;
    case K_LIST:
        if (got == 200 && !items_have(res, "name", name))
            note("%s: 200 does not list the template", c->what);
        break;
    case K_GET:
        if (got == 200 && (!jstr(res->json, "name") || strcmp(jstr(res->json, "name"), name) != 0))
            note("%s: 200 is not the template: %s", c->what, res->body ? res->body : "");
        break;
    case K_UPDATE:
        if (is_2xx(got) != (desc && strcmp(desc, "changed") == 0))
            note("%s: answered %ld, and the description is %s", c->what, got,
                 desc ? desc : "(none)");
        break;
    case K_DELETE:
        if (is_2xx(got) != (st == 404))
            note("%s: answered %ld, and reading it answers %ld", c->what, got, st);
        break;
    default:
        break;
    }
    http_res_free(&r);
}

static const char *column(const struct permrun_cell *c)
{
    if (c->r->kind < K_TCREATE)
        return "platform-wide";
    return c->t == 0 ? "own tenant" : "other tenant";
}

static const struct permrun_matrix this_matrix = {
    .file = TEMPLATES_ROWS,
    .tag = "tp",
    .rows = rows,
    .nrows = NROWS,
    .split = split_routes,
    .nsplit = NSPLIT_ROUTES,
    .prep = prep,
    .verify = verify,
    .column = column,
};

int main(void)
{
    return permrun_main("permissions_templates", &this_matrix, NULL, NULL);
}
