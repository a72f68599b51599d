/*
 * idtoken.c - OpenID Connect ID token verification on OpenSSL 3 and jansson.
 *
 * The order is the safe one: the header is read and the algorithm fixed by
 * the allow-list and the key (never by the token alone) before anything else;
 * the payload is parsed only after its signature verified; every claim the
 * relying party depends on is required and typed. Reasons never echo token
 * contents, so one can go to a log or an answer as it is.
 */
#include "idtoken.h"

#include "crypto.h"
#include "jsonlimit.h"
#include "jwks.h"
#include "xalloc.h"

#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TOKEN_MAX      16384
#define HEADER_DEPTH   4
#define HEADER_VALUES  64
#define PAYLOAD_DEPTH  16
#define PAYLOAD_VALUES 4096
#define SUB_MAX        255

struct idtoken_keys {
    struct jwks *set;
};

__attribute__((format(printf, 3, 4))) static void say(char *buf, size_t sz, const char *fmt, ...)
{
    if (!buf || sz == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sz, fmt, ap); /* a cut reason is still a reason */
    va_end(ap);
    if (n < 0)
        buf[0] = '\0';
}

int idtoken_jwks_parse(const char *json, size_t len, struct idtoken_keys **out, char *err,
                       size_t errsz)
{
    struct jwks *set = NULL;
    *out = NULL;
    if (jwks_parse(json, len, &set, err, errsz) != 0)
        return -1;
    *out = xmalloc(sizeof **out);
    (*out)->set = set;
    return 0;
}

void idtoken_jwks_free(struct idtoken_keys *k)
{
    if (!k)
        return;
    jwks_free(k->set);
    free(k);
}

size_t idtoken_jwks_count(const struct idtoken_keys *k)
{
    return k ? jwks_count(k->set) : 0;
}

/* One part of the token decoded and parsed as a JSON object within the limits, or NULL. */
static json_t *part_object(const char *s, size_t n, int depth, long values)
{
    size_t len = 0;
    unsigned char *raw = jwks_b64u_decode(s, n, &len);
    json_t *v = NULL;
    json_error_t jerr;
    /* Duplicate members are refused: parsers differ on which one counts. */
    if (raw && jsonlimit_check((const char *)raw, len, depth, values) == JSONLIMIT_OK)
        v = json_loadb((const char *)raw, len, JSON_REJECT_DUPLICATES, &jerr);
    free(raw);
    if (v && !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

/*
 * The key for the header's kid (or, with no kid, the only key of the kind),
 * when its kind is want. IDTOKEN_KID_UNKNOWN when no key has the kid.
 */
static enum idtoken_result pick_key(const struct jwks *set, json_t *kid, enum jwks_kty want,
                                    const struct jwks_key **out, char *why, size_t whysz)
{
    const struct jwks_key *k, *found = NULL;
    size_t fitting = 0;
    bool named = false;
    for (size_t i = 0; (k = jwks_key_at(set, i)) != NULL; i++) {
        if (kid && (!k->kid || strcmp(k->kid, json_string_value(kid)) != 0))
            continue;
        named = true;
        if (k->kty != want)
            continue;
        fitting++;
        if (!found)
            found = k;
    }
    if (kid && !named) {
        say(why, whysz, "token key id is not in the provider's key set");
        return IDTOKEN_KID_UNKNOWN;
    }
    if (!found) {
        say(why, whysz, "token algorithm does not fit the provider's key");
        return IDTOKEN_INVALID;
    }
    if (!kid && fitting != 1) {
        say(why, whysz, "token names no key id and several keys could have signed it");
        return IDTOKEN_INVALID;
    }
    *out = found;
    return IDTOKEN_OK;
}

/*
 * The header: alg from the allow-list, no extensions we would have to
 * understand ("crit"), typ absent or JWT, then the key. *key on IDTOKEN_OK.
 */
static enum idtoken_result check_header(json_t *hdr, const struct jwks *set,
                                        const struct jwks_key **key, char *why, size_t whysz)
{
    json_t *alg = json_object_get(hdr, "alg"), *kid = json_object_get(hdr, "kid");
    json_t *typ = json_object_get(hdr, "typ");
    const char *a = json_string_value(alg);
    enum jwks_kty want;
    if (a && strcmp(a, "RS256") == 0)
        want = JWKS_RSA;
    else if (a && strcmp(a, "ES256") == 0)
        want = JWKS_EC;
    else {
        say(why, whysz, "token algorithm is not allowed (RS256 and ES256 only)");
        return IDTOKEN_INVALID;
    }
    if (json_object_get(hdr, "crit")) {
        say(why, whysz, "token header has critical extensions");
        return IDTOKEN_INVALID;
    }
    if (typ && !(json_is_string(typ) && strcasecmp(json_string_value(typ), "JWT") == 0)) {
        say(why, whysz, "token type is not JWT");
        return IDTOKEN_INVALID;
    }
    if (kid && (!json_is_string(kid) || json_string_length(kid) == 0)) {
        say(why, whysz, "token key id is not a string");
        return IDTOKEN_INVALID;
    }
    return pick_key(set, kid, want, key, why, whysz);
}

/* JWS's raw r || s (32 bytes each) as the DER ECDSA-Sig-Value OpenSSL checks. Its length or 0. */
static size_t ecdsa_der(const unsigned char raw[64], unsigned char *der, size_t dersz)
{
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    size_t len = 0;
    if (!es || !r || !s || ECDSA_SIG_set0(es, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        goto out;
    }
    int n = i2d_ECDSA_SIG(es, NULL);
    unsigned char *p = der;
    if (n > 0 && (size_t)n <= dersz && i2d_ECDSA_SIG(es, &p) == n)
        len = (size_t)n;
out:
    ECDSA_SIG_free(es);
    return len;
}

/* Whether sig is the key's signature (SHA-256) over input[0..n). */
static bool signature_ok(const struct jwks_key *k, const char *input, size_t n,
                         const unsigned char *sig, size_t siglen)
{
    unsigned char der[80]; /* a P-256 DER signature is at most 72 bytes */
    EVP_MD_CTX *md = NULL;
    EVP_PKEY_CTX *pctx = NULL;
    bool ok = false;
    if (k->kty == JWKS_EC) {
        /* Exactly 64 bytes: a DER signature or a short r is a different encoding. */
        if (siglen != 64 || (siglen = ecdsa_der(sig, der, sizeof der)) == 0)
            return false;
        sig = der;
    } else if (siglen != (size_t)EVP_PKEY_get_size(k->pkey)) {
        return false;
    }
    md = EVP_MD_CTX_new();
    if (!md || EVP_DigestVerifyInit(md, &pctx, EVP_sha256(), NULL, k->pkey) != 1)
        goto out;
    if (k->kty == JWKS_RSA && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1)
        goto out;
    ok = EVP_DigestVerify(md, sig, siglen, (const unsigned char *)input, n) == 1;
out:
    EVP_MD_CTX_free(md);
    return ok;
}

/* A string claim equal to want, byte for byte. */
static bool claim_is(json_t *v, const char *want)
{
    size_t n = strlen(want);
    return json_is_string(v) && json_string_length(v) == n &&
           crypto_equal(json_string_value(v), want, n);
}

/* aud is the client or (array) contains it; azp, when present or several audiences, is it. */
static bool audience_ok(json_t *pl, const char *client_id, char *why, size_t whysz)
{
    json_t *aud = json_object_get(pl, "aud"), *azp = json_object_get(pl, "azp"), *v;
    bool found = claim_is(aud, client_id);
    size_t i;
    if (json_is_array(aud)) {
        json_array_foreach(aud, i, v)
        {
            if (!json_is_string(v)) {
                found = false;
                break;
            }
            found = found || claim_is(v, client_id);
        }
    }
    if (!found) {
        say(why, whysz, "audience does not name this client");
        return false;
    }
    if ((azp || json_array_size(aud) > 1) && !claim_is(azp, client_id)) {
        say(why, whysz, "authorized party is not this client");
        return false;
    }
    return true;
}

/* exp (required), iat (required), nbf (optional) against now with leeway. */
static bool times_ok(json_t *pl, time_t now, int leeway, char *why, size_t whysz)
{
    json_t *exp = json_object_get(pl, "exp"), *iat = json_object_get(pl, "iat");
    json_t *nbf = json_object_get(pl, "nbf");
    double early = (double)now - leeway, late = (double)now + leeway;
    if (!json_is_number(exp) || !json_is_number(iat) || (nbf && !json_is_number(nbf))) {
        say(why, whysz, "token lacks a numeric exp or iat");
        return false;
    }
    if (!(json_number_value(exp) > early)) {
        say(why, whysz, "token expired");
        return false;
    }
    if (!(json_number_value(iat) <= late)) {
        say(why, whysz, "token issued in the future");
        return false;
    }
    if (nbf && !(json_number_value(nbf) <= late)) {
        say(why, whysz, "token not valid yet");
        return false;
    }
    return true;
}

/* at_hash: the left half of SHA-256 of the access token, base64url (RS256 and ES256 alike). */
static bool at_hash_ok(json_t *at_hash, const char *access_token)
{
    unsigned char d[32];
    char want[32];
    crypto_sha256(access_token, strlen(access_token), d);
    crypto_b64url_encode(d, 16, want, sizeof want);
    return claim_is(at_hash, want);
}

static bool claims_ok(json_t *pl, const struct idtoken_expect *ex, char *why, size_t whysz)
{
    json_t *sub = json_object_get(pl, "sub"), *at_hash = json_object_get(pl, "at_hash");
    if (!ex->issuer || !claim_is(json_object_get(pl, "iss"), ex->issuer)) {
        say(why, whysz, "issuer is not the configured provider");
        return false;
    }
    if (!ex->client_id || !audience_ok(pl, ex->client_id, why, whysz))
        return false;
    if (!times_ok(pl, ex->now, ex->leeway_s > 0 ? ex->leeway_s : 0, why, whysz))
        return false;
    /* A missing expectation must not turn the check off. */
    if (!ex->nonce || !claim_is(json_object_get(pl, "nonce"), ex->nonce)) {
        say(why, whysz, "nonce does not match the login");
        return false;
    }
    if (!json_is_string(sub) || json_string_length(sub) == 0 || json_string_length(sub) > SUB_MAX) {
        say(why, whysz, "subject missing or longer than %d bytes", SUB_MAX);
        return false;
    }
    if (ex->access_token && at_hash && !at_hash_ok(at_hash, ex->access_token)) {
        say(why, whysz, "access token hash does not match");
        return false;
    }
    return true;
}

enum idtoken_result idtoken_verify(const char *jwt, const struct idtoken_keys *keys,
                                   const struct idtoken_expect *ex, json_t **claims, char *why,
                                   size_t whysz)
{
    enum idtoken_result r = IDTOKEN_INVALID;
    const struct jwks_key *key = NULL;
    json_t *hdr = NULL, *pl = NULL;
    unsigned char *sig = NULL;
    size_t siglen = 0, len = jwt ? strnlen(jwt, TOKEN_MAX + 1) : 0;
    const char *d1 = len ? memchr(jwt, '.', len) : NULL;
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - jwt)) : NULL;
    *claims = NULL;
    say(why, whysz, "token is not a compact JWS");
    if (len > TOKEN_MAX) {
        say(why, whysz, "token longer than %d bytes", TOKEN_MAX);
        goto out;
    }
    if (!keys || !ex || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - jwt)))
        goto out;
    if (!(hdr = part_object(jwt, (size_t)(d1 - jwt), HEADER_DEPTH, HEADER_VALUES))) {
        say(why, whysz, "token header is not base64url JSON");
        goto out;
    }
    if ((r = check_header(hdr, keys->set, &key, why, whysz)) != IDTOKEN_OK)
        goto out;
    r = IDTOKEN_INVALID;
    sig = jwks_b64u_decode(d2 + 1, len - (size_t)(d2 + 1 - jwt), &siglen);
    if (!sig || !signature_ok(key, jwt, (size_t)(d2 - jwt), sig, siglen)) {
        say(why, whysz, "token signature is not valid");
        goto out;
    }
    if (!(pl = part_object(d1 + 1, (size_t)(d2 - d1 - 1), PAYLOAD_DEPTH, PAYLOAD_VALUES))) {
        say(why, whysz, "token claims are not a JSON object");
        goto out;
    }
    if (!claims_ok(pl, ex, why, whysz))
        goto out;
    say(why, whysz, "ok");
    *claims = pl;
    pl = NULL;
    r = IDTOKEN_OK;
out:
    /* A refused signature leaves errors queued in this thread; the next TLS call would read them.
     */
    ERR_clear_error();
    free(sig);
    json_decref(hdr);
    json_decref(pl);
    return r;
}

void idtoken_pkce_challenge(const char *verifier, char *out, size_t outsz)
{
    unsigned char d[32];
    crypto_sha256(verifier, strlen(verifier), d);
    crypto_b64url_encode(d, sizeof d, out, outsz);
}
