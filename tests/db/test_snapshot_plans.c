/*
 * test_snapshot_plans.c - the admission snapshot on a site with many projects
 * and few quotas: every pass read project_quotas joined with projects, and as
 * project_quotas (a few rows) is rarely analysed the planner hashed every
 * project for it - 13 ms a pass with 20,000 projects, for one quota
 * (tests/bench/jobs.sh). The statements that name a project's slug reach it
 * by its key: their plans scan no projects, and the snapshot still carries
 * each quota's and allocation's slug.
 *
 * Arrays held by a dependency: every pass read each of their tasks and asked
 * each for its parent's dependencies - 20,000 held tasks took 200 ms a pass
 * (42,000-110,000 buffers), a whole CPU with the tests' 200 ms pass interval,
 * beside which a submit of 10,000 more tasks outlived the client's minute
 * (CI, test_job_arrays). Now a held array is one row of the pass.
 *
 * A pass that only submits woke reads the jobs inserted since the last pass
 * (DB_QUEUE_NEW): by their index, not over the queue - also in the generic
 * plan a prepared statement comes to after five runs.
 *
 * aidcd's sessions keep the plan made at a statement's first run until the
 * statistics of its tables change. Made on a near-empty jobs, the admitter's
 * wait-reason update hashed every job of the table for each pass; told of a
 * queue larger than the statistics know, the database analyses jobs and the
 * plans are made again (0035_jobs_follow_queue.sql).
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "db/schedsnap.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROJECTS "3000"

static struct aidc_server srv;
static const struct db_ctx system_ctx = {.roles = "system"};

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "snapplans");
    PGresult *r = harness_sql(
        srv.owner_url,
        "WITH t AS (INSERT INTO tenants (slug, name) VALUES ('physics', 'Physics') RETURNING id),"
        " p AS (INSERT INTO projects (tenant_id, slug, name)"
        "        SELECT t.id, 'p' || g, 'P' || g FROM t, generate_series(1, " PROJECTS ") g"
        "        RETURNING id, tenant_id, slug),"
        " q AS (INSERT INTO project_quotas (tenant_id, project_id, resource, \"limit\")"
        "        SELECT tenant_id, id, 'jobs', 7 FROM p WHERE slug = 'p42')"
        " INSERT INTO allocation_requests (tenant_id, project_id, requested_by_name, state,"
        "   starts_on, ends_on, justification, approved_gpu_hours)"
        " SELECT tenant_id, id, 'alice', 'approved', current_date - 1, current_date + 30,"
        "        'thesis', 100 FROM p WHERE slug = 'p77'",
        0, NULL);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
}

static void teardown(void)
{
    harness_db_discard(&srv);
}

static const struct db_stmt *stmt_named(const char *name)
{
    for (size_t m = 0; db_registry[m]; m++)
        for (size_t i = 0; db_registry[m][i]; i++)
            if (strcmp(db_registry[m][i]->name, name) == 0)
                return db_registry[m][i];
    ck_abort_msg("no statement %s", name);
    return NULL;
}

/* The plan of a statement without parameters as role url sees it, as text (free it). */
static char *plan_of(const char *url, const char *name)
{
    char sql[8192];
    int n = snprintf(sql, sizeof sql, "EXPLAIN %s", stmt_named(name)->sql);
    ck_assert(n > 0 && (size_t)n < sizeof sql);
    PGresult *r = harness_sql(url, sql, 0, NULL);
    ck_assert_ptr_nonnull(r);
    size_t len = 1;
    for (int i = 0; i < PQntuples(r); i++)
        len += strlen(PQgetvalue(r, i, 0)) + 1;
    char *plan = calloc(1, len);
    ck_assert_ptr_nonnull(plan);
    for (int i = 0; i < PQntuples(r); i++) {
        strcat(plan, PQgetvalue(r, i, 0));
        strcat(plan, "\n");
    }
    PQclear(r);
    return plan;
}

/* The admitter's snapshot, as the admitter's role reads it (its strings are its own). */
static void read_snapshot(struct db_snapshot *s)
{
    struct db *d = db_open(srv.app_url, "test_snapshot_plans");
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(db_begin(d, &system_ctx, false), 0);
    ck_assert_int_eq(db_sched_snapshot(d, s), 0);
    ck_assert_int_eq(db_commit(d), 0);
    db_close(d);
}

START_TEST(the_snapshot_reaches_projects_by_their_key)
{
    /* as the owner (no row-level security: the estimates alone decide) and as the
     * admitter's role: each project by its key, none scanned */
    const char *names[] = {"snap_pquotas", "snap_allocs"};
    const char *urls[] = {srv.owner_url, srv.app_url};
    for (size_t u = 0; u < sizeof urls / sizeof urls[0]; u++)
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            char *plan = plan_of(urls[u], names[i]);
            ck_assert_msg(strstr(plan, "Seq Scan on projects") == NULL &&
                              strstr(plan, "projects_pkey") != NULL,
                          "%s (as %s) does not reach projects by key:\n%s", names[i],
                          u ? "aidc_app" : "the owner", plan);
            free(plan);
        }
    struct db_snapshot s;
    read_snapshot(&s);
    ck_assert_uint_eq(s.pquotas.n, 1);
    ck_assert_str_eq(s.pquotas.v[0].slug, "p42");
    ck_assert_str_eq(s.pquotas.v[0].resource, "jobs");
    ck_assert_uint_eq(s.allocs.n, 1);
    ck_assert_str_eq(s.allocs.v[0].slug, "p77");
    ck_assert(s.allocs.v[0].active);
    db_sched_snapshot_free(&s);
}
END_TEST

/* The buffers the statement of an EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) touched. */
static long plan_buffers(const PGresult *r)
{
    json_t *plan = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
    ck_assert_ptr_nonnull(plan);
    json_t *top = json_object_get(json_array_get(plan, 0), "Plan");
    long b = (long)(json_integer_value(json_object_get(top, "Shared Hit Blocks")) +
                    json_integer_value(json_object_get(top, "Shared Read Blocks")));
    json_decref(plan);
    return b;
}

/* The buffers one statement without parameters touched, as the owner sees it. */
static long buffers_of(const char *sql)
{
    char q[8192];
    int n = snprintf(q, sizeof q, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) %s", sql);
    ck_assert(n > 0 && (size_t)n < sizeof q);
    PGresult *r = harness_sql(srv.owner_url, q, 0, NULL);
    ck_assert_ptr_nonnull(r);
    long b = plan_buffers(r);
    PQclear(r);
    return b;
}

static void exec_owner(const char *sql)
{
    ck_assert_msg(harness_sql_ok(srv.owner_url, sql), "%s failed", sql);
}

static size_t queued_now(void)
{
    struct db_snapshot s;
    read_snapshot(&s);
    size_t n = s.queued.n;
    db_sched_snapshot_free(&s);
    return n;
}

START_TEST(a_held_array_is_one_row_of_the_pass)
{
    /* a running gate; two arrays of 10,000 tasks wait for it to succeed */
    exec_owner(
        "WITH p AS (SELECT tenant_id, id FROM projects WHERE slug = 'p1'),"
        " g AS (INSERT INTO jobs (tenant_id, project_id, username, name, command, state)"
        "        SELECT tenant_id, id, 'ann', 'gate', '[\"true\"]', 'running' FROM p"
        "        RETURNING id, tenant_id, project_id),"
        " a AS (INSERT INTO jobs (tenant_id, project_id, username, name, command, array_count,"
        "         array_max_parallel, reason)"
        "        SELECT g.tenant_id, g.project_id, 'ann', 'h', '[\"true\"]', 10000, 10000,"
        "               'array' FROM g, generate_series(1, 2)"
        "        RETURNING id, tenant_id, project_id),"
        " t AS (INSERT INTO jobs (tenant_id, project_id, username, name, command, array_parent,"
        "         array_index, reason)"
        "        SELECT a.tenant_id, a.project_id, 'ann', 'h', '[\"true\"]', a.id, i,"
        "               'submitted' FROM a, generate_series(0, 9999) i)"
        " INSERT INTO job_dependencies (job_id, tenant_id, peer_id, condition, position)"
        " SELECT a.id, a.tenant_id, g.id, 'succeeded', 0 FROM a, g");
    exec_owner("ANALYZE jobs");
    ck_assert_uint_eq(queued_now(), 0);
    /* before: 42,863 buffers (a warm cache) */
    long b = buffers_of(stmt_named("snap_queued")->sql);
    ck_assert_msg(b < 500, "a pass over two held arrays touched %ld buffers", b);
    /* the gate succeeds: every task may be admitted */
    exec_owner("UPDATE jobs SET state = 'succeeded' WHERE name = 'gate'");
    ck_assert_uint_eq(queued_now(), 20000);
    /* max_parallel 2 with one running: one more of the first array */
    exec_owner("WITH a AS (UPDATE jobs SET array_max_parallel = 2"
               "            WHERE id = (SELECT min(id::text)::uuid FROM jobs"
               "                         WHERE array_count IS NOT NULL) RETURNING id)"
               " UPDATE jobs SET state = 'running' FROM a"
               "  WHERE array_parent = a.id AND array_index = 0");
    ck_assert_uint_eq(queued_now(), 10001);
}
END_TEST

/* The buffers of the DB_QUEUE_NEW read from mark, as a prepared statement of the owner's
 * in the plan mode given ("force_generic_plan", "force_custom_plan"). */
static long new_read_buffers(const char *mark, const char *mode)
{
    PGconn *c = PQconnectdb(srv.owner_url);
    ck_assert_int_eq(PQstatus(c), CONNECTION_OK);
    char q[256];
    snprintf(q, sizeof q, "SET plan_cache_mode = %s", mode);
    PGresult *r = PQexec(c, q);
    ck_assert_int_eq(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    r = PQprepare(c, "new", stmt_named("snap_queued_new")->sql, 0, NULL);
    ck_assert_int_eq(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    snprintf(q, sizeof q, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE new('%s', '{}')", mark);
    r = PQexec(c, q);
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    long b = plan_buffers(r);
    PQclear(r);
    PQfinish(c);
    return b;
}

START_TEST(a_pass_after_submits_reads_only_them)
{
    /* 20,000 queued jobs and a released array of 10,000 tasks: the queue */
    exec_owner("INSERT INTO jobs (tenant_id, project_id, username, name, command)"
               " SELECT tenant_id, id, 'ann', 'old', '[\"true\"]' FROM projects,"
               " generate_series(1, 20000) WHERE slug = 'p1'");
    exec_owner(
        "WITH p AS (SELECT tenant_id, id FROM projects WHERE slug = 'p1'),"
        " a AS (INSERT INTO jobs (tenant_id, project_id, username, name, command, array_count,"
        "         array_max_parallel, reason)"
        "        SELECT tenant_id, id, 'ann', 'arr', '[\"true\"]', 10000, 10000, 'array' FROM p"
        "        RETURNING id, tenant_id, project_id)"
        " INSERT INTO jobs (tenant_id, project_id, username, name, command, array_parent,"
        "   array_index, reason)"
        " SELECT a.tenant_id, a.project_id, 'ann', 'arr', '[\"true\"]', a.id, i, 'submitted'"
        " FROM a, generate_series(0, 9999) i");
    exec_owner("ANALYZE jobs");
    /* a pass's mark after them (a transaction of the tests beside this one could
     * hold the snapshot's back: here the read, not the mark, is tested) */
    PGresult *r = harness_sql(srv.owner_url, "SELECT pg_current_xact_id()::text", 0, NULL);
    ck_assert_ptr_nonnull(r);
    char mark[32];
    snprintf(mark, sizeof mark, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    /* then a burst's few submits */
    exec_owner("INSERT INTO jobs (tenant_id, project_id, username, name, command)"
               " SELECT tenant_id, id, 'ann', 'new', '[\"true\"]' FROM projects,"
               " generate_series(1, 20) WHERE slug = 'p1'");
    ck_assert_uint_eq(queued_now(), 30020); /* the array as its tasks */
    /* the whole queue: thousands of buffers; the new ones: a few dozen */
    long whole = buffers_of(stmt_named("snap_queued")->sql);
    long custom = new_read_buffers(mark, "force_custom_plan");
    long generic = new_read_buffers(mark, "force_generic_plan");
    ck_assert_msg(whole > 1000, "the whole queue touched only %ld buffers", whole);
    ck_assert_msg(custom < 100 && generic < 100,
                  "reading 20 new jobs touched %ld buffers (custom plan), %ld (generic)", custom,
                  generic);
}
END_TEST

/* The buffers the join under the top node of an EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) touched. */
static long join_buffers(const PGresult *r)
{
    json_t *plan = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
    ck_assert_ptr_nonnull(plan);
    json_t *top = json_object_get(json_array_get(plan, 0), "Plan");
    json_t *join = json_array_get(json_object_get(top, "Plans"), 0);
    ck_assert_ptr_nonnull(join);
    long b = (long)(json_integer_value(json_object_get(join, "Shared Hit Blocks")) +
                    json_integer_value(json_object_get(join, "Shared Read Blocks")));
    json_decref(plan);
    return b;
}

/* The buffers sched_waits's join touches for 40 queued jobs on c, which keeps its plan. */
static long waits_buffers(PGconn *c)
{
    PGresult *r = PQexec(c, "SELECT coalesce(array_agg(id), '{}')::text FROM (SELECT id FROM jobs"
                            " WHERE state = 'queued' LIMIT 40) s");
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    char q[4096];
    int n = snprintf(q, sizeof q,
                     "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE waits('%s',"
                     " array_fill('x'::text, ARRAY[40]), array_fill(1e9::float8, ARRAY[40]))",
                     PQgetvalue(r, 0, 0));
    ck_assert(n > 0 && (size_t)n < sizeof q);
    PQclear(r);
    r = PQexec(c, q);
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQerrorMessage(c));
    long b = join_buffers(r);
    PQclear(r);
    return b;
}

/* aidc_jobs_follow_queue as the application role: "t" analysed, "f" not needed. */
static char follow(void)
{
    PGresult *r = harness_sql(srv.app_url, "SELECT aidc_jobs_follow_queue()", 0, NULL);
    ck_assert_ptr_nonnull(r);
    char c = PQgetisnull(r, 0, 0) ? 'n' : PQgetvalue(r, 0, 0)[0];
    PQclear(r);
    return c;
}

/* N queued jobs more */
#define BURST(N)                                                                                   \
    "INSERT INTO jobs (tenant_id, project_id, username, name, command)"                            \
    " SELECT tenant_id, id, 'ann', 'burst', '[\"true\"]' FROM projects,"                           \
    " generate_series(1, " #N ") WHERE slug = 'p1'"

START_TEST(a_queue_past_the_statistics_has_jobs_analysed)
{
    /* only the function analyses here; the admitter's session (as aidcd sets it up)
     * plans the update on an empty jobs */
    exec_owner("ALTER TABLE jobs SET (autovacuum_enabled = false)");
    exec_owner("ANALYZE jobs");
    PGconn *c = PQconnectdb(srv.app_url);
    ck_assert_int_eq(PQstatus(c), CONNECTION_OK);
    PGresult *r = PQexec(c, "SELECT set_config('aidc.roles', 'system', false),"
                            " set_config('aidc.all', 'admin', false);"
                            " SET plan_cache_mode = force_generic_plan");
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK, "%s", PQerrorMessage(c));
    PQclear(r);
    r = PQprepare(c, "waits", stmt_named("sched_waits")->sql, 0, NULL);
    ck_assert_int_eq(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    ck_assert_int_le(waits_buffers(c), 10);
    /* 999 queued jobs: too few to matter */
    exec_owner(BURST(999));
    ck_assert_int_eq(follow(), 'f');
    /* a burst: 20,000 queued jobs; the plan made before walks every one */
    exec_owner(BURST(19001));
    long before = waits_buffers(c);
    ck_assert_msg(before > 500, "the plan made on an empty table touched only %ld buffers", before);
    ck_assert_int_eq(follow(), 't');
    long after = waits_buffers(c);
    ck_assert_msg(after < 250, "after the analysis 40 jobs took %ld buffers (before: %ld)", after,
                  before);
    /* the statistics know them now: asked again, it does nothing */
    ck_assert_int_eq(follow(), 'f');
    PQfinish(c);
}
END_TEST

static Suite *plans_suite(void)
{
    Suite *s = suite_create("snapshot_plans");
    TCase *tc = tcase_create("snapshot_plans");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, the_snapshot_reaches_projects_by_their_key);
    tcase_add_test(tc, a_held_array_is_one_row_of_the_pass);
    tcase_add_test(tc, a_pass_after_submits_reads_only_them);
    tcase_add_test(tc, a_queue_past_the_statistics_has_jobs_analysed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(plans_suite());
}
