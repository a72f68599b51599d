/*
 * test_permissions_images.c - the permission matrix of container images and
 * registries: every actor of tests/support/permfixture.h against the routes that
 * split_routes (permissions_fixture.h) gives to this program, on its own
 * tenant and on another one. These rows belong to the matrix of
 * test_permissions_matrix.c and follow its conventions (expectations written
 * by hand from the route table; objects of another tenant answer 404;
 * refusals are problem+json and a 404 carries neither the tenant's name nor
 * its id); they live in a program of their own so that neither file outgrows
 * the house limit. That program checks that every other route has a row
 * there; this one, that every route listed for it has one here.
 *
 * None of the fixture's tokens has images:read or images:write, so every
 * token is refused on the image routes by its scope, before its tenant is
 * looked at; tokens with those scopes are checked beside the matrix. The
 * setup registers a registry "hub" (at a port nothing listens on: its syncs
 * fail at once and change nothing) and one image in each of "own" and
 * "other", which the reads look for. An image registered in a cell is new
 * to the cell (201); an image changed or deleted in a cell is registered for
 * it by a member of the tenant who is neither a tenant admin nor a platform
 * admin where there is one (own's member; other's admin), so that a 2xx of
 * that member shows the permission, and tenant and platform admins may
 * change anybody's. A registry created in a cell is new to it too, at a
 * loopback address of its own. That a member may not change an image
 * another user registered is checked beside the matrix.
 */
#include "server/router.h"

#include "lib/imgref.h"
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

#define REGISTRY "hub"
/* the body of an image registered by a token (name, digest) */
#define TOKEN_IMAGE                                                                                \
    "{\"repository\":\"own/tok-%s\",\"tag\":\"v1\",\"digest\":\"%s\",\"size_bytes\":1}"

static char base_image[2][64]; /* the setup's image of own and of other */

/* ---- helpers and setup ---------------------------------------------------------------- */

/* A digest of its own for n (64 decimal digits are lowercase hex too). */
static const char *digest_of(unsigned n)
{
    return fmt("sha256:%064u", n);
}

/* As jwt: register repository:v1 in tenant; 201 puts its id into id, else the status. */
static long register_image(const char *jwt, const char *tenant, const char *repository, unsigned n,
                           char *id, size_t idn)
{
    char body[400];
    snprintf(body, sizeof body,
             "{\"repository\":\"%s\",\"tag\":\"v1\",\"digest\":\"%s\",\"size_bytes\":%u,"
             "\"labels\":{\"framework\":\"pytorch\"}}",
             repository, digest_of(n), 1024 + n);
    struct http_res r;
    long st = reqj("POST", fmt("/api/v1/tenants/%s/images", tenant), jwt, body, &r);
    id[0] = '\0';
    if (st == 201 && jstr(r.json, "id"))
        snprintf(id, idn, "%s", jstr(r.json, "id"));
    else
        fprintf(stderr, "registering %s in %s answered %ld: %s\n", repository, tenant, st,
                r.body ? r.body : "");
    http_res_free(&r);
    return st;
}

/* The value of label key of the image at path as the admin reads it (malloc'd), or NULL. */
static char *image_label(const char *path, const char *key)
{
    struct http_res r;
    char *v = NULL;
    if (adm("GET", path, NULL, &r) == 200) {
        const char *s = jstr(json_object_get(r.json, "labels"), key);
        v = s ? strdup(s) : NULL;
    }
    http_res_free(&r);
    return v;
}

/* The setup failed: stop aidcd (no orphan server) and drop its database; the log stays. */
static void setup_failed(const char *what)
{
    fprintf(stderr, "test setup: %s; aidcd's log is %s\n", what, harness_srv.log_path);
    harness_server_stop(&harness_srv);
    harness_db_drop(&harness_srv);
    exit(1);
}

static void images_setup(void)
{
    if (!is_member(0, actors[A_MEM].user) || !is_member(1, actors[A_FOREIGN].user))
        setup_failed("the fixture's memberships are not as expected");
    struct http_res r;
    long st = adm("POST", "/api/v1/registries",
                  "{\"name\":\"" REGISTRY "\",\"url\":\"http://127.0.0.1:9\","
                  "\"options\":{\"tenant_prefix\":\"teams/\",\"timeout_seconds\":2}}",
                  &r);
    if (st != 201)
        fprintf(stderr, "POST /api/v1/registries answered %ld: %s\n", st, r.body ? r.body : "");
    http_res_free(&r);
    if (st != 201)
        setup_failed("cannot register registry " REGISTRY);
    for (int t = 0; t < 2; t++)
        if (register_image(harness_srv.admin_token, tenants[t].slug,
                           fmt("%s/base", tenants[t].slug), 1 + (unsigned)t, base_image[t],
                           sizeof base_image[t]) != 201)
            setup_failed(fmt("cannot register the image of %s", tenants[t].slug));
}

/* ---- the rows ------------------------------------------------------------------------- */

enum kind {
    K_IMAGE_BROWSE,
    K_IMAGE_LIST,
    K_IMAGE_CREATE,
    K_IMAGE_GET,
    K_IMAGE_PATCH,
    K_IMAGE_DELETE,
    K_REGISTRY_CREATE,
    K_REGISTRY_LIST,
    K_REGISTRY_GET,
    K_REGISTRY_SYNC,
};

/* As in test_permissions_matrix.c: own and other columns, all 0 where there is no other. */
/* clang-format off */
static const struct permrun_row rows[] = {
    /*                                            ADM  PA   FIN  AUD  TA   MEM  VIEW FOR  NOM  ANON TKNA TKAD TKTN CKNH CKH */
    /* any user, narrowed to the tenants it may read: own column ?tenant=own, other ?tenant=other
     * (a tenant the caller cannot see is 404, as on the tenant's own routes) */
    {"GET", "/api/v1/images", K_IMAGE_BROWSE,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 403, 403, 403, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 403, 403, 403, 404, 404}},
    {"GET", "/api/v1/tenants/{tenant}/images", K_IMAGE_LIST,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 403, 403, 403, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 403, 403, 403, 404, 404}},
    /* members and up, platform admins; the cookie without the portal header may not write */
    {"POST", "/api/v1/tenants/{tenant}/images", K_IMAGE_CREATE,
        {201, 201, 403, 403, 201, 201, 403, 404, 404, 401, 403, 403, 403, 403, 201},
        {201, 201, 403, 403, 404, 404, 404, 201, 404, 401, 403, 403, 403, 403, 404}},
    {"GET", "/api/v1/tenants/{tenant}/images/{id}", K_IMAGE_GET,
        {200, 200, 200, 200, 200, 200, 200, 404, 404, 401, 403, 403, 403, 200, 200},
        {200, 200, 200, 200, 404, 404, 404, 200, 404, 401, 403, 403, 403, 404, 404}},
    /* own: an image own's member registered; other: one other's admin registered */
    {"PATCH", "/api/v1/tenants/{tenant}/images/{id}", K_IMAGE_PATCH,
        {200, 200, 403, 403, 200, 200, 403, 404, 404, 401, 403, 403, 403, 403, 200},
        {200, 200, 403, 403, 404, 404, 404, 200, 404, 401, 403, 403, 403, 403, 404}},
    {"DELETE", "/api/v1/tenants/{tenant}/images/{id}", K_IMAGE_DELETE,
        {204, 204, 403, 403, 204, 204, 403, 404, 404, 401, 403, 403, 403, 403, 204},
        {204, 204, 403, 403, 404, 404, 404, 204, 404, 401, 403, 403, 403, 403, 404}},
    /* registries are the platform admin's (scope admin: the own-admin's admin token is no
     * platform admin, a tenant-bound token has no global role) */
    {"POST", "/api/v1/registries", K_REGISTRY_CREATE,
        {201, 201, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/registries", K_REGISTRY_LIST,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"GET", "/api/v1/registries/{name}", K_REGISTRY_GET,
        {200, 200, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
    {"POST", "/api/v1/registries/{name}/sync", K_REGISTRY_SYNC,
        {202, 202, 403, 403, 403, 403, 403, 403, 403, 401, 403, 403, 403, 403, 403}, {0}},
};
/* clang-format on */
#define NROWS (sizeof rows / sizeof rows[0])

static void prep(struct permrun_cell *c)
{
    const char *ts = tenants[c->t].slug;
    const char *tag = c->tag;
    unsigned n = 100u + (unsigned)(c->ri * 100 + c->a * 2 + c->t); /* digest of the cell */
    c->body[0] = '\0';
    switch ((enum kind)c->r->kind) {
    case K_IMAGE_BROWSE:
        snprintf(c->path, sizeof c->path, "/api/v1/images?tenant=%s&limit=1000", ts);
        break;
    case K_IMAGE_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/images?limit=1000", ts);
        break;
    case K_IMAGE_CREATE:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/images", ts);
        snprintf(c->body, sizeof c->body,
                 "{\"repository\":\"%s/%s\",\"tag\":\"v1\",\"digest\":\"%s\",\"size_bytes\":%u}",
                 ts, tag, digest_of(n), n);
        snprintf(c->check, sizeof c->check, "/api/v1/tenants/%s/images?q=%s/%s&limit=1000", ts, ts,
                 tag);
        break;
    case K_IMAGE_GET:
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/images/%s", ts, base_image[c->t]);
        break;
    case K_IMAGE_PATCH:
    case K_IMAGE_DELETE: {
        char id[64];
        const char *owner = c->t == 0 ? actors[A_MEM].user_jwt : actors[A_FOREIGN].user_jwt;
        long st = register_image(owner, ts, fmt("%s/%s", ts, tag), n, id, sizeof id);
        ck_assert_msg(st == 201, "registering the image of %s answered %ld", tag, st);
        snprintf(c->path, sizeof c->path, "/api/v1/tenants/%s/images/%s", ts, id);
        snprintf(c->check, sizeof c->check, "%s", c->path);
        if (c->r->kind == K_IMAGE_PATCH)
            snprintf(c->body, sizeof c->body, "{\"labels\":{\"cell\":\"%s\"}}", tag);
        break;
    }
    case K_REGISTRY_CREATE:
        /* a host of its own: one registry per host */
        snprintf(c->path, sizeof c->path, "/api/v1/registries");
        snprintf(c->body, sizeof c->body,
                 "{\"name\":\"%s\",\"url\":\"http://127.0.%d.%d:9\","
                 "\"options\":{\"tenant_prefix\":\"teams/\",\"timeout_seconds\":2}}",
                 tag, c->ri, c->a + 1);
        snprintf(c->check, sizeof c->check, "/api/v1/registries/%s", tag);
        break;
    case K_REGISTRY_LIST:
        snprintf(c->path, sizeof c->path, "/api/v1/registries?limit=1000");
        break;
    case K_REGISTRY_GET:
        snprintf(c->path, sizeof c->path, "/api/v1/registries/" REGISTRY);
        break;
    case K_REGISTRY_SYNC:
        snprintf(c->path, sizeof c->path, "/api/v1/registries/" REGISTRY "/sync");
        break;
    }
}

/*
 * A list of images answered 200: it has the setup's image of the column's
 * tenant, and nothing of another tenant (public images, tenant null, only
 * where public ones may be listed).
 */
static void check_image_list(const struct permrun_cell *c, const struct http_res *res,
                             bool public_too)
{
    const char *ts = tenants[c->t].slug;
    json_t *items = json_object_get(res->json, "items");
    if (!json_is_array(items)) {
        note("%s: 200 without items: %s", c->what, res->body ? res->body : "");
        return;
    }
    if (!items_have(res, "id", base_image[c->t]))
        note("%s: the image %s of %s is not listed", c->what, base_image[c->t], ts);
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        const char *owner = jstr(it, "tenant");
        if (owner ? strcmp(owner, ts) != 0 : !public_too)
            note("%s: lists an image of %s: %s/%s", c->what, owner ? owner : "(public)",
                 jstr(it, "repository") ? jstr(it, "repository") : "?",
                 jstr(it, "id") ? jstr(it, "id") : "?");
    }
}

/* A registry answered by a create or a sync: it is name, and a sync is asked for or running. */
static void check_sync_asked(const struct permrun_cell *c, const struct http_res *res,
                             const char *name)
{
    const char *state = jstr(res->json, "sync_state");
    if (!jstr(res->json, "name") || strcmp(jstr(res->json, "name"), name) != 0 || !state ||
        (strcmp(state, "requested") != 0 && strcmp(state, "running") != 0))
        note("%s: not registry %s with a sync requested or running: %s", c->what, name,
             res->body ? res->body : "");
    char *loc = http_header(res, "Location");
    if (!loc || strcmp(loc, fmt("/api/v1/registries/%s", name)) != 0)
        note("%s: Location is %s", c->what, loc ? loc : "(none)");
    free(loc);
}

static void verify(const struct permrun_cell *c, long got, const struct http_res *res)
{
    const char *ts = tenants[c->t].slug;
    const char *body = res->body ? res->body : "";
    switch ((enum kind)c->r->kind) {
    case K_IMAGE_BROWSE:
        if (got == 200)
            check_image_list(c, res, true);
        break;
    case K_IMAGE_LIST:
        if (got == 200)
            check_image_list(c, res, false);
        break;
    case K_IMAGE_CREATE: {
        char repo[80];
        snprintf(repo, sizeof repo, "%s/%s", ts, c->tag);
        bool there = list_has(harness_srv.admin_token, c->check, "repository", repo);
        if (there != (got == 201))
            note("%s: answered %ld, and the image %s", c->what, got,
                 there ? "exists" : "does not exist");
        if (got == 201 && (!jstr(res->json, "tenant") || strcmp(jstr(res->json, "tenant"), ts) ||
                           !jstr(res->json, "source") || strcmp(jstr(res->json, "source"), "api")))
            note("%s: 201 is not an image of %s registered through the API: %s", c->what, ts, body);
        break;
    }
    case K_IMAGE_GET:
        if (got == 200 &&
            (!jstr(res->json, "id") || strcmp(jstr(res->json, "id"), base_image[c->t]) != 0))
            note("%s: 200 is not the image: %s", c->what, body);
        break;
    case K_IMAGE_PATCH: {
        /* the label after a 2xx, none after a refusal */
        char *v = image_label(c->check, "cell");
        if (is_2xx(got) ? !v || strcmp(v, c->tag) != 0 : v != NULL)
            note("%s: answered %ld, and the label cell is %s", c->what, got, v ? v : "(none)");
        free(v);
        break;
    }
    case K_IMAGE_DELETE:
        check_exists(c, got, c->check, false);
        break;
    case K_REGISTRY_CREATE:
        check_exists(c, got, c->check, true);
        if (got == 201)
            check_sync_asked(c, res, c->tag);
        break;
    case K_REGISTRY_LIST:
        if (got == 200 && !items_have(res, "name", REGISTRY))
            note("%s: registry " REGISTRY " is not listed: %s", c->what, body);
        break;
    case K_REGISTRY_GET:
        if (got == 200 && (!jstr(res->json, "name") || strcmp(jstr(res->json, "name"), REGISTRY)))
            note("%s: 200 is not the registry: %s", c->what, body);
        break;
    case K_REGISTRY_SYNC:
        if (got == 202)
            check_sync_asked(c, res, REGISTRY);
        break;
    }
}

static const struct permrun_matrix this_matrix = {
    .file = IMAGES_ROWS,
    .tag = "im",
    .rows = rows,
    .nrows = NROWS,
    .split = split_routes,
    .nsplit = NSPLIT_ROUTES,
    .prep = prep,
    .verify = verify,
};

/* ---- beside the matrix ------------------------------------------------------------------ */

/* As actor a: method path body must answer want (noted otherwise, as a refusal must be). */
static void expect(int a, const char *method, const char *path, const char *body, long want)
{
    struct http_res r;
    long got = as(a, method, path, body, &r);
    if (got != want)
        note("%s %s as %s: expected %ld, got %ld %s", method, path, actors[a].label, want, got,
             r.body ? r.body : "");
    if ((got == 403 || got == 404) && !is_problem(&r, got))
        note("%s %s as %s: %ld is not problem+json", method, path, actors[a].label, got);
    http_res_free(&r);
}

/*
 * A member changes and deletes only the images it registered: one the admin
 * registered in own is 403 to own's member and stays as it was; own's
 * tenant admin may change it.
 */
START_TEST(member_changes_only_its_own_images)
{
    reset_notes();
    char id[64];
    ck_assert_int_eq(
        register_image(harness_srv.admin_token, "own", "own/admins", 900, id, sizeof id), 201);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/tenants/own/images/%s", id);
    expect(A_MEM, "PATCH", path, "{\"labels\":{\"by\":\"member\"}}", 403);
    expect(A_MEM, "DELETE", path, NULL, 403);
    char *v = image_label(path, "by");
    if (v)
        note("a member's refused PATCH of another's image set the label: %s", v);
    free(v);
    if (adm_status(path) != 200)
        note("a member's refused DELETE of another's image deleted it");
    expect(A_TA, "PATCH", path, "{\"labels\":{\"by\":\"tenant-admin\"}}", 200);
    v = image_label(path, "by");
    if (!v || strcmp(v, "tenant-admin") != 0)
        note("the tenant admin's PATCH left the label %s", v ? v : "(none)");
    free(v);
    finish();
}
END_TEST

/*
 * Tokens with the image scopes (none of the fixture's has them): images:read
 * reads the tenants of its user and not others' (404), and does not write
 * (403); images:write does not read; a token bound to own writes there, sees
 * own's images and not other's, and does not reach other (404). No image
 * scope reaches the registries (scope admin).
 */
START_TEST(tokens_with_image_scopes)
{
    reset_notes();
    const char *ta = actors[A_TA].user_jwt;
    char *rd = make_token(ta, "[\"images:read\"]", NULL);
    char *wr = make_token(ta, "[\"images:write\"]", NULL);
    char *bound = make_token(ta, "[\"images:read\",\"images:write\"]", "own");
    char *saved = actors[A_TOK_NOADMIN].bearer; /* an actor of a token of own's admin */
    char own_img[128], other_img[128];          /* not fmt's: its buffers rotate */
    snprintf(own_img, sizeof own_img, "/api/v1/tenants/own/images/%s", base_image[0]);
    snprintf(other_img, sizeof other_img, "/api/v1/tenants/other/images/%s", base_image[1]);

    actors[A_TOK_NOADMIN].bearer = rd;
    expect(A_TOK_NOADMIN, "GET", "/api/v1/images?tenant=own", NULL, 200);
    expect(A_TOK_NOADMIN, "GET", "/api/v1/images?tenant=other", NULL, 404);
    expect(A_TOK_NOADMIN, "GET", "/api/v1/tenants/own/images", NULL, 200);
    expect(A_TOK_NOADMIN, "GET", own_img, NULL, 200);
    expect(A_TOK_NOADMIN, "GET", other_img, NULL, 404);
    expect(A_TOK_NOADMIN, "POST", "/api/v1/tenants/own/images",
           fmt(TOKEN_IMAGE, "rd", digest_of(901)), 403);
    expect(A_TOK_NOADMIN, "GET", "/api/v1/registries", NULL, 403);

    actors[A_TOK_NOADMIN].bearer = wr;
    expect(A_TOK_NOADMIN, "GET", "/api/v1/tenants/own/images", NULL, 403);
    expect(A_TOK_NOADMIN, "POST", "/api/v1/tenants/own/images",
           fmt(TOKEN_IMAGE, "wr", digest_of(902)), 201);
    expect(A_TOK_NOADMIN, "POST", "/api/v1/tenants/other/images",
           fmt(TOKEN_IMAGE, "wr2", digest_of(903)), 404);

    actors[A_TOK_NOADMIN].bearer = bound;
    expect(A_TOK_NOADMIN, "POST", "/api/v1/tenants/own/images",
           fmt(TOKEN_IMAGE, "bound", digest_of(904)), 201);
    expect(A_TOK_NOADMIN, "GET", other_img, NULL, 404);
    expect(A_TOK_NOADMIN, "GET", "/api/v1/images?tenant=other", NULL, 404);
    struct http_res r;
    long st = as(A_TOK_NOADMIN, "GET", "/api/v1/images?limit=1000", NULL, &r);
    if (st != 200 || !items_have(&r, "id", base_image[0]) || items_have(&r, "id", base_image[1]))
        note("GET /api/v1/images with a token bound to own answered %ld, with own's image %s "
             "and other's %s: %s",
             st, items_have(&r, "id", base_image[0]) ? "listed" : "missing",
             items_have(&r, "id", base_image[1]) ? "listed" : "not listed", r.body ? r.body : "");
    http_res_free(&r);

    actors[A_TOK_NOADMIN].bearer = saved;
    free(rd);
    free(wr);
    free(bound);
    finish();
}
END_TEST

/* The tests beside the matrix, after it. */
static void beside(TCase *tc)
{
    tcase_add_test(tc, member_changes_only_its_own_images);
    tcase_add_test(tc, tokens_with_image_scopes);
}

int main(void)
{
    return permrun_main("permissions_images", &this_matrix, images_setup, beside);
}
