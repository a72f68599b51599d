/*
 * test_rowjson.c - PostgreSQL text values to JSON: timestamptz to RFC 3339
 * UTC, and whole rows (built with libpq's PQmakeEmptyPGresult, no server).
 */
#include "tests/support/suite.h"
#include "db/rowjson.h"
#include "lib/err.h"

#include <check.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

static void expect_ts(const char *pg, const char *want)
{
    char out[64];
    memset(out, 'x', sizeof out);
    int rc = rowjson_timestamp(pg, out, sizeof out);
    ck_assert_msg(rc == 0, "\"%s\" rejected", pg);
    ck_assert_msg(strcmp(out, want) == 0, "\"%s\" -> \"%s\", want \"%s\"", pg, out, want);
}

static void expect_bad_ts(const char *pg)
{
    char out[64];
    ck_assert_msg(rowjson_timestamp(pg, out, sizeof out) == AIDC_EINVAL, "\"%s\" accepted", pg);
}

START_TEST(test_utc)
{
    expect_ts("2026-12-02 08:00:00+00", "2026-12-02T08:00:00Z");
    expect_ts("1970-01-01 00:00:00+00", "1970-01-01T00:00:00Z");
    expect_ts("2038-01-19 03:14:08+00", "2038-01-19T03:14:08Z"); /* past 32-bit time_t */
    expect_ts("9999-12-31 23:59:59+00", "9999-12-31T23:59:59Z");
}
END_TEST

START_TEST(test_fraction_kept)
{
    expect_ts("2026-12-02 08:00:00.5+00", "2026-12-02T08:00:00.5Z");
    expect_ts("2026-12-02 08:00:00.123456+00", "2026-12-02T08:00:00.123456Z");
    expect_ts("2026-12-02 08:00:00.000001+00", "2026-12-02T08:00:00.000001Z");
    expect_ts("2026-12-02 08:00:00.123456789+00", "2026-12-02T08:00:00.123456789Z");
}
END_TEST

START_TEST(test_offsets)
{
    expect_ts("2026-12-02 08:00:00+05:30", "2026-12-02T02:30:00Z");
    expect_ts("2026-12-02 08:00:00-03", "2026-12-02T11:00:00Z");
    expect_ts("2026-12-02 08:00:00+08", "2026-12-02T00:00:00Z");
    expect_ts("2026-12-02 08:00:00-09:30", "2026-12-02T17:30:00Z");
    expect_ts("2026-12-02 08:00:00.25+05:45", "2026-12-02T02:15:00.25Z");
    /* PostgreSQL prints seconds for historical local mean times */
    expect_ts("1900-01-01 00:19:32+00:19:32", "1900-01-01T00:00:00Z");
}
END_TEST

START_TEST(test_day_rollover)
{
    expect_ts("2026-12-31 23:30:00-03", "2027-01-01T02:30:00Z");
    expect_ts("2026-03-01 01:00:00+05:30", "2026-02-28T19:30:00Z");
    expect_ts("2024-03-01 00:00:00+01", "2024-02-29T23:00:00Z"); /* leap year */
    expect_ts("2027-01-01 00:00:00+14", "2026-12-31T10:00:00Z");
    expect_ts("2026-12-02 20:00:00-12", "2026-12-03T08:00:00Z");
}
END_TEST

START_TEST(test_garbage_rejected)
{
    static const char *const bad[] = {
        "",
        "garbage",
        "infinity",
        "-infinity",
        "2026-12-02T08:00:00Z",     /* already RFC 3339 */
        "2026-12-02 08:00",
        "2026-12-02 08:00:00+",
        "2026-12-02 08:00:00 +00",
        "2026-12-02 08:00:00+00x",
        "2026-12-02 08:00:00+00 BC",
        "2026-12-02 08:00:00.+00",
        "2026-12-02 08:00:00.1234567890+00", /* more than nanoseconds */
        "2026-12-02 08:00:00+0a",
        "2026-12-02 08:00:00+-1",
        "2026-12-02 08:00:00+05:3x",
        "2026-12-02 08:00:00+05:",
        "2026-+1-02 08:00:00+00",
        "2026-12-02  8:00:00+00",
        " 2026-12-02 08:00:00+00",
        "12026-12-02 08:00:00+00",
        "2026-13-01 00:00:00+00",
        "2026-00-01 00:00:00+00",
        "2026-12-00 00:00:00+00",
        "2026-12-32 00:00:00+00",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_bad_ts(bad[i]);
}
END_TEST

/* A one-digit offset ends the string early: nothing past its end may be read. */
START_TEST(test_short_offset_no_overread)
{
    /* the byte after the terminator is another NUL: reading it would "accept" */
    static const char s1[] = "2026-12-02 08:00:00+5\0\0\0";
    static const char s2[] = "2026-12-02 08:00:00+05:3\0\0\0";
    expect_bad_ts(s1);
    expect_bad_ts(s2);
}
END_TEST

START_TEST(test_out_of_range_time_rejected)
{
    expect_bad_ts("2026-12-02 25:00:00+00");
    expect_bad_ts("2026-12-02 08:60:00+00");
    expect_bad_ts("2026-12-02 08:00:00+99");
}
END_TEST

START_TEST(test_small_buffer)
{
    char out[20];
    /* "2026-12-02T08:00:00Z" needs 21 bytes */
    ck_assert_int_eq(rowjson_timestamp("2026-12-02 08:00:00+00", out, sizeof out), AIDC_EINVAL);
    char out21[21];
    ck_assert_int_eq(rowjson_timestamp("2026-12-02 08:00:00+00", out21, sizeof out21), 0);
    ck_assert_str_eq(out21, "2026-12-02T08:00:00Z");
    /* with a fraction: "2026-12-02T08:00:00.123Z" needs 25 */
    char out24[24], out25[25];
    ck_assert_int_eq(rowjson_timestamp("2026-12-02 08:00:00.123+00", out24, sizeof out24),
                     AIDC_EINVAL);
    ck_assert_int_eq(rowjson_timestamp("2026-12-02 08:00:00.123+00", out25, sizeof out25), 0);
    ck_assert_str_eq(out25, "2026-12-02T08:00:00.123Z");
}
END_TEST

/* ---- rows --------------------------------------------------------------------- */

enum {
    T_BOOL = 16,
    T_INT8 = 20,
    T_INT4 = 23,
    T_TEXT = 25,
    T_FLOAT8 = 701,
    T_NUMERIC = 1700,
    T_TIMESTAMPTZ = 1184,
    T_JSON = 114,
    T_JSONB = 3802,
};

struct col {
    const char *name;
    unsigned typid;
};

/* A result with the given columns and rows (NULL value = SQL NULL). */
static PGresult *make_result(const struct col *cols, int ncols, const char *const *vals, int nrows)
{
    PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    ck_assert_ptr_nonnull(r);
    PGresAttDesc att[16];
    ck_assert_int_le(ncols, 16);
    memset(att, 0, sizeof att);
    for (int c = 0; c < ncols; c++) {
        att[c].name = (char *)cols[c].name;
        att[c].typid = cols[c].typid;
        att[c].typlen = -1;
        att[c].atttypmod = -1;
    }
    ck_assert_int_eq(PQsetResultAttrs(r, ncols, att), 1);
    for (int row = 0; row < nrows; row++)
        for (int c = 0; c < ncols; c++) {
            const char *v = vals[row * ncols + c];
            ck_assert_int_eq(PQsetvalue(r, row, c, (char *)v, v ? (int)strlen(v) : -1), 1);
        }
    return r;
}

static const struct col cols[] = {
    {"id", T_TEXT},       {"_cursor", T_TEXT},     {"ok", T_BOOL},
    {"n", T_INT4},        {"big", T_INT8},         {"ratio", T_FLOAT8},
    {"meta", T_JSONB},    {"raw", T_JSON},         {"created_at", T_TIMESTAMPTZ},
    {"note", T_TEXT},     {"price", T_NUMERIC},
};
#define NCOLS 11

START_TEST(test_row_types)
{
    const char *vals[] = {
        "p1", "2026|p1", "t", "-42", "9007199254740993", "0.25", "{\"a\": [1, 2]}", "\"s\"",
        "2026-12-02 08:00:00.5+05:30", NULL, "12.50",
        "p2", "2026|p2", "f", "0", "0", "-1e3", "null", "[]", "2026-12-02 08:00:00+00", "text",
        "0.000",
    };
    PGresult *r = make_result(cols, NCOLS, vals, 2);
    json_t *o = rowjson_object(r, 0);
    ck_assert_ptr_nonnull(o);
    json_t *want = json_loads("{\"id\": \"p1\", \"ok\": true, \"n\": -42,"
                              " \"big\": 9007199254740993, \"ratio\": 0.25,"
                              " \"meta\": {\"a\": [1, 2]}, \"raw\": \"s\","
                              " \"created_at\": \"2026-12-02T02:30:00.5Z\", \"note\": null,"
                              " \"price\": \"12.50\"}",
                              0, NULL);
    ck_assert_ptr_nonnull(want);
    char *got = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_msg(json_equal(o, want), "row 0 is %s", got);
    ck_assert_ptr_null(json_object_get(o, "_cursor")); /* internal columns skipped */
    free(got);
    json_decref(o);
    json_decref(want);

    json_t *a = rowjson_array(r);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(json_array_size(a), 2);
    json_t *o2 = json_array_get(a, 1);
    ck_assert(json_is_false(json_object_get(o2, "ok")));
    ck_assert(json_is_null(json_object_get(o2, "meta")));
    ck_assert(json_is_array(json_object_get(o2, "raw")));
    ck_assert(json_is_real(json_object_get(o2, "ratio")));
    ck_assert_str_eq(json_string_value(json_object_get(o2, "created_at")), "2026-12-02T08:00:00Z");
    ck_assert_str_eq(json_string_value(json_object_get(o2, "price")), "0.000");
    json_decref(a);

    ck_assert_str_eq(rowjson_get(r, 0, "_cursor"), "2026|p1");
    ck_assert_str_eq(rowjson_get(r, 1, "id"), "p2");
    ck_assert_ptr_null(rowjson_get(r, 0, "note"));    /* SQL NULL */
    ck_assert_ptr_null(rowjson_get(r, 0, "missing")); /* no such column */
    ck_assert_ptr_null(rowjson_get(r, 2, "id"));      /* no such row */
    PQclear(r);
}
END_TEST

START_TEST(test_row_bad_json)
{
    const struct col c[] = {{"id", T_TEXT}, {"meta", T_JSONB}};
    const char *vals[] = {"p1", "{not json"};
    PGresult *r = make_result(c, 2, vals, 1);
    ck_assert_ptr_null(rowjson_object(r, 0));
    ck_assert_ptr_null(rowjson_array(r));
    PQclear(r);
}
END_TEST

START_TEST(test_row_bad_timestamp)
{
    const struct col c[] = {{"at", T_TIMESTAMPTZ}};
    const char *vals[] = {"infinity"};
    PGresult *r = make_result(c, 1, vals, 1);
    ck_assert_ptr_null(rowjson_object(r, 0));
    PQclear(r);
}
END_TEST

START_TEST(test_empty_result)
{
    PGresult *r = make_result(cols, NCOLS, NULL, 0);
    json_t *a = rowjson_array(r);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(json_array_size(a), 0);
    json_decref(a);
    PQclear(r);
}
END_TEST

static Suite *rowjson_suite(void)
{
    Suite *s = suite_create("rowjson");
    TCase *ts = tcase_create("timestamp");
    tcase_add_test(ts, test_utc);
    tcase_add_test(ts, test_fraction_kept);
    tcase_add_test(ts, test_offsets);
    tcase_add_test(ts, test_day_rollover);
    tcase_add_test(ts, test_garbage_rejected);
    tcase_add_test(ts, test_short_offset_no_overread);
    tcase_add_test(ts, test_out_of_range_time_rejected);
    tcase_add_test(ts, test_small_buffer);
    suite_add_tcase(s, ts);

    TCase *rows = tcase_create("rows");
    tcase_add_test(rows, test_row_types);
    tcase_add_test(rows, test_row_bad_json);
    tcase_add_test(rows, test_row_bad_timestamp);
    tcase_add_test(rows, test_empty_result);
    suite_add_tcase(s, rows);
    return s;
}

int main(void)
{
    return suite_run(rowjson_suite());
}
