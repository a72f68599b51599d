/*
 * http.h - the HTTP server on libmicrohttpd (a daemon per HTTP thread, epoll).
 *
 * Owns the daemons and the per-thread database connections. For each
 * request it copies what handlers need into a struct req (headers, query,
 * body up to AIDC_MAX_BODY_BYTES), answers 404/405/413/415 before reading a
 * body it will not use, hands the rest to server/dispatch.c, and writes the
 * answer with the security headers, the access-log line and the metrics.
 */
#ifndef AIDC_HTTP_H
#define AIDC_HTTP_H

#include <stdarg.h>

#include "../lib/config.h"

#include <stdbool.h>

struct http_server;
struct sbuf;

/* Start serving per cfg (cfg must outlive the server). NULL on failure (logged). */
struct http_server *http_start(const struct config *cfg);
/* The TCP port actually bound (useful with port 0). */
int http_port(const struct http_server *srv);
/*
 * Start draining: new requests get 503 (Connection: close), /readyz says not
 * ready; requests in flight continue.
 */
void http_quiesce(struct http_server *srv);
/* True once draining has started. */
bool http_draining(void);
/* Wait until no request is in flight, at most timeout_s seconds. */
bool http_wait_idle(struct http_server *srv, int timeout_s);
/* Stop the daemon, close connections, free everything. */
void http_stop(struct http_server *srv);
/* The gauges of the password and write threads (Prometheus text), for /metrics. */
void http_pool_metrics(struct sbuf *sb);

/*
 * libmicrohttpd's error log into ours, prefixed with cls (a string naming the
 * listener; NULL: "libmicrohttpd"). Its format strings are its own, hence no
 * literal to check.
 */
void http_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
