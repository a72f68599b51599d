/*
 * test_snapshot_order.c - the admission snapshot sees, with a queued job, what
 * committed before the job did. Its parts are read one statement after the
 * other, each at its own moment: read before the queue, a project's quota
 * lowered just before a job's submit came with the job at its old value, and
 * the job was admitted past the new one (seen once in CI, test_slurm_dispatch).
 *
 * The interleaving is made, not hoped for: a transaction holding jobs locked
 * stops the snapshot at its first read of jobs; meanwhile the quota is lowered,
 * then the job is committed.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "db/schedsnap.h"

#include <check.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define APP "test_snapshot_order"

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
    harness_db_create(&srv, "snaporder");
    exec_owner("WITH t AS (INSERT INTO tenants (slug, name) VALUES ('physics', 'Physics')"
               " RETURNING id) INSERT INTO projects (tenant_id, slug, name)"
               " SELECT id, 'p1', 'P1' FROM t");
    exec_owner("INSERT INTO project_quotas (tenant_id, project_id, resource, \"limit\")"
               " SELECT tenant_id, id, 'jobs', 1000 FROM projects WHERE slug = 'p1'");
    conn = db_open(srv.app_url, APP);
    ck_assert_ptr_nonnull(conn);
}

static void teardown(void)
{
    db_close(conn);
    harness_db_discard(&srv);
}

struct pass {
    struct db_queue_cache *cache; /* NULL: a full read without one */
    struct db_snapshot snap;
    int rc;
};

static void *take_snapshot(void *arg)
{
    struct pass *p = arg;
    p->rc = db_begin(conn, &system_ctx, false);
    if (!p->rc)
        p->rc = p->cache ? db_sched_snapshot_cached(conn, p->cache, DB_QUEUE_NEW, &p->snap)
                         : db_sched_snapshot(conn, &p->snap);
    db_rollback(conn);
    return NULL;
}

/* Until a connection waits for its lock on jobs (the snapshot's: nothing else runs). */
static bool waits_for_lock(void)
{
    for (int i = 0; i < 1000; i++) {
        if (harness_sql_long(srv.owner_url,
                             "SELECT count(*) FROM pg_locks"
                             " WHERE NOT granted AND relation = 'jobs'::regclass",
                             0, NULL) == 1)
            return true;
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    return false;
}

static void ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
}

/* The pass of p meets the quota lowered to 0, then the job submitted after it. */
static void a_job_comes_with_what_committed_before(struct pass *p)
{
    PGconn *holder = PQconnectdb(srv.owner_url);
    ck_assert_int_eq(PQstatus(holder), CONNECTION_OK);
    ok(holder, "BEGIN");
    ok(holder, "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE");
    ok(holder, "INSERT INTO jobs (tenant_id, project_id, username, name, command)"
               " SELECT tenant_id, id, 'ann', 'late', '[\"true\"]' FROM projects"
               " WHERE slug = 'p1'");
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, take_snapshot, p), 0);
    ck_assert(waits_for_lock());
    /* the submitter's order: the quota is lowered, then the job committed */
    exec_owner("UPDATE project_quotas SET \"limit\" = 0 WHERE resource = 'jobs'");
    ok(holder, "COMMIT");
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    PQfinish(holder);
    ck_assert_int_eq(p->rc, 0);

    char *id = harness_sql_text(srv.owner_url, "SELECT id FROM jobs WHERE name = 'late'", 0, NULL);
    ck_assert_ptr_nonnull(id);
    bool late = false;
    for (size_t i = 0; i < p->snap.queued.n; i++)
        late |= strcmp(p->snap.queued.v[i].id, id) == 0;
    free(id);
    ck_assert_msg(late, "the job committed during the pass is not in it");
    ck_assert_uint_eq(p->snap.pquotas.n, 1);
    ck_assert_msg(p->snap.pquotas.v[0].limit == 0.0,
                  "the job came with the quota of before its submit: %g",
                  p->snap.pquotas.v[0].limit);
    db_sched_snapshot_free(&p->snap);
}

START_TEST(a_full_read_sees_the_quota_its_job_was_submitted_under)
{
    struct pass p = {0};
    a_job_comes_with_what_committed_before(&p);
}
END_TEST

START_TEST(a_cached_read_sees_the_quota_its_job_was_submitted_under)
{
    struct pass p = {.cache = db_queue_cache_new()};
    /* primed by a first pass: the second reads only what is new */
    ck_assert_int_eq(db_begin(conn, &system_ctx, false), 0);
    struct db_snapshot first;
    ck_assert_int_eq(db_sched_snapshot_cached(conn, p.cache, DB_QUEUE_FULL, &first), 0);
    db_sched_snapshot_free(&first);
    ck_assert_int_eq(db_commit(conn), 0);
    a_job_comes_with_what_committed_before(&p);
    db_queue_cache_free(p.cache);
}
END_TEST

static Suite *order_suite(void)
{
    Suite *s = suite_create("snapshot_order");
    TCase *tc = tcase_create("snapshot_order");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_full_read_sees_the_quota_its_job_was_submitted_under);
    tcase_add_test(tc, a_cached_read_sees_the_quota_its_job_was_submitted_under);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(order_suite());
}
