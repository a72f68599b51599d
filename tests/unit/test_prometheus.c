/*
 * test_prometheus.c - the cluster's metrics setting is checked (an http(s)
 * URL without query, no unknown keys, a label name), and a job's backend id
 * cannot break out of its PromQL label matcher: quotes and backslashes are
 * escaped, regex metacharacters of a Kubernetes pod prefix too, control
 * characters refused; the query's instant answer is read (its first sample,
 * an empty vector as "not found", NaN as none), the query goes
 * percent-encoded, and a redirect (toward an internal service) is not
 * followed, an answer past 1 MiB not read.
 */
#include "backends/prometheus.h"
#include "tests/support/cannedhttp.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool check_text(const char *text)
{
    json_t *m = json_loads(text, JSON_DECODE_ANY, NULL);
    ck_assert_ptr_nonnull(m);
    char err[200];
    bool ok = prometheus_metrics_check(m, err, sizeof err);
    json_decref(m);
    return ok;
}

START_TEST(metrics_setting)
{
    ck_assert(check_text("{\"prometheus_url\":\"http://127.0.0.1:9090\"}"));
    ck_assert(check_text(
        "{\"prometheus_url\":\"https://prom.example/prefix/\",\"job_label\":\"hpc_job\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"file:///etc/passwd\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"http://\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"http:///x\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"http://h/a b\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"http://h/\\r\\nHost: x\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"http://h/?q=1\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"http://h/#f\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"http://h\",\"job_label\":\"a-b\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"http://h\",\"job_label\":\"\"}"));
    ck_assert(!check_text("{\"prometheus_url\":\"http://h\",\"other\":true}"));
    ck_assert(!check_text("{\"job_label\":\"hpc_job\"}"));
    ck_assert(!check_text("[]"));
    char big[1200] = "{\"prometheus_url\":\"http://h/";
    memset(big + strlen(big), 'a', 1010);
    strcpy(big + strlen(big), "\"}");
    ck_assert(!check_text(big));
}
END_TEST

START_TEST(selectors_escape_the_id)
{
    char out[256];
    ck_assert_int_eq(prometheus_job_selector(out, sizeof out, "slurm", "hpc_job", "42", ""), 0);
    ck_assert_str_eq(out, "{hpc_job=\"42\"}");
    ck_assert_int_eq(
        prometheus_job_selector(out, sizeof out, "local", "hpc_job", "a\"} or vector(1) #\\", ""),
        0);
    ck_assert_str_eq(out, "{hpc_job=\"a\\\"} or vector(1) #\\\\\"}");
    ck_assert_int_eq(
        prometheus_job_selector(out, sizeof out, "kubernetes", "hpc_job", "train.x", "ns-1"), 0);
    ck_assert_str_eq(out, "{namespace=\"ns-1\",pod=~\"train\\\\.x-.*\"}");
    ck_assert_int_eq(prometheus_job_selector(out, sizeof out, "kubernetes", "hpc_job",
                                             "aidc-chem/aidc-1f2e", "ignored"),
                     0);
    ck_assert_str_eq(out, "{namespace=\"aidc-chem\",pod=~\"aidc-1f2e-.*\"}");
    ck_assert_int_eq(prometheus_job_selector(out, sizeof out, "kubernetes", "hpc_job", "ns/", ""),
                     -1);
    ck_assert_int_eq(prometheus_job_selector(out, sizeof out, "slurm", "hpc_job", "a\nb", ""), -1);
    ck_assert_int_eq(prometheus_job_selector(out, sizeof out, "slurm", "hpc_job", "", ""), -1);
    ck_assert_int_eq(prometheus_job_selector(out, sizeof out, "slurm", "bad label", "1", ""), -1);
    ck_assert_int_eq(prometheus_job_selector(out, 8, "slurm", "hpc_job", "123456789", ""), -1);
}
END_TEST

START_TEST(unreachable_and_bad_urls)
{
    double v = 0;
    bool found = true;
    char err[256];
    ck_assert_int_ne(prometheus_scalar("ftp://h", "up", 0, &v, &found, err, sizeof err), 0);
    ck_assert(!found);
    /* nothing listens on port 9 of the loopback */
    ck_assert_int_ne(prometheus_scalar("http://127.0.0.1:9", "up", 0, &v, &found, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(err, "127.0.0.1:9"));
}
END_TEST

/* Ask a canned server for promql; its answer's status. */
static int ask(struct cannedhttp *srv, double *v, bool *found, char *err, size_t errsz)
{
    ck_assert_ptr_nonnull(srv);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/prom/", cannedhttp_port(srv));
    return prometheus_scalar(url, "max(DCGM_FI_DEV_GPU_UTIL{hpc_job=\"7\"})", 1700000000, v, found,
                             err, errsz);
}

START_TEST(answers_are_read_and_redirects_not_followed)
{
    double v = -1;
    bool found = false;
    char err[256];
    char *a = cannedhttp_answer(200, NULL,
                                "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                                "\"result\":[{\"metric\":{},\"value\":[1700000000,\"42.5\"]}]}}");
    struct cannedhttp *srv = cannedhttp_start1(a);
    ck_assert_int_eq(ask(srv, &v, &found, err, sizeof err), 0);
    ck_assert(found);
    ck_assert(v > 42.49 && v < 42.51);
    const char *rq = cannedhttp_request(srv, 0);
    ck_assert_msg(strstr(rq, "GET /prom/api/v1/query?query=max%28DCGM_FI_DEV_GPU_UTIL%7Bhpc_job"
                             "%3D%227%22%7D%29&time=1700000000 HTTP/1.1") == rq,
                  "request: %s", rq);
    cannedhttp_free(srv);
    free(a);

    /* an empty vector and a NaN sample: nothing known */
    a = cannedhttp_answer(200, NULL,
                          "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                          "\"result\":[]}}");
    srv = cannedhttp_start1(a);
    ck_assert_int_eq(ask(srv, &v, &found, err, sizeof err), 0);
    ck_assert(!found);
    cannedhttp_free(srv);
    free(a);
    a = cannedhttp_answer(200, NULL,
                          "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
                          "\"result\":[{\"value\":[1,\"NaN\"]}]}}");
    srv = cannedhttp_start1(a);
    ck_assert_int_eq(ask(srv, &v, &found, err, sizeof err), 0);
    ck_assert(!found);
    cannedhttp_free(srv);
    free(a);

    /* a redirect toward another service is an error, and nothing follows it */
    struct cannedhttp *inner = cannedhttp_start1("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    char loc[128];
    snprintf(loc, sizeof loc, "Location: http://127.0.0.1:%d/secret\r\n", cannedhttp_port(inner));
    a = cannedhttp_answer(302, loc, NULL);
    srv = cannedhttp_start1(a);
    ck_assert_int_ne(ask(srv, &v, &found, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "answered 302"), "err: %s", err);
    ck_assert_int_eq(cannedhttp_nrequests(inner), 0);
    cannedhttp_free(srv);
    cannedhttp_free(inner);
    free(a);

    /* more than 1 MiB: not read */
    size_t big = (1u << 20) + 100;
    char *body = malloc(big + 1);
    ck_assert_ptr_nonnull(body);
    memset(body, ' ', big);
    body[big] = '\0';
    a = cannedhttp_answer(200, NULL, body);
    srv = cannedhttp_start1(a);
    ck_assert_int_ne(ask(srv, &v, &found, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "too large"), "err: %s", err);
    cannedhttp_free(srv);
    free(a);
    free(body);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("prometheus");
    TCase *tc = tcase_create("prometheus");
    tcase_add_test(tc, metrics_setting);
    tcase_add_test(tc, selectors_escape_the_id);
    tcase_add_test(tc, unreachable_and_bad_urls);
    tcase_add_test(tc, answers_are_read_and_redirects_not_followed);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
