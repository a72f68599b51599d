/*
 * http.c - libmicrohttpd glue: request intake, body limits, responses.
 *
 * libmicrohttpd calls the access handler several times per request: first
 * with the headers (we build the struct req and may answer at once), then with
 * body chunks, then once more with no data (we dispatch). Per-request state
 * lives in *req_cls and is freed in the completion callback, which also
 * writes the access log and the metrics.
 *
 * A request whose handler runs the password KDF (RF_PASSWORD), and a write,
 * which waits for its commit, are not served on the HTTP thread: the
 * connection is suspended and the whole dispatch runs on a password or write
 * thread (workpool.h), which leaves the answer in the pending state and
 * resumes the connection; libmicrohttpd then calls the access handler again,
 * on one of its threads, which sends it. The HTTP threads go on meanwhile.
 */
#include "http.h"

#include "../db/db.h"
#include "../lib/clock.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/netaddr.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "accesslog.h"
#include "dispatch.h"
#include "intake.h"
#include "metrics.h"
#include "problem.h"
#include "ratelimit.h"
#include "respond.h"
#include "router.h"
#include "static.h"
#include "threaddb.h"
#include "workpool.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HTTP_MAX_THREADS CONFIG_MAX_THREADS

struct http_server {
    struct MHD_Daemon *d[HTTP_MAX_THREADS]; /* one per HTTP thread, on one port (http_start) */
    int nd;
    const struct config *cfg;
    int port;
};

/* State of one request between the access-handler calls. */
struct pending {
    struct req *rq;
    int status;  /* answered status, for the access log */
    size_t slot; /* metrics slot */
    bool too_big;
    /* a refusal decided from the headers, answered once the body is read */
    bool deferred;
    enum problem deferred_problem;
    char deferred_allow[64];
    int deferred_retry_after;
    size_t discarded;
    bool answered;
    bool is_static;
    struct resp *early; /* an answer decided from the headers, sent once the body is drained */
    bool sink_failed;   /* the upload's sink refused more: the rest is drained */
    /* a request served on a password or write thread: its connection
     * (suspended meanwhile), and the answer that thread made, sent once resumed */
    struct workpool_job job;
    struct MHD_Connection *conn;
    struct resp *later;
    bool serve_here; /* a write thread had no connection: the HTTP thread serves it */
};

static const struct config *g_cfg; /* configuration: read-only after start */
static atomic_long in_flight;
static atomic_bool draining;
/* the threads that serve requests off the HTTP threads (workpool.h) */
static struct workpool *password_pool, *write_pool;
/* ---- responses ------------------------------------------------------------------ */

static enum MHD_Result queue(struct MHD_Connection *c, struct pending *p, struct resp *rs)
{
    int status = 0;
    struct MHD_Response *r = respond_build(rs, p->rq->request_id, atomic_load(&draining), &status);
    if (!r)
        return MHD_NO;
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    p->status = status;
    p->answered = true;
    if (ok != MHD_YES)
        log_warn("cannot queue the response (client gone?)");
    return ok;
}

/* How much of an upload that failed is read (and dropped) before answering:
 * enough for a client to see why, not a whole file's worth. */
#define UPLOAD_DRAIN_BYTES (64ULL << 20)

/* How much of a refused body is read (and dropped) before answering. */
static unsigned long long drain_limit(void)
{
    return 4ULL * (unsigned long long)g_cfg->max_body_bytes;
}

/* Answer an error decided before dispatch (404, 405, 413, 415, 429). */
static enum MHD_Result answer_early(struct MHD_Connection *c, struct pending *p,
                                    enum problem problem, const char *allow)
{
    struct resp rs = {0};
    json_t *params = problem == PROBLEM_RATE_ADDRESS
                         ? json_pack("{s:i}", "seconds", p->deferred_retry_after)
                         : NULL;
    api_problem(&rs, problem, params);
    if (allow)
        rs.err.allow = xstrdup(allow);
    rs.err.retry_after = p->deferred_retry_after;
    enum MHD_Result ok = queue(c, p, &rs);
    resp_free(&rs);
    return ok;
}

/*
 * Refuse a request from its headers. If a body is on its way, read and drop
 * it first (up to a bound): answering and closing while the client is still
 * sending makes the kernel reset the connection, and the client would see a
 * broken connection instead of the 413/415 explaining why.
 */
/* Whether a body follows the headers, and its announced length (0: not said). */
static bool body_coming(struct MHD_Connection *c, unsigned long long *len)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    *len = cl ? strtoull(cl, NULL, 10) : 0;
    return *len > 0 || (te && strcasestr(te, "chunked"));
}

static enum MHD_Result refuse(struct MHD_Connection *c, struct pending *p, enum problem problem,
                              const char *allow)
{
    unsigned long long len;
    if (!body_coming(c, &len) || len > drain_limit())
        return answer_early(c, p, problem, allow);
    p->deferred = true;
    p->deferred_problem = problem;
    snprintf(p->deferred_allow, sizeof p->deferred_allow, "%s", allow ? allow : "");
    return MHD_YES;
}

/* Answer rs (taken), after reading and dropping a body on its way, as refuse() does,
 * up to UPLOAD_DRAIN_BYTES: an upload refused from its headers is a file's worth of
 * body, and a client that is sending it reads no answer until it is through. */
static enum MHD_Result refuse_with(struct MHD_Connection *c, struct pending *p, struct resp *rs)
{
    unsigned long long len;
    if (body_coming(c, &len) && len <= UPLOAD_DRAIN_BYTES) {
        p->early = rs;
        return MHD_YES;
    }
    enum MHD_Result ok = queue(c, p, rs);
    resp_free(rs);
    free(rs);
    return ok;
}

/* An upload's route, its headers in: admitted and given its sink, or refused now. */
static enum MHD_Result begin_upload(struct MHD_Connection *c, struct pending *p)
{
    struct req *rq = p->rq;
    struct resp *rs = xcalloc(1, sizeof *rs);
    rq->db = threaddb_primary();
    rq->rdb = rq->db;
    dispatch_upload_begin(rq, rs, g_cfg);
    log_set_request(NULL, NULL);
    if (rs->err.status || !rq->sink.write) {
        if (!rs->err.status)
            api_problem(rs, PROBLEM_INTERNAL, NULL);
        return refuse_with(c, p, rs);
    }
    resp_free(rs);
    free(rs);
    return MHD_YES;
}

static enum MHD_Result answer_static(struct MHD_Connection *c, struct pending *p)
{
    struct req *rq = p->rq;
    struct static_file f;
    const char *inm =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    static_open(g_cfg->portal_dir, rq->path, inm, &f);
    if (f.status == 404)
        return answer_early(c, p, PROBLEM_NO_PAGE, NULL);
    struct MHD_Response *r = f.status == 200
                                 ? MHD_create_response_from_fd64(f.size, f.fd)
                                 : MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (f.fd >= 0)
            close(f.fd);
        return MHD_NO;
    }
    respond_common_headers(r, rq->request_id, false);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, f.cache_control);
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, f.etag);
    if (f.status == 200)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, f.content_type);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)f.status, r);
    MHD_destroy_response(r);
    p->status = f.status;
    p->answered = true;
    return ok;
}

/* ---- password work and writes, on their own threads ---------------------------- */

/* The pending request a job is embedded in. */
static struct pending *job_pending(struct workpool_job *job)
{
    return (struct pending *)(void *)((char *)job - offsetof(struct pending, job));
}

/*
 * Hand the answer over and resume. After MHD_resume_connection the request is
 * libmicrohttpd's again (an HTTP thread may send and free it at once): nothing
 * of p is touched after. The daemon's ITC wakes the worker that owns it.
 */
static void job_answer(struct pending *p, struct resp *rs)
{
    p->later = rs;
    MHD_resume_connection(p->conn);
}

static void job_run(struct workpool_job *job)
{
    struct pending *p = job_pending(job);
    struct req *rq = p->rq;
    struct resp *rs = xcalloc(1, sizeof *rs);
    /* the pool thread's own connections (threaddb: opened on first use) */
    rq->db = threaddb_primary();
    rq->rdb = rq->db;
    log_set_request(rq->request_id, NULL);
    dispatch(rq, rs, g_cfg);
    log_set_request(NULL, NULL);
    job_answer(p, rs);
}

/*
 * A write thread without a database connection (the server's connection limit,
 * a role's CONNECTION LIMIT or a pooler's client limit reached by the added
 * threads) would answer 503 where the HTTP thread, which has one, can serve
 * the write: it hands the request back instead, to be served there.
 */
static void write_job_run(struct workpool_job *job)
{
    struct pending *p = job_pending(job);
    if (db_ensure(threaddb_primary()) != 0) {
        workpool_demote_self();
        p->serve_here = true;
        MHD_resume_connection(p->conn);
        return;
    }
    job_run(job);
}

/* The server stops before the job ran: the answer of any request refused then. */
static void job_cancel(struct workpool_job *job)
{
    struct resp *rs = xcalloc(1, sizeof *rs);
    api_problem(rs, PROBLEM_SHUTTING_DOWN, NULL);
    rs->err.retry_after = 1;
    job_answer(job_pending(job), rs);
}

/* Whether the request's handler runs the KDF (a PATCH of a user: only with a password). */
static bool needs_password_thread(const struct req *rq)
{
    unsigned f = rq->route ? rq->route->flags : 0;
    if (!(f & RF_PASSWORD))
        return false;
    if (!(f & RF_PASSWORD_IF_SET))
        return true;
    json_t *b = rq->body ? json_loadb(rq->body, rq->body_len, 0, NULL) : NULL;
    bool set = json_is_object(b) && json_object_get(b, "password");
    json_decref(b);
    return set;
}

/* Seconds a client refused for a full queue is told to wait: about the time
 * the threads need to empty the queue, at ~50 ms a hash. */
static int busy_retry_after(void)
{
    long per_thread = g_cfg->password_queue_length / (g_cfg->password_hash_concurrency * 20);
    return per_thread < 1 ? 1 : (int)(per_thread > 60 ? 60 : per_thread);
}

/*
 * The request to a thread of pool (a place in its queue reserved), run there
 * by run. The connection is suspended before the job is queued: the job may
 * resume it at once.
 */
static void hand_to(struct workpool *pool, struct MHD_Connection *c, struct pending *p,
                    void (*run)(struct workpool_job *))
{
    p->conn = c;
    p->job.run = run;
    p->job.cancel = job_cancel;
    MHD_suspend_connection(c);
    workpool_push(pool, &p->job);
}

/* Suspend the request and queue it for a password thread, or answer 503 at
 * once when the queue is full: an HTTP thread never waits for a password. */
static enum MHD_Result to_password_thread(struct MHD_Connection *c, struct pending *p)
{
    if (!workpool_reserve(password_pool)) {
        struct resp rs = {0};
        int secs = busy_retry_after();
        api_problem(&rs, PROBLEM_PASSWORD_BUSY, json_pack("{s:i}", "seconds", secs));
        rs.err.retry_after = secs;
        enum MHD_Result ok = queue(c, p, &rs);
        resp_free(&rs);
        return ok;
    }
    hand_to(password_pool, c, p, job_run);
    return MHD_YES;
}

/*
 * A write waits for its commit (and, on a small machine, for the CPU the
 * sealer, the waker and the admitter take after it): on a write thread, so
 * that the HTTP thread serves other requests meanwhile. Writes beyond the
 * write threads wait in the pool's queue, not on an HTTP thread, so reads
 * pass a burst of writes; false (the pool off, or its queue as long as the
 * connection limit): served here, as without the pool. A route that needs no
 * database, or streams its body in (an upload), stays here.
 */
static bool to_write_thread(struct MHD_Connection *c, struct pending *p)
{
    const struct req *rq = p->rq;
    if (p->serve_here || !rq->route || (rq->route->flags & (RF_NO_DB | RF_UPLOAD)) ||
        strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0 ||
        strcmp(rq->method, "OPTIONS") == 0 || !workpool_reserve(write_pool))
        return false;
    hand_to(write_pool, c, p, write_job_run);
    return true;
}

/* ---- the access handler --------------------------------------------------------- */

static bool is_api_path(const char *path)
{
    return strncmp(path, "/api/", 5) == 0 || strcmp(path, "/api") == 0 ||
           strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
           strcmp(path, "/metrics") == 0;
}

/* Whether the Content-Type ct is the media type want (parameters ignored). */
static bool is_type(const char *ct, const char *want)
{
    size_t n = ct ? strcspn(ct, "; ") : 0;
    return ct && n == strlen(want) && strncasecmp(ct, want, n) == 0;
}

/* The largest body the request's route takes (before routing: the default). */
static size_t body_limit(const struct req *rq)
{
    if (rq->route && (rq->route->flags & RF_INGEST))
        return (size_t)g_cfg->audit_ingest_max_bytes;
    if (rq->route && (rq->route->flags & RF_UPLOAD))
        return (size_t)g_cfg->files_max_upload_bytes;
    return (size_t)g_cfg->max_body_bytes;
}

/*
 * The request rate of the client's address, for API requests but the probes
 * (load balancers and Prometheus ask often, from few addresses). A request
 * only a trusted proxy is known for is not counted: the proxy carries many.
 */
static bool rate_limited(struct pending *p)
{
    const struct req *rq = p->rq;
    if (!rq->source_ip[0] || strcmp(rq->path, "/healthz") == 0 ||
        strcmp(rq->path, "/readyz") == 0 || strcmp(rq->path, "/metrics") == 0 ||
        intake_trusted_proxy(rq->source_ip))
        return false;
    char key[RATELIMIT_KEY_LEN];
    ratelimit_address_key(rq->source_ip, key, sizeof key);
    struct ratelimit_decision d = ratelimit_take(RATELIMIT_ADDRESS, key);
    if (!d.limited)
        return false;
    if (d.first)
        log_warn("rate limit: address %s over %d requests/s", key, g_cfg->rate_limit_per_address);
    p->deferred_retry_after = d.retry_after;
    return true;
}

/* First call: route the request and answer what needs no body. */
static enum MHD_Result on_headers(struct MHD_Connection *c, struct pending *p)
{
    struct req *rq = p->rq;
    /* the probes keep answering: /readyz says "shutting down" */
    if (atomic_load(&draining) && strcmp(rq->path, "/healthz") != 0 &&
        strcmp(rq->path, "/readyz") != 0 && strcmp(rq->path, "/metrics") != 0) {
        struct resp rs = {0};
        api_problem(&rs, PROBLEM_SHUTTING_DOWN, NULL);
        rs.err.retry_after = 1;
        enum MHD_Result ok = queue(c, p, &rs);
        resp_free(&rs);
        return ok;
    }
    if (!is_api_path(rq->path)) {
        p->is_static = true;
        p->slot = METRICS_SLOT_STATIC(routes_count);
        if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0)
            return refuse(c, p, PROBLEM_PORTAL_READ_ONLY, "GET, HEAD");
        return answer_static(c, p);
    }
    if (rate_limited(p))
        return refuse(c, p, PROBLEM_RATE_ADDRESS, NULL);
    char allow[64];
    const struct route *rt = NULL;
    p->slot = METRICS_SLOT_UNMATCHED(routes_count);
    switch (
        router_match(routes, routes_count, rq->method, rq->path, rq, &rt, allow, sizeof allow)) {
    case ROUTE_NO_PATH:
        return refuse(c, p, PROBLEM_NO_ENDPOINT, NULL);
    case ROUTE_NO_METHOD:
        return refuse(c, p, PROBLEM_METHOD_NOT_ALLOWED, allow);
    case ROUTE_FOUND:
        break;
    }
    rq->route = rt;
    p->slot = router_index(rt);
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > (unsigned long long)body_limit(rq))
        return refuse(c, p, PROBLEM_BODY_TOO_LARGE, NULL);
    if ((rt->flags & RF_BODY) && !is_type(rq->content_type, "application/json"))
        return refuse(c, p, PROBLEM_BODY_NOT_JSON, NULL);
    if ((rt->flags & RF_INGEST) && !is_type(rq->content_type, "application/json") &&
        !is_type(rq->content_type, "application/x-ndjson"))
        return refuse(c, p, PROBLEM_BODY_NOT_RECORDS, NULL);
    if (rt->flags & RF_UPLOAD)
        return begin_upload(c, p);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)cls;
    (void)version;
    struct pending *p = *req_cls;
    if (!p) {
        p = xcalloc(1, sizeof *p);
        p->rq = intake_request(c, url, method);
        *req_cls = p;
        atomic_fetch_add(&in_flight, 1);
        metrics_inflight_add(1);
        return on_headers(c, p);
    }
    if (p->answered) {
        *upload_data_size = 0; /* discard the body of an answered request */
        return MHD_YES;
    }
    if (p->later) { /* resumed: a password or write thread made the answer */
        struct resp *rs = p->later;
        p->later = NULL;
        enum MHD_Result ok = queue(c, p, rs);
        resp_free(rs);
        free(rs);
        return ok;
    }
    struct req *rq = p->rq;
    if (p->early) {
        if (*upload_data_size) {
            p->discarded += *upload_data_size;
            *upload_data_size = 0;
            if (p->discarded <= UPLOAD_DRAIN_BYTES)
                return MHD_YES;
        }
        struct resp *rs = p->early;
        p->early = NULL;
        enum MHD_Result ok = queue(c, p, rs);
        resp_free(rs);
        free(rs);
        return ok;
    }
    if (p->deferred) {
        if (*upload_data_size) {
            p->discarded += *upload_data_size;
            *upload_data_size = 0;
            if (p->discarded <= drain_limit())
                return MHD_YES;
        }
        return answer_early(c, p, p->deferred_problem,
                            p->deferred_allow[0] ? p->deferred_allow : NULL);
    }
    if (*upload_data_size && rq->sink.write) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (!p->sink_failed && rq->sink.write(rq->sink.state, upload_data, n) != 0)
            p->sink_failed = true;
        else if (!p->sink_failed)
            return MHD_YES;
        p->discarded += n;
        /* the handler says why it stopped once the body is in (a client still
         * sending reads no answer); past a bound it says so at once */
        if (p->discarded <= UPLOAD_DRAIN_BYTES)
            return MHD_YES;
    } else if (*upload_data_size) {
        size_t n = *upload_data_size;
        if (!p->too_big && rq->body_len + n <= body_limit(rq)) {
            rq->body = xrealloc(rq->body, rq->body_len + n + 1);
            memcpy(rq->body + rq->body_len, upload_data, n);
            rq->body_len += n;
            rq->body[rq->body_len] = '\0';
        } else {
            p->too_big = true;
            p->discarded += n;
            if (p->discarded > drain_limit()) /* an endless stream: answer now */
                return answer_early(c, p, PROBLEM_BODY_TOO_LARGE, NULL);
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (p->too_big)
        return answer_early(c, p, PROBLEM_BODY_TOO_LARGE, NULL);
    if (needs_password_thread(rq))
        return to_password_thread(c, p);
    if (to_write_thread(c, p))
        return MHD_YES;
    struct resp rs = {0};
    rq->db = threaddb_primary();
    rq->rdb = rq->db;
    log_set_request(rq->request_id, NULL);
    dispatch(rq, &rs, g_cfg);
    enum MHD_Result ok = queue(c, p, &rs);
    resp_free(&rs);
    log_set_request(NULL, NULL);
    return ok;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    struct pending *p = *req_cls;
    if (!p)
        return;
    if (p->early) {
        resp_free(p->early);
        free(p->early);
    }
    if (p->later) { /* resumed, but the connection closed before it was sent */
        resp_free(p->later);
        free(p->later);
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double secs = (double)(now.tv_sec - p->rq->started.tv_sec) +
                  (double)(now.tv_nsec - p->rq->started.tv_nsec) / 1e9;
    if (!p->answered)
        p->status = 499; /* the client went away before an answer */
    else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        log_debug("response to %s not fully delivered (%d)", p->rq->request_id, (int)toe);
    const char *route = p->is_static ? "static" : "unmatched";
    if (p->rq->route)
        route = p->rq->route->pattern;
    accesslog_write(p->rq, route, p->status, secs);
    metrics_observe(p->slot, p->status, secs);
    req_free(p->rq);
    free(p);
    *req_cls = NULL;
    metrics_inflight_add(-1);
    atomic_fetch_sub(&in_flight, 1);
}

/* ---- daemon life cycle ------------------------------------------------------------ */

void http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct sbuf sb = SBUF_INIT;
    sbuf_vprintf(&sb, fmt, ap);
    while (sb.len && sb.buf[sb.len - 1] == '\n')
        sb.buf[--sb.len] = '\0';
    log_warn("%s: %s", cls ? (const char *)cls : "libmicrohttpd", sbuf_str(&sb));
    sbuf_free(&sb);
}

/* Stop (again: a no-op) and free both pools; only with no HTTP thread left. */
static void stop_pools(void)
{
    workpool_stop(password_pool);
    workpool_stop(write_pool);
    workpool_free(password_pool);
    workpool_free(write_pool);
    password_pool = write_pool = NULL;
}

/*
 * One HTTP thread: a daemon with a single epoll thread and a listening socket
 * of its own, SO_REUSEPORT (LISTENING_ADDRESS_REUSE) with its siblings', so
 * that the kernel spreads new connections over them. libmicrohttpd's own pool
 * (THREAD_POOL_SIZE) shares one listening socket, and a worker that wakes
 * accepts up to ten connections at once: a client opening its connections
 * together - wrk, a proxy's keep-alive pool - could land all of them on one
 * thread, which then served every request one at a time while the other idled,
 * each waiting for the database (a third of the throughput: docs/performance.md).
 * ALLOW_SUSPEND_RESUME for the password and write threads; ITC (already on) is
 * what lets another thread's MHD_resume_connection wake an idle daemon.
 */
static struct MHD_Daemon *start_daemon(const struct config *cfg, const struct sockaddr_storage *ss,
                                       int port, unsigned limit)
{
    unsigned flags =
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    if (ss->ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    return MHD_start_daemon(
        flags, (uint16_t)port, intake_accept_policy, NULL, on_request, NULL,
        MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, NULL, MHD_OPTION_UNESCAPE_CALLBACK,
        intake_unescape, NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)cfg->http_idle_timeout_seconds, MHD_OPTION_CONNECTION_LIMIT, limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->max_header_bytes,
        MHD_OPTION_NOTIFY_CONNECTION, intake_on_connection, NULL,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
}

static void stop_daemons(struct http_server *srv)
{
    for (int i = 0; i < srv->nd; i++)
        MHD_stop_daemon(srv->d[i]);
    srv->nd = 0;
}

struct http_server *http_start(const struct config *cfg)
{
    struct sockaddr_storage ss;
    g_cfg = cfg;
    threaddb_init(cfg);
    intake_init(cfg);
    ratelimit_init(cfg);
    if (!netaddr_listen(cfg->listen_host, cfg->listen_port, &ss)) {
        log_error("AIDC_LISTEN: \"%s\" is not a numeric IPv4 or IPv6 address", cfg->listen_host);
        return NULL;
    }
    /* before the daemon, whose threads read the pointers: set before they start */
    password_pool =
        workpool_start("password", cfg->password_hash_concurrency, cfg->password_queue_length);
    /* suspended writes are bounded by the connections: so is their queue */
    write_pool = cfg->write_threads > 0
                     ? workpool_start("write", cfg->write_threads, cfg->max_connections)
                     : NULL;
    if (!password_pool || (cfg->write_threads > 0 && !write_pool)) {
        stop_pools();
        return NULL;
    }
    struct http_server *srv = xcalloc(1, sizeof *srv);
    srv->cfg = cfg;
    int threads = cfg->threads < HTTP_MAX_THREADS ? cfg->threads : HTTP_MAX_THREADS;
    for (int i = 0; i < threads; i++) {
        /* the first daemon may have been given an ephemeral port: the others take that one */
        int port = i == 0 ? cfg->listen_port : srv->port;
        netaddr_set_port(&ss, port);
        /* One thread: the whole limit, and past it new connections wait in the
         * backlog. More: twice a thread's share and some - the kernel spreads
         * connections at random, and a daemon held to its share would leave new
         * ones waiting in its backlog while others had room - and the overall
         * limit counted across the daemons (intake_accept_policy closes a new
         * connection past it; one more here lets the count, not the daemon, decide). */
        int share = 2 * (cfg->max_connections / threads) + 16;
        if (threads == 1 || share > cfg->max_connections + 1)
            share = threads == 1 ? cfg->max_connections : cfg->max_connections + 1;
        srv->d[i] = start_daemon(cfg, &ss, port, (unsigned)share);
        if (srv->d[i]) {
            srv->nd = i + 1;
            const union MHD_DaemonInfo *di =
                i == 0 ? MHD_get_daemon_info(srv->d[0], MHD_DAEMON_INFO_BIND_PORT) : NULL;
            if (i == 0)
                srv->port = di && di->port ? di->port : cfg->listen_port;
        }
        if (!srv->d[i] || srv->port == 0) { /* 0: the others would each take a port of their own */
            log_error("cannot listen on %s (address in use or not permitted?)", cfg->listen);
            /* the first daemons may serve already: as http_stop, the pools first */
            workpool_stop(password_pool);
            workpool_stop(write_pool);
            stop_daemons(srv);
            free(srv);
            stop_pools();
            return NULL;
        }
    }
    return srv;
}

int http_port(const struct http_server *srv)
{
    return srv->port;
}

/*
 * Draining does not use MHD_quiesce_daemon: in libmicrohttpd 0.9.75 it races
 * the daemon's thread removing the listening socket from its epoll set and can
 * abort the process ("Failed to remove listen FD from epoll set"; seen with the
 * thread pool aidcd used before). Instead new requests are answered 503 with Connection: close,
 * /readyz says not ready, and every answer closes its connection, so load
 * balancers and keep-alive clients move elsewhere while in-flight requests end.
 */
void http_quiesce(struct http_server *srv)
{
    (void)srv;
    atomic_store(&draining, true);
}

bool http_draining(void)
{
    return atomic_load(&draining);
}

bool http_wait_idle(struct http_server *srv, int timeout_s)
{
    (void)srv;
    struct timespec nap = {0, 20L * 1000 * 1000};
    /* in milliseconds: whole seconds of the clock could end a 1 s limit at once */
    double until = clock_now_ms() + 1000.0 * timeout_s;
    for (;;) {
        if (atomic_load(&in_flight) == 0)
            return true;
        if (clock_now_ms() >= until)
            return false;
        nanosleep(&nap, NULL); /* polling a counter: nothing to wait on */
    }
}

void http_stop(struct http_server *srv)
{
    if (!srv)
        return;
    /* before the daemon: every suspended request is resumed (answered 503 if
     * its job never ran) while the daemon can still take it back */
    workpool_stop(password_pool);
    workpool_stop(write_pool);
    stop_daemons(srv);
    stop_pools();
    ratelimit_free();
    free(srv);
}

void http_pool_metrics(struct sbuf *sb)
{
    workpool_metrics(password_pool, sb, "aidc_password_jobs",
                     "Requests with password work (scrypt) on the password threads, by state.");
    workpool_metrics(write_pool, sb, "aidc_write_jobs",
                     "Writes served on the write threads (waiting for their commit), by state.");
}
