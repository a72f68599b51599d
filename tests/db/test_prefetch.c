/*
 * test_prefetch.c - a statement sent ahead (db_prefetch) travels with the next
 * awaited one, and the query of the same statement and parameters takes its
 * answer instead of running again: once, in the same transaction only (not
 * past a savepoint's rollback), never after the connection it was sent on is
 * gone; its failure fails the transaction. Which round trip answered is read off clock_timestamp():
 * a kept answer is older than a statement run after it was sent.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "lib/err.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct aidc_server srv;

/* when the server ran it (µs), and the parameter back: which round trip answered */
static const struct db_stmt st_when = {
    "test_prefetch_when", "SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint, $1::text",
    1};
static const struct db_stmt st_now = {
    "test_prefetch_now", "SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint", 0};
static const struct db_stmt st_divide = {"test_prefetch_divide", "SELECT 1 / $1::int", 1};
static const struct db_stmt st_savepoint = {"test_prefetch_savepoint", "SAVEPOINT s", 0};
static const struct db_stmt st_back = {"test_prefetch_back", "ROLLBACK TO SAVEPOINT s", 0};

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "prefetch");
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

/* When stmt (with param, if it takes one) ran, as db_query answers it now. */
static long long ran_at(struct db *d, const struct db_stmt *stmt, const char *param)
{
    const char *p[1] = {param};
    int e = 0;
    PGresult *r = db_query(d, stmt, p, &e);
    ck_assert_msg(r != NULL, "%s failed: %d %s", stmt->name, e, db_last_error(d)->message);
    if (stmt->nparams)
        ck_assert_str_eq(PQgetvalue(r, 0, 1), param);
    long long at = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return at;
}

/* A connection of this test with a transaction open. */
static struct db *in_transaction(void)
{
    struct db *d = db_open(srv.app_url, "test_prefetch");
    ck_assert_int_eq(db_begin(d, NULL, false), 0);
    return d;
}

/* Commit d's transaction (it must succeed) and close it. */
static void commit_and_close(struct db *d)
{
    ck_assert_int_eq(db_commit(d), 0);
    db_close(d);
}

static void prefetch(struct db *d, const char *param)
{
    const char *p[1] = {param};
    db_prefetch(d, &st_when, p);
}

START_TEST(a_kept_answer_comes_from_the_earlier_round_trip_once)
{
    struct db *d = in_transaction();
    prefetch(d, "a");
    prefetch(d, "b");
    long long between = ran_at(d, &st_now, NULL); /* its round trip answers both */
    long long a = ran_at(d, &st_when, "a");
    ck_assert_msg(a < between, "a ran again: %lld after %lld", a, between);
    long long c = ran_at(d, &st_when, "c"); /* other parameters: a statement of its own */
    ck_assert_msg(c > between, "c answered by b's round trip");
    long long b = ran_at(d, &st_when, "b");
    ck_assert_msg(b < between, "b ran again");
    long long again = ran_at(d, &st_when, "a"); /* taken once: now it runs */
    ck_assert_msg(again > c, "a's answer was taken twice");
    commit_and_close(d);
}
END_TEST

START_TEST(a_query_answers_its_prefetch_still_in_flight)
{
    struct db *d = in_transaction();
    long long before = ran_at(d, &st_now, NULL);
    prefetch(d, "a");
    long long a = ran_at(d, &st_when, "a"); /* no round trip between: this one answers it */
    ck_assert_msg(a > before, "an old answer");
    commit_and_close(d);
}
END_TEST

START_TEST(a_failed_prefetch_fails_the_transaction)
{
    struct db *d = in_transaction();
    const char *zero[1] = {"0"};
    db_prefetch(d, &st_divide, zero);
    int e = 0;
    PGresult *r = db_query(d, &st_now, NULL, &e);
    ck_assert_ptr_null(r);
    ck_assert_int_ne(e, 0);
    ck_assert_str_eq(db_last_error(d)->sqlstate, "22012");
    r = db_query(d, &st_divide, zero, &e); /* its own query says the same */
    ck_assert_ptr_null(r);
    ck_assert_int_ne(e, 0);
    ck_assert_int_ne(db_commit(d), 0);
    ck_assert_int_eq(db_begin(d, NULL, false), 0); /* the next transaction is whole */
    ran_at(d, &st_now, NULL);
    commit_and_close(d);
}
END_TEST

START_TEST(a_savepoint_s_rollback_forgets_what_was_kept)
{
    struct db *d = in_transaction();
    ck_assert_int_eq(db_exec(d, &st_savepoint, NULL), 0);
    const char *zero[1] = {"0"};
    db_prefetch(d, &st_divide, zero);
    int e = 0;
    ck_assert_ptr_null(db_query(d, &st_now, NULL, &e));
    ck_assert_int_eq(db_exec_recover(d, &st_back), 0);
    PGresult *r = db_query(d, &st_divide, zero, &e); /* runs again, and fails as itself */
    ck_assert_ptr_null(r);
    ck_assert_int_eq(e, AIDC_EINVAL);
    ck_assert_int_eq(db_exec_recover(d, &st_back), 0);
    prefetch(d, "a"); /* answered, then rolled back to before it */
    long long between = ran_at(d, &st_now, NULL);
    ck_assert_int_eq(db_exec_recover(d, &st_back), 0);
    ck_assert_msg(ran_at(d, &st_when, "a") > between, "an answer from before the rollback");
    commit_and_close(d);
}
END_TEST

START_TEST(kept_answers_end_with_their_scope)
{
    struct db *d = db_open(srv.app_url, "test_prefetch");
    for (int end = 0; end < 3; end++) { /* commit, rollback, commit without waiting */
        ck_assert_int_eq(db_begin(d, NULL, false), 0);
        prefetch(d, "a");
        long long between = ran_at(d, &st_now, NULL);
        if (end == 0)
            ck_assert_int_eq(db_commit(d), 0);
        else if (end == 1)
            db_rollback(d);
        else
            db_commit_nowait(d);
        long long outside = ran_at(d, &st_when, "a");
        ck_assert_msg(outside > between, "end %d: an answer outside its scope", end);
        ck_assert_int_eq(db_begin(d, NULL, false), 0); /* and in the next one */
        ck_assert_msg(ran_at(d, &st_when, "a") > outside, "end %d: the last scope's answer", end);
        ck_assert_int_eq(db_commit(d), 0);
    }
    /* outside a transaction nothing is sent or kept */
    long long before = ran_at(d, &st_now, NULL);
    prefetch(d, "z");
    ck_assert_msg(ran_at(d, &st_when, "z") > before, "kept outside a transaction");
    db_close(d);
}
END_TEST

START_TEST(a_prefetch_never_asked_for_ends_with_its_scope)
{
    struct db *d = in_transaction();
    prefetch(d, "a"); /* in flight at the commit: answered by it, then dropped */
    ck_assert_int_eq(db_commit(d), 0);
    ck_assert_int_eq(db_begin(d, NULL, false), 0);
    const char *zero[1] = {"0"};
    db_prefetch(d, &st_divide, zero);
    ck_assert_int_ne(db_commit(d), 0); /* ...but its failure still counts */
    long long before = ran_at(d, &st_now, NULL);
    ck_assert_msg(ran_at(d, &st_when, "a") > before, "an answer of an ended scope");
    db_close(d);
}
END_TEST

/* Wait until no backend of application name `name` is left (or 10 s). */
static void wait_gone(const char *name)
{
    const char *p[1] = {name};
    for (int i = 0; i < 1000; i++) {
        PGresult *r = harness_sql(getenv("AIDC_TEST_SUPERUSER_URL"),
                                  "SELECT count(*) FROM pg_stat_activity"
                                  " WHERE application_name = $1",
                                  1, p);
        bool gone = r && strcmp(PQgetvalue(r, 0, 0), "0") == 0;
        PQclear(r);
        if (gone)
            return;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    ck_abort_msg("the backend of %s did not end", name);
}

START_TEST(a_lost_connection_forgets_what_it_kept)
{
    struct db *d = db_open(srv.app_url, "test_prefetch_lost");
    ck_assert_int_eq(db_begin(d, NULL, false), 0);
    ran_at(d, &st_now, NULL); /* the connection is up, no answer of the scope yet... */
    db_rollback(d);
    ck_assert_int_eq(db_begin(d, NULL, false), 0);
    prefetch(d, "a"); /* ...and this one is sent on it */
    const char *p[1] = {"test_prefetch_lost"};
    PQclear(harness_sql(getenv("AIDC_TEST_SUPERUSER_URL"),
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = $1",
                        1, p));
    wait_gone("test_prefetch_lost");
    /* nothing of the scope was answered: it opens again on a new connection */
    long long between = ran_at(d, &st_now, NULL);
    long long a = ran_at(d, &st_when, "a");
    ck_assert_msg(a > between, "an answer of the lost connection");
    commit_and_close(d);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("prefetch");
    TCase *tc = tcase_create("prefetch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_kept_answer_comes_from_the_earlier_round_trip_once);
    tcase_add_test(tc, a_query_answers_its_prefetch_still_in_flight);
    tcase_add_test(tc, a_failed_prefetch_fails_the_transaction);
    tcase_add_test(tc, a_savepoint_s_rollback_forgets_what_was_kept);
    tcase_add_test(tc, kept_answers_end_with_their_scope);
    tcase_add_test(tc, a_prefetch_never_asked_for_ends_with_its_scope);
    tcase_add_test(tc, a_lost_connection_forgets_what_it_kept);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
