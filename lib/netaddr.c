/*
 * netaddr.c - lists of addresses and networks ("10.0.0.5, 10.244.0.0/16, fd00::/8"),
 * as AIDC_TRUSTED_PROXIES is written: parsed where they are read, so a
 * setting and a peer address are compared the same way everywhere.
 */
#include "netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct netaddr {
    int family;
    unsigned char b[16];
    int bits; /* prefix length */
};

static bool parse_net(const char *s, size_t len, struct netaddr *out)
{
    char text[INET6_ADDRSTRLEN + 8];
    if (len == 0 || len >= sizeof text)
        return false;
    memcpy(text, s, len);
    text[len] = '\0';
    char *slash = strchr(text, '/');
    if (slash)
        *slash = '\0';
    if (inet_pton(AF_INET, text, out->b) == 1)
        out->family = AF_INET, out->bits = 32;
    else if (inet_pton(AF_INET6, text, out->b) == 1)
        out->family = AF_INET6, out->bits = 128;
    else
        return false;
    if (slash) {
        char *end;
        long bits = strtol(slash + 1, &end, 10);
        if (end == slash + 1 || *end || bits < 0 || bits > out->bits)
            return false;
        out->bits = (int)bits;
    }
    return true;
}

static bool net_contains(const struct netaddr *net, const struct netaddr *a)
{
    if (net->family != a->family)
        return false;
    int full = net->bits / 8, rest = net->bits % 8;
    if (memcmp(net->b, a->b, (size_t)full) != 0)
        return false;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return rest == 0 || ((net->b[full] ^ a->b[full]) & mask) == 0;
}

/* The next entry of a comma/space-separated list at *p (length *len), or false at its end. */
static bool next_entry(const char **p, size_t *len)
{
    *p += *len;
    *p += strspn(*p, " ,");
    *len = strcspn(*p, ", ");
    return *len > 0;
}

bool netaddr_in_list(const char *list, const char *ip)
{
    struct netaddr a;
    if (!parse_net(ip, strlen(ip), &a) || strchr(ip, '/'))
        return false;
    const char *p = list ? list : "";
    size_t len = 0;
    while (next_entry(&p, &len)) {
        struct netaddr net;
        if (parse_net(p, len, &net) && net_contains(&net, &a))
            return true;
    }
    return false;
}

bool netaddr_list_valid(const char *list, char *bad, size_t n)
{
    const char *p = list ? list : "";
    size_t len = 0;
    while (next_entry(&p, &len)) {
        struct netaddr net;
        if (!parse_net(p, len, &net)) {
            snprintf(bad, n, "%.*s", (int)(len < 64 ? len : 64), p);
            return false;
        }
    }
    return true;
}

bool netaddr_listen(const char *host, int port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (h[0] == '\0' || strcmp(h, "*") == 0)
        h = "0.0.0.0";
    if (inet_pton(AF_INET, h, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        return true;
    }
    if (inet_pton(AF_INET6, h, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        return true;
    }
    return false;
}

void netaddr_set_port(struct sockaddr_storage *ss, int port)
{
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
}

void netaddr_text(const struct sockaddr *sa, char *out, size_t n)
{
    if (n == 0)
        return;
    out[0] = '\0';
    if (!sa)
        return;
    if (sa->sa_family == AF_INET) {
        const unsigned char *b =
            (const unsigned char *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
        char text[INET_ADDRSTRLEN], *q = text;
        for (int i = 0; i < 4; i++) {
            unsigned v = b[i];
            if (v >= 100)
                *q++ = (char)('0' + v / 100);
            if (v >= 10)
                *q++ = (char)('0' + v / 10 % 10);
            *q++ = (char)('0' + v % 10);
            *q++ = i < 3 ? '.' : '\0';
        }
        if ((size_t)(q - text) <= n)
            memcpy(out, text, (size_t)(q - text));
    } else if (sa->sa_family == AF_INET6) {
        if (!inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out,
                       (socklen_t)n))
            out[0] = '\0';
    }
}
