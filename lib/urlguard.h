/*
 * urlguard.h - where the platform may send a request on a user's behalf
 * (webhooks, docs/notifications.md): the server-side request forgery guard.
 *
 * A user-given URL must be https (http only to the loopback, and only when
 * the operator allows the loopback: tests), carry no user:password, and not
 * be longer than URLGUARD_MAX_URL. Its host, when an address, and at
 * delivery every address its name resolves to, must be public: loopback,
 * private (RFC 1918, unique local), link-local (the cloud metadata service
 * 169.254.169.254 among them), carrier-grade NAT, multicast, reserved,
 * documentation and unspecified addresses are refused, and so are IPv6
 * forms that embed one (v4-mapped, NAT64). The resolved address is pinned
 * for the connection (and checked again as the socket opens), so a name
 * that resolves differently a second time (DNS rebinding) reaches nothing
 * new.
 */
#ifndef AIDC_URLGUARD_H
#define AIDC_URLGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define URLGUARD_MAX_URL 2048

/* What a URL was parsed into. */
struct urlguard_target {
    char host[256]; /* as in the URL, without brackets */
    char port[8];
    bool https;
    bool literal; /* host is an IP address */
};

/*
 * Check url's form: 0 with t filled, or AIDC_EINVAL with the reason in why
 * (short, lowercase). A literal address host is classified here as well.
 */
int urlguard_check(const char *url, bool allow_loopback, struct urlguard_target *t, char *why,
                   size_t whyn);
/*
 * Resolve t's host and choose the address to connect to: every address it
 * resolves to must be allowed (a name with one private address among public
 * ones is refused). Fills pin with "host:port:address", the form of
 * CURLOPT_RESOLVE. 0, AIDC_EFORBIDDEN (why: which address) or AIDC_EUNAVAIL
 * (it does not resolve).
 */
int urlguard_resolve(const struct urlguard_target *t, bool allow_loopback, char *pin, size_t pinn,
                     char *why, size_t whyn);
/* Whether a socket address may be connected to (the guard's verdict, for a socket callback). */
bool urlguard_addr_allowed(const struct sockaddr *sa, bool allow_loopback);

#endif
