/* registry.c - reading a container registry over HTTP (see registry.h). */
#include "registry.h"

#include "../lib/imgref.h"

#include "../lib/credref.h"
#include "../lib/curlglobal.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SCOPES 16
#define ACCEPT_MANIFESTS                                                                          \
    "Accept: " MT_OCI_INDEX ", " MT_DOCKER_LIST ", " MT_DOCKER_MANIFEST ", " MT_OCI_MANIFEST

struct scoped_token {
    char *scope;
    char *token;
};

struct regclient {
    CURL *h;
    char *base; /* url without a trailing '/' */
    char *userpwd; /* "user:password", or NULL */
    int timeout;
    int page_size;
    struct scoped_token tokens[SCOPES];
    size_t next_slot;
};

struct answer {
    long status;
    char *body;
    size_t len, cap, max;
    bool too_big;
    char content_type[128];
    char digest[IMAGE_DIGEST_LEN + 1];
    char link[4096]; /* every Link header, joined with ", " */
    bool link_cut;    /* ... did not fit: the listing cannot be trusted to be whole */
    char challenge[1024];
    long redirects;   /* a challenge after a redirect comes from another server */
};

static void answer_free(struct answer *a)
{
    free(a->body);
    a->body = NULL;
    a->len = a->cap = 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct answer *a = arg;
    size_t n = size * nmemb;
    if (a->len + n + 1 > a->max) {
        a->too_big = true;
        return 0;
    }
    if (a->len + n + 1 > a->cap) {
        size_t cap = a->cap ? a->cap : 8192;
        while (cap < a->len + n + 1)
            cap *= 2;
        a->body = xrealloc(a->body, cap);
        a->cap = cap;
    }
    memcpy(a->body + a->len, data, n);
    a->len += n;
    a->body[a->len] = '\0';
    return n;
}

/* Keep value of header line "Name: value" into out when name matches. */
static void header_value(const char *line, size_t n, const char *name, char *out, size_t outsz)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    const char *v = line + nl + 1;
    const char *end = line + n;
    while (v < end && isspace((unsigned char)*v))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    size_t vl = (size_t)(end - v);
    if (vl >= outsz)
        vl = outsz - 1;
    memcpy(out, v, vl);
    out[vl] = '\0';
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    struct answer *a = arg;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response (after a redirect) */
        a->content_type[0] = a->digest[0] = a->link[0] = a->challenge[0] = '\0';
        a->link_cut = false;
        return n;
    }
    header_value(data, n, "Content-Type", a->content_type, sizeof a->content_type);
    header_value(data, n, "Docker-Content-Digest", a->digest, sizeof a->digest);
    header_value(data, n, "WWW-Authenticate", a->challenge, sizeof a->challenge);
    char link[sizeof a->link];
    link[0] = '\0';
    header_value(data, n, "Link", link, sizeof link);
    if (link[0]) {
        size_t have = strlen(a->link), add = strlen(link);
        if (strlen(link) + 1 >= sizeof link || have + add + 3 >= sizeof a->link)
            a->link_cut = true;
        else
            snprintf(a->link + have, sizeof a->link - have, "%s%s", have ? ", " : "", link);
    }
    return n;
}

int regclient_open(const struct registry_target *t, struct regclient **out, char *err,
                   size_t errsz)
{
    *out = NULL;
    if (!curlglobal_init()) {
        snprintf(err, errsz, "libcurl could not start");
        return AIDC_EINTERNAL;
    }
    struct regclient *c = xcalloc(1, sizeof *c);
    size_t ul = strlen(t->url);
    while (ul && t->url[ul - 1] == '/')
        ul--;
    c->base = xstrndup(t->url, ul);
    c->timeout = t->timeout_seconds > 0 ? t->timeout_seconds : REGISTRY_TIMEOUT;
    c->page_size = t->page_size;
    if (t->credref && t->credref[0]) {
        int e = 0;
        c->userpwd = credref_userpwd(t->credref, &e, err, errsz);
        if (e) {
            regclient_close(c);
            return e;
        }
    }
    c->h = curl_easy_init();
    if (!c->h) {
        regclient_close(c);
        snprintf(err, errsz, "libcurl could not start");
        return AIDC_EINTERNAL;
    }
    *out = c;
    return 0;
}

static void wipe(char *s)
{
    if (s)
        memset(s, 0, strlen(s));
    free(s);
}

void regclient_close(struct regclient *c)
{
    if (!c)
        return;
    if (c->h)
        curl_easy_cleanup(c->h);
    for (size_t i = 0; i < SCOPES; i++) {
        free(c->tokens[i].scope);
        wipe(c->tokens[i].token);
    }
    wipe(c->userpwd);
    free(c->base);
    free(c);
}

/* The scope a path needs: its repository's pull, or the catalog. */
static char *scope_of(const char *path)
{
    if (strncmp(path, "/v2/_catalog", 12) == 0)
        return xstrdup("registry:catalog:*");
    const char *repo = path + 4;
    const char *stop = NULL;
    static const char *const marks[] = {"/tags/", "/manifests/", "/blobs/"};
    for (size_t i = 0; i < 3; i++) {
        const char *m = strstr(repo, marks[i]);
        if (m && (!stop || m < stop))
            stop = m;
    }
    return stop ? xasprintf("repository:%.*s:pull", (int)(stop - repo), repo) : NULL;
}

static const char *token_for(const struct regclient *c, const char *scope)
{
    for (size_t i = 0; scope && i < SCOPES; i++)
        if (c->tokens[i].scope && strcmp(c->tokens[i].scope, scope) == 0)
            return c->tokens[i].token;
    return NULL;
}

/*
 * One HTTP exchange: GET (or HEAD) url with the given headers; the answer in
 * a. Redirects are followed only where registries use them (blobs, to their
 * storage), never from https to http.
 */
static int perform(struct regclient *c, const char *url, bool head, bool redirects,
                   struct curl_slist *hdr, const char *userpwd, long max, struct answer *a,
                   char *err, size_t errsz)
{
    memset(a, 0, sizeof *a);
    a->max = (size_t)max;
    CURL *h = c->h;
    curl_easy_reset(h);
    CURLcode rc = curl_easy_setopt(h, CURLOPT_URL, url);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    if (!rc && head)
        rc = curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    if (!rc && userpwd) {
        rc = curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        if (!rc)
            rc = curl_easy_setopt(h, CURLOPT_USERPWD, userpwd);
    }
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
                              (long)(c->timeout < REGISTRY_CONNECT_TIMEOUT ? c->timeout
                                                                           : REGISTRY_CONNECT_TIMEOUT));
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)c->timeout);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR,
                              strncmp(url, "https:", 6) == 0 ? "https" : "http,https");
    /* credentials never follow a redirect to another host (libcurl's default) */
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, redirects ? 1L : 0L);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_MAXREDIRS, 3L);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    if (!rc)
        rc = curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
    if (!rc)
        rc = curl_easy_perform(h);
    /* nothing secret stays in the handle */
    curl_easy_setopt(h, CURLOPT_USERPWD, NULL);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    if (rc != CURLE_OK) {
        snprintf(err, errsz, "%s %s: %s", head ? "HEAD" : "GET", url,
                 a->too_big ? "the answer is too large" : curl_easy_strerror(rc));
        answer_free(a);
        return AIDC_EUNAVAIL;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->status);
    curl_easy_getinfo(h, CURLINFO_REDIRECT_COUNT, &a->redirects);
    if (!a->body)
        a->body = xstrdup("");
    return 0;
}

/* Fetch a bearer token for the challenge; cached under its scope. */
static int fetch_token(struct regclient *c, const struct regchallenge *ch, char *err, size_t errsz)
{
    char *svc = curl_easy_escape(c->h, ch->service, 0);
    char *scope = curl_easy_escape(c->h, ch->scope, 0);
    if (!svc || !scope) {
        curl_free(svc);
        curl_free(scope);
        snprintf(err, errsz, "out of memory");
        return AIDC_EINTERNAL;
    }
    char *url = xasprintf("%s%sservice=%s%s%s", ch->realm, strchr(ch->realm, '?') ? "&" : "?",
                          svc, ch->scope[0] ? "&scope=" : "", ch->scope[0] ? scope : "");
    curl_free(svc);
    curl_free(scope);
    struct answer a;
    int e = perform(c, url, false, false, NULL, c->userpwd, 1L << 20, &a, err, errsz);
    if (!e && a.status != 200) {
        snprintf(err, errsz, "the token service %s answered %ld%s", ch->realm, a.status,
                 a.status == 401 || a.status == 403 ? ": credentials refused" : "");
        e = a.status == 401 || a.status == 403 ? AIDC_EFORBIDDEN : AIDC_EUNAVAIL;
    }
    char *token = e ? NULL : registry_parse_token(a.body, a.len);
    if (!e && !token) {
        snprintf(err, errsz, "the token service %s gave no token", ch->realm);
        e = AIDC_EINVAL;
    }
    answer_free(&a);
    free(url);
    if (e)
        return e;
    struct scoped_token *slot = &c->tokens[c->next_slot++ % SCOPES];
    free(slot->scope);
    wipe(slot->token);
    slot->scope = xstrdup(ch->scope);
    slot->token = token;
    return 0;
}

/*
 * GET or HEAD path (below /v2/), authenticating as the registry asks: the
 * cached token of the path's scope, else basic credentials if any; on a
 * Bearer challenge, a token from its realm and one retry.
 */
static int call(struct regclient *c, const char *path, const char *accept, bool head, long max,
                struct answer *a, char *err, size_t errsz)
{
    memset(a, 0, sizeof *a);
    char *url = xasprintf("%s%s", c->base, path);
    bool blob = strstr(path, "/blobs/") != NULL;
    char *scope = scope_of(path);
    int e = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *token = token_for(c, scope);
        char *auth = token ? xasprintf("Authorization: Bearer %s", token) : NULL;
        struct curl_slist *hdr = NULL, *tmp;
        bool ok = true;
        const char *lines[] = {accept, auth};
        for (size_t i = 0; i < 2 && ok; i++) {
            if (!lines[i])
                continue;
            tmp = curl_slist_append(hdr, lines[i]);
            ok = tmp != NULL;
            if (tmp)
                hdr = tmp;
        }
        e = ok ? perform(c, url, head, blob, hdr, token ? NULL : c->userpwd, max, a, err, errsz)
               : AIDC_EINTERNAL;
        curl_slist_free_all(hdr);
        wipe(auth);
        if (e || a->status != 401 || attempt == 1)
            break;
        struct regchallenge ch;
        /* a challenge from where a redirect led is not the registry's: no credentials for it */
        if (a->redirects > 0 || !registry_parse_challenge(a->challenge, &ch) ||
            strcasecmp(ch.scheme, "Bearer") != 0)
            break; /* basic: the credentials were sent already */
        if (strncmp(c->base, "https:", 6) == 0 && strncmp(ch.realm, "https:", 6) != 0) {
            snprintf(err, errsz, "%s: the registry names a token service over plain http (%.200s):"
                                 " refused for an https registry", url, ch.realm);
            answer_free(a);
            e = AIDC_EFORBIDDEN;
            break;
        }
        if (!ch.scope[0] && scope)
            snprintf(ch.scope, sizeof ch.scope, "%s", scope);
        free(scope);
        scope = xstrdup(ch.scope);
        answer_free(a);
        e = fetch_token(c, &ch, err, errsz);
        if (e)
            break;
    }
    if (!e && a->status == 401)
        snprintf(err, errsz, "%s: 401, %s", url,
                 c->userpwd ? "the registry refused the credentials"
                            : "the registry wants credentials (set the registry's credentials_ref)");
    free(scope);
    free(url);
    return e;
}

/* The aidc_err for an answer's status (0 for 2xx), err filled. */
static int status_err(const struct answer *a, const char *what, char *err, size_t errsz)
{
    if (a->status >= 200 && a->status < 300)
        return 0;
    if (a->status == 401 || a->status == 403) {
        if (a->status == 403)
            snprintf(err, errsz, "%s: 403, the credentials may not read it", what);
        return AIDC_EFORBIDDEN;
    }
    /* the registry's own words, shortened, when it sent its error document */
    json_t *doc = json_loadb(a->body ? a->body : "", a->len, 0, NULL);
    const char *msg = json_string_value(json_object_get(json_array_get(json_object_get(doc, "errors"), 0),
                                                        "message"));
    snprintf(err, errsz, "%s: HTTP %ld%s%.160s", what, a->status, msg ? ": " : "", msg ? msg : "");
    json_decref(doc);
    if (a->status == 404)
        return AIDC_ENOTFOUND;
    return a->status >= 500 || a->status == 429 ? AIDC_EUNAVAIL : AIDC_EINVAL;
}

int registry_ping(struct regclient *c, char *err, size_t errsz)
{
    struct answer a;
    int e = call(c, "/v2/", NULL, false, 1L << 20, &a, err, errsz);
    if (!e && a.status == 404) {
        snprintf(err, errsz, "%s/v2/: 404, not a Docker Registry HTTP API v2 registry", c->base);
        e = AIDC_EINVAL;
    } else if (!e) {
        e = status_err(&a, "GET /v2/", err, errsz);
    }
    answer_free(&a);
    return e;
}

/* Every string of key (an array or null) over all pages of path. */
static int list_all(struct regclient *c, const char *first, const char *key, bool null_ok,
                    json_t **out, char *err, size_t errsz)
{
    *out = json_array();
    char *path = c->page_size > 0 ? xasprintf("%s?n=%d", first, c->page_size) : xstrdup(first);
    int e = 0;
    for (int pages = 0; path && !e; pages++) {
        struct answer a;
        e = call(c, path, "Accept: application/json", false, REGISTRY_MAX_LIST, &a, err, errsz);
        if (!e)
            e = status_err(&a, path, err, errsz);
        if (!e && registry_list_page(a.body, a.len, key, null_ok, *out, err, errsz) != 0) {
            char what[256];
            snprintf(what, sizeof what, "%s", err);
            snprintf(err, errsz, "%s: %s", path, what);
            e = AIDC_EINVAL;
        }
        if (!e && json_array_size(*out) > REGISTRY_MAX_ITEMS) {
            snprintf(err, errsz, "%s: more than %d entries", first, REGISTRY_MAX_ITEMS);
            e = AIDC_EINVAL;
        }
        free(path);
        path = NULL;
        if (!e && pages >= REGISTRY_MAX_ITEMS) {
            snprintf(err, errsz, "%s: the pages do not end", first);
            e = AIDC_EINVAL;
        }
        bool unfollowable = false;
        if (!e && a.link[0])
            path = registry_next_link(a.link, c->base, &unfollowable);
        /* a listing that stops early would make every later entry look deleted */
        if (!e && (unfollowable || a.link_cut)) {
            snprintf(err, errsz, "%s: its next page is not on this registry (Link: %.200s)", first,
                     a.link);
            e = AIDC_EINVAL;
        }
        answer_free(&a);
    }
    free(path);
    if (e) {
        json_decref(*out);
        *out = NULL;
    }
    return e;
}

int registry_catalog(struct regclient *c, json_t **repos, char *err, size_t errsz)
{
    return list_all(c, "/v2/_catalog", "repositories", false, repos, err, errsz);
}

int registry_tags(struct regclient *c, const char *repo, json_t **tags, char *err, size_t errsz)
{
    char *path = xasprintf("/v2/%s/tags/list", repo);
    /* a repository whose tags were all deleted lists "tags": null */
    int e = list_all(c, path, "tags", true, tags, err, errsz);
    free(path);
    return e;
}

int registry_digest(struct regclient *c, const char *repo, const char *tag,
                    char digest[IMAGE_DIGEST_LEN + 1], char *err, size_t errsz)
{
    char *path = xasprintf("/v2/%s/manifests/%s", repo, tag);
    struct answer a;
    int e = call(c, path, ACCEPT_MANIFESTS, true, REGISTRY_MAX_MANIFEST, &a, err, errsz);
    if (!e)
        e = status_err(&a, path, err, errsz);
    if (!e && imgref_digest_valid(a.digest))
        snprintf(digest, IMAGE_DIGEST_LEN + 1, "%s", a.digest);
    bool need_get = !e && !imgref_digest_valid(a.digest);
    answer_free(&a);
    free(path);
    if (need_get) { /* a registry that leaves the header out: the bytes decide */
        struct manifest m;
        e = registry_manifest(c, repo, tag, &m, digest, err, errsz);
        manifest_free(&m);
    }
    return e;
}

int registry_manifest(struct regclient *c, const char *repo, const char *ref, struct manifest *m,
                      char digest[IMAGE_DIGEST_LEN + 1], char *err, size_t errsz)
{
    memset(m, 0, sizeof *m);
    char *path = xasprintf("/v2/%s/manifests/%s", repo, ref);
    struct answer a;
    int e = call(c, path, ACCEPT_MANIFESTS, false, REGISTRY_MAX_MANIFEST, &a, err, errsz);
    if (!e)
        e = status_err(&a, path, err, errsz);
    if (!e) {
        char hex[65];
        char computed[IMAGE_DIGEST_LEN + 1];
        crypto_sha256_hex(a.body, a.len, hex);
        snprintf(computed, sizeof computed, "sha256:%s", hex);
        if ((a.digest[0] && strcmp(a.digest, computed) != 0) ||
            (imgref_digest_valid(ref) && strcmp(ref, computed) != 0)) {
            snprintf(err, errsz, "%s: the manifest's bytes do not match its digest", path);
            e = AIDC_EINVAL;
        } else {
            memcpy(digest, computed, sizeof computed);
            e = manifest_parse(a.body, a.len, a.content_type, m, err, errsz);
        }
    }
    answer_free(&a);
    free(path);
    return e;
}

int registry_config_labels(struct regclient *c, const char *repo, const char *digest,
                           json_t **labels, char *err, size_t errsz)
{
    *labels = NULL;
    char *path = xasprintf("/v2/%s/blobs/%s", repo, digest);
    struct answer a;
    int e = call(c, path, NULL, false, REGISTRY_MAX_MANIFEST, &a, err, errsz);
    if (!e)
        e = status_err(&a, path, err, errsz);
    if (!e && !manifest_digest_matches(a.body, a.len, digest)) {
        snprintf(err, errsz, "%s: the config's bytes do not match its digest", path);
        e = AIDC_EINVAL;
    }
    if (!e) {
        *labels = manifest_config_labels(a.body, a.len, err, errsz);
        if (!*labels)
            e = AIDC_EINVAL;
    }
    answer_free(&a);
    free(path);
    return e;
}
