/*
 * test_images.c - image metadata through the API of a real aidcd:
 *
 * - registration echoes every field (and its Location); a repository:tag is
 *   unique per tenant, not across tenants; every invalid field is a 400
 *   naming it, and the limits are inclusive; a registry must exist (422) and
 *   its mapping must give the repository to the tenant (422 otherwise);
 * - the storage_gib quota refuses what does not fit and shows what is used;
 * - who sees what: public images everyone, a tenant's images its readers and
 *   the global roles, never another tenant's users (404, no body);
 * - filters (q, label, visibility), pages walked with a cursor, bad ones 400.
 * PATCH and DELETE: test_images_changes.c; jobs naming images: test_images_jobs.c;
 * what they all use: tests/support/imagestest.c.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/imagestest.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB           1073741824LL
#define SIXTENTHS_GIB 644245094LL /* 0.6 GiB, rounded down */
#define ALPHA_IMAGES  "/api/v1/tenants/alpha/images"

/* alpha: am, am2 members, av viewer, aa admin; beta: bm member, ba admin; global: fin
 * (finance), aud (auditor) - see imagestest.h; and store: sm member; flt: fm member; loner
 * in no tenant */
static struct imagestest_users u;
static char *sm, *fm, *loner;
static char pub_id[37];

static char *jdump(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static bool has_id(const json_t *items, const char *id)
{
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) if (imagestest_is(it, "id", id)) return true;
    return false;
}

/* Tenant flt's images, which the filter and page tests look for. */
static void flt_images(void)
{
    char id[37];
    imagestest_reg(fm, "flt", "ml/torch", "2.3-cuda12", 40, 1,
                   "\"labels\":{\"framework\":\"pytorch\",\"cuda_version\":\"12.4\"}", id);
    imagestest_reg(fm, "flt", "ml/torch", "2.1", 41, 1,
                   "\"labels\":{\"framework\":\"pytorch\",\"cuda_version\":\"11.8\"}", id);
    imagestest_reg(fm, "flt", "ml/tensorflow", "2.16", 42, 1,
                   "\"labels\":{\"framework\":\"tensorflow\",\"cuda_version\":\"12.4\","
                   "\"note\":\"Nightly BUILD\"}",
                   id);
    imagestest_reg(fm, "flt", "tools/base", "latest", 43, 1, "", id);
}

static void setup(void)
{
    harness_setup("images", NULL);
    /* alpha, beta, the registry "reg" and the public image library/pub:1 */
    imagestest_world(pub_id);
    make_tenant("store");
    make_tenant("flt");
    imagestest_users_login(&u);
    sm = imagestest_user("sm", NULL, "store", "member");
    fm = imagestest_user("fm", NULL, "flt", "member");
    loner = imagestest_user("loner", NULL, NULL, NULL);
    flt_images();
}

static void teardown(void)
{
    imagestest_users_free(&u);
    free(sm);
    free(fm);
    free(loner);
    harness_teardown();
}

/* ---- registration --------------------------------------------------------------------- */

START_TEST(registration_echoes_every_field_and_is_unique_per_tenant)
{
    char d[72];
    imagestest_digest_of(1, d);
    struct http_res r;
    const char *body =
        imagestest_image_body("alpha/echo", "v1.0", 1, 12345,
                              "\"labels\":{\"framework\":\"pytorch\",\"cuda_version\":\"12.4\"}");
    ck_assert_int_eq(reqj("POST", ALPHA_IMAGES, u.am, body, &r), 201);
    const json_t *o = r.json;
    char id[37];
    snprintf(id, sizeof id, "%s", jstr(o, "id"));
    ck_assert_int_eq(strlen(id), 36);
    ck_assert_str_eq(jstr(o, "repository"), "alpha/echo");
    ck_assert_str_eq(jstr(o, "tag"), "v1.0");
    ck_assert_str_eq(jstr(o, "digest"), d);
    ck_assert(json_is_integer(json_object_get(o, "size_bytes")));
    ck_assert_int_eq(json_integer_value(json_object_get(o, "size_bytes")), 12345);
    json_t *want = json_pack("{s:s, s:s}", "framework", "pytorch", "cuda_version", "12.4");
    ck_assert_msg(json_equal(json_object_get(o, "labels"), want), "labels: %.400s", r.body);
    json_decref(want);
    ck_assert_str_eq(jstr(o, "visibility"), "tenant");
    ck_assert_str_eq(jstr(o, "tenant"), "alpha");
    ck_assert(json_is_null(json_object_get(o, "registry")));
    ck_assert(json_is_false(json_object_get(o, "immutable")));
    ck_assert_str_eq(jstr(o, "source"), "api");
    ck_assert_ptr_nonnull(jstr(o, "created_at"));
    char *loc = http_header(&r, "Location");
    ck_assert_ptr_nonnull(loc);
    ck_assert_str_eq(loc, fmt("/api/v1/tenants/alpha/images/%s", id));
    http_res_free(&r);
    /* the Location is the image, as the other readers of the tenant see it */
    ck_assert_int_eq(reqj("GET", loc, u.av, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "id"), id);
    ck_assert_str_eq(jstr(r.json, "digest"), d);
    http_res_free(&r);
    free(loc);
    /* without labels: {}; immutable given: echoed */
    ck_assert_int_eq(reqj("POST", ALPHA_IMAGES, u.am,
                          imagestest_image_body("alpha/echo", "v2", 2, 0, "\"immutable\":true"),
                          &r),
                     201);
    ck_assert(json_is_object(json_object_get(r.json, "labels")));
    ck_assert_int_eq(json_object_size(json_object_get(r.json, "labels")), 0);
    ck_assert(json_is_true(json_object_get(r.json, "immutable")));
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "size_bytes")), 0);
    http_res_free(&r);
    /* the same repository:tag again in alpha, even with another digest: 409 */
    imagestest_refused("POST", ALPHA_IMAGES, u.aa,
                       imagestest_image_body("alpha/echo", "v1.0", 3, 1, ""), 409, NULL,
                       "duplicate");
    r = imagestest_problem("POST", ALPHA_IMAGES, u.aa,
                           imagestest_image_body("alpha/echo", "v1.0", 3, 1, ""), 409,
                           "image.exists", "repository", "alpha/echo");
    ck_assert(imagestest_is(json_object_get(r.json, "params"), "tag", "v1.0"));
    ck_assert_str_eq(jstr(r.json, "detail"), "image alpha/echo:v1.0 is registered already");
    http_res_free(&r);
    imagestest_count_is(1,
                        "SELECT count(*) FROM images WHERE repository = 'alpha/echo'"
                        " AND tag = 'v1.0'",
                        0, NULL);
    /* ... but beta is another tenant: its own image of that name */
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/beta/images", u.bm,
                          imagestest_image_body("alpha/echo", "v1.0", 3, 1, ""), &r),
                     201);
    ck_assert_str_eq(jstr(r.json, "tenant"), "beta");
    ck_assert_str_ne(jstr(r.json, "id"), id);
    http_res_free(&r);
}
END_TEST

static const char *with(const char *field, json_t *value)
{
    char d[72];
    imagestest_digest_of(77, d);
    json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:{}}", "repository", "alpha/valid", "tag", "v1",
                          "digest", d, "size_bytes", 1, "labels");
    if (value)
        json_object_set_new(o, field, value);
    else
        json_object_del(o, field);
    char *s = jdump(o);
    const char *out = fmt("%s", s);
    free(s);
    return out;
}

static json_t *labels_n(size_t n, size_t value_len)
{
    json_t *o = json_object();
    char *v = malloc(value_len + 1);
    memset(v, 'v', value_len);
    v[value_len] = '\0';
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, fmt("k%zu", i), json_string(v));
    free(v);
    return o;
}

static json_t *rep(char c, size_t n)
{
    char buf[512];
    memset(buf, c, n);
    buf[n] = '\0';
    return json_string(buf);
}

START_TEST(invalid_registrations_are_400_naming_the_field)
{
    long long before = imagestest_sql_num("SELECT count(*) FROM images", 0, NULL);
    char upper[72], s512[140];
    snprintf(upper, sizeof upper, "sha256:%s",
             "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789");
    snprintf(s512, sizeof s512, "sha512:%0128d", 7);
    struct {
        const char *what, *field;
        json_t *value;    /* NULL: the field left out */
        const char *only; /* the field named (NULL: field) */
    } bad[] = {
        {"uppercase digest", "digest", json_string(upper), NULL},
        {"short digest", "digest", json_string("sha256:abc123"), NULL},
        {"sha512 digest", "digest", json_string(s512), NULL},
        {"uppercase repository", "repository", json_string("Alpha/x"), NULL},
        {"repository of 256", "repository", rep('a', 256), NULL},
        {"empty path component", "repository", json_string("a//b"), NULL},
        {"tag of 129", "tag", rep('t', 129), NULL},
        {"tag starting with '.'", "tag", json_string(".v1"), NULL},
        {"negative size", "size_bytes", json_integer(-1), NULL},
        {"size over 2^50", "size_bytes", json_integer((1LL << 50) + 1), NULL},
        {"fractional size", "size_bytes", json_real(1.5), NULL},
        {"size as a string", "size_bytes", json_string("12"), NULL},
        {"65 labels", "labels", labels_n(65, 1), NULL},
        {"label value of 257", "labels", labels_n(1, 257), NULL},
        {"non-string label", "labels", json_pack("{s:i}", "gpus", 8), NULL},
        {"unknown field", "colour", json_string("blue"), NULL},
        {"missing digest", "digest", NULL, NULL},
        {"missing repository", "repository", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        imagestest_refused("POST", ALPHA_IMAGES, u.am, with(bad[i].field, bad[i].value), 400,
                           bad[i].only ? bad[i].only : bad[i].field, bad[i].what);
    imagestest_refused("POST", ALPHA_IMAGES, u.am, "{\"repository\":", 400, NULL, "broken JSON");
    imagestest_count_is(before, "SELECT count(*) FROM images", 0, NULL);
    /* the limits are inclusive */
    char id[37];
    json_t *r255 = rep('a', 255);
    imagestest_reg_ok(u.am, "alpha", with("repository", r255), id);
    imagestest_reg_ok(u.am, "alpha", with("tag", rep('t', 128)), id);
    imagestest_reg_ok(u.am, "alpha", with("tag", json_string("_x")), id);
    imagestest_reg_ok(
        u.am, "alpha",
        fmt("{\"repository\":\"alpha/big\",\"tag\":\"v1\",\"digest\":\"sha256:%064d\","
            "\"size_bytes\":%lld}",
            5, 1LL << 50),
        id);
    json_t *big = json_loads(imagestest_image_body("alpha/labels", "v1", 6, 1, ""), 0, NULL);
    json_object_set_new(big, "labels", labels_n(64, 256));
    char *bigs = jdump(big);
    imagestest_reg_ok(u.am, "alpha", bigs, id);
    free(bigs);
    imagestest_count_is(before + 5, "SELECT count(*) FROM images", 0, NULL);
}
END_TEST

START_TEST(registries_must_exist_and_map_the_repository_to_the_tenant)
{
    struct http_res r;
    ck_assert_int_eq(
        reqj("POST", ALPHA_IMAGES, u.am,
             imagestest_image_body("teams/alpha/x", "v1", 10, 1, "\"registry\":\"nosuch\""), &r),
        422);
    ck_assert_msg(imagestest_names_field(r.json, "registry", "nosuch"), "%.400s", r.body);
    ck_assert(imagestest_is(r.json, "code", "image.registry_unknown"));
    ck_assert(imagestest_is(json_object_get(r.json, "params"), "registry", "nosuch"));
    http_res_free(&r);
    char id[37];
    imagestest_reg(u.am, "alpha", "teams/alpha/x", "v1", 11, 1, "\"registry\":\"reg\"", id);
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/alpha/images/%s", id), u.am, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "registry"), "reg");
    ck_assert_str_eq(jstr(r.json, "repository"), "teams/alpha/x");
    ck_assert_str_eq(jstr(r.json, "visibility"), "tenant");
    ck_assert_str_eq(jstr(r.json, "source"), "api");
    http_res_free(&r);
    const char *others[] = {"teams/beta/x", "library/x", "x/y", "teams/alphabet/x"};
    for (size_t i = 0; i < 4; i++)
        imagestest_refused("POST", ALPHA_IMAGES, u.am,
                           imagestest_image_body(others[i], "v1", 12, 1, "\"registry\":\"reg\""),
                           422, "repository", others[i]);
    imagestest_count_is(1,
                        "SELECT count(*) FROM images i JOIN registries g ON g.id ="
                        " i.registry_id WHERE g.name = 'reg'",
                        0, NULL);
    /* what the refusals say: the tenant's own prefix; a platform repository is the sync's */
    r = imagestest_problem(
        "POST", ALPHA_IMAGES, u.am,
        imagestest_image_body("teams/beta/x", "v1", 12, 1, "\"registry\":\"reg\""), 422,
        "image.repository_not_tenants", "prefix", "teams/alpha/");
    ck_assert_str_eq(jstr(r.json, "detail"),
                     "repository: repositories of tenant \"alpha\" in registry \"reg\" start "
                     "with \"teams/alpha/\"");
    http_res_free(&r);
    r = imagestest_problem("POST", ALPHA_IMAGES, u.am,
                           imagestest_image_body("library/x", "v1", 12, 1, "\"registry\":\"reg\""),
                           422, "image.repository_platform", "repository", "library/x");
    ck_assert(imagestest_is(json_object_get(r.json, "params"), "registry", "reg"));
    http_res_free(&r);
    /* beta may register its own repository there */
    imagestest_reg(u.bm, "beta", "teams/beta/x", "v1", 13, 1, "\"registry\":\"reg\"", id);
}
END_TEST

/*
 * A repository named without a registry that a registry's mapping gives the
 * platform or another tenant: 422 with its own code each, and a sentence that
 * reads right (it once said "is a another tenant's repository").
 */
START_TEST(names_a_registry_gives_others_are_refused_without_one)
{
    struct http_res r = imagestest_problem(
        "POST", ALPHA_IMAGES, u.am, imagestest_image_body("teams/beta/y", "v1", 14, 1, ""), 422,
        "image.repository_claimed_tenant", "repository", "teams/beta/y");
    ck_assert(imagestest_is(json_object_get(r.json, "params"), "registry", "reg"));
    ck_assert_str_eq(jstr(r.json, "detail"),
                     "repository: \"teams/beta/y\" is another tenant's repository in registry "
                     "\"reg\": register the tenant's images under its own name there, or name "
                     "the registry");
    json_t *fe = json_array_get(json_object_get(r.json, "errors"), 0);
    ck_assert(imagestest_is(fe, "field", "repository"));
    ck_assert(imagestest_is(fe, "code", "image.repository_claimed_tenant"));
    ck_assert_ptr_null(strstr(r.body, "a another"));
    http_res_free(&r);
    r = imagestest_problem("POST", ALPHA_IMAGES, u.am,
                           imagestest_image_body("library/y", "v1", 15, 1, ""), 422,
                           "image.repository_claimed_platform", "registry", "reg");
    ck_assert_str_eq(jstr(r.json, "detail"),
                     "repository: \"library/y\" is a platform repository of registry \"reg\": "
                     "register the tenant's images under its own name there, or name the "
                     "registry");
    http_res_free(&r);
    /* its own name under the registry's prefix is alpha's, with or without the registry */
    char id[37];
    imagestest_reg(u.am, "alpha", "teams/alpha/y", "v1", 16, 1, "", id);
    imagestest_count_is(0,
                        "SELECT count(*) FROM images WHERE repository IN ('teams/beta/y',"
                        " 'library/y')",
                        0, NULL);
}
END_TEST

START_TEST(storage_quota_refuses_what_does_not_fit)
{
    jobs_admin_ok("PUT", "/api/v1/tenants/store/quota",
                  "{\"resources\":{\"storage_gib\":{\"guaranteed\":0,\"limit\":1}}}", 200);
    char first[37], id[37];
    imagestest_reg(sm, "store", "store/a", "v1", 20, SIXTENTHS_GIB, "", first);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/store/images", sm,
                          imagestest_image_body("store/b", "v1", 21, SIXTENTHS_GIB, ""), &r),
                     422);
    ck_assert_msg(strstr(r.body, "storage_gib"), "%.400s", r.body);
    ck_assert_msg(imagestest_names_field(r.json, "size_bytes", "storage_gib"), "%.400s", r.body);
    /* its code, and the amounts as numbers: GiB to three decimals */
    ck_assert(imagestest_is(r.json, "code", "image.storage_quota"));
    json_t *qp = json_object_get(r.json, "params");
    ck_assert(imagestest_is(qp, "tenant", "store") && imagestest_is(qp, "field", "size_bytes"));
    ck_assert_msg(json_number_value(json_object_get(qp, "used_gib")) == 0.6 &&
                      json_number_value(json_object_get(qp, "size_gib")) == 0.6 &&
                      json_integer_value(json_object_get(qp, "limit_gib")) == 1,
                  "%.400s", r.body);
    ck_assert_str_eq(jstr(r.json, "detail"),
                     "size_bytes: tenant \"store\" stores 0.6 GiB of images; 0.6 GiB more exceeds "
                     "its storage_gib quota of 1 GiB");
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/store/quota", sm, NULL, &r), 200);
    json_t *q = json_object_get(json_object_get(r.json, "resources"), "storage_gib");
    ck_assert_msg(q, "%.400s", r.body);
    ck_assert_msg(fabs(json_number_value(json_object_get(q, "used")) - 0.6) < 5e-7, "%.400s",
                  r.body);
    ck_assert_int_eq(json_integer_value(json_object_get(q, "limit")), 1);
    http_res_free(&r);
    /* what is left still fits; freeing the first makes room for the second */
    imagestest_reg(sm, "store", "store/c", "v1", 22, GIB - SIXTENTHS_GIB, "", id);
    ck_assert_int_eq(req("DELETE", fmt("/api/v1/tenants/store/images/%s", first), sm, NULL), 204);
    ck_assert_int_eq(req("DELETE", fmt("/api/v1/tenants/store/images/%s", id), sm, NULL), 204);
    imagestest_reg(sm, "store", "store/b", "v1", 21, SIXTENTHS_GIB, "", id);
}
END_TEST

/* ---- who sees what -------------------------------------------------------------------- */

START_TEST(lists_show_public_images_and_the_callers_tenants)
{
    char a_id[37], b_id[37];
    imagestest_reg(u.aa, "alpha", "alpha/vis", "1", 30, 1, "", a_id);
    imagestest_reg(u.ba, "beta", "beta/vis", "1", 31, 1, "", b_id);
    struct {
        const char *who;
        char *jwt;
        bool alpha, beta;
    } seers[] = {
        {"alpha member", u.am, true, false},
        {"alpha viewer", u.av, true, false},
        {"alpha admin", u.aa, true, false},
        {"beta member", u.bm, false, true},
        {"finance", u.fin, true, true},
        {"auditor", u.aud, true, true},
        {"platform admin", harness_srv.admin_token, true, true},
        {"user of no tenant", loner, false, false},
    };
    for (size_t i = 0; i < sizeof seers / sizeof seers[0]; i++) {
        json_t *items = get_items("/api/v1/images?limit=1000", seers[i].jwt);
        ck_assert_msg(has_id(items, pub_id), "%s does not see the public image", seers[i].who);
        ck_assert_msg(has_id(items, a_id) == seers[i].alpha, "%s: alpha's image %s", seers[i].who,
                      seers[i].alpha ? "missing" : "shown");
        ck_assert_msg(has_id(items, b_id) == seers[i].beta, "%s: beta's image %s", seers[i].who,
                      seers[i].beta ? "missing" : "shown");
        size_t k;
        json_t *it;
        json_array_foreach(items, k, it)
        {
            const char *t = jstr(it, "tenant");
            bool ok = t ? (strcmp(t, "alpha") == 0 && seers[i].alpha) ||
                              (strcmp(t, "beta") == 0 && seers[i].beta) ||
                              (seers[i].alpha && seers[i].beta)
                        : strcmp(jstr(it, "visibility"), "public") == 0;
            ck_assert_msg(ok, "%s sees %s of tenant %s", seers[i].who, jstr(it, "repository"), t);
        }
        json_decref(items);
        /* nor does a search find it */
        items = get_items("/api/v1/images?q=alpha/vis", seers[i].jwt);
        ck_assert_int_eq(json_array_size(items), seers[i].alpha ? 1 : 0);
        json_decref(items);
    }
    /* ?tenant= narrows to that tenant and the public images, for its readers only */
    json_t *items = get_items("/api/v1/images?tenant=alpha&limit=1000", u.am);
    ck_assert(has_id(items, a_id) && has_id(items, pub_id) && !has_id(items, b_id));
    json_decref(items);
    items = get_items("/api/v1/images?tenant=alpha&limit=1000", u.fin);
    ck_assert(has_id(items, a_id) && has_id(items, pub_id) && !has_id(items, b_id));
    json_decref(items);
    /* the tenant's list holds its own images only */
    items = get_items("/api/v1/tenants/alpha/images?limit=1000", u.av);
    ck_assert(has_id(items, a_id) && !has_id(items, pub_id) && !has_id(items, b_id));
    json_decref(items);
}
END_TEST

START_TEST(other_tenants_images_are_not_found)
{
    char a_id[37];
    imagestest_reg(u.aa, "alpha", "alpha/hidden", "1", 32, 1, "", a_id);
    /* to users of other tenants alpha does not exist: neither its list nor its image */
    char *users[] = {u.bm, u.ba, loner};
    for (size_t i = 0; i < 3; i++) {
        imagestest_refused_hiding("GET", "/api/v1/images?tenant=alpha", users[i], NULL, 404, NULL,
                                  "?tenant=alpha", a_id);
        imagestest_refused_hiding("GET", fmt("/api/v1/tenants/alpha/images/%s", a_id), users[i],
                                  NULL, 404, NULL, "another tenant's image", "alpha/hidden");
        imagestest_refused_hiding("GET", ALPHA_IMAGES, users[i], NULL, 404, NULL,
                                  "another tenant's list", a_id);
    }
    imagestest_refused("GET", "/api/v1/images?tenant=nosuch", u.am, NULL, 404, NULL,
                       "unknown tenant");
    /* readers of alpha read the image; the path's tenant must own it */
    char *readers[] = {u.am, u.av, u.aa, u.fin, u.aud, harness_srv.admin_token};
    for (size_t i = 0; i < 6; i++) {
        struct http_res r;
        ck_assert_int_eq(
            reqj("GET", fmt("/api/v1/tenants/alpha/images/%s", a_id), readers[i], NULL, &r), 200);
        ck_assert_str_eq(jstr(r.json, "repository"), "alpha/hidden");
        http_res_free(&r);
    }
    /* alpha's admin is nobody in beta; beta's admin and the platform admin are, but beta
     * does not own the image */
    char *owners_elsewhere[] = {u.aa, u.ba, harness_srv.admin_token};
    for (size_t i = 0; i < 3; i++) {
        const char *path = fmt("/api/v1/tenants/beta/images/%s", a_id);
        imagestest_refused_hiding("GET", path, owners_elsewhere[i], NULL, 404, NULL,
                                  "GET through beta", "alpha/hidden");
        imagestest_refused("PATCH", path, owners_elsewhere[i], "{\"labels\":{}}", 404, NULL,
                           "PATCH through beta");
        imagestest_refused("DELETE", path, owners_elsewhere[i], NULL, 404, NULL,
                           "DELETE through beta");
    }
    /* a public image belongs to no tenant's path */
    imagestest_refused("GET", fmt("/api/v1/tenants/alpha/images/%s", pub_id), u.aa, NULL, 404, NULL,
                       "public image under a tenant");
    imagestest_refused("GET", "/api/v1/tenants/alpha/images/not-a-uuid", u.aa, NULL, 400, "id",
                       "bad id");
}
END_TEST

/* ---- filters and pages ---------------------------------------------------------------- */

START_TEST(filters_find_by_reference_labels_and_visibility)
{
    static const struct {
        const char *query, *want;
    } cases[] = {
        {"", "ml/tensorflow:2.16 ml/torch:2.1 ml/torch:2.3-cuda12 tools/base:latest"},
        {"q=TORCH", "ml/torch:2.1 ml/torch:2.3-cuda12"},
        {"q=torch%3A2.1", "ml/torch:2.1"},
        {"q=e%3Ala", "tools/base:latest"},
        {"q=nightly%20build", "ml/tensorflow:2.16"},
        {"q=PyToRcH", "ml/torch:2.1 ml/torch:2.3-cuda12"},
        {"q=cuda_version", ""},
        {"q=12.4", "ml/tensorflow:2.16 ml/torch:2.3-cuda12"},
        {"label=framework%3Dpytorch", "ml/torch:2.1 ml/torch:2.3-cuda12"},
        {"label=framework%3Dpytorch%2Ccuda_version%3D12.4", "ml/torch:2.3-cuda12"},
        {"label=framework=pytorch,cuda_version=12.4", "ml/torch:2.3-cuda12"},
        {"label=cuda_version%3D12.4", "ml/tensorflow:2.16 ml/torch:2.3-cuda12"},
        {"label=framework%3DPyTorch", ""},
        {"label=framework%3Dpytorch&q=2.3", "ml/torch:2.3-cuda12"},
        {"visibility=tenant",
         "ml/tensorflow:2.16 ml/torch:2.1 ml/torch:2.3-cuda12 tools/base:latest"},
        {"visibility=public", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *items = get_items(fmt("/api/v1/tenants/flt/images?%s", cases[i].query), fm);
        ck_assert_msg(strcmp(imagestest_refs(items), cases[i].want) == 0, "?%s: [%s], want [%s]",
                      cases[i].query, imagestest_refs(items), cases[i].want);
        json_decref(items);
    }
    /* the caller's list: its tenant's images and the public ones */
    json_t *items = get_items("/api/v1/images?q=pytorch", fm);
    ck_assert_str_eq(imagestest_refs(items), "library/pub:1 ml/torch:2.1 ml/torch:2.3-cuda12");
    json_decref(items);
    items = get_items("/api/v1/images?visibility=public&limit=1000", fm);
    ck_assert(has_id(items, pub_id));
    size_t k;
    json_t *it;
    json_array_foreach(items, k, it)
    {
        ck_assert_str_eq(jstr(it, "visibility"), "public");
        ck_assert(json_is_null(json_object_get(it, "tenant")));
    }
    json_decref(items);
    items = get_items("/api/v1/images?visibility=tenant&limit=1000", fm);
    ck_assert_int_eq(json_array_size(items), 4);
    json_array_foreach(items, k, it) ck_assert_str_eq(jstr(it, "tenant"), "flt");
    json_decref(items);
    items = get_items("/api/v1/images?label=framework%3Dpytorch&visibility=public", fm);
    ck_assert_str_eq(imagestest_refs(items), "library/pub:1");
    json_decref(items);
    /* bad filters */
    const char *bad[][2] = {{"label=novalue", "label"},
                            {"label=%3Dx", "label"},
                            {"label=", "label"},
                            {"visibility=bogus", "visibility"},
                            {"limit=0", "limit"},
                            {"limit=1001", "limit"},
                            {"registry=Bad_Name", "registry"},
                            {"q=", "q"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        imagestest_refused("GET", fmt("/api/v1/tenants/flt/images?%s", bad[i][0]), fm, NULL, 400,
                           bad[i][1], bad[i][0]);
        imagestest_refused("GET", fmt("/api/v1/images?%s", bad[i][0]), fm, NULL, 400, bad[i][1],
                           bad[i][0]);
    }
}
END_TEST

/* limit=1 walks every image once, in order, to a null cursor; a cursor not ours is 400 */
START_TEST(limit_one_walks_every_image_once)
{
    for (int all = 0; all < 2; all++) {
        const char *base = all ? "/api/v1/images?limit=1" : "/api/v1/tenants/flt/images?limit=1";
        json_t *seen = json_array();
        char cursor[1024] = "";
        char first_cursor[1024] = "";
        for (int page = 0; page < 20; page++) {
            struct http_res r;
            const char *path = cursor[0] ? fmt("%s&cursor=%s", base, qesc(cursor)) : base;
            ck_assert_int_eq(reqj("GET", path, fm, NULL, &r), 200);
            json_t *its = json_object_get(r.json, "items");
            ck_assert_int_le(json_array_size(its), 1);
            if (json_array_size(its))
                json_array_append(seen, json_array_get(its, 0));
            json_t *next = json_object_get(r.json, "next_cursor");
            ck_assert(json_is_null(next) || json_is_string(next));
            snprintf(cursor, sizeof cursor, "%s",
                     json_is_string(next) ? json_string_value(next) : "");
            if (!first_cursor[0])
                snprintf(first_cursor, sizeof first_cursor, "%s", cursor);
            http_res_free(&r);
            if (!cursor[0])
                break;
        }
        ck_assert_msg(!cursor[0], "the walk did not end");
        json_t *whole = get_items(
            all ? "/api/v1/images?limit=1000" : "/api/v1/tenants/flt/images?limit=1000", fm);
        ck_assert_int_eq(json_array_size(seen), json_array_size(whole));
        ck_assert_str_eq(imagestest_refs(seen), imagestest_refs(whole));
        for (size_t i = 0; i < json_array_size(seen); i++)
            ck_assert_str_eq(jstr(json_array_get(seen, i), "id"),
                             jstr(json_array_get(whole, i), "id"));
        ck_assert_int_eq(json_array_size(seen), all ? 5 : 4);
        /* not a cursor of ours: 400 */
        ck_assert(strlen(first_cursor) > 12);
        char cut[13];
        memcpy(cut, first_cursor, 12);
        cut[12] = '\0';
        const char *tampered[] = {cut, "%%%not base64", "bm90IGEgY3Vyc29y", /* "not a cursor" */
                                  /* "ml/torch:2.1|not-a-uuid" */
                                  "bWwvdG9yY2g6Mi4xfG5vdC1hLXV1aWQ"};
        for (size_t i = 0; i < 4; i++)
            imagestest_refused("GET", fmt("%s&cursor=%s", base, qesc(tampered[i])), fm, NULL, 400,
                               "cursor", tampered[i]);
        json_decref(whole);
        json_decref(seen);
    }
}
END_TEST

int main(void)
{
    /* one server for all: each test works on images (and tenants) of its own */
    const TTest *tests[] = {registration_echoes_every_field_and_is_unique_per_tenant,
                            invalid_registrations_are_400_naming_the_field,
                            registries_must_exist_and_map_the_repository_to_the_tenant,
                            names_a_registry_gives_others_are_refused_without_one,
                            storage_quota_refuses_what_does_not_fit,
                            lists_show_public_images_and_the_callers_tenants,
                            other_tenants_images_are_not_found,
                            filters_find_by_reference_labels_and_visibility,
                            limit_one_walks_every_image_once,
                            NULL};
    harness_require_pg();
    return suite_run(imagestest_suite("images", setup, teardown, tests));
}
