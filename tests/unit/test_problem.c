/*
 * test_problem.c - RFC 9457 problem documents: every answer parses as JSON
 * and carries type, title, status, code, detail, params and request_id;
 * "errors" only when there are field errors. And the catalog of problems:
 * every text filled once with sample values reads right (no placeholder or
 * printf directive left, no doubled article or word).
 */
#include "tests/support/suite.h"
#include "server/problem.h"
#include "server/request.h"

#include <check.h>
#include <ctype.h>
#include <microhttpd.h>
#include <jansson.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static struct field_error two_fields[] = {
    {"name", PROBLEM_V_LENGTH, "must be 1 to 10 characters", NULL},
    {"tags", PROBLEM_V_SLUG, "\"B!\" is not a slug", NULL},
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
    ck_assert_str_eq(str(doc, "code"), "validation.invalid"); /* a zeroed problem */
    ck_assert(json_is_object(json_object_get(doc, "params")));
    ck_assert_uint_eq(json_object_size(doc), 7);
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
        ck_assert_str_eq(str(fe, "code"), problem_def(two_fields[i].problem)->code);
        ck_assert(json_is_object(json_object_get(fe, "params")));
        ck_assert_uint_eq(json_object_size(fe), 4);
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
        {501, "Server Error"}, /* aidc answers no 501 of its own */
        {503, "Service Unavailable"},
        {418, "Client Error"},
        {502, "Bad Gateway"},
        {504, "Server Error"},
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
    struct field_error fe = {"na\"me", PROBLEM_V_INVALID, "line1\nline2 \xe2\x9c\x93", NULL};
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


/* ---- the catalog ------------------------------------------------------------------ */

/* Every {name} of text, each with a sample value: "samplea", "sampleb", ... */
static json_t *sample_params(const char *text)
{
    json_t *params = json_object();
    int n = 0;
    for (const char *p = strchr(text, '{'); p; p = strchr(p + 1, '{')) {
        size_t len = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz0123456789_");
        if (len == 0 || p[1 + len] != '}')
            continue;
        char name[64], value[16];
        snprintf(name, sizeof name, "%.*s", (int)len, p + 1);
        snprintf(value, sizeof value, "sample%c", 'a' + n++ % 26);
        json_object_set_new(params, name, json_string(value));
    }
    return params;
}

static bool is_article(const char *w)
{
    return strcmp(w, "a") == 0 || strcmp(w, "an") == 0 || strcmp(w, "the") == 0;
}

/* NULL when the sentence reads right, else what is wrong with it. */
static const char *wording(const char *s, char *why, size_t n)
{
    if (strstr(s, "{") && strchr(strstr(s, "{"), '}')) {
        /* braces that are not a placeholder are fine: regexes, JSON examples */
        for (const char *p = strchr(s, '{'); p; p = strchr(p + 1, '{')) {
            size_t len = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz0123456789_");
            if (len && p[1 + len] == '}') {
                snprintf(why, n, "placeholder left: %.*s", (int)len + 2, p);
                return why;
            }
        }
    }
    for (const char *p = strchr(s, '%'); p; p = strchr(p + 1, '%'))
        if (strchr("sdgfzlu.*", p[1])) {
            snprintf(why, n, "printf directive left: %.4s", p);
            return why;
        }
    size_t len = strlen(s);
    if (len == 0 || s[len - 1] == '.' || isspace((unsigned char)s[0]) ||
        isspace((unsigned char)s[len - 1])) {
        snprintf(why, n, "empty, ending in a period, or padded");
        return why;
    }
    char prev[64] = "", word[64];
    for (const char *p = s; *p;) {
        while (*p && !isalpha((unsigned char)*p))
            p++;
        size_t w = 0;
        while (*p && (isalpha((unsigned char)*p) || *p == '\'') && w + 1 < sizeof word)
            word[w++] = (char)tolower((unsigned char)*p++);
        word[w] = '\0';
        if (!w)
            break;
        if (strcmp(word, prev) == 0 || (is_article(prev) && (is_article(word) ||
                                                             strcmp(word, "another") == 0))) {
            snprintf(why, n, "\"%s %s\"", prev, word);
            return why;
        }
        snprintf(prev, sizeof prev, "%s", word);
    }
    return NULL;
}

START_TEST(test_catalog_entries)
{
    for (int i = 0; i < PROBLEM_COUNT; i++) {
        const struct problem_def *d = problem_def((enum problem)i);
        ck_assert_msg(d->name && d->code && d->text, "entry %d is empty", i);
        ck_assert_msg(d->status >= 400 && d->status <= 599, "%s: status %d", d->name, d->status);
        /* dotted lower case: area.what[.detail] */
        ck_assert_msg(strchr(d->code, '.') && strspn(d->code, "abcdefghijklmnopqrstuvwxyz0123456789_.") ==
                                                  strlen(d->code),
                      "%s: code \"%s\"", d->name, d->code);
        for (int k = 0; k < i; k++) {
            const struct problem_def *o = problem_def((enum problem)k);
            if (strcmp(o->code, d->code) == 0)
                ck_assert_msg(strcmp(o->text, d->text) == 0, "%s and %s share code %s but not its text",
                              o->name, d->name, d->code);
        }
    }
    ck_assert_str_eq(problem_def(PROBLEM_COUNT)->code, "server.internal"); /* out of range */
}
END_TEST

/* Item 13 of issue 21: "is a another tenant's repository" - every text, filled once. */
START_TEST(test_catalog_wording)
{
    int bad = 0;
    for (int i = 0; i < PROBLEM_COUNT; i++) {
        const struct problem_def *d = problem_def((enum problem)i);
        json_t *params = sample_params(d->text);
        char *text = problem_format(d->text, params);
        char why[96];
        if (wording(text, why, sizeof why)) {
            fprintf(stderr, "%s (%s): %s: %s\n", d->name, d->code, why, text);
            bad++;
        }
        free(text);
        json_decref(params);
    }
    ck_assert_msg(bad == 0, "%d texts read wrong (listed above)", bad);
}
END_TEST

START_TEST(test_wording_check_catches)
{
    char why[96];
    /* the checker itself: each of these must be caught */
    ck_assert_ptr_nonnull(wording("\"x\" is a another tenant's repository", why, sizeof why));
    ck_assert_ptr_nonnull(wording("the the limit", why, sizeof why));
    ck_assert_ptr_nonnull(wording("no project {project}", why, sizeof why));
    ck_assert_ptr_nonnull(wording("needs %d GPUs", why, sizeof why));
    ck_assert_ptr_nonnull(wording("not found.", why, sizeof why));
    ck_assert_ptr_null(wording("must match ^[a-z][a-z0-9-]{1,62}$", why, sizeof why));
    ck_assert_ptr_null(wording("body must be {\"commands\": [...]}", why, sizeof why));
}
END_TEST

START_TEST(test_format)
{
    json_t *p = json_pack("{s:s, s:i, s:f, s:b, s:n, s:s}", "name", "web", "n", 3, "r", 2.5, "b", 1,
                          "z", "quote", "a \"q\"");
    char *s = problem_format("{name} {n} {r} {b} {z} {quote} {missing} {1,62} {Name} {}", p);
    ck_assert_str_eq(s, "web 3 2.5 true null a \"q\" {missing} {1,62} {Name} {}");
    free(s);
    s = problem_format("{name}", NULL); /* no params: the text as written */
    ck_assert_str_eq(s, "{name}");
    free(s);
    s = problem_format("trailing {", p);
    ck_assert_str_eq(s, "trailing {");
    free(s);
    json_decref(p);
    json_t *num = problem_number(2.0);
    ck_assert(json_is_integer(num));
    json_decref(num);
    num = problem_number(0.5);
    ck_assert(json_is_real(num));
    json_decref(num);
}
END_TEST

START_TEST(test_raise)
{
    struct resp rs = {0};
    int e = api_problem(&rs, PROBLEM_TENANT_NOT_FOUND, json_pack("{s:s}", "tenant", "chem"));
    ck_assert_int_ne(e, 0);
    ck_assert_int_eq(rs.err.status, MHD_HTTP_NOT_FOUND);
    ck_assert_str_eq(rs.err.detail, "tenant \"chem\" not found");
    json_t *doc = render(&rs.err, "r");
    ck_assert_str_eq(str(doc, "code"), "tenant.not_found");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "params"), "tenant")),
                     "chem");
    json_decref(doc);
    resp_free(&rs);

    /* one field error: the problem is the field's, with "field" among its params */
    api_field_problem(&rs, "gpus", PROBLEM_QUOTA_TENANT_GPUS,
                      json_pack("{s:i, s:s, s:i}", "requested", 3, "gpu_type", "a100", "limit", 2));
    api_fail_fields(&rs);
    ck_assert_int_eq(rs.err.status, MHD_HTTP_UNPROCESSABLE_CONTENT);
    doc = render(&rs.err, "r");
    ck_assert_str_eq(str(doc, "code"), "quota.limit_exceeded.tenant_gpus");
    ck_assert_str_eq(str(doc, "detail"), "gpus: 3 GPUs of type \"a100\" exceed the tenant's limit of 2");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "params"), "field")),
                     "gpus");
    json_t *fe = json_array_get(json_object_get(doc, "errors"), 0);
    ck_assert_str_eq(str(fe, "code"), "quota.limit_exceeded.tenant_gpus");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(fe, "params"), "limit")), 2);
    ck_assert_ptr_null(json_object_get(json_object_get(fe, "params"), "field"));
    json_decref(doc);
    resp_free(&rs);

    /* two: validation.failed with their count */
    api_field_problem(&rs, "a", PROBLEM_V_REQUIRED, NULL);
    api_field_problem(&rs, "b", PROBLEM_V_UNKNOWN_FIELD, NULL);
    api_fail_fields(&rs);
    ck_assert_int_eq(rs.err.status, MHD_HTTP_BAD_REQUEST);
    ck_assert_str_eq(rs.err.detail, "2 fields are invalid");
    doc = render(&rs.err, "r");
    ck_assert_str_eq(str(doc, "code"), "validation.failed");
    json_decref(doc);
    resp_free(&rs);

    /* params json_pack could not build (a NULL string): the text stays whole */
    api_problem(&rs, PROBLEM_TENANT_NOT_FOUND, json_pack("{s:s}", "tenant", (char *)NULL));
    ck_assert_str_eq(rs.err.detail, "tenant \"{tenant}\" not found");
    resp_free(&rs);
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
    TCase *cat = tcase_create("catalog");
    tcase_add_test(cat, test_catalog_entries);
    tcase_add_test(cat, test_catalog_wording);
    tcase_add_test(cat, test_wording_check_catches);
    tcase_add_test(cat, test_format);
    tcase_add_test(cat, test_raise);
    suite_add_tcase(s, cat);
    return s;
}

int main(void)
{
    return suite_run(problem_suite());
}
