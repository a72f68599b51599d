/*
 * test_jsonout.c - lib/jsonout writes what json_dumps(v, JSON_COMPACT |
 * JSON_REAL_PRECISION(15)) writes, byte for byte, and fails where it fails:
 * over random trees of every kind of value (strings with quotes, controls,
 * embedded NULs, every UTF-8 length; integers to their limits; reals of every
 * magnitude and sign), and on the cases that must be refused.
 */
#include "lib/jsonout.h"
#include "lib/sbuf.h"
#include "tests/support/suite.h"

#include <check.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

static void same(json_t *v)
{
    char *want = json_dumps(v, FLAGS), *got = jsonout_compact(v);
    if (!want) {
        ck_assert_msg(got == NULL, "json_dumps refused what jsonout wrote: %s", got);
    } else {
        ck_assert_msg(got != NULL, "jsonout refused what json_dumps wrote: %s", want);
        ck_assert_msg(strcmp(got, want) == 0, "jsonout %s, json_dumps %s", got, want);
    }
    free(want);
    free(got);
}

static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
    return suite_xorshift(&rng);
}

/* Up to 12 pieces: ASCII of every kind, controls, NUL, 2-4 byte UTF-8. */
static json_t *random_string(void)
{
    static const char *const pieces[] = {"a",
                                         "Z",
                                         "0",
                                         " ",
                                         "\"",
                                         "\\",
                                         "/",
                                         "\b",
                                         "\f",
                                         "\n",
                                         "\r",
                                         "\t",
                                         "\x01",
                                         "\x1f",
                                         "\x7f",
                                         "\xc3\xa9",
                                         "\xe4\xb8\xad",
                                         "\xf0\x9f\x98\x80",
                                         "\xef\xbf\xbf",
                                         "\xc2\x80"};
    char buf[64];
    size_t n = 0, k = next() % 12;
    for (size_t i = 0; i < k; i++) {
        if (next() % 10 == 0) {
            buf[n++] = '\0'; /* an embedded NUL, which json_stringn keeps */
            continue;
        }
        const char *p = pieces[next() % (sizeof pieces / sizeof pieces[0])];
        memcpy(buf + n, p, strlen(p));
        n += strlen(p);
    }
    return json_stringn(buf, n);
}

static json_t *random_real(void)
{
    static const double fixed[] = {0.0,     -0.0,    1.0,     -1.0,    0.1,   1e-5,
                                   1e15,    1e16,    1e21,    1e-300,  1e300, DBL_MAX,
                                   DBL_MIN, 123.456, 2.5e-10, 1.0 / 3, 100.0, 4.94e-324};
    if (next() % 2)
        return json_real(fixed[next() % (sizeof fixed / sizeof fixed[0])] * (next() % 2 ? 1 : -1));
    double v;
    uint64_t bits;
    do { /* any finite double */
        bits = next();
        memcpy(&v, &bits, sizeof v);
    } while (!isfinite(v));
    return json_real(v);
}

static json_t *random_value(int depth)
{
    switch (next() % (depth > 4 ? 6 : 8)) {
    case 0:
        return random_string();
    case 1: {
        static const json_int_t fixed[] = {0, 1, -1, 9, 10, LLONG_MAX, LLONG_MIN, -1000000007};
        return json_integer(next() % 2 ? fixed[next() % 8] : (json_int_t)next());
    }
    case 2:
        return random_real();
    case 3:
        return json_true();
    case 4:
        return json_false();
    case 5:
        return json_null();
    case 6: {
        json_t *a = json_array();
        for (size_t i = 0, n = next() % 5; i < n; i++)
            json_array_append_new(a, random_value(depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (size_t i = 0, n = next() % 5; i < n; i++) {
            json_t *k = random_string();
            json_object_setn_new(o, json_string_value(k), json_string_length(k),
                                 random_value(depth + 1));
            json_decref(k);
        }
        return o;
    }
    }
}

START_TEST(random_trees_match_json_dumps)
{
    for (int i = 0; i < 20000; i++) {
        json_t *v = next() % 2 ? json_array() : json_object();
        json_t *inner = random_value(0);
        if (json_is_array(v))
            json_array_append_new(v, inner);
        else
            json_object_set_new(v, "k", inner);
        same(v);
        same(inner); /* a bare value: refused by both unless object or array */
        json_decref(v);
    }
}
END_TEST

START_TEST(an_answer_matches)
{
    json_t *v = json_pack("{s:s, s:n, s:i, s:f, s:b, s:[s, s]}", "id", "92d2cd66", "pi", "n", 42,
                          "f", 0.5, "ok", 1, "list", "a\"b", "\xe4\xb8\xad\xe6\x96\x87");
    same(v);
    json_decref(v);
    v = json_object();
    same(v);
    json_decref(v);
    v = json_array();
    same(v);
    json_decref(v);
}
END_TEST

START_TEST(what_json_dumps_refuses_is_refused)
{
    /* not UTF-8: a stray continuation, an overlong form, a surrogate, past U+10FFFF, cut short */
    static const char *const bad[] = {"\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                      "\xe4\xb8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *a = json_pack("[o]", json_stringn_nocheck(bad[i], strlen(bad[i])));
        ck_assert_ptr_null(jsonout_compact(a));
        same(a);
        json_decref(a);
    }
    json_t *s = json_string("bare");
    ck_assert_ptr_null(jsonout_compact(s));
    json_decref(s);
    /* nesting past any answer (and any cycle) */
    json_t *top = json_array(), *cur = top;
    for (int i = 0; i < 3000; i++) {
        json_t *a = json_array();
        json_array_append_new(cur, a);
        cur = a;
    }
    ck_assert_ptr_null(jsonout_compact(top));
    json_decref(top);
}
END_TEST

/* a member added to an object's text: what json_object_set_new then jsonout_compact write */
static void added(const char *obj, const char *key, const char *value)
{
    json_t *v = json_loads(obj, 0, NULL);
    ck_assert_ptr_nonnull(v);
    struct sbuf sb = SBUF_INIT;
    char *text = jsonout_compact(v);
    sbuf_puts(&sb, text);
    free(text);
    ck_assert(jsonout_object_add_string(&sb, key, value));
    json_object_set_new(v, key, json_string(value));
    char *want = jsonout_compact(v);
    ck_assert_str_eq(sbuf_str(&sb), want);
    ck_assert_uint_eq(sb.len, strlen(want));
    free(want);
    sbuf_free(&sb);
    json_decref(v);
}

START_TEST(a_member_added_to_an_object_s_text)
{
    added("{}", "tenant", "physics");
    added("{\"id\": \"p1\", \"pi\": null}", "tenant", "physics");
    added("{\"a\": {}}", "tenant", "t");    /* its last value an empty object */
    added("{\"a\": \"}\"}", "tenant", "t"); /* a brace in its last string */
    added("{\"a\": [{}]}", "t\"\n", "\xe4\xb8\xad\\");
    /* not an object's text, or a string that is not UTF-8: refused */
    static const char *const notobj[] = {"", "}", "[1]", "\"x\""};
    for (size_t i = 0; i < sizeof notobj / sizeof notobj[0]; i++) {
        struct sbuf sb = SBUF_INIT;
        sbuf_puts(&sb, notobj[i]);
        ck_assert_msg(!jsonout_object_add_string(&sb, "k", "v"), "accepted \"%s\"", notobj[i]);
        sbuf_free(&sb);
    }
    static const char *const objs[] = {"{}", "{\"a\":1}"};
    for (size_t i = 0; i < 2; i++) { /* refused: the object's text as it was */
        struct sbuf sb = SBUF_INIT;
        sbuf_puts(&sb, objs[i]);
        ck_assert(!jsonout_object_add_string(&sb, "k", "\xc0\xaf"));
        ck_assert_str_eq(sbuf_str(&sb), objs[i]);
        ck_assert(!jsonout_object_add_string(&sb, "\xed\xa0\x80", "v"));
        ck_assert_str_eq(sbuf_str(&sb), objs[i]);
        ck_assert_uint_eq(sb.len, strlen(objs[i]));
        sbuf_free(&sb);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jsonout");
    TCase *tc = tcase_create("jsonout");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, random_trees_match_json_dumps);
    tcase_add_test(tc, an_answer_matches);
    tcase_add_test(tc, what_json_dumps_refuses_is_refused);
    tcase_add_test(tc, a_member_added_to_an_object_s_text);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
