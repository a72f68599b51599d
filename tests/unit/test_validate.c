/*
 * test_validate.c - identifier checks and validate_object's field table:
 * every problem of a body must become one field error of a 400 answer.
 */
#include "tests/support/suite.h"
#include "server/validate.h"
#include "lib/err.h"

#include <check.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

/* "数据中心平台管理系统": ten Chinese characters, 30 bytes of UTF-8. */
#define ZH10 "\xe6\x95\xb0\xe6\x8d\xae\xe4\xb8\xad\xe5\xbf\x83\xe5\xb9\xb3\xe5\x8f\xb0" \
             "\xe7\xae\xa1\xe7\x90\x86\xe7\xb3\xbb\xe7\xbb\x9f"
/* "数" alone */
#define ZH1 "\xe6\x95\xb0"

static const struct vfield fields[] = {
    {"name", V_STRING, V_REQUIRED, 1, 10, NULL, 0},
    {"slug", V_STRING, V_REQUIRED, 0, 0, validate_slug, PROBLEM_V_SLUG},
    {"enabled", V_BOOL, 0, 0, 0, NULL, 0},
    {"gpus", V_INT, 0, 1, 64, NULL, 0},
    {"tags", V_STRING_ARRAY, 0, 0, 3, validate_slug, PROBLEM_V_ITEM_INVALID},
    {"description", V_STRING, V_NULLABLE, 0, 0, NULL, 0},
    {"meta", V_OBJECT, 0, 0, 0, NULL, 0},
    {"code", V_STRING, 0, 4, 4, NULL, 0},
    {"offset", V_INT, 0, 0, 0, NULL, 0},
    {"quota", V_INT, V_NULLABLE, 0, 100, NULL, 0},
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    ck_assert_msg(j != NULL, "test JSON does not parse: %s", jerr.text);
    return j;
}

/* The message of the field error for `field`, or NULL. */
static const char *field_msg(const struct resp *rs, const char *field)
{
    for (size_t i = 0; i < rs->err.nfields; i++)
        if (strcmp(rs->err.fields[i].field, field) == 0)
            return rs->err.fields[i].message;
    return NULL;
}

/* Validate text; returns the result, leaves the errors in *rs. */
static bool check_body(const char *text, struct resp *rs)
{
    json_t *j = parse(text);
    memset(rs, 0, sizeof *rs);
    bool ok = validate_object(j, fields, NFIELDS, rs);
    json_decref(j);
    return ok;
}

/* True if s is valid UTF-8 (jansson refuses anything else). */
static bool is_utf8(const char *s)
{
    json_t *j = json_string(s);
    bool ok = j != NULL;
    json_decref(j);
    return ok;
}

static void expect_one_error(const char *body, const char *field, const char *message)
{
    struct resp rs;
    ck_assert_msg(!check_body(body, &rs), "%s: accepted", body);
    ck_assert_int_eq(rs.err.status, MHD_HTTP_BAD_REQUEST);
    ck_assert_msg(rs.err.nfields == 1, "%s: %zu field errors, want 1", body, rs.err.nfields);
    ck_assert_str_eq(rs.err.fields[0].field, field);
    ck_assert_str_eq(rs.err.fields[0].message, message);
    resp_free(&rs);
}

static void expect_ok(const char *body)
{
    struct resp rs;
    bool ok = check_body(body, &rs);
    ck_assert_msg(ok, "%s: rejected (%s: %s)", body,
                  rs.err.nfields ? rs.err.fields[0].field : "-",
                  rs.err.nfields ? rs.err.fields[0].message : "-");
    ck_assert_uint_eq(rs.err.nfields, 0);
    ck_assert_int_eq(rs.err.status, 0);
    resp_free(&rs);
}

/* ---- identifiers ------------------------------------------------------------ */

START_TEST(test_slug)
{
    char s63[64], s64[65];
    memset(s63, 'a', 63);
    s63[63] = '\0';
    memset(s64, 'a', 64);
    s64[64] = '\0';
    ck_assert(validate_slug("ab"));
    ck_assert(validate_slug("a1"));
    ck_assert(validate_slug("team-a"));
    ck_assert(validate_slug("a-"));
    ck_assert(validate_slug(s63));
    ck_assert(!validate_slug(s64));
    ck_assert(!validate_slug("a"));
    ck_assert(!validate_slug(""));
    ck_assert(!validate_slug(NULL));
    ck_assert(!validate_slug("1ab"));
    ck_assert(!validate_slug("-ab"));
    ck_assert(!validate_slug("Ab"));
    ck_assert(!validate_slug("aB"));
    ck_assert(!validate_slug("a_b"));
    ck_assert(!validate_slug("a.b"));
    ck_assert(!validate_slug("a b"));
    ck_assert(!validate_slug("a/b"));
    ck_assert(!validate_slug("a\xc3\xa9"));
}
END_TEST

START_TEST(test_username)
{
    char s63[64], s64[65];
    memset(s63, 'u', 63);
    s63[63] = '\0';
    memset(s64, 'u', 64);
    s64[64] = '\0';
    ck_assert(validate_username("a"));
    ck_assert(validate_username("alice"));
    ck_assert(validate_username("a.b_c-d9"));
    ck_assert(validate_username(s63));
    ck_assert(!validate_username(s64));
    ck_assert(!validate_username(""));
    ck_assert(!validate_username(NULL));
    ck_assert(!validate_username("9lives"));
    ck_assert(!validate_username(".alice"));
    ck_assert(!validate_username("_alice"));
    ck_assert(!validate_username("Alice"));
    ck_assert(!validate_username("al ice"));
    ck_assert(!validate_username("al@ice"));
    ck_assert(!validate_username("al\xc3\xaf" "ce"));
}
END_TEST

START_TEST(test_email)
{
    char long_ok[255], long_bad[256];
    memset(long_ok, 'a', 254);
    long_ok[1] = '@';
    long_ok[254] = '\0';
    memset(long_bad, 'a', 255);
    long_bad[1] = '@';
    long_bad[255] = '\0';
    ck_assert(validate_email(""));
    ck_assert(validate_email("a@b"));
    ck_assert(validate_email("alice@example.com"));
    ck_assert(validate_email("first.last+tag@sub.example.org"));
    ck_assert(validate_email(long_ok));
    ck_assert(!validate_email(long_bad));
    ck_assert(!validate_email("alice"));
    ck_assert(!validate_email("@example.com"));
    ck_assert(!validate_email("alice@"));
    ck_assert(!validate_email("a@b@c"));
    ck_assert(!validate_email("al ice@example.com"));
    ck_assert(!validate_email("alice@example.com "));
    ck_assert(!validate_email("alice\t@example.com"));
    ck_assert(!validate_email("alice@exa\nmple.com"));
    ck_assert(!validate_email("alice@example\x7f.com"));
}
END_TEST

START_TEST(test_utf8_len)
{
    ck_assert_uint_eq(validate_utf8_len(""), 0);
    ck_assert_uint_eq(validate_utf8_len("abc"), 3);
    ck_assert_uint_eq(validate_utf8_len(ZH10), 10);
    ck_assert_uint_eq(strlen(ZH10), 30);
    ck_assert_uint_eq(validate_utf8_len("caf\xc3\xa9"), 4);              /* café */
    ck_assert_uint_eq(validate_utf8_len("\xf0\x9f\x98\x80!"), 2);         /* emoji + ! */
    ck_assert_uint_eq(validate_utf8_len("a" ZH1 "b"), 3);
}
END_TEST

/* ---- validate_object ---------------------------------------------------------- */

START_TEST(test_valid_bodies)
{
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\"}");
    expect_ok("{\"name\": \"0123456789\", \"slug\": \"team-a\", \"enabled\": false,"
              " \"gpus\": 64, \"tags\": [\"ab\", \"cd\", \"ef\"], \"description\": \"text\","
              " \"meta\": {\"k\": 1}, \"code\": \"abcd\", \"offset\": -5, \"quota\": 100}");
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": 1, \"tags\": []}");
}
END_TEST

START_TEST(test_unknown_field)
{
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"color\": \"red\"}", "color",
                     "unknown field");
    /* field names are case-sensitive */
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"Name\": \"x\"}", "Name",
                     "unknown field");
}
END_TEST

START_TEST(test_missing_required)
{
    struct resp rs;
    ck_assert(!check_body("{}", &rs));
    ck_assert_int_eq(rs.err.status, MHD_HTTP_BAD_REQUEST);
    ck_assert_uint_eq(rs.err.nfields, 2);
    ck_assert_str_eq(field_msg(&rs, "name"), "is required");
    ck_assert_str_eq(field_msg(&rs, "slug"), "is required");
    resp_free(&rs);

    expect_one_error("{\"name\": \"n\"}", "slug", "is required");
}
END_TEST

START_TEST(test_wrong_types_all_reported)
{
    struct resp rs;
    ck_assert(!check_body("{\"name\": 5, \"slug\": true, \"enabled\": \"yes\", \"gpus\": 1.5,"
                          " \"tags\": \"ab\", \"meta\": [], \"description\": 3, \"color\": 1}",
                          &rs));
    ck_assert_int_eq(rs.err.status, MHD_HTTP_BAD_REQUEST);
    ck_assert_uint_eq(rs.err.nfields, 8);
    ck_assert_str_eq(field_msg(&rs, "name"), "must be a string");
    ck_assert_str_eq(field_msg(&rs, "slug"), "must be a string");
    ck_assert_str_eq(field_msg(&rs, "enabled"), "must be true or false");
    ck_assert_str_eq(field_msg(&rs, "gpus"), "must be an integer");
    ck_assert_str_eq(field_msg(&rs, "tags"), "must be an array of strings");
    ck_assert_str_eq(field_msg(&rs, "meta"), "must be an object");
    ck_assert_str_eq(field_msg(&rs, "description"), "must be a string");
    ck_assert_str_eq(field_msg(&rs, "color"), "unknown field");
    resp_free(&rs);

    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": \"3\"}", "gpus",
                     "must be an integer");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"enabled\": 1}", "enabled",
                     "must be true or false");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"meta\": \"x\"}", "meta",
                     "must be an object");
}
END_TEST

START_TEST(test_string_length_in_characters)
{
    /* 10 Chinese characters are 30 bytes but within max 10 */
    expect_ok("{\"name\": \"" ZH10 "\", \"slug\": \"ab\"}");
    expect_one_error("{\"name\": \"" ZH10 ZH1 "\", \"slug\": \"ab\"}", "name",
                     "must be 1 to 10 characters");
    expect_one_error("{\"name\": \"0123456789a\", \"slug\": \"ab\"}", "name",
                     "must be 1 to 10 characters");
    expect_one_error("{\"name\": \"\", \"slug\": \"ab\"}", "name", "must be 1 to 10 characters");
    /* exact length */
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"code\": \"" ZH1 ZH1 ZH1 ZH1 "\"}");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"code\": \"abc\"}", "code",
                     "must be 4 characters");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"code\": \"abcde\"}", "code",
                     "must be 4 characters");
}
END_TEST

START_TEST(test_string_check_function)
{
    expect_one_error("{\"name\": \"n\", \"slug\": \"Not A Slug\"}", "slug", "must match ^[a-z][a-z0-9-]{1,62}$");
    expect_one_error("{\"name\": \"n\", \"slug\": \"\"}", "slug", "must match ^[a-z][a-z0-9-]{1,62}$");
}
END_TEST

START_TEST(test_int_ranges)
{
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": 1}");
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": 64}");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": 0}", "gpus",
                     "must be 1 to 64");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": 65}", "gpus",
                     "must be 1 to 64");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": -1}", "gpus",
                     "must be 1 to 64");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": 1000000000000}", "gpus",
                     "must be 1 to 64");
    /* 0,0 = no limit */
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"offset\": -1000000000000}");
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"offset\": 1000000000000}");
    /* min 0, max 100 */
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"quota\": 0}");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"quota\": 101}", "quota",
                     "must be 0 to 100");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"quota\": -1}", "quota",
                     "must be 0 to 100");
}
END_TEST

START_TEST(test_string_arrays)
{
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"tags\": [\"ab\"]}");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"tags\": [\"ab\", 3]}", "tags",
                     "must be an array of strings");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"tags\": [null]}", "tags",
                     "must be an array of strings");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"tags\": [\"ab\", \"B!\"]}", "tags",
                     "\"B!\" is not valid");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"tags\": [\"ab\", \"cd\", \"ef\","
                     " \"gh\"]}",
                     "tags", "must have 0 to 3 items");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"tags\": {\"a\": \"b\"}}", "tags",
                     "must be an array of strings");
}
END_TEST

/*
 * A rejected array item is quoted in the message, cut to a bounded length.
 * The cut must not split a UTF-8 character: the message goes into a JSON
 * answer, and jansson refuses invalid UTF-8.
 */
START_TEST(test_array_item_message_is_utf8)
{
    char body[512];
    char item[128];
    memset(item, 'a', 63);
    item[63] = '\0';
    strcat(item, ZH1 ZH1); /* byte 64 is the first byte of a 3-byte character */
    snprintf(body, sizeof body, "{\"name\": \"n\", \"slug\": \"ab\", \"tags\": [\"%s\"]}", item);
    struct resp rs;
    ck_assert(!check_body(body, &rs));
    ck_assert_uint_eq(rs.err.nfields, 1);
    ck_assert_str_eq(rs.err.fields[0].field, "tags");
    ck_assert_msg(is_utf8(rs.err.fields[0].message),
                  "field message is not valid UTF-8 (item cut inside a character)");
    resp_free(&rs);
}
END_TEST

START_TEST(test_nullable)
{
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"description\": null}");
    expect_ok("{\"name\": \"n\", \"slug\": \"ab\", \"quota\": null}");
    expect_one_error("{\"name\": null, \"slug\": \"ab\"}", "name", "must not be null");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": null}", "gpus",
                     "must not be null");
    expect_one_error("{\"name\": \"n\", \"slug\": \"ab\", \"tags\": null}", "tags",
                     "must not be null");
}
END_TEST

START_TEST(test_errors_accumulate_with_previous)
{
    /* validate_object adds to what rs already holds, and keeps an earlier status */
    json_t *j = parse("{\"name\": \"n\", \"slug\": \"ab\", \"gpus\": 0}");
    struct resp rs;
    memset(&rs, 0, sizeof rs);
    api_field_problem(&rs, "other", PROBLEM_V_INVALID, NULL);
    ck_assert(!validate_object(j, fields, NFIELDS, &rs));
    ck_assert_uint_eq(rs.err.nfields, 2);
    ck_assert_str_eq(field_msg(&rs, "other"), "is not valid");
    ck_assert_str_eq(field_msg(&rs, "gpus"), "must be 1 to 64");
    ck_assert_int_eq(api_fail_fields(&rs), AIDC_EINVAL);
    ck_assert_str_eq(rs.err.detail, "2 fields are invalid");
    json_decref(j);
    resp_free(&rs);
}
END_TEST

START_TEST(test_vstr_vhas)
{
    json_t *j = parse("{\"s\": \"v\", \"n\": null, \"i\": 3}");
    ck_assert_str_eq(vstr(j, "s"), "v");
    ck_assert_ptr_null(vstr(j, "n"));
    ck_assert_ptr_null(vstr(j, "i"));
    ck_assert_ptr_null(vstr(j, "missing"));
    ck_assert(vhas(j, "s"));
    ck_assert(vhas(j, "n"));
    ck_assert(!vhas(j, "missing"));
    json_decref(j);
}
END_TEST

static Suite *validate_suite(void)
{
    Suite *s = suite_create("validate");
    TCase *ids = tcase_create("identifiers");
    tcase_add_test(ids, test_slug);
    tcase_add_test(ids, test_username);
    tcase_add_test(ids, test_email);
    tcase_add_test(ids, test_utf8_len);
    suite_add_tcase(s, ids);

    TCase *obj = tcase_create("object");
    tcase_add_test(obj, test_valid_bodies);
    tcase_add_test(obj, test_unknown_field);
    tcase_add_test(obj, test_missing_required);
    tcase_add_test(obj, test_wrong_types_all_reported);
    tcase_add_test(obj, test_string_length_in_characters);
    tcase_add_test(obj, test_string_check_function);
    tcase_add_test(obj, test_int_ranges);
    tcase_add_test(obj, test_string_arrays);
    tcase_add_test(obj, test_array_item_message_is_utf8);
    tcase_add_test(obj, test_nullable);
    tcase_add_test(obj, test_errors_accumulate_with_previous);
    tcase_add_test(obj, test_vstr_vhas);
    suite_add_tcase(s, obj);
    return s;
}

int main(void)
{
    return suite_run(validate_suite());
}
