/*
 * ratelimit.h - abuse limits that need memory across requests: open connections
 * per client address, and request rates per client address and per credential
 * (token buckets).
 *
 * The state is per process: behind N replicas a client gets up to N times the
 * rate (docs/configuration.md says so; nginx in front limits the sum). The
 * tables are bounded (RATELIMIT_MAX_KEYS rate keys); a full table first forgets
 * buckets that have refilled, which carry no information, and then the
 * longest-idle ones, so a flood of new addresses cannot grow memory.
 *
 * Addresses are keyed as the request's source address (after trusted proxies,
 * server/http.c); IPv6 addresses by their /64, which one host usually owns
 * whole, so that stepping through a prefix buys no fresh budget.
 */
#ifndef AIDC_RATELIMIT_H
#define AIDC_RATELIMIT_H

#include "../lib/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define RATELIMIT_MAX_KEYS 65536
#define RATELIMIT_KEY_LEN 64

enum ratelimit_kind { RATELIMIT_ADDRESS = 0, RATELIMIT_TOKEN = 1 };

struct ratelimit_decision {
    bool limited;
    int retry_after;  /* seconds until one request is allowed again (>= 1) */
    bool first;       /* the first refusal since the key was last allowed: worth a log line */
};

/* Set up the tables from the configuration (rates of 0 turn a limit off). */
void ratelimit_init(const struct config *cfg);
/* Release the tables (at exit, for leak checkers). */
void ratelimit_free(void);

/* Take one request from the bucket of key (an address or a credential id). */
struct ratelimit_decision ratelimit_take(enum ratelimit_kind kind, const char *key);
/* As ratelimit_take at time now (seconds, monotonic): for tests. */
struct ratelimit_decision ratelimit_take_at(enum ratelimit_kind kind, const char *key, double now);

/* The rate key of a textual address: IPv4 as is, IPv6 by its /64. */
void ratelimit_address_key(const char *ip, char *out, size_t n);
/* The same for a socket address; false when it is neither IPv4 nor IPv6. */
bool ratelimit_sockaddr_key(const struct sockaddr *sa, char *out, size_t n);

/*
 * Open connections per address: ratelimit_conn_allowed() from the accept policy
 * (false: refuse it), then ratelimit_conn_opened()/ratelimit_conn_closed() from the
 * connection notifications. Trusted proxies are exempt (they carry many clients).
 */
bool ratelimit_conn_allowed(const char *key);
void ratelimit_conn_opened(const char *key);
void ratelimit_conn_closed(const char *key);
/*
 * The client behind trusted proxies: ip (the peer, a buffer of n bytes) is
 * replaced, while it is in trusted, by the next address from the right of
 * X-Forwarded-For xff (trusted as netaddr_in_list reads it) - entries further left were written by the client
 * itself and prove nothing. Garbage stops the walk at the last good address.
 */
void ratelimit_forwarded_client(const char *trusted, const char *xff, char *ip, size_t n);

/* How many keys the rate table holds now (tests, metrics). */
size_t ratelimit_rate_keys(void);

#endif
