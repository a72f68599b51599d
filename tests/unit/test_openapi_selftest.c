/*
 * test_openapi_selftest.c - the checks of openapi_checks.h pass on the real
 * api/openapi.json and route table, and each of them fails on a copy of the
 * document or the table broken on purpose (a missing or extra operation, an
 * undocumented route, other parameters, no Idempotency-Key, no 2xx answer,
 * bad operationIds, another version, other roles or scope, a dangling $ref).
 */
#include "tests/support/suite.h"
#include "tests/unit/openapi_checks.h"

#include "lib/embed.h"
#include "server/router.h"

#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* All checks against the real table; the count of findings. */
static int check_all(json_t *doc, const struct route *table, size_t n, struct findings *f)
{
    check_document(doc, f);
    check_coverage(doc, table, n, f);
    check_params(doc, table, n, f);
    check_paging_params(doc, table, n, f);
    check_idempotency(doc, table, n, f);
    check_operation_ids(doc, f);
    check_operations(doc, table, n, f);
    check_refs(doc, doc, f);
    return f->n;
}

/* ---- self-test: each check fails on a broken copy -------------------------------- */

static const struct route *first_route(unsigned flags_set, const char *pattern_part)
{
    for (size_t i = 0; i < routes_count; i++)
        if ((routes[i].flags & flags_set) == flags_set &&
            (!pattern_part || strstr(routes[i].pattern, pattern_part)))
            return &routes[i];
    ck_abort_msg("the route table has no route with flags %#x and \"%s\"", flags_set,
                 pattern_part ? pattern_part : "");
    return NULL;
}

static struct route *table_copy(size_t extra)
{
    struct route *t = calloc(routes_count + extra, sizeof *t);
    ck_assert_ptr_nonnull(t);
    memcpy(t, routes, routes_count * sizeof *t);
    return t;
}

/* Run every check on (doc, table) and demand at least one finding. */
static void expect_failure(json_t *doc, const struct route *table, size_t n, const char *why)
{
    struct findings f = {0};
    ck_assert_msg(check_all(doc, table, n, &f) > 0, "the checks missed: %s", why);
}

START_TEST(test_selftest_clean)
{
    json_t *doc = spec_load();
    struct findings f = {0};
    ck_assert_msg(check_all(doc, routes, routes_count, &f) == 0, "%s", f.text);
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_missing_operation)
{
    json_t *doc = spec_load();
    const struct route *r = first_route(RF_CREATES, NULL);
    char m[16];
    lowercase(r->method, m, sizeof m);
    json_object_del(path_item(doc, r), m);
    expect_failure(doc, routes, routes_count, "an operation missing from the spec");
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_extra_operation)
{
    json_t *doc = spec_load();
    json_t *copy = json_deep_copy(operation(doc, &routes[0]));
    json_object_set_new(json_object_get(doc, "paths"), "/api/v1/nothing",
                        json_pack("{s:o}", "get", copy));
    json_object_set_new(copy, "operationId", json_string("nothingRead")); /* doc owns copy now */
    expect_failure(doc, routes, routes_count, "an operation the route table lacks");
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_extra_route)
{
    json_t *doc = spec_load();
    struct route *t = table_copy(1);
    t[routes_count] = (struct route){
        "GET", "/api/v1/undocumented", NULL, "undocumented.read", 0, TR_NONE, 0, RF_ANY_USER, NULL,
        NULL};
    expect_failure(doc, t, routes_count + 1, "a route missing from the spec");
    free(t);
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_query_mismatch)
{
    json_t *doc = spec_load();
    struct route *t = table_copy(0);
    size_t i = 0;
    while (i < routes_count && !t[i].query)
        i++;
    ck_assert_uint_lt(i, routes_count);
    const char *orig = t[i].query;
    t[i].query = "limit"; /* one fewer than the spec */
    expect_failure(doc, t, routes_count, "a query parameter the route does not accept");
    t[i].query = "limit,cursor,state"; /* one more than the spec */
    expect_failure(doc, t, routes_count, "a query parameter missing from the spec");
    t[i].query = orig;
    free(t);
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_path_param_mismatch)
{
    json_t *doc = spec_load();
    const struct route *r = first_route(0, "{tenant}");
    json_t *params = json_object_get(operation(doc, r), "parameters");
    ck_assert_uint_gt(json_array_size(params), 0);
    json_array_set_new(params, 0,
                       json_pack("{s:s, s:s, s:b, s:{s:s}}", "name", "tenant_slug", "in", "path",
                                 "required", 1, "schema", "type", "string"));
    expect_failure(doc, routes, routes_count, "a renamed path parameter");
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_idempotency_key)
{
    json_t *doc = spec_load();
    const struct route *r = first_route(RF_CREATES, NULL);
    json_t *params = json_object_get(operation(doc, r), "parameters");
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p)
    {
        const char *ref = json_string_value(json_object_get(p, "$ref"));
        if (ref && strstr(ref, "Idempotency-Key")) {
            json_array_remove(params, i);
            break;
        }
    }
    expect_failure(doc, routes, routes_count, "a create without Idempotency-Key");
    json_decref(doc);

    /* and a route that starts creating without the spec knowing */
    doc = spec_load();
    struct route *t = table_copy(0);
    i = 0;
    while (i < routes_count && (t[i].flags & RF_CREATES))
        i++;
    ck_assert_uint_lt(i, routes_count);
    t[i].flags |= RF_CREATES;
    expect_failure(doc, t, routes_count, "an RF_CREATES route without Idempotency-Key");
    free(t);
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_no_2xx)
{
    json_t *doc = spec_load();
    const struct route *r = first_route(RF_BODY, NULL);
    json_t *responses = json_object_get(operation(doc, r), "responses");
    const char *code;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(responses, tmp, code, v)
    {
        if (code[0] == '2')
            json_object_del(responses, code);
    }
    expect_failure(doc, routes, routes_count, "an operation without a 2xx response");
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_operation_ids)
{
    json_t *doc = spec_load();
    json_object_del(operation(doc, &routes[1]), "operationId");
    expect_failure(doc, routes, routes_count, "an operation without operationId");
    json_decref(doc);

    doc = spec_load();
    json_object_set(operation(doc, &routes[1]), "operationId",
                    json_object_get(operation(doc, &routes[0]), "operationId"));
    expect_failure(doc, routes, routes_count, "a duplicate operationId");
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_version)
{
    json_t *doc = spec_load();
    json_object_set_new(doc, "openapi", json_string("3.0.3"));
    expect_failure(doc, routes, routes_count, "\"openapi\": \"3.0.3\"");
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_invalid_json)
{
    json_error_t err;
    json_t *half =
        json_loadb((const char *)embed_openapi[0].data, embed_openapi[0].len / 2, 0, &err);
    ck_assert_ptr_null(half);
}
END_TEST

START_TEST(test_selftest_roles)
{
    json_t *doc = spec_load();
    struct route *t = table_copy(0);
    size_t i = (size_t)(first_route(RF_BODY, "{tenant}") - routes);
    t[i].global_roles |= GR_AUDITOR;
    expect_failure(doc, t, routes_count, "a global role the spec does not list");
    t[i].global_roles = routes[i].global_roles;
    t[i].scope = SC_JOBS_WRITE;
    expect_failure(doc, t, routes_count, "a different token scope");
    t[i].scope = routes[i].scope;
    t[i].tenant_role = TR_MEMBER;
    expect_failure(doc, t, routes_count, "a different minimum tenant role");
    free(t);
    json_decref(doc);
}
END_TEST

START_TEST(test_selftest_dangling_ref)
{
    json_t *doc = spec_load();
    json_object_set_new(json_object_get(operation(doc, &routes[0]), "responses"), "418",
                        json_pack("{s:s}", "$ref", "#/components/responses/Teapot"));
    expect_failure(doc, routes, routes_count, "a dangling $ref");
    json_decref(doc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("openapi_selftest");
    TCase *tc = tcase_create("selftest");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_selftest_clean);
    tcase_add_test(tc, test_selftest_missing_operation);
    tcase_add_test(tc, test_selftest_extra_operation);
    tcase_add_test(tc, test_selftest_extra_route);
    tcase_add_test(tc, test_selftest_query_mismatch);
    tcase_add_test(tc, test_selftest_path_param_mismatch);
    tcase_add_test(tc, test_selftest_idempotency_key);
    tcase_add_test(tc, test_selftest_no_2xx);
    tcase_add_test(tc, test_selftest_operation_ids);
    tcase_add_test(tc, test_selftest_version);
    tcase_add_test(tc, test_selftest_invalid_json);
    tcase_add_test(tc, test_selftest_roles);
    tcase_add_test(tc, test_selftest_dangling_ref);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
