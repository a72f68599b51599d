/*
 * test_sched_guards.c - what keeps the admitter right when its kept queue is
 * a pass behind (db/schedsnap.h, DB_QUEUE_NEW): a job cancelled since the
 * pass read it preempts nobody, and the changes of a queued job that only a
 * full look would see announce themselves - a dependency's peer handed to
 * Slurm, an interactive session's time limit extended while it waits.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/appsessions.h"
#include "db/db.h"
#include "db/sched.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct aidc_server srv;
static const struct db_ctx system_ctx = {.roles = "system"};
static struct db *conn;

static void exec_owner(const char *sql)
{
    ck_assert_msg(harness_sql_ok(srv.owner_url, sql), "%s failed", sql);
}

/* The id of the job named name (free it). */
static char *job_id(const char *name)
{
    const char *p[1] = {name};
    PGresult *r = harness_sql(srv.owner_url, "SELECT id FROM jobs WHERE name = $1", 1, p);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(PQntuples(r), 1);
    char *id = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return id;
}

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "schedguards");
    exec_owner(
        "WITH t AS (INSERT INTO tenants (slug, name) VALUES ('physics', 'Physics')"
        " RETURNING id),"
        " p AS (INSERT INTO projects (tenant_id, slug, name) SELECT id, 'p1', 'P1' FROM t"
        "       RETURNING tenant_id, id),"
        " c AS (INSERT INTO clusters (name, kind, endpoint)"
        "       VALUES ('hpc', 'slurm', 'http://127.0.0.1:1') RETURNING id)"
        /* a borrowed job running; a job queued that may ask for its GPUs */
        " INSERT INTO jobs (tenant_id, project_id, username, name, command, state,"
        "   cluster_id, preemptible, gpus, gpu_type)"
        " SELECT p.tenant_id, p.id, 'ann', x.name, '[\"true\"]', x.state,"
        "        CASE WHEN x.state = 'running' THEN c.id END, x.state = 'running', 1,"
        "        'a100' FROM p, c, (VALUES ('victim', 'running'), ('asker', 'queued')) x(name,"
        " state)");
    conn = db_open(srv.app_url, "test_sched_guards");
    ck_assert_ptr_nonnull(conn);
}

static void teardown(void)
{
    db_close(conn);
    harness_db_discard(&srv);
}

/* Preempt victim for asker in a transaction of the admitter's; the count asked to stop. */
static long preempt(void)
{
    char *v = job_id("victim"), *a = job_id("asker"), ids[48], fors[48];
    snprintf(ids, sizeof ids, "{%s}", v);
    snprintf(fors, sizeof fors, "{%s}", a);
    ck_assert_int_eq(db_begin(conn, &system_ctx, false), 0);
    long n = -1;
    ck_assert_int_eq(db_sched_preempt(conn, ids, fors, 30, &n), 0);
    ck_assert_int_eq(db_commit(conn), 0);
    free(v);
    free(a);
    return n;
}

/* What the victim was asked (its stop_requested; "" for nothing). */
static bool victim_asked(const char *what)
{
    const char *p[1] = {what};
    return harness_sql_long(srv.owner_url,
                            "SELECT count(*) FROM jobs WHERE name = 'victim'"
                            " AND coalesce(stop_requested, '') = $1",
                            1, p) == 1;
}

START_TEST(a_job_cancelled_since_the_pass_preempts_nobody)
{
    exec_owner("UPDATE jobs SET state = 'cancelled' WHERE name = 'asker'");
    ck_assert_int_eq(preempt(), 0);
    ck_assert(victim_asked(""));
    /* a task whose array was cancelled: the same */
    exec_owner("WITH a AS (INSERT INTO jobs (tenant_id, project_id, username, name, command,"
               "             state, array_count, array_max_parallel)"
               "           SELECT tenant_id, project_id, 'ann', 'arr', '[\"true\"]', 'cancelled',"
               "             2, 2 FROM jobs WHERE name = 'asker' RETURNING id)"
               " UPDATE jobs SET state = 'queued', array_parent = a.id, array_index = 0 FROM a"
               "  WHERE name = 'asker'");
    ck_assert_int_eq(preempt(), 0);
    /* still queued, its array too: the victim is asked to stop */
    exec_owner("UPDATE jobs SET state = 'queued' WHERE name = 'arr'");
    ck_assert_int_eq(preempt(), 1);
    ck_assert(victim_asked("preempt"));
}
END_TEST

/* Every payload on aidc_jobs that reached listener, joined by commas. */
static void payloads(PGconn *listener, char *out, size_t size)
{
    out[0] = '\0';
    PQclear(PQexec(listener, "SELECT 1")); /* brings in what was sent before */
    PGnotify *n;
    while ((n = PQnotifies(listener)) != NULL) {
        if (strcmp(n->relname, "aidc_jobs") == 0)
            snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? "," : "", n->extra);
        PQfreemem(n);
    }
}

START_TEST(a_peer_handed_to_slurm_announces_itself)
{
    PGconn *l = PQconnectdb(srv.owner_url);
    ck_assert_int_eq(PQstatus(l), CONNECTION_OK);
    PQclear(PQexec(l, "LISTEN aidc_jobs"));
    exec_owner("UPDATE jobs SET state = 'admitted', cluster_id = (SELECT id FROM clusters)"
               " WHERE name = 'victim'");
    char *v = job_id("victim"), got[256];
    /* nobody waits for it: a quiet hand-over */
    ck_assert_int_eq(db_begin(conn, &system_ctx, false), 0);
    ck_assert_int_eq(db_job_delivered(conn, v, "4242"), 0);
    ck_assert_int_eq(db_commit(conn), 0);
    payloads(l, got, sizeof got);
    ck_assert_str_eq(got, "");
    /* the asker waits for it: the admitter hears of it */
    exec_owner("UPDATE jobs SET state = 'admitted', backend_job_id = NULL WHERE name = 'victim'");
    exec_owner("INSERT INTO job_dependencies (job_id, tenant_id, peer_id, condition, position)"
               " SELECT a.id, a.tenant_id, v.id, 'succeeded', 0 FROM jobs a, jobs v"
               " WHERE a.name = 'asker' AND v.name = 'victim'");
    payloads(l, got, sizeof got); /* the dependency's own */
    ck_assert_int_eq(db_begin(conn, &system_ctx, false), 0);
    ck_assert_int_eq(db_job_delivered(conn, v, "4243"), 0);
    ck_assert_int_eq(db_commit(conn), 0);
    payloads(l, got, sizeof got);
    ck_assert_str_eq(got, "delivered");
    free(v);
    PQfinish(l);
}
END_TEST

START_TEST(a_waiting_session_extended_announces_itself)
{
    exec_owner("INSERT INTO app_sessions (tenant_id, job_id, app, idle_minutes, secret)"
               " SELECT tenant_id, id, 'jupyter', 60, repeat('ab', 24) FROM jobs"
               " WHERE name = 'asker'");
    PGresult *r = harness_sql(srv.owner_url, "SELECT id, tenant_id FROM app_sessions", 0, NULL);
    ck_assert_ptr_nonnull(r);
    char *sid = strdup(PQgetvalue(r, 0, 0)), *tid = strdup(PQgetvalue(r, 0, 1));
    PQclear(r);
    PGconn *l = PQconnectdb(srv.owner_url);
    ck_assert_int_eq(PQstatus(l), CONNECTION_OK);
    PQclear(PQexec(l, "LISTEN aidc_jobs"));
    char got[256];
    const struct db_ctx ctx = {.roles = "system"};
    int limit = 0;
    ck_assert_int_eq(db_begin(conn, &ctx, false), 0);
    ck_assert_int_eq(db_appsession_extend(conn, tid, sid, 30, 100000, &limit), 0);
    ck_assert_int_eq(db_commit(conn), 0);
    payloads(l, got, sizeof got);
    ck_assert_str_eq(got, "extended");
    /* running: nothing the admitter decides changes */
    exec_owner("UPDATE jobs SET state = 'running' WHERE name = 'asker'");
    ck_assert_int_eq(db_begin(conn, &ctx, false), 0);
    ck_assert_int_eq(db_appsession_extend(conn, tid, sid, 30, 100000, &limit), 0);
    ck_assert_int_eq(db_commit(conn), 0);
    payloads(l, got, sizeof got);
    ck_assert_str_eq(got, "");
    free(sid);
    free(tid);
    PQfinish(l);
}
END_TEST

static Suite *guards_suite(void)
{
    Suite *s = suite_create("sched_guards");
    TCase *tc = tcase_create("sched_guards");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_job_cancelled_since_the_pass_preempts_nobody);
    tcase_add_test(tc, a_peer_handed_to_slurm_announces_itself);
    tcase_add_test(tc, a_waiting_session_extended_announces_itself);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(guards_suite());
}
