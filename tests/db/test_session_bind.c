/*
 * test_session_bind.c - a worker's lead lives in its database session (a
 * session-scoped advisory lock, db/worker.c). When that session ends - the
 * server killed it, or a failover took the primary away - a db bound to it
 * (db_bind_session) must not reconnect under its holder: otherwise a round
 * in progress goes on, on the new connection, without the lock while another
 * replica takes it. Unbound, the same db reconnects at once (what requests
 * want); rebound to the new session it leads again only if the lock is free.
 * The session is ended for real, with pg_terminate_backend as the superuser.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "db/sched.h"
#include "lib/err.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define KEY 190 /* clear of the workers' lead keys (100 + lead) */

static struct aidc_server srv;
static char app[64];

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "bind");
    snprintf(app, sizeof app, "test_bind_%d", (int)getpid());
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

/* End every session of this test's db (by application name), waiting until each is gone. */
static void end_sessions(void)
{
    ck_assert_int_eq(harness_end_sessions(app), 1);
}

START_TEST(a_bound_db_does_not_reconnect_under_its_lead)
{
    struct db *d = db_open(srv.app_url, app);
    bool got = false;
    ck_assert_int_eq(db_sched_lead(d, KEY, &got), 0);
    ck_assert(got);
    unsigned gen = db_generation(d);
    ck_assert_uint_ne(gen, 0);
    db_bind_session(d, gen);

    end_sessions();
    /* the statement fails; the connection is not replaced while bound */
    ck_assert_int_eq(db_sched_lead(d, KEY, &got), AIDC_EUNAVAIL);
    ck_assert_uint_eq(db_generation(d), 0);
    ck_assert_int_eq(db_ensure(d), AIDC_EUNAVAIL);
    ck_assert_uint_eq(db_generation(d), 0);

    /* the lock went with the session: another replica's worker takes the lead */
    struct db *other = db_open(srv.app_url, "test_bind_other");
    ck_assert_int_eq(db_sched_lead(other, KEY, &got), 0);
    ck_assert(got);

    /* unbound, the first db reconnects and asks again: the lead is taken */
    db_bind_session(d, 0);
    ck_assert_int_eq(db_sched_lead(d, KEY, &got), 0);
    ck_assert(!got);
    ck_assert_uint_ne(db_generation(d), 0);
    ck_assert_uint_ne(db_generation(d), gen);
    db_close(other);
    db_close(d);
}
END_TEST

START_TEST(an_unbound_db_reconnects_and_runs_the_statement_on_a_new_session)
{
    struct db *d = db_open(srv.app_url, app);
    bool got = false;
    ck_assert_int_eq(db_sched_lead(d, KEY, &got), 0);
    ck_assert(got);
    unsigned gen = db_generation(d);
    end_sessions();
    /* a request's db: the lost connection is replaced and the statement runs again */
    ck_assert_int_eq(db_sched_lead(d, KEY, &got), 0);
    ck_assert(got);
    ck_assert_uint_ne(db_generation(d), 0);
    ck_assert_uint_ne(db_generation(d), gen);
    db_close(d);
}
END_TEST

int main(void)
{
    harness_require_pg();
    if (!getenv("AIDC_TEST_SUPERUSER_URL") || !getenv("AIDC_TEST_SUPERUSER_URL")[0]) {
        fprintf(stderr, "skipped: AIDC_TEST_SUPERUSER_URL not set (ending a session needs it)\n");
        exit(77);
    }
    Suite *s = suite_create("session_bind");
    TCase *tc = tcase_create("session_bind");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_bound_db_does_not_reconnect_under_its_lead);
    tcase_add_test(tc, an_unbound_db_reconnects_and_runs_the_statement_on_a_new_session);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
