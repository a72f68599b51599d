/* urlguard.c - the server-side request forgery guard (see urlguard.h). */
#include "urlguard.h"

#include "err.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* An IPv4 address (host order) against a network. */
static bool in4(uint32_t a, uint32_t net, int bits)
{
    uint32_t mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
    return (a & mask) == (net & mask);
}

/* Whether an IPv4 address (host order) is public; loopback is allowed when asked. */
static bool v4_allowed(uint32_t a, bool allow_loopback)
{
    if (in4(a, 0x7f000000u, 8))
        return allow_loopback;
    static const struct {
        uint32_t net;
        int bits;
    } refused[] = {
        {0x00000000u, 8},  {0x0a000000u, 8},  {0x64400000u, 10}, {0xa9fe0000u, 16},
        {0xac100000u, 12}, {0xc0000000u, 24}, {0xc0000200u, 24}, {0xc0a80000u, 16},
        {0xc6120000u, 15}, {0xc6336400u, 24}, {0xcb007100u, 24}, {0xe0000000u, 4},
        {0xf0000000u, 4},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (in4(a, refused[i].net, refused[i].bits))
            return false;
    return true;
}

static uint32_t v4_at(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

static bool v6_allowed(const struct in6_addr *a, bool allow_loopback)
{
    const unsigned char *b = a->s6_addr;
    static const unsigned char nat64[12] = {0x00, 0x64, 0xff, 0x9b};
    if (IN6_IS_ADDR_LOOPBACK(a))
        return allow_loopback;
    if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a) || memcmp(b, nat64, 12) == 0)
        return !IN6_IS_ADDR_UNSPECIFIED(a) && v4_allowed(v4_at(b + 12), allow_loopback);
    if (IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_SITELOCAL(a) ||
        IN6_IS_ADDR_MULTICAST(a))
        return false;
    if ((b[0] & 0xfe) == 0xfc) /* fc00::/7 unique local */
        return false;
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) /* 2001:db8::/32 */
        return false;
    return true;
}

bool urlguard_addr_allowed(const struct sockaddr *sa, bool allow_loopback)
{
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in s4;
        memcpy(&s4, sa, sizeof s4);
        return v4_allowed(ntohl(s4.sin_addr.s_addr), allow_loopback);
    }
    if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 s6;
        memcpy(&s6, sa, sizeof s6);
        return v6_allowed(&s6.sin6_addr, allow_loopback);
    }
    return false;
}

static bool is_loopback_literal(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return in4(ntohl(a4.s_addr), 0x7f000000u, 8);
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* Classify a literal host; whether it is one (*ok: allowed). */
static bool literal(const char *host, bool allow_loopback, bool *ok)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1) {
        *ok = v4_allowed(ntohl(a4.s_addr), allow_loopback);
        return true;
    }
    if (inet_pton(AF_INET6, host, &a6) == 1) {
        *ok = v6_allowed(&a6, allow_loopback);
        return true;
    }
    return false;
}

static int fail(char *why, size_t whyn, const char *msg)
{
    snprintf(why, whyn, "%s", msg);
    return AIDC_EINVAL;
}

static int parts(CURLU *u, struct urlguard_target *t, char *why, size_t whyn)
{
    char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
    int e = 0;
    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
        e = fail(why, whyn, "is no absolute URL with a host");
    else if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK)
        e = fail(why, whyn, "must not carry a user name or password");
    else if (strcasecmp(scheme, "https") != 0 && strcasecmp(scheme, "http") != 0)
        e = fail(why, whyn, "must be an https URL");
    if (!e) {
        size_t hl = strlen(host);
        const char *h = host;
        if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
            h = host + 1;
            hl -= 2;
        }
        if (hl == 0 || hl >= sizeof t->host || strlen(port) >= sizeof t->port)
            e = fail(why, whyn, "has no usable host");
        else {
            memcpy(t->host, h, hl);
            t->host[hl] = '\0';
            snprintf(t->port, sizeof t->port, "%s", port);
            t->https = strcasecmp(scheme, "https") == 0;
        }
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(user);
    return e;
}

int urlguard_check(const char *url, bool allow_loopback, struct urlguard_target *t, char *why,
                   size_t whyn)
{
    memset(t, 0, sizeof *t);
    if (strlen(url) > URLGUARD_MAX_URL)
        return fail(why, whyn, "is longer than 2048 characters");
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f)
            return fail(why, whyn, "contains a space or a control character");
    CURLU *u = curl_url();
    if (!u)
        return AIDC_EINTERNAL;
    int e = curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK
                ? parts(u, t, why, whyn)
                : fail(why, whyn, "is no valid URL");
    curl_url_cleanup(u);
    if (e)
        return e;
    bool ok = true;
    t->literal = literal(t->host, allow_loopback, &ok);
    if (t->literal && !ok)
        return fail(why, whyn, "points at a loopback, private or link-local address");
    if (!t->https && !(allow_loopback && (!t->literal || is_loopback_literal(t->host))))
        return fail(why, whyn, "must be an https URL");
    return 0;
}

int urlguard_resolve(const struct urlguard_target *t, bool allow_loopback, char *pin, size_t pinn,
                     char *why, size_t whyn)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(t->host, t->port, &hints, &res) != 0 || !res) {
        snprintf(why, whyn, "host %s does not resolve", t->host);
        return AIDC_EUNAVAIL;
    }
    char chosen[INET6_ADDRSTRLEN + 2] = "";
    int e = 0;
    for (struct addrinfo *a = res; a && !e; a = a->ai_next) {
        char ip[INET6_ADDRSTRLEN] = "";
        const void *src =
            a->ai_family == AF_INET
                ? (const void *)&((const struct sockaddr_in *)(const void *)a->ai_addr)->sin_addr
                : (const void *)&((const struct sockaddr_in6 *)(const void *)a->ai_addr)->sin6_addr;
        if (!inet_ntop(a->ai_family, src, ip, sizeof ip))
            continue;
        bool ok = urlguard_addr_allowed(a->ai_addr, allow_loopback);
        /* plain http reaches the loopback only */
        if (ok && !t->https && !is_loopback_literal(ip))
            ok = false;
        if (!ok) {
            snprintf(why, whyn, "host %s resolves to %s, which is not a public address", t->host,
                     ip);
            e = AIDC_EFORBIDDEN;
        } else if (!chosen[0])
            snprintf(chosen, sizeof chosen, a->ai_family == AF_INET6 ? "[%s]" : "%s", ip);
    }
    freeaddrinfo(res);
    if (e)
        return e;
    int n = snprintf(pin, pinn, "%s:%s:%s", t->host, t->port, chosen);
    if (!chosen[0] || n < 0 || (size_t)n >= pinn) {
        snprintf(why, whyn, "host %s has no usable address", t->host);
        return AIDC_EFORBIDDEN;
    }
    return 0;
}
