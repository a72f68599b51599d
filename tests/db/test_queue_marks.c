/*
 * test_queue_marks.c - the marks of queue positions as an admission pass
 * writes them (sched/queuemarks.c) and as a position lookup reads them
 * (0036_queue_marks_in_place.sql).
 *
 * A job joining ahead or leaving moves every mark behind it. Deleted and
 * inserted again, each moved mark left a dead row (56,843 of them, 4 MB for 143
 * live marks, after one tests/bench/jobs.sh run) until a vacuum came; written in
 * place the update is HOT and the page is pruned as it is read (on a quiet
 * database: a transaction of another session there holds the pruning back). Two queues (a
 * CPU-only one and one of a100 jobs with high and normal priorities); a queue
 * that shrinks loses its last marks. The lookup halves over the positions of
 * the marks, and still counts right where a mark is missing; a job behind the
 * last mark (a new one, mostly: every submit answers with its position) is
 * counted from that mark after one look at the marks (0037). A pass writes each
 * mark through the unique index of its position, whatever plan the statistics
 * lead to (0043). A submit's answer counts at most 300 jobs past its mark, a
 * read every one (0044).
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "db/schedsnap.h"
#include "lib/xalloc.h"
#include "sched/queuemarks.h"

#include <check.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUEUED 1300 /* CPU-only 1,050 (marks 1, 101, ..., 1001), a100 250 (1, 101, 201) */

static struct aidc_server srv;
static const struct db_ctx system_ctx = {.roles = "system"};
static struct db *conn;

static void exec_owner(const char *sql)
{
    ck_assert_msg(harness_sql_ok(srv.owner_url, sql), "%s failed", sql);
}

static long owner_long(const char *sql)
{
    return harness_sql_long(srv.owner_url, sql, 0, NULL);
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
    /* a second queue: one-GPU jobs, every third of high priority (marks 1, 101, 201) */
    exec_owner("INSERT INTO jobs (tenant_id, project_id, username, name, command, gpus,"
               "   gpu_type, priority)"
               " SELECT tenant_id, id, 'ann', 'g' || g, '[\"true\"]', 1, 'a100',"
               "        CASE WHEN g % 3 = 0 THEN 'high' ELSE 'normal' END"
               "   FROM projects, generate_series(1, 250) g");
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
static void pass_over(size_t queued)
{
    ck_assert_int_eq(db_begin(conn, &system_ctx, false), 0);
    struct db_snapshot d;
    ck_assert_int_eq(db_sched_snapshot(conn, &d), 0);
    ck_assert_uint_eq(d.queued.n, queued);
    bool *admitted = calloc(d.queued.n + 1, sizeof *admitted);
    ck_assert_ptr_nonnull(admitted);
    ck_assert_int_eq(queuemarks_write(conn, &d, admitted), 0);
    ck_assert_int_eq(db_commit(conn), 0);
    free(admitted);
    db_sched_snapshot_free(&d);
}

static void pass(void)
{
    pass_over(QUEUED);
}

/* What a submit's answer tells of job q's position (db/jobs.c: at most 300 past a mark). */
#define SUBMIT_LOOKUP "aidc_queue_position_at(q.gpu_type, q.queue_rank, q.submitted_at, q.id, 300)"

/*
 * Every queued job q's position as lookup (an expression of q) tells it
 * against want, an expression of its place in its type's queue (q.place).
 */
static void expect_positions(const char *lookup, const char *want, const char *when)
{
    char *sql = xasprintf(
        "SELECT count(*) FROM (SELECT *, row_number() OVER (PARTITION BY coalesce(gpu_type, '')"
        "   ORDER BY queue_rank, submitted_at, id) AS place FROM jobs WHERE state = 'queued') q"
        " WHERE %s IS DISTINCT FROM %s",
        lookup, want);
    long wrong = harness_sql_long(srv.owner_url, sql, 0, NULL);
    free(sql);
    ck_assert_msg(wrong == 0, "%s: %ld queued jobs told the wrong position", when, wrong);
}

/* A job's read tells its place, and so does a submit's answer within the bound. */
static void expect_exact(const char *when)
{
    expect_positions("aidc_queue_position(q.id)", "q.place", when);
    expect_positions(SUBMIT_LOOKUP, "q.place", when);
}

START_TEST(a_pass_that_moves_every_mark_leaves_no_dead_rows)
{
    pass();
    ck_assert_int_eq(harness_sql_long(srv.owner_url, "SELECT count(*) FROM queue_marks", 0, NULL),
                     14);
    expect_exact("after the first pass");
    /* the head of the CPU-only queue goes to its end and back: each of its marks moves */
    char *head = harness_sql_text(srv.owner_url,
                                  "SELECT id FROM jobs WHERE gpu_type IS NULL"
                                  " ORDER BY queue_rank, submitted_at, id LIMIT 1",
                                  0, NULL);
    ck_assert_ptr_nonnull(head);
    const char *p[1] = {head};
    exec_owner("CREATE TABLE marks_before AS SELECT * FROM queue_marks");
    for (int i = 0; i < 200; i++) {
        ck_assert_int_eq(harness_sql_long(srv.owner_url,
                                          "WITH u AS (UPDATE jobs SET priority = CASE priority"
                                          "   WHEN 'low' THEN 'normal' ELSE 'low' END"
                                          "   WHERE id = $1 RETURNING 1) SELECT count(*) FROM u",
                                          1, p),
                         1);
        pass();
        if (i == 0) /* the 11 of the CPU-only queue moved, the a100 queue's 3 stayed */
            ck_assert_int_eq(harness_sql_long(srv.owner_url,
                                              "SELECT count(*) FILTER (WHERE m.job_id <> b.job_id)"
                                              " * 100 + count(*) FROM queue_marks m"
                                              " JOIN marks_before b USING (gpu_type, pos)",
                                              0, NULL),
                             1114);
    }
    expect_exact("after 200 passes");
    /* the writer's counts reach the statistics when its session ends */
    db_close(conn);
    conn = db_open(srv.app_url, "test_queue_marks");
    ck_assert_ptr_nonnull(conn);
    const char *counts = "SELECT n_tup_ins || ' ' || n_tup_del || ' ' || (n_tup_upd >= 2200)::int"
                         " FROM pg_stat_user_tables WHERE relname = 'queue_marks'";
    char *got = harness_sql_text(srv.owner_url, counts, 0, NULL);
    for (int i = 0; i < 100 && got && strcmp(got + strlen(got) - 1, "1") != 0; i++) {
        free(got);
        struct timespec nap = {.tv_sec = 0, .tv_nsec = 50L * 1000 * 1000};
        nanosleep(&nap, NULL);
        got = harness_sql_text(srv.owner_url, counts, 0, NULL);
    }
    /* 14 marks inserted once, then only updated (deleted and inserted before: 2,214 and
     * 2,200, and the table grew to 7 pages where it now stays at 1 on a quiet database) */
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, "14 0 1");
    free(got);
    free(head);
}
END_TEST

/* The CPU-only queue shrinks to 350: its marks past 301 go, the others stay exact. */
START_TEST(a_shrinking_queue_loses_its_last_marks)
{
    pass();
    exec_owner("UPDATE jobs SET state = 'cancelled', finished_at = now() WHERE id IN (SELECT id"
               " FROM jobs WHERE gpu_type IS NULL ORDER BY queue_rank DESC,"
               " submitted_at DESC, id DESC LIMIT 700)");
    pass_over(QUEUED - 700);
    ck_assert_int_eq(harness_sql_long(srv.owner_url,
                                      "SELECT max(pos) FROM queue_marks WHERE gpu_type = ''", 0,
                                      NULL),
                     301);
    expect_exact("after 700 jobs left the end");
}
END_TEST

START_TEST(a_position_counts_right_without_its_nearest_mark)
{
    pass();
    exec_owner("DELETE FROM queue_marks WHERE pos = 501");
    expect_exact("without the mark at 501");
    /* counted from the head: a read tells every place, a submit's answer the first 300 (0044) */
    exec_owner("DELETE FROM queue_marks");
    expect_positions("aidc_queue_position(q.id)", "q.place", "read without marks");
    expect_positions(SUBMIT_LOOKUP, "CASE WHEN q.place <= 300 THEN q.place END",
                     "submit answers without marks");
    ck_assert_int_eq(owner_long("SELECT count(*) FROM jobs q WHERE state = 'queued'"
                                " AND " SUBMIT_LOOKUP " IS NULL"),
                     1050 - 300);
}
END_TEST

/*
 * How much of an index (entries false: the times it was read, idx_scan; true:
 * the entries read, idx_tup_read) was read while sql ran with its one
 * parameter arg (or none: NULL), and sql's one number. A superuser's own
 * connection to the test database, so that its statistics are flushed on
 * demand (pg_stat_force_next_flush: at the idle point after the statement)
 * and read back in order, with generic plans as aidcd's.
 */
static long index_reads(const char *index, bool entries, const char *sql, const char *arg,
                        long *value)
{
    PGconn *c = harness_super_connect(&srv);
    ck_assert_ptr_nonnull(c);
    /* the plans aidcd's sessions use (db/db.c): a LIMIT of a parameter, not of a constant */
    PGresult *g = PQexec(c, "SET plan_cache_mode = force_generic_plan");
    ck_assert_int_eq(PQresultStatus(g), PGRES_COMMAND_OK);
    PQclear(g);
    const char *flush = "SELECT pg_stat_force_next_flush()";
    const char *scans = "SELECT CASE WHEN $2::bool THEN idx_tup_read ELSE idx_scan END"
                        " FROM pg_stat_user_indexes WHERE indexrelname = $1";
    const char *steps[] = {flush, scans, sql, flush, scans};
    const char *scan_args[2] = {index, entries ? "true" : "false"};
    long got[5] = {0};
    for (int i = 0; i < 5; i++) {
        int n = steps[i] == scans ? 2 : steps[i] == sql && arg ? 1 : 0;
        PGresult *r =
            PQexecParams(c, steps[i], n, NULL, steps[i] == scans ? scan_args : &arg, NULL, NULL, 0);
        ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", steps[i], PQerrorMessage(c));
        got[i] = PQgetisnull(r, 0, 0) ? 0 : strtol(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
    }
    PQfinish(c);
    *value = got[2];
    return got[4] - got[1];
}

static long mark_looks(const char *sql, long *value)
{
    return index_reads("queue_marks_pos", false, sql, NULL, value);
}

START_TEST(a_job_behind_the_last_mark_looks_at_one_mark)
{
    pass();
    long pos = 0;
    long looks = mark_looks("SELECT aidc_queue_position(id) FROM jobs WHERE gpu_type IS NULL"
                            " ORDER BY queue_rank DESC, submitted_at DESC, id DESC LIMIT 1",
                            &pos);
    ck_assert_int_eq(pos, 1050);
    ck_assert_msg(looks == 1, "the last job's position took %ld looks at the marks", looks);
    /* the first high-priority a100 job is ahead of the last mark: halved, still exact */
    looks = mark_looks("SELECT aidc_queue_position(id) FROM jobs WHERE gpu_type = 'a100'"
                       " AND priority = 'high' ORDER BY submitted_at, id LIMIT 1",
                       &pos);
    ck_assert_int_eq(pos, 1);
    ck_assert_msg(looks > 1, "halving took %ld looks at the marks", looks);
}
END_TEST

/*
 * A burst the admitter has not caught up with: 400 jobs joined behind the last
 * mark (1001) with no pass since. A submit's answer counts at most 300 jobs past
 * its mark (0044): in a burst of 1,300 such jobs every answer counted them all.
 * A read counts them all still.
 */
START_TEST(a_submit_answer_counts_no_further_than_300_past_its_mark)
{
    pass();
    exec_owner("INSERT INTO jobs (tenant_id, project_id, username, name, command)"
               " SELECT tenant_id, id, 'ann', 'late' || g, '[\"true\"]'"
               " FROM projects, generate_series(1, 400) g");
    expect_positions("aidc_queue_position(q.id)", "q.place", "read with 400 jobs unplaced");
    expect_positions(SUBMIT_LOOKUP, "CASE WHEN q.place <= 1301 THEN q.place END",
                     "submit answers with 400 jobs unplaced");
    ck_assert_int_eq(owner_long("SELECT count(*) FROM jobs q WHERE gpu_type IS NULL"
                                " AND " SUBMIT_LOOKUP " IS NULL"),
                     149);
    /* the last job's answer reads at most the bound's entries of the queue's index, its read
     * every one from the mark on */
    char *last = harness_sql_text(srv.owner_url,
                                  "SELECT id FROM jobs WHERE gpu_type IS NULL"
                                  " ORDER BY queue_rank DESC, submitted_at DESC, id DESC LIMIT 1",
                                  0, NULL);
    ck_assert_ptr_nonnull(last);
    long pos = -1;
    long read =
        index_reads("jobs_queue", true,
                    "SELECT coalesce(" SUBMIT_LOOKUP ", 0) FROM jobs q WHERE id = $1", last, &pos);
    ck_assert_int_eq(pos, 0);
    ck_assert_msg(read > 0 && read <= 310, "the answer's count read %ld entries of jobs_queue",
                  read);
    read = index_reads("jobs_queue", true, "SELECT aidc_queue_position($1)", last, &pos);
    free(last);
    ck_assert_int_eq(pos, 1450);
    ck_assert_msg(read >= 449, "the read's count read %ld entries of jobs_queue", read);
    /* the next pass places them */
    pass_over(QUEUED + 400);
    expect_exact("after the pass");
}
END_TEST

/* The rows every join of an EXPLAIN (ANALYZE, FORMAT JSON) plan node compared and dropped. */
static long join_drops(const json_t *node)
{
    long n = (long)json_integer_value(json_object_get(node, "Rows Removed by Join Filter"));
    const json_t *kids = json_object_get(node, "Plans");
    size_t i;
    const json_t *k;
    json_array_foreach(kids, i, k)
    {
        n += join_drops(k);
    }
    return n;
}

/*
 * The marks' write (sched_marks) as the admitter's role runs it, in the plan a
 * prepared statement settles on, with the arrays of the marks `which` selects:
 * each moved to another job, or (gone) each listed as past its queue's end.
 * Answers the rows its joins compared and dropped.
 */
static long marks_write_drops(const char *which, bool gone)
{
    char *q =
        xasprintf("SELECT array_agg(gpu_type ORDER BY pos)::text,"
                  " array_agg(pos ORDER BY pos)::text, array_agg(queue_rank ORDER BY pos)::text,"
                  " array_agg(extract(epoch FROM submitted_at)::float8 ORDER BY pos)::text,"
                  " array_agg(gen_random_uuid())::text FROM queue_marks WHERE %s",
                  which);
    PGresult *a = harness_sql(srv.owner_url, q, 0, NULL);
    free(q);
    ck_assert_ptr_nonnull(a);
    const char *sql = NULL;
    for (size_t m = 0; db_registry[m] && !sql; m++)
        for (size_t i = 0; db_registry[m][i]; i++)
            if (strcmp(db_registry[m][i]->name, "sched_marks") == 0)
                sql = db_registry[m][i]->sql;
    ck_assert_ptr_nonnull(sql);
    PGconn *c = PQconnectdb(srv.app_url);
    ck_assert_int_eq(PQstatus(c), CONNECTION_OK);
    char *prep = xasprintf("PREPARE w(text[], bigint[], text[], bigint[], smallint[], float8[],"
                           " uuid[]) AS %s",
                           sql);
    const char *steps[] = {"SET plan_cache_mode = force_generic_plan",
                           "SELECT set_config('aidc.roles', 'system', false)", prep};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        PGresult *r = PQexec(c, steps[i]);
        ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK,
                      "%s: %s", steps[i], PQerrorMessage(c));
        PQclear(r);
    }
    free(prep);
    char *x = gone ? xasprintf("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE w('%s', '%s', '{}', '{}',"
                               " '{}', '{}', '{}')",
                               PQgetvalue(a, 0, 0), PQgetvalue(a, 0, 1))
                   : xasprintf("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE w('{}', '{}', '%s', '%s',"
                               " '%s', '%s', '%s')",
                               PQgetvalue(a, 0, 0), PQgetvalue(a, 0, 1), PQgetvalue(a, 0, 2),
                               PQgetvalue(a, 0, 3), PQgetvalue(a, 0, 4));
    PQclear(a);
    PGresult *r = PQexec(c, x);
    free(x);
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQerrorMessage(c));
    json_t *plan = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
    ck_assert_ptr_nonnull(plan);
    long drops = join_drops(json_object_get(json_array_get(plan, 0), "Plan"));
    json_decref(plan);
    PQclear(r);
    PQfinish(c);
    return drops;
}

/*
 * A pass writes each mark by its key (0043). Joined against queue_marks, whose
 * policy the planner takes for a filter that leaves almost nothing, the marks
 * were compared each with every other: 16 ms for 350 marks in a submit burst.
 */
START_TEST(a_pass_writes_each_mark_by_its_key)
{
    /* a queue that drained (its marks gone, the table analysed empty) and filled again:
     * the statistics know pages without rows (before: 999,000 rows compared, 262 ms);
     * every mark names one job, so that a mark not written shows */
    const char *fill = "INSERT INTO queue_marks (gpu_type, pos, queue_rank, submitted_at, job_id)"
                       " SELECT 'h100', 100 * g + 1, 1, now(),"
                       "        '00000000-0000-4000-8000-000000000000'"
                       " FROM generate_series(0, 999) g";
    exec_owner(fill);
    exec_owner("DELETE FROM queue_marks");
    exec_owner("ANALYZE queue_marks");
    exec_owner(fill);
    /* another type's marks, which no write below names */
    exec_owner("INSERT INTO queue_marks (gpu_type, pos, queue_rank, submitted_at, job_id)"
               " SELECT 'h200', 100 * g + 1, 1, now(), '00000000-0000-4000-8000-000000000000'"
               " FROM generate_series(0, 999) g");
    long drops = marks_write_drops("gpu_type = 'h100'", false);
    ck_assert_msg(drops < 5000, "moving 1,000 marks compared %ld rows in joins", drops);
    ck_assert_int_eq(owner_long("SELECT count(DISTINCT job_id) FROM queue_marks"
                                " WHERE gpu_type = 'h100'"),
                     1000);
    ck_assert_int_eq(owner_long("SELECT count(*) FROM queue_marks WHERE gpu_type = 'h100'"), 1000);
    /* a queue shorter by 300 marks: the statement deletes from the type's first gone
     * position on (the marks that go are always its tail: sched/queuemarks.c), and
     * only that type's */
    drops = marks_write_drops("gpu_type = 'h100' AND pos = 70001", true);
    ck_assert_msg(drops < 5000, "dropping 300 marks compared %ld rows in joins", drops);
    ck_assert_int_eq(owner_long("SELECT count(*) FROM queue_marks WHERE gpu_type = 'h100'"), 700);
    ck_assert_int_eq(owner_long("SELECT max(pos) FROM queue_marks WHERE gpu_type = 'h100'"), 69901);
    ck_assert_int_eq(owner_long("SELECT count(*) FROM queue_marks WHERE gpu_type = 'h200'"
                                " AND job_id = '00000000-0000-4000-8000-000000000000'"),
                     1000);
}
END_TEST

static Suite *marks_suite(void)
{
    Suite *s = suite_create("queue_marks");
    TCase *tc = tcase_create("queue_marks");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_pass_that_moves_every_mark_leaves_no_dead_rows);
    tcase_add_test(tc, a_shrinking_queue_loses_its_last_marks);
    tcase_add_test(tc, a_position_counts_right_without_its_nearest_mark);
    tcase_add_test(tc, a_pass_writes_each_mark_by_its_key);
    if (getenv("AIDC_TEST_SUPERUSER_URL")) /* the statistics are flushed by a superuser */
    {
        tcase_add_test(tc, a_job_behind_the_last_mark_looks_at_one_mark);
        tcase_add_test(tc, a_submit_answer_counts_no_further_than_300_past_its_mark);
    } else
        fprintf(stderr, "skipped: a_job_behind_the_last_mark_looks_at_one_mark and"
                        " a_submit_answer_counts_no_further_than_300_past_its_mark"
                        " (AIDC_TEST_SUPERUSER_URL not set)\n");
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(marks_suite());
}
