/*
 * test_paging.c - ?limit= and ?cursor= parsing, cursor splitting, and the
 * list answer (over rows that rowjson_rows makes of a PGresult built by
 * libpq itself, no server).
 */
#include "api/paging.h"
#include "lib/crypto.h"
#include "lib/err.h"
#include "lib/xalloc.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A request with the given query arguments (name, value, name, value, ..., NULL). */
static struct req *req_with(const char *const *kv)
{
    struct req *rq = xcalloc(1, sizeof *rq);
    for (size_t i = 0; kv && kv[i]; i += 2)
        req_add_query(rq, kv[i], kv[i + 1]);
    return rq;
}

static int parse_args(const char *const *kv, struct resp *rs, struct page *pg)
{
    struct req *rq = req_with(kv);
    memset(rs, 0, sizeof *rs);
    int rc = paging_parse(rq, rs, pg);
    req_free(rq);
    return rc;
}

/* paging_parse must fail with a 400 naming only `field`. */
static void expect_bad(const char *name, const char *value, const char *field)
{
    const char *kv[] = {name, value, NULL};
    struct resp rs;
    struct page pg = {.limit = -1, .after = NULL};
    int rc = parse_args(kv, &rs, &pg);
    ck_assert_msg(rc == AIDC_EINVAL, "%s=\"%s\": rc %d", name, value, rc);
    ck_assert_int_eq(rs.err.status, MHD_HTTP_BAD_REQUEST);
    ck_assert_uint_eq(rs.err.nfields, 1);
    ck_assert_str_eq(rs.err.fields[0].field, field);
    ck_assert_ptr_nonnull(rs.err.detail);
    ck_assert_ptr_null(pg.after);
    resp_free(&rs);
}

static char *encode(const void *data, size_t n)
{
    char *out = xmalloc(n * 4 / 3 + 8);
    crypto_b64url_encode(data, n, out, n * 4 / 3 + 8);
    return out;
}

START_TEST(test_defaults)
{
    struct resp rs;
    struct page pg;
    ck_assert_int_eq(parse_args(NULL, &rs, &pg), 0);
    ck_assert_int_eq(pg.limit, PAGING_DEFAULT);
    ck_assert_int_eq(pg.limit, 50);
    ck_assert_ptr_null(pg.after);
    ck_assert_int_eq(rs.err.status, 0);
    resp_free(&rs);
    paging_free(&pg);
}
END_TEST

START_TEST(test_limit_values)
{
    static const struct {
        const char *v;
        int limit;
    } ok[] = {{"1", 1}, {"25", 25}, {"1000", 1000}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const char *kv[] = {"limit", ok[i].v, NULL};
        struct resp rs;
        struct page pg;
        ck_assert_int_eq(parse_args(kv, &rs, &pg), 0);
        ck_assert_int_eq(pg.limit, ok[i].limit);
        ck_assert_uint_eq(rs.err.nfields, 0);
        resp_free(&rs);
        paging_free(&pg);
    }
}
END_TEST

START_TEST(test_limit_bad)
{
    static const char *const bad[] = {
        "0", "1001", "-1", "abc", "5x", "", "1e3", "99999999999999999999", "10.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_bad("limit", bad[i], "limit");
}
END_TEST

START_TEST(test_cursor_decoded)
{
    char *c = encode("abc", 3);
    ck_assert_str_eq(c, "YWJj");
    const char *kv[] = {"cursor", c, "limit", "10", NULL};
    struct resp rs;
    struct page pg;
    ck_assert_int_eq(parse_args(kv, &rs, &pg), 0);
    ck_assert_int_eq(pg.limit, 10);
    ck_assert_ptr_nonnull(pg.after);
    ck_assert_str_eq(pg.after, "abc");
    resp_free(&rs);
    paging_free(&pg);
    ck_assert_ptr_null(pg.after);
    free(c);

    /* UTF-8 text and the "|" of two-part keys survive */
    const char *key = "2026-12-02 08:00:00+00|\xe9\xa1\xb9\xe7\x9b\xae";
    c = encode(key, strlen(key));
    const char *kv2[] = {"cursor", c, NULL};
    ck_assert_int_eq(parse_args(kv2, &rs, &pg), 0);
    ck_assert_str_eq(pg.after, key);
    resp_free(&rs);
    paging_free(&pg);
    free(c);
}
END_TEST

START_TEST(test_cursor_empty_is_first_page)
{
    const char *kv[] = {"cursor", "", NULL};
    struct resp rs;
    struct page pg;
    ck_assert_int_eq(parse_args(kv, &rs, &pg), 0);
    ck_assert_ptr_null(pg.after);
    resp_free(&rs);
}
END_TEST

START_TEST(test_cursor_bad)
{
    expect_bad("cursor", "!!", "cursor");
    expect_bad("cursor", "YWJj!", "cursor");
    expect_bad("cursor", "A", "cursor");   /* length % 4 == 1 */
    expect_bad("cursor", "AA", "cursor");  /* decodes to a NUL byte */
    expect_bad("cursor", "YWJ", "cursor"); /* non-canonical */

    /* decodes to bytes that are not UTF-8 */
    static const unsigned char not_utf8[] = {0xff, 0xfe, 'a'};
    char *c = encode(not_utf8, sizeof not_utf8);
    expect_bad("cursor", c, "cursor");
    free(c);
    static const unsigned char half_char[] = {'a', 0xe9, 0xa1};
    c = encode(half_char, sizeof half_char);
    expect_bad("cursor", c, "cursor");
    free(c);
}
END_TEST

START_TEST(test_cursor_length_limit)
{
    char key[514];
    memset(key, 'k', sizeof key);
    /* 512 bytes is the largest cursor */
    char *c = encode(key, 512);
    const char *kv[] = {"cursor", c, NULL};
    struct resp rs;
    struct page pg;
    ck_assert_int_eq(parse_args(kv, &rs, &pg), 0);
    ck_assert_uint_eq(strlen(pg.after), 512);
    resp_free(&rs);
    paging_free(&pg);
    free(c);

    c = encode(key, 513);
    expect_bad("cursor", c, "cursor");
    free(c);

    char *huge = xmalloc(100001);
    memset(huge, 'A', 100000);
    huge[100000] = '\0';
    expect_bad("cursor", huge, "cursor");
    free(huge);
}
END_TEST

START_TEST(test_bad_limit_reported_before_cursor)
{
    const char *kv[] = {"limit", "0", "cursor", "!!", NULL};
    struct resp rs;
    struct page pg;
    ck_assert_int_eq(parse_args(kv, &rs, &pg), AIDC_EINVAL);
    ck_assert_uint_ge(rs.err.nfields, 1);
    ck_assert_str_eq(rs.err.fields[0].field, "limit");
    ck_assert_ptr_null(pg.after);
    resp_free(&rs);
}
END_TEST

START_TEST(test_split)
{
    char a[] = "2026-12-02|p1";
    char *second = (char *)"unset";
    paging_split(a, &second);
    ck_assert_str_eq(a, "2026-12-02");
    ck_assert_str_eq(second, "p1");

    char b[] = "only";
    second = (char *)"unset";
    paging_split(b, &second);
    ck_assert_str_eq(b, "only");
    ck_assert_ptr_null(second);

    char c[] = "a|b|c";
    paging_split(c, &second);
    ck_assert_str_eq(c, "a");
    ck_assert_str_eq(second, "b|c");

    char d[] = "|x";
    paging_split(d, &second);
    ck_assert_str_eq(d, "");
    ck_assert_str_eq(second, "x");

    char e[] = "x|";
    paging_split(e, &second);
    ck_assert_str_eq(e, "x");
    ck_assert_str_eq(second, "");

    second = (char *)"unset";
    paging_split(NULL, &second);
    ck_assert_ptr_null(second);
}
END_TEST

/* ---- paging_page -------------------------------------------------------------- */

/* n rows of (id text, _cursor text): "p<i>", "key<i>", as a db/ list function hands them out. */
static struct db_rows rows(int n)
{
    PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    ck_assert_ptr_nonnull(r);
    PGresAttDesc att[2];
    memset(att, 0, sizeof att);
    att[0].name = (char *)"id";
    att[1].name = (char *)"_cursor";
    att[0].typid = att[1].typid = 25; /* text */
    att[0].typlen = att[1].typlen = -1;
    att[0].atttypmod = att[1].atttypmod = -1;
    ck_assert_int_eq(PQsetResultAttrs(r, 2, att), 1);
    for (int i = 0; i < n; i++) {
        char id[16], key[16];
        snprintf(id, sizeof id, "p%d", i);
        snprintf(key, sizeof key, "key%d", i);
        ck_assert_int_eq(PQsetvalue(r, i, 0, id, (int)strlen(id)), 1);
        ck_assert_int_eq(PQsetvalue(r, i, 1, key, (int)strlen(key)), 1);
    }
    struct db_rows out = {0};
    ck_assert_int_eq(rowjson_rows(r, false, &out), 0);
    PQclear(r);
    return out;
}

START_TEST(test_answer_more_rows)
{
    /* limit 2, the query returned limit+1 rows: two items and a cursor */
    struct page pg = {.limit = 2, .rows = rows(3)};
    struct resp rs;
    memset(&rs, 0, sizeof rs);
    ck_assert_int_eq(paging_page(&rs, &pg), 0);
    ck_assert_int_eq(rs.status, MHD_HTTP_OK);
    json_t *items = json_object_get(rs.body, "items");
    ck_assert_uint_eq(json_array_size(items), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "id")), "p0");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 1), "id")), "p1");
    ck_assert_ptr_null(json_object_get(json_array_get(items, 0), "_cursor"));
    const char *next = json_string_value(json_object_get(rs.body, "next_cursor"));
    ck_assert_ptr_nonnull(next);

    /* the cursor is the last returned row's key, and paging_parse reads it back */
    const char *kv[] = {"cursor", next, NULL};
    struct resp rs2;
    struct page pg2;
    ck_assert_int_eq(parse_args(kv, &rs2, &pg2), 0);
    ck_assert_str_eq(pg2.after, "key1");
    paging_free(&pg2);
    resp_free(&rs2);
    resp_free(&rs);
    paging_free(&pg);
}
END_TEST

START_TEST(test_answer_last_page)
{
    for (int n = 0; n <= 2; n++) {
        struct page pg = {.limit = 2, .rows = rows(n)};
        struct resp rs;
        memset(&rs, 0, sizeof rs);
        ck_assert_int_eq(paging_finish(&rs, &pg, 0, NULL), 0);
        ck_assert_uint_eq(json_array_size(json_object_get(rs.body, "items")), (size_t)n);
        ck_assert(json_is_null(json_object_get(rs.body, "next_cursor")));
        ck_assert_ptr_null(pg.rows.items); /* finished: freed */
        resp_free(&rs);
    }
}
END_TEST

START_TEST(test_finish_unreadable_cursor_and_drop)
{
    /* the database could not read the cursor: a 400 on cursor, nothing answered */
    struct page pg = {.limit = 2, .after = xstrdup("k1"), .rows = rows(1)};
    struct resp rs;
    memset(&rs, 0, sizeof rs);
    ck_assert_int_lt(paging_finish(&rs, &pg, AIDC_EINVAL, NULL), 0);
    ck_assert_int_eq(rs.err.status, MHD_HTTP_BAD_REQUEST);
    ck_assert_uint_eq(rs.err.nfields, 1);
    ck_assert_str_eq(rs.err.fields[0].field, "cursor");
    ck_assert_ptr_null(rs.body);
    resp_free(&rs);
    /* a handler's own refusal of a filter stays what it is: no cursor named beside it */
    struct page pf = {.limit = 2, .after = xstrdup("k1")};
    memset(&rs, 0, sizeof rs);
    api_field_problem(&rs, "resource", PROBLEM_V_INVALID, NULL);
    ck_assert_int_lt(paging_finish(&rs, &pf, api_fail_fields(&rs), NULL), 0);
    ck_assert_uint_eq(rs.err.nfields, 1);
    ck_assert_str_eq(rs.err.fields[0].field, "resource");
    resp_free(&rs);
    /* dropped keys are left out of every item */
    static const char *const drop[] = {"id", NULL};
    struct page pg2 = {.limit = 2, .rows = rows(2)};
    memset(&rs, 0, sizeof rs);
    ck_assert_int_eq(paging_finish(&rs, &pg2, 0, drop), 0);
    ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(rs.body, "items"), 0), "id"));
    resp_free(&rs);
}
END_TEST

static Suite *paging_suite(void)
{
    Suite *s = suite_create("paging");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_limit_values);
    tcase_add_test(tc, test_limit_bad);
    tcase_add_test(tc, test_cursor_decoded);
    tcase_add_test(tc, test_cursor_empty_is_first_page);
    tcase_add_test(tc, test_cursor_bad);
    tcase_add_test(tc, test_cursor_length_limit);
    tcase_add_test(tc, test_bad_limit_reported_before_cursor);
    tcase_add_test(tc, test_split);
    suite_add_tcase(s, tc);

    TCase *ans = tcase_create("answer");
    tcase_add_test(ans, test_answer_more_rows);
    tcase_add_test(ans, test_answer_last_page);
    tcase_add_test(ans, test_finish_unreadable_cursor_and_drop);
    suite_add_tcase(s, ans);
    return s;
}

int main(void)
{
    return suite_run(paging_suite());
}
