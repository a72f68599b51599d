/*
 * test_http_threads.c - connections are spread over the HTTP threads
 * (server/http.c: a listening socket per thread, SO_REUSEPORT).
 *
 * An HTTP thread serves its connections one request at a time and waits for
 * the database in each. With libmicrohttpd's own pool, one worker could take
 * every connection a client opened together (it accepts up to ten at once),
 * and a request waiting on the database then held up all of them while the
 * other thread idled. Here a request waits on a lock this test holds; of the
 * connections opened together with it, those on the other thread are still
 * answered at once.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OTHERS 16

static void setup(void)
{
    const char *env[] = {"AIDC_THREADS=2", NULL};
    harness_setup("httpthreads", env);
}

static void teardown(void)
{
    harness_teardown();
}

static int open_conn(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)harness_srv.port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void send_all(int fd, const char *s)
{
    size_t n = strlen(s);
    ck_assert_int_eq(write(fd, s, n), (ssize_t)n);
}

/* Whether fd has an answer (some bytes) within ms. */
static bool answered_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

START_TEST(a_request_waiting_on_the_database_holds_up_only_its_thread)
{
    /* every connection first, as a proxy's pool or a load generator opens them */
    int waiting = open_conn(), others[OTHERS];
    for (int i = 0; i < OTHERS; i++)
        others[i] = open_conn();
    PGconn *lock = PQconnectdb(harness_srv.owner_url);
    ck_assert_int_eq(PQstatus(lock), CONNECTION_OK);
    PQclear(PQexec(lock, "BEGIN"));
    PGresult *r = PQexec(lock, "LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE");
    ck_assert_int_eq(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    send_all(waiting, fmt("GET /api/v1/tenants HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n"
                          "\r\n",
                          harness_srv.admin_token));
    /* the listing waits for the lock (its thread in the database) */
    ck_assert_msg(!answered_within(waiting, 500), "the tenants were listed through the lock");
    for (int i = 0; i < OTHERS; i++)
        send_all(others[i], "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    int quick = 0;
    for (int i = 0; i < OTHERS; i++)
        quick += answered_within(others[i], 300);
    fprintf(stderr, "%d of %d connections answered while one request waited\n", quick, OTHERS);
    /* on the waiting request's thread: none; on the other: at once. One thread
     * holding all seventeen is a chance of 2^-16 with the kernel's spread. */
    ck_assert_msg(quick >= 1, "every connection waited behind the one request (all on one thread)");
    ck_assert_msg(quick < OTHERS, "no connection shared the waiting request's thread");
    PQclear(PQexec(lock, "COMMIT"));
    PQfinish(lock);
    ck_assert_msg(answered_within(waiting, 10000), "the listing never came after the lock");
    for (int i = 0; i < OTHERS; i++) {
        ck_assert_msg(answered_within(others[i], 10000), "connection %d never answered", i);
        close(others[i]);
    }
    close(waiting);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("http_threads");
    TCase *tc = tcase_create("spread");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_request_waiting_on_the_database_holds_up_only_its_thread);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(threads_suite());
}
