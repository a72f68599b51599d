/*
 * router.c - segment-by-segment matching of a path against the route table.
 * The table is small (tens of rows) and static, so a linear scan that touches
 * no memory allocator beats any cleverer structure.
 */
#include "router.h"

#include "../lib/xalloc.h"

#include <stdio.h>
#include <string.h>

/* Where a {param} value lies in the path. */
struct capture {
    const char *name, *value;
    size_t name_len, value_len;
};

/*
 * Match one pattern against a path. Returns true and records where the
 * {param} values are (up to max) when every segment matches; nothing is
 * allocated, so the many patterns that do not match cost no memory traffic.
 */
static bool match_pattern(const char *pat, const char *path, size_t pathlen, struct capture *caps,
                          size_t *ncaps, size_t max)
{
    const char *p = pat, *s = path, *end = path + pathlen;
    size_t n = 0;
    while (*p && s <= end) {
        const char *pseg_end = strchr(p + 1, '/');
        if (!pseg_end)
            pseg_end = p + strlen(p);
        size_t tl = (size_t)(pseg_end - p);
        /* "/{name*}", last: the rest of the path, slashes included, maybe empty */
        if (!*pseg_end && tl >= 5 && p[1] == '{' && p[tl - 2] == '*' && p[tl - 1] == '}') {
            if (n >= max || (s < end && *s != '/'))
                return false;
            const char *v = s < end ? s + 1 : end;
            caps[n++] = (struct capture){p + 2, v, tl - 4, (size_t)(end - v)};
            *ncaps = n;
            return true;
        }
        if (s == end)
            break;
        if (*p != '/' || *s != '/')
            return false;
        p++;
        s++;
        pseg_end = strchr(p, '/');
        if (!pseg_end)
            pseg_end = p + strlen(p);
        const char *sseg_end = memchr(s, '/', (size_t)(end - s));
        if (!sseg_end)
            sseg_end = end;
        size_t plen = (size_t)(pseg_end - p), slen = (size_t)(sseg_end - s);
        if (slen == 0)
            return false; /* empty segment: "//" */
        if (plen >= 2 && p[0] == '{' && p[plen - 1] == '}') {
            if (n >= max)
                return false;
            caps[n++] = (struct capture){p + 1, s, plen - 2, slen};
        } else if (plen != slen || memcmp(p, s, plen) != 0) {
            return false;
        }
        p = pseg_end;
        s = sseg_end;
    }
    if (*p || s != end)
        return false;
    *ncaps = n;
    return true;
}

enum route_match_result router_match(const struct route *table, size_t n, const char *method,
                                     const char *path, struct req *rq, const struct route **out,
                                     char *allow, size_t allowsz)
{
    size_t len = strlen(path);
    if (len > 1 && path[len - 1] == '/')
        len--;
    bool path_seen = false;
    size_t alen = 0;
    if (allow && allowsz)
        allow[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        struct capture caps[6];
        size_t ncaps = 0;
        if (!match_pattern(table[i].pattern, path, len, caps, &ncaps, 6))
            continue;
        /* HEAD is GET without the body (libmicrohttpd drops it) */
        if (strcmp(table[i].method, method) == 0 ||
            (strcmp(method, "HEAD") == 0 && strcmp(table[i].method, "GET") == 0)) {
            for (size_t k = 0; k < rq->nparams; k++) {
                free(rq->params[k].key);
                free(rq->params[k].value);
            }
            for (size_t k = 0; k < ncaps; k++) {
                rq->params[k].key = xstrndup(caps[k].name, caps[k].name_len);
                rq->params[k].value = xstrndup(caps[k].value, caps[k].value_len);
            }
            rq->nparams = ncaps;
            *out = &table[i];
            return ROUTE_FOUND;
        }
        path_seen = true;
        if (allow && allowsz && !strstr(allow, table[i].method)) {
            int w = snprintf(allow + alen, allowsz - alen, "%s%s", alen ? ", " : "",
                             table[i].method);
            if (w > 0 && (size_t)w < allowsz - alen)
                alen += (size_t)w;
            else
                allow[alen] = '\0'; /* no cut-off method names */
        }
    }
    return path_seen ? ROUTE_NO_METHOD : ROUTE_NO_PATH;
}

bool router_accepts_query(const struct route *r, const char *name)
{
    if (!r->query)
        return false;
    size_t nl = strlen(name);
    for (const char *p = r->query; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == nl && memcmp(p, name, nl) == 0)
            return true;
        if (!c)
            break;
        p = c + 1;
    }
    return false;
}

size_t router_index(const struct route *r)
{
    return (size_t)(r - routes);
}
