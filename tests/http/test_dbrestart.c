/*
 * test_dbrestart.c - PostgreSQL goes away under a running aidcd and comes
 * back: meanwhile requests get 503 with Retry-After and /readyz says not
 * ready; afterwards aidcd recovers by itself, without a restart. An aidcd
 * started while PostgreSQL is down waits for it (AIDC_DB_START_WAIT_SECONDS).
 *
 * The test runs a PostgreSQL cluster of its own (deploy/pg-up.sh on a free
 * port), so stopping it disturbs no other test.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/pgextra.h"
#include "tests/support/suite.h"

#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char pgdata[128];
static int pgport;
static const char *const fast[] = {"AIDC_THREADS=2", NULL};

/* Run deploy/pg-up.sh or pg-down.sh for the private cluster; returns its output. */
static char *pg_script(const char *script)
{
    char cmd[512], out[256];
    snprintf(out, sizeof out, "%s.out", pgdata);
    snprintf(cmd, sizeof cmd, "PGDATA_DIR=%s PGPORT=%d %s/deploy/%s >%s 2>&1", pgdata, pgport,
             AIDC_SOURCE_DIR, script, out);
    int rc = system(cmd);
    char *text = harness_read_file(out);
    unlink(out); /* pg-up.sh's answer holds the database passwords */
    if (rc != 0) {
        fprintf(stderr, "%s failed:\n%s\n", script, text ? text : "");
        free(text);
        return NULL;
    }
    return text;
}

static void url_from(const char *text, const char *key, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s='", key);
    const char *p = strstr(text, pat);
    ck_assert_msg(p != NULL, "%s not in pg-up output", key);
    p += strlen(pat);
    snprintf(out, n, "%.*s", (int)strcspn(p, "'"), p);
}

static void setup(void)
{
    harness_require_pg();
    pgport = pgextra_free_port();
    snprintf(pgdata, sizeof pgdata, "/tmp/aidc-restart-pg-%d", (int)getpid());
    char *env = pg_script("pg-up.sh");
    if (!env) {
        fprintf(stderr, "cannot start the private PostgreSQL\n");
        exit(1);
    }
    char *text = NULL;
    if (asprintf(&text, "\n%s", env) < 0)
        exit(1);
    url_from(text, "DATABASE_URL", harness_srv.app_url, sizeof harness_srv.app_url);
    url_from(text, "DATABASE_URL_OWNER", harness_srv.owner_url, sizeof harness_srv.owner_url);
    free(text);
    free(env);
    snprintf(harness_srv.data_dir, sizeof harness_srv.data_dir, "/tmp/aidc-test-restart-%d",
             (int)getpid());
    snprintf(harness_srv.log_path, sizeof harness_srv.log_path, "%s/aidcd.log",
             harness_srv.data_dir);
    mkdir(harness_srv.data_dir, 0700);
    harness_db_init(&harness_srv);
    if (harness_server_start(&harness_srv, fast) != 0) {
        fprintf(stderr, "aidcd did not start\n");
        exit(1);
    }
    ck_assert(harness_login_admin());
}

static void teardown(void)
{
    harness_server_stop(&harness_srv);
    free(pg_script("pg-down.sh --purge"));
    harness_remove_tree(harness_srv.data_dir);
}

/* pg-up.sh for a thread: non-NULL once it started the cluster. */
static void *pg_up(void *arg)
{
    (void)arg;
    char *out = pg_script("pg-up.sh");
    bool ok = out != NULL;
    free(out);
    return ok ? (void *)1 : NULL;
}

/* Poll until a GET as token answers want (the database is back): at most 60 s. */
static bool wait_for_as(const char *token, const char *path, long want)
{
    for (int i = 0; i < 600; i++) {
        if (req("GET", path, token, NULL) == want)
            return true;
        usleep(100000);
    }
    return false;
}

static bool wait_for(const char *path, long want)
{
    return wait_for_as(harness_srv.admin_token, path, want);
}

START_TEST(database_outage_is_503_then_recovers)
{
    char *api_token = make_token(harness_srv.admin_token, "[\"admin\"]", NULL);
    ck_assert_int_eq(req("POST", "/api/v1/tenants", harness_srv.admin_token,
                         "{\"slug\":\"before\",\"name\":\"x\"}"),
                     201);
    char *out = pg_script("pg-down.sh");
    ck_assert_ptr_nonnull(out);
    free(out);

    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants", harness_srv.admin_token, NULL, &r), 503);
    char *ra = http_header(&r, "Retry-After");
    ck_assert_ptr_nonnull(ra);
    ck_assert_int_gt(atoi(ra), 0);
    free(ra);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "title")), "Service Unavailable");
    http_res_free(&r);
    /* an API token is not "invalid" because the database is down */
    ck_assert_int_eq(req("GET", "/api/v1/tenants", api_token, NULL), 503);
    ck_assert_int_eq(req("POST", "/api/v1/tenants", harness_srv.admin_token,
                         "{\"slug\":\"during\",\"name\":\"x\"}"),
                     503);
    ck_assert_int_eq(reqj("GET", "/readyz", NULL, NULL, &r), 503);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "not ready");
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/healthz", NULL, NULL), 200); /* the process is alive */
    ck_assert_int_eq(req("POST", "/api/v1/auth/login", NULL,
                         "{\"username\":\"admin\",\"password\":\"" ADMIN_PASSWORD "\"}"),
                     503);

    /*
     * Requests go on while PostgreSQL starts, so both HTTP threads have just
     * failed an attempt when the first gets through. That one lets the other
     * reconnect at once: no request meets a thread waiting out its
     * once-a-second retry (each of these lands on either thread).
     */
    pthread_t up;
    ck_assert_int_eq(pthread_create(&up, NULL, pg_up, NULL), 0);
    ck_assert(wait_for("/api/v1/tenants", 200));
    void *up_ok = NULL;
    pthread_join(up, &up_ok);
    ck_assert(up_ok != NULL);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(req("GET", "/readyz", NULL, NULL), 200);
        ck_assert_int_eq(req("GET", "/api/v1/tenants", api_token, NULL), 200);
    }
    ck_assert_int_eq(req("POST", "/api/v1/tenants", harness_srv.admin_token,
                         "{\"slug\":\"after\",\"name\":\"x\"}"),
                     201);
    /* nothing from the outage half-exists */
    ck_assert_int_eq(req("GET", "/api/v1/tenants/during", harness_srv.admin_token, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/before", harness_srv.admin_token, NULL), 200);
    ck_assert_int_eq(reqj("GET", "/metrics", NULL, NULL, &r), 200);
    const char *m = strstr(r.body, "\naidc_db_reconnects_total ");
    ck_assert_ptr_nonnull(m);
    ck_assert_int_ge(atoi(m + strlen("\naidc_db_reconnects_total ")), 1);
    http_res_free(&r);
    free(api_token);
}
END_TEST

/* A restart between two requests costs the next request nothing. */
START_TEST(restart_while_idle_is_invisible)
{
    ck_assert(wait_for("/api/v1/tenants", 200));
    ck_assert(wait_for("/api/v1/me", 200)); /* both workers have live connections */
    char *out = pg_script("pg-down.sh");
    ck_assert_ptr_nonnull(out);
    free(out);
    out = pg_script("pg-up.sh");
    ck_assert_ptr_nonnull(out);
    free(out);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(req("GET", "/api/v1/tenants", harness_srv.admin_token, NULL), 200);
}
END_TEST

/* Whether aidcd's log has needle. */
static bool log_has(const char *needle)
{
    char *log = harness_read_file(harness_srv.log_path);
    bool found = log && strstr(log, needle);
    free(log);
    return found;
}

/* The harness finds the "listening" line anywhere in the log: start each aidcd on a new one. */
static int start_with_new_log(const char *const *env)
{
    unlink(harness_srv.log_path); /* harness_server_stop archived it */
    return harness_server_start(&harness_srv, env);
}

static const char waiting_line[] = "the PostgreSQL server of AIDC_DATABASE_URL does not answer";

/* Once aidcd says it waits for the database, start it; true if it did within 30 s. */
static void *start_pg_when_waited_for(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3000 && !log_has(waiting_line); i++) {
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL); /* polling a log file: there is nothing to block on */
    }
    if (!log_has(waiting_line))
        return NULL;
    char *out = pg_script("pg-up.sh");
    bool ok = out != NULL;
    free(out);
    return ok ? (void *)1 : NULL;
}

START_TEST(serve_waits_for_the_database_at_start)
{
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    char *out = pg_script("pg-down.sh");
    ck_assert_ptr_nonnull(out);
    free(out);

    /* no wait allowed: it exits 1 at once, naming the setting */
    const char *no_wait[] = {"AIDC_THREADS=2", "AIDC_DB_START_WAIT_SECONDS=0", NULL};
    ck_assert_int_ne(start_with_new_log(no_wait), 0);
    ck_assert(log_has("did not answer within 0 s (AIDC_DB_START_WAIT_SECONDS)"));

    /* the default: it waits, says so, and serves once the database is up */
    unlink(harness_srv.log_path); /* before the thread reads it */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, start_pg_when_waited_for, NULL), 0);
    int started = start_with_new_log(fast);
    void *pg_started = NULL;
    pthread_join(t, &pg_started);
    ck_assert_msg(pg_started != NULL, "aidcd never said it waits for PostgreSQL, see %s",
                  harness_srv.log_path);
    ck_assert_int_eq(started, 0);
    ck_assert(harness_login_admin());
    ck_assert_int_eq(req("GET", "/readyz", NULL, NULL), 200);
    ck_assert_int_eq(req("GET", "/api/v1/tenants/before", harness_srv.admin_token, NULL), 200);
    ck_assert(!log_has("postgresql://")); /* the waiting line names the setting only */
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("dbrestart");
    TCase *tc = tcase_create("dbrestart");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, database_outage_is_503_then_recovers);
    tcase_add_test(tc, restart_while_idle_is_invisible);
    tcase_add_test(tc, serve_waits_for_the_database_at_start);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
