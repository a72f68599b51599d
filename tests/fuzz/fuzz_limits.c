/*
 * fuzz_limits.c - what aidcd reads of a request before any handler: the
 * %HH unescaping of paths and queries (lib/hex.c), the JSON shape check
 * on raw bodies (lib/jsonlimit.c), and the address lists and keys of the
 * per-client limits (server/ratelimit.c: AIDC_TRUSTED_PROXIES networks,
 * X-Forwarded-For walked from the right behind trusted proxies, IPv6 /64
 * keys), and the X-Request-Id a client may choose.
 *
 * Input: a selector byte, then text (lines: list, address; or trusted list,
 * X-Forwarded-For, peer). Checked beyond "no crash": unescaping
 * never lengthens and never yields a NUL; the shape check agrees with a plain
 * count of brackets and commas; a valid list never refuses its own entries.
 */
#include "fuzz.h"

#include "lib/hex.h"
#include "lib/jsonlimit.h"
#include "lib/netaddr.h"
#include "server/ratelimit.h"
#include "server/request.h"

#include <stdio.h>

static void unescape(const char *s)
{
    char *w = strdup(s);
    if (!w)
        abort();
    size_t before = strlen(w), after = hex_url_unescape(w);
    if (after > before || after != strlen(w))
        abort();
    free(w);
}

static void shape(const char *s, size_t n)
{
    int depth = (int)(n % 40) + 1;
    long values = (long)(n % 300) + 1;
    bool ok = jsonlimit_check(s, n, depth, values) == JSONLIMIT_OK;
    /* text without quotes: every bracket and comma is structure */
    if (!memchr(s, '"', n)) {
        long d = 0, maxd = 0, commas = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '[' || s[i] == '{')
                maxd = ++d > maxd ? d : maxd;
            else if (s[i] == ']' || s[i] == '}')
                d--;
            else if (s[i] == ',')
                commas++;
        }
        if (ok != (maxd <= depth && commas + 1 <= values))
            abort();
    }
}

static void addresses(char *s)
{
    char *fields[2];
    fuzz_split(s, '\n', fields, 2);
    char bad[80], key[RATELIMIT_KEY_LEN];
    if (netaddr_list_valid(fields[0], bad, sizeof bad)) {
        /* each entry that is a plain address is in its own list */
        char *copy = strdup(fields[0]);
        if (!copy)
            abort();
        for (char *tok = strtok(copy, ", "); tok; tok = strtok(NULL, ", "))
            if (!strchr(tok, '/') && !netaddr_in_list(fields[0], tok))
                abort();
        free(copy);
    } else if (!bad[0] && fields[0][0]) {
        abort(); /* a refusal names the entry */
    }
    (void)netaddr_in_list(fields[0], fields[1]);
    ratelimit_address_key(fields[1], key, sizeof key);
    if (strlen(key) >= sizeof key)
        abort();
}

/* trusted proxies, X-Forwarded-For, the peer: the client is the peer or one of the list's */
/* an X-Request-Id taken as the request's id fits it and holds no separator or control */
static void request_id(const char *s)
{
    if (!req_id_acceptable(s))
        return;
    size_t n = strlen(s);
    if (n == 0 || n > 64 || strpbrk(s, " \t\r\n\"'\\/,;=$`&|<>()"))
        abort();
}

static void forwarded(char *s)
{
    char *fields[3];
    fuzz_split(s, '\n', fields, 3);
    char ip[64], peer[64];
    snprintf(peer, sizeof peer, "%s", fields[2]);
    memcpy(ip, peer, sizeof ip);
    ratelimit_forwarded_client(fields[0], fields[1], ip, sizeof ip);
    if (strnlen(ip, sizeof ip) == sizeof ip)
        abort();
    if (strcmp(ip, peer) != 0) { /* replaced: by an address taken from the header */
        char key[RATELIMIT_KEY_LEN];
        ratelimit_address_key(ip, key, sizeof key);
        if (!strstr(fields[1], ip) || strchr(ip, ',') || strchr(ip, ' ') || !key[0])
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *s = fuzz_str(data + 1, size - 1);
    switch (data[0] % 4) {
    case 0:
        unescape(s);
        break;
    case 1:
        shape((const char *)data + 1, size - 1);
        break;
    case 2:
        addresses(s);
        break;
    default:
        request_id(s);
        forwarded(s);
        break;
    }
    free(s);
    return 0;
}
