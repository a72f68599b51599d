/*
 * test_metering.c - metering against a real PostgreSQL, through the same
 * statements the syncer (db_job_transition) and the metering worker
 * (meter_run) use, with backend times chosen by the test:
 *
 * - runs across hour, day and month boundaries cut into hour intervals that
 *   add up exactly, in UTC although the session's time zone is Asia/Kolkata
 *   (+05:30, where a local hour is not a UTC hour);
 * - a run still open at month end is cut at the hours its cluster reported
 *   it running past, not further; a cluster that reports an end before what
 *   was cut cannot make an interval outlive its run;
 * - after random start / preempt / end sequences with metering rounds in
 *   between, every run's intervals add up to its run time × resources, each
 *   lies in one hour, and the monthly budget table agrees with them.
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "billing/meter.h"
#include "db/db.h"
#include "db/sched.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct aidc_server srv;
static char tenant[37], project[37], user[37], cluster[37];
static struct db *d;
static const struct db_ctx system_ctx = {.roles = "system"};

static PGresult *owner(const char *sql, int n, const char *const *p)
{
    PGresult *r = harness_sql(srv.owner_url, sql, n, p);
    ck_assert_msg(r != NULL, "%s failed", sql);
    return r;
}

static void owner_exec(const char *sql, int n, const char *const *p)
{
    PQclear(owner(sql, n, p));
}

static void owner_id(const char *sql, char *out)
{
    PGresult *r = owner(sql, 0, NULL);
    snprintf(out, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static double owner_num(const char *sql, int n, const char *const *p)
{
    PGresult *r = owner(sql, n, p);
    double v = PQgetisnull(r, 0, 0) ? 0 : strtod(PQgetvalue(r, 0, 0), NULL);
    PQclear(r);
    return v;
}

static void setup(void)
{
    harness_require_pg();
    /* the session's zone must not matter: a half-hour offset shows it if it does */
    setenv("PGTZ", "Asia/Kolkata", 1);
    harness_db_create(&srv, "meter");
    owner_id("INSERT INTO tenants (slug, name) VALUES ('physics', 'Physics') RETURNING id", tenant);
    owner_id("INSERT INTO users (username) VALUES ('alice') RETURNING id", user);
    const char *t[1] = {tenant};
    PGresult *r = owner("INSERT INTO projects (tenant_id, slug, name) VALUES ($1::uuid, 'lhc',"
                        " 'LHC') RETURNING id",
                        1, t);
    snprintf(project, sizeof project, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    /* a quarter-GPU slice type, so fractions are exact in the sums */
    owner_id("INSERT INTO clusters (name, kind, options) VALUES ('c1', 'slurm',"
             " '{\"gpu_fractions\": {\"a100-q\": 0.25}}') RETURNING id",
             cluster);
    d = db_open(srv.app_url, "test_metering");
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(db_ensure(d), 0);
}

static void teardown(void)
{
    db_close(d);
    harness_db_discard(&srv);
}

/* A job on c1, pending in the backend. */
static void new_job(char id[37], int gpus, const char *gpu_type, int nodes)
{
    char g[16], n[16];
    snprintf(g, sizeof g, "%d", gpus);
    snprintf(n, sizeof n, "%d", nodes);
    const char *p[7] = {tenant, project, user, cluster, g, gpus ? gpu_type : NULL, n};
    PGresult *r = owner("INSERT INTO jobs (tenant_id, project_id, user_id, username, name, state,"
                        " cluster_id, backend_job_id, gpus, gpu_type, cpus, memory_gib, nodes,"
                        " command) VALUES ($1::uuid, $2::uuid, $3::uuid, 'alice', 'j', 'pending',"
                        " $4::uuid, 'b', $5::int, $6, 4, 16, $7::int, '[\"true\"]') RETURNING id",
                        7, p);
    snprintf(id, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static time_t at(const char *rfc3339)
{
    struct tm tm = {0};
    ck_assert_ptr_nonnull(strptime(rfc3339, "%Y-%m-%dT%H:%M:%SZ", &tm));
    return timegm(&tm);
}

/* What the syncer does when the backend reports: one transition, committed. */
static void transition(const char *job, const char *from, const char *to, time_t start,
                       time_t end)
{
    struct db_transition t = {.job_id = job, .from = from, .to = to, .reason = "test",
                              .started_at = (double)start, .finished_at = (double)end,
                              .exit_code = -1};
    bool changed = false;
    ck_assert_int_eq(db_begin(d, &system_ctx, false), 0);
    ck_assert_int_eq(db_job_transition(d, &t, &changed), 0);
    ck_assert_int_eq(db_commit(d), 0);
    ck_assert_msg(changed, "job %s did not move %s -> %s", job, from, to);
}

/* The cluster answered for all its jobs at time t. */
static void seen(time_t t)
{
    char ts[32];
    snprintf(ts, sizeof ts, "%lld", (long long)t);
    const char *p[2] = {cluster, ts};
    owner_exec("UPDATE clusters SET jobs_seen_at = to_timestamp($2::float8) WHERE id = $1::uuid",
               2, p);
}

static void meter_all(void)
{
    int n, rounds = 0;
    while ((n = meter_run(d, 7)) > 0) /* small batches: the loop is exercised too */
        ck_assert_int_lt(++rounds, 10000);
    ck_assert_int_eq(n, 0);
}

/* GPU-seconds of job's intervals within [from, to) by their period. */
static double gpu_seconds(const char *job, const char *period)
{
    const char *p[2] = {job, period};
    return owner_num("SELECT sum(gpus * extract(epoch FROM ended_at - started_at))"
                     " FROM usage_intervals WHERE job_id = $1::uuid AND period = $2::date",
                     2, p);
}

static long intervals_of(const char *job)
{
    const char *p[1] = {job};
    return (long)owner_num("SELECT count(*) FROM usage_intervals WHERE job_id = $1::uuid", 1, p);
}

START_TEST(session_zone_is_not_utc)
{
    PGresult *r = owner("SHOW TimeZone", 0, NULL);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "Asia/Kolkata");
    PQclear(r);
}
END_TEST

START_TEST(a_run_across_hour_day_and_month_boundaries_sums_exactly)
{
    char job[37];
    new_job(job, 2, "a100", 1);
    transition(job, "pending", "running", at("2026-10-31T23:30:00Z"), 0);
    transition(job, "running", "succeeded", 0, at("2026-11-01T01:15:30Z"));
    meter_all();
    ck_assert_int_eq(intervals_of(job), 3);
    ck_assert_double_eq_tol(gpu_seconds(job, "2026-10-01"), 2 * 1800.0, 1e-6);
    ck_assert_double_eq_tol(gpu_seconds(job, "2026-11-01"), 2 * 4530.0, 1e-6);
    /* cut at UTC hours, not at Kolkata's (which fall on :30 UTC) */
    const char *p[1] = {job};
    ck_assert_int_eq((long)owner_num("SELECT count(*) FROM usage_intervals WHERE job_id = $1::uuid"
                                     " AND extract(minute FROM started_at AT TIME ZONE 'UTC') = 0",
                                     1, p),
                     2);
    /* cpu and memory ride along: 4 cores, 16 GiB for the run's 6330 s */
    ck_assert_double_eq_tol(owner_num("SELECT sum(cpus * extract(epoch FROM ended_at - started_at))"
                                      " FROM usage_intervals WHERE job_id = $1::uuid", 1, p),
                            4 * 6330.0, 1e-6);
    /* the monthly budget table holds the same seconds */
    const char *q[1] = {tenant};
    ck_assert_double_eq_tol(owner_num("SELECT gpu_seconds FROM usage_monthly WHERE tenant_id ="
                                      " $1::uuid AND period = '2026-10-01'", 1, q),
                            2 * 1800.0, 1e-6);
}
END_TEST

START_TEST(an_open_run_is_cut_only_where_its_cluster_saw_it_running)
{
    char job[37];
    new_job(job, 1, "a100", 2); /* two nodes: 2 GPUs */
    transition(job, "pending", "running", at("2026-11-30T22:45:00Z"), 0);
    seen(at("2026-11-30T22:50:00Z"));
    meter_all();
    ck_assert_int_eq(intervals_of(job), 0); /* the hour is not over where the cluster looked */
    seen(at("2026-12-01T02:10:00Z"));
    meter_all();
    ck_assert_int_eq(intervals_of(job), 4); /* 22:45-23, 23-00 | 00-01, 01-02 */
    ck_assert_double_eq_tol(gpu_seconds(job, "2026-11-01"), 2 * 4500.0, 1e-6);
    ck_assert_double_eq_tol(gpu_seconds(job, "2026-12-01"), 2 * 7200.0, 1e-6);
    /* a backend that now claims the job ended at 01:40 cannot undo what it reported
     * running at 02:10: the run ends where it was cut, and nothing is billed twice */
    transition(job, "running", "failed", 0, at("2026-12-01T01:40:00Z"));
    meter_all();
    const char *p[1] = {job};
    ck_assert_double_eq_tol(owner_num("SELECT extract(epoch FROM ended_at - started_at)"
                                      " FROM job_runs WHERE job_id = $1::uuid", 1, p),
                            3.0 * 3600 + 900, 1e-6); /* 22:45 to 02:00 */
    ck_assert_int_eq(intervals_of(job), 4);
}
END_TEST

START_TEST(a_job_preempted_twice_has_three_runs_and_credits_after_checkpoints)
{
    char job[37];
    new_job(job, 4, "a100-q", 1); /* 4 quarter slices = 1 GPU */
    const char *p[1] = {job};
    transition(job, "pending", "running", at("2026-11-10T08:00:00Z"), 0);
    owner_exec("UPDATE jobs SET checkpoint_at = '2026-11-10T09:00:00Z' WHERE id = $1::uuid", 1, p);
    transition(job, "running", "queued", 0, at("2026-11-10T09:30:00Z"));
    owner_exec("UPDATE jobs SET state = 'pending', cluster_id = (SELECT id FROM clusters"
               " WHERE name = 'c1'), backend_job_id = 'b-r1' WHERE id = $1::uuid", 1, p);
    transition(job, "pending", "running", at("2026-11-10T10:00:00Z"), 0);
    transition(job, "running", "queued", 0, at("2026-11-10T10:45:00Z"));
    owner_exec("UPDATE jobs SET state = 'pending', cluster_id = (SELECT id FROM clusters"
               " WHERE name = 'c1'), backend_job_id = 'b-r2' WHERE id = $1::uuid", 1, p);
    transition(job, "pending", "running", at("2026-11-10T11:00:00Z"), 0);
    transition(job, "running", "succeeded", 0, at("2026-11-10T12:00:00Z"));
    meter_all();
    ck_assert_int_eq((long)owner_num("SELECT count(*) FROM job_runs WHERE job_id = $1::uuid", 1, p),
                     3);
    ck_assert_int_eq((long)owner_num("SELECT count(*) FROM job_runs WHERE job_id = $1::uuid"
                                     " AND end_reason = 'preempted'", 1, p),
                     2);
    /* 1.5 h + 0.75 h + 1 h of one whole GPU */
    ck_assert_double_eq_tol(gpu_seconds(job, "2026-11-01"), 3.25 * 3600, 1e-6);
    /* credited: 30 min after the first run's checkpoint, all 45 min of the second */
    PGresult *r = owner("SELECT round(sum(quantity), 6)::text FROM"
                        " aidc_invoice_compute((SELECT tenant_id FROM jobs WHERE id = $1::uuid),"
                        " '2026-11-01', NULL) WHERE kind = 'credit'",
                        1, p);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "-1.250000");
    PQclear(r);
}
END_TEST

START_TEST(a_run_that_ends_as_it_starts_is_metered_without_an_interval)
{
    char job[37];
    new_job(job, 1, "a100", 1);
    transition(job, "pending", "running", at("2026-11-12T10:20:00Z"), 0);
    transition(job, "running", "failed", 0, at("2026-11-12T10:20:00Z"));
    meter_all();
    const char *p[1] = {job};
    ck_assert_int_eq((long)owner_num("SELECT count(*) FROM job_runs WHERE job_id = $1::uuid"
                                     " AND metered_to = ended_at AND ended_at = started_at",
                                     1, p),
                     1);
    ck_assert_int_eq(intervals_of(job), 0);
}
END_TEST

START_TEST(a_preempted_run_across_months_is_credited_whole_by_its_last_month)
{
    char job[37];
    new_job(job, 2, "a100", 1);
    transition(job, "pending", "running", at("2026-10-31T23:00:00Z"), 0);
    transition(job, "running", "queued", 0, at("2026-11-01T01:00:00Z"));
    meter_all();
    const char *p[1] = {job};
    /* October bills its hour and credits nothing; November credits both hours */
    PGresult *r = owner("SELECT coalesce(sum(quantity) FILTER (WHERE kind = 'credit'), 0)::text"
                        " FROM aidc_invoice_compute((SELECT tenant_id FROM jobs WHERE id ="
                        " $1::uuid), '2026-10-01', NULL)",
                        1, p);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "0");
    PQclear(r);
    r = owner("SELECT round(sum(quantity), 6)::text FROM aidc_invoice_compute((SELECT tenant_id"
              " FROM jobs WHERE id = $1::uuid), '2026-11-01', NULL) WHERE kind = 'credit'",
              1, p);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "-4.000000");
    PQclear(r);
}
END_TEST

/* ---- random sequences ---------------------------------------------------------------- */

#define NJOBS 24
#define STEPS 400

struct sim {
    char id[37];
    int gpus, nodes;
    double fraction;
    int state; /* 0 pending, 1 running, 2 queued (preempted), 3 ended */
    time_t started;
    double expected_gpu_seconds;
    int runs;
};

START_TEST(random_start_stop_preempt_sequences_keep_every_invariant)
{
    unsigned seed = (unsigned)time(NULL);
    const char *env = getenv("AIDC_TEST_SEED");
    if (env)
        seed = (unsigned)strtoul(env, NULL, 10);
    fprintf(stderr, "metering random test: seed %u (AIDC_TEST_SEED to repeat)\n", seed);
    srandom(seed);
    struct sim s[NJOBS];
    for (int i = 0; i < NJOBS; i++) {
        memset(&s[i], 0, sizeof s[i]);
        s[i].gpus = (int)(random() % 5); /* 0: a CPU-only job */
        s[i].nodes = 1 + (int)(random() % 2);
        bool slice = random() % 3 == 0;
        s[i].fraction = slice ? 0.25 : 1.0;
        new_job(s[i].id, s[i].gpus, slice ? "a100-q" : "a100", s[i].nodes);
    }
    /* simulated backend time: from late October across the month's end */
    time_t now = at("2026-10-31T18:07:13Z");
    for (int step = 0; step < STEPS; step++) {
        now += 1 + random() % 2400;
        struct sim *j = &s[random() % NJOBS];
        const char *p[1] = {j->id};
        long op = random() % 10;
        if (j->state == 0) {
            transition(j->id, "pending", "running", now, 0);
            j->state = 1;
            j->started = now;
            j->runs++;
        } else if (j->state == 1 && op < 2) {
            transition(j->id, "running", "queued", 0, now);
            j->expected_gpu_seconds += (double)(now - j->started) * j->gpus * j->nodes * j->fraction;
            j->state = 2;
        } else if (j->state == 1 && op < 4) {
            transition(j->id, "running", op == 2 ? "succeeded" : "cancelled", 0, now);
            j->expected_gpu_seconds += (double)(now - j->started) * j->gpus * j->nodes * j->fraction;
            j->state = 3;
        } else if (j->state == 1 && op == 4) {
            char ts[32];
            snprintf(ts, sizeof ts, "%lld", (long long)now);
            const char *q[2] = {j->id, ts};
            owner_exec("UPDATE jobs SET checkpoint_at = to_timestamp($2::float8)"
                       " WHERE id = $1::uuid", 2, q);
        } else if (j->state == 2) {
            owner_exec("UPDATE jobs SET state = 'pending', cluster_id = (SELECT id FROM clusters"
                       " WHERE name = 'c1'), backend_job_id = 'b' WHERE id = $1::uuid", 1, p);
            j->state = 0;
        }
        /* the cluster reports now and then, the meter runs now and then */
        if (random() % 4 == 0)
            seen(now);
        if (random() % 5 == 0)
            ck_assert_int_ge(meter_run(d, 1 + (int)(random() % 50)), 0);
    }
    for (int i = 0; i < NJOBS; i++)
        if (s[i].state == 1) {
            now += 60;
            transition(s[i].id, "running", "succeeded", 0, now);
            s[i].expected_gpu_seconds +=
                (double)(now - s[i].started) * s[i].gpus * s[i].nodes * s[i].fraction;
        }
    seen(now);
    meter_all();

    /* every run: closed at its backend end, fully metered, its intervals adding up */
    ck_assert_int_eq((long)owner_num("SELECT count(*) FROM job_runs WHERE ended_at IS NULL"
                                     " OR metered_to IS DISTINCT FROM ended_at", 0, NULL),
                     0);
    ck_assert_int_eq((long)owner_num(
                         "SELECT count(*) FROM job_runs r WHERE extract(epoch FROM r.ended_at -"
                         " r.started_at) <> coalesce((SELECT sum(extract(epoch FROM u.ended_at -"
                         " u.started_at)) FROM usage_intervals u WHERE u.run_id = r.id), 0)",
                         0, NULL),
                     0);
    /* one hour each, no overlap within a run, as many as the hours a run touches */
    ck_assert_int_eq((long)owner_num("SELECT count(*) FROM usage_intervals WHERE"
                                     " date_trunc('hour', started_at, 'UTC') <> date_trunc('hour',"
                                     " ended_at - interval '1 microsecond', 'UTC')", 0, NULL),
                     0);
    ck_assert_int_eq((long)owner_num("SELECT count(*) FROM usage_intervals a JOIN usage_intervals b"
                                     " ON a.run_id = b.run_id AND a.id < b.id"
                                     " AND a.started_at < b.ended_at AND b.started_at < a.ended_at",
                                     0, NULL),
                     0);
    ck_assert_int_eq((long)owner_num(
                         "SELECT count(*) FROM job_runs r WHERE (SELECT count(*) FROM"
                         " usage_intervals u WHERE u.run_id = r.id) <> CASE WHEN r.ended_at ="
                         " r.started_at THEN 0 ELSE extract(epoch FROM date_trunc('hour',"
                         " r.ended_at - interval '1 microsecond', 'UTC') - date_trunc('hour',"
                         " r.started_at, 'UTC')) / 3600 + 1 END",
                         0, NULL),
                     0);
    /* per job: run time × GPUs × nodes × fraction, as the test lived it */
    for (int i = 0; i < NJOBS; i++) {
        const char *p[1] = {s[i].id};
        double got = owner_num("SELECT coalesce(sum(gpus * extract(epoch FROM ended_at -"
                               " started_at)), 0) FROM usage_intervals WHERE job_id = $1::uuid",
                               1, p);
        ck_assert_msg(got > s[i].expected_gpu_seconds - 1e-6 &&
                          got < s[i].expected_gpu_seconds + 1e-6,
                      "job %d (%d runs): %.3f GPU-seconds metered, %.3f expected", i, s[i].runs,
                      got, s[i].expected_gpu_seconds);
    }
    /* and the monthly budget table agrees with the intervals, month by month */
    ck_assert_int_eq((long)owner_num(
                         "SELECT count(*) FROM (SELECT tenant_id, project_id, period,"
                         " sum(gpus * extract(epoch FROM ended_at - started_at)) AS s"
                         " FROM usage_intervals WHERE gpus > 0 GROUP BY 1, 2, 3) u"
                         " FULL JOIN usage_monthly m USING (tenant_id, project_id, period)"
                         " WHERE u.s IS DISTINCT FROM m.gpu_seconds",
                         0, NULL),
                     0);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("metering");
    TCase *tc = tcase_create("metering");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, session_zone_is_not_utc);
    tcase_add_test(tc, a_run_across_hour_day_and_month_boundaries_sums_exactly);
    tcase_add_test(tc, an_open_run_is_cut_only_where_its_cluster_saw_it_running);
    tcase_add_test(tc, a_job_preempted_twice_has_three_runs_and_credits_after_checkpoints);
    tcase_add_test(tc, a_run_that_ends_as_it_starts_is_metered_without_an_interval);
    tcase_add_test(tc, a_preempted_run_across_months_is_credited_whole_by_its_last_month);
    tcase_add_test(tc, random_start_stop_preempt_sequences_keep_every_invariant);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
