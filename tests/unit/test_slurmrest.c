/*
 * test_slurmrest.c - the slurmrestd client against a socket that answers
 * badly: garbage JSON, a 500 in text, a body cut short, silence (the call
 * must time out, not hang), nobody listening. Each is an error the callers
 * can retry, never a crash. The request it sends is checked too: the path,
 * Content-Type (slurmrestd refuses bodies without it) and both auth headers.
 */
#include "backends/backend.h"
#include "backends/slurmrest.h"
#include "lib/err.h"
#include "tests/support/cannedhttp.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The client against 127.0.0.1:port (a canned server's, or nobody's). */
static int call(int port, int timeout, struct slurmrest_answer *a, char *err, size_t errsz)
{
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", port);
    struct slurmrest_target t = {.endpoint = endpoint,
                                 .credref = "env:AIDC_TEST_SLURMREST_KEY",
                                 .user = "aidc",
                                 .api_version = "v0.0.38",
                                 .timeout_seconds = timeout};
    json_t *body = json_pack("{s:{s:s}}", "job", "name", "x");
    int e = slurmrest_call(&t, "POST", "job/submit", body, a, err, errsz);
    json_decref(body);
    return e;
}

static struct cannedhttp *server_start(const char *answer)
{
    struct cannedhttp *s = cannedhttp_start1(answer);
    ck_assert_msg(s != NULL, "canned server: %s", strerror(errno));
    return s;
}

static void setup(void)
{
    setenv("AIDC_TEST_SLURMREST_KEY", "0123456789abcdef0123456789abcdef", 1);
}

START_TEST(request_carries_type_and_auth)
{
    struct cannedhttp *s =
        server_start("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 28"
                     "\r\n\r\n{\"errors\":[],\"job_id\":42000}");
    struct slurmrest_answer a;
    char err[512] = "", msg[256];
    ck_assert_int_eq(call(cannedhttp_port(s), 5, &a, err, sizeof err), 0);
    cannedhttp_stop(s);
    const char *request = cannedhttp_request(s, 0);
    ck_assert_ptr_nonnull(request);
    ck_assert_int_eq(a.status, 200);
    ck_assert(slurmrest_ok(&a, msg, sizeof msg));
    ck_assert_int_eq(json_integer_value(json_object_get(a.json, "job_id")), 42000);
    slurmrest_answer_free(&a);
    ck_assert_msg(strncmp(request, "POST /slurm/v0.0.38/job/submit HTTP/1.1\r\n", 41) == 0, "%s",
                  request);
    ck_assert_ptr_nonnull(strstr(request, "\r\nContent-Type: application/json\r\n"));
    ck_assert_ptr_nonnull(strstr(request, "\r\nX-SLURM-USER-NAME: aidc\r\n"));
    ck_assert_ptr_nonnull(strstr(request, "\r\nX-SLURM-USER-TOKEN: eyJ"));
    ck_assert_ptr_nonnull(strstr(request, "{\"job\":{\"name\":\"x\"}}"));
    cannedhttp_free(s);
}
END_TEST

/* answers that are errors for the caller, with a message */
static const struct {
    const char *status_line, *body;
    long status;
    const char *says;
} bad[] = {
    {"200 OK", "{garbage}", 200, "HTTP 200"},
    {"500 Internal Server Error", "something went wrong", 500, "something went wrong"},
    {"500 Internal Server Error",
     "{\"errors\":[{\"error\":\"Invalid partition name specified\",\"error_code\":2000}]}", 500,
     "Invalid partition name specified (error 2000)"},
    {"401 Unauthorized", "Authentication failure", 401, "Authentication failure"},
    {"200 OK", "[1,2,3]", 200, "HTTP 200"},
};

START_TEST(bad_answers_are_errors)
{
    char answer[512];
    snprintf(answer, sizeof answer, "HTTP/1.1 %s\r\nContent-Length: %zu\r\n\r\n%s",
             bad[_i].status_line, strlen(bad[_i].body), bad[_i].body);
    struct cannedhttp *s = server_start(answer);
    struct slurmrest_answer a;
    char err[512] = "", msg[256];
    ck_assert_int_eq(call(cannedhttp_port(s), 5, &a, err, sizeof err), 0);
    cannedhttp_free(s);
    ck_assert_int_eq(a.status, bad[_i].status);
    ck_assert(!slurmrest_ok(&a, msg, sizeof msg));
    ck_assert_msg(strstr(msg, bad[_i].says) != NULL, "message \"%s\", want \"%s\"", msg,
                  bad[_i].says);
    slurmrest_answer_free(&a);
}
END_TEST

START_TEST(cut_short_is_unavailable)
{
    struct cannedhttp *s =
        server_start("HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"jobs\":[");
    struct slurmrest_answer a;
    char err[512] = "";
    ck_assert_int_eq(call(cannedhttp_port(s), 5, &a, err, sizeof err), AIDC_EUNAVAIL);
    cannedhttp_free(s);
    ck_assert_msg(err[0] != '\0', "no message");
    ck_assert_ptr_null(a.body);
}
END_TEST

START_TEST(silence_times_out)
{
    struct cannedhttp *s = server_start(NULL);
    struct slurmrest_answer a;
    char err[512] = "";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(call(cannedhttp_port(s), 1, &a, err, sizeof err), AIDC_EUNAVAIL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cannedhttp_free(s);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(took < 3, "the call took %.1f s with a timeout of 1 s", took);
    ck_assert_msg(strstr(err, "imeout") || strstr(err, "timed out"), "err: %s", err);
}
END_TEST

START_TEST(nobody_listening_is_unavailable)
{
    /* a port that was free a moment ago: nobody listens there once the server stops */
    struct cannedhttp *s = server_start("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
    int port = cannedhttp_port(s);
    cannedhttp_free(s);
    struct slurmrest_answer ans;
    char err[512] = "";
    ck_assert_int_eq(call(port, 2, &ans, err, sizeof err), AIDC_EUNAVAIL);
    ck_assert_msg(strstr(err, "127.0.0.1"), "err names no address: %s", err);
}
END_TEST

static int reports;

static void count_report(void *arg, const char *backend_id, const char *run_key,
                         const struct backend_status *st)
{
    (void)arg;
    (void)backend_id;
    (void)run_key;
    (void)st;
    reports++;
}

/* nothing changed since the last look: slurmrestd answers 304 without a body */
START_TEST(not_modified_is_no_change)
{
    struct cannedhttp *s = server_start("HTTP/1.1 304 Not Modified\r\n\r\n");
    char endpoint[64], err[512] = "";
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", cannedhttp_port(s));
    json_t *options = json_pack("{s:s}", "user_name", "aidc");
    struct backend_cluster c = {.name = "hpc",
                                .kind = "slurm",
                                .endpoint = endpoint,
                                .credentials_ref = "env:AIDC_TEST_SLURMREST_KEY",
                                .options = options};
    const struct backend_ops *ops = backend_find("slurm");
    ck_assert_ptr_nonnull(ops);
    reports = 0;
    ck_assert_msg(ops->poll_changed(&c, 1700000000, count_report, NULL, err, sizeof err) == 0,
                  "304 taken for an error: %s", err);
    cannedhttp_stop(s);
    ck_assert_int_eq(reports, 0);
    ck_assert_ptr_nonnull(cannedhttp_request(s, 0));
    ck_assert_ptr_nonnull(
        strstr(cannedhttp_request(s, 0), "GET /slurm/v0.0.38/jobs?update_time=1700000000 "));
    cannedhttp_free(s);
    json_decref(options);
}
END_TEST

START_TEST(missing_credential_is_refused_before_any_call)
{
    unsetenv("AIDC_TEST_SLURMREST_KEY");
    struct slurmrest_answer a;
    char err[512] = "";
    ck_assert_int_eq(call(1, 1, &a, err, sizeof err), AIDC_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err, "AIDC_TEST_SLURMREST_KEY"));
}
END_TEST

/* A poll's answers: only a whole one (200, closing brace, no errors) is a success, so the
 * syncer marks jobs missing from it lost only then; jobs before a break are still reported. */
static const struct {
    const char *answer;
    int reports;
    bool ok;
} polls[] = {
    {"HTTP/1.1 200 OK\r\nContent-Length: 86\r\n\r\n{\"errors\":[],\"jobs\":[{\"job_id\":1,"
     "\"user_name\":\"aidc\"},{\"job_id\":2,\"user_name\":\"aidc\"}]}",
     2, true},
    /* cut short after the first job (the connection closes) */
    {"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n{\"errors\":[],\"jobs\":[{\"job_id\":1,"
     "\"user_name\":\"aidc\"},{\"job_id\":2",
     1, false},
    /* whole, but slurmctld said it failed */
    {"HTTP/1.1 200 OK\r\nContent-Length: 97\r\n\r\n{\"jobs\":[{\"job_id\":1,\"user_name\":"
     "\"aidc\"}],\"errors\":[{\"error\":\"busy\",\"error_number\":1}]}          ",
     1, false},
    {"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 22\r\n\r\nAuthentication failure", 0,
     false},
};

START_TEST(poll_is_whole_or_failed)
{
    struct cannedhttp *s = server_start(polls[_i].answer);
    char endpoint[64], err[512] = "";
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", cannedhttp_port(s));
    json_t *options = json_pack("{s:s}", "user_name", "aidc");
    struct backend_cluster c = {.name = "hpc",
                                .kind = "slurm",
                                .endpoint = endpoint,
                                .credentials_ref = "env:AIDC_TEST_SLURMREST_KEY",
                                .options = options};
    reports = 0;
    int e = backend_find("slurm")->poll_changed(&c, 0, count_report, NULL, err, sizeof err);
    cannedhttp_free(s);
    ck_assert_msg((e == 0) == polls[_i].ok, "case %d: %d %s", _i, e, err);
    ck_assert_int_eq(reports, polls[_i].reports);
    json_decref(options);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("slurmrest");
    TCase *tc = tcase_create("slurmrest");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, request_carries_type_and_auth);
    tcase_add_loop_test(tc, bad_answers_are_errors, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, cut_short_is_unavailable);
    tcase_add_test(tc, silence_times_out);
    tcase_add_test(tc, nobody_listening_is_unavailable);
    tcase_add_test(tc, not_modified_is_no_change);
    tcase_add_loop_test(tc, poll_is_whole_or_failed, 0, (int)(sizeof polls / sizeof polls[0]));
    tcase_add_test(tc, missing_credential_is_refused_before_any_call);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
