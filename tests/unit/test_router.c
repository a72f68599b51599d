/*
 * test_router.c - router_match and router_accepts_query against a small route
 * table of the test's own (independent of api/routes.c).
 *
 * Leak checks use glibc's mallinfo2(): a match that fails must leave the heap
 * as it found it, since every request that misses a route goes through it.
 * (Under AddressSanitizer mallinfo2 reports nothing and those checks are
 * vacuous; LeakSanitizer then does the job.)
 */
#include "tests/support/suite.h"
#include "server/router.h"
#include "lib/xalloc.h"

#include <check.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* rows name the columns they use, as api/routes.c's do */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

static const struct route table[] = {
    {"GET", "/healthz", NULL, "health.check", 0, TR_NONE, 0, RF_PUBLIC, NULL},
    {"GET", "/api/v1/tenants", NULL, "tenant.list", 0, TR_NONE, 0, 0, "limit,cursor"},
    {"POST", "/api/v1/tenants", NULL, "tenant.create", 0, TR_NONE, 0, RF_BODY, NULL},
    {"GET", "/api/v1/tenants/{tenant}", NULL, "tenant.read", 0, TR_VIEWER, 0, 0, NULL},
    {"PATCH", "/api/v1/tenants/{tenant}", NULL, "tenant.update", 0, TR_ADMIN, 0, RF_BODY, NULL},
    {"GET", "/api/v1/tenants/{tenant}/members", NULL, "member.list", 0, TR_VIEWER, 0, 0, "q"},
    {"PUT", "/api/v1/tenants/{tenant}/members/{username}", NULL, "member.put", 0, TR_ADMIN, 0,
     RF_BODY, NULL},
    {"GET", "/api/v1/tenants/{tenant}/projects/{project}", NULL, "project.read", 0, TR_VIEWER, 0,
     0, NULL},
    {"DELETE", "/api/v1/tenants/{tenant}/projects/{project}", NULL, "project.delete", 0,
     TR_ADMIN, 0, 0, NULL},
    {"GET", "/{a}/{b}/{c}/{d}/{e}/{f}/{g}", NULL, "too.many.params", 0, TR_NONE, 0, 0, NULL},
    {"GET", "/files/{kind}/{name}/{path*}", NULL, "file.read", 0, TR_NONE, 0, 0, NULL},
};
#define NTABLE (sizeof table / sizeof table[0])

static size_t heap_in_use(void)
{
    return mallinfo2().uordblks;
}

static struct req *new_req(void)
{
    return xcalloc(1, sizeof(struct req));
}

static enum route_match_result match(struct req *rq, const char *method, const char *path,
                                     const struct route **out, char *allow, size_t allowsz)
{
    return router_match(table, NTABLE, method, path, rq, out, allow, allowsz);
}

START_TEST(test_exact_match)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    char allow[64];
    ck_assert_int_eq(match(rq, "GET", "/healthz", &rt, allow, sizeof allow), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[0]);
    ck_assert_uint_eq(rq->nparams, 0);

    rt = NULL;
    ck_assert_int_eq(match(rq, "POST", "/api/v1/tenants", &rt, allow, sizeof allow), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[2]);
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants", &rt, allow, sizeof allow), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[1]);
    req_free(rq);
}
END_TEST

START_TEST(test_case_sensitive)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "GET", "/HEALTHZ", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_ptr_null(rt);
    /* methods are case-sensitive too (RFC 9110) */
    ck_assert_int_eq(match(rq, "get", "/healthz", &rt, NULL, 0), ROUTE_NO_METHOD);
    req_free(rq);
}
END_TEST

START_TEST(test_head_is_get)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    char allow[64];
    ck_assert_int_eq(match(rq, "HEAD", "/healthz", &rt, allow, sizeof allow), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[0]);
    ck_assert_int_eq(match(rq, "HEAD", "/api/v1/tenants/acme", &rt, allow, sizeof allow),
                     ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[3]);
    ck_assert_str_eq(req_param(rq, "tenant"), "acme");
    /* a path without GET has no HEAD either */
    rt = NULL;
    ck_assert_int_eq(match(rq, "HEAD", "/api/v1/tenants/acme/members/bob", &rt, allow,
                           sizeof allow),
                     ROUTE_NO_METHOD);
    ck_assert_str_eq(allow, "PUT");
    ck_assert_ptr_null(rt);
    req_free(rq);
}
END_TEST

START_TEST(test_params_captured)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/acme/projects/web", &rt, NULL, 0),
                     ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[7]);
    ck_assert_uint_eq(rq->nparams, 2);
    ck_assert_str_eq(req_param(rq, "tenant"), "acme");
    ck_assert_str_eq(req_param(rq, "project"), "web");
    ck_assert_ptr_null(req_param(rq, "id"));
    req_free(rq);
}
END_TEST

START_TEST(test_param_value_verbatim)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/a%20b.c", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[3]);
    ck_assert_str_eq(req_param(rq, "tenant"), "a%20b.c");
    req_free(rq);
}
END_TEST

START_TEST(test_literal_segment_beats_shorter_pattern)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/acme/members", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[5]);
    ck_assert_uint_eq(rq->nparams, 1);
    ck_assert_str_eq(req_param(rq, "tenant"), "acme");

    ck_assert_int_eq(match(rq, "PUT", "/api/v1/tenants/acme/members/bob", &rt, NULL, 0),
                     ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[6]);
    ck_assert_str_eq(req_param(rq, "username"), "bob");
    req_free(rq);
}
END_TEST

START_TEST(test_second_method_of_same_path)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "PATCH", "/api/v1/tenants/acme", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[4]);
    ck_assert_str_eq(req_param(rq, "tenant"), "acme");
    req_free(rq);
}
END_TEST

START_TEST(test_rematch_replaces_params)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/acme/projects/web", &rt, NULL, 0),
                     ROUTE_FOUND);
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/globex", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_uint_eq(rq->nparams, 1);
    ck_assert_str_eq(req_param(rq, "tenant"), "globex");
    ck_assert_ptr_null(req_param(rq, "project"));
    req_free(rq);
}
END_TEST

START_TEST(test_trailing_slash_once)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "GET", "/healthz/", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[0]);
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[1]);
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/acme/", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_ptr_eq(rt, &table[3]);
    ck_assert_str_eq(req_param(rq, "tenant"), "acme");

    rt = NULL;
    ck_assert_int_eq(match(rq, "GET", "/healthz//", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants//", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_ptr_null(rt);
    req_free(rq);
}
END_TEST

START_TEST(test_empty_segment_not_matched)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "GET", "//healthz", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "/api//v1/tenants", &rt, NULL, 0), ROUTE_NO_PATH);
    /* an empty segment must not be captured as an empty {param} */
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants//projects/web", &rt, NULL, 0),
                     ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/acme//web", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_ptr_null(rt);
    ck_assert_uint_eq(rq->nparams, 0);
    req_free(rq);
}
END_TEST

START_TEST(test_no_path)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    char allow[64] = "garbage";
    ck_assert_int_eq(match(rq, "GET", "/nope", &rt, allow, sizeof allow), ROUTE_NO_PATH);
    ck_assert_str_eq(allow, "");
    ck_assert_int_eq(match(rq, "GET", "", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "/", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "healthz", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "/healthzz", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "/health", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_ptr_null(rt);
    req_free(rq);
}
END_TEST

START_TEST(test_longer_and_shorter_paths)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    /* shorter than any pattern of its prefix */
    ck_assert_int_eq(match(rq, "GET", "/api/v1", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "/api", &rt, NULL, 0), ROUTE_NO_PATH);
    /* between two patterns: /tenants/{t}/projects has no route of its own */
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/acme/projects", &rt, NULL, 0),
                     ROUTE_NO_PATH);
    /* longer than the longest pattern */
    ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/acme/projects/web/extra", &rt, NULL, 0),
                     ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "/healthz/extra", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_ptr_null(rt);
    ck_assert_uint_eq(rq->nparams, 0);
    req_free(rq);
}
END_TEST

START_TEST(test_no_method_allow_list)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    char allow[64];
    ck_assert_int_eq(match(rq, "DELETE", "/api/v1/tenants/acme", &rt, allow, sizeof allow),
                     ROUTE_NO_METHOD);
    ck_assert_str_eq(allow, "GET, PATCH");
    ck_assert_ptr_null(rt);
    ck_assert_uint_eq(rq->nparams, 0);

    ck_assert_int_eq(match(rq, "POST", "/api/v1/tenants/acme/projects/web", &rt, allow,
                           sizeof allow),
                     ROUTE_NO_METHOD);
    ck_assert_str_eq(allow, "GET, DELETE");

    ck_assert_int_eq(match(rq, "DELETE", "/api/v1/tenants", &rt, allow, sizeof allow),
                     ROUTE_NO_METHOD);
    ck_assert_str_eq(allow, "GET, POST");

    ck_assert_int_eq(match(rq, "POST", "/healthz/", &rt, allow, sizeof allow), ROUTE_NO_METHOD);
    ck_assert_str_eq(allow, "GET");
    req_free(rq);
}
END_TEST

START_TEST(test_no_method_without_allow_buffer)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "DELETE", "/api/v1/tenants/acme", &rt, NULL, 0), ROUTE_NO_METHOD);
    ck_assert_ptr_null(rt);
    req_free(rq);
}
END_TEST

/*
 * An Allow buffer too small for the whole list must not end in a cut-off
 * method name ("GET, PA"): a client would read "PA" as a method.
 */
START_TEST(test_allow_truncation_keeps_whole_methods)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    char allow[8];
    ck_assert_int_eq(match(rq, "DELETE", "/api/v1/tenants/acme", &rt, allow, sizeof allow),
                     ROUTE_NO_METHOD);
    ck_assert_msg(strcmp(allow, "GET") == 0, "truncated Allow list is \"%s\", want \"GET\"",
                  allow);
    req_free(rq);
}
END_TEST

/* Params of a path that does not match must not leak (every request runs this). */
START_TEST(test_failed_match_does_not_leak)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    char allow[64];
    /* warm up whatever the allocator sets up on first use */
    (void)match(rq, "GET", "/api/v1/tenants/acme/nothing", &rt, allow, sizeof allow);
    size_t before = heap_in_use();
    for (int i = 0; i < 100; i++) {
        /* mismatch after a capture */
        (void)match(rq, "GET", "/api/v1/tenants/acme/nothing", &rt, allow, sizeof allow);
        /* wrong method: captures made, then dropped */
        (void)match(rq, "DELETE", "/api/v1/tenants/acme", &rt, allow, sizeof allow);
    }
    ck_assert_uint_eq(heap_in_use(), before);
    req_free(rq);
}
END_TEST

START_TEST(test_empty_segment_after_capture_does_not_leak)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    (void)match(rq, "GET", "/api/v1/tenants/acme/nothing", &rt, NULL, 0);
    size_t before = heap_in_use();
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(match(rq, "GET", "/api/v1/tenants/acme//web", &rt, NULL, 0),
                         ROUTE_NO_PATH);
    ck_assert_msg(heap_in_use() == before, "router_match leaked %zu bytes on 100 \"//\" paths",
                  heap_in_use() - before);
    req_free(rq);
}
END_TEST

START_TEST(test_too_many_params_does_not_leak)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    (void)match(rq, "GET", "/api/v1/tenants/acme/nothing", &rt, NULL, 0);
    size_t before = heap_in_use();
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(match(rq, "GET", "/1/2/3/4/5/6/7", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_msg(heap_in_use() == before,
                  "router_match leaked %zu bytes on 100 paths with 7 params",
                  heap_in_use() - before);
    req_free(rq);
}
END_TEST

START_TEST(test_accepts_query)
{
    ck_assert(router_accepts_query(&table[1], "limit"));
    ck_assert(router_accepts_query(&table[1], "cursor"));
    ck_assert(!router_accepts_query(&table[1], "lim"));
    ck_assert(!router_accepts_query(&table[1], "limits"));
    ck_assert(!router_accepts_query(&table[1], "limit,cursor"));
    ck_assert(!router_accepts_query(&table[1], ""));
    ck_assert(!router_accepts_query(&table[1], "q"));
    ck_assert(router_accepts_query(&table[5], "q"));
    ck_assert(!router_accepts_query(&table[5], "qq"));
    /* a route without query arguments accepts none */
    ck_assert(!router_accepts_query(&table[0], "limit"));
    ck_assert(!router_accepts_query(&table[0], ""));
}
END_TEST

START_TEST(test_router_index)
{
    ck_assert_uint_gt(routes_count, 3);
    ck_assert_uint_eq(router_index(&routes[0]), 0);
    ck_assert_uint_eq(router_index(&routes[3]), 3);
    ck_assert_uint_eq(router_index(&routes[routes_count - 1]), routes_count - 1);
}
END_TEST


/* "{path*}" takes the rest of the path, slashes included, or nothing */
START_TEST(test_tail_capture)
{
    struct req *rq = new_req();
    const struct route *rt = NULL;
    ck_assert_int_eq(match(rq, "GET", "/files/projects/p/a/b/c.txt", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_str_eq(req_param(rq, "path"), "a/b/c.txt");
    ck_assert_str_eq(req_param(rq, "name"), "p");
    ck_assert_int_eq(match(rq, "GET", "/files/projects/p", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_str_eq(req_param(rq, "path"), "");
    ck_assert_int_eq(match(rq, "GET", "/files/projects/p/", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_str_eq(req_param(rq, "path"), "");
    ck_assert_int_eq(match(rq, "GET", "/files/projects/p/a//b", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_str_eq(req_param(rq, "path"), "a//b"); /* the handler refuses empty names */
    ck_assert_int_eq(match(rq, "GET", "/files/projects", &rt, NULL, 0), ROUTE_NO_PATH);
    ck_assert_int_eq(match(rq, "GET", "/files/projectsX/p/a", &rt, NULL, 0), ROUTE_FOUND);
    ck_assert_str_eq(req_param(rq, "kind"), "projectsX");
    req_free(rq);
}
END_TEST

static Suite *router_suite(void)
{
    Suite *s = suite_create("router");
    TCase *tc = tcase_create("match");
    tcase_add_test(tc, test_exact_match);
    tcase_add_test(tc, test_tail_capture);
    tcase_add_test(tc, test_case_sensitive);
    tcase_add_test(tc, test_head_is_get);
    tcase_add_test(tc, test_params_captured);
    tcase_add_test(tc, test_param_value_verbatim);
    tcase_add_test(tc, test_literal_segment_beats_shorter_pattern);
    tcase_add_test(tc, test_second_method_of_same_path);
    tcase_add_test(tc, test_rematch_replaces_params);
    tcase_add_test(tc, test_trailing_slash_once);
    tcase_add_test(tc, test_empty_segment_not_matched);
    tcase_add_test(tc, test_no_path);
    tcase_add_test(tc, test_longer_and_shorter_paths);
    tcase_add_test(tc, test_no_method_allow_list);
    tcase_add_test(tc, test_no_method_without_allow_buffer);
    tcase_add_test(tc, test_allow_truncation_keeps_whole_methods);
    suite_add_tcase(s, tc);

    TCase *leaks = tcase_create("leaks");
    tcase_add_test(leaks, test_failed_match_does_not_leak);
    tcase_add_test(leaks, test_empty_segment_after_capture_does_not_leak);
    tcase_add_test(leaks, test_too_many_params_does_not_leak);
    suite_add_tcase(s, leaks);

    TCase *q = tcase_create("query");
    tcase_add_test(q, test_accepts_query);
    tcase_add_test(q, test_router_index);
    suite_add_tcase(s, q);
    return s;
}

int main(void)
{
    return suite_run(router_suite());
}
