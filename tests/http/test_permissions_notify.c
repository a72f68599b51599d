/*
 * test_permissions_notify.c - the permission matrix of notification
 * preferences and their delivery log (docs/notifications.md): every actor of
 * tests/support/permfixture.h against the routes that split_routes
 * (permissions_fixture.h) gives to this program. They are the caller's own,
 * like /me/sessions: every signed-in user, with the admin scope for a token;
 * a token bound to a tenant is refused (the preferences span the user's
 * tenants), and so is a cookie without the CSRF header on a write. What a 2xx
 * did is checked: the preferences saved are what the answer shows.
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

enum kind { K_GET, K_PUT, K_LOG };

/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                   ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    {"GET", "/api/v1/me/notifications", K_GET,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 403, 200, 403, 200, 200}, {0}},
    {"PUT", "/api/v1/me/notifications", K_PUT,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 403, 200, 403, 403, 200}, {0}},
    {"GET", "/api/v1/me/notifications/deliveries", K_LOG,
        {200, 200, 200, 200, 200, 200, 200, 200, 200, 401, 403, 200, 403, 200, 200}, {0}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

/* A project name for the cell (2-63 of [a-z0-9-], a letter first): its tag, lower-cased. */
static void name_of(const struct permrun_cell *c, char *out, size_t n)
{
    size_t k = 0;
    out[k++] = 'p';
    for (const char *p = c->tag; *p && k + 1 < n && k < 40; p++) {
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
    char name[48];
    name_of(c, name, sizeof name);
    switch ((enum kind)c->r->kind) {
    case K_GET:
        snprintf(c->path, sizeof c->path, "/api/v1/me/notifications");
        break;
    case K_PUT:
        snprintf(c->path, sizeof c->path, "/api/v1/me/notifications");
        snprintf(c->body, sizeof c->body, "{\"events\":[\"job.ended\"],\"projects\":[\"%s\"]}",
                 name);
        snprintf(c->check, sizeof c->check, "%s", name);
        break;
    case K_LOG:
        snprintf(c->path, sizeof c->path, "/api/v1/me/notifications/deliveries?limit=10");
        break;
    }
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    switch ((enum kind)c->r->kind) {
    case K_GET:
        if (got == 200 && !json_is_array(json_object_get(res->json, "webhooks")))
            note("%s: 200 is not the preferences: %s", c->what, res->body ? res->body : "");
        break;
    case K_PUT: {
        const char *p =
            json_string_value(json_array_get(json_object_get(res->json, "projects"), 0));
        if (got == 200 && (!p || strcmp(p, c->check) != 0))
            note("%s: 200 did not save the projects: %s", c->what, res->body ? res->body : "");
        break;
    }
    case K_LOG:
        if (got == 200 && !json_is_array(json_object_get(res->json, "items")))
            note("%s: 200 is not a list: %s", c->what, res->body ? res->body : "");
        break;
    }
}

static const char *column(const struct permrun_cell *c)
{
    (void)c;
    return "the caller's own";
}

static const struct permrun_matrix this_matrix = {
    .file = NOTIFY_ROWS,
    .tag = "nt",
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
    return permrun_main("permissions_notify", &this_matrix, NULL, NULL);
}
