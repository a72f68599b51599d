/*
 * test_permissions_audit.c - the permission matrix of the audit routes and of
 * dual approval: every actor of tests/support/permfixture.h against the routes
 * that split_routes (permissions_fixture.h) gives to this program. These
 * rows belong to the matrix of test_permissions_matrix.c and follow its
 * conventions (expectations written by hand from docs API.md and the route
 * table; refusals are problem+json and a 404 carries neither the tenant's
 * name nor its id); they live in a program of their own so that neither
 * file outgrows the house limit. That program checks that every other route
 * has a row there; this one, that every route listed for it has one here.
 *
 * Commands sent by a node agent are one line each, unique to the cell.
 * Approvals to read and decide are grants of a role to a user of the cell,
 * asked by another platform admin than the deciding one (self-approval is
 * test_approvals.c's); the setup asks for one more, so that the list of
 * approvals is never empty.
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

/* ---- helpers and setup ---------------------------------------------------------------- */

/* As jwt: ask for method path body, which needs approval (202); the approval's id. */
static void approval_for(const char *jwt, const char *method, const char *path, const char *body,
                         char *id, size_t idn)
{
    struct http_res r;
    long st = reqj(method, path, jwt, body, &r);
    const char *v = jstr(json_object_get(r.json, "approval"), "id");
    ck_assert_msg(st == 202 && v, "asking for %s %s answered %ld: %s", method, path, st,
                  r.body ? r.body : "");
    snprintf(id, idn, "%s", v);
    http_res_free(&r);
}

/* An RFC 3339 timestamp of now, as a node agent sends it. */
static void now_rfc3339(char *out, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One pending approval before any cell: a role grant asked by the admin. */
static void audit_setup(void)
{
    make_user("asked", PW, NULL);
    setup_request("PATCH", "/api/v1/users/asked", "{\"roles\":[\"finance\"]}", 202, NULL);
}

/* ---- the rows ------------------------------------------------------------------------- */

enum kind {
    K_AUDIT_EVENTS,
    K_AUDIT_EXPORT,
    K_AUDIT_VERIFY,
    K_AUDIT_CHECKPOINTS,
    K_AUDIT_KEY,
    K_AUDIT_INGEST,
    K_AUDIT_COMMANDS,
    K_APPROVAL_LIST,
    K_APPROVAL_GET,
    K_APPROVAL_APPROVE,
    K_APPROVAL_REJECT,
};

/* As in test_permissions_matrix.c: own and other columns, all 0 where there is no other. */
/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                            ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    /* audit reads: platform admins and auditors, tokens with audit:read (none here has it) */
    {"GET", "/api/v1/audit/events", K_AUDIT_EVENTS,
        {200, 200, 403, 200, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/audit/events/export", K_AUDIT_EXPORT,
        {200, 200, 403, 200, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/audit/verify", K_AUDIT_VERIFY,
        {200, 200, 403, 200, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/audit/checkpoints", K_AUDIT_CHECKPOINTS,
        {200, 200, 403, 200, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/audit/public-key", K_AUDIT_KEY,
        {200, 200, 403, 200, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* node agents: platform_admin with audit:ingest (no token here has it; a cookie
     * without the portal header is refused before the role) */
    {"POST", "/api/v1/audit/commands", K_AUDIT_INGEST,
        {202, 202, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/audit/commands", K_AUDIT_COMMANDS,
        {200, 200, 403, 200, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* approvals: platform admins only (scope admin: the own-admin's admin token is no
     * platform admin, a tenant-bound token has no global role) */
    {"GET", "/api/v1/approvals", K_APPROVAL_LIST,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/approvals/{id}", K_APPROVAL_GET,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* a role grant asked by another platform admin than the approver */
    {"POST", "/api/v1/approvals/{id}/approve", K_APPROVAL_APPROVE,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* a role grant asked by the admin (who may withdraw it: 200) */
    {"POST", "/api/v1/approvals/{id}/reject", K_APPROVAL_REJECT,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

static void prep(struct permrun_cell *c)
{
    const char *tag = c->tag;
    c->body[0] = '\0';
    switch ((enum kind)c->r->kind) {
    case K_AUDIT_EVENTS:
        snprintf(c->path, sizeof c->path, "/api/v1/audit/events");
        break;
    case K_AUDIT_EXPORT:
        snprintf(c->path, sizeof c->path, "/api/v1/audit/events/export");
        break;
    case K_AUDIT_VERIFY:
        snprintf(c->path, sizeof c->path, "/api/v1/audit/verify");
        break;
    case K_AUDIT_CHECKPOINTS:
        snprintf(c->path, sizeof c->path, "/api/v1/audit/checkpoints");
        break;
    case K_AUDIT_KEY:
        snprintf(c->path, sizeof c->path, "/api/v1/audit/public-key");
        break;
    case K_AUDIT_INGEST: {
        char now[32];
        now_rfc3339(now, sizeof now);
        snprintf(c->path, sizeof c->path, "/api/v1/audit/commands");
        snprintf(c->body, sizeof c->body,
                 "{\"commands\":[{\"ts\":\"%s\",\"host\":\"n1\",\"user\":\"u\","
                 "\"command\":\"ls %s\"}]}",
                 now, tag);
        break;
    }
    case K_AUDIT_COMMANDS:
        snprintf(c->path, sizeof c->path, "/api/v1/audit/commands");
        break;
    case K_APPROVAL_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/approvals");
        break;
    case K_APPROVAL_GET:
    case K_APPROVAL_APPROVE:
    case K_APPROVAL_REJECT: {
        /* a grant of a role to a user of this cell; the approver must not be the asker */
        const char *asker = c->r->kind == K_APPROVAL_APPROVE && c->a == A_ADMIN
                                ? actors[A_PA].user_jwt
                                : harness_srv.admin_token;
        char id[64];
        make_user(tag, PW, NULL);
        approval_for(asker, "PATCH", fmt("/api/v1/users/%s", tag), "{\"roles\":[\"finance\"]}", id,
                     sizeof id);
        snprintf(c->check, sizeof c->check, "/api/v1/approvals/%.64s", id);
        snprintf(c->path, sizeof c->path, "/api/v1/approvals/%.64s%s", id,
                 c->r->kind == K_APPROVAL_GET       ? ""
                 : c->r->kind == K_APPROVAL_APPROVE ? "/approve"
                                                    : "/reject");
        if (c->r->kind == K_APPROVAL_REJECT)
            snprintf(c->body, sizeof c->body, "{\"reason\":\"matrix %s\"}", tag);
        break;
    }
    }
    if (c->r->kind == K_APPROVAL_APPROVE || c->r->kind == K_APPROVAL_REJECT) {
        char *v = adm_field(c->check, "state");
        snprintf(c->before, sizeof c->before, "%s", v ? v : "");
        free(v);
    }
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    switch ((enum kind)c->r->kind) {
    case K_AUDIT_EVENTS: /* the audit routes' own tests check what they answer */
    case K_AUDIT_EXPORT:
    case K_AUDIT_VERIFY:
    case K_AUDIT_CHECKPOINTS:
    case K_AUDIT_KEY:
    case K_AUDIT_INGEST:
    case K_AUDIT_COMMANDS:
        break;
    case K_APPROVAL_LIST:
        if (got == 200 && json_array_size(json_object_get(res->json, "items")) == 0)
            note("%s: 200 without items (there are some)", c->what);
        break;
    case K_APPROVAL_GET:
        if (got == 200 &&
            (!jstr(res->json, "state") || strcmp(jstr(res->json, "state"), "pending")))
            note("%s: 200 is not the pending approval: %s", c->what, res->body ? res->body : "");
        break;
    case K_APPROVAL_APPROVE:
    case K_APPROVAL_REJECT: {
        /* decided after a 2xx, else as before */
        const char *want = c->r->kind == K_APPROVAL_APPROVE ? "approved" : "rejected";
        if (strcmp(c->before, "pending") != 0)
            note("%s: the approval was %s before, not pending", c->what, c->before);
        check_changed(c, got, c->check, "state", want);
        break;
    }
    }
}

static const struct permrun_matrix this_matrix = {
    .file = AUDIT_ROWS,
    .tag = "au",
    .rows = rows,
    .nrows = NROWS,
    .split = split_routes,
    .nsplit = NSPLIT_ROUTES,
    .prep = prep,
    .verify = verify,
};

int main(void)
{
    return permrun_main("permissions_audit", &this_matrix, audit_setup, NULL);
}
