/*
 * relay_fixture.h - what test_appsessions_relay.c stands on: one aidcd with
 * the local executor and three web app sessions of ann's, started once
 * (starting a session costs seconds), and a client for the relay that talks
 * raw HTTP and WebSocket where libcurl would hide what is tested (a pause, a
 * cut, a frame).
 *
 * The app (APP_SOURCE, Python's standard library) serves under its base URL:
 *   headers/...  what it was sent, as JSON: method, path (raw), header lines,
 *                the body's length and SHA-256, and whether Authorization was
 *                exactly "token <its AIDC_SESSION_TOKEN>";
 *   bytes?n=N    N bytes of the pattern (below) with a Content-Length;
 *   cut?n=N&cut=M  a Content-Length of N, M bytes of the pattern, then the
 *                connection shut (the app lives on);
 *   setcookie    Set-Cookie of aidc_app, aidc_session and theme;
 *   seen         every path it was asked for so far (JSON array): a refused
 *                request shows it never reached the app;
 *   ws?tag=T     a WebSocket echoing bytes as they come (frames and all);
 *   wsclose      a WebSocket that echoes one read, then shuts the connection;
 *   wsstate      each tag's WebSocket, "open" or "closed" (JSON object).
 * The pattern is the stream of 64-bit little-endian counters 0, 1, 2...: each
 * byte tells its own offset, so a byte lost, doubled or moved anywhere in a
 * long answer shows (stronger than a hash at the end, and needs no copy).
 *
 * Included once, by test_appsessions_relay.c (the definitions are static).
 */
#ifndef AIDC_TEST_RELAY_FIXTURE_H
#define AIDC_TEST_RELAY_FIXTURE_H

#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/secrets.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define TENANT   "chem"
#define SESSIONS "/api/v1/tenants/" TENANT "/sessions"
#define MAX_BODY 4194304 /* AIDC_SESSIONS_MAX_BODY_BYTES of this program */
#define READY_S  90      /* a session's start: a sandbox, slirp4netns, Python */

static const char APP_SOURCE[] =
    "import array, base64, hashlib, http.server, json, os, socket, sys, threading\n"
    "BASE = os.environ['AIDC_SESSION_BASE_URL']\n"
    "TOKEN = 'token ' + os.environ['AIDC_SESSION_TOKEN']\n"
    "seen, ws, lock = [], {}, threading.Lock()\n"
    "def pattern(at, n):\n"
    "    a = array.array('Q', range(at // 8, (at + n + 7) // 8))\n"
    "    if sys.byteorder == 'big': a.byteswap()\n"
    "    return a.tobytes()[at % 8:at % 8 + n]\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def log_message(self, *a): pass\n"
    "    def reply(self, body, extra=()):\n"
    "        self.send_response(200)\n"
    "        for k, v in extra: self.send_header(k, v)\n"
    "        self.send_header('Content-Length', str(len(body))); self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "    def arg(self, name, dflt):\n"
    "        for kv in self.path.partition('?')[2].split('&'):\n"
    "            k, _, v = kv.partition('=')\n"
    "            if k == name: return v\n"
    "        return dflt\n"
    "    def do_HEAD(self): self.reply(b'')\n"
    "    def do_POST(self): self.do_GET()\n"
    "    def do_PUT(self): self.do_GET()\n"
    "    def do_DELETE(self): self.do_GET()\n"
    "    def do_GET(self):\n"
    "        rest = self.path[len(BASE):] if self.path.startswith(BASE) else ''\n"
    "        what = rest.partition('?')[0].partition('/')[0]\n"
    "        if what != 'seen':\n"
    "            with lock: seen.append(self.path)\n"
    "        body = self.rfile.read(int(self.headers.get('Content-Length', '0')))\n"
    "        if self.headers.get('Upgrade', '').lower() == 'websocket':\n"
    "            return self.websocket(what)\n"
    "        if what == 'seen':\n"
    "            with lock: return self.reply(json.dumps(seen).encode())\n"
    "        if what == 'wsstate':\n"
    "            with lock: return self.reply(json.dumps(ws).encode())\n"
    "        if what in ('bytes', 'cut'):\n"
    "            n, cut = int(self.arg('n', '0')), int(self.arg('cut', '-1'))\n"
    "            self.send_response(200)\n"
    "            self.send_header('Content-Type', 'application/octet-stream')\n"
    "            self.send_header('Content-Length', str(n)); self.end_headers()\n"
    "            at, end = 0, n if cut < 0 else min(n, cut)\n"
    "            while at < end:\n"
    "                k = min(1 << 20, end - at); self.wfile.write(pattern(at, k)); at += k\n"
    "            if cut >= 0:\n"
    "                self.close_connection = True; self.connection.shutdown(socket.SHUT_RDWR)\n"
    "            return\n"
    "        if what == 'setcookie':\n"
    "            return self.reply(b'cookies', [('Set-Cookie', 'aidc_app=from-app; Path=/'),\n"
    "                ('Set-Cookie', 'aidc_session=from-app; Path=/'),\n"
    "                ('Set-Cookie', 'theme=dark; Path=/')])\n"
    "        self.reply(json.dumps({'method': self.command, 'path': self.path,\n"
    "            'headers': self.headers.items(),\n"
    "            'auth_ok': self.headers.get_all('Authorization') == [TOKEN],\n"
    "            'body_len': len(body),\n"
    "            'body_sha256': hashlib.sha256(body).hexdigest()}).encode(),\n"
    "            [('Content-Type', 'application/json')])\n"
    "    def websocket(self, what):\n"
    "        key = self.headers['Sec-WebSocket-Key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'\n"
    "        self.send_response(101); self.send_header('Upgrade', 'websocket')\n"
    "        self.send_header('Connection', 'Upgrade')\n"
    "        self.send_header('Sec-WebSocket-Accept',\n"
    "                         base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())\n"
    "        self.end_headers(); self.wfile.flush()\n"
    "        tag = self.arg('tag', '')\n"
    "        with lock: ws[tag] = 'open'\n"
    "        while True:\n"
    "            d = self.rfile.read1(65536)\n"
    "            if not d: break\n"
    "            self.wfile.write(d); self.wfile.flush()\n"
    "            if what == 'wsclose': break\n"
    "        with lock: ws[tag] = 'closed'\n"
    "        self.close_connection = True; self.connection.shutdown(socket.SHUT_RDWR)\n"
    "http.server.ThreadingHTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()\n";

static const char *const relay_env[] = {"AIDC_SYNC_INTERVAL_MS=100",
                                        "AIDC_ADMISSION_INTERVAL_MS=200",
                                        "AIDC_SESSIONS_MAX_BODY_BYTES=4194304", NULL};

static char *ann, *bob, *cat, *pia; /* chem: member, member, tenant admin; phys: member */
static char sess_a[37], sess_b[37]; /* ann's: most tests use A; B ends by stop */
static char sess_c[37];             /* ann's, idle_minutes 1, never touched: ends idle */
static char cookie_a[64], cookie_b[64];
static struct aidc_server relay; /* harness_srv with the relay's address */

/* ---- sessions through the API ------------------------------------------------------ */

/* ann starts a web app session of APP_SOURCE idle after idle_minutes; its id into id. */
static void session_start(int idle_minutes, char id[37])
{
    json_t *b = json_pack("{s:s, s:s, s:[s, s, s], s:i, s:i, s:{s:s}}", "project", "mol", "app",
                          "web", "command", "/usr/bin/python3", "-c", APP_SOURCE,
                          "time_limit_minutes", 30, "idle_minutes", idle_minutes, "env", "TEST_RUN",
                          harness_srv.data_dir); /* jobs_kill_leftovers */
    char *text = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    ck_assert_ptr_nonnull(text);
    struct http_res r;
    long st = reqj("POST", SESSIONS, ann, text, &r);
    free(text);
    ck_assert_msg(st == 201, "session start answered %ld: %s", st, r.body);
    snprintf(id, 37, "%s", jstr(r.json, "id"));
    http_res_free(&r);
}

/* GET the session as token (200 or the test fails); a new reference. */
static json_t *session_get(const char *token, const char *id)
{
    struct http_res r;
    long st = reqj("GET", fmt(SESSIONS "/%s", id), token, NULL, &r);
    ck_assert_msg(st == 200, "GET session %s answered %ld: %s", id, st, r.body);
    json_t *s = json_incref(r.json);
    http_res_free(&r);
    return s;
}

/* Poll the session until its state is state (an unexpected end fails, with the app's log). */
static json_t *session_wait(const char *id, const char *state, int timeout_s)
{
    double until = jobs_now() + timeout_s;
    for (;;) {
        json_t *s = session_get(ann, id);
        const char *now = jstr(s, "state");
        if (now && strcmp(now, state) == 0)
            return s;
        if ((now && strcmp(now, "ended") == 0) || jobs_now() > until) {
            const char *job = jstr(json_object_get(s, "job"), "id");
            char *log = job ? jobs_logs(ann, TENANT, job, "stream=stderr") : NULL;
            ck_abort_msg("session %s is %s (reason %s), not %s; its stderr: %s", id, now,
                         jstr(s, "reason"), state, log ? log : "");
        }
        json_decref(s);
        jobs_nap_ms(200);
    }
}

/* POST .../open as token: the link's path on the relay (the answer's url less its origin). */
static char *session_link(const char *token, const char *id)
{
    struct http_res r;
    long st = reqj("POST", fmt(SESSIONS "/%s/open", id), token, NULL, &r);
    ck_assert_msg(st == 200, "open answered %ld: %s", st, r.body);
    const char *url = jstr(r.json, "url");
    ck_assert_ptr_nonnull(url);
    ck_assert_msg(strncmp(url, relay.base, strlen(relay.base)) == 0 &&
                      url[strlen(relay.base)] == '/',
                  "the link %s is not on the relay's origin %s", url, relay.base);
    ck_assert_int_eq(jint(r.json, "expires_in"), 60);
    char *path = strdup(url + strlen(relay.base));
    const char *key = strstr(path, "key=");
    secrets_note(key ? key + 4 : NULL); /* a credential: never in a log */
    http_res_free(&r);
    return path;
}

/* ---- HTTP through the relay --------------------------------------------------------- */

/*
 * method path (from the relay's root) with cookie (aidc_app's value, or NULL),
 * origin (or NULL) and more header lines (NULL-terminated, or NULL); body
 * sent as application/octet-stream when not NULL. The status; the answer in *r.
 */
static long rel(const char *method, const char *path, const char *cookie, const char *origin,
                const char *const *more, const char *body, size_t len, struct http_res *r)
{
    const char *extra[16];
    size_t n = 0;
    if (cookie)
        extra[n++] = fmt("Cookie: aidc_app=%s", cookie);
    if (origin)
        extra[n++] = fmt("Origin: %s", origin);
    for (size_t i = 0; more && more[i] && n < 15; i++)
        extra[n++] = more[i];
    extra[n] = NULL;
    return http_raw(&relay, method, path, NULL, body ? "application/octet-stream" : NULL, body, len,
                    extra, r);
}

/* GET path under session A's base with A's cookie, the answer dropped: its status. */
static long rel_get_a(const char *sub)
{
    struct http_res r;
    long st = rel("GET", fmt("/sessions/%s/%s", sess_a, sub), cookie_a, NULL, NULL, NULL, 0, &r);
    http_res_free(&r);
    return st;
}

/* Whether session A's app was ever asked for a path holding marker. */
static bool app_saw(const char *marker)
{
    struct http_res r;
    ck_assert_int_eq(
        rel("GET", fmt("/sessions/%s/seen", sess_a), cookie_a, NULL, NULL, NULL, 0, &r), 200);
    bool saw = false;
    size_t i;
    json_t *p;
    json_array_foreach(r.json, i, p) saw = saw || strstr(json_string_value(p), marker) != NULL;
    ck_assert_msg(json_is_array(r.json), "seen: %s", r.body);
    http_res_free(&r);
    return saw;
}

/* r is the relay's problem code with status. */
static void expect_relay_problem(const struct http_res *r, long status, const char *code)
{
    ck_assert_msg(r->status == status, "answered %ld, not %ld: %s", r->status, status, r->body);
    expect_problem(r, code, NULL, NULL);
}

/* Follow link (a path on the relay); its 302 in *r (caller frees). */
static long follow(const char *link, struct http_res *r)
{
    return rel("GET", link, NULL, NULL, NULL, NULL, 0, r);
}

/* Enter session id as ann: a fresh link followed; aidc_app's value into out. */
static void enter(const char *id, char out[64])
{
    char *link = session_link(ann, id);
    struct http_res r;
    ck_assert_int_eq(follow(link, &r), 302);
    char *set = http_set_cookie(&r, "aidc_app");
    ck_assert_ptr_nonnull(set);
    snprintf(out, 64, "%.*s", (int)strcspn(set + 9, ";"), set + 9);
    secrets_note(out);
    free(set);
    http_res_free(&r);
    free(link);
}

/* ---- raw connections ---------------------------------------------------------------- */

static void send_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        ck_assert_msg(w > 0, "send: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

/* The answer's head (to its blank line, one byte at a time: what follows stays unread). */
static long read_head(int fd, char *head, size_t n)
{
    size_t len = 0;
    while (len + 1 < n) {
        ssize_t got = recv(fd, head + len, 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        ck_assert_msg(got == 1, "the head ended early (%zd: %s): %.*s", got, strerror(errno),
                      (int)len, head);
        len++;
        if (len >= 4 && memcmp(head + len - 4, "\r\n\r\n", 4) == 0)
            break;
    }
    head[len] = '\0';
    long status = 0;
    ck_assert_msg(sscanf(head, "HTTP/1.1 %ld", &status) == 1, "no status line: %s", head);
    return status;
}

/* Header name's value in head (into out, "" when absent). */
static const char *head_value(const char *head, const char *name, char *out, size_t n)
{
    out[0] = '\0';
    size_t nl = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, name, nl) == 0 && p[2 + nl] == ':') {
            const char *v = p + 3 + nl + strspn(p + 3 + nl, " ");
            snprintf(out, n, "%.*s", (int)strcspn(v, "\r"), v);
            break;
        }
    return out;
}

/*
 * A raw request to the relay (reads give up after timeout_s): method path
 * with cookie and origin (NULL: none) and more header text (NULL, or lines
 * each ending in \r\n); the connection, its answer's head read into head.
 */
static int raw_request(const char *method, const char *path, const char *cookie, const char *origin,
                       const char *more, int timeout_s, char *head, size_t headsz, long *status)
{
    int fd = http_dial(&relay, timeout_s);
    char req[4096];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s%s%s\r\n", method,
                     path, relay.port, cookie ? fmt("Cookie: aidc_app=%s\r\n", cookie) : "",
                     origin ? fmt("Origin: %s\r\n", origin) : "", more ? more : "");
    ck_assert(n > 0 && (size_t)n < sizeof req);
    send_all(fd, req, strlen(req));
    *status = read_head(fd, head, headsz);
    return fd;
}

/* Byte o of the pattern (little-endian 64-bit counters). */
static unsigned char pattern_at(unsigned long long o)
{
    return (unsigned char)((o / 8) >> (8 * (o % 8)));
}

/* Offset of the first byte of p (which starts at offset at) off the pattern, or -1. */
static long long pattern_miss(unsigned long long at, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern_at(at + i))
            return (long long)(at + i);
    return -1;
}

/* aidcd's resident memory (VmRSS) in KiB. */
static long rss_kb(void)
{
    char *st = harness_read_file(fmt("/proc/%d/status", (int)harness_srv.pid));
    const char *v = st ? strstr(st, "VmRSS:") : NULL;
    long kb = v ? strtol(v + 6, NULL, 10) : -1;
    free(st);
    ck_assert_int_gt(kb, 0);
    return kb;
}

/* ---- WebSocket ---------------------------------------------------------------------- */

/* RFC 6455's example key and the accept it must get (section 1.3) */
#define WS_KEY    "dGhlIHNhbXBsZSBub25jZQ=="
#define WS_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

/* A WebSocket upgrade of path with cookie and origin: the connection; status and head out. */
static int ws_open(const char *path, const char *cookie, const char *origin, long *status,
                   char *head, size_t headsz)
{
    return raw_request("GET", path, cookie, origin,
                       "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Key: " WS_KEY "\r\nSec-WebSocket-Version: 13\r\n",
                       20, head, headsz, status);
}

/* A masked binary frame of payload into out (room for n + 14); its length. */
static size_t ws_frame(unsigned char *out, const unsigned char *payload, size_t n, unsigned seed)
{
    size_t h = 0;
    out[h++] = 0x82; /* FIN, binary */
    if (n < 126) {
        out[h++] = (unsigned char)(0x80 | n);
    } else if (n < 65536) {
        out[h++] = 0x80 | 126;
        out[h++] = (unsigned char)(n >> 8);
        out[h++] = (unsigned char)n;
    } else {
        out[h++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--)
            out[h++] = (unsigned char)((unsigned long long)n >> (8 * i));
    }
    unsigned char mask[4] = {(unsigned char)seed, (unsigned char)(seed >> 8),
                             (unsigned char)(seed >> 16), (unsigned char)(seed >> 24 | 1)};
    memcpy(out + h, mask, 4);
    h += 4;
    for (size_t i = 0; i < n; i++)
        out[h + i] = payload[i] ^ mask[i % 4];
    return h + n;
}

/*
 * Send n bytes and read n back (the echo), both at once so neither side's
 * buffers fill while the other waits; the bytes read must be the bytes sent.
 */
static void ws_exchange(int fd, const unsigned char *out, size_t n)
{
    unsigned char *in = malloc(n);
    ck_assert_ptr_nonnull(in);
    int fl = fcntl(fd, F_GETFL);
    ck_assert_int_eq(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
    size_t sent = 0, got = 0;
    double until = jobs_now() + 30;
    while (got < n) {
        ck_assert_msg(jobs_now() < until, "echo stalled: %zu of %zu sent, %zu back", sent, n, got);
        struct pollfd p = {.fd = fd, .events = (short)(POLLIN | (sent < n ? POLLOUT : 0))};
        if (poll(&p, 1, 1000) < 0) {
            ck_assert_int_eq(errno, EINTR);
            continue;
        }
        if (sent < n && (p.revents & POLLOUT)) {
            ssize_t w = send(fd, out + sent, n - sent, MSG_NOSIGNAL);
            ck_assert_msg(w > 0 || errno == EAGAIN, "send: %s", strerror(errno));
            sent += w > 0 ? (size_t)w : 0;
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = recv(fd, in + got, n - got, 0);
            ck_assert_msg(r > 0 || (r < 0 && errno == EAGAIN),
                          "the echo ended after %zu of %zu bytes", got, n);
            got += r > 0 ? (size_t)r : 0;
        }
    }
    ck_assert_int_eq(fcntl(fd, F_SETFL, fl), 0);
    ck_assert_msg(memcmp(in, out, n) == 0, "the echo differs from what was sent");
    free(in);
}

/* Whether the peer ends the connection (EOF or reset) within timeout_s, reading nothing else. */
static bool ends_within(int fd, int timeout_s)
{
    double until = jobs_now() + timeout_s;
    char c;
    while (jobs_now() < until) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0)
            continue;
        ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            return true;
        if (r > 0)
            return false;
    }
    return false;
}

/* Session A's app's view of WebSocket tag: "open", "closed" or "" (never opened). */
static void ws_state(const char *tag, char *out, size_t n)
{
    struct http_res r;
    ck_assert_int_eq(
        rel("GET", fmt("/sessions/%s/wsstate", sess_a), cookie_a, NULL, NULL, NULL, 0, &r), 200);
    snprintf(out, n, "%s", jstr(r.json, tag) ? jstr(r.json, tag) : "");
    http_res_free(&r);
}

/* ---- the program's aidcd and sessions ----------------------------------------------- */

static void setup(void)
{
    harness_setup("appsessions_relay", relay_env);
    ck_assert_int_gt(harness_srv.sessions_port, 0);
    relay = harness_srv;
    snprintf(relay.base, sizeof relay.base, "%s", harness_srv.sessions_base);
    relay.port = harness_srv.sessions_port;
    jobs_local_cluster("{\"a100\":1}");
    make_tenant(TENANT);
    make_tenant("phys");
    make_project(TENANT, "mol");
    ann = make_member_login(TENANT, "ann", "member");
    bob = make_member_login(TENANT, "bob", "member");
    cat = make_member_login(TENANT, "cat", "tenant_admin");
    pia = make_member_login("phys", "pia", "member");
    /* all three start at once: the program waits for the slowest only */
    session_start(60, sess_a);
    session_start(60, sess_b);
    session_start(1, sess_c);
    const char *ids[3] = {sess_a, sess_b, sess_c};
    for (int i = 0; i < 3; i++)
        json_decref(session_wait(ids[i], "ready", READY_S));
    enter(sess_a, cookie_a);
    enter(sess_b, cookie_b);
}

static void teardown(void)
{
    req("POST", fmt(SESSIONS "/%s/stop", sess_a), ann, NULL);
    free(ann);
    free(bob);
    free(cat);
    free(pia);
    jobs_stop_shims(20); /* the other sessions' apps run on without aidcd */
    harness_teardown();
}

#endif
