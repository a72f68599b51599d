/*
 * test_read_replica.c - AIDC_READ_DATABASE_URL: reports and audit searches
 * read from a real streaming standby, everything else stays on the primary.
 *
 * The test runs a primary of its own (deploy/pg-up.sh on a free port) and a
 * hot standby streaming from it (pg_basebackup -R, pg_ctl), so pausing and
 * stopping the standby disturbs no other test. It checks:
 * - once the standby has replayed up to the primary's current WAL position,
 *   usage reports and audit searches answer what the primary holds, a tenant
 *   admin's report holding its own tenant only (the RLS context travels to
 *   the standby), over connections the standby shows as aidcd-read (and
 *   /metrics counts);
 * - the reads come from the standby: with its replay paused, a new audit
 *   event and new usage are not seen; once it catches up they are;
 * - whether the actor is current is decided on the primary: with replay
 *   paused, a revoked API token and a logged-out session are refused at once
 *   on the replica's routes, though the standby still has them valid;
 * - with the standby stopped, the same routes answer from the primary and the
 *   log says the read replica is unavailable.
 *
 * Skipped (77) when not root (the clusters run as the postgres OS user) or
 * without a test PostgreSQL configured.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/pgextra.h"
#include "tests/support/suite.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PW     "replica-password-1"
#define NOV    "from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z"
#define WAIT_S 30.0

static struct pgextra_pg primary, standby;
static char *fin, *pa, *ca, *aud; /* finance, physics admin, chem admin, auditor */

static void cleanup_at_exit(void)
{
    pgextra_pg_remove(&standby);
    pgextra_pg_remove(&primary);
}

static _Noreturn void setup_fail(const char *what)
{
    fprintf(stderr, "test setup: %s (aidcd's log: %s)\n", what, harness_srv.log_path);
    exit(1);
}

/* A finished job with one closed run, as the syncer records one (on the primary). */
static void run(const char *tenant, const char *project, const char *user, const char *gpus,
                const char *start, const char *end)
{
    const char *p[6] = {tenant, project, user, gpus, start, end};
    PGresult *r = harness_sql(
        harness_srv.owner_url,
        "WITH j AS (INSERT INTO jobs (tenant_id, project_id, user_id, username, name, state, gpus,"
        "   gpu_type, cpus, memory_gib, command, started_at, finished_at)"
        "  SELECT t.id, p.id, u.id, u.username, 'j', 'succeeded', $4::int, 'a100', 2, 8,"
        "         '[\"x\"]', $5::timestamptz, $6::timestamptz"
        "    FROM tenants t JOIN projects p ON p.tenant_id = t.id, users u"
        "   WHERE t.slug = $1 AND p.slug = $2 AND u.username = $3 RETURNING *)"
        " INSERT INTO job_runs (job_id, tenant_id, project_id, gpus, gpu_type, cpus, memory_gib,"
        "   started_at, ended_at, cluster_id)"
        " SELECT id, tenant_id, project_id, gpus, gpu_type, cpus, memory_gib, started_at,"
        "        finished_at, (SELECT id FROM clusters LIMIT 1) FROM j RETURNING 1",
        6, p);
    if (!r || PQntuples(r) != 1)
        setup_fail("recording a run");
    PQclear(r);
    if (!audittest_wait_metered(WAIT_S))
        setup_fail("the metering worker did not catch up");
}

static char *user(const char *name, const char *roles, const char *tenant, const char *role)
{
    make_user(name, PW, roles);
    if (tenant)
        make_member(tenant, name, role);
    char *t = login(name, PW);
    if (!t)
        setup_fail("a login");
    return t;
}

static void setup(void)
{
    pgextra_at_exit(cleanup_at_exit);
    signal(SIGPIPE, SIG_IGN);
    if (pgextra_primary_up(&primary, "replica-primary") != 0)
        setup_fail("the primary did not start");
    if (pgextra_standby_up(&primary, &standby, "replica-standby") != 0)
        setup_fail("the standby did not start");
    snprintf(harness_srv.app_url, sizeof harness_srv.app_url, "%s", primary.app_url);
    snprintf(harness_srv.owner_url, sizeof harness_srv.owner_url, "%s", primary.owner_url);
    snprintf(harness_srv.data_dir, sizeof harness_srv.data_dir, "/tmp/aidc-test-replica-%d",
             (int)getpid());
    snprintf(harness_srv.log_path, sizeof harness_srv.log_path, "%s/aidcd.log",
             harness_srv.data_dir);
    mkdir(harness_srv.data_dir, 0700);
    unlink(harness_srv.log_path);
    harness_db_init(&harness_srv);
    static char env_read[700];
    snprintf(env_read, sizeof env_read, "AIDC_READ_DATABASE_URL=%s", standby.app_url);
    const char *env[] = {env_read, "AIDC_THREADS=2", NULL};
    if (harness_server_start(&harness_srv, env) != 0)
        setup_fail("aidcd did not start");
    if (!harness_login_admin())
        setup_fail("the admin cannot log in");

    make_tenant("physics");
    make_tenant("chem");
    make_project("physics", "vision");
    make_project("chem", "mol");
    jobs_local_cluster("{\"a100\":8}");
    fin = user("fin", "[\"finance\"]", NULL, NULL);
    aud = user("aud", "[\"auditor\"]", NULL, NULL);
    pa = user("pa", NULL, "physics", "tenant_admin");
    ca = user("ca", NULL, "chem", "tenant_admin");
    run("physics", "vision", "pa", "2", "2026-11-03T10:00:00Z", "2026-11-03T12:30:00Z");
    run("chem", "mol", "ca", "4", "2026-11-10T00:00:00Z", "2026-11-10T01:00:00Z");
}

static void teardown(void)
{
    free(fin);
    free(pa);
    free(ca);
    free(aud);
    int st = harness_server_stop(&harness_srv);
    bool clean = harness_log_clean(harness_srv.log_path);
    pgextra_pg_remove(&standby);
    pgextra_pg_remove(&primary);
    if (st != 0 || !clean) {
        fprintf(stderr, "aidcd exited with %d, see %s\n", st, harness_srv.log_path);
        exit(1);
    }
    harness_remove_tree(harness_srv.data_dir);
}

/* ---- helpers ------------------------------------------------------------------------ */

static void replayed(void)
{
    ck_assert_msg(pgextra_wait_replayed(&primary, &standby, WAIT_S),
                  "the standby did not catch up with the primary");
}

static void standby_sql(const char *sql)
{
    PGresult *r = harness_sql(standby.super, sql, 0, NULL);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
}

/* Pause the standby's replay and wait until it has stopped replaying. */
static void replay_pause(void)
{
    standby_sql("SELECT pg_wal_replay_pause()");
    for (double until = pgextra_now() + WAIT_S;; pgextra_nap()) {
        char *st = pgextra_value(standby.super, "SELECT pg_get_wal_replay_pause_state()", 0, NULL);
        bool paused = st && strcmp(st, "paused") == 0;
        free(st);
        if (paused)
            return;
        ck_assert_msg(pgextra_now() < until, "the standby's replay did not pause");
    }
}

static void replay_resume(void)
{
    standby_sql("SELECT pg_wal_replay_resume()");
    replayed();
}

/* GET path as tok: must answer 200; the body (a new reference). */
static json_t *get_ok(const char *path, const char *tok)
{
    struct http_res r;
    long st = reqj("GET", path, tok, NULL, &r);
    ck_assert_msg(st == 200, "GET %s: %ld %s", path, st, r.body);
    json_t *j = json_incref(r.json);
    ck_assert_ptr_nonnull(j);
    http_res_free(&r);
    return j;
}

/* A tenant's GPU-hours of November, by project, as tok: project's, and no other project
 * than those in allowed (comma-separated) in the report. */
static double gpu_hours(const char *tok, const char *tenant, const char *project,
                        const char *allowed)
{
    json_t *j = get_ok(
        fmt("/api/v1/tenants/%s/usage?" NOV "&group_by=project&resource=gpu:a100", tenant), tok);
    double q = -1;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(j, "rows"), i, row)
    {
        const char *p = jstr(json_object_get(row, "key"), "project");
        ck_assert_msg(p && strstr(allowed, p), "%s's report holds project %s", tenant,
                      p ? p : "(none)");
        if (strcmp(p, project) == 0)
            q = json_number_value(json_object_get(row, "quantity"));
    }
    json_decref(j);
    return q;
}

/* Whether the auditor's search for query finds the event of request rid. */
static bool event_found(const char *query, const char *rid)
{
    json_t *j = get_ok(fmt("/api/v1/audit/events?%s&limit=1000", query), aud);
    bool found = false;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(j, "items"), i, ev)
    {
        found = found || audittest_str_is(jstr(ev, "request_id"), rid);
    }
    json_decref(j);
    return found;
}

/* Create a project as the admin; the X-Request-Id of the answer (malloc'd). */
static char *create_project(const char *tenant, const char *slug)
{
    struct http_res r;
    long st = reqj("POST", fmt("/api/v1/tenants/%s/projects", tenant), harness_srv.admin_token,
                   fmt("{\"slug\":\"%s\",\"name\":\"p\"}", slug), &r);
    ck_assert_msg(st == 201, "creating project %s: %ld %s", slug, st, r.body);
    char *rid = http_header(&r, "X-Request-Id");
    ck_assert_ptr_nonnull(rid);
    http_res_free(&r);
    return rid;
}

/* The value of the /metrics sample line that starts with name (-1 when there is none). */
static double metric(const char *name)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/metrics", NULL, NULL, &r), 200);
    char pat[128];
    snprintf(pat, sizeof pat, "\n%s ", name);
    const char *p = strstr(r.body, pat);
    double v = p ? atof(p + strlen(pat)) : -1;
    http_res_free(&r);
    return v;
}

/* Each of n requests (over both HTTP threads) answers want. */
static void each_answers(const char *path, const char *tok, long want, int n)
{
    for (int i = 0; i < n; i++) {
        long st = req("GET", path, tok, NULL);
        ck_assert_msg(st == want, "GET %s answered %ld, expected %ld", path, st, want);
    }
}

/* ---- tests -------------------------------------------------------------------------- */

START_TEST(reports_and_searches_answer_from_the_standby)
{
    replayed();
    ck_assert_double_eq_tol(gpu_hours(pa, "physics", "vision", "vision"), 5.0, 1e-9);
    /* the tenant context holds there too: each admin sees its tenant only */
    ck_assert_double_eq_tol(gpu_hours(ca, "chem", "mol", "mol"), 4.0, 1e-9);
    json_t *j = get_ok("/api/v1/tenants/chem/usage/jobs?" NOV, ca);
    ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 1);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(j, "items"), 0), "tenant"), "chem");
    json_decref(j);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/physics/usage?" NOV, ca, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/physics/usage/jobs?" NOV, ca, NULL), 404);

    /* platform-wide: finance sees both tenants */
    j = get_ok("/api/v1/usage?" NOV "&group_by=tenant&resource=gpu:a100", fin);
    double physics = -1, chem = -1;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(j, "rows"), i, row)
    {
        const char *t = jstr(json_object_get(row, "key"), "tenant");
        double q = json_number_value(json_object_get(row, "quantity"));
        if (audittest_str_is(t, "physics"))
            physics = q;
        else if (audittest_str_is(t, "chem"))
            chem = q;
    }
    json_decref(j);
    ck_assert_double_eq_tol(physics, 5.0, 1e-9);
    ck_assert_double_eq_tol(chem, 4.0, 1e-9);

    /* the access log counts the standby's round trips with the primary's: the actor's
     * check on the primary (one; two when this thread had to load the actor), the report
     * and the end of its transaction on the standby (two); at most 4 */
    const char *rid[] = {"X-Request-Id: replica-round-trips", NULL};
    struct http_res r;
    ck_assert_int_eq(
        http_do(&harness_srv, "GET", "/api/v1/tenants/chem/usage/jobs?" NOV, ca, NULL, rid, &r),
        200);
    http_res_free(&r);
    json_t *line = harness_access_line("replica-round-trips");
    ck_assert_ptr_nonnull(line);
    json_int_t trips = json_integer_value(json_object_get(line, "db_round_trips"));
    ck_assert_int_ge(trips, 3);
    ck_assert_int_le(trips, 4);
    json_decref(line);
    j = get_ok("/api/v1/usage/jobs?" NOV, fin);
    ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 2);
    json_decref(j);
    json_decref(get_ok("/api/v1/usage/utilization?from=2026-11-03T00:00:00Z"
                       "&to=2026-11-04T00:00:00Z",
                       fin));

    /* the audit log: the tenants' creation, and no commands yet */
    j = get_ok("/api/v1/audit/events?action=tenant.create&limit=1000", aud);
    ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 2);
    json_decref(j);
    j = get_ok("/api/v1/audit/commands", aud);
    ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 0);
    json_decref(j);

    /* over aidcd's own connections to the standby */
    ck_assert_int_ge(audittest_num(standby.super,
                                   "SELECT count(*) FROM pg_stat_activity"
                                   " WHERE application_name = 'aidcd-read'",
                                   0, NULL),
                     1);
    ck_assert_double_ge(metric("aidc_db_connections{pool=\"read\"}"), 1);
    ck_assert_double_ge(metric("aidc_db_connections{pool=\"primary\"}"), 1);
}
END_TEST

START_TEST(reads_see_what_the_standby_has_replayed)
{
    replay_resume();
    replay_pause();
    char *rid = create_project("physics", "while-paused");
    run("physics", "vision", "pa", "1", "2026-11-04T00:00:00Z", "2026-11-04T01:00:00Z");
    /* on the primary, both are there */
    const char *p[1] = {rid};
    ck_assert_int_eq(audittest_num(primary.super,
                                   "SELECT count(*) FROM audit_log WHERE request_id = $1", 1, p),
                     1);
    /* the reports and searches do not see them */
    ck_assert(!event_found("action=project.create&tenant=physics", rid));
    ck_assert_double_eq_tol(gpu_hours(pa, "physics", "vision", "vision,while-paused"), 5.0, 1e-9);
    /* until the standby replays them */
    replay_resume();
    ck_assert(event_found("action=project.create&tenant=physics", rid));
    ck_assert_double_eq_tol(gpu_hours(pa, "physics", "vision", "vision,while-paused"), 6.0, 1e-9);
    free(rid);
}
END_TEST

START_TEST(actor_checks_stay_on_the_primary)
{
    replay_resume();
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/tokens", pa,
                          "{\"name\":\"reports\",\"scopes\":[\"usage:read\"],"
                          "\"tenant\":\"physics\"}",
                          &r),
                     201);
    char *id = strdup(jstr(r.json, "id"));
    char *secret = strdup(jstr(r.json, "token"));
    http_res_free(&r);
    char *session = login("aud", PW);
    ck_assert_ptr_nonnull(session);
    replayed(); /* the standby knows the token */
    const char *usage = "/api/v1/tenants/physics/usage?" NOV;
    each_answers(usage, secret, 200, 4);
    each_answers("/api/v1/audit/events?limit=5", session, 200, 4);

    replay_pause();
    ck_assert_int_eq(req("DELETE", fmt("/api/v1/tokens/%s", id), pa, NULL), 204);
    ck_assert_int_eq(req("POST", "/api/v1/auth/logout", session, NULL), 204);
    /* the standby still has the token valid; the primary decides */
    const char *p[1] = {id};
    ck_assert_int_eq(audittest_num(standby.super,
                                   "SELECT count(*) FROM api_tokens WHERE id = $1::uuid"
                                   " AND revoked_at IS NULL",
                                   1, p),
                     1);
    each_answers(usage, secret, 401, 4);
    each_answers("/api/v1/tenants/physics/usage/jobs?" NOV, secret, 401, 2);
    each_answers("/api/v1/audit/events?limit=5", session, 401, 4);
    each_answers("/api/v1/audit/commands", session, 401, 2);
    replay_resume();
    free(id);
    free(secret);
    free(session);
}
END_TEST

/* GET path as tok n times: each answers 200, from the primary now that the standby is gone. */
static void falls_back(const char *path, const char *tok, int n)
{
    for (int i = 0; i < n; i++) {
        struct http_res r;
        long st = reqj("GET", path, tok, NULL, &r);
        ck_assert_msg(st == 200,
                      "with the standby stopped, GET %s answered %ld, not 200 from the primary"
                      " (request %d of %d): %s",
                      path, st, i + 1, n, r.body);
        http_res_free(&r);
    }
}

START_TEST(without_the_standby_reads_fall_back_to_the_primary)
{
    replay_resume();
    each_answers("/api/v1/audit/events?limit=5", aud, 200, 4); /* both threads use the standby */
    ck_assert_int_eq(pgextra_pg_stop(&standby), 0);
    /* the first reads meet connections the standby's shutdown closed under them */
    falls_back("/api/v1/audit/events?limit=5", aud, 4);
    falls_back("/api/v1/tenants/physics/usage?" NOV, pa, 4);
    falls_back("/api/v1/tenants/physics/usage/jobs?" NOV, pa, 2);
    falls_back("/api/v1/usage?" NOV, fin, 2);
    falls_back("/api/v1/usage/jobs?" NOV, fin, 2);
    falls_back("/api/v1/usage/utilization", fin, 2);
    falls_back("/api/v1/audit/commands", aud, 2);
    /* what only the primary has is found */
    char *rid = create_project("physics", "after-standby");
    ck_assert(event_found("action=project.create&tenant=physics", rid));
    ck_assert_double_ge(gpu_hours(pa, "physics", "vision", "vision,while-paused,after-standby"),
                        5.0);
    char *log = harness_read_file(harness_srv.log_path);
    ck_assert_ptr_nonnull(log);
    ck_assert_msg(strstr(log, "the read replica is unavailable"),
                  "aidcd's log does not say the read replica is unavailable");
    free(log);
    free(rid);
}
END_TEST

int main(void)
{
    harness_require_pg();
    if (geteuid() != 0) {
        fprintf(stderr, "skipped: not root (the private clusters run as the postgres OS user)\n");
        return 77;
    }
    Suite *s = suite_create("read_replica");
    TCase *tc = tcase_create("read_replica");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, reports_and_searches_answer_from_the_standby);
    tcase_add_test(tc, reads_see_what_the_standby_has_replayed);
    tcase_add_test(tc, actor_checks_stay_on_the_primary);
    /* last: the standby does not come back */
    tcase_add_test(tc, without_the_standby_reads_fall_back_to_the_primary);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
