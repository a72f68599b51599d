/*
 * test_problem.c - RFC 9457 problem documents: every answer parses as JSON
 * and carries type, title, status, detail and request_id; "errors" only when
 * there are field errors.
 */
#include "tests/support/suite.h"
#include "server/problem.h"

#include <check.h>
#include <jansson.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static struct field_error two_fields[] = {
    {"name", "must be 1 to 10 characters"},
    {"tags", "\"B!\" is not a slug"},
};

/* Render and parse; the document must be valid JSON. */
static json_t *render(const struct api_error *e, const char *request_id)
{
    char *text = problem_render(e, request_id);
    ck_assert_ptr_nonnull(text);
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    ck_assert_msg(doc != NULL, "not JSON (%s): %s", jerr.text, text);
    ck_assert(json_is_object(doc));
    free(text);
    return doc;
}

static const char *str(const json_t *doc, const char *key)
{
    const json_t *v = json_object_get(doc, key);
    ck_assert_msg(json_is_string(v), "\"%s\" is missing or not a string", key);
    return json_string_value(v);
}

static json_int_t num(const json_t *doc, const char *key)
{
    const json_t *v = json_object_get(doc, key);
    ck_assert_msg(json_is_integer(v), "\"%s\" is missing or not an integer", key);
    return json_integer_value(v);
}

START_TEST(test_members)
{
    struct api_error e = {.status = 404, .detail = "project \"web\" not found"};
    json_t *doc = render(&e, "req-123");
    ck_assert_str_eq(str(doc, "type"), "about:blank");
    ck_assert_str_eq(str(doc, "title"), "Not Found");
    ck_assert_int_eq(num(doc, "status"), 404);
    ck_assert_str_eq(str(doc, "detail"), "project \"web\" not found");
    ck_assert_str_eq(str(doc, "request_id"), "req-123");
    ck_assert_ptr_null(json_object_get(doc, "errors"));
    ck_assert_uint_eq(json_object_size(doc), 5);
    json_decref(doc);
}
END_TEST

START_TEST(test_field_errors)
{
    struct api_error e = {.status = 400, .detail = "2 fields are invalid", .fields = two_fields,
                          .nfields = 2};
    json_t *doc = render(&e, "r");
    ck_assert_int_eq(num(doc, "status"), 400);
    ck_assert_str_eq(str(doc, "title"), "Bad Request");
    json_t *errors = json_object_get(doc, "errors");
    ck_assert(json_is_array(errors));
    ck_assert_uint_eq(json_array_size(errors), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *fe = json_array_get(errors, i);
        ck_assert_str_eq(str(fe, "field"), two_fields[i].field);
        ck_assert_str_eq(str(fe, "message"), two_fields[i].message);
        ck_assert_uint_eq(json_object_size(fe), 2);
    }
    json_decref(doc);
}
END_TEST

START_TEST(test_defaults)
{
    /* no status: 500; no detail: the title; no request id: "" */
    struct api_error e = {0};
    json_t *doc = render(&e, NULL);
    ck_assert_int_eq(num(doc, "status"), 500);
    ck_assert_str_eq(str(doc, "title"), "Internal Server Error");
    ck_assert_str_eq(str(doc, "detail"), "Internal Server Error");
    ck_assert_str_eq(str(doc, "request_id"), "");
    ck_assert_ptr_null(json_object_get(doc, "errors"));
    json_decref(doc);

    struct api_error e2 = {.status = 409};
    doc = render(&e2, "x");
    ck_assert_str_eq(str(doc, "detail"), "Conflict");
    json_decref(doc);
}
END_TEST

START_TEST(test_titles)
{
    static const struct {
        int status;
        const char *title;
    } t[] = {
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {406, "Not Acceptable"},
        {409, "Conflict"},
        {413, "Content Too Large"},
        {415, "Unsupported Media Type"},
        {422, "Unprocessable Content"},
        {429, "Too Many Requests"},
        {500, "Internal Server Error"},
        {501, "Not Implemented"},
        {503, "Service Unavailable"},
        {418, "Client Error"},
        {502, "Server Error"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        ck_assert_str_eq(problem_title(t[i].status), t[i].title);
        struct api_error e = {.status = t[i].status, .detail = "d"};
        json_t *doc = render(&e, "r");
        ck_assert_str_eq(str(doc, "title"), t[i].title);
        ck_assert_int_eq(num(doc, "status"), t[i].status);
        json_decref(doc);
    }
}
END_TEST

START_TEST(test_escaping)
{
    /* quotes, backslash, control characters, non-ASCII (项目 "ä") */
    const char *detail = "\xe9\xa1\xb9\xe7\x9b\xae \"\xc3\xa4\"\n\t\\ </script> \x01 end";
    struct field_error fe = {"na\"me", "line1\nline2 \xe2\x9c\x93"};
    struct api_error e = {.status = 422, .detail = (char *)detail, .fields = &fe, .nfields = 1};
    json_t *doc = render(&e, "req\"id");
    ck_assert_str_eq(str(doc, "detail"), detail);
    ck_assert_str_eq(str(doc, "request_id"), "req\"id");
    json_t *first = json_array_get(json_object_get(doc, "errors"), 0);
    ck_assert_ptr_nonnull(first);
    ck_assert_str_eq(str(first, "field"), "na\"me");
    ck_assert_str_eq(str(first, "message"), "line1\nline2 \xe2\x9c\x93");
    json_decref(doc);
}
END_TEST

START_TEST(test_invalid_utf8_still_json)
{
    /* not expected from our code, but the answer must stay valid JSON */
    struct api_error e = {.status = 400, .detail = "bad \xff\xfe bytes"};
    json_t *doc = render(&e, "r");
    ck_assert_int_eq(num(doc, "status"), 400);
    ck_assert_str_eq(str(doc, "title"), "Bad Request");
    json_decref(doc);

    struct api_error e2 = {.status = 400, .detail = "d", .fields = two_fields, .nfields = 2};
    doc = render(&e2, "r\xc3");
    ck_assert_int_eq(num(doc, "status"), 400);
    json_decref(doc);
}
END_TEST

/*
 * When the document cannot be built (invalid UTF-8 somewhere), the fallback
 * answer must not leak the field-error array built for it.
 */
START_TEST(test_fallback_does_not_leak)
{
    struct api_error e = {.status = 400, .detail = "bad \xff", .fields = two_fields, .nfields = 2};
    free(problem_render(&e, "r")); /* warm up */
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < 50; i++)
        free(problem_render(&e, "r"));
    size_t after = mallinfo2().uordblks;
    ck_assert_msg(after == before, "problem_render leaked %zu bytes in 50 fallback answers",
                  after - before);
}
END_TEST

START_TEST(test_normal_render_does_not_leak)
{
    struct api_error e = {.status = 400, .detail = "d", .fields = two_fields, .nfields = 2};
    free(problem_render(&e, "r"));
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < 50; i++)
        free(problem_render(&e, "r"));
    ck_assert_uint_eq(mallinfo2().uordblks, before);
}
END_TEST

static Suite *problem_suite(void)
{
    Suite *s = suite_create("problem");
    TCase *tc = tcase_create("render");
    tcase_add_test(tc, test_members);
    tcase_add_test(tc, test_field_errors);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_titles);
    tcase_add_test(tc, test_escaping);
    tcase_add_test(tc, test_invalid_utf8_still_json);
    tcase_add_test(tc, test_fallback_does_not_leak);
    tcase_add_test(tc, test_normal_render_does_not_leak);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(problem_suite());
}
