/*
 * intake.c - what a request is before it is routed: its path and query
 * decoded, the headers handlers need, a request id, the client's address
 * (through trusted proxies); and the count of open connections per address.
 */
#include "intake.h"

#include "../lib/crypto.h"
#include "../lib/hex.h"
#include "../lib/log.h"
#include "../lib/netaddr.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "ratelimit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

static const struct config *g_cfg; /* configuration: read-only after start */
/* client connections open, over every HTTP thread's daemon (AIDC_MAX_CONNECTIONS) */
static atomic_int open_conns;

/* What a connection carries from its start to its close. */
struct conn_note {
    bool keyed; /* counted against its address (AIDC_MAX_CONNECTIONS_PER_ADDRESS) */
    char key[RATELIMIT_KEY_LEN];
};

void intake_init(const struct config *cfg)
{
    g_cfg = cfg;
}

/* libmicrohttpd's unescape callback: hex_url_unescape (%00 stays encoded) */
size_t intake_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return hex_url_unescape(s);
}

/* The headers handlers may need, copied in one walk over the request's headers. */
static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    struct req *rq = cls;
    struct {
        const char *name;
        char **slot;
    } wanted[] = {
        {MHD_HTTP_HEADER_AUTHORIZATION, &rq->authorization},
        {MHD_HTTP_HEADER_COOKIE, &rq->cookie},
        {"X-Requested-With", &rq->requested_with},
        {"Idempotency-Key", &rq->idempotency_key},
        {MHD_HTTP_HEADER_CONTENT_TYPE, &rq->content_type},
        {MHD_HTTP_HEADER_USER_AGENT, &rq->user_agent},
        {MHD_HTTP_HEADER_ACCEPT, &rq->accept},
        {MHD_HTTP_HEADER_RANGE, &rq->range},
        {MHD_HTTP_HEADER_CONTENT_RANGE, &rq->content_range},
        {MHD_HTTP_HEADER_CONTENT_LENGTH, &rq->content_length},
    };
    if (!value)
        return MHD_YES;
    if (strcasecmp(key, "X-Forwarded-For") == 0) {
        /* several header lines are one list, in order (RFC 9110 5.3) */
        char *joined =
            rq->forwarded_for ? xasprintf("%s, %s", rq->forwarded_for, value) : xstrdup(value);
        free(rq->forwarded_for);
        rq->forwarded_for = joined;
        return MHD_YES;
    }
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
        if (strcasecmp(key, wanted[i].name) == 0) {
            if (!*wanted[i].slot) /* the first of repeated lines counts */
                *wanted[i].slot = xstrdup(value);
            return MHD_YES;
        }
    }
    return MHD_YES;
}

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    struct req *rq = cls;
    if (rq->nquery >= 64) {
        rq->query_dup = true; /* too many arguments: reported as invalid */
        return MHD_NO;
    }
    req_add_query(rq, key, value);
    return MHD_YES;
}

/*
 * A unique request id without a system call per request: 8 random bytes per
 * thread, drawn once, then a counter.
 */
static void new_request_id(char *out, size_t n)
{
    static _Thread_local unsigned char seed[16];
    static _Thread_local bool seeded;
    if (!seeded) {
        if (crypto_random(seed, 8) != 0)
            abort();
        seed[0] &= 0x7f; /* never a leading '-' or '_': ids get pasted into shells and grep */
        seeded = true;
    }
    for (int i = 8; i < 16 && ++seed[i] == 0; i++)
        ; /* little-endian counter in the second half */
    crypto_b64url_encode(seed, sizeof seed, out, n);
}

bool intake_trusted_proxy(const char *ip)
{
    return netaddr_in_list(g_cfg->trusted_proxies, ip);
}

static void source_address(struct MHD_Connection *c, struct req *rq)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    netaddr_text(ci ? ci->client_addr : NULL, rq->source_ip, sizeof rq->source_ip);
    if (rq->forwarded_for && rq->source_ip[0])
        ratelimit_forwarded_client(g_cfg->trusted_proxies, rq->forwarded_for, rq->source_ip,
                                   sizeof rq->source_ip);
}

struct req *intake_request(struct MHD_Connection *c, const char *url, const char *method)
{
    struct req *rq = xcalloc(1, sizeof *rq);
    clock_gettime(CLOCK_MONOTONIC, &rq->started);
    rq->method = method; /* owned by libmicrohttpd for the request's life */
    rq->path = xstrdup(url);
    MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header, rq);
    if (rq->user_agent) {
        /* stored in audit records: valid UTF-8, bounded */
        struct sbuf ua = SBUF_INIT;
        sbuf_utf8(&ua, rq->user_agent);
        free(rq->user_agent);
        rq->user_agent = xstrndup(sbuf_str(&ua), sbuf_utf8_prefix(sbuf_str(&ua), 512));
        sbuf_free(&ua);
    }
    const char *rid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
    if (rid && req_id_acceptable(rid)) {
        snprintf(rq->request_id, sizeof rq->request_id, "%s", rid);
    } else {
        new_request_id(rq->request_id, sizeof rq->request_id);
    }
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, rq);
    source_address(c, rq);
    return rq;
}

/* ---- connections per address ------------------------------------------------------ */

/* The limit's key of a peer, or false when it is exempt (a trusted proxy, not IP). */
static bool peer_key(const struct sockaddr *sa, char *key, size_t n)
{
    char ip[INET6_ADDRSTRLEN];
    netaddr_text(sa, ip, sizeof ip);
    if (!ip[0] || intake_trusted_proxy(ip))
        return false;
    return ratelimit_sockaddr_key(sa, key, n);
}

/*
 * Refused connections are closed unanswered, like any server at its limit. The
 * overall limit is counted here: each HTTP thread's daemon may take more than
 * its share (server/http.c), as the kernel does not spread connections evenly.
 */
enum MHD_Result intake_accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)cls;
    (void)addrlen;
    if (g_cfg && atomic_load(&open_conns) >= g_cfg->max_connections) {
        log_debug("refused a connection: AIDC_MAX_CONNECTIONS reached");
        return MHD_NO;
    }
    char key[RATELIMIT_KEY_LEN];
    if (!peer_key(addr, key, sizeof key) || ratelimit_conn_allowed(key))
        return MHD_YES;
    log_debug("refused a connection from %s: AIDC_MAX_CONNECTIONS_PER_ADDRESS reached", key);
    return MHD_NO;
}

void intake_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        struct conn_note *n = xcalloc(1, sizeof *n);
        n->keyed = ci && peer_key(ci->client_addr, n->key, sizeof n->key);
        if (n->keyed)
            ratelimit_conn_opened(n->key);
        atomic_fetch_add(&open_conns, 1);
        *socket_context = n;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct conn_note *n = *socket_context;
        if (n->keyed)
            ratelimit_conn_closed(n->key);
        atomic_fetch_sub(&open_conns, 1);
        free(n);
        *socket_context = NULL;
    }
}
