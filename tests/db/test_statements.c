/*
 * test_statements.c - statements are prepared at their first use on a
 * connection (db/db.c), not all of them at every connection: every statement
 * of db_registry prepares against the migrated schema (db_prepare_all, the
 * check that preparing them all at each connection used to give); one that
 * does not prepare fails its use with the error, the connection goes on, and
 * it is prepared again at its next use; a first use whose Prepare a failed
 * transaction swallowed is prepared again after the rollback; a new
 * connection prepares anew.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/context.h"
#include "db/db.h"
#include "lib/err.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct aidc_server srv;
static const struct db_stmt st_late = {"test_late", "SELECT count(*) FROM test_late_table", 0};
static const struct db_stmt st_one = {"test_one", "SELECT 41 + 1", 0};
static const struct db_ctx system_ctx = {.roles = "system"};

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "statements");
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

/* stmt's single value on d, or NULL (and *e) when it failed; the caller frees it */
static char *value(struct db *d, const struct db_stmt *stmt, int *e)
{
    PGresult *r = db_query(d, stmt, NULL, e);
    if (!r)
        return NULL;
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static void expect(struct db *d, const struct db_stmt *stmt, const char *want)
{
    int e = 0;
    char *v = value(d, stmt, &e);
    ck_assert_msg(v != NULL, "%s failed: %s", stmt->name, db_last_error(d)->message);
    ck_assert_str_eq(v, want);
    free(v);
}

START_TEST(every_statement_fits_the_schema)
{
    struct db *d = db_open(srv.app_url, "test_statements");
    ck_assert_int_eq(db_prepare_all(d), 0);
    ck_assert_int_eq(db_prepare_all(d), 0); /* all prepared: nothing more to do */
    expect(d, &st_one, "42");
    db_close(d);
}
END_TEST

/*
 * A read goes as "r_" + its name (db/readctx.c): no statement may already be
 * called so, and every name stays within the 63 bytes PostgreSQL compares of
 * a prepared statement's name - two longer ones alike in those would be one.
 */
START_TEST(every_name_leaves_room_for_its_read_form)
{
    size_t n = 0;
    for (size_t m = 0; db_registry[m]; m++)
        for (size_t i = 0; db_registry[m][i]; i++, n++) {
            const char *name = db_registry[m][i]->name;
            ck_assert_msg(strncmp(name, "r_", 2) != 0, "statement %s: r_ names a read form", name);
            ck_assert_msg(strlen(name) + 2 <= 63, "statement %s: too long for its read form", name);
        }
    ck_assert_uint_gt(n, 100);
}
END_TEST

START_TEST(a_statement_that_did_not_prepare_is_prepared_at_its_next_use)
{
    struct db *d = db_open(srv.app_url, "test_statements");
    int e = 0;
    char *v = value(d, &st_late, &e);
    ck_assert_ptr_null(v);
    ck_assert_int_ne(e, 0);
    ck_assert_ptr_nonnull(strstr(db_last_error(d)->message, "test_late_table"));
    expect(d, &st_one, "42"); /* the connection goes on */
    PQclear(harness_sql(srv.owner_url, "CREATE TABLE test_late_table (x int)", 0, NULL));
    PQclear(harness_sql(srv.owner_url, "GRANT SELECT ON test_late_table TO PUBLIC", 0, NULL));
    expect(d, &st_late, "0");
    expect(d, &st_late, "0"); /* prepared now: used as it is */
    db_close(d);
}
END_TEST

START_TEST(a_prepare_lost_with_its_transaction_is_sent_again)
{
    struct db *d = db_open(srv.app_url, "test_statements");
    ck_assert_int_eq(db_begin(d, &system_ctx, false), 0);
    /* one pipeline: the failing statement, then st_one's Prepare and Execute,
     * which the server skips */
    ck_assert_int_eq(db_queue(d, &st_late, NULL), 0);
    int e = 0;
    char *v = value(d, &st_one, &e);
    ck_assert_ptr_null(v);
    ck_assert_int_ne(e, 0);
    db_rollback(d);
    expect(d, &st_one, "42"); /* "prepared statement does not exist" if it were kept */
    db_close(d);
}
END_TEST

START_TEST(a_new_connection_prepares_anew)
{
    struct db *d = db_open(srv.app_url, "test_statements");
    expect(d, &st_one, "42");
    /* end this connection from outside: the next use reconnects */
    PQclear(harness_sql(getenv("AIDC_TEST_SUPERUSER_URL"),
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = 'test_statements'",
                        0, NULL));
    int e = 0;
    char *v = NULL;
    for (int i = 0; i < 50 && !v; i++) { /* the loss is seen by a use, a later one reconnects */
        v = value(d, &st_one, &e);
        if (!v)
            nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    ck_assert_msg(v != NULL, "no answer after the reconnection: %s", db_last_error(d)->message);
    ck_assert_str_eq(v, "42");
    free(v);
    db_close(d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("statements");
    TCase *tc = tcase_create("statements");
    tcase_add_checked_fixture(tc, setup, teardown);
    /* preparing every statement (each twice where it has a read form) took over
     * Check's default 4 s on a busy CI machine */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_statement_fits_the_schema);
    tcase_add_test(tc, every_name_leaves_room_for_its_read_form);
    tcase_add_test(tc, a_statement_that_did_not_prepare_is_prepared_at_its_next_use);
    tcase_add_test(tc, a_prepare_lost_with_its_transaction_is_sent_again);
    tcase_add_test(tc, a_new_connection_prepares_anew);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
