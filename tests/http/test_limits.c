/*
 * test_limits.c - the abuse limits of aidcd, each against a real server:
 * request rates per client address and per credential (429 problem+json
 * with Retry-After, other clients unaffected, one audit record per burst of
 * refusals, allowed again after the wait), open connections per address and
 * in all, an idle client closed after AIDC_HTTP_IDLE_TIMEOUT_SECONDS while a
 * slowloris at its connection limit leaves other clients answered, the header
 * size (431), and the depth and value count of JSON bodies. Body size and the
 * per-field and per-list limits have their own tests (test_badinput_*.c).
 *
 * Loopback has a whole /8: each case speaks from its own 127.0.0.x, so the
 * per-address limits of one case do not touch another's.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IDLE_TIMEOUT      2
#define CONNS_PER_ADDRESS 6

static const char *const limits_env[] = {
    "AIDC_RATE_LIMIT_PER_ADDRESS=5",      "AIDC_RATE_LIMIT_ADDRESS_BURST=20",
    "AIDC_RATE_LIMIT_PER_TOKEN=2",        "AIDC_RATE_LIMIT_TOKEN_BURST=6",
    "AIDC_MAX_CONNECTIONS_PER_ADDRESS=6", "AIDC_HTTP_IDLE_TIMEOUT_SECONDS=2",
    "AIDC_MAX_HEADER_BYTES=8192",         "AIDC_JSON_MAX_DEPTH=8",
    "AIDC_JSON_MAX_VALUES=100",           NULL};

static void setup(void)
{
    harness_setup("limits", limits_env);
}

static void teardown(void)
{
    harness_teardown();
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- a request from a chosen loopback address -------------------------------------- */

struct answer {
    long status;
    long retry_after; /* -1: no header */
    char ctype[64];
    char body[512];
};

static size_t keep_body(char *p, size_t sz, size_t n, void *ud)
{
    struct answer *a = ud;
    size_t have = strlen(a->body), take = sz * n;
    if (have + 1 < sizeof a->body)
        strncat(a->body, p, take < sizeof a->body - have - 1 ? take : sizeof a->body - have - 1);
    return sz * n;
}

static size_t keep_header(char *p, size_t sz, size_t n, void *ud)
{
    struct answer *a = ud;
    size_t len = sz * n;
    if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0)
        a->retry_after = strtol(p + 12, NULL, 10);
    if (len > 13 && strncasecmp(p, "Content-Type:", 13) == 0)
        snprintf(a->ctype, sizeof a->ctype, "%.*s", (int)strcspn(p + 14, "\r\n"), p + 14);
    return len;
}

/* GET or POST path from source address src; the answer in *a (status 0: none). */
static long from(const char *src, const char *method, const char *path, const char *token,
                 const char *body, struct answer *a)
{
    memset(a, 0, sizeof *a);
    a->retry_after = -1;
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    char url[256], auth[1100];
    snprintf(url, sizeof url, "%s%s", harness_srv.base, path);
    struct curl_slist *h = NULL;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_INTERFACE, src);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, keep_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return a->status;
}

static void assert_429(const struct answer *a, const char *what)
{
    ck_assert_msg(a->status == 429, "%s: expected 429, got %ld %s", what, a->status, a->body);
    ck_assert_msg(a->retry_after >= 1 && a->retry_after <= 60, "%s: Retry-After %ld", what,
                  a->retry_after);
    ck_assert_msg(strstr(a->ctype, "application/problem+json"), "%s: Content-Type %s", what,
                  a->ctype);
    ck_assert_msg(strstr(a->body, "retry after"), "%s: detail %s", what, a->body);
}

/* Poll (up to 10 s) until path from src answers something else than 429. */
static long wait_not_limited(const char *src, const char *path, const char *token)
{
    struct answer a;
    double deadline = now_s() + 10;
    do {
        if (from(src, "GET", path, token, NULL, &a) != 429)
            return a.status;
        usleep(100 * 1000);
    } while (now_s() < deadline);
    return 429;
}

/* ---- rates ----------------------------------------------------------------------------- */

START_TEST(rate_per_address_is_429_with_retry_after)
{
    struct answer a;
    int allowed = 0;
    /* the burst (20) at once, unauthenticated: 401s count like any request */
    for (int i = 0; i < 40 && from("127.0.0.2", "GET", "/api/v1/me", NULL, NULL, &a) != 429; i++)
        allowed++;
    ck_assert_msg(allowed >= 19 && allowed <= 22, "%d requests passed before the first 429",
                  allowed);
    assert_429(&a, "address over its rate");
    /* the probes are never limited; another address is not */
    ck_assert_int_eq(from("127.0.0.2", "GET", "/healthz", NULL, NULL, &a), 200);
    ck_assert_int_eq(from("127.0.0.3", "GET", "/api/v1/me", NULL, NULL, &a), 401);
    /* a login from the limited address is refused before the password is looked at */
    from("127.0.0.2", "POST", "/api/v1/auth/login", NULL,
         "{\"username\":\"" ADMIN_USER "\",\"password\":\"" ADMIN_PASSWORD "\"}", &a);
    assert_429(&a, "login from a limited address");
    /* waiting as told lets the address in again */
    ck_assert_int_eq(wait_not_limited("127.0.0.2", "/api/v1/me", NULL), 401);
}
END_TEST

static long denied_429(const char *src)
{
    const char *p[] = {src};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*) FROM audit_log WHERE status = 429 AND "
                              "outcome = 'denied' AND source_ip = $1::inet",
                              1, p);
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return n;
}

START_TEST(rate_per_credential_is_429_and_audited_once)
{
    char *jwt = login(ADMIN_USER, ADMIN_PASSWORD), *other = login(ADMIN_USER, ADMIN_PASSWORD);
    ck_assert_ptr_nonnull(jwt);
    ck_assert_ptr_nonnull(other);
    struct answer a;
    int allowed = 0;
    for (int i = 0; i < 20 && from("127.0.0.4", "GET", "/api/v1/tenants", jwt, NULL, &a) == 200;
         i++)
        allowed++;
    ck_assert_msg(allowed >= 5 && allowed <= 8, "%d requests passed before the first 429", allowed);
    assert_429(&a, "credential over its rate");
    ck_assert_msg(strstr(a.body, "credential"), "detail names the credential: %s", a.body);
    /* more refusals of the same burst: one audit record, not one each */
    for (int i = 0; i < 5; i++)
        from("127.0.0.4", "GET", "/api/v1/tenants", jwt, NULL, &a);
    ck_assert_int_eq(a.status, 429);
    ck_assert_int_eq(denied_429("127.0.0.4"), 1);
    /* another session of the same user from the same address has its own budget */
    ck_assert_int_eq(from("127.0.0.4", "GET", "/api/v1/tenants", other, NULL, &a), 200);
    ck_assert_int_eq(wait_not_limited("127.0.0.4", "/api/v1/tenants", jwt), 200);
    free(jwt);
    free(other);
}
END_TEST

/* ---- connections ------------------------------------------------------------------------ */

static int connect_to(int port, const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in me = {.sin_family = AF_INET}, srv = {.sin_family = AF_INET};
    inet_pton(AF_INET, src, &me.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &srv.sin_addr);
    srv.sin_port = htons((uint16_t)port);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof me), 0);
    ck_assert_msg(connect(fd, (struct sockaddr *)&srv, sizeof srv) == 0, "connect: %s",
                  strerror(errno));
    return fd;
}

static int connect_from(const char *src)
{
    return connect_to(harness_srv.port, src);
}

/* Whether the server closed fd within ms (EOF or reset), without sending an answer. */
static bool closed_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) != 1)
        return false;
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* Send one whole request on fd and read the status line's code (0: none). */
static int ask(int fd)
{
    const char rq[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    if (send(fd, rq, sizeof rq - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof rq - 1))
        return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char buf[512];
    if (poll(&p, 1, 5000) != 1)
        return 0;
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    if (n < 12)
        return 0;
    buf[n] = '\0';
    return atoi(buf + 9);
}

START_TEST(connections_per_address_are_limited)
{
    int fds[CONNS_PER_ADDRESS];
    for (int i = 0; i < CONNS_PER_ADDRESS; i++) {
        fds[i] = connect_from("127.0.0.5");
        ck_assert_int_eq(ask(fds[i]), 200); /* each is open and counted */
    }
    int extra = connect_from("127.0.0.5");
    /* at once: not by the idle timeout */
    ck_assert_msg(closed_within(extra, 500), "a connection over the limit stayed open");
    close(extra);
    /* another address is served meanwhile */
    struct answer a;
    ck_assert_int_eq(from("127.0.0.6", "GET", "/healthz", NULL, NULL, &a), 200);
    /* once one closes, the address may connect again (the count follows the close) */
    close(fds[0]);
    double deadline = now_s() + 5;
    int st = 0;
    while (st != 200 && now_s() < deadline) {
        int fd = connect_from("127.0.0.5");
        st = ask(fd);
        close(fd);
        if (st != 200)
            usleep(50 * 1000);
    }
    ck_assert_int_eq(st, 200);
    for (int i = 1; i < CONNS_PER_ADDRESS; i++)
        close(fds[i]);
}
END_TEST

/*
 * A second aidcd (an API replica) of the same database with AIDC_MAX_CONNECTIONS=4
 * and AIDC_THREADS=threads (its log at log_suffix: its port is read from its
 * "listening" line), and four clients on it, each from an address of its own
 * (net.1 to net.4) and each served - however the kernel spreads them.
 */
static void replica_full(struct aidc_server *two, const char *log_suffix, const char *threads,
                         const char *net, int fds[4])
{
    *two = harness_srv;
    two->pid = 0;
    snprintf(two->log_path, sizeof two->log_path, "%.290s.%s", harness_srv.log_path, log_suffix);
    char th[32];
    snprintf(th, sizeof th, "AIDC_THREADS=%s", threads);
    const char *env[] = {"AIDC_MAX_CONNECTIONS=4", "AIDC_MAX_CONNECTIONS_PER_ADDRESS=0",
                         "AIDC_WORKERS=0", th, NULL};
    ck_assert_int_eq(harness_server_start(two, env), 0);
    ck_assert_int_ne(two->port, harness_srv.port);
    for (int i = 0; i < 4; i++) {
        fds[i] = connect_to(two->port, fmt("%s.%d", net, i + 1));
        ck_assert_int_eq(ask(fds[i]), 200);
    }
}

/*
 * AIDC_MAX_CONNECTIONS with one HTTP thread: past it, libmicrohttpd stops
 * accepting, so a new client waits in the listen backlog (answered once a
 * connection closes) instead of being refused. (With more threads the limit is
 * counted across their daemons and a connection past it is closed: below.)
 */
START_TEST(connections_overall_are_limited)
{
    struct aidc_server two;
    int fds[4];
    replica_full(&two, "two", "1", "127.0.1", fds);
    /* a fifth waits in the kernel's backlog, unanswered, until one of them closes */
    int extra = connect_to(two.port, "127.0.1.9");
    const char rq[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_int_eq(send(extra, rq, sizeof rq - 1, MSG_NOSIGNAL), (ssize_t)(sizeof rq - 1));
    struct pollfd p = {.fd = extra, .events = POLLIN};
    ck_assert_msg(poll(&p, 1, 700) == 0, "a fifth connection was served at once");
    close(fds[0]);
    char buf[256] = "";
    ck_assert_msg(poll(&p, 1, 5000) == 1, "the fifth connection was never served");
    ck_assert_int_gt(recv(extra, buf, sizeof buf - 1, 0), 12);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "answer: %.40s", buf);
    close(extra);
    for (int i = 1; i < 4; i++)
        close(fds[i]);
    ck_assert_int_eq(harness_server_stop(&two), 0);
}
END_TEST

/*
 * AIDC_MAX_CONNECTIONS with two HTTP threads: each thread's daemon may hold
 * more than its half (the kernel spreads clients at random), the overall limit
 * still holds - a connection past it is closed unanswered - and once one
 * closes, a new client is served.
 */
START_TEST(connections_overall_are_limited_across_threads)
{
    struct aidc_server two;
    int fds[4];
    replica_full(&two, "three", "2", "127.0.2", fds);
    int extra = connect_to(two.port, "127.0.2.9");
    ck_assert_msg(closed_within(extra, 2000), "a fifth connection stayed open");
    close(extra);
    close(fds[0]);
    double deadline = now_s() + 5;
    int st = 0;
    while (st != 200 && now_s() < deadline) {
        int fd = connect_to(two.port, "127.0.2.10");
        st = ask(fd);
        close(fd);
        if (st != 200)
            usleep(50 * 1000);
    }
    ck_assert_int_eq(st, 200);
    for (int i = 1; i < 4; i++)
        close(fds[i]);
    ck_assert_int_eq(harness_server_stop(&two), 0);
}
END_TEST

START_TEST(idle_client_is_closed)
{
    int fd = connect_from("127.0.0.7");
    const char part[] = "GET /healthz HTTP/1.1\r\nHo";
    ck_assert_int_eq(send(fd, part, sizeof part - 1, MSG_NOSIGNAL), (ssize_t)(sizeof part - 1));
    double t0 = now_s();
    ck_assert_msg(closed_within(fd, (IDLE_TIMEOUT + 4) * 1000),
                  "a half-sent request was kept open past the idle timeout");
    double took = now_s() - t0;
    ck_assert_msg(took >= IDLE_TIMEOUT - 0.5, "closed after %.1f s, before the timeout", took);
    close(fd);
}
END_TEST

/* A slowloris: every connection its address may open, each dribbling a header. */
struct loris {
    atomic_bool stop;
    int fds[CONNS_PER_ADDRESS];
    int sent;
};

static void *dribble(void *arg)
{
    struct loris *l = arg;
    const char start[] = "GET /api/v1/me HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < CONNS_PER_ADDRESS; i++)
        send(l->fds[i], start, sizeof start - 1, MSG_NOSIGNAL);
    static const char line[] = "X-a: b\r\n"; /* one more header line, a byte at a time */
    for (size_t round = 0; !atomic_load(&l->stop); round++) {
        for (int i = 0; i < CONNS_PER_ADDRESS; i++)
            if (send(l->fds[i], &line[round % (sizeof line - 1)], 1, MSG_NOSIGNAL) == 1)
                l->sent++;
        usleep(500 * 1000); /* well inside the idle timeout: never idle */
    }
    return NULL;
}

START_TEST(slowloris_leaves_other_clients_answered)
{
    struct loris l = {.sent = 0};
    atomic_init(&l.stop, false);
    for (int i = 0; i < CONNS_PER_ADDRESS; i++)
        l.fds[i] = connect_from("127.0.0.8");
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, dribble, &l), 0);
    /* for longer than the idle timeout: other clients get answers, and quickly */
    double until = now_s() + IDLE_TIMEOUT * 2 + 1, worst = 0;
    int answered = 0;
    struct answer a;
    while (now_s() < until) {
        double t0 = now_s();
        ck_assert_int_eq(from("127.0.0.9", "GET", "/healthz", NULL, NULL, &a), 200);
        double took = now_s() - t0;
        worst = took > worst ? took : worst;
        answered++;
        usleep(100 * 1000);
    }
    /* the loris's address has no more connections to spend */
    int extra = connect_from("127.0.0.8");
    bool refused = closed_within(extra, 500);
    close(extra);
    atomic_store(&l.stop, true);
    pthread_join(t, NULL);
    int open = 0; /* the loris really held its connections all along */
    for (int i = 0; i < CONNS_PER_ADDRESS; i++) {
        struct pollfd p = {.fd = l.fds[i], .events = POLLIN};
        open += poll(&p, 1, 0) == 0;
        close(l.fds[i]);
    }
    ck_assert_int_eq(open, CONNS_PER_ADDRESS);
    ck_assert_msg(answered >= 10, "only %d answers while the slowloris ran", answered);
    ck_assert_msg(worst < 1.0, "an answer took %.2f s while the slowloris ran", worst);
    ck_assert_msg(l.sent > CONNS_PER_ADDRESS, "the slowloris sent only %d bytes", l.sent);
    ck_assert_msg(refused, "the slowloris's address got a connection over its limit");
}
END_TEST

/* ---- sizes and shapes ------------------------------------------------------------------- */

START_TEST(oversized_headers_are_431)
{
    struct http_res r;
    char *big = malloc(16 * 1024 + 16);
    ck_assert_ptr_nonnull(big);
    strcpy(big, "X-Big: ");
    memset(big + 7, 'a', 16 * 1024);
    big[7 + 16 * 1024] = '\0';
    const char *extra[] = {big, NULL};
    long st = http_do(&harness_srv, "GET", "/healthz", NULL, NULL, extra, &r);
    http_res_free(&r);
    ck_assert_msg(st == 431, "a 16 KiB header answered %ld", st);
    /* a header well inside the limit is fine, and the server is still up */
    big[7 + 2048] = '\0';
    st = http_do(&harness_srv, "GET", "/healthz", NULL, NULL, extra, &r);
    http_res_free(&r);
    ck_assert_int_eq(st, 200);
    free(big);
}
END_TEST

START_TEST(json_depth_and_values_are_limited)
{
    char *jwt = login(ADMIN_USER, ADMIN_PASSWORD); /* a fresh credential: a fresh budget */
    ck_assert_ptr_nonnull(jwt);
    struct http_res r;
    char body[512];
    /* 9 levels (the limit is 8) in a field the handler would otherwise refuse itself */
    snprintf(body, sizeof body, "{\"name\":[[[[[[[[1]]]]]]]]}");
    long st = reqj("POST", "/api/v1/tenants", jwt, body, &r);
    ck_assert_msg(st == 400 && r.body && strstr(r.body, "deeper than 8"), "%ld %s", st, r.body);
    http_res_free(&r);
    /* 8 levels pass the limit and meet the field's own check */
    snprintf(body, sizeof body, "{\"name\":[[[[[[1]]]]]]}");
    st = reqj("POST", "/api/v1/tenants", jwt, body, &r);
    ck_assert_msg(st == 400 && r.body && !strstr(r.body, "deeper"), "%ld %s", st, r.body);
    http_res_free(&r);
    /* 101 values (the limit is 100) */
    char many[600] = "{\"name\":[0";
    for (int i = 1; i < 101; i++)
        strcat(many, ",0");
    strcat(many, "]}");
    st = reqj("POST", "/api/v1/tenants", jwt, many, &r);
    ck_assert_msg(st == 400 && r.body && strstr(r.body, "more than 100 values"), "%ld %s", st,
                  r.body);
    char *ct = http_header(&r, "Content-Type");
    ck_assert_msg(ct && strstr(ct, "application/problem+json"), "Content-Type %s", ct);
    free(ct);
    http_res_free(&r);
    /* commas inside strings are not values */
    st = reqj(
        "POST", "/api/v1/tenants", jwt,
        "{\"slug\":\"commas\",\"name\":\",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
        ",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\"}",
        &r);
    ck_assert_msg(st == 201, "a name full of commas: %ld %s", st, r.body);
    http_res_free(&r);
    free(jwt);
}
END_TEST

START_TEST(lists_are_bounded)
{
    char *jwt = login(ADMIN_USER, ADMIN_PASSWORD);
    ck_assert_ptr_nonnull(jwt);
    struct http_res r;
    long st = reqj("GET", "/api/v1/tenants?limit=1001", jwt, NULL, &r);
    ck_assert_msg(st == 400 && r.body && strstr(r.body, "limit"), "%ld %s", st, r.body);
    http_res_free(&r);
    st = reqj("GET", "/api/v1/tenants?limit=1000", jwt, NULL, &r);
    ck_assert_int_eq(st, 200);
    http_res_free(&r);
    free(jwt);
}
END_TEST

int main(void)
{
    harness_require_pg();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("limits");
    TCase *tc = tcase_create("limits");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, rate_per_address_is_429_with_retry_after);
    tcase_add_test(tc, rate_per_credential_is_429_and_audited_once);
    tcase_add_test(tc, connections_per_address_are_limited);
    tcase_add_test(tc, connections_overall_are_limited);
    tcase_add_test(tc, connections_overall_are_limited_across_threads);
    tcase_add_test(tc, idle_client_is_closed);
    tcase_add_test(tc, slowloris_leaves_other_clients_answered);
    tcase_add_test(tc, oversized_headers_are_431);
    tcase_add_test(tc, json_depth_and_values_are_limited);
    tcase_add_test(tc, lists_are_bounded);
    suite_add_tcase(s, tc);
    int rc = suite_run(s);
    curl_global_cleanup();
    return rc;
}
