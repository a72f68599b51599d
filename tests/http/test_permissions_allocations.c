/*
 * test_permissions_allocations.c - the permission matrix of allocation
 * requests (docs/allocations.md): every actor of tests/support/permfixture.h
 * against the routes that split_routes (permissions_fixture.h) gives to this
 * program, on its own tenant and on another one. The rows follow
 * test_permissions_matrix.c's conventions (expectations written by hand from
 * the route table and the handlers' rules; objects of another tenant answer
 * 404; refusals are problem+json without the tenant's name or id).
 *
 * The route table lets members ask (admin scope) and viewers, finance and
 * auditors read; the review (queue, approve, reject) is the platform
 * admins', the report the platform admins' and finance's (usage:read);
 * comments are open to any user and narrowed by the handler. Beyond the
 * table, the handlers' rules:
 *   - asking: a tenant admin, or the project's PI: the member is the PI of
 *     own's project "held" (setup), so it may; the viewer may not by the table;
 *   - commenting: the requester, the tenant's admins and platform admins
 *     (allocation.not_commenter for other readers; 404 where it is not visible).
 * Every cell that needs a request gets a new one: the reads and the
 * decisions one asked by the admin, the comments one asked by the column's
 * tenant admin (own: the tenant admin; other: its tenant admin). What a 2xx
 * did is checked: the request listed, approved, rejected, the comment in
 * the thread.
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

enum kind { K_CREATE, K_LIST, K_GET, K_QUEUE, K_REPORT, K_APPROVE, K_REJECT, K_COMMENT };

/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                            ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    /* as a project's create, but that the member is the project's PI */
    {"POST", "/api/v1/tenants/{tenant}/allocation-requests", K_CREATE,
        {201, 201, 403, 403, 201, 201, 403, 404, 404, 401, 403, 201, 201, 403, 201},
        {201, 201, 403, 403, 404, 404, 404, 201, 404, 401, 403, 404, 404, 403, 404}},
    {"GET", "/api/v1/tenants/{tenant}/allocation-requests", K_LIST,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"GET", "/api/v1/tenants/{tenant}/allocation-requests/{id}", K_GET,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"GET", "/api/v1/allocation-requests", K_QUEUE,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/allocation-requests/report", K_REPORT,
        {200, 200, 200, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"POST", "/api/v1/allocation-requests/{id}/approve", K_APPROVE,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"POST", "/api/v1/allocation-requests/{id}/reject", K_REJECT,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    /* own: the tenant admin's request (it, its tokens and cookie are the requester);
     * other: the foreign tenant admin's. Readers who are none of the three: 403 */
    {"POST", "/api/v1/allocation-requests/{id}/comments", K_COMMENT,
        {201, 201, 403, 403, 201, 403, 403, 404, 404, 401, 403, 201, 201, 403, 201},
        {201, 201, 403, 403, 404, 404, 404, 201, 404, 401, 403, 404, 404, 403, 404}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

/* today + offset days, UTC, YYYY-MM-DD, into out[11] */
static void day(int offset, char *out)
{
    time_t t = time(NULL) + (time_t)offset * 86400;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 11, "%Y-%m-%d", &tm);
}

static const char *requests_path(int t)
{
    return fmt("/api/v1/tenants/%s/allocation-requests", tenants[t].slug);
}

static void request_body(const char *tag, char *out, size_t n)
{
    char s[11], e[11];
    day(0, s);
    day(30, e);
    snprintf(out, n,
             "{\"project\":\"%s\",\"gpu_hours\":10,\"starts_on\":\"%s\",\"ends_on\":\"%s\","
             "\"justification\":\"%s\"}",
             HELD_PROJECT, s, e, tag);
}

/* As actor owner, a pending request of tenant t's "held" project; its id into id. */
static void new_request(int owner, int t, const char *tag, char *id, size_t idn)
{
    char b[300];
    request_body(tag, b, sizeof b);
    struct http_res r;
    long st = reqj("POST", requests_path(t), actors[owner].user_jwt, b, &r);
    ck_assert_msg(st == 201 && jstr(r.json, "id"), "asking as %s in %s answered %ld: %.300s",
                  actors[owner].label, tenants[t].slug, st, r.body ? r.body : "");
    snprintf(id, idn, "%s", jstr(r.json, "id"));
    http_res_free(&r);
}

static int owner_of(const struct permrun_cell *c)
{
    if (c->r->kind == K_COMMENT)
        return c->t ? A_FOREIGN : A_TA;
    return A_ADMIN;
}

static void prep(struct permrun_cell *c)
{
    char id[64];
    const char *base = requests_path(c->t);
    switch ((enum kind)c->r->kind) {
    case K_CREATE:
        snprintf(c->path, sizeof c->path, "%s", base);
        request_body(c->tag, c->body, sizeof c->body);
        snprintf(c->check, sizeof c->check, "%s?limit=1000", base);
        return;
    case K_QUEUE:
        snprintf(c->path, sizeof c->path, "/api/v1/allocation-requests?state=pending&limit=1000");
        return;
    case K_REPORT:
        snprintf(c->path, sizeof c->path, "/api/v1/allocation-requests/report?format=json");
        return;
    default:
        break;
    }
    new_request(owner_of(c), c->t, c->tag, id, sizeof id);
    snprintf(c->check, sizeof c->check, "%s/%s", base, id);
    switch ((enum kind)c->r->kind) {
    case K_LIST:
        snprintf(c->path, sizeof c->path, "%s?limit=1000", base);
        break;
    case K_GET:
        snprintf(c->path, sizeof c->path, "%s/%s", base, id);
        break;
    case K_APPROVE:
        snprintf(c->path, sizeof c->path, "/api/v1/allocation-requests/%s/approve", id);
        snprintf(c->body, sizeof c->body, "{}");
        snprintf(c->before, sizeof c->before, "pending");
        break;
    case K_REJECT:
        snprintf(c->path, sizeof c->path, "/api/v1/allocation-requests/%s/reject", id);
        snprintf(c->body, sizeof c->body, "{\"reason\":\"%s\"}", c->tag);
        snprintf(c->before, sizeof c->before, "pending");
        break;
    case K_COMMENT:
        snprintf(c->path, sizeof c->path, "/api/v1/allocation-requests/%s/comments", id);
        snprintf(c->body, sizeof c->body, "{\"text\":\"%s\"}", c->tag);
        break;
    default:
        break;
    }
}

/* The number of comments of the request at path, as the admin reads it (-1: unreadable). */
static long comments(const char *path)
{
    struct http_res r;
    long n = adm("GET", path, NULL, &r) == 200
                 ? (long)json_array_size(json_object_get(r.json, "comments"))
                 : -1;
    http_res_free(&r);
    return n;
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    switch ((enum kind)c->r->kind) {
    case K_CREATE: {
        bool there = list_has(harness_srv.admin_token, c->check, "justification", c->tag);
        if (there != is_2xx(got))
            note("%s: answered %ld, and the request %s", c->what, got,
                 there ? "exists" : "does not exist");
        break;
    }
    case K_LIST:
        if (got == 200 && !items_have(res, "justification", c->tag))
            note("%s: 200 does not list the request", c->what);
        break;
    case K_GET:
        if (got == 200 && (!jstr(res->json, "justification") ||
                           strcmp(jstr(res->json, "justification"), c->tag) != 0))
            note("%s: 200 is not the request: %s", c->what, res->body ? res->body : "");
        break;
    case K_QUEUE:
    case K_REPORT:
        if (got == 200 && !json_is_array(json_object_get(res->json, "items")))
            note("%s: 200 without items: %s", c->what, res->body ? res->body : "");
        break;
    case K_APPROVE:
        check_changed(c, got, c->check, "state", "approved");
        break;
    case K_REJECT:
        check_changed(c, got, c->check, "state", "rejected");
        break;
    case K_COMMENT: {
        long n = comments(c->check);
        if (n != (is_2xx(got) ? 1 : 0))
            note("%s: answered %ld, and the request has %ld comments", c->what, got, n);
        break;
    }
    }
}

static const char *column(const struct permrun_cell *c)
{
    if (c->r->kind == K_COMMENT)
        return fmt("tenant %s, %s's request", tenants[c->t].slug, actors[owner_of(c)].user);
    return c->t ? "tenant other" : "tenant own";
}

/* The member is the PI of own's "held" project: it may ask for its allocations. */
static void setup(void)
{
    setup_request("PATCH", fmt("/api/v1/tenants/%s/projects/%s", tenants[0].slug, HELD_PROJECT),
                  fmt("{\"pi\":\"%s\"}", actors[A_MEM].user), 200, NULL);
}

static const struct permrun_matrix this_matrix = {
    .file = ALLOCATIONS_ROWS,
    .tag = "al",
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
    return permrun_main("permissions_allocations", &this_matrix, setup, NULL);
}
