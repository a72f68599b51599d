/* slurmrest.c - the slurmrestd client (see slurmrest.h). */
#include "slurmrest.h"

#include "../lib/credref.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "backend.h"
#include "httpcall.h"
#include "jsonsplit.h"

#include <jwt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPIRY_WARN_SECONDS (24L * 3600)

/* The only process state of this module: when a token near its expiry was last warned about. */
static struct {
    pthread_mutex_t lock;
    time_t warned_at;
} warn = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- tokens ------------------------------------------------------------------------- */

/* "eyJ...": three base64url parts, the first a JSON header */
static bool looks_like_jwt(const unsigned char *s, size_t len)
{
    if (len < 10 || memcmp(s, "eyJ", 3) != 0)
        return false;
    int dots = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        if (c == '.')
            dots++;
        else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_'))
            return false;
    }
    return dots == 2;
}

/* exp of a JWT we cannot verify (Slurm's own): 0 when absent or unreadable */
static time_t jwt_exp_unverified(const char *tok)
{
    const char *p = strchr(tok, '.'), *q = p ? strchr(p + 1, '.') : NULL;
    if (!q || q - p - 1 > 4096)
        return 0;
    unsigned char buf[4096];
    long n = crypto_b64url_decode(p + 1, (size_t)(q - p - 1), buf, sizeof buf - 1);
    if (n < 0)
        return 0;
    json_t *claims = json_loadb((const char *)buf, (size_t)n, 0, NULL);
    json_t *exp = json_object_get(claims, "exp");
    time_t t = json_is_integer(exp) ? (time_t)json_integer_value(exp) : 0;
    json_decref(claims);
    return t;
}

int slurmrest_token(const unsigned char *secret, size_t len, const char *user, time_t now,
                    char *out, size_t n, time_t *expires, char *err, size_t errsz)
{
    out[0] = '\0';
    *expires = 0;
    size_t tl = len;
    while (tl && (secret[tl - 1] == '\n' || secret[tl - 1] == '\r' || secret[tl - 1] == ' '))
        tl--;
    if (looks_like_jwt(secret, tl)) {
        if (tl >= n) {
            snprintf(err, errsz, "the Slurm token is longer than %zu bytes", n - 1);
            return AIDC_ETOOBIG;
        }
        memcpy(out, secret, tl);
        out[tl] = '\0';
        *expires = jwt_exp_unverified(out);
        return 0;
    }
    if (len < 16) {
        snprintf(err, errsz, "the Slurm credential is neither a JWT nor a key of 16 bytes or more");
        return AIDC_EINVAL;
    }
    jwt_t *j = NULL;
    char *tok = NULL;
    int rc = jwt_new(&j);
    if (rc == 0)
        rc = jwt_set_alg(j, JWT_ALG_HS256, secret, (int)len);
    if (rc == 0)
        rc = jwt_add_grant(j, "sun", user);
    if (rc == 0)
        rc = jwt_add_grant_int(j, "iat", (long)now);
    if (rc == 0)
        rc = jwt_add_grant_int(j, "exp", (long)now + SLURMREST_TOKEN_TTL);
    if (rc == 0)
        tok = jwt_encode_str(j);
    jwt_free(j);
    if (!tok || strlen(tok) >= n) {
        free(tok);
        snprintf(err, errsz, "cannot make a Slurm token (libjwt: %d)", rc);
        return AIDC_EINTERNAL;
    }
    snprintf(out, n, "%s", tok);
    free(tok);
    *expires = now + SLURMREST_TOKEN_TTL;
    return 0;
}

static int target_token(const struct slurmrest_target *t, char *out, size_t n, char *err,
                        size_t errsz)
{
    unsigned char *secret = xmalloc(CREDREF_MAX + 1);
    size_t len = 0;
    time_t now = time(NULL), expires = 0;
    int e = credref_read(t->credref, secret, CREDREF_MAX + 1, &len, err, errsz);
    if (!e)
        e = slurmrest_token(secret, len, t->user, now, out, n, &expires, err, errsz);
    /* a token given as the secret may expire; one minted from a key is always fresh */
    bool fixed = !e && strlen(out) <= len && crypto_equal(out, secret, strlen(out));
    memset(secret, 0, CREDREF_MAX + 1);
    free(secret);
    if (e || !expires || !fixed)
        return e;
    if (expires <= now) {
        snprintf(err, errsz, "the Slurm token of %s expired %ld s ago: issue a new one", t->credref,
                 (long)(now - expires));
        return AIDC_EFORBIDDEN;
    }
    if (expires - now < EXPIRY_WARN_SECONDS) {
        bool say = false;
        pthread_mutex_lock(&warn.lock);
        if (now - warn.warned_at >= 3600) {
            warn.warned_at = now;
            say = true;
        }
        pthread_mutex_unlock(&warn.lock);
        if (say)
            log_warn("the Slurm token of %s expires in %ld minutes: issue a new one (or use "
                     "jwt_hs256.key, and aidcd makes its own)",
                     t->credref, (long)(expires - now) / 60);
    }
    return 0;
}

/* ---- calls -------------------------------------------------------------------------- */

int slurmrest_call(const struct slurmrest_target *t, const char *method, const char *path,
                   const json_t *body, struct slurmrest_answer *out, char *err, size_t errsz)
{
    return slurmrest_call_record(t, method, path, body, out, NULL, err, errsz);
}

/* The URL and the two auth header lines of a call (the caller frees them; the token wiped). */
struct request {
    char *url, *user_h, *token_h;
};

static int request_make(const struct slurmrest_target *t, const char *path, struct request *r,
                        char *err, size_t errsz)
{
    memset(r, 0, sizeof *r);
    char token[4096];
    int e = target_token(t, token, sizeof token, err, errsz);
    if (e)
        return e;
    size_t el = strlen(t->endpoint);
    r->url = xasprintf("%.*s/slurm/%s/%s", (int)(el && t->endpoint[el - 1] == '/' ? el - 1 : el),
                       t->endpoint, t->api_version, path);
    r->user_h = xasprintf("X-SLURM-USER-NAME: %s", t->user);
    r->token_h = xasprintf("X-SLURM-USER-TOKEN: %s", token);
    memset(token, 0, sizeof token);
    return 0;
}

static void request_free(struct request *r)
{
    if (r->token_h)
        memset(r->token_h, 0, strlen(r->token_h));
    free(r->token_h);
    free(r->user_h);
    free(r->url);
}

static int timeout_of(const struct slurmrest_target *t)
{
    return t->timeout_seconds > 0 ? t->timeout_seconds : SLURMREST_TIMEOUT;
}

int slurmrest_call_record(const struct slurmrest_target *t, const char *method, const char *path,
                          const json_t *body, struct slurmrest_answer *out, json_t **sent,
                          char *err, size_t errsz)
{
    memset(out, 0, sizeof *out);
    if (sent)
        *sent = NULL;
    struct request r;
    int e = request_make(t, path, &r, err, errsz);
    if (e)
        return e;
    char *json = body ? json_dumps(body, JSON_COMPACT) : NULL;
    /* slurmrestd refuses a body without this type (400 "Unable to parse query") */
    const char *lines[] = {"Content-Type: application/json", "Accept: application/json", r.user_h,
                           r.token_h};
    if (body && !json) {
        snprintf(err, errsz, "out of memory building a request");
        e = AIDC_EINTERNAL;
    } else {
        int to = timeout_of(t);
        struct httpcall c = {.method = method,
                             .url = r.url,
                             .headers = lines,
                             .nheaders = sizeof lines / sizeof lines[0],
                             .body = json,
                             .connect_timeout_s =
                                 to < SLURMREST_CONNECT_TIMEOUT ? to : SLURMREST_CONNECT_TIMEOUT,
                             .timeout_s = to,
                             .max_answer = SLURMREST_MAX_ANSWER};
        /* before it goes: a call that times out was made all the same */
        if (sent)
            *sent = backend_call_http(method, r.url, lines, sizeof lines / sizeof lines[0], body);
        struct httpcall_answer a;
        e = httpcall_do(&c, &a, err, errsz);
        if (!e) {
            out->status = a.status;
            out->body = a.body;
            out->len = a.len;
            out->json = a.json;
        }
    }
    if (json)
        memset(json, 0, strlen(json));
    free(json);
    request_free(&r);
    return e;
}

/* ---- lists, split as they arrive ------------------------------------------------------ */

/* What a listing keeps: one element at a time, the "errors", the start of any other answer. */
struct listing {
    struct jsonsplit split;
    bool (*each)(void *arg, json_t *element);
    void *arg;
    json_t *errors;
    char *other; /* a non-200 answer's first SLURMREST_LIST_ERROR_MAX bytes */
    size_t other_len;
    char why[128];
};

#define SLURMREST_LIST_ERROR_MAX 65536

static bool on_element(void *arg, const char *text, size_t len)
{
    struct listing *l = arg;
    json_error_t je;
    json_t *el = json_loadb(text, len, 0, &je);
    if (!el) {
        snprintf(l->why, sizeof l->why, "an element that is not JSON (%.80s)", je.text);
        return false;
    }
    bool go = l->each(l->arg, el);
    json_decref(el);
    return go;
}

static bool on_member(void *arg, const char *key, const char *text, size_t len)
{
    struct listing *l = arg;
    if (strcmp(key, "errors") != 0 || l->errors)
        return true; /* meta, warnings: not needed */
    l->errors = json_loadb(text, len, 0, NULL);
    if (!l->errors)
        snprintf(l->why, sizeof l->why, "its \"errors\" are not JSON");
    return l->errors != NULL;
}

static bool on_chunk(void *arg, long status, const char *data, size_t len)
{
    struct listing *l = arg;
    if (status == 200)
        return jsonsplit_feed(&l->split, data, len);
    size_t room = SLURMREST_LIST_ERROR_MAX - l->other_len;
    size_t n = len < room ? len : room;
    if (n) {
        memcpy(l->other + l->other_len, data, n);
        l->other_len += n;
        l->other[l->other_len] = '\0';
    }
    return true;
}

int slurmrest_list(const struct slurmrest_target *t, const char *path, const char *key,
                   bool (*each)(void *arg, json_t *element), void *arg, long *status, char *err,
                   size_t errsz)
{
    *status = 0;
    err[0] = '\0';
    struct request r;
    int e = request_make(t, path, &r, err, errsz);
    if (e)
        return e;
    const char *lines[] = {"Accept: application/json", r.user_h, r.token_h};
    int to = timeout_of(t);
    struct httpcall c = {.method = "GET",
                         .url = r.url,
                         .headers = lines,
                         .nheaders = sizeof lines / sizeof lines[0],
                         .connect_timeout_s =
                             to < SLURMREST_CONNECT_TIMEOUT ? to : SLURMREST_CONNECT_TIMEOUT,
                         .timeout_s = to * SLURMREST_LIST_TIMEOUT_FACTOR};
    struct listing l = {.split = {.array_key = key,
                                  .max_value = SLURMREST_LIST_VALUE_MAX,
                                  .on_element = on_element,
                                  .on_member = on_member},
                        .each = each,
                        .arg = arg,
                        .other = xmalloc(SLURMREST_LIST_ERROR_MAX + 1)};
    l.split.arg = &l;
    l.other[0] = '\0';
    jsonsplit_init(&l.split);
    e = httpcall_stream(&c, on_chunk, &l, status, err, errsz);
    if (e && l.split.failed)
        snprintf(err, errsz, "GET %s: %s", path, l.why[0] ? l.why : l.split.why);
    if (!e && *status == 200 && !jsonsplit_finish(&l.split)) {
        snprintf(err, errsz, "GET %s: %s", path, l.split.why);
        e = AIDC_EUNAVAIL;
    }
    /* an answer that says it failed, whole or not: the caller concludes nothing from it */
    if (!e && *status != 304) {
        json_t *j = *status == 200 ? json_object() : json_loadb(l.other, l.other_len, 0, NULL);
        if (*status == 200 && l.errors && json_object_set(j, "errors", l.errors) != 0)
            snprintf(err, errsz, "out of memory reading GET %s", path);
        struct slurmrest_answer a = {
            .status = *status, .body = l.other, .len = l.other_len, .json = j};
        if (!slurmrest_ok(&a, err, errsz))
            e = AIDC_EUNAVAIL;
        json_decref(j);
    }
    json_decref(l.errors);
    jsonsplit_free(&l.split);
    free(l.other);
    request_free(&r);
    return e;
}

void slurmrest_answer_free(struct slurmrest_answer *a)
{
    free(a->body);
    json_decref(a->json);
    memset(a, 0, sizeof *a);
}

bool slurmrest_ok(const struct slurmrest_answer *a, char *msg, size_t n)
{
    msg[0] = '\0';
    json_t *errors = json_object_get(a->json, "errors");
    size_t len = 0;
    size_t i;
    json_t *er;
    json_array_foreach(errors, i, er)
    {
        /* {"error","error_code"} or {"error","error_number","description","source"} */
        const char *text = json_string_value(json_object_get(er, "error"));
        const char *desc = json_string_value(json_object_get(er, "description"));
        json_t *code = json_object_get(er, "error_code");
        if (!code)
            code = json_object_get(er, "error_number");
        int w = snprintf(msg + len, n - len, "%s%s%s%s (error %lld)", len ? "; " : "",
                         desc && *desc ? desc : "", desc && *desc && text ? ": " : "",
                         text ? text : "", (long long)json_integer_value(code));
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
    }
    if (a->status == 200 && json_is_object(a->json) && json_array_size(errors) == 0 &&
        (!errors || json_is_array(errors)))
        return true;
    if (!msg[0]) {
        /* text answers: 401 "Authentication failure", 400 "Unable to parse query.", 404 */
        snprintf(msg, n, "HTTP %ld: %.200s", a->status, a->json ? "(no message)" : a->body);
        for (char *p = msg; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    }
    return false;
}
