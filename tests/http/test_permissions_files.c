/*
 * test_permissions_files.c - the permission matrix of the files API and of a
 * job's outputs: every actor of tests/support/permfixture.h against the routes
 * that split_routes (permissions_fixture.h) gives to this program, on its own
 * tenant and on another one. These rows belong to the matrix of
 * test_permissions_matrix.c and follow its conventions (expectations written
 * by hand from the route table and docs/storage.md; objects of another tenant
 * answer 404; refusals are problem+json without the tenant's name or id).
 *
 * The cells use each tenant's project space, which its members and tenant
 * admins use and platform admins too; finance and auditors hold no role the
 * routes take (403), viewers neither (403). Reads are jobs:read, changes
 * jobs:write: the fixture's tokens hold only jobs:read (and admin), so they
 * read and are refused every change. A cell's upload and directory are new to
 * it; a cell's delete removes a file the admin uploaded for it. A job's
 * outputs are the admin's finished job's, read like its logs: its owner and
 * the admins.
 */
#include "server/router.h"

#include "tests/http/permissions_fixture.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/mismatch.h"
#include "tests/support/permfixture.h"
#include "tests/support/permrun.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

enum kind { K_FILE_READ, K_FILE_UPLOAD, K_FILE_MKDIR, K_FILE_DELETE, K_JOB_FILES };

/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                            ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    {"GET", "/api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", K_FILE_READ,
        {200, 200, 403, 403, 200, 200, 403, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
    {"PUT", "/api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", K_FILE_UPLOAD,
        {201, 201, 403, 403, 201, 201, 403, 404, 404, 401, 403, 403, 403, 403, 201},
        {201, 201, 403, 403, 404, 404, 404, 201, 404, 401, 403, 403, 403, 403, 404}},
    {"POST", "/api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", K_FILE_MKDIR,
        {201, 201, 403, 403, 201, 201, 403, 404, 404, 401, 403, 403, 403, 403, 201},
        {201, 201, 403, 403, 404, 404, 404, 201, 404, 401, 403, 403, 403, 403, 404}},
    {"DELETE", "/api/v1/tenants/{tenant}/files/{kind}/{name}/{path*}", K_FILE_DELETE,
        {204, 204, 403, 403, 204, 204, 403, 404, 404, 401, 403, 403, 403, 403, 204},
        {204, 204, 403, 403, 404, 404, 404, 204, 404, 401, 403, 403, 403, 403, 404}},
    /* the admin's job: its outputs are its owner's and the admins' (a member does not see it) */
    {"GET", "/api/v1/tenants/{tenant}/jobs/{id}/files/{path*}", K_JOB_FILES,
        {200, 200, 403, 403, 200, 404, 403, 404, 404, 401, 200, 200, 200, 200, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 404, 404, 404, 404, 404}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

/* The column's project space: "/api/v1/tenants/<t>/files/projects/<p>". */
static const char *space(const struct permrun_cell *c)
{
    return fmt("/api/v1/tenants/%s/files/projects/%s", tenants[c->t].slug, tenants[c->t].project);
}

static void prep(struct permrun_cell *c)
{
    char base[200];
    snprintf(base, sizeof base, "%s", space(c));
    switch ((enum kind)c->r->kind) {
    case K_FILE_READ:
        snprintf(c->path, sizeof c->path, "%s/", base);
        break;
    case K_FILE_UPLOAD:
        snprintf(c->path, sizeof c->path, "%s/%s.txt", base, c->tag);
        snprintf(c->body, sizeof c->body, "{\"cell\":\"%s\"}", c->tag);
        snprintf(c->check, sizeof c->check, "%s/%s.txt", base, c->tag);
        break;
    case K_FILE_MKDIR:
        snprintf(c->path, sizeof c->path, "%s/%s?op=mkdir", base, c->tag);
        snprintf(c->check, sizeof c->check, "%s/%s", base, c->tag);
        break;
    case K_FILE_DELETE: {
        snprintf(c->path, sizeof c->path, "%s/%s.txt", base, c->tag);
        snprintf(c->check, sizeof c->check, "%s/%s.txt", base, c->tag);
        struct http_res r;
        long st = adm("PUT", c->path, "{\"for\":\"delete\"}", &r);
        http_res_free(&r);
        ck_assert_msg(st == 201, "uploading %s for the cell answered %ld", c->path, st);
        break;
    }
    case K_JOB_FILES:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/jobs/%s/files/stdout",
                 tenants[c->t].slug, tenants[c->t].done_job);
        break;
    }
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    const char *body = res->body ? res->body : "";
    switch ((enum kind)c->r->kind) {
    case K_FILE_READ:
        if (got == 200 && !json_is_array(json_object_get(res->json, "items")))
            note("%s: 200 without items: %s", c->what, body);
        break;
    case K_FILE_UPLOAD:
    case K_FILE_MKDIR:
        check_exists(c, got, c->check, true);
        break;
    case K_FILE_DELETE:
        check_exists(c, got, c->check, false);
        break;
    case K_JOB_FILES:
        if (got == 200 && !strstr(body, "hello"))
            note("%s: 200 without the job's output: %s", c->what, body);
        break;
    }
}

static const struct permrun_matrix this_matrix = {
    .file = FILES_ROWS,
    .tag = "fi",
    .rows = rows,
    .nrows = NROWS,
    .split = split_routes,
    .nsplit = NSPLIT_ROUTES,
    .prep = prep,
    .verify = verify,
};

int main(void)
{
    return permrun_main("permissions_files", &this_matrix, NULL, NULL);
}
