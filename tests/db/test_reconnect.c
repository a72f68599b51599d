/*
 * test_reconnect.c - a connection that failed to connect tries again at most
 * once a second (a server that is down is not hammered by every request), but
 * once another connection of the same use got through, the server is back:
 * the others connect at once instead of answering 503 for the rest of their
 * second. This was the cause of a flaky /readyz in http/test_dbrestart: one
 * HTTP thread back, the other still throttled.
 *
 * The database refuses connections for real (ALLOW_CONNECTIONS false on this
 * test's own database) and accepts them again; no proxy, no mock.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "lib/clock.h"
#include "lib/err.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static struct aidc_server srv;

/* Let this test's database take new connections or refuse them (as its owner, from elsewhere). */
static void allow_connections(bool allow)
{
    char sql[160];
    snprintf(sql, sizeof sql, "ALTER DATABASE %s WITH ALLOW_CONNECTIONS %s", srv.dbname,
             allow ? "true" : "false");
    ck_assert(harness_sql_ok(getenv("AIDC_TEST_OWNER_URL"), sql));
}

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "reconnect");
}

static void teardown(void)
{
    allow_connections(true);
    harness_db_discard(&srv);
}

/*
 * db_ensure(db) where it must still wait out the second of a failure at
 * failed_at: EUNAVAIL, unless the machine was so slow that the second is over.
 */
static void assert_still_waits(struct db *db, double failed_at)
{
    int e = db_ensure(db);
    if (clock_now_ms() - failed_at < 1000)
        ck_assert_int_eq(e, AIDC_EUNAVAIL);
}

START_TEST(one_connection_back_lets_the_others_retry_at_once)
{
    struct db *late = db_open(srv.app_url, "test_reconnect_late");
    struct db *first = db_open(srv.app_url, "test_reconnect_first");
    struct db *reader = db_open(srv.app_url, "test_reconnect_reader");
    ck_assert_ptr_nonnull(late);
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_nonnull(reader);
    db_set_pool(reader, DB_POOL_READ); /* another use: perhaps another server */

    allow_connections(false);
    double failed_at = clock_now_ms();
    ck_assert_int_eq(db_ensure(late), AIDC_EUNAVAIL);
    ck_assert_int_eq(db_ensure(reader), AIDC_EUNAVAIL);
    allow_connections(true);

    /* the failed ones wait out their second: nothing tells them the server is back */
    assert_still_waits(late, failed_at);
    assert_still_waits(reader, failed_at);
    /* a connection that has not failed gets through... */
    ck_assert_int_eq(db_ensure(first), 0);
    /* ...and the failed one of its use follows at once, not up to a second later */
    ck_assert_int_eq(db_ensure(late), 0);
    /* one of another use still waits: a read replica back says nothing of the primary */
    assert_still_waits(reader, failed_at);
    db_close(reader);
    db_close(first);
    db_close(late);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("reconnect");
    TCase *tc = tcase_create("reconnect");
    tcase_add_checked_fixture(tc, setup, teardown);
    /* the fixture makes a database: Check's 4 s default is short on a busy CI machine */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, one_connection_back_lets_the_others_retry_at_once);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
