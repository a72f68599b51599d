/*
 * test_password_threads.c - password work runs on the password threads
 * (server/workpool.h), not on the HTTP threads: while logins are in flight a
 * GET is answered; concurrent logins all get their right answers; a wrong
 * password is still the one 401; a full queue is a 503 with Retry-After; a
 * server stopped with logins in flight exits cleanly (harness_teardown checks
 * the exit status and, in the sanitizer build, the log).
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLOGINS 8
#define BODY    "{\"username\":\"" ADMIN_USER "\",\"password\":\"" ADMIN_PASSWORD "\"}"

static void setup_one_thread(void)
{
    /* the real cost (the harness's is cheap): logins must overlap to queue */
    static const char *const env[] = {"AIDC_PASSWORD_HASH_CONCURRENCY=1",
                                      "AIDC_PASSWORD_QUEUE_LENGTH=64",
                                      "AIDC_PASSWORD_HASH_COST=15", NULL};
    harness_setup("pwthreads", env);
}

static void setup_tiny_queue(void)
{
    static const char *const env[] = {"AIDC_PASSWORD_HASH_CONCURRENCY=1",
                                      "AIDC_PASSWORD_QUEUE_LENGTH=1",
                                      "AIDC_PASSWORD_HASH_COST=15", NULL};
    harness_setup("pwqueue", env);
}

static void teardown(void)
{
    harness_teardown();
}

struct attempt {
    pthread_t t;
    long status;
    bool token;
    char code[64];
    char retry_after[16];
};

static void *do_login(void *arg)
{
    struct attempt *a = arg;
    struct http_res r;
    a->status = reqj("POST", "/api/v1/auth/login", NULL, BODY, &r);
    a->token = r.json && jstr(r.json, "access_token");
    const char *code = r.json ? jstr(r.json, "code") : NULL;
    snprintf(a->code, sizeof a->code, "%s", code ? code : "");
    char *ra = http_header(&r, "Retry-After");
    snprintf(a->retry_after, sizeof a->retry_after, "%s", ra ? ra : "");
    free(ra);
    http_res_free(&r);
    return NULL;
}

/* Password jobs queued + running, from /metrics. */
static long password_jobs(void)
{
    struct http_res m;
    ck_assert_int_eq(reqj("GET", "/metrics", NULL, NULL, &m), 200);
    long q = 0, run = 0;
    const char *s = m.body ? strstr(m.body, "aidc_password_jobs{state=\"queued\"} ") : NULL;
    if (s)
        q = strtol(strchr(s, '}') + 2, NULL, 10);
    s = m.body ? strstr(m.body, "aidc_password_jobs{state=\"running\"} ") : NULL;
    if (s)
        run = strtol(strchr(s, '}') + 2, NULL, 10);
    http_res_free(&m);
    return q + run;
}

static void start_logins(struct attempt *a, int n)
{
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(pthread_create(&a[i].t, NULL, do_login, &a[i]), 0);
}

static void join_logins(struct attempt *a, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(a[i].t, NULL);
}

START_TEST(a_get_is_answered_while_logins_run_and_every_login_succeeds)
{
    struct attempt a[NLOGINS];
    memset(a, 0, sizeof a);
    start_logins(a, NLOGINS);
    /* wait for the logins to be on the password thread (a condition, polled) */
    long jobs = 0;
    for (int i = 0; i < 5000 && (jobs = password_jobs()) < 2; i++)
        ;
    ck_assert_int_ge(jobs, 2);
    ck_assert_int_eq(req("GET", "/api/v1/me", harness_srv.admin_token, NULL), 200);
    /* answered while logins were still waiting: one thread does them one by one */
    ck_assert_int_ge(password_jobs(), 1);
    join_logins(a, NLOGINS);
    for (int i = 0; i < NLOGINS; i++) {
        ck_assert_int_eq(a[i].status, 200);
        ck_assert(a[i].token);
    }
}
END_TEST

START_TEST(a_wrong_password_is_still_the_one_401)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/auth/login", NULL,
                          "{\"username\":\"" ADMIN_USER "\",\"password\":\"not-the-password\"}",
                          &r),
                     401);
    ck_assert_str_eq(jstr(r.json, "code"), "login.failed");
    char *ct = http_header(&r, "Content-Type");
    ck_assert_str_eq(ct, "application/problem+json");
    free(ct);
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", "/api/v1/auth/login", NULL,
                          "{\"username\":\"nobody-here\",\"password\":\"not-the-password\"}", &r),
                     401);
    ck_assert_str_eq(jstr(r.json, "code"), "login.failed");
    http_res_free(&r);
}
END_TEST

START_TEST(a_full_queue_is_503_with_retry_after)
{
    struct attempt a[NLOGINS];
    memset(a, 0, sizeof a);
    start_logins(a, NLOGINS);
    join_logins(a, NLOGINS);
    int ok = 0, busy = 0;
    for (int i = 0; i < NLOGINS; i++) {
        if (a[i].status == 200) {
            ck_assert(a[i].token);
            ok++;
        } else {
            ck_assert_int_eq(a[i].status, 503);
            ck_assert_str_eq(a[i].code, "server.password_busy");
            ck_assert_str_ne(a[i].retry_after, "");
            busy++;
        }
    }
    /* one thread and one place: 8 at once cannot all be taken, one always is */
    ck_assert_int_ge(ok, 1);
    ck_assert_int_ge(busy, 1);
}
END_TEST

/* The teardown stops the server (SIGTERM) with these logins in flight and fails
 * unless it exits 0 with a clean log (sanitizers); the threads outlive the test. */
START_TEST(stopping_with_logins_in_flight_exits_cleanly)
{
    static struct attempt a[NLOGINS];
    start_logins(a, NLOGINS);
    long jobs = 0;
    for (int i = 0; i < 5000 && (jobs = password_jobs()) < 2; i++)
        ;
    ck_assert_int_ge(jobs, 2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("password_threads");
    TCase *tc = tcase_create("one_thread");
    tcase_add_checked_fixture(tc, setup_one_thread, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_get_is_answered_while_logins_run_and_every_login_succeeds);
    tcase_add_test(tc, a_wrong_password_is_still_the_one_401);
    tcase_add_test(tc, stopping_with_logins_in_flight_exits_cleanly);
    suite_add_tcase(s, tc);
    TCase *tq = tcase_create("tiny_queue");
    tcase_add_checked_fixture(tq, setup_tiny_queue, teardown);
    tcase_set_timeout(tq, 120);
    tcase_add_test(tq, a_full_queue_is_503_with_retry_after);
    suite_add_tcase(s, tq);
    return s;
}

int main(void)
{
    harness_require_pg();
    return suite_run(suite());
}
