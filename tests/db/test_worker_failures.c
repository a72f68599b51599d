/*
 * test_worker_failures.c - a background worker whose round keeps failing says
 * so: a warning at the first failure with the database's error, the repeats
 * only as debug (not every second for hours), and a word when rounds succeed
 * again. Before, every failure went to debug: a dispatcher whose claim the
 * database refused retried silently every second (seen while building the
 * standing delivery pool). And a worker giving its lead up (stop) calls
 * on_unlead while it still holds the lead, so the dispatcher's deliveries in
 * flight end before a standby can take over and release their rows.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "db/worker.h"
#include "lib/log.h"

#include <check.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FAILING 3 /* rounds that fail before the rest succeed */

static struct aidc_server srv;
static atomic_int calls;

static const struct db_stmt st_bad = {"test_worker_bad", "SELECT 1 / 0", 0};

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "workerfail");
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    (void)arg;
    if (atomic_fetch_add(&calls, 1) >= FAILING)
        return 0;
    const struct db_ctx ctx = {.roles = "system"};
    int e = db_begin(db, &ctx, false);
    if (!e)
        e = db_exec(db, &st_bad, NULL);
    db_rollback(db);
    return e ? e : -1;
}

/* Lines of text that contain all of a, b (NULL: any). */
static int lines_with(const char *text, const char *a, const char *b)
{
    int n = 0;
    for (const char *l = text; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char *line = strndup(l, len);
        ck_assert_ptr_nonnull(line);
        n += strstr(line, a) && (!b || strstr(line, b));
        free(line);
        l = end ? end + 1 : NULL;
    }
    return n;
}

START_TEST(a_failing_round_is_said_once_then_its_end)
{
    char path[] = "/tmp/aidc-test-workerlog-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    int saved = dup(STDERR_FILENO);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
    log_set_level(LOG_INFO);
    struct worker_spec spec = {.name = "failing", .interval_ms = 100, .round = round_fn};
    struct worker *w = worker_start(srv.app_url, &spec);
    ck_assert_ptr_nonnull(w);
    time_t t0 = time(NULL);
    while (atomic_load(&calls) < FAILING + 2 && time(NULL) - t0 < 20) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    worker_stop(w);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fd);
    char *log = harness_read_file(path);
    unlink(path);
    ck_assert_ptr_nonnull(log);
    ck_assert_int_ge(atomic_load(&calls), FAILING + 2);
    /* the first failure, with the database's word for it */
    ck_assert_int_eq(lines_with(log, "\"level\":\"warn\"", "failing: round failed 1 time in a row"),
                     1);
    ck_assert_int_eq(lines_with(log, "failing: round failed 1 time", "division by zero"), 1);
    /* the next ones are not repeated at this level */
    ck_assert_int_eq(lines_with(log, "failing: round failed 2 times", NULL), 0);
    ck_assert_int_eq(lines_with(log, "failing: round failed 3 times", NULL), 0);
    /* and the end of it */
    ck_assert_int_eq(lines_with(log, "\"level\":\"info\"", "failing: rounds succeed again after 3"),
                     1);
    free(log);
}
END_TEST

static atomic_long lead_holders = -1; /* sessions holding the lead, seen from on_unlead */

static int quiet_round(struct db *db, bool notified, void *arg)
{
    (void)db;
    (void)notified;
    (void)arg;
    atomic_fetch_add(&calls, 1);
    return 0;
}

/* Sessions holding the dispatcher's lead (advisory lock 1634296931 / 100 + lead). */
static long lead_held(void)
{
    return harness_sql_long(srv.owner_url,
                            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                            " AND classid = 1634296931 AND objid = 102 AND granted AND database ="
                            " (SELECT oid FROM pg_database WHERE datname = current_database())",
                            0, NULL);
}

static void unlead(void *arg)
{
    (void)arg;
    atomic_store(&lead_holders, lead_held());
}

START_TEST(a_worker_giving_its_lead_up_finishes_first)
{
    atomic_store(&calls, 0);
    struct worker_spec spec = {.name = "leader",
                               .interval_ms = 100,
                               .round = quiet_round,
                               .lead = WORKER_LEAD_DISPATCHER,
                               .on_unlead = unlead};
    struct worker *w = worker_start(srv.app_url, &spec);
    ck_assert_ptr_nonnull(w);
    time_t t0 = time(NULL);
    while (atomic_load(&calls) < 2 && time(NULL) - t0 < 20) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ck_assert_int_ge(atomic_load(&calls), 2); /* it leads: its rounds run */
    ck_assert_int_eq(lead_held(), 1);
    worker_stop(w);
    ck_assert_int_eq(atomic_load(&lead_holders), 1); /* on_unlead ran, the lead still held */
    t0 = time(NULL);
    while (lead_held() != 0 && time(NULL) - t0 < 10) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ck_assert_int_eq(lead_held(), 0); /* and then given up */
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("worker_failures");
    TCase *tc = tcase_create("worker_failures");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_failing_round_is_said_once_then_its_end);
    tcase_add_test(tc, a_worker_giving_its_lead_up_finishes_first);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
