/* backend.c - what the backends share (backend_find, the table of kinds, is in kinds.c). */
#include "backend.h"

#include "../lib/redact.h"
#include "../lib/err.h"
#include "../lib/fsat.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool backend_node_name_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 253 || !isalnum((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

void backend_call_free(struct backend_call *call)
{
    if (!call)
        return;
    json_decref(call->request);
    json_decref(call->lookup);
    memset(call, 0, sizeof *call);
}

/* A JSON string of n bytes of s, whatever bytes it holds (new reference). */
static json_t *text(const char *s, size_t n)
{
    char *copy = xstrndup(s, n);
    struct sbuf b = SBUF_INIT;
    sbuf_utf8(&b, copy);
    json_t *j = json_string(sbuf_str(&b));
    sbuf_free(&b);
    free(copy);
    return j;
}

/*
 * url with the password of its user info ("http://u:pw@host") and the
 * values of query arguments naming a secret ("?token=...") redacted.
 */
static json_t *url_redacted(const char *url)
{
    struct sbuf b = SBUF_INIT;
    const char *p = url, *scheme = strstr(url, "://");
    if (scheme) {
        const char *host = scheme + 3, *end = host + strcspn(host, "/?#");
        const char *at = memchr(host, '@', (size_t)(end - host));
        const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
        sbuf_append(&b, url, (size_t)(host - url));
        if (colon) {
            sbuf_append(&b, host, (size_t)(colon - host));
            sbuf_puts(&b, ":[redacted]");
            host = at;
        }
        sbuf_append(&b, host, (size_t)(end - host));
        p = end;
    }
    const char *q = strchr(p, '?');
    sbuf_append(&b, p, q ? (size_t)(q - p) : strlen(p));
    while (q && *q && *q != '#') {
        sbuf_putc(&b, *q++); /* '?' or '&' */
        size_t arg = strcspn(q, "&#"), name = strcspn(q, "=&#");
        char *key = xstrndup(q, name);
        bool secret = name < arg && redact_key_is_secret(key);
        free(key);
        sbuf_append(&b, q, secret ? name + 1 : arg);
        if (secret)
            sbuf_puts(&b, "[redacted]");
        q += arg;
    }
    if (q && *q == '#')
        sbuf_puts(&b, q);
    json_t *j = text(sbuf_str(&b), b.len);
    sbuf_free(&b);
    return j;
}

json_t *backend_call_http(const char *method, const char *url, const char *const *headers,
                          size_t nheaders, const json_t *body)
{
    json_t *h = json_object();
    for (size_t i = 0; i < nheaders; i++) {
        const char *colon = strchr(headers[i], ':');
        if (!colon)
            continue;
        char *name = xstrndup(headers[i], (size_t)(colon - headers[i]));
        const char *value = colon + 1 + strspn(colon + 1, " \t");
        /* the one place a token is in the clear: it never enters the record */
        json_object_set_new(h, name,
                            redact_key_is_secret(name) ? json_string("[redacted]")
                                                      : text(value, strlen(value)));
        free(name);
    }
    json_t *r = json_object();
    json_object_set_new(r, "method", json_string(method));
    json_object_set_new(r, "url", url_redacted(url));
    json_object_set_new(r, "headers", h);
    json_object_set_new(r, "body", body ? json_deep_copy(body) : json_null());
    return r;
}

void backend_call_hide_env(json_t *env, const json_t *job_env)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)job_env, k, v) {
        if (json_object_get(env, k))
            json_object_set_new(env, k, json_string("[redacted]"));
    }
}

int backend_tail_file(const char *dir, const char *name, int tail, char **text, size_t *textlen)
{
    int dfd = fsat_opendir(dir);
    int fd = dfd >= 0 ? fsat_open_regular(dfd, name) : -1;
    if (dfd >= 0)
        close(dfd);
    if (fd < 0)
        return AIDC_ENOTFOUND;
    /* read backwards in blocks until tail lines are found */
    off_t end = lseek(fd, 0, SEEK_END), pos = end;
    size_t len = 0;
    char *buf = NULL;
    int lines = 0;
    /* at most 16 MiB of a log per answer */
    while (pos > 0 && lines <= tail && len < (size_t)16 << 20) {
        size_t chunk = pos > 65536 ? 65536 : (size_t)pos;
        char *more = xmalloc(len + chunk);
        if (pread(fd, more, chunk, pos - (off_t)chunk) != (ssize_t)chunk) {
            free(more);
            break;
        }
        pos -= (off_t)chunk;
        for (size_t i = 0; i < chunk; i++)
            lines += more[i] == '\n';
        if (len)
            memcpy(more + chunk, buf, len);
        free(buf);
        buf = more;
        len += chunk;
    }
    close(fd);
    /* skip whole lines beyond the last `tail` (a final line without \n counts) */
    size_t start = 0;
    int total = 0;
    for (size_t i = 0; i < len; i++)
        total += buf[i] == '\n';
    if (len && buf[len - 1] != '\n')
        total++;
    for (size_t i = 0; i < len && total > tail; i++) {
        if (buf[i] == '\n') {
            total--;
            start = i + 1;
        }
    }
    *text = xmalloc(len - start + 1);
    if (len > start)
        memcpy(*text, buf + start, len - start);
    (*text)[len - start] = '\0';
    *textlen = len - start;
    free(buf);
    return 0;
}


void backend_resource_add(struct backend_resource *out, size_t max, int *n, const char *name,
                          long long amount)
{
    if (amount < 0)
        amount = 0;
    for (int i = 0; i < *n; i++)
        if (strcmp(out[i].name, name) == 0) {
            out[i].total = amount > LLONG_MAX - out[i].total ? LLONG_MAX : out[i].total + amount;
            return;
        }
    if ((size_t)*n == max)
        return;
    snprintf(out[*n].name, sizeof out[*n].name, "%s", name);
    out[(*n)++].total = amount;
}
