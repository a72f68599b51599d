/* relaypipe.c - the relay's pipes to an app: HTTP with libcurl, WebSockets as bytes. */
#include "relaypipe.h"

#include "../lib/curlglobal.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "credential.h"

#include <curl/curl.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF          ((size_t)256 * 1024) /* what an answer holds between the app and the client */
#define HEAD_MAX     ((size_t)64 * 1024)  /* the app's headers */
#define PIECE        ((size_t)64 * 1024)  /* what one read or one write of a body moves */
#define HEADERS_MAX  128
#define CONNECT_S    10
#define WS_HEAD_S    30
#define TOUCH_S      30
#define RELAY_COOKIE "aidc_app"

bool relaypipe_init(void)
{
    return curlglobal_init();
}

/* ---- headers ------------------------------------------------------------------------ */

static bool hop_by_hop(const char *name)
{
    static const char *const names[] = {"Connection",
                                        "Keep-Alive",
                                        "Proxy-Authorization",
                                        "Proxy-Authenticate",
                                        "Proxy-Connection",
                                        "TE",
                                        "Trailer",
                                        "Transfer-Encoding",
                                        "Upgrade"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i]) == 0)
            return true;
    return false;
}

/* aidc's cookies: the portal's session and the relay's entry never reach an app */
static bool aidc_cookie(const char *name, size_t n)
{
    return (n == strlen(AUTH_COOKIE) && strncmp(name, AUTH_COOKIE, n) == 0) ||
           (n == strlen(RELAY_COOKIE) && strncmp(name, RELAY_COOKIE, n) == 0);
}

/* value less aidc's cookies ("a=1; aidc_app=x; b=2" -> "a=1; b=2") into out. */
static void other_cookies(const char *value, struct sbuf *out)
{
    const char *p = value;
    while (*p) {
        while (*p == ' ' || *p == ';')
            p++;
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        size_t name = eq ? (size_t)(eq - p) : n;
        if (n && !aidc_cookie(p, name)) {
            if (out->len)
                sbuf_puts(out, "; ");
            sbuf_append(out, p, n);
        }
        p += n;
    }
}

struct fwd {
    struct sbuf *lines; /* "Name: value\r\n" each */
    bool websocket;
};

static enum MHD_Result one_header(void *cls, enum MHD_ValueKind kind, const char *name,
                                  const char *value)
{
    (void)kind;
    struct fwd *f = cls;
    if (!value || hop_by_hop(name) || strcasecmp(name, "Authorization") == 0 ||
        strcasecmp(name, "Content-Length") == 0 || strcasecmp(name, "Expect") == 0 ||
        strncasecmp(name, "X-Forwarded-", 12) == 0 || strcasecmp(name, "Forwarded") == 0 ||
        strcasecmp(name, "X-Real-Ip") == 0)
        return MHD_YES;
    if (strchr(value, '\r') || strchr(value, '\n'))
        return MHD_YES;
    if (strcasecmp(name, "Cookie") == 0) {
        struct sbuf rest = SBUF_INIT;
        other_cookies(value, &rest);
        if (rest.len)
            sbuf_printf(f->lines, "Cookie: %s\r\n", sbuf_str(&rest));
        sbuf_free(&rest);
        return MHD_YES;
    }
    sbuf_printf(f->lines, "%s: %s\r\n", name, value);
    return MHD_YES;
}

/* The headers the app gets, as "Name: value\r\n" lines. */
static void request_headers(struct MHD_Connection *c, const struct relaypipe_request *pr,
                            struct sbuf *lines)
{
    struct fwd f = {lines, false};
    MHD_get_connection_values(c, MHD_HEADER_KIND, one_header, &f);
    sbuf_printf(lines, "Authorization: token %s\r\n", pr->secret);
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (pr->client_ip && pr->client_ip[0])
        sbuf_printf(lines, "X-Forwarded-For: %s\r\n", pr->client_ip);
    sbuf_printf(lines, "X-Forwarded-Proto: %s\r\n",
                strncmp(pr->origin, "https://", 8) == 0 ? "https" : "http");
    if (host && !strchr(host, '\r') && !strchr(host, '\n'))
        sbuf_printf(lines, "X-Forwarded-Host: %s\r\n", host);
}

/*
 * Whether Set-Cookie: v sets one of aidc's cookies, as a browser reads it: the
 * blanks around a name are trimmed ("aidc_app =x" sets aidc_app), and a cookie
 * without a name is sent as its value alone ("=aidc_app=x" and "aidc_app" are
 * sent as "aidc_app=x" and "aidc_app").
 */
static bool sets_aidc_cookie(const char *v)
{
    for (;;) {
        v += strspn(v, " \t");
        size_t pair = strcspn(v, ";");
        const char *eq = memchr(v, '=', pair);
        size_t n = eq ? (size_t)(eq - v) : pair;
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
            n--;
        if (!eq || n) /* its name, or (no '=') the value the browser sends alone */
            return aidc_cookie(v, n);
        v = eq + 1; /* an empty name: the browser sends the value alone */
    }
}

/* Whether an answer's header line (name: value) goes to the browser. */
static bool answer_header_ok(const char *name, const char *value)
{
    if (hop_by_hop(name) || strcasecmp(name, "Content-Length") == 0 ||
        strcasecmp(name, "Date") == 0)
        return false;
    if (strcasecmp(name, "Set-Cookie") == 0)
        return !sets_aidc_cookie(value);
    return true;
}

/* ---- HTTP ------------------------------------------------------------------------------ */

struct stream {
    CURLM *multi;
    CURL *easy;
    struct curl_slist *hdrs;
    char *body;
    char *buf;
    size_t off, len;
    bool paused, done, head_done;
    CURLcode result;
    struct sbuf head; /* the final answer's header lines */
    int nheaders;
    bool head_too_big;
    int client; /* the browser's socket (-1: unknown) */
};

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    struct stream *st = arg;
    size_t len = size * n;
    if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new answer (after a 100) */
        sbuf_reset(&st->head);
        st->nheaders = 0;
        return len;
    }
    if (len <= 2) { /* the blank line: the final answer's headers are all here */
        long code = 0;
        curl_easy_getinfo(st->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200)
            st->head_done = true;
        return len;
    }
    if (st->head.len + len > HEAD_MAX || ++st->nheaders > HEADERS_MAX) {
        st->head_too_big = true;
        return 0; /* ends the transfer: 502 */
    }
    sbuf_append(&st->head, data, len);
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    struct stream *st = arg;
    size_t len = size * n;
    if (st->len + len > BUF && st->off) { /* make room at the end */
        memmove(st->buf, st->buf + st->off, st->len - st->off);
        st->len -= st->off;
        st->off = 0;
    }
    if (st->len + len > BUF) { /* full: the app waits for the client */
        st->paused = true;
        return CURL_WRITEFUNC_PAUSE;
    }
    memcpy(st->buf + st->len, data, len);
    st->len += len;
    return len;
}

static void stream_free(void *cls)
{
    struct stream *st = cls;
    if (st->multi && st->easy)
        curl_multi_remove_handle(st->multi, st->easy);
    curl_easy_cleanup(st->easy);
    curl_multi_cleanup(st->multi);
    curl_slist_free_all(st->hdrs);
    sbuf_free(&st->head);
    free(st->body);
    free(st->buf);
    free(st);
}

/*
 * The browser closed its connection (or it broke): nobody waits for the
 * answer. Without this a thread would wait for an app that never answers
 * (or sends 100 Continue forever) long after its browser left, until the
 * relay had no connection left for anyone.
 */
static bool client_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Move the transfer on, waiting up to wait_ms for the app. -1 on a curl failure, or when
 * the browser is gone. */
static int pump(struct stream *st, int wait_ms)
{
    if (client_gone(st->client))
        return -1;
    int running = 0;
    if (curl_multi_perform(st->multi, &running) != CURLM_OK)
        return -1;
    int left;
    CURLMsg *m;
    while ((m = curl_multi_info_read(st->multi, &left)))
        if (m->msg == CURLMSG_DONE) {
            st->done = true;
            st->result = m->data.result;
        }
    if (!st->done && !st->head_done && running == 0)
        st->done = true;
    if (!st->done && (st->len == st->off || !st->head_done) &&
        curl_multi_poll(st->multi, NULL, 0, wait_ms, NULL) != CURLM_OK)
        return -1;
    return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    struct stream *st = cls;
    for (;;) {
        if (st->len > st->off) {
            size_t n = st->len - st->off < max ? st->len - st->off : max;
            memcpy(out, st->buf + st->off, n);
            st->off += n;
            if (st->off == st->len)
                st->off = st->len = 0;
            if (st->paused) { /* room again: the app goes on (curl may write at once) */
                st->paused = false;
                curl_easy_pause(st->easy, CURLPAUSE_CONT);
            }
            return (ssize_t)n;
        }
        if (st->done)
            return st->result == CURLE_OK ? MHD_CONTENT_READER_END_OF_STREAM
                                          : MHD_CONTENT_READER_END_WITH_ERROR;
        if (pump(st, 1000) != 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

enum MHD_Result relaypipe_bad_gateway(struct MHD_Connection *c, int app_status)
{
    char *text = xasprintf("{\"type\":\"about:blank\",\"title\":\"Bad Gateway\",\"status\":502,"
                           "\"code\":\"app_session.unreachable\",\"detail\":\"the app does not "
                           "answer\",\"params\":{\"status\":%d}}",
                           app_status);
    struct MHD_Response *res =
        MHD_create_response_from_buffer_with_free_callback(strlen(text), text, free);
    if (!res) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
    MHD_add_response_header(res, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_BAD_GATEWAY, res);
    MHD_destroy_response(res);
    return ok;
}

/* The easy handle for pr: 0 or -1. */
static int stream_setup(struct stream *st, struct MHD_Connection *c,
                        const struct relaypipe_request *pr)
{
    st->multi = curl_multi_init();
    st->easy = curl_easy_init();
    st->buf = malloc(BUF);
    if (!st->multi || !st->easy || !st->buf)
        return -1;
    bool v6 = strchr(pr->host, ':') != NULL;
    char *url =
        xasprintf("http://%s%s%s:%d%s", v6 ? "[" : "", pr->host, v6 ? "]" : "", pr->port, pr->uri);
    struct sbuf lines = SBUF_INIT;
    request_headers(c, pr, &lines);
    /* curl's own defaults the browser did not send stay unsent */
    sbuf_puts(&lines, "Expect:\r\n");
    if (!MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept"))
        sbuf_puts(&lines, "Accept:\r\n");
    int rc = 0;
    for (char *line = lines.buf, *end; line && *line; line = end + 2) {
        end = strstr(line, "\r\n");
        if (!end)
            break;
        *end = '\0';
        struct curl_slist *n = curl_slist_append(st->hdrs, line);
        if (!n) {
            rc = -1;
            break;
        }
        st->hdrs = n;
    }
    sbuf_free(&lines);
    bool head = strcmp(pr->method, "HEAD") == 0;
    if (!rc && pr->body_len) {
        st->body = malloc(pr->body_len);
        if (!st->body)
            rc = -1;
        else
            memcpy(st->body, pr->body, pr->body_len);
    }
    CURLcode e = CURLE_OK;
#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (e == CURLE_OK)                                                                         \
            e = curl_easy_setopt(st->easy, opt, val);                                              \
    } while (0)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_HTTPHEADER, st->hdrs);
    SET(CURLOPT_CUSTOMREQUEST, pr->method);
    SET(CURLOPT_NOBODY, head ? 1L : 0L);
    if (st->body || strcmp(pr->method, "POST") == 0 || strcmp(pr->method, "PUT") == 0 ||
        strcmp(pr->method, "PATCH") == 0) {
        SET(CURLOPT_POSTFIELDS, st->body ? st->body : "");
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)pr->body_len);
    }
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, st);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, st);
    SET(CURLOPT_HTTP_CONTENT_DECODING, 0L); /* the bytes as the app encoded them */
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_PROTOCOLS_STR, "http");
    SET(CURLOPT_CONNECTTIMEOUT, (long)CONNECT_S);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_PROXY, "");
#undef SET
    free(url);
    if (rc || e != CURLE_OK || curl_multi_add_handle(st->multi, st->easy) != CURLM_OK)
        return -1;
    return 0;
}

/* The app's header lines onto res. */
static void answer_headers(struct MHD_Response *res, struct sbuf *head)
{
    char *save = NULL;
    for (char *line = strtok_r(head->buf, "\r\n", &save); line;
         line = strtok_r(NULL, "\r\n", &save)) {
        char *colon = strchr(line, ':');
        if (!colon || colon == line)
            continue;
        *colon = '\0';
        const char *value = colon + 1;
        while (*value == ' ' || *value == '\t')
            value++;
        if (answer_header_ok(line, value))
            MHD_add_response_header(res, line, value);
    }
}

enum MHD_Result relaypipe_http(struct MHD_Connection *c, const struct relaypipe_request *pr)
{
    struct stream *st = xcalloc(1, sizeof *st);
    st->head = (struct sbuf)SBUF_INIT;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    st->client = ci ? ci->connect_fd : -1;
    if (stream_setup(st, c, pr) != 0) {
        stream_free(st);
        return relaypipe_bad_gateway(c, 0);
    }
    while (!st->head_done && !st->done)
        if (pump(st, 1000) != 0)
            break;
    long code = 0;
    curl_easy_getinfo(st->easy, CURLINFO_RESPONSE_CODE, &code);
    if (!st->head_done || code < 200 || code > 999) {
        if (st->result != CURLE_OK && st->result != CURLE_WRITE_ERROR)
            log_info("sessions relay: session %s: %s", pr->session_id,
                     curl_easy_strerror(st->result));
        stream_free(st);
        return relaypipe_bad_gateway(c, (int)code);
    }
    curl_off_t length = -1;
    curl_easy_getinfo(st->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    bool head = strcmp(pr->method, "HEAD") == 0 || code == 204 || code == 304;
    struct MHD_Response *res =
        head ? MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT)
             : MHD_create_response_from_callback(length >= 0 ? (uint64_t)length : MHD_SIZE_UNKNOWN,
                                                 PIECE, stream_read, st, stream_free);
    if (!res) {
        stream_free(st);
        return MHD_NO;
    }
    answer_headers(res, &st->head);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)code, res);
    MHD_destroy_response(res);
    if (head)
        stream_free(st);
    return ok;
}

/* ---- WebSocket ---------------------------------------------------------------------- */

/*
 * One WebSocket, held by its request until libmicrohttpd completes it and by
 * its relaying thread once upgraded: whichever lets go last frees it. (A
 * browser gone before the 101 reached it is never upgraded: its request's
 * completion alone frees it and closes the app's socket.)
 */
struct relaypipe_ws {
    atomic_int refs;
    struct relaypipe_ws *next;
    struct relaypipe_registry *reg;
    int app;    /* the app's socket */
    int client; /* the browser's (libmicrohttpd's, upgraded), -1 until then */
    struct MHD_UpgradeResponseHandle *urh;
    char *early; /* bytes the app sent after its 101 */
    size_t nearly;
    char *extra; /* bytes the browser sent after its request */
    size_t nextra;
    char session_id[37];
    void (*touch)(void *arg, const char *session_id);
    void *touch_arg;
};

void relaypipe_registry_init(struct relaypipe_registry *reg)
{
    pthread_mutex_init(&reg->mu, NULL);
    pthread_cond_init(&reg->cv, NULL);
    reg->head = NULL;
    reg->count = 0;
}

void relaypipe_registry_close(struct relaypipe_registry *reg)
{
    pthread_mutex_lock(&reg->mu);
    for (struct relaypipe_ws *w = reg->head; w; w = w->next) {
        shutdown(w->app, SHUT_RDWR);
        if (w->client >= 0)
            shutdown(w->client, SHUT_RDWR);
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    while (reg->count > 0)
        if (pthread_cond_timedwait(&reg->cv, &reg->mu, &until) != 0)
            break;
    pthread_mutex_unlock(&reg->mu);
    pthread_mutex_destroy(&reg->mu);
    pthread_cond_destroy(&reg->cv);
}

void relaypipe_ws_release(struct relaypipe_ws *w)
{
    if (!w || atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    if (w->app >= 0)
        close(w->app);
    free(w->early);
    free(w->extra);
    free(w);
}

/* w out of its registry's list (its lock held). */
static void ws_unlink(struct relaypipe_ws *w)
{
    for (struct relaypipe_ws **pp = &w->reg->head; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
}

/* All of buf to fd, which may be non-blocking. */
static bool write_all(int fd, const char *buf, size_t n)
{
    while (n) {
        ssize_t r = send(fd, buf, n, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (poll(&p, 1, 60000) <= 0)
                return false;
            continue;
        }
        if (r <= 0)
            return false;
        buf += r;
        n -= (size_t)r;
    }
    return true;
}

static void *ws_relay(void *arg)
{
    struct relaypipe_ws *w = arg;
    bool ok = (!w->nearly || write_all(w->client, w->early, w->nearly)) &&
              (!w->nextra || write_all(w->app, w->extra, w->nextra));
    char *buf = malloc(PIECE);
    bool open[2] = {ok && buf, ok && buf}; /* [0] browser -> app, [1] app -> browser */
    time_t last_touch = 0;
    bool traffic = false;
    while (open[0] || open[1]) {
        struct pollfd p[2] = {{.fd = open[0] ? w->client : -1, .events = POLLIN},
                              {.fd = open[1] ? w->app : -1, .events = POLLIN}};
        int got = poll(p, 2, 10000);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            break;
        for (int i = 0; i < 2; i++) {
            if (!open[i] || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int from = i == 0 ? w->client : w->app, to = i == 0 ? w->app : w->client;
            ssize_t n = recv(from, buf, PIECE, 0);
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
                continue;
            if (n <= 0 || !write_all(to, buf, (size_t)n)) {
                open[i] = false; /* a half-close is passed on; the other way goes on */
                shutdown(to, SHUT_WR);
                if (n != 0) /* an error, not an end: nothing more goes either way */
                    open[!i] = false;
                continue;
            }
            traffic = true;
        }
        time_t now = time(NULL);
        if (traffic && now - last_touch >= TOUCH_S && w->touch) {
            w->touch(w->touch_arg, w->session_id);
            last_touch = now;
            traffic = false;
        }
    }
    free(buf);
    struct relaypipe_registry *reg = w->reg;
    pthread_mutex_lock(&reg->mu);
    ws_unlink(w);
    MHD_upgrade_action(w->urh, MHD_UPGRADE_ACTION_CLOSE);
    w->client = -1;
    close(w->app);
    w->app = -1;
    reg->count--;
    pthread_cond_broadcast(&reg->cv);
    pthread_mutex_unlock(&reg->mu);
    relaypipe_ws_release(w);
    return NULL;
}

static void on_upgraded(void *cls, struct MHD_Connection *c, void *req_cls, const char *extra_in,
                        size_t extra_in_size, MHD_socket sock,
                        struct MHD_UpgradeResponseHandle *urh)
{
    (void)c;
    (void)req_cls;
    struct relaypipe_ws *w = cls;
    w->client = sock;
    w->urh = urh;
    if (extra_in_size) {
        w->extra = xmalloc(extra_in_size);
        memcpy(w->extra, extra_in, extra_in_size);
        w->nextra = extra_in_size;
    }
    struct relaypipe_registry *reg = w->reg;
    atomic_fetch_add(&w->refs, 1); /* the relaying thread's */
    pthread_mutex_lock(&reg->mu);
    w->next = reg->head;
    reg->head = w;
    reg->count++;
    pthread_mutex_unlock(&reg->mu);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, ws_relay, w) != 0) {
        pthread_mutex_lock(&reg->mu);
        ws_unlink(w);
        reg->count--;
        pthread_mutex_unlock(&reg->mu);
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        relaypipe_ws_release(w);
    }
    pthread_attr_destroy(&attr);
}

/* A TCP connection to host:port within CONNECT_S, or -1. */
static int connect_app(const char *host, int port)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, service, &hints, &ai) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        struct timeval tv = {.tv_sec = CONNECT_S};
        if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
                        connect(fd, a->ai_addr, a->ai_addrlen) != 0)) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    return fd;
}

/* The app's answer head (up to the blank line) into head, what came after into *w. */
static int read_head(int fd, struct sbuf *head, struct relaypipe_ws *w)
{
    struct timeval tv = {.tv_sec = WS_HEAD_S};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
        return -1;
    char buf[4096];
    while (head->len < HEAD_MAX) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        sbuf_append(head, buf, (size_t)n);
        char *end = strstr(head->buf, "\r\n\r\n");
        if (end) {
            size_t at = (size_t)(end - head->buf) + 4;
            w->nearly = head->len - at;
            if (w->nearly) {
                w->early = xmalloc(w->nearly);
                memcpy(w->early, head->buf + at, w->nearly);
            }
            head->buf[at - 2] = '\0';
            head->len = at - 2;
            tv.tv_sec = 0;
            return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        }
    }
    return -1;
}

enum MHD_Result relaypipe_websocket(struct MHD_Connection *c, const struct relaypipe_request *pr,
                                    struct relaypipe_ws **held)
{
    *held = NULL;
    struct relaypipe_ws *w = xcalloc(1, sizeof *w);
    atomic_init(&w->refs, 1); /* the request's */
    w->reg = pr->registry;
    w->client = -1;
    w->touch = pr->touch;
    w->touch_arg = pr->touch_arg;
    snprintf(w->session_id, sizeof w->session_id, "%s", pr->session_id);
    w->app = connect_app(pr->host, pr->port);
    if (w->app < 0) {
        relaypipe_ws_release(w);
        return relaypipe_bad_gateway(c, 0);
    }
    struct sbuf req = SBUF_INIT, head = SBUF_INIT;
    sbuf_printf(&req, "GET %s HTTP/1.1\r\n", pr->uri);
    request_headers(c, pr, &req);
    sbuf_puts(&req, "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    int code = 0;
    bool sent = write_all(w->app, req.buf, req.len);
    /* "HTTP/1.x NNN ...": the status is the three digits after the first space */
    if (sent && read_head(w->app, &head, w) == 0 && strncmp(head.buf, "HTTP/1.", 7) == 0) {
        const char *sp = strchr(head.buf, ' ');
        char *end = NULL;
        long v = sp ? strtol(sp + 1, &end, 10) : 0;
        code = end == sp + 4 && v >= 100 && v <= 999 ? (int)v : 0;
    }
    sbuf_free(&req);
    if (code != 101) {
        sbuf_free(&head);
        relaypipe_ws_release(w);
        return relaypipe_bad_gateway(c, code);
    }
    struct MHD_Response *res = MHD_create_response_for_upgrade(on_upgraded, w);
    if (!res) {
        sbuf_free(&head);
        relaypipe_ws_release(w);
        return MHD_NO;
    }
    char *first = strstr(head.buf, "\r\n"); /* past the status line */
    struct sbuf rest = SBUF_INIT;
    sbuf_puts(&rest, first ? first + 2 : "");
    answer_headers(res, &rest);
    sbuf_free(&rest);
    sbuf_free(&head);
    MHD_add_response_header(res, MHD_HTTP_HEADER_UPGRADE, "websocket");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, res);
    MHD_destroy_response(res);
    if (ok != MHD_YES)
        relaypipe_ws_release(w); /* never upgraded: nothing else holds it */
    else
        *held = w;
    return ok;
}
