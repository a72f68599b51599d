/*
 * test_rowjson.c - PostgreSQL text values to JSON: timestamptz to RFC 3339
 * UTC, and whole rows (built with libpq's PQmakeEmptyPGresult, no server).
 */
#include "db/rowjson.h"
#include "lib/err.h"
#include "lib/jsonout.h"
#include "lib/sbuf.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
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
    T_INT2 = 21,
    T_FLOAT4 = 700,
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

/* ---- rows as text -------------------------------------------------------------- */

/* rowjson_append_object writes jsonout_compact's bytes for rowjson_object's tree,
 * and fails where the tree is not built */
static void text_is_tree(const PGresult *r, int row)
{
    json_t *o = rowjson_object(r, row);
    char *want = o ? jsonout_compact(o) : NULL;
    struct sbuf sb = SBUF_INIT;
    sbuf_puts(&sb, "x"); /* appended, not written over */
    bool ok = rowjson_append_object(r, row, &sb);
    if (!want) {
        ck_assert_msg(!ok, "row %d: text %s where the tree fails", row, sbuf_str(&sb));
    } else {
        ck_assert_msg(ok, "row %d: no text where the tree is %s", row, want);
        ck_assert_msg(sb.buf[0] == 'x' && strcmp(sb.buf + 1, want) == 0, "row %d: %s, want x%s",
                      row, sbuf_str(&sb), want);
    }
    sbuf_free(&sb);
    free(want);
    json_decref(o);
}

START_TEST(a_row_s_text_is_its_tree_s)
{
    /* id, _cursor, ok, n, big, ratio, meta, raw, created_at, note, price */
    static const char *const vals[][NCOLS] = {
        {"p1", "2026|p1", "t", "-42", "9007199254740993", "0.25", "{\"a\": [1, 2]}", "\"s\"",
         "2026-12-02 08:00:00.5+05:30", NULL, "12.50"},
        /* quotes, controls, every UTF-8 length; extremes of each number */
        {"a\"b\\c\n\t\x01\x1f\x7f", NULL, "f", "-2147483648", "-9223372036854775808", "1e-300",
         "{\"k\": \"\xe4\xb8\xad\", \"n\": 1.5e300}", "[1, \"\xf0\x9f\x98\x80\"]",
         "2026-12-02 08:00:00+00", "\xc3\xa9\xe6\x96\x87\xf0\x9f\x98\x80", "-0.000"},
        /* refused by both: NaN and the infinities, json that does not parse, a bad
         * timestamp, text that is not UTF-8 */
        {"x", NULL, "t", "0", "0", "NaN", "null", "1", "2026-12-02 08:00:00+00", "", "1"},
        {"x", NULL, "t", "0", "0", "-Infinity", "null", "1", "2026-12-02 08:00:00+00", "", "1"},
        {"x", NULL, "t", "0", "0", "1", "{\"a\":", "1", "2026-12-02 08:00:00+00", "", "1"},
        {"x", NULL, "t", "0", "0", "1", "null", "1", "infinity", "", "1"},
        {"x", NULL, "t", "0", "0", "1", "null", "1", "2026-12-02 08:00:00+00", "\xc0\xaf", "1"},
        /* all NULL */
        {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
    };
    int nrows = (int)(sizeof vals / sizeof vals[0]);
    PGresult *r = make_result(cols, NCOLS, &vals[0][0], nrows);
    for (int row = 0; row < nrows; row++)
        text_is_tree(r, row);
    PQclear(r);

    /* a repeated name is one key: at its first place, with its last value */
    const struct col dup[] = {{"a", T_TEXT}, {"b", T_INT4}, {"a", T_BOOL}, {"_c", T_TEXT}};
    const char *dvals[] = {"one", "2", "t", "cursor"};
    r = make_result(dup, 4, dvals, 1);
    text_is_tree(r, 0);
    struct sbuf sb = SBUF_INIT;
    ck_assert(rowjson_append_object(r, 0, &sb));
    ck_assert_str_eq(sbuf_str(&sb), "{\"a\":true,\"b\":2}");
    sbuf_free(&sb);
    PQclear(r);

    /* small integers and single floats are numbers, as in the tree */
    const struct col nums[] = {{"s", T_INT2}, {"f", T_FLOAT4}};
    const char *nvals[] = {"-5", "0.5"};
    r = make_result(nums, 2, nvals, 1);
    text_is_tree(r, 0);
    ck_assert(rowjson_append_object(r, 0, &sb));
    ck_assert_str_eq(sbuf_str(&sb), "{\"s\":-5,\"f\":0.5}");
    sbuf_free(&sb);
    PQclear(r);

    /* only internal columns: an empty object */
    const struct col internal[] = {{"_cursor", T_TEXT}};
    const char *ivals[] = {"k"};
    r = make_result(internal, 1, ivals, 1);
    text_is_tree(r, 0);
    PQclear(r);
}
END_TEST

/* A row that cannot be written leaves what the buffer held as it was; no row is
 * AIDC_ENOTFOUND. */
START_TEST(a_bad_row_leaves_the_answer_as_it_was)
{
    const struct col c[] = {{"id", T_TEXT}, {"ratio", T_FLOAT8}, {"note", T_TEXT}};
    static const char *const bad[][3] = {{"p1", "NaN", "x"}, {"p1", "1", "\xc0\xaf"}};
    for (size_t i = 0; i < 2; i++) {
        PGresult *r = make_result(c, 3, bad[i], 1);
        struct sbuf sb = SBUF_INIT;
        sbuf_puts(&sb, "{\"before\":1}");
        ck_assert_int_eq(rowjson_one_text(r, &sb), AIDC_EINTERNAL);
        ck_assert_str_eq(sbuf_str(&sb), "{\"before\":1}");
        ck_assert_uint_eq(sb.len, strlen("{\"before\":1}"));
        sbuf_free(&sb);
        PQclear(r);
    }
    const char *good[] = {"p1", "1", "x"};
    PGresult *r = make_result(c, 3, good, 1);
    struct sbuf sb = SBUF_INIT;
    ck_assert_int_eq(rowjson_one_text(r, &sb), 0);
    ck_assert_str_eq(sbuf_str(&sb), "{\"id\":\"p1\",\"ratio\":1.0,\"note\":\"x\"}");
    sbuf_free(&sb);
    PQclear(r);
    r = make_result(c, 3, NULL, 0);
    ck_assert_int_eq(rowjson_one_text(r, &sb), AIDC_ENOTFOUND);
    ck_assert_uint_eq(sb.len, 0);
    PQclear(r);
}
END_TEST

static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint64_t next(void)
{
    return suite_xorshift(&rng);
}

/* a random value for a column of type t, valid or not as PostgreSQL would never send it */
static const char *random_cell(unsigned t, char *buf, size_t size)
{
    static const char *const texts[] = {"",
                                        "plain",
                                        "q\"uote",
                                        "back\\slash",
                                        "\x01\x1f",
                                        "\xe4\xb8\xad",
                                        "\xf0\x9f\x98\x80",
                                        "\xc3",
                                        "\xed\xa0\x80",
                                        "tab\there",
                                        "\x7f"};
    static const char *const jsons[] = {
        "{}",    "[]",     "null", "{\"a\": [1, 2.5, \"x\"]}",       "\"s\"",
        "1e400", "{\"a\"", "[1,]", "{\"k\": {\"l\": [true, false]}}"};
    static const char *const stamps[] = {"2026-12-02 08:00:00+00", "2026-12-02 08:00:00.123+08",
                                         "1900-01-01 00:19:32+00:19:32", "infinity", "2026-13-01"};
    if (next() % 8 == 0)
        return NULL;
    switch (t) {
    case T_BOOL:
        return next() % 2 ? "t" : "f";
    case T_INT2:
    case T_INT4:
    case T_INT8:
        snprintf(buf, size, "%lld", (long long)next() >> (next() % 64));
        return buf;
    case T_FLOAT4:
    case T_FLOAT8: {
        union {
            uint64_t u;
            double d;
        } bits = {.u = next()};
        snprintf(buf, size, "%.17g", next() % 4 ? bits.d : (double)(int64_t)(next() % 2000) / 8);
        return buf;
    }
    case T_JSON:
    case T_JSONB:
        return jsons[next() % (sizeof jsons / sizeof jsons[0])];
    case T_TIMESTAMPTZ:
        return stamps[next() % (sizeof stamps / sizeof stamps[0])];
    default:
        return texts[next() % (sizeof texts / sizeof texts[0])];
    }
}

START_TEST(random_rows_text_is_tree)
{
    enum { ROWS = 2000, TCOLS = NCOLS + 2 };
    struct col tcols[TCOLS];
    memcpy(tcols, cols, sizeof cols);
    tcols[NCOLS] = (struct col){"small", T_INT2};
    tcols[NCOLS + 1] = (struct col){"f4", T_FLOAT4};
    const char **vals = calloc((size_t)ROWS * TCOLS, sizeof *vals);
    char(*bufs)[40] = calloc((size_t)ROWS * TCOLS, sizeof *bufs);
    ck_assert(vals && bufs);
    for (int i = 0; i < ROWS * TCOLS; i++)
        vals[i] = random_cell(tcols[i % TCOLS].typid, bufs[i], sizeof bufs[i]);
    PGresult *r = make_result(tcols, TCOLS, vals, ROWS);
    for (int row = 0; row < ROWS; row++)
        text_is_tree(r, row);
    PQclear(r);
    free(bufs);
    free(vals);
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
    tcase_add_test(rows, a_row_s_text_is_its_tree_s);
    tcase_add_test(rows, random_rows_text_is_tree);
    tcase_add_test(rows, a_bad_row_leaves_the_answer_as_it_was);
    suite_add_tcase(s, rows);
    return s;
}

int main(void)
{
    return suite_run(rowjson_suite());
}
