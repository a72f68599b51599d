/*
 * jwks.c - a JSON Web Key Set as an OpenID Connect relying party needs it:
 * only public signing keys it can check RS256 and ES256 with, each turned
 * into an OpenSSL key once, when the set is parsed.
 *
 * Strict on purpose: a key with private members means the provider leaked it
 * (anyone could sign), so the whole set is refused rather than the key
 * skipped; RSA exponents must be odd and at least 3 (e = 1 makes every padded
 * hash its own signature); EC points must lie on P-256.
 */
#include "jwks.h"

#include "crypto.h"
#include "jsonlimit.h"
#include "xalloc.h"

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JWKS_MAX_KEYS 32
#define KID_MAX       256
#define RSA_MIN_BITS  2048
#define RSA_MAX_BITS  8192 /* what a signature check may cost: bounded */
#define JWKS_DEPTH    8
#define JWKS_VALUES   8192

struct jwks {
    size_t n;
    struct jwks_key key[JWKS_MAX_KEYS];
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

/* Base64url as JWS writes it: the 64-character alphabet only, no '=' padding. */
static bool b64u_alphabet(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}

unsigned char *jwks_b64u_decode(const char *s, size_t n, size_t *len)
{
    if (!b64u_alphabet(s, n))
        return NULL;
    size_t cap = n / 4 * 3 + 3;
    unsigned char *buf = xmalloc(cap);
    long got = crypto_b64url_decode(s, n, buf, cap);
    if (got < 0) {
        free(buf);
        return NULL;
    }
    *len = (size_t)got;
    return buf;
}

/* The JWK member name as bytes (fresh), or NULL when absent, not a string or not base64url. */
static unsigned char *jwk_bytes(json_t *jwk, const char *name, size_t *len)
{
    json_t *v = json_object_get(jwk, name);
    if (!json_is_string(v) || json_string_length(v) == 0)
        return NULL;
    return jwks_b64u_decode(json_string_value(v), json_string_length(v), len);
}

/* A public key of the given type from the parameters, or NULL. */
static EVP_PKEY *pkey_from(const char *type, OSSL_PARAM_BLD *bld)
{
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = params ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
    EVP_PKEY *pk = NULL;
    if (!ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
        pk = NULL;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return pk;
}

/*
 * An RSA key from n and e. 0 and *pk; 1: usable but too weak (skipped);
 * -1: malformed. e must be odd and at least 3: with e = 1 any padded hash
 * would be its own signature.
 */
static int rsa_key(json_t *jwk, EVP_PKEY **pk, char *err, size_t errsz)
{
    size_t nlen = 0, elen = 0;
    unsigned char *n = jwk_bytes(jwk, "n", &nlen), *e = jwk_bytes(jwk, "e", &elen);
    BIGNUM *bn = NULL, *be = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    int rc = -1;
    if (!n || !e || nlen > RSA_MAX_BITS / 8 || elen == 0 || elen > 8) {
        say(err, errsz, "RSA key: n or e missing or not base64url");
        goto out;
    }
    bn = BN_bin2bn(n, (int)nlen, NULL);
    be = BN_bin2bn(e, (int)elen, NULL);
    if (!bn || !be || !BN_is_odd(be) || BN_is_one(be) || !BN_is_odd(bn)) {
        say(err, errsz, "RSA key: bad modulus or exponent");
        goto out;
    }
    if (BN_num_bits(bn) < RSA_MIN_BITS) {
        say(err, errsz, "RSA key shorter than %d bits", RSA_MIN_BITS);
        rc = 1;
        goto out;
    }
    bld = OSSL_PARAM_BLD_new();
    if (!bld || !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
        !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) || !(*pk = pkey_from("RSA", bld))) {
        say(err, errsz, "RSA key: OpenSSL refused it");
        goto out;
    }
    rc = 0;
out:
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    free(n);
    free(e);
    return rc;
}

/* A P-256 key from x and y (32 bytes each, a point on the curve). 0 and *pk, or -1. */
static int ec_key(json_t *jwk, EVP_PKEY **pk, char *err, size_t errsz)
{
    size_t xlen = 0, ylen = 0;
    unsigned char *x = jwk_bytes(jwk, "x", &xlen), *y = jwk_bytes(jwk, "y", &ylen);
    unsigned char point[65];
    OSSL_PARAM_BLD *bld = NULL;
    EVP_PKEY_CTX *chk = NULL;
    int rc = -1;
    if (!x || !y || xlen != 32 || ylen != 32) {
        say(err, errsz, "EC key: x or y missing or not 32 bytes of base64url");
        goto out;
    }
    point[0] = 0x04; /* uncompressed: 04 || x || y */
    memcpy(point + 1, x, 32);
    memcpy(point + 33, y, 32);
    bld = OSSL_PARAM_BLD_new();
    if (!bld ||
        !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, SN_X9_62_prime256v1, 0) ||
        !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point) ||
        !(*pk = pkey_from("EC", bld)) || !(chk = EVP_PKEY_CTX_new_from_pkey(NULL, *pk, NULL)) ||
        EVP_PKEY_public_check(chk) != 1) {
        say(err, errsz, "EC key: not a point on P-256");
        EVP_PKEY_free(*pk);
        *pk = NULL;
        goto out;
    }
    rc = 0;
out:
    EVP_PKEY_CTX_free(chk);
    OSSL_PARAM_BLD_free(bld);
    free(x);
    free(y);
    return rc;
}

/* Whether a JWK is for signatures: "use" absent or "sig", "key_ops" absent or listing "verify". */
static bool jwk_for_signing(json_t *jwk)
{
    json_t *use = json_object_get(jwk, "use"), *ops = json_object_get(jwk, "key_ops"), *op;
    size_t i;
    if (use && !(json_is_string(use) && strcmp(json_string_value(use), "sig") == 0))
        return false;
    if (!ops)
        return true;
    json_array_foreach(ops, i, op)
    {
        if (json_is_string(op) && strcmp(json_string_value(op), "verify") == 0)
            return true;
    }
    return false;
}

/*
 * One JWK into ks (when usable). 0: kept or skipped (the reason of a skip in
 * err); -1: the document is refused (reason in err).
 */
static int jwk_add(struct jwks *ks, json_t *jwk, char *err, size_t errsz)
{
    static const char *const private[] = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"};
    if (!json_is_object(jwk)) {
        say(err, errsz, "a key is not an object");
        return -1;
    }
    for (size_t i = 0; i < sizeof private / sizeof private[0]; i++)
        if (json_object_get(jwk, private[i])) {
            say(err, errsz, "a key holds private or secret material (\"%s\")", private[i]);
            return -1;
        }
    json_t *kty = json_object_get(jwk, "kty"), *kid = json_object_get(jwk, "kid");
    json_t *alg = json_object_get(jwk, "alg");
    if (!json_is_string(kty) || (kid && !json_is_string(kid)) || (alg && !json_is_string(alg)) ||
        (kid && json_string_length(kid) > KID_MAX)) {
        say(err, errsz, "a key has no kty, or a kid or alg that is not a short string");
        return -1;
    }
    const char *t = json_string_value(kty), *a = alg ? json_string_value(alg) : NULL;
    enum jwks_kty kind = strcmp(t, "RSA") == 0 ? JWKS_RSA : strcmp(t, "EC") == 0 ? JWKS_EC : 0;
    const char *want = kind == JWKS_RSA ? "RS256" : "ES256";
    if (!kind || !jwk_for_signing(jwk) || (a && strcmp(a, want) != 0)) {
        say(err, errsz, "skipped a key not for RS256/ES256 signatures");
        return 0;
    }
    if (kind == JWKS_EC) {
        json_t *crv = json_object_get(jwk, "crv");
        if (!json_is_string(crv) || strcmp(json_string_value(crv), "P-256") != 0) {
            say(err, errsz, "skipped an EC key not on P-256");
            return 0;
        }
    }
    EVP_PKEY *pk = NULL;
    int rc = kind == JWKS_RSA ? rsa_key(jwk, &pk, err, errsz) : ec_key(jwk, &pk, err, errsz);
    if (rc != 0)
        return rc > 0 ? 0 : -1;
    struct jwks_key *k = &ks->key[ks->n++];
    k->kid = kid ? xstrdup(json_string_value(kid)) : NULL;
    k->kty = kind;
    k->pkey = pk;
    return 0;
}

int jwks_parse(const char *json, size_t len, struct jwks **out, char *err, size_t errsz)
{
    struct jwks *ks = NULL;
    json_t *doc = NULL, *arr, *jwk;
    json_error_t jerr;
    size_t i;
    int rc = -1;
    *out = NULL;
    if (jsonlimit_check(json, len, JWKS_DEPTH, JWKS_VALUES) != JSONLIMIT_OK ||
        !(doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr)) || !json_is_object(doc)) {
        say(err, errsz, "JWKS is not a JSON object");
        goto out;
    }
    arr = json_object_get(doc, "keys");
    if (!json_is_array(arr) || json_array_size(arr) > JWKS_MAX_KEYS) {
        say(err, errsz, "JWKS \"keys\" is not an array of at most %d keys", JWKS_MAX_KEYS);
        goto out;
    }
    ks = xcalloc(1, sizeof *ks);
    say(err, errsz, "JWKS lists no keys");
    json_array_foreach(arr, i, jwk)
    {
        if (jwk_add(ks, jwk, err, errsz) != 0)
            goto out;
    }
    if (ks->n == 0) {
        char last[160];
        snprintf(last, sizeof last, "%s", err && errsz ? err : "");
        say(err, errsz, "JWKS holds no usable signing key (%s)", last);
        goto out;
    }
    *out = ks;
    ks = NULL;
    rc = 0;
out:
    ERR_clear_error(); /* a refused key queues errors: the thread's next TLS call would see them */
    jwks_free(ks);
    json_decref(doc);
    return rc;
}

void jwks_free(struct jwks *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++) {
        free(k->key[i].kid);
        EVP_PKEY_free(k->key[i].pkey);
    }
    free(k);
}

size_t jwks_count(const struct jwks *k)
{
    return k ? k->n : 0;
}

const struct jwks_key *jwks_key_at(const struct jwks *k, size_t i)
{
    return k && i < k->n ? &k->key[i] : NULL;
}
