/*
 * test_notified.c - what a worker learns of the notifications that woke it
 * (db_notified_only): the admitter reads only the new jobs when nothing but
 * submits woke it, so a cancel among them, or a new connection that may have
 * missed some, must say otherwise.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"

#include <check.h>
#include <stdio.h>
#include <unistd.h>

static struct aidc_server srv;
static char app[64];

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "notified");
    snprintf(app, sizeof app, "test_notified_%d", (int)getpid());
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

static void notify(const char *payload)
{
    const char *p[1] = {payload};
    PGresult *r = harness_sql(srv.owner_url, "SELECT pg_notify('aidc_test', $1)", 1, p);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
}

/* Wait until d has taken a notification (it is sent by another session). */
static void take(struct db *d)
{
    ck_assert_int_eq(db_wait(d, 5000, -1), 1);
    /* one more look: a second notification may come in its own packet */
    ck_assert_int_ge(db_wait(d, 100, -1), 0);
}

START_TEST(only_submits_or_none_say_so)
{
    struct db *d = db_open(srv.app_url, app);
    db_listen(d, "aidc_test");
    ck_assert_int_eq(db_wait(d, 0, -1), 0);    /* connects and listens */
    ck_assert(!db_notified_only(d, "submit")); /* a new connection: some may be lost */
    ck_assert(db_notified_only(d, "submit"));  /* none since */
    notify("submit");
    notify("submit");
    take(d);
    ck_assert(db_notified_only(d, "submit"));
    notify("submit");
    notify("cancel");
    take(d);
    ck_assert(!db_notified_only(d, "submit"));
    ck_assert(db_notified_only(d, "submit")); /* each call starts over */
    notify("");
    take(d);
    ck_assert(!db_notified_only(d, "submit"));
    /* a payload longer than the kept one is another */
    notify("submit-and-more-than-sixteen");
    take(d);
    ck_assert(!db_notified_only(d, "submit"));
    db_close(d);
}
END_TEST

START_TEST(a_new_connection_may_have_missed_some)
{
    struct db *d = db_open(srv.app_url, app);
    db_listen(d, "aidc_test");
    ck_assert_int_eq(db_wait(d, 0, -1), 0);
    (void)db_notified_only(d, "submit");
    ck_assert_int_eq(harness_end_sessions(app), 1);
    notify("cancel"); /* sent while nobody listens: lost */
    /* the loss shows on the next wait; the one after connects again */
    int got = db_wait(d, 1000, -1);
    ck_assert_int_le(got, 0);
    if (got == 0)
        ck_assert_int_lt(db_wait(d, 1000, -1), 0);
    ck_assert_int_eq(db_wait(d, 0, -1), 0);
    ck_assert(!db_notified_only(d, "submit"));
    db_close(d);
}
END_TEST

static Suite *notified_suite(void)
{
    Suite *s = suite_create("notified");
    TCase *tc = tcase_create("notified");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, only_submits_or_none_say_so);
    tcase_add_test(tc, a_new_connection_may_have_missed_some);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(notified_suite());
}
