/* prometheus.c - instant queries to Prometheus (see prometheus.h). */
#include "prometheus.h"

#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "httpcall.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URL_MAX    1000
#define ANSWER_MAX (1L << 20) /* one vector of a few series: far less */

static bool url_ok(const char *u)
{
    size_t n = strlen(u);
    if (n > URL_MAX || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0))
        return false;
    for (size_t i = 0; i < n; i++) /* no spaces or controls to smuggle into the request line */
        if ((unsigned char)u[i] <= ' ' || u[i] == 0x7f || u[i] == '?' || u[i] == '#')
            return false;
    const char *host = strstr(u, "://") + 3;
    return host[0] != '\0' && host[0] != '/';
}

static bool label_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return false;
    return true;
}

bool prometheus_metrics_check(const json_t *m, char *err, size_t errsz)
{
    if (!json_is_object(m)) {
        snprintf(err, errsz, "metrics must be an object");
        return false;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)m, key, v)
    {
        if (strcmp(key, "prometheus_url") == 0) {
            if (!json_is_string(v) || !url_ok(json_string_value(v))) {
                snprintf(err, errsz,
                         "metrics.prometheus_url must be an http(s) URL of at most "
                         "%d characters without query or fragment",
                         URL_MAX);
                return false;
            }
        } else if (strcmp(key, "job_label") == 0) {
            if (!json_is_string(v) || !label_ok(json_string_value(v))) {
                snprintf(err, errsz, "metrics.job_label must be a Prometheus label name");
                return false;
            }
        } else {
            snprintf(err, errsz, "metrics.%.60s is not a known setting", key);
            return false;
        }
    }
    if (!json_is_string(json_object_get(m, "prometheus_url"))) {
        snprintf(err, errsz, "metrics.prometheus_url is required");
        return false;
    }
    return true;
}

/* Append s as the inside of a PromQL double-quoted string; regex: escape its metacharacters. */
static bool quote(struct sbuf *b, const char *s, bool regex)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < ' ' || c == 0x7f)
            return false;
        if (regex && strchr(".+*?()[]{}|^$\\", c))
            sbuf_append(b, "\\\\", 2); /* a backslash in the string, escaping c in the regex */
        else if (c == '"' || c == '\\')
            sbuf_append(b, "\\", 1);
        sbuf_append(b, s, 1);
    }
    return true;
}

int prometheus_job_selector(char *out, size_t outsz, const char *kind, const char *label,
                            const char *backend_id, const char *ns)
{
    struct sbuf b = SBUF_INIT;
    bool ok = backend_id[0] != '\0' && label_ok(label);
    if (ok && strcmp(kind, "kubernetes") == 0) {
        /* the Kubernetes backend's ids are "<namespace>/<Job name>"; its pods "<name>-<suffix>" */
        const char *slash = strchr(backend_id, '/');
        char nsbuf[256] = "";
        if (slash && (size_t)(slash - backend_id) < sizeof nsbuf) {
            memcpy(nsbuf, backend_id, (size_t)(slash - backend_id));
            nsbuf[slash - backend_id] = '\0';
            ns = nsbuf;
            backend_id = slash + 1;
        }
        sbuf_printf(&b, "{");
        if (ns[0]) {
            sbuf_printf(&b, "namespace=\"");
            ok = quote(&b, ns, false);
            sbuf_printf(&b, "\",");
        }
        sbuf_printf(&b, "pod=~\"");
        ok = ok && backend_id[0] && quote(&b, backend_id, true);
        sbuf_printf(&b, "-.*\"}");
    } else if (ok) {
        sbuf_printf(&b, "{%s=\"", label);
        ok = quote(&b, backend_id, false);
        sbuf_printf(&b, "\"}");
    }
    const char *s = sbuf_str(&b);
    int rc = ok && strlen(s) < outsz ? 0 : -1;
    if (!rc)
        memcpy(out, s, strlen(s) + 1);
    sbuf_free(&b);
    return rc;
}

/* Percent-encode s for a query string (RFC 3986 unreserved left as they are). */
static void encode(struct sbuf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
            sbuf_append(b, s, 1);
        else
            sbuf_printf(b, "%%%02X", c);
    }
}

/* The first sample of a vector answer. */
static int parse(const json_t *doc, double *value, bool *found)
{
    const json_t *data = json_object_get(doc, "data");
    const char *status = json_string_value(json_object_get(doc, "status"));
    const char *type = json_string_value(json_object_get(data, "resultType"));
    const json_t *result = json_object_get(data, "result");
    if (!status || strcmp(status, "success") != 0 || !type || strcmp(type, "vector") != 0 ||
        !json_is_array(result))
        return -1;
    *found = json_array_size(result) > 0;
    if (!*found)
        return 0;
    const json_t *sample = json_object_get(json_array_get(result, 0), "value");
    const char *num = json_string_value(json_array_get(sample, 1));
    if (!num)
        return -1;
    char *end;
    double v = strtod(num, &end);
    if (*end != '\0' || !isfinite(v)) { /* NaN: a series with no samples counts as none */
        *found = false;
        return 0;
    }
    *value = v;
    return 0;
}

int prometheus_scalar(const char *base_url, const char *promql, long long at, double *value,
                      bool *found, char *err, size_t errsz)
{
    *found = false;
    if (!url_ok(base_url)) {
        snprintf(err, errsz, "metrics.prometheus_url is not an http(s) URL");
        return AIDC_EUNAVAIL;
    }
    struct sbuf url = SBUF_INIT;
    size_t n = strlen(base_url);
    sbuf_printf(&url, "%.*s/api/v1/query?query=", (int)(n && base_url[n - 1] == '/' ? n - 1 : n),
                base_url);
    encode(&url, promql);
    sbuf_printf(&url, "&time=%lld", at);
    static const char *const hdr[] = {"Accept: application/json"};
    struct httpcall c = {.method = "GET",
                         .url = sbuf_str(&url),
                         .headers = hdr,
                         .nheaders = 1,
                         .connect_timeout_s = 3,
                         .timeout_s = 10,
                         .max_answer = ANSWER_MAX};
    struct httpcall_answer a;
    int e = httpcall_do(&c, &a, err, errsz);
    if (!e && a.status != 200) {
        snprintf(err, errsz, "Prometheus at %.200s answered %ld", base_url, a.status);
        e = AIDC_EUNAVAIL;
    } else if (!e && (!a.json || parse(a.json, value, found) != 0)) {
        snprintf(err, errsz, "Prometheus at %.200s sent no vector", base_url);
        e = AIDC_EUNAVAIL;
    }
    httpcall_answer_free(&a);
    sbuf_free(&url);
    return e;
}
