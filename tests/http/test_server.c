/*
 * test_server.c - the HTTP layer of the real aidcd: health, readiness,
 * metrics, the spec, security headers, request ids, the dispatcher's
 * 404/405/413/415/400 answers, portal files, the access log, and draining on
 * SIGTERM.
 */
#include "tests/support/suite.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void setup(void)
{
    harness_setup("server", NULL);
}

static void teardown(void)
{
    harness_teardown();
}

static void assert_header(const struct http_res *r, const char *name, const char *want)
{
    char *v = http_header(r, name);
    ck_assert_msg(v != NULL, "header %s missing", name);
    if (want)
        ck_assert_msg(strstr(v, want) != NULL, "header %s is \"%s\", wanted \"%s\"", name, v, want);
    free(v);
}

static void assert_problem(const struct http_res *r, long status)
{
    ck_assert_int_eq(r->status, status);
    assert_header(r, "Content-Type", "application/problem+json");
    ck_assert_ptr_nonnull(r->json);
    ck_assert_int_eq(json_integer_value(json_object_get(r->json, "status")), status);
    ck_assert_str_eq(json_string_value(json_object_get(r->json, "type")), "about:blank");
    ck_assert_ptr_nonnull(json_string_value(json_object_get(r->json, "title")));
    ck_assert_ptr_nonnull(json_string_value(json_object_get(r->json, "detail")));
    char *rid = http_header(r, "X-Request-Id");
    ck_assert_ptr_nonnull(rid);
    ck_assert_str_eq(json_string_value(json_object_get(r->json, "request_id")), rid);
    free(rid);
}

START_TEST(healthz_and_security_headers)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/healthz", NULL, NULL, &r), 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "ok");
    assert_header(&r, "X-Request-Id", NULL);
    assert_header(&r, "X-Content-Type-Options", "nosniff");
    assert_header(&r, "Referrer-Policy", "no-referrer");
    assert_header(&r, "Cache-Control", "no-store");
    assert_header(&r, "Content-Security-Policy", "default-src 'none'");
    assert_header(&r, "Content-Type", "application/json");
    http_res_free(&r);
}
END_TEST

START_TEST(readyz_when_database_is_current)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/readyz", NULL, NULL, &r), 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "ready");
    ck_assert_int_ge(json_integer_value(json_object_get(r.json, "schema_version")), 1);
    http_res_free(&r);
}
END_TEST

START_TEST(request_id_echo_and_replace)
{
    struct http_res r;
    const char *sane[] = {"X-Request-Id: ci-run-42.step_7", NULL};
    http_do(&harness_srv, "GET", "/healthz", NULL, NULL, sane, &r);
    assert_header(&r, "X-Request-Id", "ci-run-42.step_7");
    http_res_free(&r);
    const char *insane[] = {"X-Request-Id: has spaces and <script>", NULL};
    http_do(&harness_srv, "GET", "/healthz", NULL, NULL, insane, &r);
    char *rid = http_header(&r, "X-Request-Id");
    ck_assert_ptr_nonnull(rid);
    ck_assert_ptr_null(strstr(rid, "script"));
    ck_assert_int_gt((long)strlen(rid), 8);
    free(rid);
    http_res_free(&r);
}
END_TEST

START_TEST(metrics_count_requests_per_route)
{
    ck_assert_int_eq(req("GET", "/api/v1/me", harness_srv.admin_token, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1/nope", NULL, NULL), 404);
    /* a status of its own, not "other" */
    ck_assert_int_eq(req("GET", "/api/v1/usage/jobs?format=csv", harness_srv.admin_token, NULL),
                     406);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/metrics", NULL, NULL, &r), 200);
    assert_header(&r, "Content-Type", "text/plain");
    ck_assert_ptr_nonnull(strstr(
        r.body, "aidc_http_requests_total{method=\"GET\",route=\"/api/v1/me\",status=\"200\"}"));
    ck_assert_ptr_nonnull(strstr(r.body, "route=\"unmatched\",status=\"404\""));
    ck_assert_ptr_nonnull(strstr(r.body, "route=\"/api/v1/usage/jobs\",status=\"406\""));
    ck_assert_ptr_nonnull(strstr(r.body, "aidc_http_request_duration_seconds_bucket{method=\"GET\","
                                         "route=\"/api/v1/me\",status=\"200\",le=\"+Inf\"}"));
    ck_assert_ptr_nonnull(strstr(r.body, "aidc_db_reconnects_total "));
    ck_assert_ptr_nonnull(strstr(r.body, "aidc_http_requests_in_flight "));
    const char *conns = strstr(r.body, "\naidc_db_connections{pool=\"primary\"} ");
    ck_assert_ptr_nonnull(conns);
    ck_assert_int_ge(atoi(conns + strlen("\naidc_db_connections{pool=\"primary\"} ")), 1);
    ck_assert_ptr_nonnull(strstr(r.body, "\naidc_db_connections_busy{pool=\"primary\"} "));
    ck_assert_ptr_nonnull(strstr(r.body, "\naidc_db_scrape_ok 1\n"));
    http_res_free(&r);
}
END_TEST

START_TEST(openapi_document_is_served)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/openapi.json", NULL, NULL, &r), 200);
    ck_assert_ptr_nonnull(r.json);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "openapi")), "3.1.0");
    ck_assert_ptr_nonnull(json_object_get(json_object_get(r.json, "paths"), "/api/v1/tenants"));
    http_res_free(&r);
}
END_TEST

START_TEST(unknown_path_is_404_problem)
{
    struct http_res r;
    reqj("GET", "/api/v1/does-not-exist", harness_srv.admin_token, NULL, &r);
    assert_problem(&r, 404);
    assert_header(&r, "X-Content-Type-Options", "nosniff");
    http_res_free(&r);
    reqj("GET", "/api/v1/tenants/x/y/z/w", harness_srv.admin_token, NULL, &r);
    assert_problem(&r, 404);
    http_res_free(&r);
}
END_TEST

START_TEST(wrong_method_is_405_with_allow)
{
    struct http_res r;
    reqj("PUT", "/api/v1/tenants", harness_srv.admin_token, "{}", &r);
    assert_problem(&r, 405);
    char *allow = http_header(&r, "Allow");
    ck_assert_ptr_nonnull(allow);
    ck_assert_ptr_nonnull(strstr(allow, "GET"));
    ck_assert_ptr_nonnull(strstr(allow, "POST"));
    free(allow);
    http_res_free(&r);
    reqj("DELETE", "/healthz", NULL, NULL, &r);
    assert_problem(&r, 405);
    assert_header(&r, "Allow", "GET");
    http_res_free(&r);
}
END_TEST

START_TEST(trailing_slash_is_tolerated)
{
    ck_assert_int_eq(req("GET", "/api/v1/tenants/", harness_srv.admin_token, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1//tenants", harness_srv.admin_token, NULL), 404);
}
END_TEST

START_TEST(oversized_body_is_413)
{
    size_t n = 1024 * 1024 + 1;
    char *big = malloc(n + 1);
    memset(big, 'a', n);
    big[n] = '\0';
    struct http_res r;
    http_raw(&harness_srv, "POST", "/api/v1/tenants", harness_srv.admin_token, "application/json",
             big, n, NULL, &r);
    assert_problem(&r, 413);
    http_res_free(&r);
    /* chunked: no Content-Length, so the limit is enforced while reading */
    const char *chunked[] = {"Transfer-Encoding: chunked", NULL};
    http_raw(&harness_srv, "POST", "/api/v1/tenants", harness_srv.admin_token, "application/json",
             big, n, chunked, &r);
    assert_problem(&r, 413);
    http_res_free(&r);
    free(big);
    /* the server still answers */
    ck_assert_int_eq(req("GET", "/healthz", NULL, NULL), 200);
}
END_TEST

START_TEST(wrong_content_type_is_415)
{
    struct http_res r;
    const char *b = "{\"slug\":\"abc\",\"name\":\"x\"}";
    http_raw(&harness_srv, "POST", "/api/v1/tenants", harness_srv.admin_token, "text/plain", b,
             strlen(b), NULL, &r);
    assert_problem(&r, 415);
    http_res_free(&r);
    http_raw(&harness_srv, "POST", "/api/v1/tenants", harness_srv.admin_token, NULL, b, strlen(b),
             NULL, &r);
    assert_problem(&r, 415);
    http_res_free(&r);
    /* parameters after the media type are fine */
    const char *ok = "{\"slug\":\"ct-ok\",\"name\":\"x\"}";
    http_raw(&harness_srv, "POST", "/api/v1/tenants", harness_srv.admin_token,
             "application/json; charset=utf-8", ok, strlen(ok), NULL, &r);
    ck_assert_int_eq(r.status, 201);
    http_res_free(&r);
}
END_TEST

START_TEST(unknown_and_duplicate_query_arguments_are_400)
{
    struct http_res r;
    reqj("GET", "/api/v1/tenants?limit=5&colour=red", harness_srv.admin_token, NULL, &r);
    assert_problem(&r, 400);
    json_t *e0 = json_array_get(json_object_get(r.json, "errors"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(e0, "field")), "colour");
    http_res_free(&r);
    reqj("GET", "/api/v1/tenants?limit=5&limit=6", harness_srv.admin_token, NULL, &r);
    assert_problem(&r, 400);
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/healthz?x=1", NULL, NULL), 400);
}
END_TEST

START_TEST(portal_files)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/", NULL, NULL, &r), 200);
    assert_header(&r, "Content-Type", "text/html");
    assert_header(&r, "Content-Security-Policy", "script-src 'self'");
    assert_header(&r, "X-Content-Type-Options", "nosniff");
    char *etag = http_header(&r, "ETag");
    ck_assert_ptr_nonnull(etag);
    ck_assert_ptr_nonnull(strstr(r.body, "<html"));
    assert_header(&r, "Cache-Control", "no-cache");
    http_res_free(&r);
    /* a vendored library's URL names its version: cached for a year */
    ck_assert_int_eq(reqj("GET", "/vendor/uplot-1.6.32/uPlot.iife.min.js", NULL, NULL, &r), 200);
    assert_header(&r, "Content-Type", "text/javascript");
    assert_header(&r, "Cache-Control", "immutable");
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/js/app.js", NULL, NULL, &r), 200);
    assert_header(&r, "Content-Type", "text/javascript");
    assert_header(&r, "Cache-Control", "no-cache");
    http_res_free(&r);
    const char *inm[] = {fmt("If-None-Match: %s", etag), NULL};
    http_do(&harness_srv, "GET", "/", NULL, NULL, inm, &r);
    ck_assert_int_eq(r.status, 304);
    http_res_free(&r);
    free(etag);
    /* client-side routes get the index; missing assets do not */
    ck_assert_int_eq(reqj("GET", "/jobs/recent", NULL, NULL, &r), 200);
    ck_assert_ptr_nonnull(strstr(r.body, "<html"));
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/missing.js", NULL, NULL), 404);
    ck_assert_int_eq(req("GET", "/%2e%2e/%2e%2e/etc/passwd", NULL, NULL), 404);
    ck_assert_int_eq(req("GET", "/.hidden", NULL, NULL), 404);
    ck_assert_int_eq(req("POST", "/", NULL, "{}"), 405);
}
END_TEST

START_TEST(access_log_line_per_request)
{
    const char *rid[] = {"X-Request-Id: access-log-probe-1", NULL};
    struct http_res r;
    http_do(&harness_srv, "GET", "/api/v1/tenants", harness_srv.admin_token, NULL, rid, &r);
    ck_assert_int_eq(r.status, 200);
    http_res_free(&r);
    json_t *j = harness_access_line("access-log-probe-1");
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(j, "msg")), "request");
    ck_assert_str_eq(json_string_value(json_object_get(j, "method")), "GET");
    ck_assert_str_eq(json_string_value(json_object_get(j, "route")), "/api/v1/tenants");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "status")), 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "actor")), ADMIN_USER);
    ck_assert(json_is_number(json_object_get(j, "duration_ms")));
    json_decref(j);
}
END_TEST

/* SIGTERM while a request is being uploaded: aidcd finishes it, then exits 0. */
START_TEST(sigterm_drains_in_flight_requests)
{
    struct aidc_server second = harness_srv;
    snprintf(second.log_path, sizeof second.log_path, "%s/second.log", harness_srv.data_dir);
    ck_assert_int_eq(harness_server_start(&second, NULL), 0);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)second.port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    const char *body = "{\"username\":\"nobody\",\"password\":\"wrong-password\"}";
    char head[256];
    snprintf(head, sizeof head,
             "POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n", strlen(body));
    ck_assert_int_eq(write(fd, head, strlen(head)), (ssize_t)strlen(head));
    ck_assert_int_eq(write(fd, body, 10), 10);
    /* wait until the server counts our request in flight (the probe itself is one) */
    bool seen = false;
    for (int i = 0; i < 500 && !seen; i++) {
        struct http_res m;
        http_do(&second, "GET", "/metrics", NULL, NULL, NULL, &m);
        seen = m.body && strstr(m.body, "aidc_http_requests_in_flight 2") != NULL;
        http_res_free(&m);
        if (!seen)
            usleep(10000);
    }
    ck_assert(seen);
    kill(second.pid, SIGTERM);
    usleep(300000);
    int st;
    ck_assert_int_eq(waitpid(second.pid, &st, WNOHANG), 0); /* still draining */
    /* meanwhile new requests are turned away, and readiness says so */
    struct http_res late;
    ck_assert_int_eq(http_do(&second, "GET", "/api/v1/tenants", NULL, NULL, NULL, &late), 503);
    char *conn = http_header(&late, "Connection");
    ck_assert_ptr_nonnull(conn);
    ck_assert_str_eq(conn, "close");
    free(conn);
    http_res_free(&late);
    ck_assert_int_eq(http_do(&second, "GET", "/readyz", NULL, NULL, NULL, &late), 503);
    ck_assert_str_eq(json_string_value(json_object_get(late.json, "reason")), "shutting down");
    http_res_free(&late);
    ssize_t rest = (ssize_t)strlen(body) - 10;
    ck_assert_int_eq(write(fd, body + 10, (size_t)rest), rest);
    char resp[4096] = "";
    ssize_t n = read(fd, resp, sizeof resp - 1);
    ck_assert_int_gt(n, 0);
    ck_assert_msg(strncmp(resp, "HTTP/1.1 401", 12) == 0, "got %.40s", resp);
    close(fd);
    ck_assert_int_eq(waitpid(second.pid, &st, 0), second.pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("server");
    TCase *tc = tcase_create("http");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, healthz_and_security_headers);
    tcase_add_test(tc, readyz_when_database_is_current);
    tcase_add_test(tc, request_id_echo_and_replace);
    tcase_add_test(tc, metrics_count_requests_per_route);
    tcase_add_test(tc, openapi_document_is_served);
    tcase_add_test(tc, unknown_path_is_404_problem);
    tcase_add_test(tc, wrong_method_is_405_with_allow);
    tcase_add_test(tc, trailing_slash_is_tolerated);
    tcase_add_test(tc, oversized_body_is_413);
    tcase_add_test(tc, wrong_content_type_is_415);
    tcase_add_test(tc, unknown_and_duplicate_query_arguments_are_400);
    tcase_add_test(tc, portal_files);
    tcase_add_test(tc, access_log_line_per_request);
    tcase_add_test(tc, sigterm_drains_in_flight_requests);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
