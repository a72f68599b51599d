/*
 * test_badinput_paths.c - bad path parameters and query strings never crash
 * aidcd, never change or lose data, and always get a clear 4xx problem+json
 * answer: malformed slugs, user names and ids, percent-encoded junk and NUL
 * bytes (which must not cut a path short), bad ?limit= and ?cursor=; and
 * keyset pagination visits every row once. Bodies: test_badinput_bodies.c.
 *
 * Most checks are "soft" (tests/support/soft.h): every discrepancy is printed
 * to stderr (prefixed DISCREPANCY) with the request and the answer, and the
 * test fails at its end, so one run lists everything that is wrong.
 */
#include "lib/crypto.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/soft.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADM     (harness_srv.admin_token)
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void setup(void)
{
    soft_fixture("badinput_paths");
}

/* ---- requests ------------------------------------------------------------------- */

static void b64url(const unsigned char *in, size_t n, char *out, size_t outsz)
{
    crypto_b64url_encode(in, n, out, outsz);
}

/* GET with a URL of any length (client.c's buffer holds 2 KiB). */
static long get_long(const char *path, const char *token, struct http_res *out)
{
    size_t n = strlen(harness_srv.base) + strlen(path) + 1;
    char *url = malloc(n);
    ck_assert_ptr_nonnull(url);
    snprintf(url, n, "%s%s", harness_srv.base, path);
    /* http_raw with an empty base would do, but it copies into 2 KiB: use curl here */
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    FILE *bf, *hf;
    char *bp = NULL, *hp = NULL;
    size_t bn = 0, hn = 0;
    bf = open_memstream(&bp, &bn);
    hf = open_memstream(&hp, &hn);
    struct curl_slist *h = NULL;
    char auth[1100];
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, bf);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, hf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    fclose(bf);
    fclose(hf);
    free(url);
    memset(out, 0, sizeof *out);
    out->status = status;
    out->body = bp;
    out->body_len = bn;
    out->headers = hp;
    out->json = bn ? json_loadb(bp, bn, 0, NULL) : NULL;
    return status;
}

static void bad_get(const char *method, const char *path, long status, const char *field)
{
    struct http_res r;
    char what[700];
    if (strcmp(method, "GET") == 0)
        get_long(path, ADM, &r);
    else
        http_do(&harness_srv, method, path, ADM, NULL, NULL, &r);
    snprintf(what, sizeof what, "%s %s", method, soft_show(path, strlen(path)));
    soft_problem(what, &r, status, field);
    http_res_free(&r);
}

/* ---- path parameters and query junk ----------------------------------------------- */

static json_t *get_members(const char *tenant)
{
    struct http_res r;
    reqj("GET", fmt("/api/v1/tenants/%s/members?limit=1000", tenant), ADM, NULL, &r);
    json_t *j = json_incref(r.json);
    http_res_free(&r);
    return j;
}

struct pcase {
    const char *method, *path;
    long status; /* 0: 400 or 404 */
    const char *field;
};

START_TEST(bad_path_parameters)
{
    char *before = soft_snapshot();
    static const struct pcase cases[] = {
        {"GET", "/api/v1/tenants/UPPER", 400, "tenant"},
        {"GET", "/api/v1/tenants/UPPER/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/1abc/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/a", 400, "tenant"},
        {"GET", "/api/v1/tenants/a_b/members", 400, "tenant"},
        {"GET", "/api/v1/tenants/%E4%B8%AD%E6%96%87", 400, "tenant"},
        {"GET", "/api/v1/tenants/%FF%FE/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/%27%20OR%20%271%27%3D%271", 400, "tenant"},
        {"GET", "/api/v1/tenants/acme%3B--/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/acme%20/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/%zz", 400, "tenant"},
        {"GET", "/api/v1/tenants/%", 400, "tenant"},
        {"GET", "/api/v1/tenants/%2e%2e", 0, NULL},
        {"GET", "/api/v1/tenants/ghost-tenant", 404, NULL},
        {"GET", "/api/v1/tenants/ghost-tenant/projects", 404, NULL},
        {"GET", "/api/v1/tenants/acme/projects/UPPER", 400, "project"},
        {"GET", "/api/v1/tenants/acme/projects/x", 400, "project"},
        {"GET", "/api/v1/tenants/acme/projects/%27%3B%20DROP%20TABLE%20projects%3B--", 400,
         "project"},
        {"DELETE", "/api/v1/tenants/acme/projects/Bad_Slug", 400, "project"},
        {"GET", "/api/v1/tenants/acme/projects/nope", 404, NULL},
        {"GET", "/api/v1/tenants/acme/projects/base/extra", 404, NULL},
        {"GET", "/api/v1/users/Alice", 400, "username"},
        {"GET", "/api/v1/users/9lives", 400, "username"},
        {"GET", "/api/v1/users/a%20b", 400, "username"},
        {"GET", "/api/v1/users/%E4%B8%AD", 400, "username"},
        {"GET", "/api/v1/users/alice%27--", 400, "username"},
        {"GET", "/api/v1/users/ghost", 404, NULL},
        {"DELETE", "/api/v1/tenants/acme/members/UPPER", 400, "username"},
        {"DELETE", "/api/v1/tenants/acme/members/a%2Fb", 0, NULL},
        {"DELETE", "/api/v1/tenants/acme/members/ghost", 404, NULL},
        {"DELETE", "/api/v1/tokens/not-a-uuid", 400, "id"},
        {"DELETE", "/api/v1/tokens/00000000-0000-0000-0000-00000000000g", 400, "id"},
        {"DELETE", "/api/v1/tokens/00000000-0000-0000-0000-0000000000000", 400, "id"},
        {"DELETE", "/api/v1/tokens/%27%3B%20DROP%20TABLE%20api_tokens%3B--", 400, "id"},
        {"DELETE", "/api/v1/tokens/00000000000000000000000000000000", 400, "id"},
        {"DELETE", "/api/v1/tokens/00000000-0000-0000-0000-000000000000", 404, NULL},
        {"DELETE", "/api/v1/tokens/%FF", 400, "id"},
    };
    for (size_t i = 0; i < N_OF(cases); i++)
        bad_get(cases[i].method, cases[i].path, cases[i].status, cases[i].field);
    /* a very long path segment */
    char *seg = soft_rep("a", 5000);
    char *p = malloc(6000);
    snprintf(p, 6000, "/api/v1/tenants/%s/projects", seg);
    bad_get("GET", p, 0, NULL);
    snprintf(p, 6000, "/api/v1/users/%s", seg);
    bad_get("GET", p, 0, NULL);
    free(p);
    free(seg);
    /* bodies on bad paths: the path is checked, nothing is written */
    soft_bad("PATCH", "/api/v1/tenants/acme/projects/Bad", ADM, "{\"name\":\"x\"}", 400, "project");
    soft_bad("PATCH", "/api/v1/users/Alice", ADM, "{\"display_name\":\"x\"}", 400, "username");
    soft_bad("PUT", "/api/v1/tenants/acme/members/Bad%20Name", ADM, "{\"role\":\"member\"}", 400,
             "username");
    soft_bad("PUT", "/api/v1/tenants/acme/members/ghost", ADM, "{\"role\":\"member\"}", 404, NULL);
    soft_bad("PATCH", "/api/v1/tenants/UPPER", ADM, "{\"name\":\"x\"}", 400, "tenant");
    soft_bad("POST", "/api/v1/tenants/UPPER/projects", ADM, "{\"slug\":\"ok\",\"name\":\"x\"}", 400,
             "tenant");
    soft_bad("POST", "/api/v1/tenants/ghost-tenant/projects", ADM,
             "{\"slug\":\"ok\",\"name\":\"x\"}", 404, NULL);
    /* query junk */
    bad_get("GET", "/api/v1/tenants?%FF=1", 400, NULL);
    bad_get("GET", "/api/v1/tenants?%E4%B8%AD=1", 400, "\xe4\xb8\xad");
    bad_get("GET", "/api/v1/tenants?lim%00it=5", 400, NULL);
    bad_get("GET", "/api/v1/tenants?limit=5&limit=6", 400, NULL);
    bad_get("GET", "/api/v1/users/alice?limit=5", 400, "limit");
    bad_get("GET", "/api/v1/tenants?limit=%FF", 400, "limit");
    soft_same_snapshot("bad paths", before);
    free(before);
    soft_done();
}
END_TEST

/*
 * A percent-encoded NUL in a path must not cut the path short: "acme%00evil"
 * is not "acme", and "victim%00x" must not delete project "victim".
 */
START_TEST(nul_bytes_in_paths_do_not_alias)
{
    make_tenant("nul");
    make_project("nul", "victim");
    make_user("nul-user", "nul-user-password", NULL);
    make_member("nul", "nul-user", "viewer");
    static const struct pcase cases[] = {
        {"GET", "/api/v1/tenants/%00", 0, NULL},
        {"GET", "/api/v1/tenants/nul%00evil", 0, NULL},
        {"GET", "/api/v1/tenants/nul%00/projects", 0, NULL},
        {"GET", "/api/v1/tenants/nul/projects/victim%00x", 0, NULL},
        {"GET", "/api/v1/users/nul-user%00x", 0, NULL},
        {"DELETE", "/api/v1/tenants/nul/projects/victim%00.json", 0, NULL},
        {"DELETE", "/api/v1/tenants/nul/members/nul-user%00x", 0, NULL},
    };
    for (size_t i = 0; i < N_OF(cases); i++)
        bad_get(cases[i].method, cases[i].path, cases[i].status, cases[i].field);
    soft(req("GET", "/api/v1/tenants/nul/projects/victim", ADM, NULL) == 200,
         "project nul/victim is gone after DELETE /api/v1/tenants/nul/projects/victim%%00.json");
    json_t *j = get_members("nul");
    soft(soft_find_item(j, "username", "nul-user") != NULL,
         "member nul-user is gone after DELETE /api/v1/tenants/nul/members/nul-user%%00x");
    json_decref(j);
    soft_done();
}
END_TEST

static const char *const list_paths[] = {
    "/api/v1/tenants", "/api/v1/tenants/acme/projects",
    "/api/v1/users",   "/api/v1/tenants/acme/members",
    "/api/v1/tokens",
};

START_TEST(bad_limits_and_cursors)
{
    /* the admin has a token, so every list has at least one item */
    char *secret = make_token(ADM, "[\"jobs:read\"]", NULL);
    free(secret);
    static const char *const bad_limits[] = {
        "0",
        "-1",
        "1001",
        "99999999999999999999",
        "-99999999999999999999",
        "abc",
        "",
        "1.5",
        "5abc",
        "0x10",
        "1e3",
        "-0",
        "%FF",
        "2147483648",
        "4294967297",
        "%00",
        "5%00",
    };
    static const unsigned char not_utf8[] = {0xff, 0xfe, 0xfd};
    static const unsigned char cut_utf8[] = {'o', 'k', 0xc3}; /* truncated UTF-8 */
    static const unsigned char with_nul[] = {'a', 0, 'b'};
    char enc[128];
    for (size_t l = 0; l < N_OF(list_paths); l++) {
        const char *lp = list_paths[l];
        for (size_t i = 0; i < N_OF(bad_limits); i++)
            bad_get("GET", fmt("%s?limit=%s", lp, bad_limits[i]), 400, "limit");
        struct http_res r;
        get_long(fmt("%s?limit=1000", lp), ADM, &r);
        soft(r.status == 200 && json_is_array(json_object_get(r.json, "items")) &&
                 json_is_null(json_object_get(r.json, "next_cursor")),
             "GET %s?limit=1000: %ld %s", lp, r.status, soft_show(r.body, r.body_len));
        http_res_free(&r);
        get_long(fmt("%s?limit=1&cursor=", lp), ADM, &r);
        soft(r.status == 200, "GET %s?limit=1&cursor= (empty): %ld %s", lp, r.status,
             soft_show(r.body, r.body_len));
        http_res_free(&r);
        /* garbage cursors */
        bad_get("GET", fmt("%s?cursor=!!!", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=%%00", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=%%FF%%FE", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor====", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=a", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=ab%%2Bc", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=ab/c", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=%%27%%20OR%%201%%3D1", lp), 400, "cursor");
        b64url(not_utf8, sizeof not_utf8, enc, sizeof enc);
        bad_get("GET", fmt("%s?cursor=%s", lp, enc), 400, "cursor");
        b64url(cut_utf8, sizeof cut_utf8, enc, sizeof enc);
        bad_get("GET", fmt("%s?cursor=%s", lp, enc), 400, "cursor");
        b64url(with_nul, sizeof with_nul, enc, sizeof enc);
        bad_get("GET", fmt("%s?cursor=%s", lp, enc), 400, "cursor");
        char *longc = soft_rep("QUFB", 1250); /* 5,000 characters of valid base64url */
        char *p = malloc(strlen(lp) + 5100);
        sprintf(p, "%s?cursor=%s", lp, longc);
        bad_get("GET", p, 400, "cursor");
        free(p);
        free(longc);
        /* a real cursor still works afterwards */
        get_long(fmt("%s?limit=1", lp), ADM, &r);
        const char *next = json_string_value(json_object_get(r.json, "next_cursor"));
        if (next) {
            struct http_res r2;
            get_long(fmt("%s?limit=1&cursor=%s", lp, next), ADM, &r2);
            soft(r2.status == 200, "GET %s with its own next_cursor: %ld", lp, r2.status);
            http_res_free(&r2);
        }
        http_res_free(&r);
    }
    /* token cursors are "created_at|id": malformed inner parts are the client's fault */
    static const char *const inner[] = {
        "garbage",
        "2020-01-01|not-a-uuid",
        "not-a-time|00000000-0000-0000-0000-000000000000",
        "|",
        "2020-13-45 99:99:99+00|00000000-0000-0000-0000-000000000000",
        "'; DROP TABLE api_tokens; --|00000000-0000-0000-0000-000000000000",
    };
    for (size_t i = 0; i < N_OF(inner); i++) {
        b64url((const unsigned char *)inner[i], strlen(inner[i]), enc, sizeof enc);
        bad_get("GET", fmt("/api/v1/tokens?cursor=%s", enc), 400, "cursor");
    }
    soft_done();
}
END_TEST

/* ---- keyset pagination ------------------------------------------------------------ */

/*
 * Walk path page by page (limit per page) and compare with one big page:
 * every item once, in the same order, no gaps, the last next_cursor null.
 */
static void walk(const char *path, int limit, const char *key, size_t min_items)
{
    struct http_res all;
    reqj("GET", fmt("%s?limit=1000", path), ADM, NULL, &all);
    ck_assert_msg(all.status == 200, "GET %s?limit=1000: %ld", path, all.status);
    json_t *want = json_object_get(all.json, "items");
    size_t n = json_array_size(want);
    soft(n >= min_items, "%s lists %zu items, expected at least %zu", path, n, min_items);
    json_t *got = json_array();
    char cursor[1024] = "";
    int pages = 0;
    for (;;) {
        struct http_res r;
        const char *url = cursor[0] ? fmt("%s?limit=%d&cursor=%s", path, limit, cursor)
                                    : fmt("%s?limit=%d", path, limit);
        reqj("GET", url, ADM, NULL, &r);
        pages++;
        if (r.status != 200 || pages > 1000) {
            soft(false, "walking %s: GET %s answered %ld %s", path, url, r.status,
                 soft_show(r.body, r.body_len));
            http_res_free(&r);
            break;
        }
        json_t *items = json_object_get(r.json, "items");
        size_t k = json_array_size(items);
        soft(k <= (size_t)limit, "walking %s: page of %zu items with limit %d", path, k, limit);
        json_array_extend(got, items);
        const char *next = json_string_value(json_object_get(r.json, "next_cursor"));
        soft(next || json_is_null(json_object_get(r.json, "next_cursor")),
             "walking %s: next_cursor is neither a string nor null", path);
        if (next)
            soft(k == (size_t)limit, "walking %s: page %d has %zu items but a next_cursor", path,
                 pages, k);
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        http_res_free(&r);
        if (!next)
            break;
    }
    size_t m = json_array_size(got);
    soft(m == n, "walking %s with limit %d collected %zu items, one page of 1000 has %zu", path,
         limit, m, n);
    size_t expect_pages = n ? (n + (size_t)limit - 1) / (size_t)limit : 1;
    soft((size_t)pages == expect_pages, "walking %s with limit %d took %d pages, expected %zu",
         path, limit, pages, expect_pages);
    for (size_t i = 0; i < m && i < n; i++) {
        const char *a = json_string_value(json_object_get(json_array_get(got, i), key));
        const char *b = json_string_value(json_object_get(json_array_get(want, i), key));
        soft(a && b && strcmp(a, b) == 0, "walking %s: item %zu is %s, expected %s", path, i,
             soft_shows(a), soft_shows(b));
        for (size_t j = 0; j < i; j++) {
            const char *c = json_string_value(json_object_get(json_array_get(got, j), key));
            soft(!(a && c && strcmp(a, c) == 0), "walking %s: %s seen twice", path, soft_shows(a));
        }
    }
    json_decref(got);
    http_res_free(&all);
}

START_TEST(keyset_pagination_visits_everything_once)
{
    make_tenant("pager");
    /* slugs and names whose order is easy to get wrong */
    static const char *const slugs[] = {"ab", "a-b", "a-c", "aa", "a0", "b-", "zz-top"};
    for (size_t i = 0; i < N_OF(slugs); i++)
        make_project("pager", slugs[i]);
    static const char *const users[] = {"m.a", "m_a", "m-a", "ma", "m0", "mz", "m.b"};
    for (size_t i = 0; i < N_OF(users); i++) {
        make_user(users[i], "member-password-1", NULL);
        make_member("pager", users[i], i % 2 ? "viewer" : "member");
    }
    for (int i = 0; i < 7; i++)
        free(make_token(ADM, "[\"jobs:read\"]", NULL));
    for (int limit = 1; limit <= 3; limit++) {
        walk("/api/v1/tenants/pager/projects", limit, "slug", 7);
        walk("/api/v1/tenants", limit, "slug", 2);
        walk("/api/v1/users", limit, "username", 8);
        walk("/api/v1/tenants/pager/members", limit, "username", 7);
        walk("/api/v1/tokens", limit, "id", 7);
    }
    walk("/api/v1/tenants/pager/projects", 7, "slug", 7);
    walk("/api/v1/tenants/pager/projects", 6, "slug", 7);
    walk("/api/v1/tenants/pager/members", 7, "username", 7);
    soft_done();
}
END_TEST

int main(void)
{
    harness_require_pg();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("badinput_paths");
    TCase *tc = tcase_create("badinput_paths");
    tcase_add_unchecked_fixture(tc, setup, harness_teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, bad_path_parameters);
    tcase_add_test(tc, nul_bytes_in_paths_do_not_alias);
    tcase_add_test(tc, bad_limits_and_cursors);
    tcase_add_test(tc, keyset_pagination_visits_everything_once);
    soft_add_server_check(tc);
    suite_add_tcase(s, tc);
    int rc = suite_run(s);
    curl_global_cleanup();
    return rc;
}
