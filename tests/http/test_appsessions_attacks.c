/*
 * test_appsessions_attacks.c - the sessions relay under attack: a hostile app
 * (it stalls, it sets aidc's cookies, it answers a WebSocket that is gone),
 * a browser that leaves half way, a stranger that sends a large body.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SESSIONS "/api/v1/tenants/chem/sessions"

static char *ann;

/*
 * The hostile app: raw HTTP on $PORT. .../stall never answers; .../storm
 * answers "100 Continue" again and again, never more; .../cookies
 * sets cookies of aidc's names; .../body answers how many bytes of body it
 * got; a WebSocket upgrade is answered 101 (on .../slow after 0.3 s) and
 * echoed; the rest is "hi".
 */
static const char hostile_app[] =
    "import os, socket, threading, time\n"
    "def head(c):\n"
    "    d = b''\n"
    "    while b'\\r\\n\\r\\n' not in d:\n"
    "        x = c.recv(65536)\n"
    "        if not x: return None, b''\n"
    "        d += x\n"
    "    h, rest = d.split(b'\\r\\n\\r\\n', 1)\n"
    "    return h.decode('latin-1'), rest\n"
    "def serve(c):\n"
    "    try:\n"
    "        h, rest = head(c)\n"
    "        if h is None: return\n"
    "        path = h.split(' ')[1]\n"
    "        low = h.lower()\n"
    "        if 'upgrade: websocket' in low:\n"
    "            if path.endswith('/slow'): time.sleep(0.3)\n"
    "            c.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\n'\n"
    "                      b'Connection: Upgrade\\r\\n\\r\\n')\n"
    "            while True:\n"
    "                x = c.recv(65536)\n"
    "                if not x: break\n"
    "                c.sendall(x)\n"
    "            return\n"
    "        if path.endswith('/stall'):\n"
    "            time.sleep(3600)\n"
    "            return\n"
    "        if path.endswith('/storm'):\n"
    "            while True:\n"
    "                c.sendall(b'HTTP/1.1 100 Continue\\r\\n\\r\\n')\n"
    "                time.sleep(0.01)\n"
    "        if path.endswith('/cookies'):\n"
    "            c.sendall(b'HTTP/1.1 200 OK\\r\\nSet-Cookie: aidc_app =evil; Path=/\\r\\n'\n"
    "                      b'Set-Cookie: aidc_app=evil; Path=/\\r\\n'\n"
    "                      b'Set-Cookie: =aidc_app=evil; Path=/\\r\\n'\n"
    "                      b'Set-Cookie: aidc_session\\t=evil; Path=/\\r\\n'\n"
    "                      b'Set-Cookie: theirs=1; Path=/\\r\\nContent-Length: 2\\r\\n'\n"
    "                      b'Connection: close\\r\\n\\r\\nok')\n"
    "            return\n"
    "        if path.endswith('/body'):\n"
    "            n = 0\n"
    "            for line in h.split('\\r\\n'):\n"
    "                if line.lower().startswith('content-length:'): n = int(line[15:])\n"
    "            while len(rest) < n:\n"
    "                x = c.recv(65536)\n"
    "                if not x: break\n"
    "                rest += x\n"
    "            b = str(len(rest)).encode()\n"
    "            c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: ' + str(len(b)).encode() +\n"
    "                      b'\\r\\nConnection: close\\r\\n\\r\\n' + b)\n"
    "            return\n"
    "        c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nhi')\n"
    "    finally:\n"
    "        c.close()\n"
    "s = socket.socket()\n"
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', int(os.environ['PORT'])))\n"
    "s.listen(1024)\n"
    "while True:\n"
    "    c, _ = s.accept()\n"
    "    threading.Thread(target=serve, args=(c,), daemon=True).start()\n";

/* jobs move fast; few relay connections, so that a leak of them shows; the tests' own
 * address is a proxy's (as nginx's is in production) */
static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=100", "AIDC_ADMISSION_INTERVAL_MS=200",
                                  "AIDC_SESSIONS_MAX_CONNECTIONS=8",
                                  "AIDC_SESSIONS_MAX_BODY_BYTES=1048576",
                                  "AIDC_TRUSTED_PROXIES=127.0.0.1", NULL};

static void setup(void)
{
    harness_setup("appsessions_attacks", env);
    make_tenant("chem");
    make_project("chem", "mol");
    ann = make_member_login("chem", "ann", "member");
    jobs_local_cluster("{}");
}

static void teardown(void)
{
    free(ann);
    jobs_stop_shims(20); /* its sessions' apps run on without aidcd */
    harness_teardown();
}

static struct aidc_server relay_srv(void)
{
    struct aidc_server r = harness_srv;
    r.port = harness_srv.sessions_port;
    snprintf(r.base, sizeof r.base, "%s", harness_srv.sessions_base);
    return r;
}

/* A session of the hostile app, ready; its id (malloc'd). */
static char *hostile_session(void)
{
    json_t *body = json_pack("{s:s, s:s, s:[], s:[s, s, s]}", "project", "mol", "app", "web",
                             "mounts", "command", "/usr/bin/python3", "-c", hostile_app);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    struct http_res r;
    long st = reqj("POST", SESSIONS, ann, text, &r);
    free(text);
    ck_assert_msg(st == 201, "create answered %ld: %s", st, r.body);
    char *id = strdup(jstr(r.json, "id"));
    http_res_free(&r);
    double until = jobs_now() + 60;
    for (;;) {
        ck_assert_int_eq(reqj("GET", fmt(SESSIONS "/%s", id), ann, NULL, &r), 200);
        const char *state = jstr(r.json, "state");
        if (strcmp(state, "ready") == 0)
            break;
        ck_assert_msg(strcmp(state, "ended") != 0, "ended: %s", jstr(r.json, "reason"));
        ck_assert_msg(jobs_now() < until, "still %s after 60 s", state);
        http_res_free(&r);
        jobs_nap_ms(200);
    }
    http_res_free(&r);
    return id;
}

/* The session's link followed: its aidc_app cookie value (malloc'd). */
static char *enter(const char *id)
{
    struct aidc_server relay = relay_srv();
    struct http_res r;
    ck_assert_int_eq(reqj("POST", fmt(SESSIONS "/%s/open", id), ann, NULL, &r), 200);
    char *path = strdup(jstr(r.json, "url") + strlen(harness_srv.sessions_base));
    http_res_free(&r);
    ck_assert_int_eq(http_do(&relay, "GET", path, NULL, NULL, NULL, &r), 302);
    free(path);
    char *set = http_set_cookie(&r, "aidc_app");
    ck_assert_ptr_nonnull(set);
    char *value = strdup(set + strlen("aidc_app="));
    value[strcspn(value, ";")] = '\0';
    free(set);
    http_res_free(&r);
    return value;
}

/* A raw connection to the relay. */
static int dial_relay(int timeout_s)
{
    struct aidc_server relay = relay_srv();
    return http_dial(&relay, timeout_s);
}

static void send_all(int fd, const char *s)
{
    size_t n = strlen(s);
    ck_assert_int_eq(send(fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Whatever comes on fd within its receive timeout (malloc'd, maybe empty). */
static char *recv_some(int fd)
{
    char *buf = calloc(1, 65536);
    size_t got = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + got, 65535 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (strstr(buf, "\r\n\r\n") || got == 65535)
            break;
    }
    return buf;
}

/* How many descriptors aidcd holds. */
static int aidcd_fds(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)harness_srv.pid);
    DIR *d = opendir(path);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* ---- request bodies ----------------------------------------------------------------- */

START_TEST(a_body_reaches_the_app_whole)
{
    char *id = hostile_session();
    char *cookie = enter(id);
    struct aidc_server relay = relay_srv();
    size_t n = 100000;
    char *body = malloc(n);
    memset(body, 'x', n);
    const char *h[] = {fmt("Cookie: aidc_app=%s", cookie),
                       fmt("Origin: %s", harness_srv.sessions_base), NULL};
    struct http_res r;
    ck_assert_int_eq(http_raw(&relay, "POST", fmt("/sessions/%s/body", id), NULL, "text/plain",
                              body, n, h, &r),
                     200);
    ck_assert_str_eq(r.body, "100000");
    http_res_free(&r);
    free(body);
    free(cookie);
    free(id);
}
END_TEST

/* The status line fd gets within a few seconds of sending head (no body). */
static int status_of(const char *head)
{
    int fd = dial_relay(5);
    send_all(fd, head);
    char *got = recv_some(fd);
    close(fd);
    int code = 0;
    if (sscanf(got, "HTTP/1.%*d %d", &code) != 1)
        code = 0;
    free(got);
    return code;
}

START_TEST(a_body_is_refused_before_it_is_read)
{
    char *id = hostile_session();
    char *cookie = enter(id);
    /* past AIDC_SESSIONS_MAX_BODY_BYTES: 413 on its headers, nothing of it is read or kept */
    ck_assert_int_eq(status_of(fmt("POST /sessions/%s/body HTTP/1.1\r\nHost: x\r\n"
                                   "Cookie: aidc_app=%s\r\nOrigin: %s\r\n"
                                   "Content-Length: 2000000\r\n\r\n",
                                   id, cookie, harness_srv.sessions_base)),
                     413);
    /* a stranger's body is never read either */
    ck_assert_int_eq(status_of(fmt("POST /sessions/%s/body HTTP/1.1\r\nHost: x\r\n"
                                   "Content-Length: 900000\r\n\r\n",
                                   id)),
                     401);
    free(cookie);
    free(id);
}
END_TEST

/* ---- what an app answers ------------------------------------------------------------ */

START_TEST(an_app_cannot_set_aidc_cookies_by_any_spelling)
{
    char *id = hostile_session();
    char *cookie = enter(id);
    struct aidc_server relay = relay_srv();
    const char *h[] = {fmt("Cookie: aidc_app=%s", cookie), NULL};
    struct http_res r;
    ck_assert_int_eq(http_do(&relay, "GET", fmt("/sessions/%s/cookies", id), NULL, NULL, h, &r),
                     200);
    /* a browser trims the blanks around a name ("aidc_app =x" sets aidc_app) and sends a
     * cookie without a name as its value alone ("=aidc_app=x" sends "aidc_app=x"): each
     * would replace the entry of this or another session, or (one host for the portal and
     * the relay, ports apart) the portal's login */
    ck_assert_msg(strstr(r.headers, "evil") == NULL, "the app set aidc's cookie:\n%s",
                  r.headers);
    ck_assert_ptr_nonnull(strstr(r.headers, "Set-Cookie: theirs=1"));
    http_res_free(&r);
    free(cookie);
    free(id);
}
END_TEST

/* ---- connections left half way ------------------------------------------------------ */

START_TEST(a_stalled_app_does_not_hold_the_relay_once_the_browser_left)
{
    char *id = hostile_session();
    char *cookie = enter(id);
    /* as many requests as the relay serves connections, each to an app that never
     * answers (or answers 100 Continue forever); each browser gives up after a second */
    for (int i = 0; i < 8; i++) {
        int fd = dial_relay(1);
        send_all(fd, fmt("GET /sessions/%s/%s HTTP/1.1\r\nHost: x\r\nCookie: aidc_app=%s\r\n\r\n",
                         id, i % 2 ? "storm" : "stall", cookie));
        free(recv_some(fd));
        close(fd);
    }
    /* the relay lets them go and serves the next browser */
    struct aidc_server relay = relay_srv();
    const char *h[] = {fmt("Cookie: aidc_app=%s", cookie), NULL};
    double until = jobs_now() + 15;
    for (;;) {
        struct http_res r;
        long st = http_do(&relay, "GET", fmt("/sessions/%s/", id), NULL, NULL, h, &r);
        http_res_free(&r);
        if (st == 200)
            break;
        ck_assert_msg(jobs_now() < until, "the relay still answers %ld after 15 s", st);
        jobs_nap_ms(250);
    }
    free(cookie);
    free(id);
}
END_TEST

START_TEST(a_websocket_left_before_its_101_leaks_nothing)
{
    char *id = hostile_session();
    char *cookie = enter(id);
    char *sent = strdup(fmt("GET /sessions/%s/slow HTTP/1.1\r\nHost: x\r\nCookie: aidc_app=%s\r\n"
                            "Origin: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                            "Sec-WebSocket-Version: 13\r\n\r\n",
                            id, cookie, harness_srv.sessions_base));
    int before = aidcd_fds();
    /* the browser asks for a WebSocket and is gone (reset) before the app's 101 (late) */
    for (int i = 0; i < 20; i++) {
        int fd = dial_relay(5);
        send_all(fd, sent);
        struct linger l = {1, 0};
        ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l), 0);
        close(fd);
    }
    /* and one that the browser keeps, used, then closed */
    int fd = dial_relay(5);
    send_all(fd, sent);
    char *got = recv_some(fd);
    ck_assert_msg(strncmp(got, "HTTP/1.1 101", 12) == 0, "%s", got);
    free(got);
    send_all(fd, "ping");
    char echo[8] = "";
    ck_assert_int_eq(recv(fd, echo, 4, MSG_WAITALL), 4);
    ck_assert_str_eq(echo, "ping");
    close(fd);
    /* back to what it held (give or take the relay's database connections, 4 at most,
     * that it may open meanwhile): no socket to the app is left open */
    double until = jobs_now() + 10;
    int now;
    while ((now = aidcd_fds()) > before + 4) {
        ck_assert_msg(jobs_now() < until, "aidcd holds %d descriptors, %d before", now, before);
        jobs_nap_ms(250);
    }
    free(sent);
    free(cookie);
    free(id);
}
END_TEST

START_TEST(aidcd_stops_while_a_browser_waits_on_a_stalled_app)
{
    char *id = hostile_session();
    char *cookie = enter(id);
    /* a browser that stays, on a request the app never answers */
    int fd = dial_relay(60);
    send_all(fd, fmt("GET /sessions/%s/stall HTTP/1.1\r\nHost: x\r\nCookie: aidc_app=%s\r\n\r\n",
                     id, cookie));
    jobs_nap_ms(1000);
    pid_t pid = harness_srv.pid;
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    int st = 0;
    pid_t gone = 0;
    double until = jobs_now() + 30;
    while ((gone = waitpid(pid, &st, WNOHANG)) == 0 && jobs_now() < until)
        jobs_nap_ms(100);
    if (gone == 0) { /* the test's verdict below; the server is not left behind */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    close(fd);
    ck_assert_msg(gone == pid, "aidcd still runs 30 s after SIGTERM");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "aidcd ended with %d", st);
    /* a server again, for the teardown to stop */
    ck_assert_int_eq(jobs_restart_server(env), 0);
    free(cookie);
    free(id);
}
END_TEST

/* ---- what the database keeps -------------------------------------------------------- */

/* How many of the session's keys (links and cookies) are past their expiry. */
static int stale_keys(const char *id)
{
    const char *p[1] = {id};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*) FROM app_session_keys WHERE session_id = $1::uuid"
                              " AND expires_at < now()",
                              1, p);
    ck_assert_ptr_nonnull(r);
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

START_TEST(expired_links_and_cookies_are_dropped)
{
    /* every POST .../open adds a link, every link followed a cookie: a member opening a
     * session in a loop would grow the table for good */
    struct http_res r;
    ck_assert_int_eq(reqj("POST", SESSIONS, ann,
                          "{\"project\":\"mol\",\"app\":\"web\",\"command\":[\"sleep\",\"600\"]}",
                          &r),
                     201);
    char *id = strdup(jstr(r.json, "id"));
    http_res_free(&r);
    const char *p[1] = {id};
    PGresult *q = harness_sql(harness_srv.owner_url,
                              "INSERT INTO app_session_keys (hash, session_id, user_id, kind, expires_at)"
                              " SELECT sha256(convert_to(k::text, 'UTF8')), s.id, s.user_id, 'link',"
                              " now() - interval '1 minute' FROM app_sessions s,"
                              " generate_series(1, 3) k WHERE s.id = $1::uuid",
                              1, p);
    ck_assert_ptr_nonnull(q);
    PQclear(q);
    ck_assert_int_eq(stale_keys(id), 3);
    /* the janitor cleans up when aidcd starts, and every few minutes after */
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    ck_assert_int_eq(jobs_restart_server(env), 0);
    double until = jobs_now() + 15;
    int n;
    while ((n = stale_keys(id)) > 0) {
        ck_assert_msg(jobs_now() < until, "%d expired keys still kept", n);
        jobs_nap_ms(250);
    }
    free(id);
}
END_TEST

/* ---- behind a proxy -------------------------------------------------------------------- */

START_TEST(an_entry_is_audited_with_the_browser_s_address_behind_a_proxy)
{
    char *id = hostile_session();
    struct aidc_server relay = relay_srv();
    struct http_res r;
    ck_assert_int_eq(reqj("POST", fmt(SESSIONS "/%s/open", id), ann, NULL, &r), 200);
    char *path = strdup(jstr(r.json, "url") + strlen(harness_srv.sessions_base));
    http_res_free(&r);
    /* the proxy (a trusted one) names the browser; what the browser itself wrote to the
     * left of it proves nothing */
    const char *xff[] = {"X-Forwarded-For: 198.51.100.7, 203.0.113.9", NULL};
    ck_assert_int_eq(http_do(&relay, "GET", path, NULL, NULL, xff, &r), 302);
    http_res_free(&r);
    free(path);
    json_t *ev = get_items("/api/v1/audit/events?action=app_session.enter&tenant=chem",
                           harness_srv.admin_token);
    ck_assert_int_eq(json_array_size(ev), 1);
    ck_assert_str_eq(jstr(json_array_get(ev, 0), "source_ip"), "203.0.113.9");
    json_decref(ev);
    free(id);
}
END_TEST

int main(void)
{
    harness_require_pg();
    jobs_reap_at_exit();
    Suite *s = suite_create("appsessions_attacks");
    TCase *t = tcase_create("relay");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, a_body_reaches_the_app_whole);
    tcase_add_test(t, a_body_is_refused_before_it_is_read);
    tcase_add_test(t, an_app_cannot_set_aidc_cookies_by_any_spelling);
    tcase_add_test(t, a_stalled_app_does_not_hold_the_relay_once_the_browser_left);
    tcase_add_test(t, a_websocket_left_before_its_101_leaks_nothing);
    tcase_add_test(t, aidcd_stops_while_a_browser_waits_on_a_stalled_app);
    tcase_add_test(t, expired_links_and_cookies_are_dropped);
    tcase_add_test(t, an_entry_is_audited_with_the_browser_s_address_behind_a_proxy);
    suite_add_tcase(s, t);
    return suite_run(s);
}
