/* imagestest.c - what the image tests share (see imagestest.h). */
#include "imagestest.h"

#include "audittest.h"
#include "client.h"
#include "harness.h"
#include "jobs.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PW "images-password-1"

Suite *imagestest_suite(const char *name, void (*setup)(void), void (*teardown)(void),
                        const TTest *const *tests)
{
    Suite *s = suite_create(name);
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    for (size_t i = 0; tests[i]; i++)
        tcase_add_test(tc, tests[i]);
    suite_add_tcase(s, tc);
    return s;
}

void imagestest_world(char *pub_id)
{
    make_tenant("alpha");
    make_tenant("beta");
    /* a registry nothing listens at: its syncs fail at once and change nothing */
    jobs_admin_ok("POST", "/api/v1/registries",
                  "{\"name\":\"reg\",\"url\":\"http://127.0.0.1:1\",\"options\":"
                  "{\"public_prefixes\":[\"library/\"],\"tenant_prefix\":\"teams/\"}}",
                  201);
    /* a public image, as a sync of a platform repository would have found it */
    char d[72];
    imagestest_digest_of(0xb0b, d);
    const char *p[1] = {d};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "INSERT INTO images (tenant_id, visibility, repository, tag, digest,"
                              " size_bytes, labels, source) VALUES (NULL, 'public', 'library/pub',"
                              " '1', $1, 1000, '{\"framework\":\"pytorch\"}', 'sync') RETURNING id",
                              1, p);
    ck_assert_ptr_nonnull(r);
    if (pub_id)
        snprintf(pub_id, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

char *imagestest_user(const char *name, const char *roles, const char *tenant, const char *role)
{
    make_user(name, PW, roles);
    if (tenant)
        make_member(tenant, name, role);
    char *jwt = login(name, PW);
    ck_assert_ptr_nonnull(jwt);
    return jwt;
}

void imagestest_users_login(struct imagestest_users *u)
{
    u->am = imagestest_user("am", NULL, "alpha", "member");
    u->am2 = imagestest_user("am2", NULL, "alpha", "member");
    u->av = imagestest_user("av", NULL, "alpha", "viewer");
    u->aa = imagestest_user("aa", NULL, "alpha", "tenant_admin");
    u->bm = imagestest_user("bm", NULL, "beta", "member");
    u->ba = imagestest_user("ba", NULL, "beta", "tenant_admin");
    u->fin = imagestest_user("fin", "[\"finance\"]", NULL, NULL);
    u->aud = imagestest_user("aud", "[\"auditor\"]", NULL, NULL);
}

void imagestest_users_free(struct imagestest_users *u)
{
    char *all[] = {u->am, u->am2, u->av, u->aa, u->bm, u->ba, u->fin, u->aud};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

void imagestest_digest_of(unsigned n, char out[72])
{
    snprintf(out, 72, "sha256:%064x", n);
}

bool imagestest_is(const json_t *o, const char *k, const char *want)
{
    const char *v = jstr(o, k);
    return v && strcmp(v, want) == 0;
}

const char *imagestest_image_body(const char *repo, const char *tag, unsigned n, long long size,
                                  const char *extra)
{
    char d[72];
    imagestest_digest_of(n, d);
    return fmt("{\"repository\":\"%s\",\"tag\":\"%s\",\"digest\":\"%s\",\"size_bytes\":%lld%s%s}",
               repo, tag, d, size, extra[0] ? "," : "", extra);
}

void imagestest_reg_ok(const char *jwt, const char *tenant, const char *body, char id[37])
{
    struct http_res r;
    long st = reqj("POST", fmt("/api/v1/tenants/%s/images", tenant), jwt, body, &r);
    ck_assert_msg(st == 201, "registering %.200s in %s answered %ld: %.300s", body, tenant, st,
                  r.body ? r.body : "");
    http_res_free(&r);
    json_t *b = json_loads(body, 0, NULL);
    const char *p[3] = {tenant, jstr(b, "repository"), jstr(b, "tag")};
    char *v = audittest_sql_value(harness_srv.owner_url,
                                  "SELECT i.id FROM images i JOIN tenants t ON t.id = i.tenant_id"
                                  " WHERE t.slug = $1 AND i.repository = $2 AND i.tag = $3"
                                  " AND i.deleted_at IS NULL",
                                  3, p);
    json_decref(b);
    ck_assert_ptr_nonnull(v);
    snprintf(id, 37, "%s", v);
    free(v);
}

void imagestest_reg(const char *jwt, const char *tenant, const char *repo, const char *tag,
                    unsigned n, long long size, const char *extra, char id[37])
{
    imagestest_reg_ok(jwt, tenant, imagestest_image_body(repo, tag, n, size, extra), id);
}

bool imagestest_names_field(const json_t *problem, const char *field, const char *want)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(problem, "errors"), i, e)
    {
        const char *m = jstr(e, "message");
        if (imagestest_is(e, "field", field) && (!want || (m && strstr(m, want))))
            return true;
    }
    return false;
}

struct http_res imagestest_problem(const char *method, const char *path, const char *jwt,
                                   const char *body, long status, const char *code, const char *key,
                                   const char *value)
{
    struct http_res r;
    long st = reqj(method, path, jwt, body, &r);
    ck_assert_msg(st == status, "%s %.200s answered %ld (want %ld): %.400s", method, path, st,
                  status, r.body ? r.body : "");
    ck_assert_msg(imagestest_is(r.json, "code", code), "want code %s: %.400s", code, r.body);
    json_t *params = json_object_get(r.json, "params");
    ck_assert_msg(json_is_object(params), "no params: %.400s", r.body);
    ck_assert_msg(!key || imagestest_is(params, key, value), "want params.%s = %s: %.400s", key,
                  value, r.body);
    return r;
}

void imagestest_refused_hiding(const char *method, const char *path, const char *jwt,
                               const char *body, long status, const char *field, const char *what,
                               const char *absent)
{
    struct http_res r;
    long st = reqj(method, path, jwt, body, &r);
    ck_assert_msg(st == status, "%.100s: %s %.200s answered %ld (want %ld): %.300s", what, method,
                  path, st, status, r.body ? r.body : "");
    char *ct = http_header(&r, "Content-Type");
    ck_assert_msg(ct && strstr(ct, "application/problem+json"), "%.100s: content type %s", what,
                  ct ? ct : "none");
    free(ct);
    ck_assert_msg(json_integer_value(json_object_get(r.json, "status")) == status,
                  "%.100s: problem status: %.300s", what, r.body);
    ck_assert_msg(!field || imagestest_names_field(r.json, field, NULL),
                  "%.100s: no error for %s: %.300s", what, field, r.body);
    ck_assert_msg(!absent || !strstr(r.body, absent), "%.100s: %s shown: %.300s", what, absent,
                  r.body);
    http_res_free(&r);
}

void imagestest_refused(const char *method, const char *path, const char *jwt, const char *body,
                        long status, const char *field, const char *what)
{
    imagestest_refused_hiding(method, path, jwt, body, status, field, what, NULL);
}

long long imagestest_sql_num(const char *sql, int n, const char *const *p)
{
    return audittest_num(harness_srv.owner_url, sql, n, p);
}

void imagestest_count_is(long long want, const char *sql, int n, const char *const *p)
{
    long long got = imagestest_sql_num(sql, n, p);
    ck_assert_msg(got == want, "%.200s: %lld, want %lld", sql, got, want);
}

const char *imagestest_refs(const json_t *items)
{
    static char buf[2048];
    size_t o = 0, i;
    json_t *it;
    buf[0] = '\0';
    json_array_foreach(items, i, it)
    {
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s:%s", i ? " " : "",
                              jstr(it, "repository"), jstr(it, "tag"));
    }
    return buf;
}
