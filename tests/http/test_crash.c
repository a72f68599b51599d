/*
 * test_crash.c - crash consistency. A load generator (tests/support/
 * crashload.c: three client threads) submits jobs to the real Slurm with
 * Idempotency-Keys, creates projects and ingests batches of node command
 * records, retrying each request as a careful client does, while aidcd is
 * killed with SIGKILL at random moments (KILLS times, restarted each time)
 * and its PostgreSQL, a cluster of this test's own, is restarted PG_RESTARTS
 * times in between. Afterwards:
 *   - every request that got a 2xx made its object exactly once, under the
 *     id the answer gave (a resent submit answers the same job);
 *   - nothing half-exists: every job has its submit event, its audit event,
 *     one admission, one delivery, one run and one Slurm job, and succeeded;
 *     every project its audit event; every command record is stored once;
 *   - the audit chain verifies once the sealer caught up;
 *   - the usage report's GPU-hours equal the jobs' own run times;
 *   - Slurm holds exactly one job per platform job and none of this tenant
 *     without one.
 * The schedule of kills comes from a seeded PRNG: the seed is printed, and
 * AIDC_TEST_SEED=<seed> runs the same schedule again (thread timing aside).
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/crashload.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/pgextra.h"
#include "tests/support/slurmtest.h"
#include "tests/support/soft.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KILLS       20
#define PG_RESTARTS 3
#define MAX_JOBS    100
#define WAIT_S      120

static struct pgextra_pg pg;
static char listen_env[64], key_env[700];
static char key_dir[64], key_path[300], pub_path[300];
static const char *const env[] = {listen_env,
                                  key_env,
                                  "AIDC_AUDIT_CHECKPOINT_SECONDS=1",
                                  "AIDC_SYNC_INTERVAL_MS=200",
                                  "AIDC_ADMISSION_INTERVAL_MS=200",
                                  "AIDC_AUDIT_SEAL_GRACE_MS=200",
                                  NULL};
static char tenant[32];
static char *member;       /* JWT of the tenant's member */
static char *ingest_token; /* the admin's audit:ingest token */
static time_t started;
/* the load: file scope, so that teardown stops its threads when a check failed */
static struct crashload load;

/* ---- the private PostgreSQL and aidcd ---------------------------------------------- */

/* Start the stopped cluster again on its port (deploy/pg-up.sh is idempotent). */
static void pg_start(void)
{
    char cmd[600];
    /* its stdout is the cluster's URLs, passwords included: not for a log */
    snprintf(cmd, sizeof cmd, "PGDATA_DIR='%s' PGPORT=%d '%s/deploy/pg-up.sh' >/dev/null 2>'%s.out'",
             pg.dir, pg.port, AIDC_SOURCE_DIR, harness_srv.log_path);
    ck_assert_msg(system(cmd) == 0, "pg-up.sh did not start the cluster again, see %s.out",
                  harness_srv.log_path);
}

/*
 * A free port below the kernel's ephemeral range (32768-60999 by default):
 * aidcd is down for a moment at every kill, and an ephemeral port could go to
 * some other socket meanwhile.
 */
static int fixed_port(unsigned *rs)
{
    for (int i = 0; i < 200; i++) {
        int port = 20000 + (int)(rand_r(rs) % 12000);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        ck_assert_int_ge(fd, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
        close(fd);
        if (ok)
            return port;
    }
    ck_abort_msg("no free port below 32000");
    return -1;
}

/* The private PostgreSQL and the key, removed even when the set-up fails half
 * way (the harness stops a left-over aidcd before this runs). */
static void cleanup_at_exit(void)
{
    pgextra_pg_remove(&pg);
    audittest_key_remove(key_dir); /* nftw on a removed tree finds nothing */
}

static void setup(void)
{
    harness_require_pg();
    slurmtest_env();
    pgextra_at_exit(cleanup_at_exit);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_ALL);
    started = time(NULL);
    audittest_key("crash", key_dir, sizeof key_dir, key_path, sizeof key_path, pub_path,
                  sizeof pub_path, key_env, sizeof key_env);
    if (pgextra_primary_up(&pg, "crash") != 0) {
        pgextra_pg_remove(&pg);
        fprintf(stderr, "cannot start the private PostgreSQL\n");
        exit(1);
    }
    snprintf(harness_srv.app_url, sizeof harness_srv.app_url, "%s", pg.app_url);
    snprintf(harness_srv.owner_url, sizeof harness_srv.owner_url, "%s", pg.owner_url);
    snprintf(harness_srv.data_dir, sizeof harness_srv.data_dir, "/tmp/aidc-test-crash-%d",
             (int)getpid());
    snprintf(harness_srv.log_path, sizeof harness_srv.log_path, "%s/aidcd.log",
             harness_srv.data_dir);
    mkdir(harness_srv.data_dir, 0700);
    harness_db_init(&harness_srv);
    /* one port for every life of aidcd: the clients keep their address */
    unsigned rs = (unsigned)getpid();
    snprintf(listen_env, sizeof listen_env, "AIDC_LISTEN=127.0.0.1:%d", fixed_port(&rs));
    ck_assert_msg(harness_server_start(&harness_srv, env) == 0, "aidcd did not start");
    ck_assert(harness_login_admin());
    slurmtest_register_cluster();
    /* the tenant names this run's jobs in Slurm (comment "aidc <id> <tenant>/...") */
    snprintf(tenant, sizeof tenant, "crash%d", (int)getpid());
    member = jobs_tenant_member(tenant, "lab",
                                "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":8},"
                                "\"gpu:h100\":{\"guaranteed\":4,\"limit\":8}}",
                                "cici");
    ingest_token = make_token(harness_srv.admin_token, "[\"audit:ingest\"]", NULL);
}

static void teardown(void)
{
    if (load.started)
        crashload_abandon(&load);
    crashload_free(&load);
    free(member);
    free(ingest_token);
    int st = harness_server_stop(&harness_srv);
    bool clean = harness_log_clean(harness_srv.log_path);
    pgextra_pg_remove(&pg);
    audittest_key_remove(key_dir);
    ck_assert_msg(st == 0 && clean, "aidcd exited with %d, see %s", st, harness_srv.log_path);
    harness_remove_tree(harness_srv.data_dir);
}

static void nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

static void wait_ready(void)
{
    double until = pgextra_now() + 60;
    while (req("GET", "/readyz", NULL, NULL) != 200) {
        ck_assert_msg(pgextra_now() < until, "aidcd not ready 60 s after its restart");
        pgextra_nap();
    }
}

/* ---- checks --------------------------------------------------------------------------- */

static long long num(const char *sql, const char *a, const char *b)
{
    const char *p[2] = {a, b};
    return audittest_num(pg.owner_url, sql, b ? 2 : a ? 1 : 0, p);
}

/*
 * What sql found, by name: {name: [rows, id]}; sql selects (name, count,
 * text) with arg as $1.
 */
static json_t *found_by_name(const char *sql, const char *arg)
{
    PGresult *r = harness_sql(pg.owner_url, sql, 1, (const char *const[]){arg});
    ck_assert_ptr_nonnull(r);
    json_t *out = json_object();
    for (int i = 0; i < PQntuples(r); i++)
        json_object_set_new(out, PQgetvalue(r, i, 0),
                            json_pack("[I, s]", strtoll(PQgetvalue(r, i, 1), NULL, 10), PQgetvalue(r, i, 2)));
    PQclear(r);
    return out;
}

static bool acked(const struct crashload_op *op)
{
    return op->status != 0;
}

/*
 * Each operation of kind made what it should: an acknowledged one its object
 * exactly once (want rows, under the id answered), an unacknowledged one
 * (sent once, no answer) its object whole or not at all; and nothing else
 * appeared.
 */
static void check_made(const struct crashload *l, enum crashload_kind kind, const char *what,
                       const char *sql, const char *arg, long long want)
{
    json_t *found = found_by_name(sql, arg);
    int n = 0, unacked = 0, made = 0;
    for (size_t i = 0; i < l->nops; i++) {
        const struct crashload_op *op = &l->ops[i];
        if (op->kind != kind)
            continue;
        n++;
        json_t *f = json_object_get(found, op->name);
        long long rows = json_integer_value(json_array_get(f, 0));
        const char *id = json_string_value(json_array_get(f, 1));
        if (!acked(op)) {
            unacked++;
            made += rows > 0;
            soft(op->give_up, "%s %s: no final answer in %d tries", what, op->name, op->tries);
            soft(rows == 0 || rows == want, "%s %s (unacknowledged) made %lld rows", what,
                 op->name, rows);
        } else {
            soft(rows == want, "%s %s (answered %ld after %d tries) made %lld rows", what,
                 op->name, op->status, op->tries, rows);
            soft(!op->id[0] || (id && strcmp(id, op->id) == 0), "%s %s answered id %s, made %s",
                 what, op->name, op->id, soft_shows(id));
        }
        json_object_del(found, op->name);
    }
    const char *name;
    json_t *f;
    json_object_foreach(found, name, f)
    {
        soft(false, "%s %s: made by no request", what, name);
    }
    json_decref(found);
    printf("%d %s requests, %d unacknowledged (%d of them made theirs)\n", n, what, unacked,
           made);
}

/* Every acknowledged operation got the final answer it should have. */
static void check_answers(const struct crashload *l)
{
    for (size_t i = 0; i < l->nops; i++) {
        const struct crashload_op *op = &l->ops[i];
        if (!acked(op))
            continue; /* check_made */
        switch (op->kind) {
        case CRASHLOAD_JOB:
            soft(op->status == 201 && op->id[0], "submit %s: final answer %ld", op->name,
                 op->status);
            soft(!op->replay || (op->replay == 201 && strcmp(op->replay_id, op->id) == 0),
                 "submit %s resent: %ld with job %s, first answer job %s", op->name, op->replay,
                 op->replay_id, op->id);
            break;
        case CRASHLOAD_PROJECT:
            /* without a key, a retry of a create that committed is a conflict */
            soft(op->status == 201 || (op->status == 409 && op->uncertain && !op->with_key),
                 "project %s (%s key, %d tries): final answer %ld", op->name,
                 op->with_key ? "with" : "no", op->tries, op->status);
            break;
        case CRASHLOAD_BATCH:
            soft(op->status == 202, "batch %s: final answer %ld", op->name, op->status);
            break;
        }
    }
}

#define IN_TENANT "tenant_id = (SELECT id FROM tenants WHERE slug = $1)"

/* Each job is whole: it ran once, on one Slurm job, and succeeded. */
static void check_jobs(void)
{
    /* the jobs run on Slurm, one second each: wait for the last */
    double t0 = pgextra_now(), until = t0 + WAIT_S;
    while (num("SELECT count(*) FROM jobs WHERE " IN_TENANT
               " AND state NOT IN ('succeeded', 'failed', 'cancelled')",
               tenant, NULL) > 0 &&
           pgextra_now() < until)
        nap_ms(200);
    printf("the jobs were done %.1f s after the load stopped\n", pgextra_now() - t0);
    static const struct {
        const char *what, *sql;
    } whole[] = {
        {"did not succeed", "j.state <> 'succeeded'"},
        {"have no Slurm job id", "j.backend_job_id IS NULL"},
        {"lack their submit event", "(SELECT count(*) FROM job_events e WHERE e.job_id = j.id"
                                    " AND e.from_state IS NULL AND e.to_state = 'queued') <> 1"},
        {"were not admitted exactly once", "(SELECT count(*) FROM job_events e WHERE"
                                           " e.job_id = j.id AND e.to_state = 'admitted') <> 1"},
        {"were not delivered exactly once",
         "(SELECT count(*) FROM outbox o WHERE o.job_id = j.id AND o.action = 'submit'"
         " AND o.delivered_at IS NOT NULL) <> 1"},
        {"did not run exactly once", "(SELECT count(*) FROM job_runs r WHERE r.job_id = j.id"
                                     " AND r.ended_at IS NOT NULL) <> 1"},
        /* a retried submit's replay is audited too, naming the job it answered with:
         * it is marked replayed, and is no second submit */
        {"lack their audit event (or have two)",
         "(SELECT count(*) FROM audit_log a WHERE a.action = 'job.submit'"
         " AND a.outcome = 'success' AND a.resource_id = j.id::text"
         " AND NOT coalesce((a.details->>'replayed')::boolean, false)) <> 1"},

    };
    printf("%lld deliveries to Slurm took more than one attempt\n",
           num("SELECT count(*) FROM outbox WHERE " IN_TENANT " AND attempts > 1", tenant, NULL));
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        long long bad = num(fmt("SELECT count(*) FROM jobs j WHERE j." IN_TENANT " AND %s",
                                whole[i].sql),
                            tenant, NULL);
        soft(bad == 0, "%lld job(s) %s", bad, whole[i].what);
    }
}

/* Slurm has exactly one job per platform job, and none of this tenant without one. */
static void check_slurm(void)
{
    PGresult *r = harness_sql(pg.owner_url,
                              "SELECT id::text, backend_job_id FROM jobs WHERE " IN_TENANT, 1,
                              (const char *const[]){tenant});
    ck_assert_ptr_nonnull(r);
    json_t *all = slurm_get(fmt("jobs?update_time=%lld", (long long)started - 60));
    char mine[64];
    snprintf(mine, sizeof mine, " %s/", tenant);
    int *seen = calloc((size_t)PQntuples(r) + 1, sizeof *seen);
    ck_assert_ptr_nonnull(seen);
    size_t i;
    json_t *sj;
    json_array_foreach(json_object_get(all, "jobs"), i, sj)
    {
        const char *name = json_string_value(json_object_get(sj, "name"));
        const char *comment = json_string_value(json_object_get(sj, "comment"));
        if (!comment || strncmp(comment, "aidc ", 5) != 0 || !strstr(comment, mine))
            continue;
        int row = -1;
        for (int k = 0; k < PQntuples(r) && row < 0; k++)
            if (name && strcmp(name, PQgetvalue(r, k, 0)) == 0)
                row = k;
        soft(row >= 0, "Slurm job %lld (%s) has no platform job",
             json_integer_value(json_object_get(sj, "job_id")), soft_shows(name));
        if (row < 0)
            continue;
        seen[row]++;
        soft(strtoll(PQgetvalue(r, row, 1), NULL, 10) == json_integer_value(json_object_get(sj, "job_id")),
             "job %s names Slurm job %s, Slurm runs it as %lld", name, PQgetvalue(r, row, 1),
             json_integer_value(json_object_get(sj, "job_id")));
    }
    for (int k = 0; k < PQntuples(r); k++)
        soft(seen[k] == 1, "job %s has %d Slurm jobs", PQgetvalue(r, k, 0), seen[k]);
    free(seen);
    json_decref(all);
    PQclear(r);
}

/* Each project has the audit event of its creation, once (a retry's replay is audited
 * too, marked replayed: it created nothing). */
static void check_projects(void)
{
    long long bad = num("SELECT count(*) FROM projects p WHERE p." IN_TENANT
                        " AND p.slug <> 'lab' AND (SELECT count(*) FROM audit_log a WHERE"
                        " a.action = 'project.create' AND a.outcome = 'success'"
                        " AND a.resource_id = p.id::text"
                        " AND NOT coalesce((a.details->>'replayed')::boolean, false)) <> 1",
                        tenant, NULL);
    soft(bad == 0, "%lld project(s) without exactly one audit event of their creation", bad);
}

/* A batch is stored whole or not at all (check_made), each record once. */
static void check_commands(const struct crashload *l)
{
    char like[64];
    snprintf(like, sizeof like, "crash-%u-b%%", l->seed);
    check_made(l, CRASHLOAD_BATCH, "batch",
               "SELECT regexp_replace(record_id, '-[0-9]+$', ''), count(DISTINCT record_id), ''"
               " FROM audit_log WHERE record_id LIKE $1 GROUP BY 1",
               like, CRASHLOAD_BATCH_RECORDS);
    long long rows = num("SELECT count(*) FROM audit_log WHERE record_id LIKE $1", like, NULL);
    long long distinct =
        num("SELECT count(DISTINCT record_id) FROM audit_log WHERE record_id LIKE $1", like,
            NULL);
    soft(rows == distinct, "%lld command records stored as %lld rows", distinct, rows);
}

/* The usage report's GPU-hours (a100 and h100) are the jobs' run times. */
static void check_usage(void)
{
    soft(audittest_wait_metered(60), "runs not metered to their end after 60 s");
    char from[32], to[32];
    time_t t0 = started - 3600, t1 = time(NULL) + 3600;
    struct tm tm;
    strftime(from, sizeof from, "%Y-%m-%dT%H:00:00Z", gmtime_r(&t0, &tm));
    strftime(to, sizeof to, "%Y-%m-%dT%H:00:00Z", gmtime_r(&t1, &tm));
    struct http_res r;
    ck_assert_int_eq(reqj("GET",
                          fmt("/api/v1/tenants/%s/usage?group_by=resource&from=%s&to=%s", tenant,
                              from, to),
                          harness_srv.admin_token, NULL, &r),
                     200);
    PGresult *ran = harness_sql(
        pg.owner_url,
        "SELECT 'gpu:' || gpu_type,"
        " (sum(extract(epoch FROM finished_at - started_at) * gpus) / 3600)::text"
        " FROM jobs WHERE " IN_TENANT " GROUP BY gpu_type ORDER BY 1",
        1, (const char *const[]){tenant});
    ck_assert_ptr_nonnull(ran);
    soft(PQntuples(ran) == 2, "the jobs ran on %d GPU types, not 2", PQntuples(ran));
    json_t *rows = json_object_get(r.json, "rows");
    for (int k = 0; k < PQntuples(ran); k++) {
        const char *res = PQgetvalue(ran, k, 0);
        double want = strtod(PQgetvalue(ran, k, 1), NULL), hours = -1;
        size_t i;
        json_t *row;
        json_array_foreach(rows, i, row)
        {
            if (audittest_str_is(jstr(row, "resource"), res))
                hours = json_number_value(json_object_get(row, "quantity"));
        }
        printf("usage of %s: %.6f GPU-hours reported, %.6f from the jobs' run times\n", res,
               hours, want);
        soft(want > 0 && hours > want - 1e-5 && hours < want + 1e-5,
             "usage reports %.6f GPU-hours of %s, the jobs ran %.6f", hours, res, want);
    }
    PQclear(ran);
    http_res_free(&r);
}

/* ---- the test ------------------------------------------------------------------------- */

static unsigned seed_of(void)
{
    const char *s = getenv("AIDC_TEST_SEED");
    if (s && s[0])
        return (unsigned)strtoul(s, NULL, 10);
    return (unsigned)time(NULL) ^ ((unsigned)getpid() << 8);
}

START_TEST(kills_and_restarts_lose_and_duplicate_nothing)
{
    unsigned seed = seed_of(), rs = seed;
    printf("seed %u (AIDC_TEST_SEED=%u repeats the schedule)\n", seed, seed);
    fflush(stdout);
    struct crashload *l = &load;
    l->srv = &harness_srv;
    l->tenant = tenant;
    l->member_jwt = member;
    l->admin_jwt = harness_srv.admin_token;
    l->ingest_token = ingest_token;
    l->host = tenant;
    l->seed = seed;
    l->max_jobs = MAX_JOBS;
    /* the PostgreSQL restarts fall between kills, one in each third of the run */
    int pg_at[PG_RESTARTS];
    for (int i = 0; i < PG_RESTARTS; i++)
        pg_at[i] = i * KILLS / PG_RESTARTS + 1 + (int)(rand_r(&rs) % (KILLS / PG_RESTARTS - 1));
    double t0 = pgextra_now();
    crashload_start(l);
    for (int k = 0, p = 0; k < KILLS; k++) {
        /* a random moment: the load is in flight, at any point of its requests */
        nap_ms(150 + (long)(rand_r(&rs) % 1000));
        bool pg_now = p < PG_RESTARTS && k == pg_at[p];
        /* the second time, aidcd dies while its database is down too */
        bool both = pg_now && p == 1;
        if (pg_now) {
            ck_assert_int_eq(pgextra_pg_stop(&pg), 0);
            nap_ms((long)(rand_r(&rs) % 500));
            if (!both) {
                pg_start();
                nap_ms(150 + (long)(rand_r(&rs) % 600));
            }
            p++;
        }
        ck_assert_int_eq(kill(harness_srv.pid, SIGKILL), 0);
        int st;
        ck_assert_int_eq(waitpid(harness_srv.pid, &st, 0), harness_srv.pid);
        harness_srv.pid = 0;
        if (both)
            pg_start(); /* aidcd checks the schema before it listens */
        ck_assert_msg(jobs_restart_server(env) == 0, "aidcd did not start after kill %d", k + 1);
        /* now and then the next kill comes early in its life: workers starting, leads taken */
        if (rand_r(&rs) % 4 != 0 || k == KILLS - 1)
            wait_ready();
    }
    crashload_stop(l);
    printf("%d kills, %d PostgreSQL restarts in %.1f s; %zu operations, %d answers 500\n",
           KILLS, PG_RESTARTS, pgextra_now() - t0, l->nops, atomic_load(&l->retried_500));
    /* a lost server or database is 503 (or no answer), never an internal error */
    soft(atomic_load(&l->retried_500) == 0, "%d answers were 500", atomic_load(&l->retried_500));
    int retried = 0;
    for (size_t i = 0; i < l->nops; i++)
        retried += l->ops[i].uncertain;
    printf("%d requests were retried after a crash\n", retried);
    check_answers(l);
    check_made(l, CRASHLOAD_JOB, "submit",
               "SELECT name, count(*), min(id::text) FROM jobs WHERE " IN_TENANT " GROUP BY name",
               tenant, 1);
    check_made(l, CRASHLOAD_PROJECT, "project",
               "SELECT slug, count(*), min(id::text) FROM projects WHERE " IN_TENANT
               " AND slug <> 'lab' GROUP BY slug",
               tenant, 1);
    check_projects();
    check_commands(l);
    check_jobs();
    check_slurm();
    check_usage();
    long long head = audittest_wait_quiet(60);
    soft(head >= 0, "the audit sealer did not catch up in 60 s");
    /* the offline verdict (signatures too) and the server's */
    int rc;
    json_t *cli = audittest_cli_verify(&harness_srv, key_path, &rc), *api = audittest_api_verify();
    char *ct = cli ? json_dumps(cli, JSON_COMPACT) : NULL;
    char *at = api ? json_dumps(api, JSON_COMPACT) : NULL;
    soft(rc == 0 && json_is_true(json_object_get(cli, "ok")) &&
             json_is_true(json_object_get(api, "ok")),
         "aidcd audit verify (exit %d): %s; GET audit/verify: %s", rc, soft_shows(ct),
         soft_shows(at));
    soft(json_integer_value(json_object_get(cli, "last_seq")) == head,
         "aidcd audit verify ends at %lld, the chain's head is %lld",
         json_integer_value(json_object_get(cli, "last_seq")), head);
    free(ct);
    free(at);
    json_decref(cli);
    json_decref(api);
    printf("checked in %.1f s in all\n", pgextra_now() - t0);
    soft_done();
}
END_TEST

int main(void)
{
    harness_require_pg();
    slurmtest_env();
    Suite *s = suite_create("crash");
    TCase *tc = tcase_create("crash");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, kills_and_restarts_lose_and_duplicate_nothing);
    suite_add_tcase(s, tc);
    /* aidcd is killed and started by the test: it must be the test's child */
    return suite_run_nofork(s);
}
