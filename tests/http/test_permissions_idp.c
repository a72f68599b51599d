/*
 * test_permissions_idp.c - the permission matrix of identity providers
 * (docs/identity.md): every actor of tests/support/permfixture.h against the
 * routes that split_routes (permissions_fixture.h) gives to this program.
 * Providers are platform-wide: platform admins with the admin scope only;
 * everyone else 403, nobody 401. Every cell that needs a provider gets a new
 * one (made by the admin); what a 2xx did is checked: the provider made,
 * listed, read, renamed for display, deleted. The public sign-in routes
 * (/auth/providers, /auth/oidc/...) are test_sso_oidc.c's.
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

enum kind { K_CREATE, K_LIST, K_GET, K_UPDATE, K_DELETE };

/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                   ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    {"POST", "/api/v1/identity-providers", K_CREATE,
        {201, 201, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/identity-providers", K_LIST,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/identity-providers/{name}", K_GET,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"PATCH", "/api/v1/identity-providers/{name}", K_UPDATE,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"DELETE", "/api/v1/identity-providers/{name}", K_DELETE,
        {204, 204, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

/* A provider's name for the cell (2-32 of [a-z0-9-]): its tag, lower-cased. */
static void name_of(const struct permrun_cell *c, char *out, size_t n)
{
    size_t k = 0;
    out[k++] = 'p';
    for (const char *p = c->tag; *p && k + 1 < n && k < 32; p++) {
        char ch = *p;
        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))
            out[k++] = ch;
        else
            out[k++] = '-';
    }
    out[k] = '\0';
}

static void body_of(const char *name, char *out, size_t n)
{
    snprintf(out, n,
             "{\"name\":\"%s\",\"kind\":\"oidc\",\"display_name\":\"%s\","
             "\"issuer\":\"https://idp.example.edu\",\"client_id\":\"aidc\","
             "\"client_secret_ref\":\"env:IDP_SECRET\"}",
             name, name);
}

static void prep(struct permrun_cell *c)
{
    char name[40], b[400];
    name_of(c, name, sizeof name);
    snprintf(c->check, sizeof c->check, "/api/v1/identity-providers/%s", name);
    if (c->r->kind == K_CREATE) {
        snprintf(c->path, sizeof c->path, "/api/v1/identity-providers");
        body_of(name, c->body, sizeof c->body);
        return;
    }
    body_of(name, b, sizeof b);
    setup_request("POST", "/api/v1/identity-providers", b, 201, NULL);
    switch ((enum kind)c->r->kind) {
    case K_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/identity-providers?limit=1000");
        break;
    case K_UPDATE:
        snprintf(c->body, sizeof c->body, "{\"display_name\":\"changed %s\"}", name);
        /* fall through */
    default:
        snprintf(c->path, sizeof c->path, "/api/v1/identity-providers/%s", name);
        break;
    }
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    struct http_res r;
    long st = adm("GET", c->check, NULL, &r);
    const char *display = st == 200 ? jstr(r.json, "display_name") : NULL;
    switch ((enum kind)c->r->kind) {
    case K_CREATE:
        if ((st == 200) != is_2xx(got))
            note("%s: answered %ld, and the provider %s", c->what, got,
                 st == 200 ? "exists" : "does not exist");
        break;
    case K_LIST:
        if (got == 200 &&
            !items_have(res, "name", c->check + strlen("/api/v1/identity-providers/")))
            note("%s: 200 does not list the provider", c->what);
        break;
    case K_GET:
        if (got == 200 &&
            (!jstr(res->json, "issuer") || jstr(res->json, "client_secret_ref") == NULL))
            note("%s: 200 is not the provider: %s", c->what, res->body ? res->body : "");
        break;
    case K_UPDATE:
        if (is_2xx(got) != (display && strncmp(display, "changed ", 8) == 0))
            note("%s: answered %ld, and the display name is %s", c->what, got,
                 display ? display : "(none)");
        break;
    case K_DELETE:
        if (is_2xx(got) != (st == 404))
            note("%s: answered %ld, and reading it answers %ld", c->what, got, st);
        break;
    }
    http_res_free(&r);
}

static const char *column(const struct permrun_cell *c)
{
    (void)c;
    return "platform-wide";
}

static const struct permrun_matrix this_matrix = {
    .file = IDP_ROWS,
    .tag = "ip",
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
    return permrun_main("permissions_idp", &this_matrix, NULL, NULL);
}
