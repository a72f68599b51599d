/* relay.c - the sessions relay: who may enter which session (see relay.h). */
#include "relay.h"

#include "../audit/audit.h"
#include "../db/appsessions.h"
#include "../db/db.h"
#include "../lib/actor.h"
#include "../lib/config.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/netaddr.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "credential.h"
#include "http.h"
#include "problem.h"
#include "ratelimit.h"
#include "relaypipe.h"
#include "request.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define COOKIE             "aidc_app"
#define POOL               4 /* database connections of the relay */
#define MAX_URI            8192
#define COOKIE_MAX_SECONDS (7 * 86400)

struct relay {
    struct MHD_Daemon *d;
    const struct config *cfg;
    int port;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct db *free_db[POOL];
    int nfree, nopen;
    struct relaypipe_registry ws;
};

/*
 * One request: its raw URI (the path and query passed to the app unchanged),
 * its body. libmicrohttpd calls on_request first with the headers alone, then
 * with the body in pieces, then once more: who may pass is decided on the
 * first call (a stranger's body is never read), the body is kept for an
 * admitted request only, and the request is passed on the last call.
 */
struct rreq {
    char uri[MAX_URI + 1];
    bool uri_too_long;
    bool started;  /* the first call is past */
    bool admitted; /* ... and let the request pass: t and id are set */
    char id[37];
    struct db_appsession_target t;
    struct sbuf body;
    bool body_too_large;
    struct relaypipe_ws *ws; /* a WebSocket this request holds (relaypipe.h) */
};

/* ---- database ------------------------------------------------------------------------ */

static struct db *db_take(struct relay *r)
{
    pthread_mutex_lock(&r->mu);
    while (r->nfree == 0 && r->nopen == POOL)
        pthread_cond_wait(&r->cv, &r->mu);
    struct db *db = NULL;
    if (r->nfree)
        db = r->free_db[--r->nfree];
    else
        r->nopen++;
    pthread_mutex_unlock(&r->mu);
    if (!db)
        db = db_open(r->cfg->worker_database_url, "aidcd-relay");
    return db;
}

static void db_give(struct relay *r, struct db *db)
{
    pthread_mutex_lock(&r->mu);
    if (db)
        r->free_db[r->nfree++] = db;
    else
        r->nopen--;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* A system transaction around fn(db, arg); 0 or an aidc_err. */
static int in_tx(struct relay *r, int (*fn)(struct db *db, void *arg), void *arg)
{
    struct db *db = db_take(r);
    const struct db_ctx ctx = {.roles = "system"};
    int e = db && db_ensure(db) == 0 ? db_begin(db, &ctx, false) : AIDC_EUNAVAIL;
    if (!e)
        e = fn(db, arg);
    if (!e)
        e = db_commit(db);
    else if (db && db_in_tx(db))
        db_rollback(db);
    db_give(r, db);
    return e;
}

/* ---- answers -------------------------------------------------------------------------- */

static void own_headers(struct MHD_Response *res)
{
    MHD_add_response_header(res, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(res, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
}

static enum MHD_Result answer(struct MHD_Connection *c, enum problem p, json_t *params)
{
    const struct problem_def *d = problem_def(p);
    struct api_error e = {.status = d->status, .problem = p, .params = params};
    e.detail = problem_format(d->text, params);
    char *text = problem_render(&e, "");
    free(e.detail);
    json_decref(params);
    struct MHD_Response *res =
        MHD_create_response_from_buffer_with_free_callback(text ? strlen(text) : 0, text, free);
    if (!res) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
    own_headers(res);
    if (d->status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(res, MHD_HTTP_HEADER_RETRY_AFTER, "2");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)d->status, res);
    MHD_destroy_response(res);
    return ok;
}

static enum MHD_Result redirect(struct MHD_Connection *c, const char *location, const char *cookie)
{
    struct MHD_Response *res = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!res)
        return MHD_NO;
    MHD_add_response_header(res, MHD_HTTP_HEADER_LOCATION, location);
    if (cookie)
        MHD_add_response_header(res, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    own_headers(res);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_FOUND, res);
    MHD_destroy_response(res);
    return ok;
}

/* ---- requests ------------------------------------------------------------------------- */

static bool is_key(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_')
            return false;
    return true;
}

/*
 * The browser's address: the peer's, or behind a proxy of AIDC_TRUSTED_PROXIES
 * (nginx in production) the one its X-Forwarded-For names, as the API reads it
 * (for the audit of an entry, and the app's X-Forwarded-For).
 */
static void client_ip(const struct relay *r, struct MHD_Connection *c, char *out, size_t outsz)
{
    out[0] = '\0';
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return;
    netaddr_text(ci->client_addr, out, outsz);
    const char *xff = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-For");
    if (xff && out[0])
        ratelimit_forwarded_client(r->cfg->trusted_proxies, xff, out, outsz);
}

struct spend {
    const char *link, *cookie;
    const char *ip, *agent;
    struct db_appsession_entry entry;
};

/* Spend the link and record the entry (who, from where; a platform admin says so). */
static int spend_tx(struct db *db, void *arg)
{
    struct spend *s = arg;
    int e = db_appsession_spend_link(db, s->link, s->cookie, COOKIE_MAX_SECONDS, &s->entry);
    if (e)
        return e;
    struct actor who = {.authenticated = true, .username = s->entry.username};
    snprintf(who.user_id, sizeof who.user_id, "%s", s->entry.user_id);
    const struct audit_origin o = {.actor = &who, .source_ip = s->ip, .user_agent = s->agent};
    json_t *d = json_pack("{s:b}", "as_platform_admin", !s->entry.owner);
    const struct audit_event ev = {.action = "app_session.enter",
                                   .resource_type = "app_session",
                                   .resource_id = s->entry.session_id,
                                   .details = d,
                                   .status = MHD_HTTP_FOUND,
                                   .tenant_slug = s->entry.tenant};
    e = audit_record(db, &o, &ev, true);
    json_decref(d);
    return e;
}

/* The scheme://host[:port] of origin (a prefix of it), its length. */
static size_t origin_len(const char *origin)
{
    const char *p = strstr(origin, "://");
    if (!p)
        return strlen(origin);
    const char *slash = strchr(p + 3, '/');
    return slash ? (size_t)(slash - origin) : strlen(origin);
}

/* With one host name per session, a session is served on its own host only. */
static bool host_ok(struct MHD_Connection *c, const struct config *cfg, const char *origin)
{
    if (!strstr(cfg->sessions_url, "{id}"))
        return true;
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    const char *p = strstr(origin, "://");
    const char *want = p ? p + 3 : origin;
    size_t n = origin_len(origin) - (size_t)(want - origin);
    return host && strlen(host) == n && strncasecmp(host, want, n) == 0;
}

/* GET /_aidc/open?key=K: the single-use link of POST .../sessions/{id}/open. */
static enum MHD_Result open_link(struct relay *r, struct MHD_Connection *c)
{
    const char *key = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "key");
    if (!key || !is_key(key, 64))
        return answer(c, PROBLEM_APPSESSION_LINK_INVALID, NULL);
    unsigned char raw[32];
    char cookie[64], link_hash[65], cookie_hash[65], ip[64];
    if (crypto_random(raw, sizeof raw) != 0)
        return answer(c, PROBLEM_INTERNAL, NULL);
    crypto_b64url_encode(raw, sizeof raw, cookie, sizeof cookie);
    crypto_sha256_hex(key, strlen(key), link_hash);
    crypto_sha256_hex(cookie, strlen(cookie), cookie_hash);
    client_ip(r, c, ip, sizeof ip);
    struct spend s = {
        .link = link_hash,
        .cookie = cookie_hash,
        .ip = ip,
        .agent = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_USER_AGENT)};
    int e = in_tx(r, spend_tx, &s);
    if (e == AIDC_ENOTFOUND)
        return answer(c, PROBLEM_APPSESSION_LINK_INVALID, NULL);
    if (e)
        return answer(c, PROBLEM_DB_UNAVAILABLE, NULL);
    char *origin = config_session_origin(r->cfg, s.entry.session_id);
    bool secure = strncmp(origin, "https://", 8) == 0, here = host_ok(c, r->cfg, origin);
    free(origin);
    if (!here) /* a session's link is followed on its own host only (the link is spent) */
        return answer(c, PROBLEM_APPSESSION_LINK_INVALID, NULL);
    char *set = xasprintf(COOKIE "=%s; Path=" CONFIG_SESSION_PATH "%s/; HttpOnly; "
                                 "SameSite=Lax%s",
                          cookie, s.entry.session_id, secure ? "; Secure" : "");
    char *loc = xasprintf(CONFIG_SESSION_PATH "%s/", s.entry.session_id);
    enum MHD_Result ok = redirect(c, loc, set);
    free(set);
    free(loc);
    return ok;
}

struct admit {
    const char *cookie, *id;
    struct db_appsession_target t;
};

static int admit_tx(struct db *db, void *arg)
{
    struct admit *a = arg;
    return db_appsession_admit(db, a->cookie, a->id, &a->t);
}

struct touch {
    const char *id;
};

static int touch_tx(struct db *db, void *arg)
{
    return db_appsession_touch(db, ((struct touch *)arg)->id);
}

static void relay_touch(void *relay, const char *session_id)
{
    struct touch t = {session_id};
    if (in_tx(relay, touch_tx, &t) != 0)
        log_warn("sessions relay: cannot mark session %s active", session_id);
}

/* A request of another origin may not change anything, nor open a WebSocket. */
static bool origin_ok(struct MHD_Connection *c, const char *method, const char *origin,
                      bool upgrade)
{
    const char *got = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    bool safe =
        strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 || strcmp(method, "OPTIONS") == 0;
    if ((safe && !upgrade) || !got) /* browsers send Origin with every unsafe request */
        return true;
    size_t n = origin_len(origin);
    return strlen(got) == n && strncasecmp(got, origin, n) == 0;
}

/* A declared body larger than the relay passes on. */
static bool declared_too_large(struct MHD_Connection *c, long long max)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    char *end = NULL;
    long long n = cl ? strtoll(cl, &end, 10) : 0;
    return cl && end != cl && n > max;
}

/*
 * The first call of a request under /sessions/: may it pass? MHD_YES with
 * q->admitted set (its body comes next), or the refusal (or redirect) queued.
 */
static enum MHD_Result admit_session(struct relay *r, struct MHD_Connection *c, struct rreq *q,
                                     const char *method)
{
    /* /sessions/<id>/...: the id is a UUID, the rest the app's */
    const char *id_at = q->uri + strlen(CONFIG_SESSION_PATH);
    char id[37];
    snprintf(id, sizeof id, "%.36s", id_at);
    if (!crypto_uuid_valid(id))
        return answer(c, PROBLEM_NOT_FOUND, NULL);
    if (id_at[36] != '/') { /* the app's root is the folder */
        char *loc = xasprintf(CONFIG_SESSION_PATH "%s/%s", id, id_at + 36);
        enum MHD_Result ok = redirect(c, loc, NULL);
        free(loc);
        return ok;
    }
    char *origin = config_session_origin(r->cfg, id);
    const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE);
    bool upgrade = up && strcasecmp(up, "websocket") == 0;
    enum MHD_Result ok = MHD_YES;
    const char *cookie = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, COOKIE);
    if (!host_ok(c, r->cfg, origin)) {
        ok = answer(c, PROBLEM_NOT_FOUND, NULL);
    } else if (!cookie || !is_key(cookie, 64)) {
        ok = answer(c, PROBLEM_APPSESSION_NO_ENTRY, NULL);
    } else if (!origin_ok(c, method, origin, upgrade)) {
        ok = answer(c, PROBLEM_APPSESSION_ORIGIN, NULL);
    } else {
        char hash[65];
        crypto_sha256_hex(cookie, strlen(cookie), hash);
        struct admit a = {.cookie = hash, .id = id};
        int e = in_tx(r, admit_tx, &a);
        if (e == AIDC_ENOTFOUND)
            ok = answer(c, PROBLEM_APPSESSION_NO_ENTRY, NULL);
        else if (e == AIDC_EFORBIDDEN)
            ok = answer(c, PROBLEM_APPSESSION_OTHER, NULL);
        else if (e)
            ok = answer(c, PROBLEM_DB_UNAVAILABLE, NULL);
        else if (!a.t.ready || !a.t.port)
            ok = answer(c, PROBLEM_APPSESSION_NOT_READY, NULL);
        else if (declared_too_large(c, r->cfg->sessions_max_body_bytes))
            ok = answer(c, PROBLEM_APPSESSION_BODY_TOO_LARGE,
                        json_pack("{s:I}", "max", (json_int_t)r->cfg->sessions_max_body_bytes));
        else {
            q->admitted = true;
            q->t = a.t;
            snprintf(q->id, sizeof q->id, "%s", id);
        }
    }
    free(origin);
    return ok;
}

/* The last call of an admitted request: its body is all here; pass it to the app. */
static enum MHD_Result relay_session(struct relay *r, struct MHD_Connection *c, struct rreq *q,
                                     const char *method)
{
    if (q->body_too_large) /* sent without a length, or past the one it declared */
        return answer(c, PROBLEM_APPSESSION_BODY_TOO_LARGE,
                      json_pack("{s:I}", "max", (json_int_t)r->cfg->sessions_max_body_bytes));
    char *origin = config_session_origin(r->cfg, q->id);
    const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE);
    bool upgrade = up && strcasecmp(up, "websocket") == 0;
    char ip[64];
    client_ip(r, c, ip, sizeof ip);
    struct relaypipe_request pr = {.method = method,
                                   .uri = q->uri,
                                   .origin = origin,
                                   .session_id = q->id,
                                   .host = q->t.host,
                                   .port = q->t.port,
                                   .secret = q->t.secret,
                                   .body = q->body.buf,
                                   .body_len = q->body.len,
                                   .client_ip = ip,
                                   .registry = &r->ws,
                                   .touch = relay_touch,
                                   .touch_arg = r};
    enum MHD_Result ok = upgrade ? relaypipe_websocket(c, &pr, &q->ws) : relaypipe_http(c, &pr);
    free(origin);
    return ok;
}

/* libmicrohttpd's first word of a request: its URI as sent (the path is not decoded). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    struct rreq *q = xcalloc(1, sizeof *q);
    q->body = (struct sbuf)SBUF_INIT;
    size_t n = strlen(uri);
    q->uri_too_long = n > MAX_URI;
    snprintf(q->uri, sizeof q->uri, "%s", uri);
    return q;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **ctx)
{
    (void)url;
    (void)version;
    struct relay *r = cls;
    struct rreq *q = *ctx;
    if (!q)
        return MHD_NO;
    if (!q->started) { /* the headers alone: answered now, or admitted and its body read */
        q->started = true;
        if (q->uri_too_long)
            return answer(c, PROBLEM_NOT_FOUND, NULL);
        size_t n = strlen(CONFIG_SESSION_OPEN_PATH);
        if (strncmp(q->uri, CONFIG_SESSION_OPEN_PATH "?", n + 1) == 0 && strcmp(method, "GET") == 0)
            return open_link(r, c);
        if (strncmp(q->uri, CONFIG_SESSION_PATH, strlen(CONFIG_SESSION_PATH)) == 0)
            return admit_session(r, c, q, method);
        return answer(c, PROBLEM_NOT_FOUND, NULL);
    }
    if (*upload_size) { /* the body, in pieces: kept up to the limit, past it dropped */
        if (q->body.len + *upload_size > (size_t)r->cfg->sessions_max_body_bytes)
            q->body_too_large = true;
        else if (!q->body_too_large)
            sbuf_append(&q->body, upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    return q->admitted ? relay_session(r, c, q, method) : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    struct rreq *q = *ctx;
    if (q) {
        relaypipe_ws_release(q->ws);
        sbuf_free(&q->body);
        free(q);
    }
    *ctx = NULL;
}

struct relay *relay_start(struct config *cfg, int *off)
{
    *off = cfg->sessions_port < 0;
    if (*off)
        return NULL;
    struct sockaddr_storage ss;
    const char *h = strcmp(cfg->sessions_host, "localhost") == 0 ? "127.0.0.1" : cfg->sessions_host;
    if (h[0] == '\0' || strcmp(h, "*") == 0)
        h = "0.0.0.0";
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG;
    if (!netaddr_listen(h, cfg->sessions_port, &ss)) {
        log_error("AIDC_SESSIONS_LISTEN: \"%s\" is not a numeric address", cfg->sessions_host);
        return NULL;
    }
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (!relaypipe_init())
        return NULL;
    struct relay *r = xcalloc(1, sizeof *r);
    r->cfg = cfg;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    relaypipe_registry_init(&r->ws);
    r->d = MHD_start_daemon(flags, (uint16_t)cfg->sessions_port, NULL, NULL, on_request, r,
                            MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, (void *)"sessions relay",
                            MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&ss,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL, MHD_OPTION_NOTIFY_COMPLETED,
                            on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->sessions_max_connections,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->max_header_bytes,
                            MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
    if (!r->d) {
        log_error("cannot listen on %s for sessions (AIDC_SESSIONS_LISTEN: address in use?)",
                  cfg->sessions_listen[0] ? cfg->sessions_listen : "the API's port + 1");
        relay_stop(r);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(r->d, MHD_DAEMON_INFO_BIND_PORT);
    r->port = di ? di->port : cfg->sessions_port;
    if (!cfg->sessions_url[0]) {
        free(cfg->sessions_url);
        bool v6 = strchr(h, ':') != NULL;
        cfg->sessions_url =
            xasprintf("http://%s%s%s:%d", v6 ? "[" : "",
                      strcmp(h, "0.0.0.0") == 0 ? "127.0.0.1" : h, v6 ? "]" : "", r->port);
    }
    return r;
}

int relay_port(const struct relay *r)
{
    return r ? r->port : -1;
}

void relay_stop(struct relay *r)
{
    if (!r)
        return;
    relaypipe_registry_close(&r->ws); /* libmicrohttpd stops once its upgrades ended */
    if (r->d)
        MHD_stop_daemon(r->d);
    for (int i = 0; i < r->nfree; i++)
        db_close(r->free_db[i]);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
