/*
 * test_write_threads.c - a write waits for its commit on a write thread
 * (server/workpool.h), not on an HTTP thread: with one HTTP thread, a write
 * stuck behind a row lock does not stop a read; a write that finds every
 * write thread busy waits in the pool's queue, not on the HTTP thread, and is
 * served in its turn; a server stopped with a write in flight answers it and
 * exits cleanly (harness_teardown checks the exit status and, in the
 * sanitizer build, the log).
 *
 * The lock is real: the test holds the tenant's row FOR UPDATE in a
 * transaction of its own, so a PATCH of that tenant waits in PostgreSQL.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void setup_one_each(void)
{
    static const char *const env[] = {"AIDC_THREADS=1", "AIDC_WRITE_THREADS=1", NULL};
    harness_setup("writethreads", env);
    ck_assert_int_eq(req("POST", "/api/v1/tenants", harness_srv.admin_token,
                         "{\"slug\":\"locked\",\"name\":\"Locked\"}"),
                     201);
}

static void teardown(void)
{
    harness_teardown();
}

/* Hold the tenant's row in an open transaction of the owner role: writes to it wait. */
static PGconn *lock_tenant(void)
{
    PGconn *c = PQconnectdb(harness_srv.owner_url);
    ck_assert_int_eq(PQstatus(c), CONNECTION_OK);
    PGresult *r = PQexec(c, "BEGIN; SELECT 1 FROM tenants WHERE slug = 'locked' FOR UPDATE");
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    ck_assert_int_eq(PQntuples(r), 1);
    PQclear(r);
    return c;
}

static void unlock_tenant(PGconn *c)
{
    PQclear(PQexec(c, "COMMIT"));
    PQfinish(c);
}

/* Lock requests of this test's database that wait, now. */
static long waiting_locks(void)
{
    return harness_sql_long(harness_srv.owner_url,
                            /* a row lock's waiter waits on a transaction id: no database */
                            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = "
                            "l.pid WHERE NOT l.granted AND a.datname = current_database() "
                            "AND l.locktype IN ('transactionid', 'tuple')",
                            0, NULL);
}

/* Until n writes wait for the lock (at most 20 s). */
static bool wait_for_waiters(long n)
{
    for (int i = 0; i < 400; i++) {
        if (waiting_locks() >= n)
            return true;
        struct timespec nap = {0, 50L * 1000 * 1000};
        nanosleep(&nap, NULL); /* polling PostgreSQL's lock table: nothing to block on */
    }
    return false;
}

struct call {
    pthread_t t;
    const char *method, *path, *body;
    long status;
};

static void *do_call(void *arg)
{
    struct call *c = arg;
    c->status = req(c->method, c->path, harness_srv.admin_token, c->body);
    return NULL;
}

static void start_call(struct call *c, const char *method, const char *path, const char *body)
{
    c->method = method;
    c->path = path;
    c->body = body;
    c->status = -1;
    ck_assert_int_eq(pthread_create(&c->t, NULL, do_call, c), 0);
}

/* Join c if it ends within secs; false if it is still running then. */
static bool ended_within(struct call *c, int secs)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += secs;
    return pthread_timedjoin_np(c->t, NULL, &until) == 0;
}

/* A series of /metrics by its name and labels (-1: not there). */
static long gauge(const char *series)
{
    struct http_res m;
    ck_assert_int_eq(reqj("GET", "/metrics", NULL, NULL, &m), 200);
    char key[96];
    snprintf(key, sizeof key, "\n%s ", series);
    const char *s = m.body ? strstr(m.body, key) : NULL;
    long v = s ? strtol(s + strlen(key), NULL, 10) : -1;
    http_res_free(&m);
    return v;
}

/* aidc_write_jobs{state="<state>"} */
static long write_jobs(const char *state)
{
    char series[64];
    snprintf(series, sizeof series, "aidc_write_jobs{state=\"%s\"}", state);
    return gauge(series);
}

START_TEST(a_write_waiting_for_a_lock_does_not_hold_the_reads)
{
    PGconn *lock = lock_tenant();
    struct call write;
    start_call(&write, "PATCH", "/api/v1/tenants/locked", "{\"name\":\"Renamed\"}");
    ck_assert(wait_for_waiters(1));

    /* the only HTTP thread is free: a read is answered while the write waits */
    struct call read;
    start_call(&read, "GET", "/api/v1/tenants/locked", NULL);
    bool read_ended = ended_within(&read, 5);
    if (!read_ended) { /* let everything end before failing */
        unlock_tenant(lock);
        pthread_join(read.t, NULL);
        pthread_join(write.t, NULL);
    }
    ck_assert_msg(read_ended, "a read waited behind a write's lock");
    ck_assert_int_eq(read.status, 200);
    ck_assert_int_eq(write_jobs("running"), 1);

    unlock_tenant(lock);
    pthread_join(write.t, NULL);
    ck_assert_int_eq(write.status, 200);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/locked", harness_srv.admin_token, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "name"), "Renamed");
    http_res_free(&r);
    /* the thread counts itself done after it handed the answer over: poll */
    bool done = false;
    for (int i = 0; i < 400 && !done; i++) {
        done = write_jobs("running") == 0 && write_jobs("queued") == 0;
        struct timespec nap = {0, 10L * 1000 * 1000};
        if (!done)
            nanosleep(&nap, NULL); /* polling the gauges: nothing to block on */
    }
    ck_assert(done);
}
END_TEST

START_TEST(writes_beyond_the_write_threads_wait_in_their_queue_not_on_the_http_thread)
{
    PGconn *lock = lock_tenant();
    struct call first, second;
    start_call(&first, "PATCH", "/api/v1/tenants/locked", "{\"name\":\"First\"}");
    ck_assert(wait_for_waiters(1));
    /* the write thread is taken: this one waits in the queue */
    start_call(&second, "PATCH", "/api/v1/tenants/locked", "{\"name\":\"Second\"}");
    bool queued = false;
    for (int i = 0; i < 400 && !queued; i++) {
        queued = write_jobs("queued") == 1;
        struct timespec nap = {0, 50L * 1000 * 1000};
        if (!queued)
            nanosleep(&nap, NULL); /* polling the gauge: nothing to block on */
    }
    /* and the HTTP thread still answers reads */
    struct call read;
    start_call(&read, "GET", "/api/v1/tenants/locked", NULL);
    bool read_ended = ended_within(&read, 5);
    unlock_tenant(lock);
    if (!read_ended)
        pthread_join(read.t, NULL);
    pthread_join(first.t, NULL);
    pthread_join(second.t, NULL);
    ck_assert(queued);
    ck_assert_msg(read_ended, "a read waited behind a queued write");
    ck_assert_int_eq(read.status, 200);
    ck_assert_int_eq(first.status, 200);
    ck_assert_int_eq(second.status, 200);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/locked", harness_srv.admin_token, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "name"), "Second"); /* in the order they came */
    http_res_free(&r);
}
END_TEST

/*
 * Writes one after the other go to the write thread that went idle last, not
 * round the pool: one thread serves them all, so one database connection is
 * opened for them (and that thread's cache of actors stays warm), not eight.
 */
static void setup_eight(void)
{
    static const char *const env[] = {"AIDC_THREADS=1", "AIDC_WRITE_THREADS=8", NULL};
    harness_setup("writeeight", env);
}

START_TEST(writes_one_at_a_time_stay_on_one_write_thread)
{
    ck_assert_int_eq(req("POST", "/api/v1/tenants", harness_srv.admin_token,
                         "{\"slug\":\"calm\",\"name\":\"Calm\"}"),
                     201);
    long before = gauge("aidc_db_connections{pool=\"primary\"}");
    ck_assert_int_gt(before, 0);
    for (int i = 0; i < 24; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"name\":\"Calm %d\"}", i);
        ck_assert_int_eq(req("PATCH", "/api/v1/tenants/calm", harness_srv.admin_token, body), 200);
    }
    /*
     * the write thread of the POST serves them: no new connection, but for a
     * write that came before that thread was back on the idle stack (its
     * answer reached the client first), which goes to the one below it
     */
    ck_assert_int_le(gauge("aidc_db_connections{pool=\"primary\"}"), before + 2);
}
END_TEST

/*
 * Stopped while a write waits for a lock: the teardown sends SIGTERM. In the
 * first case the lock goes once aidcd drains (/readyz answers 503 - from the
 * HTTP thread, free), so the write commits and is answered. In the second the
 * drain's limit (1 s) passes first - the log says so - and aidcd stops its
 * write threads, which waits for the write to end (the lock goes 5 s after
 * the drain began), then closes its connections. Either way aidcd exits 0 with a clean log (no
 * leak of the answer made for a closed connection, in the sanitizer build)
 * and the write committed once.
 */
static PGconn *held;
static struct call inflight;
static bool saw_drain;
static int hold_after_drain_ms;

static void *unlock_when_draining(void *arg)
{
    (void)arg;
    for (int i = 0; i < 400 && !saw_drain; i++) {
        saw_drain = req("GET", "/readyz", NULL, NULL) == 503;
        struct timespec nap = {0, 50L * 1000 * 1000};
        if (!saw_drain)
            nanosleep(&nap, NULL); /* polling the server's state: nothing to block on */
    }
    /* past the drain's limit: the write is still running when the threads stop */
    struct timespec hold = {hold_after_drain_ms / 1000, (hold_after_drain_ms % 1000) * 1000000L};
    nanosleep(&hold, NULL);
    unlock_tenant(held);
    return NULL;
}

static void teardown_draining(void)
{
    char owner_url[sizeof harness_srv.owner_url];
    snprintf(owner_url, sizeof owner_url, "%s", harness_srv.owner_url);
    pthread_t t;
    if (pthread_create(&t, NULL, unlock_when_draining, NULL) != 0)
        exit(1);
    int st = harness_server_stop(&harness_srv);
    pthread_join(t, NULL);
    pthread_join(inflight.t, NULL);
    char *name =
        harness_sql_text(owner_url, "SELECT name FROM tenants WHERE slug = 'locked'", 0, NULL);
    char *log = harness_read_file(harness_srv.log_path);
    bool limit_passed = log && strstr(log, "requests still running after 1 s");
    free(log);
    bool ok = st == 0 && harness_log_clean(harness_srv.log_path) && saw_drain && name &&
              strcmp(name, "Stopped") == 0 &&
              (hold_after_drain_ms ? limit_passed && inflight.status != 503
                                   : !limit_passed && inflight.status == 200);
    if (!ok)
        fprintf(stderr,
                "stop: exit %d, drain seen %d, limit passed %d, the write got %ld, the name %s\n",
                st, saw_drain, limit_passed, inflight.status, name ? name : "(none)");
    free(name);
    harness_db_drop(&harness_srv);
    if (!ok)
        exit(1);
    harness_remove_tree(harness_srv.data_dir);
}

static void setup_stop_limit(void)
{
    static const char *const env[] = {"AIDC_THREADS=1", "AIDC_WRITE_THREADS=1",
                                      "AIDC_SHUTDOWN_TIMEOUT_SECONDS=1", NULL};
    harness_setup("writestop", env);
    ck_assert_int_eq(req("POST", "/api/v1/tenants", harness_srv.admin_token,
                         "{\"slug\":\"locked\",\"name\":\"Locked\"}"),
                     201);
    hold_after_drain_ms = 5000;
}

START_TEST(a_stop_with_a_write_in_flight_answers_it_and_exits_cleanly)
{
    held = lock_tenant();
    start_call(&inflight, "PATCH", "/api/v1/tenants/locked", "{\"name\":\"Stopped\"}");
    ck_assert(wait_for_waiters(1));
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("writethreads");
    TCase *tc = tcase_create("writethreads");
    tcase_add_checked_fixture(tc, setup_one_each, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_write_waiting_for_a_lock_does_not_hold_the_reads);
    tcase_add_test(tc, writes_beyond_the_write_threads_wait_in_their_queue_not_on_the_http_thread);
    suite_add_tcase(s, tc);
    TCase *eight = tcase_create("eight");
    tcase_add_checked_fixture(eight, setup_eight, teardown);
    tcase_set_timeout(eight, 60); /* its start and 25 writes passed 4 s under the sanitizers */
    tcase_add_test(eight, writes_one_at_a_time_stay_on_one_write_thread);
    suite_add_tcase(s, eight);
    TCase *stop = tcase_create("stop");
    tcase_add_checked_fixture(stop, setup_one_each, teardown_draining);
    tcase_set_timeout(stop, 60);
    tcase_add_test(stop, a_stop_with_a_write_in_flight_answers_it_and_exits_cleanly);
    suite_add_tcase(s, stop);
    TCase *limit = tcase_create("stop-limit");
    tcase_add_checked_fixture(limit, setup_stop_limit, teardown_draining);
    tcase_set_timeout(limit, 60);
    tcase_add_test(limit, a_stop_with_a_write_in_flight_answers_it_and_exits_cleanly);
    suite_add_tcase(s, limit);
    return suite_run(s);
}
