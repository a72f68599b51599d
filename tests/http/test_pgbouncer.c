/*
 * test_pgbouncer.c - aidcd behind a real PgBouncer in pool_mode=transaction
 * (AIDC_DB_POOL_MODE=transaction), the workers on a direct connection
 * (AIDC_WORKER_DATABASE_URL):
 *
 * - four HTTP threads share two server connections: users of four tenants
 *   hammering at once (writes, lists, reports) each see their own tenant's
 *   projects and jobs only, and every write lands once;
 * - a job on the local backend runs to succeeded; an Idempotency-Key replay
 *   answers the first creation; a revoked API token and a logged-out session
 *   are refused at once;
 * - nothing aidcd does stays on a pooled server connection: holding every
 *   server connection of the pool in a transaction of our own (simple
 *   queries, as a plain client), each shows no tenant context, the server's
 *   own statement_timeout and jit, no session setting, no prepared
 *   statement, no advisory lock, no LISTEN;
 * - transaction mode without AIDC_WORKER_DATABASE_URL does not start (2).
 *
 * Skipped (77) without a test PostgreSQL or without PgBouncer.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/pgextra.h"
#include "tests/support/suite.h"

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define POOL    2 /* server connections PgBouncer may open for aidc_app */
#define THREADS 4 /* aidcd's HTTP threads, each a client of PgBouncer */
#define NT      4 /* tenants (a tenant admin each) hammering at once */
#define ROUNDS  12
#define PW      "pooled-password-1"
#define STR_(x) #x
#define STR(x)  STR_(x)

static const char *const tenants[NT] = {"red", "blue", "green", "gold"};
static char *jwt[NT];
static char *held_job[NT]; /* a job per tenant that stays queued (its project may run none) */
static struct pgextra_bouncer bnc;

/* Whatever this program started, stopped even when it ends on a failed set-up. */
static void cleanup_at_exit(void)
{
    pgextra_bouncer_stop(&bnc, true);
    if (harness_srv.dbname[0]) {
        (void)pgextra_wait_db_idle(getenv("AIDC_TEST_OWNER_URL"), harness_srv.dbname, 10);
        harness_db_drop(&harness_srv);
    }
    harness_srv.dbname[0] = '\0';
}

static _Noreturn void setup_fail(const char *what)
{
    fprintf(stderr, "test setup: %s (aidcd's log: %s)\n", what, harness_srv.log_path);
    exit(1);
}

static void setup(void)
{
    pgextra_at_exit(cleanup_at_exit);
    signal(SIGPIPE, SIG_IGN);
    jobs_reap_at_exit();
    harness_db_create(&harness_srv, "pgbouncer");
    unlink(harness_srv.log_path);
    if (pgextra_bouncer_start(&bnc, harness_srv.app_url, POOL) != 0)
        setup_fail("PgBouncer did not start");
    static char env_db[700], env_worker[700];
    snprintf(env_db, sizeof env_db, "AIDC_DATABASE_URL=%s", bnc.url);
    snprintf(env_worker, sizeof env_worker, "AIDC_WORKER_DATABASE_URL=%s", harness_srv.app_url);
    const char *env[] = {env_db,
                         env_worker,
                         "AIDC_DB_POOL_MODE=transaction",
                         "AIDC_THREADS=" STR(THREADS),
                         "AIDC_SYNC_INTERVAL_MS=100",
                         "AIDC_ADMISSION_INTERVAL_MS=200",
                         NULL};
    if (harness_server_start(&harness_srv, env) != 0)
        setup_fail("aidcd did not start behind PgBouncer");
    if (!harness_login_admin())
        setup_fail("the admin cannot log in through PgBouncer");

    jobs_local_cluster("{\"a100\":2}");
    for (int i = 0; i < NT; i++) {
        char user[32];
        snprintf(user, sizeof user, "%s-admin", tenants[i]);
        make_tenant(tenants[i]);
        make_project(tenants[i], fmt("%s-base", tenants[i]));
        make_project(tenants[i], fmt("%s-held", tenants[i]));
        jobs_tenant_quota(tenants[i], "{\"gpu:a100\":{\"guaranteed\":0,\"limit\":2}}");
        jobs_project_quota(tenants[i], fmt("%s-held", tenants[i]), "{\"jobs\":{\"limit\":0}}");
        make_user(user, PW, NULL);
        make_member(tenants[i], user, "tenant_admin");
        jwt[i] = login(user, PW);
        if (!jwt[i])
            setup_fail("a tenant admin cannot log in");
        held_job[i] = jobs_submit(jwt[i], tenants[i],
                                  fmt("{\"project\":\"%s-held\",\"name\":\"%s-job\","
                                      "\"command\":[\"true\"]}",
                                      tenants[i], tenants[i]));
    }
}

static void teardown(void)
{
    for (int i = 0; i < NT; i++) {
        free(jwt[i]);
        free(held_job[i]);
        jwt[i] = held_job[i] = NULL;
    }
    int st = harness_server_stop(&harness_srv);
    bool clean = harness_log_clean(harness_srv.log_path);
    pgextra_bouncer_stop(&bnc, st != 0 || !clean);
    (void)pgextra_wait_db_idle(getenv("AIDC_TEST_OWNER_URL"), harness_srv.dbname, 10);
    harness_db_drop(&harness_srv);
    harness_srv.dbname[0] = '\0';
    if (st != 0 || !clean) {
        fprintf(stderr, "aidcd exited with %d, see %s\n", st, harness_srv.log_path);
        exit(1);
    }
    harness_remove_tree(harness_srv.data_dir);
}

/* ---- many users at once --------------------------------------------------------------- */

struct hammer {
    int i;           /* the tenant (and user) of this thread */
    const char *tag; /* in the slugs of the projects it creates */
    int failures;
    char report[4096];
};

__attribute__((format(printf, 2, 3))) static void failed(struct hammer *h, const char *f, ...)
{
    size_t len = strlen(h->report);
    if (h->failures++ < 8 && len + 2 < sizeof h->report) {
        va_list ap;
        va_start(ap, f);
        vsnprintf(h->report + len, sizeof h->report - len - 1, f, ap);
        va_end(ap);
        strcat(h->report, "\n");
    }
}

/* Every item of items[key] starts with prefix; how many start with mine (may be NULL). */
static int items_prefixed(struct hammer *h, const char *what, const json_t *items, const char *key,
                          const char *prefix, const char *mine)
{
    int n = 0;
    size_t k;
    json_t *it;
    json_array_foreach(items, k, it)
    {
        const char *v = json_string_value(json_object_get(it, key));
        if (!v || strncmp(v, prefix, strlen(prefix)) != 0)
            failed(h, "%s: %s sees %s \"%s\"", what, tenants[h->i], key, v ? v : "(none)");
        else if (mine && strncmp(v, mine, strlen(mine)) == 0)
            n++;
    }
    return n;
}

static long get(struct hammer *h, const char *path, struct http_res *r)
{
    return http_do(&harness_srv, "GET", path, jwt[h->i], NULL, NULL, r);
}

static void one_round(struct hammer *h, int k)
{
    const char *me = tenants[h->i], *other = tenants[(h->i + 1) % NT];
    char path[256], body[256], prefix[64], mine[64];
    struct http_res r;
    snprintf(prefix, sizeof prefix, "%s-", me);
    snprintf(mine, sizeof mine, "%s-%s-", me, h->tag);
    snprintf(path, sizeof path, "/api/v1/tenants/%s/projects", me);
    snprintf(body, sizeof body, "{\"slug\":\"%s%d\",\"name\":\"p\"}", mine, k);
    long st = http_do(&harness_srv, "POST", path, jwt[h->i], body, NULL, &r);
    if (st != 201)
        failed(h, "POST %s: %ld %s", path, st, r.body);
    http_res_free(&r);

    snprintf(path, sizeof path, "/api/v1/tenants/%s/projects?limit=1000", me);
    if ((st = get(h, path, &r)) != 200) {
        failed(h, "GET %s: %ld %s", path, st, r.body);
    } else {
        int n =
            items_prefixed(h, "projects", json_object_get(r.json, "items"), "slug", prefix, mine);
        if (n != k + 1)
            failed(h, "GET %s: %d of its projects, expected %d", path, n, k + 1);
    }
    http_res_free(&r);

    snprintf(path, sizeof path, "/api/v1/tenants/%s/jobs?limit=1000", me);
    if ((st = get(h, path, &r)) != 200) {
        failed(h, "GET %s: %ld %s", path, st, r.body);
    } else {
        const json_t *items = json_object_get(r.json, "items");
        items_prefixed(h, "jobs", items, "name", prefix, NULL);
        bool held = false;
        size_t j;
        json_t *it;
        json_array_foreach(items, j, it)
        {
            const char *id = json_string_value(json_object_get(it, "id"));
            held = held || (id && strcmp(id, held_job[h->i]) == 0);
        }
        if (!held)
            failed(h, "GET %s: its queued job %s is missing", path, held_job[h->i]);
    }
    http_res_free(&r);

    if ((st = get(h, "/api/v1/tenants?limit=1000", &r)) != 200 ||
        json_array_size(json_object_get(r.json, "items")) != 1)
        failed(h, "GET /api/v1/tenants: %ld %s", st, r.body);
    else
        items_prefixed(h, "tenants", json_object_get(r.json, "items"), "slug", me, NULL);
    http_res_free(&r);

    snprintf(path, sizeof path, "/api/v1/tenants/%s/usage", me);
    if ((st = get(h, path, &r)) != 200)
        failed(h, "GET %s: %ld %s", path, st, r.body);
    http_res_free(&r);

    snprintf(path, sizeof path, "/api/v1/tenants/%s/projects", other);
    if ((st = get(h, path, &r)) != 403 && st != 404)
        failed(h, "GET %s as %s: %ld %s", path, me, st, r.body);
    http_res_free(&r);

    const char *who = NULL;
    if ((st = get(h, "/api/v1/me", &r)) == 200)
        who = json_string_value(json_object_get(r.json, "username"));
    if (!who || strncmp(who, me, strlen(me)) != 0)
        failed(h, "GET /api/v1/me as %s: %ld %s", me, st, r.body);
    http_res_free(&r);
}

static void *hammer_run(void *arg)
{
    struct hammer *h = arg;
    for (int k = 0; k < ROUNDS; k++)
        one_round(h, k);
    return NULL;
}

/* Every tenant's user at once, ROUNDS rounds each; the test fails on any wrong answer. */
static void hammer_all(const char *tag)
{
    pthread_t th[NT];
    static struct hammer hs[NT];
    for (int i = 0; i < NT; i++) {
        memset(&hs[i], 0, sizeof hs[i]);
        hs[i].i = i;
        hs[i].tag = tag;
        ck_assert_int_eq(pthread_create(&th[i], NULL, hammer_run, &hs[i]), 0);
    }
    for (int i = 0; i < NT; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < NT; i++)
        ck_assert_msg(hs[i].failures == 0, "%s: %d wrong answers, among them:\n%s", tenants[i],
                      hs[i].failures, hs[i].report);
    /* every creation landed once, in its tenant */
    for (int i = 0; i < NT; i++) {
        const char *p[2] = {tenants[i], fmt("%s-%s-%%", tenants[i], tag)};
        ck_assert_int_eq(audittest_num(harness_srv.owner_url,
                                       "SELECT count(*) FROM projects p JOIN tenants t"
                                       " ON t.id = p.tenant_id WHERE t.slug = $1"
                                       " AND p.slug LIKE $2",
                                       2, p),
                         ROUNDS);
    }
}

START_TEST(tenants_stay_apart_on_shared_server_connections)
{
    hammer_all("a");
}
END_TEST

/* ---- single flows -------------------------------------------------------------------- */

START_TEST(job_runs_and_idempotent_creation_replays)
{
    char *id = jobs_submit(jwt[0], "red",
                           "{\"project\":\"red-base\",\"name\":\"red-run\",\"gpus\":1,"
                           "\"gpu_type\":\"a100\",\"command\":[\"sh\",\"-c\",\"echo pooled\"]}");
    json_t *j = jobs_wait(jwt[0], "red", id, "succeeded,failed,cancelled", 60);
    ck_assert_str_eq(json_string_value(json_object_get(j, "state")), "succeeded");
    json_decref(j);
    char *out = jobs_logs(jwt[0], "red", id, NULL);
    ck_assert_str_eq(out, "pooled\n");
    free(out);
    free(id);

    const char *extra[] = {"Idempotency-Key: pooled-key-1", NULL};
    const char *body = "{\"slug\":\"red-idem\",\"name\":\"once\"}";
    struct http_res a, b;
    ck_assert_int_eq(
        http_do(&harness_srv, "POST", "/api/v1/tenants/red/projects", jwt[0], body, extra, &a),
        201);
    ck_assert_int_eq(
        http_do(&harness_srv, "POST", "/api/v1/tenants/red/projects", jwt[0], body, extra, &b),
        201);
    char *replayed = http_header(&b, "Idempotent-Replayed");
    ck_assert_ptr_nonnull(replayed);
    ck_assert_str_eq(replayed, "true");
    free(replayed);
    ck_assert_str_eq(json_string_value(json_object_get(a.json, "id")),
                     json_string_value(json_object_get(b.json, "id")));
    http_res_free(&a);
    http_res_free(&b);
    ck_assert_int_eq(audittest_num(harness_srv.owner_url,
                                   "SELECT count(*) FROM projects WHERE slug = 'red-idem'", 0,
                                   NULL),
                     1);
}
END_TEST

/* GET path with tok, n times (so each HTTP thread is likely asked): every answer want. */
static void each_answers(const char *path, const char *tok, long want, int n)
{
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(req("GET", path, tok, NULL), want);
}

START_TEST(revoked_token_and_logged_out_session_are_refused_at_once)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/tokens", harness_srv.admin_token,
                          "{\"name\":\"pooled\",\"scopes\":[\"jobs:read\"]}", &r),
                     201);
    char *id = strdup(json_string_value(json_object_get(r.json, "id")));
    char *secret = strdup(json_string_value(json_object_get(r.json, "token")));
    http_res_free(&r);
    each_answers("/api/v1/tenants", secret, 200, 2 * THREADS);
    ck_assert_int_eq(req("DELETE", fmt("/api/v1/tokens/%s", id), harness_srv.admin_token, NULL),
                     204);
    each_answers("/api/v1/tenants", secret, 401, 2 * THREADS);
    free(id);
    free(secret);

    char *session = login("blue-admin", PW);
    ck_assert_ptr_nonnull(session);
    each_answers("/api/v1/me", session, 200, 2 * THREADS);
    ck_assert_int_eq(req("POST", "/api/v1/auth/logout", session, NULL), 204);
    each_answers("/api/v1/me", session, 401, 2 * THREADS);
    each_answers("/api/v1/tenants/blue/usage", session, 401, 2 * THREADS);
    free(session);
}
END_TEST

/* ---- what stays on a server connection --------------------------------------------------- */

static PGresult *simple(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    ck_assert_msg(st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK, "%s: %s", sql,
                  PQresultErrorMessage(r));
    return r;
}

/* The remote (server) pids PgBouncer holds for this test's database, and how many
 * of its clients are aidcd's HTTP threads. */
static int pool_servers(int *pids, int max, int *aidcd_clients)
{
    PGconn *c = PQconnectdb(bnc.admin_url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "admin console: %s", PQerrorMessage(c));
    PGresult *r = simple(c, "SHOW SERVERS");
    int db = PQfnumber(r, "database"), pid = PQfnumber(r, "remote_pid"), n = 0;
    ck_assert(db >= 0 && pid >= 0);
    for (int i = 0; i < PQntuples(r); i++)
        if (strcmp(PQgetvalue(r, i, db), harness_srv.dbname) == 0 && n < max)
            pids[n++] = atoi(PQgetvalue(r, i, pid));
    PQclear(r);
    r = simple(c, "SHOW CLIENTS");
    db = PQfnumber(r, "database");
    int app = PQfnumber(r, "application_name");
    ck_assert(db >= 0 && app >= 0);
    *aidcd_clients = 0;
    for (int i = 0; i < PQntuples(r); i++)
        if (strcmp(PQgetvalue(r, i, db), harness_srv.dbname) == 0 &&
            strcmp(PQgetvalue(r, i, app), "aidcd") == 0)
            (*aidcd_clients)++;
    PQclear(r);
    PQfinish(c);
    return n;
}

/*
 * What a fresh session has, and what aidcd must not leave behind. PgBouncer
 * itself sets the parameters it tracks per client on a server connection it
 * hands over (application_name, client_encoding, DateStyle, TimeZone,
 * standard_conforming_strings): those are no leak.
 */
static const char leak_query[] =
    "SELECT pg_backend_pid(),"
    " concat_ws(',', nullif(current_setting('aidc.user_id', true), ''),"
    "   nullif(current_setting('aidc.roles', true), ''),"
    "   nullif(current_setting('aidc.all', true), ''),"
    "   nullif(current_setting('aidc.read_tenants', true), ''),"
    "   nullif(current_setting('aidc.admin_tenants', true), ''),"
    "   nullif(current_setting('aidc.member_tenants', true), '')),"
    " current_setting('statement_timeout'), current_setting('jit'),"
    " current_setting('plan_cache_mode'),"
    " (SELECT count(*) FROM pg_prepared_statements),"
    " (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),"
    " (SELECT count(*) FROM pg_listening_channels()),"
    " (SELECT coalesce(string_agg(name || '=' || setting, ', '), '') FROM pg_settings"
    "   WHERE source = 'session' AND name NOT IN ('application_name', 'client_encoding',"
    "   'DateStyle', 'TimeZone', 'standard_conforming_strings'))";

START_TEST(no_session_state_stays_on_pooled_server_connections)
{
    hammer_all("b"); /* every thread busy at once: the pool's connections all serve aidcd */
    int pids[8], clients = 0;
    int n = pool_servers(pids, 8, &clients);
    ck_assert_msg(n == POOL, "PgBouncer holds %d server connections, expected %d", n, POOL);
    ck_assert_msg(clients > POOL, "only %d of aidcd's threads are PgBouncer's clients", clients);

    /* the server's own values, from a fresh direct session */
    PGresult *fresh = harness_sql(harness_srv.app_url,
                                  "SELECT current_setting('statement_timeout') AS"
                                  " statement_timeout, current_setting('jit') AS jit,"
                                  " current_setting('plan_cache_mode') AS plan_cache_mode",
                                  0, NULL);
    ck_assert_ptr_nonnull(fresh);

    /* one transaction per server connection of the pool, held open together: each
     * of ours is on a different one, and together they are all of them */
    PGconn *c[POOL];
    int seen[POOL];
    for (int i = 0; i < POOL; i++) {
        c[i] = PQconnectdb(bnc.url);
        ck_assert_msg(PQstatus(c[i]) == CONNECTION_OK, "%s", PQerrorMessage(c[i]));
        PQclear(simple(c[i], "BEGIN"));
        PGresult *r = simple(c[i], leak_query);
        seen[i] = atoi(PQgetvalue(r, 0, 0));
        ck_assert_msg(strcmp(PQgetvalue(r, 0, 1), "") == 0,
                      "server pid %d keeps a tenant context: %s", seen[i], PQgetvalue(r, 0, 1));
        for (int col = 0; col < 3; col++)
            ck_assert_msg(strcmp(PQgetvalue(r, 0, 2 + col), PQgetvalue(fresh, 0, col)) == 0,
                          "server pid %d: %s is %s, the server's is %s", seen[i],
                          PQfname(fresh, col), PQgetvalue(r, 0, 2 + col),
                          PQgetvalue(fresh, 0, col));
        ck_assert_msg(strcmp(PQgetvalue(r, 0, 5), "0") == 0,
                      "server pid %d keeps %s prepared statements", seen[i], PQgetvalue(r, 0, 5));
        ck_assert_msg(strcmp(PQgetvalue(r, 0, 6), "0") == 0,
                      "server pid %d holds %s advisory locks", seen[i], PQgetvalue(r, 0, 6));
        ck_assert_msg(strcmp(PQgetvalue(r, 0, 7), "0") == 0, "server pid %d LISTENs on %s channels",
                      seen[i], PQgetvalue(r, 0, 7));
        ck_assert_msg(strcmp(PQgetvalue(r, 0, 8), "") == 0,
                      "server pid %d keeps session settings: %s", seen[i], PQgetvalue(r, 0, 8));
        PQclear(r);
    }
    PQclear(fresh);
    ck_assert_int_ne(seen[0], seen[1]);
    for (int i = 0; i < POOL; i++) {
        bool known = false;
        for (int k = 0; k < n; k++)
            known = known || pids[k] == seen[i];
        ck_assert_msg(known, "server pid %d is not one PgBouncer held for aidcd", seen[i]);
        PQclear(simple(c[i], "COMMIT"));
        PQfinish(c[i]);
    }
    /* and aidcd still answers through the same pool */
    ck_assert_int_eq(req("GET", "/api/v1/tenants/red/projects", jwt[0], NULL), 200);
}
END_TEST

/* ---- configuration -------------------------------------------------------------------- */

/* aidcd serve with the pooler URL and env: its exit status; its stderr into *err. */
static int serve_refused(const char *const *more, char **err)
{
    char out_path[320], err_path[320];
    snprintf(out_path, sizeof out_path, "%s/refused.out", harness_srv.data_dir);
    snprintf(err_path, sizeof err_path, "%s/refused.err", harness_srv.data_dir);
    char db[700], data[320];
    snprintf(db, sizeof db, "AIDC_DATABASE_URL=%s", bnc.url);
    snprintf(data, sizeof data, "AIDC_DATA_DIR=%s", harness_srv.data_dir);
    const char *env[8] = {db, data, "AIDC_LISTEN=127.0.0.1:0"};
    for (int i = 0; more[i] && i < 4; i++)
        env[3 + i] = more[i];
    const char *args[] = {"serve", NULL};
    int rc = audittest_run_aidcd(args, env, out_path, err_path, 30);
    *err = harness_read_file(err_path);
    ck_assert_ptr_nonnull(*err);
    return rc;
}

START_TEST(transaction_mode_without_a_worker_url_does_not_start)
{
    char *err = NULL;
    const char *no_worker[] = {"AIDC_DB_POOL_MODE=transaction", "AIDC_WORKER_DATABASE_URL=", NULL};
    ck_assert_int_eq(serve_refused(no_worker, &err), 2);
    ck_assert_msg(strstr(err, "AIDC_WORKER_DATABASE_URL"), "stderr: %s", err);
    free(err);
    const char *bad_mode[] = {"AIDC_DB_POOL_MODE=statement", NULL};
    ck_assert_int_eq(serve_refused(bad_mode, &err), 2);
    ck_assert_msg(strstr(err, "AIDC_DB_POOL_MODE"), "stderr: %s", err);
    free(err);
}
END_TEST

int main(void)
{
    harness_require_pg();
    if (access(PGEXTRA_BOUNCER_BIN, X_OK) != 0) {
        fprintf(stderr, "skipped: %s is not installed (deploy/install-deps.sh ops)\n",
                PGEXTRA_BOUNCER_BIN);
        return 77;
    }
    Suite *s = suite_create("pgbouncer");
    TCase *tc = tcase_create("pgbouncer");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, tenants_stay_apart_on_shared_server_connections);
    tcase_add_test(tc, job_runs_and_idempotent_creation_replays);
    tcase_add_test(tc, revoked_token_and_logged_out_session_are_refused_at_once);
    tcase_add_test(tc, no_session_state_stays_on_pooled_server_connections);
    tcase_add_test(tc, transaction_mode_without_a_worker_url_does_not_start);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
