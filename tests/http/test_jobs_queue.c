/*
 * test_jobs_queue.c - queue positions stay exact in a long queue, where they
 * are counted from the admission worker's marks (0003_queue.sql) rather than
 * from the head: positions in submit answers and in lists, after jobs leave
 * the queue ahead of others (cancel), and when a high or low priority job
 * joins; and jobs joining at the end add a mark, leaving those before as
 * they were written; and a queue grown far past what the statistics of
 * jobs know of - plain jobs or the tasks of arrays - has the admitter
 * analyse jobs.
 *
 * What joins or leaves the queue ahead of the nearest mark shows from the
 * next admission pass on (a pass runs on every submit and cancel), so the
 * checks after a change poll until the positions are exact.
 *
 * The jobs are CPU-only and go to a project whose quota allows no running
 * job, so they all wait (reason project-quota:jobs) and nothing runs.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define T      "qq"
#define N      250 /* 3 marks: positions 1, 101, 201 */
#define WAIT_S 20

static char *ann;
static char *ids[N];

static void setup(void)
{
    harness_setup("jobsqueue", jobs_fast_env);
    jobs_local_cluster("{\"a100\":4}");
    make_tenant(T);
    make_project(T, "held");
    jobs_project_quota(T, "held", "{\"jobs\":{\"limit\":0}}");
    make_user("ann", "ann-password-1", NULL);
    make_member(T, "ann", "member");
    ann = login("ann", "ann-password-1");
    ck_assert_ptr_nonnull(ann);
}

static void teardown(void)
{
    for (int i = 0; i < N; i++)
        free(ids[i]);
    free(ann);
    harness_teardown();
}

static const char *body(const char *name, const char *priority)
{
    return fmt("{\"project\":\"held\",\"name\":\"%s\",\"command\":[\"true\"],\"priority\":\"%s\"}",
               name, priority);
}

/* Submit; the answer's queue_position must be want. Returns the id. */
static char *submit_at(const char *name, const char *priority, long long want)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/" T "/jobs", ann, body(name, priority), &r),
                     201);
    long long pos = json_integer_value(json_object_get(r.json, "queue_position"));
    ck_assert_msg(pos == want, "job %s was told position %lld, want %lld", name, pos, want);
    char *id = strdup(json_string_value(json_object_get(r.json, "id")));
    http_res_free(&r);
    ck_assert_ptr_nonnull(id);
    return id;
}

/* Marks the admission worker has written (read as the owner). */
static int marks(void)
{
    PGresult *r = harness_sql(harness_srv.owner_url, "SELECT count(*) FROM queue_marks", 0, NULL);
    ck_assert_ptr_nonnull(r);
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/*
 * Poll the list (one page of every queued job) until the positions are
 * want(name), for every job, or fail naming the first wrong one.
 */
static void expect_positions(long long (*want)(const char *name), const char *when)
{
    double deadline = jobs_now() + WAIT_S;
    for (;;) {
        struct http_res r;
        ck_assert_int_eq(
            reqj("GET", "/api/v1/tenants/" T "/jobs?state=queued&limit=1000", ann, NULL, &r), 200);
        char wrong[200] = "";
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(r.json, "items"), i, j)
        {
            const char *name = json_string_value(json_object_get(j, "name"));
            long long pos = json_integer_value(json_object_get(j, "queue_position"));
            if (pos != want(name)) {
                snprintf(wrong, sizeof wrong, "job %s at %lld, want %lld", name, pos, want(name));
                break;
            }
        }
        http_res_free(&r);
        if (!wrong[0])
            return;
        ck_assert_msg(jobs_now() < deadline, "%s: after %d s %s", when, WAIT_S, wrong);
        jobs_nap_ms(50);
    }
}

static long long number(const char *name)
{
    return strtoll(name + 1, NULL, 10); /* "j17" -> 17 */
}

static long long in_order(const char *name)
{
    return number(name) + 1;
}

/* j0 and j150 cancelled */
static long long after_cancels(const char *name)
{
    long long k = number(name);
    return k - (k > 150);
}

/* ... and "urgent" (high) ahead of all, "later" (low) behind all */
static long long after_joins(const char *name)
{
    if (strcmp(name, "urgent") == 0)
        return 1;
    if (strcmp(name, "later") == 0)
        return N; /* N - 2 cancelled + urgent + itself */
    return after_cancels(name) + 1;
}

START_TEST(positions_stay_exact_in_a_long_queue)
{
    for (int i = 0; i < N; i++)
        ids[i] = submit_at(fmt("j%d", i), "normal", i + 1);
    /* the worker saw the whole queue and marked it */
    json_t *last = jobs_wait_seen(ann, T, ids[N - 1], WAIT_S);
    ck_assert_str_eq(json_string_value(json_object_get(last, "reason")), "project-quota:jobs");
    json_decref(last);
    double deadline = jobs_now() + WAIT_S;
    while (marks() != 3 && jobs_now() < deadline)
        jobs_nap_ms(50);
    ck_assert_int_eq(marks(), 3);
    expect_positions(in_order, "after the submits");

    /* the head and one job between two marks leave */
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/" T "/jobs/%s/cancel", ids[0]), ann, NULL),
                     202);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/" T "/jobs/%s/cancel", ids[150]), ann, NULL),
                     202);
    expect_positions(after_cancels, "after two cancels");

    /* a high priority job goes ahead of all, a low one behind all */
    char *urgent = submit_at("urgent", "high", 1);
    /* what joins ahead of a mark counts from the next pass on */
    json_decref(jobs_wait_seen(ann, T, urgent, WAIT_S));
    char *later = submit_at("later", "low", N);
    expect_positions(after_joins, "after a high and a low priority job joined");
    json_t *j = jobs_get(ann, T, ids[N - 1]);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "queue_position")), N - 1);
    json_decref(j);
    free(urgent);
    free(later);
}
END_TEST

/* The first value of sql as the owner reads it (free it). */
static char *owner_text(const char *sql)
{
    char *s = harness_sql_text(harness_srv.owner_url, sql, 0, NULL);
    ck_assert_msg(s != NULL, "%s failed", sql);
    return s;
}

/* The marks as written: "pos:xmin pos:xmin ..." (the transaction that wrote each). */
static char *marks_written(void)
{
    return owner_text("SELECT string_agg(pos || ':' || xmin::text, ' ' ORDER BY pos)"
                      " FROM queue_marks");
}

/*
 * Jobs that join at the end of the queue add a mark and leave the others as
 * they were written (a pass used to delete and write every mark again, which
 * left dead rows for each submit's position lookup to step over).
 */
START_TEST(jobs_joining_at_the_end_leave_the_marks_before)
{
    double deadline = jobs_now() + WAIT_S;
    while (marks() != 3 && jobs_now() < deadline)
        jobs_nap_ms(50);
    ck_assert_int_eq(marks(), 3);
    char *before = marks_written();
    char *tail[60];
    for (int i = 0; i < 60; i++) /* N jobs queued: these take N + 1 .. N + 60 */
        tail[i] = submit_at(fmt("tail%d", i), "low", N + 1 + i);
    json_decref(jobs_wait_seen(ann, T, tail[59], WAIT_S));
    while (marks() != 4 && jobs_now() < deadline)
        jobs_nap_ms(50);
    ck_assert_int_eq(marks(), 4);
    char *after = marks_written();
    /* the first three, as they were; one more at 301 */
    ck_assert_msg(strncmp(after, before, strlen(before)) == 0 &&
                      strncmp(after + strlen(before), " 301:", 5) == 0,
                  "marks before %s, after %s", before, after);
    free(before);
    free(after);
    for (int i = 0; i < 60; i++)
        free(tail[i]);
}
END_TEST

/* When jobs was last analysed other than by autovacuum ("" never). */
static char *last_analyze(void)
{
    return owner_text("SELECT coalesce(last_analyze::text, '') FROM pg_stat_user_tables"
                      " WHERE relid = 'jobs'::regclass");
}

/* Run sql as the owner. */
static void owner_sql(const char *sql)
{
    ck_assert_msg(harness_sql_ok(harness_srv.owner_url, sql), "%s failed", sql);
}

/* Wait until jobs was analysed (not by autovacuum) later than was ("" never). */
static char *analysed_after(const char *was, const char *what)
{
    double deadline = jobs_now() + WAIT_S;
    char *now = last_analyze();
    while (strcmp(now, was) == 0 && jobs_now() < deadline) {
        free(now);
        jobs_nap_ms(100);
        now = last_analyze();
    }
    ck_assert_msg(strcmp(now, was) != 0, "jobs not analysed %d s after %s", WAIT_S, what);
    return now;
}

/*
 * Queued jobs far past what the statistics of jobs can know of have the
 * admitter analyse jobs (0035_jobs_follow_queue.sql): 3,000 plain jobs (the
 * pass's queue grew tenfold), then two arrays of 7,500 held tasks (each one
 * row of a pass: asked at the next few timed passes). The few hundred queued
 * before had none. Autovacuum, whose analyze would make the admitter's
 * needless, is off from there on (it may have analysed the few hundred).
 */
START_TEST(a_queue_past_the_statistics_has_jobs_analysed)
{
    char *before = last_analyze();
    ck_assert_msg(before[0] == '\0', "jobs analysed with the first few hundred jobs, at %s",
                  before);
    owner_sql("ALTER TABLE jobs SET (autovacuum_enabled = false)");
    owner_sql("INSERT INTO jobs (tenant_id, project_id, username, name, command, priority)"
              " SELECT p.tenant_id, p.id, 'ann', 'bulk', '[\"true\"]', 'low'"
              "   FROM projects p, generate_series(1, 3000) WHERE p.slug = 'held'");
    char *plain = analysed_after(before, "3,000 jobs joined the queue");
    owner_sql("WITH a AS (INSERT INTO jobs (tenant_id, project_id, username, name, command,"
              "             array_count, array_max_parallel, reason)"
              "           SELECT p.tenant_id, p.id, 'ann', 'arr', '[\"true\"]', 7500, 1, 'array'"
              "             FROM projects p, generate_series(1, 2) WHERE p.slug = 'held'"
              "           RETURNING id, tenant_id, project_id)"
              " INSERT INTO jobs (tenant_id, project_id, username, name, command, array_parent,"
              "   array_index, reason)"
              " SELECT a.tenant_id, a.project_id, 'ann', 'arr', '[\"true\"]', a.id, i, 'submitted'"
              "   FROM a, generate_series(0, 7499) i");
    char *arrays = analysed_after(plain, "two arrays of 7,500 tasks joined the queue");
    free(before);
    free(plain);
    free(arrays);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("jobs_queue");
    TCase *tc = tcase_create("jobs_queue");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, positions_stay_exact_in_a_long_queue);
    tcase_add_test(tc, jobs_joining_at_the_end_leave_the_marks_before);
    tcase_add_test(tc, a_queue_past_the_statistics_has_jobs_analysed);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
