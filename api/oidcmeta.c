/* oidcmeta.c - an OpenID provider's published metadata and token endpoint (see oidcmeta.h). */
#include "oidcmeta.h"

#include "../backends/httpcall.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "idproviders.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_MAX_BYTES (256L * 1024)
#define META_TIMEOUT_S 5

char *oidcmeta_urlencode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = xmalloc(3 * n + 1), *o = out;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            *c == '-' || *c == '.' || *c == '_' || *c == '~') {
            *o++ = (char)*c;
        } else {
            *o++ = '%';
            *o++ = hex[*c >> 4];
            *o++ = hex[*c & 15];
        }
    }
    *o = '\0';
    return out;
}

static const char *setting(const struct db_idp *p, const char *k)
{
    return json_string_value(json_object_get(p->settings, k));
}

/* An endpoint the provider names: https, or http when the issuer itself is on the loopback. */
static bool endpoint_ok(const char *issuer, const char *url)
{
    if (!url || strpbrk(url, " \t\r\n#"))
        return false;
    if (strncmp(url, "https://", 8) == 0)
        return true;
    return strncmp(url, "http://", 7) == 0 && api_idp_url_loopback(issuer) &&
           api_idp_url_loopback(url);
}

static int get_json(const char *url, json_t **out, char *err, size_t errsz)
{
    const char *hdr[] = {"Accept: application/json"};
    const struct httpcall c = {.method = "GET",
                               .url = url,
                               .headers = hdr,
                               .nheaders = 1,
                               .connect_timeout_s = META_TIMEOUT_S,
                               .timeout_s = META_TIMEOUT_S,
                               .max_answer = META_MAX_BYTES};
    struct httpcall_answer a = {0};
    int e = httpcall_do(&c, &a, err, errsz);
    if (e)
        return e == AIDC_EINTERNAL ? e : AIDC_EUNAVAIL;
    if (a.status != 200 || !json_is_object(a.json)) {
        snprintf(err, errsz, "%s answered %ld%s", url, a.status,
                 json_is_object(a.json) ? "" : " without a JSON object");
        httpcall_answer_free(&a);
        return AIDC_EUNAVAIL;
    }
    *out = json_incref(a.json);
    httpcall_answer_free(&a);
    return 0;
}

static bool discovery_ok(const struct db_idp *p, const json_t *d, char *err, size_t errsz)
{
    const char *issuer = setting(p, "issuer");
    const char *said = json_string_value(json_object_get(d, "issuer"));
    if (!said || strcmp(said, issuer) != 0) {
        snprintf(err, errsz, "the discovery document names issuer \"%.200s\", not \"%.200s\"",
                 said ? said : "", issuer);
        return false;
    }
    static const char *const need[] = {"authorization_endpoint", "token_endpoint", "jwks_uri"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!endpoint_ok(issuer, json_string_value(json_object_get(d, need[i])))) {
            snprintf(err, errsz, "the discovery document's %s is missing or not https", need[i]);
            return false;
        }
    return true;
}

int oidcmeta_discovery(struct db *db, struct db_idp *p, const json_t **doc, char *err, size_t errsz)
{
    if (p->discovery && p->discovery_age >= 0 && p->discovery_age < OIDCMETA_TTL_S &&
        discovery_ok(p, p->discovery, err, errsz)) {
        *doc = p->discovery;
        return 0;
    }
    char *url = xasprintf("%s/.well-known/openid-configuration", setting(p, "issuer"));
    json_t *d = NULL;
    int e = get_json(url, &d, err, errsz);
    free(url);
    if (e)
        return e;
    if (!discovery_ok(p, d, err, errsz)) {
        json_decref(d);
        return AIDC_EUNAVAIL;
    }
    char *text = json_dumps(d, JSON_COMPACT);
    e = text ? db_idp_store_discovery(db, p->name, text) : AIDC_EINTERNAL;
    free(text);
    json_decref(p->discovery);
    p->discovery = d;
    p->discovery_age = 0;
    *doc = d;
    return e;
}

int oidcmeta_keys(struct db *db, struct db_idp *p, bool refetch, struct idtoken_keys **keys,
                  char *err, size_t errsz)
{
    bool fresh = p->jwks && p->jwks_age >= 0 && p->jwks_age < OIDCMETA_TTL_S && !refetch;
    if (!fresh) {
        const json_t *d;
        int e = oidcmeta_discovery(db, p, &d, err, errsz);
        json_t *j = NULL;
        if (!e)
            e = get_json(json_string_value(json_object_get(d, "jwks_uri")), &j, err, errsz);
        if (e)
            return e;
        char *text = json_dumps(j, JSON_COMPACT);
        e = text ? db_idp_store_jwks(db, p->name, text) : AIDC_EINTERNAL;
        free(text);
        json_decref(p->jwks);
        p->jwks = j;
        p->jwks_age = 0;
        if (e)
            return e;
    }
    char *text = json_dumps(p->jwks, JSON_COMPACT);
    if (!text)
        return AIDC_EINTERNAL;
    int rc = idtoken_jwks_parse(text, strlen(text), keys, err, errsz);
    free(text);
    return rc == 0 ? 0 : AIDC_EUNAVAIL;
}

/* RFC 6749 2.3.1: id and secret form-encoded, then Basic. */
static char *basic_auth(const char *id, const char *secret)
{
    char *ei = oidcmeta_urlencode(id), *es = oidcmeta_urlencode(secret);
    char *pair = xasprintf("%s:%s", ei, es);
    size_t n = strlen(pair);
    char *b64 = xmalloc(4 * ((n + 2) / 3) + 1);
    int o = EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)pair, (int)n);
    char *h = xasprintf("Authorization: Basic %s", b64);
    explicit_bzero(pair, n);
    explicit_bzero(es, strlen(es));
    explicit_bzero(b64, (size_t)(o > 0 ? o : 0));
    free(ei);
    free(es);
    free(pair);
    free(b64);
    return h;
}

int oidcmeta_exchange(const struct db_idp *p, const char *secret, const char *code,
                      const char *redirect_uri, const char *verifier, struct oidcmeta_tokens *out,
                      char *err, size_t errsz)
{
    memset(out, 0, sizeof *out);
    const char *token_url = json_string_value(json_object_get(p->discovery, "token_endpoint"));
    if (!token_url) {
        snprintf(err, errsz, "no token endpoint known");
        return AIDC_EUNAVAIL;
    }
    char *ec = oidcmeta_urlencode(code), *er = oidcmeta_urlencode(redirect_uri),
         *ev = oidcmeta_urlencode(verifier);
    char *body = xasprintf("grant_type=authorization_code&code=%s&redirect_uri=%s&code_verifier=%s",
                           ec, er, ev);
    free(ec);
    free(er);
    free(ev);
    char *auth = basic_auth(setting(p, "client_id"), secret);
    const char *hdr[] = {"Content-Type: application/x-www-form-urlencoded",
                         "Accept: application/json", auth};
    const struct httpcall c = {.method = "POST",
                               .url = token_url,
                               .headers = hdr,
                               .nheaders = 3,
                               .body = body,
                               .connect_timeout_s = META_TIMEOUT_S,
                               .timeout_s = META_TIMEOUT_S,
                               .max_answer = META_MAX_BYTES};
    struct httpcall_answer a = {0};
    int e = httpcall_do(&c, &a, err, errsz);
    explicit_bzero(auth, strlen(auth));
    free(auth);
    free(body);
    if (e)
        return e == AIDC_EINTERNAL ? e : AIDC_EUNAVAIL;
    const char *idt = json_string_value(json_object_get(a.json, "id_token"));
    if (a.status != 200 || !idt) {
        const char *why = json_string_value(json_object_get(a.json, "error"));
        snprintf(err, errsz, "the token endpoint answered %ld (%.64s)", a.status,
                 why ? why : "no ID token");
        e = a.status >= 500 ? AIDC_EUNAVAIL : AIDC_EFORBIDDEN;
    } else {
        out->id_token = xstrdup(idt);
        const char *at = json_string_value(json_object_get(a.json, "access_token"));
        out->access_token = at ? xstrdup(at) : NULL;
    }
    httpcall_answer_free(&a);
    return e;
}

void oidcmeta_tokens_free(struct oidcmeta_tokens *t)
{
    free(t->id_token);
    free(t->access_token);
    memset(t, 0, sizeof *t);
}
