/*
 * test_queue_marks.c - the marks of queue positions as an admission pass
 * writes them (sched/queuemarks.c) and as a position lookup reads them
 * (0036_queue_marks_in_place.sql).
 *
 * A job joining ahead or leaving moves every mark behind it. Deleted and
 * inserted again, each moved mark left a dead row (56,843 of them, 4 MB for 143
 * live marks, after one tests/bench/jobs.sh run) until a vacuum came; written in
 * place the update is HOT and the page is pruned as it is read. The lookup
 * halves over the positions of the marks, and still counts right where a mark
 * is missing.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "db/schedsnap.h"
#include "sched/queuemarks.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define QUEUED 1050 /* marks at 1, 101, ..., 1001 */

static struct aidc_server srv;
static const struct db_ctx system_ctx = {.roles = "system"};
static struct db *conn;

static void exec_owner(const char *sql)
{
    ck_assert_msg(harness_sql_ok(srv.owner_url, sql), "%s failed", sql);
}

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "queuemarks");
    exec_owner("WITH t AS (INSERT INTO tenants (slug, name) VALUES ('physics', 'Physics')"
               " RETURNING id),"
               " p AS (INSERT INTO projects (tenant_id, slug, name) SELECT id, 'p1', 'P1' FROM t"
               "       RETURNING tenant_id, id)"
               " INSERT INTO jobs (tenant_id, project_id, username, name, command)"
               " SELECT p.tenant_id, p.id, 'ann', 'j' || g, '[\"true\"]' FROM p,"
               " generate_series(1, 1050) g");
    /* only the passes below may clean the table */
    exec_owner("ALTER TABLE queue_marks SET (autovacuum_enabled = false)");
    conn = db_open(srv.app_url, "test_queue_marks");
    ck_assert_ptr_nonnull(conn);
}

static void teardown(void)
{
    db_close(conn);
    harness_db_discard(&srv);
}

/* What a pass does with the marks: read the queue and the marks, write those that moved. */
static void pass(void)
{
    ck_assert_int_eq(db_begin(conn, &system_ctx, false), 0);
    struct db_snapshot d;
    ck_assert_int_eq(db_sched_snapshot(conn, &d), 0);
    ck_assert_uint_eq(d.queued.n, QUEUED);
    bool *admitted = calloc(d.queued.n + 1, sizeof *admitted);
    ck_assert_ptr_nonnull(admitted);
    ck_assert_int_eq(queuemarks_write(conn, &d, admitted), 0);
    ck_assert_int_eq(db_commit(conn), 0);
    free(admitted);
    db_sched_snapshot_free(&d);
}

/* Every queued job's position as the lookup tells it against its place in queue order. */
static void expect_exact(const char *when)
{
    long wrong = harness_sql_long(
        srv.owner_url,
        "SELECT count(*) FROM (SELECT id, row_number() OVER (ORDER BY queue_rank, submitted_at,"
        "   id) AS place FROM jobs WHERE state = 'queued') q"
        " WHERE aidc_queue_position(q.id) IS DISTINCT FROM q.place",
        0, NULL);
    ck_assert_msg(wrong == 0, "%s: %ld of %d jobs told the wrong position", when, wrong, QUEUED);
}

START_TEST(a_pass_that_moves_every_mark_leaves_no_dead_rows)
{
    pass();
    ck_assert_int_eq(harness_sql_long(srv.owner_url, "SELECT count(*) FROM queue_marks", 0, NULL),
                     11);
    expect_exact("after the first pass");
    /* the head goes to the end and back: every mark moves, 200 times */
    for (int i = 0; i < 200; i++) {
        exec_owner(i % 2 ? "UPDATE jobs SET priority = 'normal' WHERE name = 'j1'"
                         : "UPDATE jobs SET priority = 'low' WHERE name = 'j1'");
        pass();
    }
    expect_exact("after 200 passes");
    /* deleted and inserted they took 7 pages (autovacuum off), in place 1 */
    long pages = harness_sql_long(
        srv.owner_url,
        "SELECT pg_relation_size('queue_marks') / current_setting('block_size')::int", 0, NULL);
    ck_assert_msg(pages <= 3, "11 marks written 200 times take %ld pages", pages);
}
END_TEST

START_TEST(a_position_counts_right_without_its_nearest_mark)
{
    pass();
    exec_owner("DELETE FROM queue_marks WHERE pos = 501");
    expect_exact("without the mark at 501");
    exec_owner("DELETE FROM queue_marks");
    expect_exact("without marks");
}
END_TEST

static Suite *marks_suite(void)
{
    Suite *s = suite_create("queue_marks");
    TCase *tc = tcase_create("queue_marks");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_pass_that_moves_every_mark_leaves_no_dead_rows);
    tcase_add_test(tc, a_position_counts_right_without_its_nearest_mark);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(marks_suite());
}
