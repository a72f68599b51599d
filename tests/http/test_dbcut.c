/*
 * test_dbcut.c - the database connection breaks in the middle of a request.
 *
 * aidcd talks to PostgreSQL through a small TCP proxy in this program, which
 * can cut the connection the moment aidcd sends a given prepared statement.
 * Whatever the moment, a request either takes effect completely (with its
 * audit event) or not at all, and is never half applied outside its
 * transaction.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the proxy ---------------------------------------------------------------------- */

static int proxy_fd, proxy_port, pg_port;
static pthread_mutex_t trigger_mu = PTHREAD_MUTEX_INITIALIZER;
static char trigger[64];      /* cut when the client binds this prepared statement ... */
static atomic_int cuts;       /* ... and count how often that happened */

static void arm(const char *bytes)
{
    pthread_mutex_lock(&trigger_mu);
    snprintf(trigger, sizeof trigger, "%s", bytes);
    pthread_mutex_unlock(&trigger_mu);
}

/*
 * True when buf holds a Bind message of statement `name`: 'B', a 4-byte
 * length, the unnamed portal "" and the statement name. (A Parse message, sent
 * when a connection prepares its statements, names it too, but does not look
 * like this.)
 */
static bool binds(const char *buf, size_t n, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 6; i + nl < n; i++)
        if (buf[i - 6] == 'B' && buf[i - 1] == '\0' && memcmp(buf + i, name, nl) == 0 &&
            buf[i + nl] == '\0')
            return true;
    return false;
}

/* True (and disarmed) when buf binds the armed statement. */
static bool fires(const char *buf, size_t n)
{
    bool hit = false;
    pthread_mutex_lock(&trigger_mu);
    if (trigger[0] && binds(buf, n, trigger)) {
        trigger[0] = '\0';
        hit = true;
    }
    pthread_mutex_unlock(&trigger_mu);
    return hit;
}

static void *pump(void *arg)
{
    int client = (int)(intptr_t)arg;
    int server = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)pg_port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(server, (struct sockaddr *)&sa, sizeof sa) != 0)
        goto out;
    struct pollfd p[2] = {{.fd = client, .events = POLLIN}, {.fd = server, .events = POLLIN}};
    char buf[65536];
    for (;;) {
        if (poll(p, 2, -1) < 0)
            break;
        if (p[0].revents) {
            ssize_t n = read(client, buf, sizeof buf);
            if (n <= 0)
                break;
            if (fires(buf, (size_t)n)) { /* the statement never reaches the server */
                atomic_fetch_add(&cuts, 1);
                break;
            }
            if (write(server, buf, (size_t)n) != n)
                break;
        }
        if (p[1].revents) {
            ssize_t n = read(server, buf, sizeof buf);
            if (n <= 0 || write(client, buf, (size_t)n) != n)
                break;
        }
    }
out:
    close(server);
    close(client);
    return NULL;
}

static void *accept_loop(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(proxy_fd, NULL, NULL);
        if (c < 0)
            return NULL;
        pthread_t t;
        if (pthread_create(&t, NULL, pump, (void *)(intptr_t)c) == 0)
            pthread_detach(t);
        else
            close(c);
    }
}

static void proxy_start(void)
{
    proxy_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t len = sizeof sa;
    ck_assert_int_eq(bind(proxy_fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(proxy_fd, 64), 0);
    getsockname(proxy_fd, (struct sockaddr *)&sa, &len);
    proxy_port = ntohs(sa.sin_port);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, accept_loop, NULL), 0);
    pthread_detach(t);
}

/* ---- set-up --------------------------------------------------------------------------- */

/* The port of a postgresql://user:pw@host:PORT/db URL. */
static int url_port(const char *url)
{
    const char *at = strrchr(url, '@');
    const char *colon = at ? strchr(at, ':') : NULL;
    return colon ? atoi(colon + 1) : 5432;
}

static void setup(void)
{
    harness_require_pg();
    proxy_start();
    harness_db_create(&harness_srv, "dbcut");
    pg_port = url_port(harness_srv.app_url);
    /*
     * The HTTP threads' connections go through the proxy; the test's and the
     * background workers' do not, so a worker's COMMIT cannot take a cut armed
     * for a request's.
     */
    char via[600], env[640], workers[640];
    const char *at = strrchr(harness_srv.app_url, '@');
    const char *slash = strchr(at, '/');
    snprintf(via, sizeof via, "%.*s127.0.0.1:%d%s", (int)(at - harness_srv.app_url + 1),
             harness_srv.app_url, proxy_port, slash);
    snprintf(env, sizeof env, "AIDC_DATABASE_URL=%s", via);
    snprintf(workers, sizeof workers, "AIDC_WORKER_DATABASE_URL=%s", harness_srv.app_url);
    const char *extra[] = {env, workers, NULL};
    unlink(harness_srv.log_path);
    ck_assert_int_eq(harness_server_start(&harness_srv, extra), 0);
    ck_assert(harness_login_admin());
}

static void teardown(void)
{
    harness_teardown();
}

static long audit_count(const char *action, const char *resource)
{
    const char *p[2] = {action, resource};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*) FROM audit_log WHERE action = $1"
                              " AND resource_id = $2 AND outcome = 'success'",
                              2, p);
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static char *display_name(const char *user)
{
    const char *p[1] = {user};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT display_name FROM users WHERE username = $1", 1, p);
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* ---- tests ----------------------------------------------------------------------------- */

/*
 * The connection breaks before the transaction's first statement reached the
 * database: nothing was lost, so aidcd opens the transaction again on a new
 * connection and the request succeeds - inside a transaction, with its audit
 * event.
 */
START_TEST(cut_before_the_first_answer_is_retried_in_a_transaction)
{
    make_user("cara", "cara-password-1", NULL);
    int before = atomic_load(&cuts);
    arm("user_update");
    struct http_res r;
    ck_assert_int_eq(reqj("PATCH", "/api/v1/users/cara", harness_srv.admin_token,
                          "{\"display_name\":\"Cara after\"}", &r),
                     200);
    http_res_free(&r);
    ck_assert_int_eq(atomic_load(&cuts), before + 1);
    char *name = display_name("cara");
    ck_assert_str_eq(name, "Cara after");
    free(name);
    ck_assert_int_eq(audit_count("user.update", "cara"), 1);
}
END_TEST

/*
 * The connection breaks when the COMMIT is sent, after the change and its
 * audit event were answered: the transaction is gone with the connection, the
 * client gets 503, and neither the change nor its event exists.
 */
START_TEST(cut_before_commit_loses_everything_and_says_so)
{
    make_user("dave", "dave-password-1", NULL);
    int before = atomic_load(&cuts);
    arm("aidc_commit");
    struct http_res r;
    ck_assert_int_eq(reqj("PATCH", "/api/v1/users/dave", harness_srv.admin_token,
                          "{\"display_name\":\"Dave after\"}", &r),
                     503);
    char *ra = http_header(&r, "Retry-After");
    ck_assert_ptr_nonnull(ra);
    free(ra);
    http_res_free(&r);
    ck_assert_int_eq(atomic_load(&cuts), before + 1);
    char *name = display_name("dave");
    ck_assert_str_eq(name, "");
    free(name);
    ck_assert_int_eq(audit_count("user.update", "dave"), 0);
    /* and the server carries on */
    ck_assert_int_eq(req("PATCH", "/api/v1/users/dave", harness_srv.admin_token,
                         "{\"display_name\":\"Dave again\"}"),
                     200);
    ck_assert_int_eq(audit_count("user.update", "dave"), 1);
}
END_TEST

/* A read whose connection breaks is simply run again. */
START_TEST(cut_during_a_read_is_invisible)
{
    make_tenant("cut-read");
    make_project("cut-read", "p1");
    int before = atomic_load(&cuts);
    arm("r_project_get"); /* a read goes wrapped, under its own name (db/readctx.h) */
    ck_assert_int_eq(req("GET", "/api/v1/tenants/cut-read/projects/p1", harness_srv.admin_token,
                         NULL),
                     200);
    ck_assert_int_eq(atomic_load(&cuts), before + 1);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("dbcut");
    TCase *tc = tcase_create("dbcut");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    /* the proxy's threads live in this process: the tests must run in it too
     * (see main), not in forked children */
    tcase_add_test(tc, cut_before_the_first_answer_is_retried_in_a_transaction);
    tcase_add_test(tc, cut_before_commit_loses_everything_and_says_so);
    tcase_add_test(tc, cut_during_a_read_is_invisible);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
