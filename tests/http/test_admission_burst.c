/*
 * test_admission_burst.c - one admission pass per burst of submits
 * (AIDC_ADMISSION_COALESCE_MS, sched/admitter.c): a burst of submits costs a
 * pass per coalescing window, not one reload of the whole queue per commit,
 * and a lone submit after a quiet spell is still looked at at once.
 *
 * The jobs wait in a project whose quota allows none ({"jobs":{"limit":0}}):
 * a pass that looked at a job wrote its reason ("submitted" until then). The
 * timer's passes are pushed out of the way (AIDC_ADMISSION_INTERVAL_MS of
 * ten minutes), so every pass counted in aidc_admission_passes_total was woken
 * by a submit - sent by the waker once the submit committed, not by the
 * submit's own transaction, and no more than once per window (server/waker.h).
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TENANT      "burst"
#define COALESCE_MS 1000
#define BURST       30

static char *alice;

static void setup(void)
{
    const char *env[] = {"AIDC_ADMISSION_COALESCE_MS=1000", "AIDC_ADMISSION_INTERVAL_MS=600000",
                         "AIDC_SYNC_INTERVAL_MS=100", NULL};
    harness_setup("admburst", env);
    jobs_local_cluster("{\"a100\":4}");
    alice = jobs_tenant_member(TENANT, "hold", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":4}}",
                               "alice");
    jobs_project_quota(TENANT, "hold", "{\"jobs\":{\"limit\":0}}");
}

static void teardown(void)
{
    free(alice);
    harness_teardown();
}

static long passes(void)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/metrics", NULL, NULL, &r), 200);
    const char *name = "\naidc_admission_passes_total ";
    const char *at = strstr(r.body, name);
    ck_assert_ptr_nonnull(at);
    long n = strtol(at + strlen(name), NULL, 10);
    http_res_free(&r);
    return n;
}

static char *submit(int i)
{
    return jobs_submit(alice, TENANT,
                       fmt("{\"project\":\"hold\",\"name\":\"b%02d\",\"cpus\":1,"
                           "\"command\":[\"true\"]}",
                           i));
}

/* Until the job's reason is no longer "submitted" (a pass looked at it); how long it took. */
static double wait_looked_at(const char *id, double t0)
{
    double deadline = jobs_now() + 30;
    for (;;) {
        json_t *j = jobs_get(alice, TENANT, id);
        const char *reason = json_string_value(json_object_get(j, "reason"));
        bool seen = reason && strcmp(reason, "submitted") != 0;
        json_decref(j);
        if (seen)
            return jobs_now() - t0;
        ck_assert_msg(jobs_now() < deadline, "job %s still not looked at by admission", id);
        jobs_nap_ms(20);
    }
}

/*
 * Past the coalescing window of the last pass: the next submit finds a quiet
 * admitter. The last notification of a burst may come half a window after its
 * last commit (the waker's pace), after the pass that took the burst; the pass
 * it wakes starts a window after that one, and its own window ends a window
 * later still.
 */
static void quiet(void)
{
    jobs_nap_ms(2 * COALESCE_MS + 300);
}

START_TEST(a_burst_costs_a_pass_per_window)
{
    quiet();
    long p0 = passes();
    double t0 = jobs_now();
    char *ids[BURST];
    for (int i = 0; i < BURST; i++)
        ids[i] = submit(i);
    for (int i = 0; i < BURST; i++)
        (void)wait_looked_at(ids[i], t0);
    double took = jobs_now() - t0;
    long n = passes() - p0;
    /* one pass at once, then at most one per window; a pass per commit would be ~BURST */
    long most = (long)(took * 1000.0 / COALESCE_MS) + 2;
    fprintf(stderr, "burst: %d submits and their reasons in %.2f s, %ld passes (at most %ld)\n",
            BURST, took, n, most);
    ck_assert_msg(n >= 1 && n <= most, "%ld passes for a burst of %d over %.2f s (at most %ld)", n,
                  BURST, took, most);
    for (int i = 0; i < BURST; i++)
        free(ids[i]);
}
END_TEST

START_TEST(a_lone_submit_is_looked_at_at_once)
{
    quiet();
    long p0 = passes();
    double t0 = jobs_now();
    char *id = submit(99);
    double took = wait_looked_at(id, t0);
    fprintf(stderr, "lone submit: looked at after %.3f s\n", took);
    /* a pass held back by the window would come COALESCE_MS after the last one */
    ck_assert_msg(took * 1000.0 < COALESCE_MS, "a lone submit waited %.3f s for admission", took);
    ck_assert_int_eq(passes() - p0, 1);
    free(id);
}
END_TEST

/* The next notification on conn with payload extra (up to 10 s); the caller frees it. */
static PGnotify *next_notify(PGconn *conn, const char *extra)
{
    double deadline = jobs_now() + 10;
    for (;;) {
        ck_assert_int_eq(PQconsumeInput(conn), 1);
        for (PGnotify *n; (n = PQnotifies(conn)) != NULL; PQfreemem(n))
            if (strcmp(n->extra, extra) == 0)
                return n;
        ck_assert_msg(jobs_now() < deadline, "no notification \"%s\" within 10 s", extra);
        struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};
        (void)poll(&pfd, 1, 100);
    }
}

/*
 * The submit's own transaction notifies no one: PostgreSQL commits notifying
 * transactions one at a time, each waiting for the one before it to reach the
 * disk. The waker's session (application_name aidcd-waker) sends the
 * notification once the job is committed.
 */
START_TEST(the_waker_notifies_after_the_commit)
{
    PGconn *l = PQconnectdb(harness_srv.owner_url);
    ck_assert_int_eq(PQstatus(l), CONNECTION_OK);
    PQclear(PQexec(l, "LISTEN aidc_jobs"));
    char *id = submit(98);
    PGnotify *n = next_notify(l, "submit");
    char pid[16];
    snprintf(pid, sizeof pid, "%d", n->be_pid);
    PQfreemem(n);
    const char *p[2] = {pid, id};
    PGresult *r = PQexecParams(l,
                               "SELECT application_name,"
                               " (SELECT count(*) FROM jobs WHERE id = $2::uuid)"
                               " FROM pg_stat_activity WHERE pid = $1::int",
                               2, NULL, p, NULL, NULL, 0);
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    ck_assert_int_eq(PQntuples(r), 1);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "aidcd-waker");
    ck_assert_str_eq(PQgetvalue(r, 0, 1), "1");
    PQclear(r);
    PQfinish(l);
    free(id);
}
END_TEST

/* The "submit" notifications that came on conn so far. */
static long count_submits(PGconn *conn)
{
    long n = 0;
    ck_assert_int_eq(PQconsumeInput(conn), 1);
    for (PGnotify *x; (x = PQnotifies(conn)) != NULL; PQfreemem(x))
        n += strcmp(x->extra, "submit") == 0;
    return n;
}

/*
 * The waker keeps the admitter's pace (server/waker.c): a burst of submits is
 * announced twice per coalescing window at most, not once per commit - each
 * notification is a commit of its own and wakes every listener.
 */
START_TEST(a_burst_is_announced_twice_per_window)
{
    PGconn *l = PQconnectdb(harness_srv.owner_url);
    ck_assert_int_eq(PQstatus(l), CONNECTION_OK);
    PQclear(PQexec(l, "LISTEN aidc_jobs"));
    quiet();
    (void)count_submits(l);
    double t0 = jobs_now();
    for (int i = 0; i < BURST; i++)
        free(submit(40 + i));
    double took = jobs_now() - t0;
    quiet(); /* the last window's notification is out */
    long n = count_submits(l);
    long most = (long)(took * 2000.0 / COALESCE_MS) + 2;
    fprintf(stderr, "burst: %d submits in %.2f s announced %ld times (at most %ld)\n", BURST, took,
            n, most);
    ck_assert_msg(n >= 1 && n <= most, "%ld notifications for %d submits over %.2f s (at most %ld)",
                  n, BURST, took, most);
    PQfinish(l);
}
END_TEST

static void owner_sql(const char *sql)
{
    ck_assert_msg(harness_sql_ok(harness_srv.owner_url, sql), "%s failed", sql);
}

static long owner_count(const char *sql)
{
    long n = harness_sql_long(harness_srv.owner_url, sql, 0, NULL);
    ck_assert_int_ge(n, 0);
    return n;
}

static void *submit_in_background(void *arg)
{
    long *status = arg;
    struct http_res r;
    *status =
        reqj("POST", "/api/v1/tenants/" TENANT "/jobs", alice,
             "{\"project\":\"hold\",\"name\":\"held\",\"cpus\":1,\"command\":[\"true\"]}", &r);
    http_res_free(&r);
    return NULL;
}

#define HOLD_KEY "7331"

/*
 * While the submit's COMMIT waits (a deferred trigger of this test takes a lock
 * the test holds), nothing is notified: a poke before the commit would wake
 * the admitter to a snapshot without the job. Once the commit goes through,
 * the notification comes.
 */
START_TEST(nothing_is_notified_before_the_commit)
{
    owner_sql("CREATE FUNCTION test_hold_commit() RETURNS trigger LANGUAGE plpgsql AS"
              " $$ BEGIN PERFORM pg_advisory_xact_lock_shared(" HOLD_KEY "); RETURN NULL; END $$");
    owner_sql("CREATE CONSTRAINT TRIGGER test_hold_commit AFTER INSERT ON jobs"
              " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_hold_commit()");
    quiet(); /* the notifications of earlier cases are out */
    PGconn *hold = PQconnectdb(harness_srv.owner_url), *l = PQconnectdb(harness_srv.owner_url);
    ck_assert_int_eq(PQstatus(hold), CONNECTION_OK);
    ck_assert_int_eq(PQstatus(l), CONNECTION_OK);
    PQclear(PQexec(hold, "SELECT pg_advisory_lock(" HOLD_KEY ")"));
    PQclear(PQexec(l, "LISTEN aidc_jobs"));
    long status = 0;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, submit_in_background, &status), 0);
    /* the submit is at its COMMIT, waiting for the lock */
    double deadline = jobs_now() + 10;
    while (owner_count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                       " AND objid = " HOLD_KEY " AND NOT granted") == 0) {
        ck_assert_msg(jobs_now() < deadline, "the submit never reached its commit");
        jobs_nap_ms(20);
    }
    jobs_nap_ms(300);
    ck_assert_int_eq(PQconsumeInput(l), 1);
    for (PGnotify *n; (n = PQnotifies(l)) != NULL; PQfreemem(n))
        ck_assert_msg(strcmp(n->extra, "submit") != 0, "notified before the commit");
    PQclear(PQexec(hold, "SELECT pg_advisory_unlock(" HOLD_KEY ")"));
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(status, 201);
    PQfreemem(next_notify(l, "submit"));
    PQfinish(hold);
    PQfinish(l);
    owner_sql("DROP TRIGGER test_hold_commit ON jobs");
    owner_sql("DROP FUNCTION test_hold_commit()");
}
END_TEST

static Suite *burst_suite(void)
{
    Suite *s = suite_create("admission_burst");
    TCase *tc = tcase_create("burst");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_burst_costs_a_pass_per_window);
    tcase_add_test(tc, a_lone_submit_is_looked_at_at_once);
    tcase_add_test(tc, the_waker_notifies_after_the_commit);
    tcase_add_test(tc, nothing_is_notified_before_the_commit);
    tcase_add_test(tc, a_burst_is_announced_twice_per_window);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    harness_require_pg();
    return suite_run(burst_suite());
}
