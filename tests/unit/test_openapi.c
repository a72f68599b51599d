/*
 * test_openapi.c - api/openapi.json, as compiled into the binary, and the
 * route table of api/routes.c describe the same API: the checks of
 * openapi_checks.h on the real document and table, and the served document
 * is the embedded one. test_openapi_selftest.c proves the checks can fail.
 */
#include "tests/support/suite.h"
#include "tests/unit/openapi_checks.h"

#include "lib/embed.h"
#include "server/router.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the real document against the real table ----------------------------------- */

START_TEST(test_document)
{
    json_t *doc = spec_load();
    struct findings f = {0};
    check_document(doc, &f);
    ck_assert_clean(f);
    json_decref(doc);
}
END_TEST

START_TEST(test_coverage)
{
    json_t *doc = spec_load();
    struct findings f = {0};
    ck_assert_uint_gt(routes_count, 0);
    check_coverage(doc, routes, routes_count, &f);
    ck_assert_clean(f);
    json_decref(doc);
}
END_TEST

START_TEST(test_params)
{
    json_t *doc = spec_load();
    struct findings f = {0};
    check_params(doc, routes, routes_count, &f);
    check_paging_params(doc, routes, routes_count, &f);
    ck_assert_clean(f);
    json_decref(doc);
}
END_TEST

START_TEST(test_idempotency)
{
    json_t *doc = spec_load();
    struct findings f = {0};
    check_idempotency(doc, routes, routes_count, &f);
    ck_assert_clean(f);
    json_decref(doc);
}
END_TEST

START_TEST(test_operations)
{
    json_t *doc = spec_load();
    struct findings f = {0};
    check_operation_ids(doc, &f);
    check_operations(doc, routes, routes_count, &f);
    ck_assert_clean(f);
    json_decref(doc);
}
END_TEST

START_TEST(test_refs)
{
    json_t *doc = spec_load();
    struct findings f = {0};
    check_refs(doc, doc, &f);
    ck_assert_clean(f);
    json_decref(doc);
}
END_TEST

/* The served document is the embedded one, byte for byte, NUL-terminated. */
START_TEST(test_embedded)
{
    ck_assert_ptr_nonnull(embed_openapi[0].data);
    ck_assert_str_eq(embed_openapi[0].name, "openapi.json");
    ck_assert_uint_eq(strlen((const char *)embed_openapi[0].data), embed_openapi[0].len);
    ck_assert_ptr_null(embed_openapi[1].name);
}
END_TEST

/* The **bold** titles in text[0..n), in order, joined by "\n" (malloc'd). */
static char *bold_titles(const char *text, size_t n)
{
    size_t cap = n + 1, len = 0;
    char *out = calloc(cap, 1);
    ck_assert_ptr_nonnull(out);
    const char *end = text + n;
    for (const char *p = strstr(text, "**"); p && p < end; p = strstr(p, "**")) {
        const char *q = strstr(p + 2, "**");
        if (!q || q >= end)
            break;
        len += (size_t)snprintf(out + len, cap - len, "%.*s\n", (int)(q - p - 2), p + 2);
        p = q + 2;
    }
    return out;
}

/* docs/design.md's "Deliberate rules" and the document's description name the same
 * rules: where aidc differs from its brief is said in one place, the same in both. */
START_TEST(test_deliberate_rules)
{
    FILE *f = fopen(AIDC_SOURCE_DIR "/docs/design.md", "r");
    ck_assert_ptr_nonnull(f);
    static char md[1 << 18];
    size_t n = fread(md, 1, sizeof md - 1, f);
    fclose(f);
    md[n] = '\0';
    const char *start = strstr(md, "\n## Deliberate rules\n");
    ck_assert_ptr_nonnull(start);
    const char *stop = strstr(start, "\n### ");
    ck_assert_ptr_nonnull(stop);
    char *in_docs = bold_titles(start, (size_t)(stop - start));

    json_t *doc = spec_load();
    const char *desc = json_string_value(json_object_get(json_object_get(doc, "info"), "description"));
    ck_assert_ptr_nonnull(desc);
    const char *rules = strstr(desc, "Deliberate rules");
    ck_assert_ptr_nonnull(rules);
    char *in_spec = bold_titles(rules, strlen(rules));
    ck_assert_msg(strchr(in_docs, '\n') && strcmp(in_docs, in_spec) == 0,
                  "docs/design.md lists:\n%s\nopenapi.json lists:\n%s", in_docs, in_spec);
    free(in_docs);
    free(in_spec);
    json_decref(doc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("openapi");
    TCase *tc = tcase_create("sync");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_document);
    tcase_add_test(tc, test_coverage);
    tcase_add_test(tc, test_params);
    tcase_add_test(tc, test_idempotency);
    tcase_add_test(tc, test_operations);
    tcase_add_test(tc, test_refs);
    tcase_add_test(tc, test_embedded);
    tcase_add_test(tc, test_deliberate_rules);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
