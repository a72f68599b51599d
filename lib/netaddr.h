/*
 * netaddr.h - comma-separated lists of IPv4/IPv6 addresses and networks, and
 * the socket address of a numeric host to listen on.
 */
#ifndef AIDC_NETADDR_H
#define AIDC_NETADDR_H

#include <stdbool.h>
#include <stddef.h>

struct sockaddr;
struct sockaddr_storage;

/*
 * The address of sa (IPv4 or IPv6) as text in out ("" for another family or
 * where it does not fit). An IPv4 address is written without inet_ntop's
 * sprintf: this runs for every request (docs/performance.md).
 */
void netaddr_text(const struct sockaddr *sa, char *out, size_t n);

/*
 * Whether ip is in list: comma-separated addresses and networks
 * ("10.0.0.5, 10.244.0.0/16, fd00::/8"), as AIDC_TRUSTED_PROXIES.
 */
bool netaddr_in_list(const char *list, const char *ip);
/* false (the first bad entry in bad) when an entry is neither. */
bool netaddr_list_valid(const char *list, char *bad, size_t n);

/* host (numeric IPv4 or IPv6; "", "*": every IPv4 address; "localhost": 127.0.0.1)
 * and port into ss; false when host is none of these. */
bool netaddr_listen(const char *host, int port, struct sockaddr_storage *ss);
/* Another port for an address netaddr_listen made. */
void netaddr_set_port(struct sockaddr_storage *ss, int port);

#endif
