/*
 * test_jobs_timelimit.c - the time limit ends a job: SIGTERM when the limit
 * is reached (a job that handles it can save its work), SIGKILL after the
 * grace period for one that ignores it. Both end failed, reason "time
 * limit", and leave no process behind. (A minute is the smallest limit the
 * API accepts, so this program takes a little over one.)
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void setup(void)
{
    harness_setup("jobs_timelimit", jobs_fast_env); /* grace: 1 s */
    jobs_local_cluster("{\"a100\":2}");
    make_tenant("chem");
    make_project("chem", "mol");
}

static void teardown(void)
{
    harness_teardown();
}

/* Seconds between the job's start and end, measured by the database. */
static double ran_seconds(const char *id)
{
    const char *p[1] = {id};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT extract(epoch FROM finished_at - started_at) FROM jobs"
                              " WHERE id = $1",
                              1, p);
    ck_assert_ptr_nonnull(r);
    double s = strtod(PQgetvalue(r, 0, 0), NULL);
    PQclear(r);
    return s;
}

/* No process of the jobs is left on this machine (they carry TEST_RUN: jobs.h). */
static void assert_gone(void)
{
    int left = jobs_count_leftovers();
    ck_assert_msg(left == 0, "%d processes of the jobs still run", left);
}

START_TEST(time_limit_terminates_then_kills)
{
    const char *tk = harness_srv.admin_token;
    char *polite = jobs_submit(tk, "chem",
                               fmt("{\"project\":\"mol\",\"name\":\"polite\","
                                   "\"time_limit_minutes\":1,\"env\":{\"TEST_RUN\":\"%s\"},"
                                   "\"script\":\"trap 'echo saving; exit 143' TERM\\n"
                                   "sleep 600 & wait\"}",
                                   harness_srv.data_dir));
    char *stubborn = jobs_submit(tk, "chem",
                                 fmt("{\"project\":\"mol\",\"name\":\"stubborn\","
                                     "\"time_limit_minutes\":1,\"env\":{\"TEST_RUN\":\"%s\"},"
                                     "\"script\":\"trap '' TERM\\n"
                                     "while true; do sleep 1; done\"}",
                                     harness_srv.data_dir));
    json_t *a = jobs_wait(tk, "chem", polite, "succeeded,failed,cancelled", 100);
    json_t *b = jobs_wait(tk, "chem", stubborn, "succeeded,failed,cancelled", 100);
    ck_assert_str_eq(jstr(a, "state"), "failed");
    ck_assert_str_eq(jstr(b, "state"), "failed");
    ck_assert_str_eq(jstr(a, "reason"), "time limit");
    ck_assert_str_eq(jstr(b, "reason"), "time limit");
    ck_assert_int_eq(json_integer_value(json_object_get(a, "exit_code")), 143);
    ck_assert(json_is_null(json_object_get(b, "exit_code"))); /* killed by SIGKILL */
    /* a minute, plus the grace second for the one that ignored SIGTERM */
    double ra = ran_seconds(polite), rb = ran_seconds(stubborn);
    ck_assert_msg(ra >= 59 && ra < 70, "polite ran %.1f s", ra);
    ck_assert_msg(rb >= 60 && rb < 72, "stubborn ran %.1f s", rb);
    char *out = jobs_logs(tk, "chem", polite, NULL);
    ck_assert_msg(strstr(out, "saving"), "stdout: %s", out);
    free(out);
    assert_gone();
    json_decref(a);
    json_decref(b);
    free(polite);
    free(stubborn);
}
END_TEST

static Suite *timelimit_suite(void)
{
    Suite *s = suite_create("jobs_timelimit");
    TCase *tc = tcase_create("timelimit");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, time_limit_terminates_then_kills);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    harness_require_pg();
    return suite_run(timelimit_suite());
}
