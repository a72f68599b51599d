/*
 * test_slurm_dispatch.c - concurrent delivery into a real Slurm keeps
 * exactly-once (sched/deliverpool.h): many jobs admitted in one pass and
 * delivered 8 at a time (4 to a cluster) are each in Slurm once; deliveries
 * whose answer is lost after Slurm took the job (AIDC_FAULT=
 * lose_submit_answer) are tried again and adopt their job instead of
 * submitting it twice; and aidcd dying after Slurm's first accept while
 * other deliveries of the batch are in flight (AIDC_FAULT=
 * after_backend_submit) leaves each job in Slurm once after a restart; and
 * a delivery that hangs (AIDC_FAULT=slow_submit) holds up no job admitted
 * after it, and a row held in the pool past its lease is delivered once.
 *
 * Needs AIDC_TEST_SLURM_* (tests/run.sh); skipped (77) without them.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/slurmtest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T      "disp"
#define WAIT_S 90
#define NJOBS  16 /* one core each: the test Slurm has 32 */

static char *ann;
static time_t since; /* Slurm lists the jobs changed since then */
static const char *fast[] = {"AIDC_SYNC_INTERVAL_MS=200", "AIDC_ADMISSION_INTERVAL_MS=200",
                             "AIDC_DISPATCH_CONCURRENCY=8", "AIDC_DISPATCH_PER_CLUSTER=4", NULL};

static void setup(void)
{
    since = time(NULL) - 60;
    harness_setup("slurm_dispatch", fast);
    curl_global_init(CURL_GLOBAL_ALL);
    slurmtest_register_cluster();
    ann = jobs_tenant_member(T, "lab", "{\"cpu\":{\"limit\":64},\"memory_gib\":{\"limit\":512}}",
                             "ann");
}

static void teardown(void)
{
    if (harness_srv.pid <= 0 && jobs_restart_server(fast) != 0)
        fprintf(stderr, "teardown: aidcd did not start again\n");
    free(ann);
    harness_teardown();
}

/* How many Slurm jobs carry each of names (one look at Slurm's list). */
static void slurm_counts(char *const *names, size_t n, int *counts)
{
    json_t *all = slurm_get(fmt("jobs?update_time=%lld", (long long)since));
    ck_assert_ptr_nonnull(all);
    memset(counts, 0, n * sizeof *counts);
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(all, "jobs"), i, j)
    {
        const char *nm = json_string_value(json_object_get(j, "name"));
        for (size_t k = 0; nm && k < n; k++)
            counts[k] += strcmp(nm, names[k]) == 0;
    }
    json_decref(all);
}

/*
 * Submit NJOBS one-core jobs held in their project, then release them, so one
 * admission pass admits them all and the dispatcher claims them in one batch.
 * When the release sets off a crash (crashes), the crash may come before its
 * answer: the release committed, it woke the admitter, the admitter and the
 * dispatcher ran before the thread that answers (CI saw it with Chromium busy
 * on both CPUs). No answer then is no answer at all, never an error answer.
 */
static void submit_batch(const char *tag, char **ids, bool crashes)
{
    jobs_project_quota(T, "lab", "{\"jobs\":{\"limit\":0}}");
    for (int i = 0; i < NJOBS; i++)
        ids[i] = jobs_submit(ann, T,
                             slurmtest_job(fmt("%s-%d", tag, i), 0, NULL, "#!/bin/sh\nsleep 1\n"));
    struct http_res r;
    long st = reqj("PUT", fmt("/api/v1/tenants/%s/projects/lab/quota", T), harness_srv.admin_token,
                   "{\"resources\":{\"jobs\":{\"limit\":1000}}}", &r);
    ck_assert_msg(st == 200 || (crashes && st == 0), "the release answered %ld: %s", st,
                  r.body ? r.body : "");
    http_res_free(&r);
}

/* Every job reaches its end in aidc, and Slurm holds exactly one job of each. */
static void each_once(char **ids)
{
    for (int i = 0; i < NJOBS; i++) {
        json_t *job = jobs_wait(ann, T, ids[i], "succeeded,failed,cancelled", WAIT_S);
        ck_assert_str_eq(json_string_value(json_object_get(job, "state")), "succeeded");
        json_decref(job);
    }
    int counts[NJOBS];
    slurm_counts(ids, NJOBS, counts);
    for (int i = 0; i < NJOBS; i++)
        ck_assert_msg(counts[i] == 1, "job %s is in Slurm %d times", ids[i], counts[i]);
}

/* The audit events backend.submit of a job: how many, and how many adopted a job. */
static void submits_of(const char *id, int *calls, int *adopted)
{
    const char *p[1] = {id};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*), count(*) FILTER (WHERE"
                              " details->'response'->>'adopted' = 'true')"
                              " FROM audit_log WHERE action = 'backend.submit'"
                              " AND resource_id = $1",
                              1, p);
    ck_assert_ptr_nonnull(r);
    *calls = atoi(PQgetvalue(r, 0, 0));
    *adopted = atoi(PQgetvalue(r, 0, 1));
    PQclear(r);
}

/* Connections of this aidcd's delivery threads: they open when the threads start. */
static int helper_connections(void)
{
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*) FROM pg_stat_activity WHERE datname ="
                              " current_database() AND application_name LIKE 'aidcd-dispatcher-%'",
                              0, NULL);
    ck_assert_ptr_nonnull(r);
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static void free_ids(char **ids)
{
    for (int i = 0; i < NJOBS; i++)
        free(ids[i]);
}

/* Stop aidcd and start it again with the fast settings and extra on top (later ones win). */
static void restart_with(const char *const *extra)
{
    const char *env[16];
    size_t n = 0;
    for (size_t i = 0; fast[i]; i++)
        env[n++] = fast[i];
    for (size_t i = 0; extra[i]; i++) {
        ck_assert_uint_lt(n, sizeof env / sizeof env[0] - 1);
        env[n++] = extra[i];
    }
    env[n] = NULL;
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    ck_assert_int_eq(jobs_restart_server(env), 0);
}

static const char *const none[] = {NULL};

/* ---- tests --------------------------------------------------------------------------- */

START_TEST(a_batch_delivered_concurrently_is_in_slurm_once_each)
{
    char *ids[NJOBS];
    submit_batch("many", ids, false);
    each_once(ids);
    for (int i = 0; i < NJOBS; i++) {
        int calls, adopted;
        submits_of(ids[i], &calls, &adopted);
        ck_assert_msg(calls == 1 && adopted == 0, "job %s: %d submits, %d adopted", ids[i], calls,
                      adopted);
    }
    /* the batch did not go one after the other: delivery threads took part */
    ck_assert_int_gt(helper_connections(), 0);
    free_ids(ids);
}
END_TEST

/* Slurm takes each job but aidc never hears so: the retry finds it, submits nothing */
START_TEST(lost_answers_are_retried_without_a_second_job)
{
    restart_with((const char *const[]){"AIDC_FAULT=lose_submit_answer", NULL});
    char *ids[NJOBS];
    submit_batch("lost", ids, false);
    each_once(ids);
    for (int i = 0; i < NJOBS; i++) {
        int calls, adopted;
        submits_of(ids[i], &calls, &adopted);
        /* the lost one (an error), then the retry that adopted it */
        ck_assert_msg(calls == 2 && adopted == 1, "job %s: %d submits, %d adopted", ids[i], calls,
                      adopted);
    }
    free_ids(ids);
    restart_with(none);
}
END_TEST

/* aidcd dies after Slurm's first accept, its other deliveries in flight */
START_TEST(a_crash_amid_concurrent_deliveries_leaves_each_job_once)
{
    restart_with((const char *const[]){"AIDC_FAULT=after_backend_submit",
                                       /* what the crash left claimed is tried again this soon */
                                       "AIDC_OUTBOX_LEASE_SECONDS=5", NULL});
    char *ids[NJOBS];
    submit_batch("crash", ids, true);
    int st = 0;
    ck_assert_int_eq(waitpid(harness_srv.pid, &st, 0), harness_srv.pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 99, "aidcd ended with status %d", st);
    harness_srv.pid = 0;
    ck_assert_int_eq(jobs_restart_server(fast), 0);
    each_once(ids);
    free_ids(ids);
}
END_TEST

/* The outbox row of job id's submit: how often it was claimed (0: not yet). */
static long claims_of(const char *id)
{
    const char *p[1] = {id};
    return harness_sql_long(harness_srv.owner_url,
                            "SELECT coalesce(max(attempts), 0) FROM outbox"
                            " WHERE job_id = $1::uuid AND action = 'submit'",
                            1, p);
}

static const char *state_of(json_t *job)
{
    return json_string_value(json_object_get(job, "state"));
}

/*
 * One delivery hangs (AIDC_FAULT=slow_submit: 12 s before Slurm is called for a
 * job named slow-*): a job admitted after it reaches Slurm meanwhile. Before
 * the standing pool, the dispatcher waited for the whole claimed batch, so the
 * second job waited for the first's 12 s.
 */
START_TEST(a_slow_delivery_holds_up_no_other_job)
{
    restart_with((const char *const[]){"AIDC_FAULT=slow_submit", NULL});
    char *ids[2];
    ids[0] = jobs_submit(ann, T, slurmtest_job("slow-0", 0, NULL, "#!/bin/sh\ntrue\n"));
    double t0 = jobs_now();
    while (claims_of(ids[0]) == 0 && jobs_now() - t0 < WAIT_S)
        jobs_nap_ms(20);
    ck_assert_int_eq(claims_of(ids[0]), 1); /* its delivery has begun */
    t0 = jobs_now();
    ids[1] = jobs_submit(ann, T, slurmtest_job("quick-0", 0, NULL, "#!/bin/sh\ntrue\n"));
    json_t *quick = jobs_wait(ann, T, ids[1], "pending,running,succeeded,failed", 8);
    double took = jobs_now() - t0;
    ck_assert_msg(strcmp(state_of(quick), "admitted") != 0 &&
                      strcmp(state_of(quick), "queued") != 0,
                  "the quick job is still %s after %.1f s", state_of(quick), took);
    ck_assert_msg(took < 8, "the quick job took %.1f s to reach Slurm", took);
    json_t *held = jobs_get(ann, T, ids[0]);
    ck_assert_str_eq(state_of(held), "admitted"); /* the slow one is still being delivered */
    json_decref(held);
    json_decref(quick);
    for (int i = 0; i < 2; i++) {
        json_t *job = jobs_wait(ann, T, ids[i], "succeeded,failed,cancelled", WAIT_S);
        ck_assert_str_eq(state_of(job), "succeeded");
        json_decref(job);
    }
    int counts[2];
    slurm_counts(ids, 2, counts);
    ck_assert_int_eq(counts[0], 1);
    ck_assert_int_eq(counts[1], 1);
    free(ids[0]);
    free(ids[1]);
    restart_with(none);
}
END_TEST

/*
 * Rows wait in the pool behind their cluster's limit longer than their lease
 * (3 threads, 2 per cluster, a 5 s lease, three jobs whose first try waits
 * 12 s): when the first two end, the third is still the pool's, and the
 * dispatcher's next claim must not take its row again - a second delivery
 * would find nothing in Slurm yet and submit the job twice.
 */
START_TEST(a_row_held_past_its_lease_is_delivered_once)
{
    restart_with((const char *const[]){"AIDC_DISPATCH_CONCURRENCY=3", "AIDC_DISPATCH_PER_CLUSTER=2",
                                       "AIDC_OUTBOX_LEASE_SECONDS=5", "AIDC_FAULT=slow_submit",
                                       NULL});
    char *ids[3];
    jobs_project_quota(T, "lab", "{\"jobs\":{\"limit\":0}}");
    for (int i = 0; i < 3; i++)
        ids[i] = jobs_submit(ann, T,
                             slurmtest_job(fmt("slow-held-%d", i), 0, NULL, "#!/bin/sh\ntrue\n"));
    jobs_project_quota(T, "lab", "{\"jobs\":{\"limit\":1000}}");
    for (int i = 0; i < 3; i++) {
        json_t *job = jobs_wait(ann, T, ids[i], "succeeded,failed,cancelled", WAIT_S);
        ck_assert_str_eq(state_of(job), "succeeded");
        json_decref(job);
    }
    /* each row claimed once: a second claim would be a second delivery, whose submit may
     * come after these checks (the first still waits out its 12 s) */
    for (int i = 0; i < 3; i++)
        ck_assert_msg(claims_of(ids[i]) == 1, "job %s: its row was claimed %ld times", ids[i],
                      claims_of(ids[i]));
    int counts[3];
    slurm_counts(ids, 3, counts);
    for (int i = 0; i < 3; i++) {
        int calls, adopted;
        submits_of(ids[i], &calls, &adopted);
        ck_assert_msg(counts[i] == 1 && calls == 1, "job %s: in Slurm %d times, %d submits", ids[i],
                      counts[i], calls);
        free(ids[i]);
    }
    restart_with(none);
}
END_TEST

int main(void)
{
    harness_require_pg();
    slurmtest_env();
    Suite *s = suite_create("slurm_dispatch");
    TCase *tc = tcase_create("slurm_dispatch");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_batch_delivered_concurrently_is_in_slurm_once_each);
    tcase_add_test(tc, lost_answers_are_retried_without_a_second_job);
    tcase_add_test(tc, a_crash_amid_concurrent_deliveries_leaves_each_job_once);
    tcase_add_test(tc, a_slow_delivery_holds_up_no_other_job);
    tcase_add_test(tc, a_row_held_past_its_lease_is_delivered_once);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* the crash test waits for aidcd itself */
}
