/*
 * test_images_changes.c - changing image metadata through the API of a real
 * aidcd: PATCH answers the image as changed; labels are replaced, not merged;
 * immutability goes one way (409 after: no re-tag, new digest or delete); a
 * tag taken by another image is refused; a deleted image's name is free
 * again; a member changes its own images only, the tenant and platform admins
 * anybody's; viewers, other tenants, finance, auditors and narrow tokens
 * change nothing. Every test registers the images it changes.
 *
 * Registration, visibility, filters and pages: test_images.c; what both use:
 * tests/support/imagestest.c.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/imagestest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALPHA_IMAGES "/api/v1/tenants/alpha/images"

/* alpha: am, am2 members, av viewer, aa admin; beta: bm member, ba admin;
 * global: fin (finance), aud (auditor) - see imagestest.h */
static struct imagestest_users u;

static void setup(void)
{
    harness_setup("images_changes", NULL);
    /* alpha, beta, the registry "reg" and the public image library/pub:1 */
    imagestest_world(NULL);
    imagestest_users_login(&u);
}

static void teardown(void)
{
    imagestest_users_free(&u);
    harness_teardown();
}

/* PATCH path as jwt with body must be 200: the image as a GET reads it afterwards. */
static json_t *patch_ok(const char *path, const char *jwt, const char *body)
{
    struct http_res r;
    long st = reqj("PATCH", path, jwt, body, &r);
    ck_assert_msg(st == 200, "PATCH %s %s answered %ld: %.300s", path, body, st,
                  r.body ? r.body : "");
    http_res_free(&r);
    st = reqj("GET", path, jwt, NULL, &r);
    ck_assert_int_eq(st, 200);
    json_t *o = json_incref(r.json);
    http_res_free(&r);
    return o;
}

START_TEST(patch_answers_the_image_as_changed)
{
    char id[37], d[72];
    imagestest_reg(u.am, "alpha", "alpha/answer", "1", 45, 7, "\"labels\":{\"a\":\"1\"}", id);
    imagestest_digest_of(46, d);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/tenants/alpha/images/%s", id);
    struct http_res r;
    ck_assert_int_eq(reqj("PATCH", path, u.am,
                          fmt("{\"labels\":{\"b\":\"2\"},\"tag\":\"2\",\"digest\":\"%s\"}", d), &r),
                     200);
    ck_assert_msg(imagestest_is(r.json, "id", id), "PATCH answered %.400s", r.body);
    ck_assert_str_eq(jstr(r.json, "repository"), "alpha/answer");
    ck_assert_str_eq(jstr(r.json, "tag"), "2");
    ck_assert_str_eq(jstr(r.json, "digest"), d);
    json_t *want = json_pack("{s:s}", "b", "2");
    ck_assert_msg(json_equal(json_object_get(r.json, "labels"), want), "%.400s", r.body);
    json_decref(want);
    ck_assert_str_eq(jstr(r.json, "tenant"), "alpha");
    http_res_free(&r);
    ck_assert_int_eq(reqj("PATCH", path, u.am, "{\"immutable\":true}", &r), 200);
    ck_assert_msg(imagestest_is(r.json, "id", id), "%.400s", r.body);
    ck_assert(json_is_true(json_object_get(r.json, "immutable")));
    ck_assert_str_eq(jstr(r.json, "tag"), "2");
    http_res_free(&r);
}
END_TEST

START_TEST(patch_and_delete_follow_immutability_and_ownership)
{
    char frozen[37], mut[37], other[37];
    imagestest_reg(u.am, "alpha", "alpha/frozen", "1", 50, 1, "\"labels\":{\"old\":\"x\"}", frozen);
    imagestest_reg(u.am, "alpha", "alpha/mut", "1", 51, 1, "", mut);
    imagestest_reg(u.am, "alpha", "alpha/mut", "taken", 52, 1, "", other);
    char fpath[128], mpath[128], d[72];
    snprintf(fpath, sizeof fpath, "/api/v1/tenants/alpha/images/%s", frozen);
    snprintf(mpath, sizeof mpath, "/api/v1/tenants/alpha/images/%s", mut);
    struct http_res r;
    /* labels are replaced, not merged */
    json_t *o = patch_ok(fpath, u.am, "{\"labels\":{\"team\":\"vision\",\"x\":\"\"}}");
    json_t *want = json_pack("{s:s, s:s}", "team", "vision", "x", "");
    ck_assert(json_equal(json_object_get(o, "labels"), want));
    json_decref(want);
    json_decref(o);
    o = patch_ok(fpath, u.am, "{\"immutable\":true}");
    ck_assert(json_is_true(json_object_get(o, "immutable")));
    ck_assert_str_eq(jstr(o, "tag"), "1");
    json_decref(o);
    imagestest_digest_of(99, d);
    imagestest_refused("PATCH", fpath, u.am, "{\"tag\":\"2\"}", 409, NULL,
                       "re-tag an immutable image");
    imagestest_refused("PATCH", fpath, u.aa, fmt("{\"digest\":\"%s\"}", d), 409, NULL,
                       "new digest of an immutable image");
    imagestest_refused("PATCH", fpath, u.aa, "{\"immutable\":false}", 409, NULL, "immutable off");
    imagestest_refused("DELETE", fpath, u.aa, NULL, 409, NULL, "delete an immutable image");
    imagestest_refused("DELETE", fpath, harness_srv.admin_token, NULL, 409, NULL,
                       "platform admin deletes");
    r = imagestest_problem("DELETE", fpath, u.aa, NULL, 409, "image.immutable_delete", "id",
                           frozen);
    http_res_free(&r);
    r = imagestest_problem("PATCH", fpath, u.am, "{\"immutable\":false}", 409,
                           "image.immutable_forever", "id", frozen);
    http_res_free(&r);
    /* labels may still change; the rest is as it was */
    o = patch_ok(fpath, u.am, "{\"labels\":{},\"immutable\":true}");
    ck_assert_int_eq(json_object_size(json_object_get(o, "labels")), 0);
    ck_assert_str_eq(jstr(o, "tag"), "1");
    imagestest_digest_of(50, d);
    ck_assert_str_eq(jstr(o, "digest"), d);
    ck_assert(json_is_true(json_object_get(o, "immutable")));
    json_decref(o);
    /* a mutable image: re-tagged (not onto a taken tag), then deleted */
    imagestest_refused("PATCH", mpath, u.am, "{\"tag\":\"taken\"}", 409, NULL,
                       "tag of another image");
    r = imagestest_problem("PATCH", mpath, u.am, "{\"tag\":\"taken\"}", 409, "image.tag_taken",
                           "tag", "taken");
    http_res_free(&r);
    imagestest_refused("PATCH", mpath, u.am, "{\"tag\":\".bad\"}", 400, "tag", "bad tag");
    imagestest_refused("PATCH", mpath, u.am, "{\"labels\":{\"k\":5}}", 400, "labels", "bad label");
    imagestest_refused("PATCH", mpath, u.am, "{\"repository\":\"alpha/x\"}", 400, "repository",
                       "repository");
    o = patch_ok(mpath, u.am, "{\"tag\":\"2\",\"immutable\":false}");
    ck_assert_str_eq(jstr(o, "tag"), "2");
    ck_assert(json_is_false(json_object_get(o, "immutable")));
    json_decref(o);
    ck_assert_int_eq(reqj("DELETE", mpath, u.am, NULL, &r), 204);
    ck_assert_int_eq(r.body_len, 0);
    http_res_free(&r);
    imagestest_refused("GET", mpath, u.am, NULL, 404, NULL, "deleted image");
    imagestest_refused("DELETE", mpath, u.am, NULL, 404, NULL, "deleted twice");
    imagestest_refused("PATCH", mpath, u.am, "{\"labels\":{}}", 404, NULL, "patch a deleted image");
    json_t *items = get_items("/api/v1/tenants/alpha/images?q=alpha/mut", u.am);
    ck_assert_str_eq(imagestest_refs(items), "alpha/mut:taken");
    json_decref(items);
    /* its name is free again */
    char again[37];
    imagestest_reg(u.am, "alpha", "alpha/mut", "2", 53, 1, "", again);

    /* both changes were audited */
    const char *p[1] = {frozen};
    imagestest_count_is(3,
                        "SELECT count(*) FROM audit_log WHERE action = 'image.update'"
                        " AND resource_id = $1 AND outcome = 'success'",
                        1, p);
    p[0] = mut;
    imagestest_count_is(1,
                        "SELECT count(*) FROM audit_log WHERE action = 'image.delete'"
                        " AND resource_id = $1 AND outcome = 'success'",
                        1, p);
}
END_TEST

START_TEST(members_change_only_the_images_they_registered)
{
    char mine[37], theirs[37], path[128], tpath[128];
    imagestest_reg(u.am, "alpha", "alpha/owned", "1", 70, 1, "", mine);
    imagestest_reg(u.am2, "alpha", "alpha/owned", "2", 71, 1, "", theirs);
    snprintf(path, sizeof path, "/api/v1/tenants/alpha/images/%s", mine);
    snprintf(tpath, sizeof tpath, "/api/v1/tenants/alpha/images/%s", theirs);
    /* am2 reads am's image, but may not change it: 403, not 404 */
    ck_assert_int_eq(req("GET", path, u.am2, NULL), 200);
    imagestest_refused("PATCH", path, u.am2, "{\"labels\":{\"a\":\"b\"}}", 403, NULL,
                       "another member patches");
    imagestest_refused("DELETE", path, u.am2, NULL, 403, NULL, "another member deletes");
    imagestest_refused("DELETE", tpath, u.am, NULL, 403, NULL, "member deletes another's");
    json_t *o = patch_ok(path, u.am, "{\"labels\":{\"by\":\"owner\"}}");
    ck_assert_str_eq(jstr(json_object_get(o, "labels"), "by"), "owner");
    json_decref(o);
    /* the tenant admin and the platform admin may change anybody's */
    o = patch_ok(path, u.aa, "{\"labels\":{\"by\":\"admin\"}}");
    ck_assert_str_eq(jstr(json_object_get(o, "labels"), "by"), "admin");
    json_decref(o);
    o = patch_ok(tpath, harness_srv.admin_token, "{\"labels\":{\"by\":\"platform\"}}");
    ck_assert_str_eq(jstr(json_object_get(o, "labels"), "by"), "platform");
    json_decref(o);
    ck_assert_int_eq(req("DELETE", tpath, u.aa, NULL), 204);
    ck_assert_int_eq(req("DELETE", path, u.am, NULL), 204);
    ck_assert_int_eq(req("GET", path, u.am, NULL), 404);
    ck_assert_int_eq(req("GET", tpath, u.am2, NULL), 404);
}
END_TEST

START_TEST(viewers_strangers_and_narrow_tokens_change_nothing)
{
    char id[37], path[128];
    imagestest_reg(u.aa, "alpha", "alpha/guarded", "1", 80, 1, "\"labels\":{\"k\":\"v\"}", id);
    snprintf(path, sizeof path, "/api/v1/tenants/alpha/images/%s", id);
    long long before = imagestest_sql_num("SELECT count(*) FROM images", 0, NULL);
    /* a viewer reads, and changes nothing */
    ck_assert_int_eq(req("GET", path, u.av, NULL), 200);
    imagestest_refused("POST", ALPHA_IMAGES, u.av, imagestest_image_body("alpha/v", "1", 81, 1, ""),
                       403, NULL, "viewer registers");
    imagestest_refused("PATCH", path, u.av, "{\"labels\":{}}", 403, NULL, "viewer patches");
    imagestest_refused("DELETE", path, u.av, NULL, 403, NULL, "viewer deletes");
    /* users of other tenants: the tenant does not exist for them */
    imagestest_refused("PATCH", path, u.bm, "{\"labels\":{}}", 404, NULL, "beta patches alpha's");
    imagestest_refused("DELETE", path, u.ba, NULL, 404, NULL, "beta's admin deletes alpha's");
    imagestest_refused("POST", ALPHA_IMAGES, u.bm, imagestest_image_body("alpha/b", "1", 82, 1, ""),
                       404, NULL, "beta registers in alpha");
    /* finance and auditors read only */
    imagestest_refused("POST", ALPHA_IMAGES, u.fin,
                       imagestest_image_body("alpha/f", "1", 83, 1, ""), 403, NULL,
                       "finance registers");
    imagestest_refused("PATCH", path, u.aud, "{\"labels\":{}}", 403, NULL, "auditor patches");
    imagestest_refused("DELETE", path, u.fin, NULL, 403, NULL, "finance deletes");
    /* a token acts within its scopes */
    char *tok = make_token(u.am, "[\"jobs:read\"]", NULL);
    struct http_res r;
    ck_assert_int_eq(
        reqj("POST", ALPHA_IMAGES, tok, imagestest_image_body("alpha/tok", "1", 84, 1, ""), &r),
        403);
    ck_assert_msg(strstr(r.body, "images:write"), "%.400s", r.body);
    http_res_free(&r);
    imagestest_refused("GET", "/api/v1/images", tok, NULL, 403, NULL,
                       "jobs:read token lists images");
    free(tok);
    tok = make_token(u.am, "[\"images:read\"]", NULL);
    ck_assert_int_eq(req("GET", path, tok, NULL), 200);
    imagestest_refused("PATCH", path, tok, "{\"labels\":{}}", 403, NULL,
                       "images:read token patches");
    free(tok);
    imagestest_count_is(before, "SELECT count(*) FROM images", 0, NULL);
    ck_assert_int_eq(req("GET", path, u.aa, NULL), 200);
    tok = make_token(u.am, "[\"images:write\",\"images:read\"]", NULL);
    char tid[37];
    imagestest_reg(tok, "alpha", "alpha/tok", "1", 84, 1, "", tid);
    ck_assert_int_eq(req("GET", fmt("/api/v1/tenants/alpha/images/%s", tid), tok, NULL), 200);
    ck_assert_int_eq(req("DELETE", fmt("/api/v1/tenants/alpha/images/%s", tid), tok, NULL), 204);
    free(tok);
    /* nothing of that changed the image */
    json_t *o = patch_ok(path, u.aa, "{}");
    ck_assert_str_eq(jstr(json_object_get(o, "labels"), "k"), "v");
    json_decref(o);
}
END_TEST

int main(void)
{
    /* one server for all: each test registers the images it changes */
    const TTest *tests[] = {patch_answers_the_image_as_changed,
                            patch_and_delete_follow_immutability_and_ownership,
                            members_change_only_the_images_they_registered,
                            viewers_strangers_and_narrow_tokens_change_nothing, NULL};
    harness_require_pg();
    return suite_run(imagestest_suite("images_changes", setup, teardown, tests));
}
