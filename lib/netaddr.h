/*
 * netaddr.h - comma-separated lists of IPv4/IPv6 addresses and networks.
 */
#ifndef AIDC_NETADDR_H
#define AIDC_NETADDR_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Whether ip is in list: comma-separated addresses and networks
 * ("10.0.0.5, 10.244.0.0/16, fd00::/8"), as AIDC_TRUSTED_PROXIES.
 */
bool netaddr_in_list(const char *list, const char *ip);
/* false (the first bad entry in bad) when an entry is neither. */
bool netaddr_list_valid(const char *list, char *bad, size_t n);

#endif
