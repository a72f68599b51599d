/*
 * test_efficiency_rows.c - the job_efficiency rows against a real PostgreSQL,
 * through the statements the syncer and the efficiency worker use: a job's
 * cgroup figures become its efficiencies (CPU time over cpus x nodes x run
 * time, peak over memory_gib x nodes); a GPU read that found nothing keeps
 * what was there, and so does one that could not be made; and job.idle
 * (db_notify_idle, the notifier's minute sweep): a newly idle running job's
 * owner is told once, and again after the job was busy and idled anew.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "db/db.h"
#include "db/efficiency.h"
#include "db/notify.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct aidc_server srv;
static char tenant[37], project[37], user[37], cluster[37], job[37];
static struct db *d;
static const struct db_ctx system_ctx = {.roles = "system"};

static void owner_id(const char *sql, int n, const char *const *p, char *out)
{
    PGresult *r = harness_sql(srv.owner_url, sql, n, p);
    ck_assert_msg(r != NULL, "%s failed", sql);
    snprintf(out, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "effrows");
    harness_seed_project(&srv, tenant, user, project);
    owner_id("INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm') RETURNING id", 0, NULL,
             cluster);
    const char *p[4] = {tenant, project, user, cluster};
    owner_id("INSERT INTO jobs (tenant_id, project_id, user_id, username, name, state,"
             " cluster_id, backend_job_id, gpus, gpu_type, cpus, memory_gib, nodes, command,"
             " started_at) VALUES ($1::uuid, $2::uuid, $3::uuid, 'alice', 'j', 'running',"
             " $4::uuid, '42', 2, 'a100', 4, 8, 2, '[\"true\"]', now() - interval '2 hours')"
             " RETURNING id",
             4, p, job);
    d = db_open(srv.app_url, "test_efficiency_rows");
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(db_ensure(d), 0);
}

static void teardown(void)
{
    db_close(d);
    harness_db_discard(&srv);
}

static json_t *efficiency(void)
{
    const char *p[1] = {job};
    PGresult *r = harness_sql(srv.owner_url, "SELECT aidc_job_efficiency($1::uuid)::text", 1, p);
    ck_assert_ptr_nonnull(r);
    json_t *e = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
    PQclear(r);
    ck_assert_ptr_nonnull(e);
    return e;
}

static double num(const json_t *e, const char *k)
{
    const json_t *v = json_object_get(e, k);
    ck_assert_msg(json_is_number(v), "%s is not a number", k);
    return json_number_value(v);
}

static void gpu(double avg, int idle)
{
    struct db_eff_gpu g = {.util_avg = avg,
                           .util_peak = avg,
                           .mem_peak_gib = NAN,
                           .idle = idle,
                           .idle_util_max = avg,
                           .idle_window_s = 1800};
    ck_assert_int_eq(db_begin(d, &system_ctx, false), 0);
    ck_assert_int_eq(db_eff_gpu(d, job, &g), 0);
    ck_assert_int_eq(db_commit(d), 0);
}

static long owner_count(const char *sql)
{
    const char *p[1] = {job};
    long n = harness_sql_long(srv.owner_url, sql, 1, p);
    ck_assert_int_ge(n, 0);
    return n;
}

/* whether the job is idle and its owner not told yet */
static long unnoticed(void)
{
    return owner_count("SELECT count(*) FROM job_efficiency WHERE job_id = $1::uuid"
                       " AND idle_since IS NOT NULL AND idle_noticed_at IS NULL");
}

/* the notifier's sweep; the job.idle notifications of the job's owner so far */
static long tell(void)
{
    ck_assert_int_eq(db_begin(d, &system_ctx, false), 0);
    ck_assert_int_eq(db_notify_idle(d), 0);
    ck_assert_int_eq(db_commit(d), 0);
    return owner_count("SELECT count(*) FROM notifications WHERE event = 'job.idle'"
                       " AND payload->'job'->>'id' = $1");
}

START_TEST(efficiencies_and_the_idle_notice)
{
    json_t *e = efficiency();
    ck_assert(json_is_null(json_object_get(e, "cpu_efficiency")));
    ck_assert_int_eq((int)json_object_size(e), 6);
    json_decref(e);

    /* 8 cores (4 x 2 nodes) for 100 s, 400 s of CPU: 0.5; 4 GiB of 16 GiB: 0.25 */
    ck_assert_int_eq(db_begin(d, &system_ctx, false), 0);
    ck_assert_int_eq(db_eff_usage(d, job, 400, 100, 4.0 * 1073741824.0), 0);
    ck_assert_int_eq(db_commit(d), 0);
    e = efficiency();
    ck_assert(fabs(num(e, "cpu_efficiency") - 0.5) < 1e-9);
    ck_assert(fabs(num(e, "mem_peak_gib") - 4) < 1e-9);
    ck_assert(fabs(num(e, "mem_efficiency") - 0.25) < 1e-9);
    ck_assert(json_is_null(json_object_get(e, "gpu_util_avg")));
    json_decref(e);

    /* busy, then a read without samples: the figures stay */
    gpu(55, 0);
    gpu(NAN, -1);
    /* and a read that could not be made (Prometheus down) only moves the job back */
    ck_assert_int_eq(db_begin(d, &system_ctx, false), 0);
    ck_assert_int_eq(db_eff_touch(d, job), 0);
    ck_assert_int_eq(db_commit(d), 0);
    e = efficiency();
    ck_assert(fabs(num(e, "gpu_util_avg") - 55) < 1e-9);
    ck_assert(json_is_null(json_object_get(e, "gpu_mem_peak_gib")));
    json_decref(e);
    ck_assert_int_eq(unnoticed(), 0);

    ck_assert_int_eq(tell(), 0);

    /* idle: its owner (who asked for job.idle by webhook) is told once */
    const char *u[1] = {user};
    PGresult *r = harness_sql(srv.owner_url,
                              "INSERT INTO notification_prefs (user_id, events, webhooks)"
                              " VALUES ($1::uuid, '{job.idle}', '[{\"url\":"
                              "\"https://hooks.example.org/a\",\"secret\":"
                              "\"0123456789abcdef\",\"events\":[\"job.idle\"]}]')",
                              1, u);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
    gpu(3, 1);
    ck_assert_int_eq(unnoticed(), 1);
    ck_assert_int_eq(tell(), 1);
    ck_assert_int_eq(unnoticed(), 0);
    gpu(2, 1); /* still idle: not told again */
    ck_assert_int_eq(tell(), 1);
    /* busy again, then idle anew: told again */
    gpu(70, 0);
    ck_assert_int_eq(unnoticed(), 0);
    gpu(4, 1);
    ck_assert_int_eq(unnoticed(), 1);
    ck_assert_int_eq(tell(), 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("efficiency_rows");
    TCase *tc = tcase_create("rows");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, efficiencies_and_the_idle_notice);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
