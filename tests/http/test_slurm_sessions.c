/*
 * test_slurm_sessions.c - an interactive session on the real Slurm: the job
 * starts a small HTTP and WebSocket app on a port it picks on its node and
 * reports back (backends/slurmscript.c), aidcd finds it at the node Slurm
 * placed the job on (never where the job says), and the browser's requests
 * and a WebSocket pass the relay to it; stopping the session ends the Slurm job.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/slurmtest.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define T      "phys"
#define WAIT_S 90

static char *ann;
static const char *fast[] = {"AIDC_SYNC_INTERVAL_MS=200", "AIDC_ADMISSION_INTERVAL_MS=200", NULL};

static void setup(void)
{
    harness_setup("slurmsessions", fast);
    curl_global_init(CURL_GLOBAL_ALL);
    slurmtest_register_cluster();
    ann = jobs_tenant_member(T, "lab", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":8}}", "ann");
}

static void teardown(void)
{
    free(ann);
    harness_teardown();
}

/* HTTP with the headers it got, and a WebSocket that echoes what it reads. */
#define APP                                                                                        \
    "import http.server, os, base64, hashlib\\n"                                                   \
    "class H(http.server.BaseHTTPRequestHandler):\\n"                                              \
    "    protocol_version = 'HTTP/1.1'\\n"                                                         \
    "    def do_GET(self):\\n"                                                                     \
    "        if self.headers.get('Upgrade', '').lower() == 'websocket':\\n"                        \
    "            k = self.headers['Sec-WebSocket-Key'] + "                                         \
    "'258EAFA5-E914-47DA-95CA-C5AB0DC85B11'\\n"                                                    \
    "            a = base64.b64encode(hashlib.sha1(k.encode()).digest()).decode()\\n"              \
    "            self.send_response(101); self.send_header('Upgrade', 'websocket')\\n"             \
    "            self.send_header('Connection', 'Upgrade')\\n"                                     \
    "            self.send_header('Sec-WebSocket-Accept', a); self.end_headers()\\n"               \
    "            self.wfile.flush()\\n"                                                            \
    "            while True:\\n"                                                                   \
    "                d = self.rfile.read1(65536)\\n"                                               \
    "                if not d: break\\n"                                                           \
    "                self.wfile.write(d); self.wfile.flush()\\n"                                   \
    "            return\\n"                                                                        \
    "        b = ('path=%s auth=%s' % (self.path, self.headers.get('Authorization'))).encode()\\n" \
    "        self.send_response(200); self.send_header('Content-Length', str(len(b)))\\n"          \
    "        self.end_headers(); self.wfile.write(b)\\n"                                           \
    "http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()"

static json_t *session_get(const char *id)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/" T "/sessions/%s", id), ann, NULL, &r), 200);
    json_t *s = json_incref(r.json);
    http_res_free(&r);
    return s;
}

/* A WebSocket through the relay (cookie): "hello" goes there and back. */
static void websocket_echo(const char *id, const char *cookie)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)harness_srv.sessions_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {.tv_sec = 20};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const char *rq = fmt("GET /sessions/%s/ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                         "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                         "Sec-WebSocket-Version: 13\r\nOrigin: %s\r\nCookie: aidc_app=%s\r\n\r\n",
                         id, harness_srv.sessions_port, harness_srv.sessions_base, cookie);
    ck_assert_int_eq(write(fd, rq, strlen(rq)), (ssize_t)strlen(rq));
    char head[4096] = "";
    size_t n = 0;
    while (!strstr(head, "\r\n\r\n") && n + 1 < sizeof head) {
        ssize_t got = read(fd, head + n, 1); /* byte by byte: nothing past the head is taken */
        ck_assert_msg(got == 1, "the relay's answer ended: %s", head);
        n++;
    }
    ck_assert_msg(strncmp(head, "HTTP/1.1 101", 12) == 0, "%s", head);
    ck_assert_int_eq(write(fd, "hello", 5), 5);
    char echo[6] = "";
    size_t e = 0;
    while (e < 5) {
        ssize_t got = read(fd, echo + e, 5 - e);
        ck_assert_msg(got > 0, "no echo");
        e += (size_t)got;
    }
    ck_assert_str_eq(echo, "hello");
    close(fd);
}

START_TEST(a_session_on_slurm_is_reached_through_the_relay)
{
    struct http_res r;
    long st = reqj("POST", "/api/v1/tenants/" T "/sessions", ann,
                   "{\"project\":\"lab\",\"app\":\"web\",\"cluster\":\"hpc\",\"mounts\":[],"
                   "\"command\":[\"/usr/bin/python3\",\"-c\",\"" APP "\"]}",
                   &r);
    ck_assert_msg(st == 201, "create answered %ld: %s", st, r.body);
    char *id = strdup(jstr(r.json, "id"));
    char *job = strdup(jstr(json_object_get(r.json, "job"), "id"));
    http_res_free(&r);
    double until = jobs_now() + WAIT_S;
    json_t *s = NULL;
    for (;;) {
        json_decref(s);
        s = session_get(id);
        if (strcmp(jstr(s, "state"), "ready") == 0)
            break;
        ck_assert_msg(strcmp(jstr(s, "state"), "ended") != 0, "ended: %s",
                      jstr(s, "reason") ? jstr(s, "reason") : "");
        ck_assert_msg(jobs_now() < until, "still %s after %d s", jstr(s, "state"), WAIT_S);
        jobs_nap_ms(250);
    }
    ck_assert_str_eq(jstr(json_object_get(s, "job"), "cluster"), "hpc");
    json_decref(s);
    /* in: the link, then the cookie it sets */
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/tenants/" T "/sessions/%s/open", id), ann, NULL, &r),
                     200);
    char *path = strdup(jstr(r.json, "url") + strlen(harness_srv.sessions_base));
    http_res_free(&r);
    struct aidc_server relay = harness_srv;
    snprintf(relay.base, sizeof relay.base, "%s", harness_srv.sessions_base);
    ck_assert_int_eq(http_do(&relay, "GET", path, NULL, NULL, NULL, &r), 302);
    char *set = http_set_cookie(&r, "aidc_app");
    ck_assert_ptr_nonnull(set);
    char *cookie = strdup(set + strlen("aidc_app="));
    cookie[strcspn(cookie, ";")] = '\0';
    free(set);
    http_res_free(&r);
    const char *extra[] = {fmt("Cookie: aidc_app=%s", cookie), NULL};
    ck_assert_int_eq(http_do(&relay, "GET", fmt("/sessions/%s/x?y=1", id), NULL, NULL, extra, &r),
                     200);
    ck_assert_msg(strstr(r.body, fmt("path=/sessions/%s/x?y=1 auth=token ", id)), "%s", r.body);
    http_res_free(&r);
    websocket_echo(id, cookie);
    /* stopped: the Slurm job goes */
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/" T "/sessions/%s/stop", id), ann, NULL),
                     202);
    json_t *j = jobs_wait(ann, T, job, "cancelled", WAIT_S);
    json_decref(j);
    free(cookie);
    free(path);
    free(job);
    free(id);
}
END_TEST

int main(void)
{
    harness_require_pg();
    slurmtest_env();
    Suite *s = suite_create("slurm_sessions");
    TCase *tc = tcase_create("slurm_sessions");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, a_session_on_slurm_is_reached_through_the_relay);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
