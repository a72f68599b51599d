/*
 * test_prometheus.c - the cluster's metrics setting is checked (an http(s)
 * URL without query, no unknown keys, a label name), and a job's backend id
 * cannot break out of its PromQL label matcher: quotes and backslashes are
 * escaped, regex metacharacters of a Kubernetes pod prefix too, control
 * characters refused; the query's instant answer is read (its first sample,
 * an empty vector as "not found", NaN as none).
 */
#include "backends/prometheus.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
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

int main(void)
{
    Suite *s = suite_create("prometheus");
    TCase *tc = tcase_create("prometheus");
    tcase_add_test(tc, metrics_setting);
    tcase_add_test(tc, selectors_escape_the_id);
    tcase_add_test(tc, unreachable_and_bad_urls);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
