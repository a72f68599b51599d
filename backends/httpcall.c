/* httpcall.c - HTTP requests of the backends (see httpcall.h). */
#include "httpcall.h"

#include "../lib/curlglobal.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The pool: idle curl handles keep their connections open between calls
 * (one per worker thread at a time is the usual load). The only process
 * state of this module besides libcurl's global init.
 */
#define POOL_MAX 8

static struct {
    pthread_mutex_t lock;
    CURL *idle[POOL_MAX];
    size_t nidle;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static CURL *handle_get(void)
{
    CURL *h = NULL;
    pthread_mutex_lock(&pool.lock);
    if (pool.nidle)
        h = pool.idle[--pool.nidle];
    pthread_mutex_unlock(&pool.lock);
    if (h) {
        curl_easy_reset(h); /* options go, connections and DNS cache stay */
        return h;
    }
    return curlglobal_init() ? curl_easy_init() : NULL;
}

static void handle_put(CURL *h)
{
    pthread_mutex_lock(&pool.lock);
    if (pool.nidle < POOL_MAX) {
        pool.idle[pool.nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&pool.lock);
    if (h)
        curl_easy_cleanup(h);
}

struct sink {
    char *buf;
    size_t len, cap, max;
    bool too_big;
};

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    struct sink *s = arg;
    size_t n = size * nmemb;
    if (s->len + n + 1 > s->max) {
        s->too_big = true;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 16384;
        while (cap < s->len + n + 1)
            cap *= 2;
        s->buf = xrealloc(s->buf, cap);
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    s->buf[s->len] = '\0';
    return n;
}

/* A streamed answer: each piece to the caller's callback, with the status. */
struct stream {
    CURL *h;
    httpcall_chunk_fn chunk;
    void *arg;
    bool stopped;
};

static size_t on_stream(char *data, size_t size, size_t nmemb, void *arg)
{
    struct stream *s = arg;
    size_t n = size * nmemb;
    long status = 0;
    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
    if (!s->chunk(s->arg, status, data, n)) {
        s->stopped = true;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    return n;
}

static CURLcode setup(CURL *h, const struct httpcall *c, struct curl_slist *hdr,
                      curl_write_callback write, void *sink)
{
    CURLcode rc = curl_easy_setopt(h, CURLOPT_URL, c->url);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
    if (!rc && c->body)
        rc = curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
    if (!rc && c->ca_file && c->ca_file[0])
        rc = curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)c->connect_timeout_s);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)c->timeout_s);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM */
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
    return rc;
}

/* The request made with write(sink) taking the body; 0, or an aidc_err with err. */
static int perform(CURL *h, const struct httpcall *c, curl_write_callback write, void *sink,
                   const char *too_big, bool *stopped, char *err, size_t errsz)
{
    struct curl_slist *hdr = NULL, *tmp;
    bool ok = true;
    for (size_t i = 0; ok && i < c->nheaders; i++) {
        tmp = curl_slist_append(hdr, c->headers[i]);
        ok = tmp != NULL;
        if (tmp)
            hdr = tmp;
    }
    CURLcode rc = ok ? setup(h, c, hdr, write, sink) : CURLE_OUT_OF_MEMORY;
    if (ok && !rc)
        rc = curl_easy_perform(h);
    int e = 0;
    if (!ok) {
        snprintf(err, errsz, "out of memory building a request");
        e = AIDC_EINTERNAL;
    } else if (rc != CURLE_OK) {
        bool tls = rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                   rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_SSL_CERTPROBLEM;
        snprintf(err, errsz, "%s %s: %s%s", c->method, c->url,
                 *stopped ? too_big : curl_easy_strerror(rc),
                 tls ? " (TLS: check the cluster's CA bundle, options.ca_file)" : "");
        e = AIDC_EUNAVAIL;
    }
    curl_slist_free_all(hdr);
    /* credentials in headers must not linger in the handle kept for reuse */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    return e;
}

int httpcall_do(const struct httpcall *c, struct httpcall_answer *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof *out);
    CURL *h = handle_get();
    if (!h) {
        snprintf(err, errsz, "libcurl could not start");
        return AIDC_EINTERNAL;
    }
    struct sink sink = {.max = (size_t)c->max_answer};
    int e = perform(h, c, on_data, &sink, "the answer is too large", &sink.too_big, err, errsz);
    if (!e) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
        out->body = sink.buf ? sink.buf : xstrdup("");
        out->len = sink.len;
        sink.buf = NULL;
        out->json = json_loadb(out->body, out->len, 0, NULL);
    }
    free(sink.buf);
    handle_put(h);
    return e;
}

int httpcall_stream(const struct httpcall *c, httpcall_chunk_fn chunk, void *arg, long *status,
                    char *err, size_t errsz)
{
    *status = 0;
    CURL *h = handle_get();
    if (!h) {
        snprintf(err, errsz, "libcurl could not start");
        return AIDC_EINTERNAL;
    }
    struct stream st = {.h = h, .chunk = chunk, .arg = arg};
    int e =
        perform(h, c, on_stream, &st, "the answer was refused as it came", &st.stopped, err, errsz);
    if (!e)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    handle_put(h);
    return e;
}

void httpcall_answer_free(struct httpcall_answer *a)
{
    free(a->body);
    json_decref(a->json);
    memset(a, 0, sizeof *a);
}
