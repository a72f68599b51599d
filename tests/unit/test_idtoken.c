/*
 * test_idtoken.c - OIDC ID token verification (lib/idtoken.h) and JWKS
 * parsing (lib/jwks.h) against keys made at run time with OpenSSL: tokens are
 * signed here as a provider would sign them, then bent one way at a time.
 */
#include "lib/crypto.h"
#include "lib/idtoken.h"
#include "lib/xalloc.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW    1796368849
#define ISSUER "http://127.0.0.1:17210"
#define CLIENT "aidc-portal"
#define NONCE  "bf4fe74f8add206ad0e126bf9757e357"

/* Made once before the (forked) tests run; read-only afterwards. */
static EVP_PKEY *rsa1, *rsa2, *ec1, *rsa1024;

static void keys_make(void)
{
    rsa1 = EVP_RSA_gen(2048);
    rsa2 = EVP_RSA_gen(2048);
    rsa1024 = EVP_RSA_gen(1024);
    ec1 = EVP_EC_gen("P-256");
    if (!rsa1 || !rsa2 || !rsa1024 || !ec1)
        abort();
}

static void keys_drop(void)
{
    EVP_PKEY_free(rsa1);
    EVP_PKEY_free(rsa2);
    EVP_PKEY_free(rsa1024);
    EVP_PKEY_free(ec1);
}

static char *b64(const void *d, size_t n)
{
    char *s = xmalloc(n / 3 * 4 + 5);
    crypto_b64url_encode(d, n, s, n / 3 * 4 + 5);
    return s;
}

static char *bn_b64(EVP_PKEY *k, const char *param, int pad)
{
    BIGNUM *bn = NULL;
    ck_assert_int_eq(EVP_PKEY_get_bn_param(k, param, &bn), 1);
    unsigned char buf[1024];
    int n = pad ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
    ck_assert_int_gt(n, 0);
    BN_free(bn);
    return b64(buf, (size_t)n);
}

/* A public JWK (JSON text, fresh) for k, with extra members (",..." or ""). */
static char *jwk(EVP_PKEY *k, const char *kid, const char *extra)
{
    char *a, *b, *s;
    if (EVP_PKEY_is_a(k, "EC")) {
        a = bn_b64(k, OSSL_PKEY_PARAM_EC_PUB_X, 32);
        b = bn_b64(k, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
        s = xasprintf("{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"%s\",\"use\":\"sig\","
                      "\"alg\":\"ES256\",\"x\":\"%s\",\"y\":\"%s\"%s}",
                      kid, a, b, extra);
    } else {
        a = bn_b64(k, OSSL_PKEY_PARAM_RSA_N, 0);
        b = bn_b64(k, OSSL_PKEY_PARAM_RSA_E, 0);
        s = xasprintf("{\"kty\":\"RSA\",\"kid\":\"%s\",\"use\":\"sig\",\"alg\":\"RS256\","
                      "\"n\":\"%s\",\"e\":\"%s\"%s}",
                      kid, a, b, extra);
    }
    free(a);
    free(b);
    return s;
}

/* A key set from one or two JWK texts (freed here); NULL second: just one. */
static struct idtoken_keys *keyset(char *k1, char *k2)
{
    char *doc = xasprintf("{\"keys\":[%s%s%s]}", k1, k2 ? "," : "", k2 ? k2 : "");
    struct idtoken_keys *ks = NULL;
    char err[256];
    ck_assert_msg(idtoken_jwks_parse(doc, strlen(doc), &ks, err, sizeof err) == 0, "%s", err);
    free(doc);
    free(k1);
    free(k2);
    return ks;
}

/* The signature of data by k: RS256, or ES256 as JWS writes it (raw r || s). */
static char *sign_b64(EVP_PKEY *k, const char *data)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char sig[1024], raw[64];
    size_t n = sizeof sig;
    ck_assert_int_eq(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k), 1);
    ck_assert_int_eq(EVP_DigestSign(md, sig, &n, (const unsigned char *)data, strlen(data)), 1);
    EVP_MD_CTX_free(md);
    if (!EVP_PKEY_is_a(k, "EC"))
        return b64(sig, n);
    const unsigned char *p = sig;
    ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)n);
    ck_assert_ptr_nonnull(es);
    ck_assert_int_eq(BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32), 32);
    ck_assert_int_eq(BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32), 32);
    ECDSA_SIG_free(es);
    return b64(raw, sizeof raw);
}

/* header.payload (both JSON texts, base64url'd here) and, with k, its signature. */
static char *token_text(const char *hdr, const char *payload, EVP_PKEY *k)
{
    char *h = b64(hdr, strlen(hdr)), *p = b64(payload, strlen(payload));
    char *input = xasprintf("%s.%s", h, p);
    char *sig = k ? sign_b64(k, input) : xstrdup("");
    char *t = xasprintf("%s.%s", input, sig);
    free(h);
    free(p);
    free(input);
    free(sig);
    return t;
}

/* The claims oidc-provider 8.8.1 put in alice's ID token (new reference). */
static json_t *claims_base(void)
{
    json_t *c = json_pack("{s:s, s:s, s:s, s:b, s:[s], s:s, s:s, s:I, s:I, s:s}", "sub",
                          "a1f5e0c2-7d1b-4c1e-9a55-000000000001", "preferred_username", "alice",
                          "email", "alice@example.org", "email_verified", 1, "groups",
                          "physics-staff", "nonce", NONCE, "aud", CLIENT, "exp",
                          (json_int_t)NOW + 3600, "iat", (json_int_t)NOW, "iss", ISSUER);
    ck_assert_ptr_nonnull(c);
    return c;
}

/* A token over claims c (stolen) with the header text, signed by k. */
static char *token(json_t *c, const char *hdr, EVP_PKEY *k)
{
    char *payload = json_dumps(c, JSON_COMPACT);
    ck_assert_ptr_nonnull(payload);
    char *t = token_text(hdr, payload, k);
    free(payload);
    json_decref(c);
    return t;
}

static struct idtoken_expect expect(void)
{
    struct idtoken_expect ex = {ISSUER, CLIENT, NONCE, NULL, NOW, 60};
    return ex;
}

static char why[256];

/* Verify and drop the claims; the reason stays in why. */
static enum idtoken_result check(const char *t, const struct idtoken_keys *ks,
                                 const struct idtoken_expect *ex)
{
    json_t *c = (json_t *)1;
    enum idtoken_result r = idtoken_verify(t, ks, ex, &c, why, sizeof why);
    ck_assert(r == IDTOKEN_OK ? json_is_object(c) : c == NULL);
    json_decref(c);
    return r;
}

/* With the standard expectation, and the token freed. */
static enum idtoken_result check_std(char *t, const struct idtoken_keys *ks)
{
    struct idtoken_expect ex = expect();
    enum idtoken_result r = check(t, ks, &ex);
    free(t);
    return r;
}

#define RS_HDR "{\"alg\":\"RS256\",\"kid\":\"r1\"}"
#define ES_HDR "{\"alg\":\"ES256\",\"kid\":\"e1\"}"

/* r1 (RSA) and e1 (EC). */
static struct idtoken_keys *std_keys(void)
{
    return keyset(jwk(rsa1, "r1", ""), jwk(ec1, "e1", ""));
}

START_TEST(good_rs256_and_es256)
{
    struct idtoken_keys *ks = std_keys();
    struct idtoken_expect ex = expect();
    ck_assert_uint_eq(idtoken_jwks_count(ks), 2);
    char *t = token(claims_base(), RS_HDR, rsa1);
    json_t *c = NULL;
    ck_assert_int_eq(idtoken_verify(t, ks, &ex, &c, why, sizeof why), IDTOKEN_OK);
    ck_assert_str_eq(json_string_value(json_object_get(c, "sub")),
                     "a1f5e0c2-7d1b-4c1e-9a55-000000000001");
    json_decref(c);
    free(t);
    ck_assert_int_eq(check_std(token(claims_base(), ES_HDR, ec1), ks), IDTOKEN_OK);
    /* No kid: the only key of the algorithm's type. */
    ck_assert_int_eq(check_std(token(claims_base(), "{\"alg\":\"RS256\"}", rsa1), ks), IDTOKEN_OK);
    ck_assert_int_eq(check_std(token(claims_base(), "{\"alg\":\"ES256\"}", ec1), ks), IDTOKEN_OK);
    idtoken_jwks_free(ks);
}
END_TEST

START_TEST(oidc_provider_881_shape_and_at_hash)
{
    struct idtoken_keys *ks =
        keyset(jwk(rsa1, "C34yNLS2W6jNNaROwSIKEiBA85XoKMH00-ayUmobe6k", ""), NULL);
    const char *at = "N1x3XzS8fhcT1C7yqNtRkzbZPhl3Ebp7g3Ahy1C5Bsb";
    unsigned char d[32];
    crypto_sha256(at, strlen(at), d);
    char *half = b64(d, 16);
    json_t *c = claims_base();
    json_object_set_new(c, "at_hash", json_string(half));
    free(half);
    char *t = token(c,
                    "{\"alg\":\"RS256\",\"typ\":\"JWT\","
                    "\"kid\":\"C34yNLS2W6jNNaROwSIKEiBA85XoKMH00-ayUmobe6k\"}",
                    rsa1);
    struct idtoken_expect ex = expect();
    ex.access_token = at;
    ck_assert_msg(check(t, ks, &ex) == IDTOKEN_OK, "%s", why);
    ex.access_token = "another-access-token";
    ck_assert_int_eq(check(t, ks, &ex), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "access token hash does not match");
    ck_assert_ptr_null(strstr(why, "eyJ")); /* never the token */
    ex.access_token = NULL;                 /* nothing to compare with */
    ck_assert_int_eq(check(t, ks, &ex), IDTOKEN_OK);
    free(t);
    /* 9.x leaves at_hash out: fine with an access token. */
    t = token(claims_base(),
              "{\"alg\":\"RS256\",\"kid\":\"C34yNLS2W6jNNaROwSIKEiBA85XoKMH00-ayUmobe6k\"}", rsa1);
    ex.access_token = at;
    ck_assert_int_eq(check(t, ks, &ex), IDTOKEN_OK);
    free(t);
    /* A typ that says it is something else (an access token) is refused. */
    ck_assert_int_eq(
        check_std(token(claims_base(), "{\"alg\":\"RS256\",\"typ\":\"at+jwt\"}", rsa1), ks),
        IDTOKEN_INVALID);
    idtoken_jwks_free(ks);
}
END_TEST

START_TEST(alg_none_refused)
{
    struct idtoken_keys *ks = std_keys();
    ck_assert_int_eq(check_std(token(claims_base(), "{\"alg\":\"none\"}", NULL), ks),
                     IDTOKEN_INVALID);
    ck_assert_str_eq(why, "token algorithm is not allowed (RS256 and ES256 only)");
    ck_assert_int_eq(check_std(token(claims_base(), "{\"alg\":\"none\",\"kid\":\"r1\"}", NULL), ks),
                     IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(token(claims_base(), "{\"alg\":\"None\",\"kid\":\"r1\"}", rsa1), ks),
                     IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(token(claims_base(), "{\"kid\":\"r1\"}", rsa1), ks),
                     IDTOKEN_INVALID);
    ck_assert_int_eq(
        check_std(token(claims_base(), "{\"alg\":\"PS256\",\"kid\":\"r1\"}", rsa1), ks),
        IDTOKEN_INVALID);
    idtoken_jwks_free(ks);
}
END_TEST

/* header.payload HMAC-SHA256'd with secret, as an attacker holding the public key would. */
static char *hs256(const void *secret, size_t n)
{
    json_t *c = claims_base();
    char *payload = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    const char *hdr = "{\"alg\":\"HS256\",\"kid\":\"r1\"}";
    char *h = b64(hdr, strlen(hdr)), *p = b64(payload, strlen(payload));
    char *input = xasprintf("%s.%s", h, p);
    unsigned char mac[32];
    unsigned int maclen = sizeof mac;
    ck_assert_ptr_nonnull(HMAC(EVP_sha256(), secret, (int)n, (const unsigned char *)input,
                               strlen(input), mac, &maclen));
    char *m = b64(mac, maclen);
    char *t = xasprintf("%s.%s", input, m);
    free(h);
    free(p);
    free(input);
    free(m);
    free(payload);
    return t;
}

START_TEST(hs256_with_public_key_refused)
{
    struct idtoken_keys *ks = std_keys();
    BIO *bio = BIO_new(BIO_s_mem());
    ck_assert_int_eq(PEM_write_bio_PUBKEY(bio, rsa1), 1);
    char *pem = NULL;
    long pemlen = BIO_get_mem_data(bio, &pem);
    ck_assert_int_eq(check_std(hs256(pem, (size_t)pemlen), ks), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "token algorithm is not allowed (RS256 and ES256 only)");
    BIO_free(bio);
    BIGNUM *bn = NULL;
    unsigned char n[512];
    ck_assert_int_eq(EVP_PKEY_get_bn_param(rsa1, OSSL_PKEY_PARAM_RSA_N, &bn), 1);
    int nlen = BN_bn2bin(bn, n);
    BN_free(bn);
    ck_assert_int_eq(check_std(hs256(n, (size_t)nlen), ks), IDTOKEN_INVALID);
    idtoken_jwks_free(ks);
}
END_TEST

START_TEST(alg_must_fit_the_key)
{
    struct idtoken_keys *ks = std_keys();
    /* RS256 naming the EC key, signed by the RSA key or not at all. */
    ck_assert_int_eq(
        check_std(token(claims_base(), "{\"alg\":\"RS256\",\"kid\":\"e1\"}", rsa1), ks),
        IDTOKEN_INVALID);
    ck_assert_str_eq(why, "token algorithm does not fit the provider's key");
    ck_assert_int_eq(check_std(token(claims_base(), "{\"alg\":\"ES256\",\"kid\":\"r1\"}", ec1), ks),
                     IDTOKEN_INVALID);
    /* An RSA key that declares alg RS256 only, in a set on its own: no EC key to fall back on. */
    struct idtoken_keys *rs = keyset(jwk(rsa1, "r1", ""), NULL);
    ck_assert_int_eq(check_std(token(claims_base(), "{\"alg\":\"ES256\"}", ec1), rs),
                     IDTOKEN_INVALID);
    idtoken_jwks_free(rs);
    idtoken_jwks_free(ks);
}
END_TEST

START_TEST(unknown_kid_and_rotation)
{
    struct idtoken_keys *one = keyset(jwk(rsa1, "r1", ""), NULL);
    struct idtoken_keys *both = keyset(jwk(rsa2, "r2", ""), jwk(rsa1, "r1", ""));
    const char *h2 = "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"r2\"}";
    ck_assert_int_eq(check_std(token(claims_base(), h2, rsa2), one), IDTOKEN_KID_UNKNOWN);
    ck_assert_str_eq(why, "token key id is not in the provider's key set");
    /* after the refetch: the new key signs, the old one still verifies */
    ck_assert_int_eq(check_std(token(claims_base(), h2, rsa2), both), IDTOKEN_OK);
    ck_assert_int_eq(check_std(token(claims_base(), RS_HDR, rsa1), both), IDTOKEN_OK);
    /* a kid naming the other key does not verify another key's signature */
    ck_assert_int_eq(check_std(token(claims_base(), RS_HDR, rsa2), both), IDTOKEN_INVALID);
    /* no kid and two RSA keys: no guessing, not even the first one */
    ck_assert_int_eq(check_std(token(claims_base(), "{\"alg\":\"RS256\"}", rsa2), both),
                     IDTOKEN_INVALID);
    ck_assert_str_eq(why, "token names no key id and several keys could have signed it");
    /* an unknown kid even with alg none is refused for the alg first */
    ck_assert_int_eq(
        check_std(token(claims_base(), "{\"alg\":\"none\",\"kid\":\"zz\"}", NULL), one),
        IDTOKEN_INVALID);
    idtoken_jwks_free(one);
    idtoken_jwks_free(both);
}
END_TEST

START_TEST(tampering)
{
    struct idtoken_keys *ks = std_keys();
    EVP_PKEY *by[2] = {rsa1, ec1};
    const char *hdr[2] = {RS_HDR, ES_HDR};
    for (int i = 0; i < 2; i++) {
        char *t = token(claims_base(), hdr[i], by[i]);
        json_t *c = claims_base();
        json_object_set_new(c, "sub", json_string("mallory"));
        char *other = token(c, hdr[i], by[i]);
        /* alice's signature on mallory's claims */
        char *mix = xasprintf("%.*s%s", (int)(strrchr(other, '.') - other), other, strrchr(t, '.'));
        ck_assert_int_eq(check_std(mix, ks), IDTOKEN_INVALID);
        ck_assert_str_eq(why, "token signature is not valid");
        ck_assert_uint_eq(ERR_peek_error(), 0); /* nothing left queued for the thread's TLS */
        char *flip = xstrdup(t);
        char *s = strrchr(flip, '.') + 5;
        *s = *s == 'A' ? 'B' : 'A';
        ck_assert_int_eq(check_std(flip, ks), IDTOKEN_INVALID);
        char *cut = xstrdup(t);
        cut[strlen(cut) - 4] = '\0';
        ck_assert_int_eq(check_std(cut, ks), IDTOKEN_INVALID);
        char *nosig = xstrdup(t);
        strrchr(nosig, '.')[1] = '\0';
        ck_assert_int_eq(check_std(nosig, ks), IDTOKEN_INVALID);
        free(other);
        free(t);
    }
    idtoken_jwks_free(ks);
}
END_TEST

static enum idtoken_result with_claim(const char *name, json_t *v)
{
    struct idtoken_keys *ks = std_keys();
    json_t *c = claims_base();
    if (v)
        json_object_set_new(c, name, v);
    else
        json_object_del(c, name);
    enum idtoken_result r = check_std(token(c, RS_HDR, rsa1), ks);
    idtoken_jwks_free(ks);
    return r;
}

START_TEST(times)
{
    ck_assert_int_eq(with_claim("exp", json_integer(NOW - 61)), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "token expired");
    ck_assert_int_eq(with_claim("exp", json_integer(NOW - 30)), IDTOKEN_OK); /* within leeway */
    ck_assert_int_eq(with_claim("exp", json_real(NOW + 0.5)), IDTOKEN_OK);
    ck_assert_int_eq(with_claim("exp", NULL), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("exp", json_string("2030-01-01")), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("iat", json_integer(NOW + 120)), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "token issued in the future");
    ck_assert_int_eq(with_claim("iat", json_integer(NOW + 30)), IDTOKEN_OK);
    ck_assert_int_eq(with_claim("iat", NULL), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("nbf", json_integer(NOW + 120)), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "token not valid yet");
    ck_assert_int_eq(with_claim("nbf", json_integer(NOW + 30)), IDTOKEN_OK);
    ck_assert_int_eq(with_claim("nbf", json_integer(NOW - 30)), IDTOKEN_OK);
    ck_assert_int_eq(with_claim("nbf", json_null()), IDTOKEN_INVALID);
    /* no leeway: exactly now is expired */
    struct idtoken_keys *ks = std_keys();
    json_t *c = claims_base();
    json_object_set_new(c, "exp", json_integer(NOW));
    char *t = token(c, RS_HDR, rsa1);
    struct idtoken_expect ex = expect();
    ex.leeway_s = -5;
    ck_assert_int_eq(check(t, ks, &ex), IDTOKEN_INVALID);
    ex.leeway_s = 1;
    ck_assert_int_eq(check(t, ks, &ex), IDTOKEN_OK);
    free(t);
    idtoken_jwks_free(ks);
}
END_TEST

START_TEST(issuer)
{
    ck_assert_int_eq(with_claim("iss", json_string(ISSUER "/")), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "issuer is not the configured provider");
    ck_assert_int_eq(with_claim("iss", json_string("http://127.0.0.1:17211")), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("iss", json_string("HTTP://127.0.0.1:17210")), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("iss", NULL), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("iss", json_pack("[s]", ISSUER)), IDTOKEN_INVALID);
}
END_TEST

START_TEST(audience)
{
    ck_assert_int_eq(with_claim("aud", json_string("other-client")), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "audience does not name this client");
    ck_assert_int_eq(with_claim("aud", NULL), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("aud", json_pack("[]")), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("aud", json_pack("[s,s]", "a", "b")), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("aud", json_pack("[s]", CLIENT)), IDTOKEN_OK);
    ck_assert_int_eq(with_claim("aud", json_pack("[s,i]", CLIENT, 1)), IDTOKEN_INVALID);
    /* several audiences: azp must be this client */
    ck_assert_int_eq(with_claim("aud", json_pack("[s,s]", "other", CLIENT)), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "authorized party is not this client");
    struct idtoken_keys *ks = std_keys();
    json_t *c = claims_base();
    json_object_set_new(c, "aud", json_pack("[s,s]", "other", CLIENT));
    json_object_set_new(c, "azp", json_string("other"));
    ck_assert_int_eq(check_std(token(json_incref(c), RS_HDR, rsa1), ks), IDTOKEN_INVALID);
    json_object_set_new(c, "azp", json_string(CLIENT));
    ck_assert_int_eq(check_std(token(c, RS_HDR, rsa1), ks), IDTOKEN_OK);
    idtoken_jwks_free(ks);
    ck_assert_int_eq(with_claim("azp", json_string("other")), IDTOKEN_INVALID);
}
END_TEST

START_TEST(nonce_and_sub)
{
    ck_assert_int_eq(with_claim("nonce", json_string("bf4fe74f8add206ad0e126bf9757e358")),
                     IDTOKEN_INVALID);
    ck_assert_str_eq(why, "nonce does not match the login");
    ck_assert_int_eq(with_claim("nonce", NULL), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("nonce", json_integer(1)), IDTOKEN_INVALID);
    struct idtoken_keys *ks = std_keys();
    char *t = token(claims_base(), RS_HDR, rsa1);
    struct idtoken_expect ex = expect();
    ex.nonce = NULL; /* a caller that lost its nonce gets no pass */
    ck_assert_int_eq(check(t, ks, &ex), IDTOKEN_INVALID);
    free(t);
    idtoken_jwks_free(ks);

    ck_assert_int_eq(with_claim("sub", NULL), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("sub", json_string("")), IDTOKEN_INVALID);
    ck_assert_int_eq(with_claim("sub", json_integer(42)), IDTOKEN_INVALID);
    char long_sub[257];
    memset(long_sub, 'x', 256);
    long_sub[256] = '\0';
    ck_assert_int_eq(with_claim("sub", json_string(long_sub)), IDTOKEN_INVALID);
    long_sub[255] = '\0';
    ck_assert_int_eq(with_claim("sub", json_string(long_sub)), IDTOKEN_OK);
}
END_TEST

START_TEST(malformed)
{
    struct idtoken_keys *ks = std_keys();
    char *t = token(claims_base(), RS_HDR, rsa1);
    char *first = strchr(t, '.'), *last = strrchr(t, '.');
    ck_assert_int_eq(check_std(xasprintf("%.*s", (int)(last - t), t), ks), IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(xasprintf("%s.%s", t, last + 1), ks), IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(xasprintf("%s.", t), ks), IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(xstrdup(""), ks), IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(xstrdup(".."), ks), IDTOKEN_INVALID);
    /* base64 rather than base64url, and '=' padding (the signature is 256 bytes: "==") */
    char *std = xstrdup(t);
    std[(first - t) / 2] = '+';
    ck_assert_int_eq(check_std(std, ks), IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(xasprintf("%s==", t), ks), IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(xasprintf("%.*s=%s", (int)(first - t), t, first), ks),
                     IDTOKEN_INVALID);
    /* signed, but not a claims object */
    ck_assert_int_eq(check_std(token_text(RS_HDR, "[1,2]", rsa1), ks), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "token claims are not a JSON object");
    ck_assert_int_eq(check_std(token_text(RS_HDR, "\"sub\"", rsa1), ks), IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(token_text(RS_HDR, "{\"sub\":1", rsa1), ks), IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(token_text("[\"RS256\"]", "{}", rsa1), ks), IDTOKEN_INVALID);
    ck_assert_int_eq(check_std(token_text("not json", "{}", rsa1), ks), IDTOKEN_INVALID);
    /* duplicate members: which aud or alg counts is up to the parser, so neither */
    json_t *c = claims_base();
    char *pl = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    char *twice = xasprintf("{\"aud\":\"x\",%s", pl + 1);
    ck_assert_int_eq(check_std(token_text(RS_HDR, twice, rsa1), ks), IDTOKEN_INVALID);
    ck_assert_int_eq(
        check_std(token_text("{\"alg\":\"RS256\",\"alg\":\"none\",\"kid\":\"r1\"}", pl, rsa1), ks),
        IDTOKEN_INVALID);
    ck_assert_int_eq(
        check_std(token_text("{\"alg\":\"RS256\",\"kid\":\"r1\",\"crit\":[\"exp\"]}", pl, rsa1),
                  ks),
        IDTOKEN_INVALID);
    /* a deep payload is refused before parsing */
    char deep[400];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    ck_assert_int_eq(check_std(token_text(RS_HDR, deep, rsa1), ks), IDTOKEN_INVALID);
    free(twice);
    free(pl);
    /* huge: a big claim pushes the token past 16 KiB */
    c = claims_base();
    char *big = xmalloc(16384);
    memset(big, 'g', 16383);
    big[16383] = '\0';
    json_object_set_new(c, "groups", json_string(big));
    free(big);
    ck_assert_int_eq(check_std(token(c, RS_HDR, rsa1), ks), IDTOKEN_INVALID);
    ck_assert_str_eq(why, "token longer than 16384 bytes");
    ck_assert_int_eq(check(NULL, ks, NULL), IDTOKEN_INVALID);
    json_t *none = (json_t *)1;
    ck_assert_int_eq(idtoken_verify("a.b.c", ks, NULL, &none, NULL, 0), IDTOKEN_INVALID);
    ck_assert_ptr_null(none);
    free(t);
    idtoken_jwks_free(ks);
}
END_TEST

/* idtoken_jwks_parse on a document text: 0 or -1 (reason in why); the set is dropped. */
static int parse(const char *doc, size_t *count)
{
    struct idtoken_keys *ks = NULL;
    int rc = idtoken_jwks_parse(doc, strlen(doc), &ks, why, sizeof why);
    ck_assert(rc == 0 ? ks != NULL : ks == NULL);
    if (count)
        *count = idtoken_jwks_count(ks);
    idtoken_jwks_free(ks);
    return rc;
}

/* A JWKS of the JWK texts k1 and k2 (freed here). */
static int parse_keys(char *k1, char *k2, size_t *count)
{
    char *doc = xasprintf("{\"keys\":[%s%s%s]}", k1, k2 ? "," : "", k2 ? k2 : "");
    int rc = parse(doc, count);
    free(doc);
    free(k1);
    free(k2);
    return rc;
}

/* Overwrite the first from in s with to (same length: the text stays the same size). */
static void patch(char *s, const char *from, const char *to)
{
    char *at = strstr(s, from);
    ck_assert_ptr_nonnull(at);
    ck_assert_uint_eq(strlen(from), strlen(to));
    for (size_t i = 0; to[i]; i++)
        at[i] = to[i];
}

START_TEST(jwks_refusals)
{
    size_t n = 0;
    /* private members: the provider leaked its key, trust none of the set */
    ck_assert_int_eq(parse_keys(jwk(rsa1, "r1", ",\"d\":\"AQAB\""), jwk(rsa2, "r2", ""), NULL), -1);
    ck_assert_ptr_nonnull(strstr(why, "private"));
    ck_assert_int_eq(parse_keys(jwk(ec1, "e1", ",\"d\":\"AQAB\""), NULL, NULL), -1);
    ck_assert_int_eq(parse_keys(xstrdup("{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}"), NULL, NULL), -1);
    /* use enc: skipped; alone it leaves nothing usable */
    char *enc = jwk(rsa2, "enc1", "");
    patch(enc, "\"sig\"", "\"enc\"");
    ck_assert_int_eq(parse_keys(xstrdup(enc), NULL, NULL), -1);
    ck_assert_int_eq(parse_keys(enc, jwk(rsa1, "r1", ""), &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(parse_keys(jwk(rsa1, "r1", ",\"key_ops\":[\"encrypt\"]"), NULL, NULL), -1);
    ck_assert_int_eq(parse_keys(jwk(rsa1, "r1", ",\"key_ops\":[\"verify\"]"), NULL, NULL), 0);
    /* bad n, bad e (e = 1 would make a padded hash its own signature) */
    ck_assert_int_eq(parse("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"!!!\",\"e\":\"AQAB\"}]}", NULL),
                     -1);
    ck_assert_int_eq(parse("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB==\",\"e\":\"AQAB\"}]}", NULL),
                     -1);
    ck_assert_int_eq(parse("{\"keys\":[{\"kty\":\"RSA\",\"e\":\"AQAB\"}]}", NULL), -1);
    char *k = jwk(rsa1, "r1", "");
    patch(k, "\"e\":\"AQAB\"", "\"e\":\"AQ\"  ");
    ck_assert_int_eq(parse_keys(k, NULL, NULL), -1);
    /* RSA-1024: skipped; alone, nothing usable, and why says so */
    ck_assert_int_eq(parse_keys(jwk(rsa1024, "weak", ""), NULL, NULL), -1);
    ck_assert_ptr_nonnull(strstr(why, "2048"));
    ck_assert_int_eq(parse_keys(jwk(rsa1024, "weak", ""), jwk(rsa1, "r1", ""), &n), 0);
    ck_assert_uint_eq(n, 1);
    /* EC: a point off the curve, another curve, a short coordinate */
    char *ec = jwk(ec1, "e1", "");
    char *y = strstr(ec, "\"y\":\"") + 5;
    y[3] = y[3] == 'A' ? 'B' : 'A';
    ck_assert_int_eq(parse_keys(ec, NULL, NULL), -1);
    ck_assert_uint_eq(ERR_peek_error(), 0);
    ec = jwk(ec1, "e1", "");
    patch(ec, "P-256", "P-384");
    ck_assert_int_eq(parse_keys(ec, NULL, NULL), -1);
    ck_assert_int_eq(parse("{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AQAB\","
                           "\"y\":\"AQAB\"}]}",
                           NULL),
                     -1);
    /* an RSA key for another algorithm, an unknown type: skipped */
    k = jwk(rsa1, "r1", "");
    patch(k, "RS256", "RS512");
    ck_assert_int_eq(parse_keys(k, jwk(ec1, "e1", ""), &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(parse_keys(xstrdup("{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AA\"}"),
                                jwk(ec1, "e1", ""), &n),
                     0);
    ck_assert_uint_eq(n, 1);
    /* the document itself */
    ck_assert_int_eq(parse("", NULL), -1);
    struct idtoken_keys *none = NULL; /* no room for a reason: still an answer */
    ck_assert_int_eq(idtoken_jwks_parse("{\"keys\":[]}", 11, &none, NULL, 0), -1);
    ck_assert_ptr_null(none);
    ck_assert_int_eq(parse("[]", NULL), -1);
    ck_assert_int_eq(parse("{\"keys\":{}}", NULL), -1);
    ck_assert_int_eq(parse("{\"keys\":[]}", NULL), -1);
    ck_assert_int_eq(parse("{\"keys\":[1]}", NULL), -1);
    ck_assert_int_eq(parse("{\"keys\":[{\"kid\":\"x\"}]}", NULL), -1);
    ck_assert_int_eq(parse("{\"keys\":[{\"kty\":\"RSA\",\"kid\":5}]}", NULL), -1);
    char *many = xstrdup("{\"keys\":["); /* 33 keys: one too many */
    char *one = jwk(ec1, "e", "");
    for (int i = 0; i < 33; i++) {
        char *next = xasprintf("%s%s%s", many, i ? "," : "", one);
        free(many);
        many = next;
    }
    char *doc = xasprintf("%s]}", many);
    ck_assert_int_eq(parse(doc, NULL), -1);
    free(doc);
    free(many);
    free(one);
}
END_TEST

START_TEST(weak_key_never_verifies)
{
    struct idtoken_keys *ks = keyset(jwk(rsa1024, "weak", ""), jwk(rsa1, "r1", ""));
    ck_assert_int_eq(
        check_std(token(claims_base(), "{\"alg\":\"RS256\",\"kid\":\"weak\"}", rsa1024), ks),
        IDTOKEN_KID_UNKNOWN);
    idtoken_jwks_free(ks);
}
END_TEST

START_TEST(pkce_s256)
{
    char out[44];
    /* RFC 7636, appendix B */
    idtoken_pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", out, sizeof out);
    ck_assert_str_eq(out, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}
END_TEST

int main(void)
{
    keys_make();
    Suite *s = suite_create("idtoken");
    TCase *tc = tcase_create("idtoken");
    tcase_add_test(tc, good_rs256_and_es256);
    tcase_add_test(tc, oidc_provider_881_shape_and_at_hash);
    tcase_add_test(tc, alg_none_refused);
    tcase_add_test(tc, hs256_with_public_key_refused);
    tcase_add_test(tc, alg_must_fit_the_key);
    tcase_add_test(tc, unknown_kid_and_rotation);
    tcase_add_test(tc, tampering);
    tcase_add_test(tc, times);
    tcase_add_test(tc, issuer);
    tcase_add_test(tc, audience);
    tcase_add_test(tc, nonce_and_sub);
    tcase_add_test(tc, malformed);
    tcase_add_test(tc, jwks_refusals);
    tcase_add_test(tc, weak_key_never_verifies);
    tcase_add_test(tc, pkce_s256);
    suite_add_tcase(s, tc);
    int rc = suite_run(s);
    keys_drop();
    return rc;
}
