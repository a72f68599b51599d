/*
 * test_openapi.c - api/openapi.json, as compiled into the binary, and the
 * route table of api/routes.c describe the same API: the checks of
 * openapi_checks.h on the real document and table, and the served document
 * is the embedded one. test_openapi_selftest.c proves the checks can fail.
 */
#include "tests/support/suite.h"
#include "tests/unit/openapi_checks.h"

#include "server/embed.h"
#include "server/router.h"

#include <check.h>
#include <jansson.h>
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
    suite_add_tcase(s, tc);
    return suite_run(s);
}
