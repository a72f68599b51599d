/*
 * fuzz_idtoken.c - OpenID Connect ID tokens and key sets (lib/idtoken.c,
 * lib/jwks.c): what an identity provider, or whoever answers in its place,
 * hands the relying party.
 *
 * The input is used four ways: as a JWKS document; as an ID token checked
 * against fixed keys (an RSA and a P-256 key made at start); as the claims of
 * a token those keys really sign, so the claim checks behind the signature
 * are reached; and as the header of such a token (alg, kid, typ, crit).
 * Whatever verifies must meet the contract: issuer, audience, nonce, times
 * and subject as expected.
 */
#include "fuzz.h"

#include "lib/crypto.h"
#include "lib/idtoken.h"

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <time.h>

#define ISSUER "https://op.example"
#define CLIENT "aidc-portal"
#define NONCE  "n-0123456789"

static const time_t now = 1764662400; /* 2025-12-02: fixed, so a run repeats */
static EVP_PKEY *ec, *rsa;
static struct idtoken_keys *keys;

static void b64(const void *d, size_t n, char *out, size_t outsz)
{
    if (crypto_b64url_encode(d, n, out, outsz) != (n * 4 + 2) / 3)
        abort();
}

static void coord(EVP_PKEY *k, const char *param, int pad, char *out, size_t outsz)
{
    BIGNUM *bn = NULL;
    unsigned char buf[512];
    int n;
    if (EVP_PKEY_get_bn_param(k, param, &bn) != 1 ||
        (n = pad ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf)) <= 0)
        abort();
    BN_free(bn);
    b64(buf, (size_t)n, out, outsz);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char x[64], y[64], n[700], e[16], doc[2048], err[256];
    ec = EVP_EC_gen("P-256");
    rsa = EVP_RSA_gen(2048);
    if (!ec || !rsa)
        abort();
    coord(ec, OSSL_PKEY_PARAM_EC_PUB_X, 32, x, sizeof x);
    coord(ec, OSSL_PKEY_PARAM_EC_PUB_Y, 32, y, sizeof y);
    coord(rsa, OSSL_PKEY_PARAM_RSA_N, 0, n, sizeof n);
    coord(rsa, OSSL_PKEY_PARAM_RSA_E, 0, e, sizeof e);
    int len = snprintf(doc, sizeof doc,
                       "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"e1\",\"x\":\"%s\","
                       "\"y\":\"%s\"},{\"kty\":\"RSA\",\"kid\":\"r1\",\"alg\":\"RS256\","
                       "\"use\":\"sig\",\"n\":\"%s\",\"e\":\"%s\"}]}",
                       x, y, n, e);
    if (len < 0 || (size_t)len >= sizeof doc ||
        idtoken_jwks_parse(doc, (size_t)len, &keys, err, sizeof err) != 0 ||
        idtoken_jwks_count(keys) != 2)
        abort();
    return 0;
}

/* header.payload signed ES256 by the fixed key (JWS raw r || s), malloc'd. */
static char *signed_token(const char *hdr, const char *payload)
{
    size_t hn = strlen(hdr), pn = strlen(payload);
    size_t cap = (hn + pn) / 3 * 4 + 128;
    char *t = malloc(cap);
    unsigned char der[80], raw[64];
    size_t dlen = sizeof der;
    if (!t)
        abort();
    size_t o = crypto_b64url_encode((const unsigned char *)hdr, hn, t, cap);
    t[o++] = '.';
    o += crypto_b64url_encode((const unsigned char *)payload, pn, t + o, cap - o);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, ec) != 1 ||
        EVP_DigestSign(md, der, &dlen, (const unsigned char *)t, o) != 1)
        abort();
    EVP_MD_CTX_free(md);
    const unsigned char *p = der;
    ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)dlen);
    if (!es || BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32) != 32 ||
        BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32) != 32)
        abort();
    ECDSA_SIG_free(es);
    t[o++] = '.';
    crypto_b64url_encode(raw, sizeof raw, t + o, cap - o);
    return t;
}

/* Verify t; what passes must be what the contract promises. */
static void verify(const char *t)
{
    struct idtoken_expect ex = {ISSUER, CLIENT, NONCE, "access-token", now, 60};
    json_t *c = NULL;
    char why[128];
    if (idtoken_verify(t, keys, &ex, &c, why, sizeof why) != IDTOKEN_OK) {
        if (c)
            abort();
        return;
    }
    json_t *sub = json_object_get(c, "sub");
    if (strcmp(json_string_value(json_object_get(c, "iss")), ISSUER) != 0 ||
        strcmp(json_string_value(json_object_get(c, "nonce")), NONCE) != 0 ||
        !json_is_string(sub) || json_string_length(sub) == 0 || json_string_length(sub) > 255 ||
        !(json_number_value(json_object_get(c, "exp")) > (double)now - 60) ||
        !(json_number_value(json_object_get(c, "iat")) <= (double)now + 60))
        abort();
    json_decref(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct idtoken_keys *k = NULL;
    char err[256], pkce[44];
    if (idtoken_jwks_parse((const char *)data, size, &k, err, sizeof err) == 0 &&
        (idtoken_jwks_count(k) == 0 || idtoken_jwks_count(k) > 32))
        abort();
    idtoken_jwks_free(k);

    char *s = fuzz_str(data, size);
    verify(s);
    char *t = signed_token("{\"alg\":\"ES256\",\"kid\":\"e1\"}", s);
    verify(t);
    free(t);
    t = signed_token(s, "{\"iss\":\"" ISSUER "\",\"aud\":\"" CLIENT "\",\"sub\":\"u\","
                        "\"nonce\":\"" NONCE "\",\"iat\":1764662400,\"exp\":1764666000}");
    verify(t);
    free(t);
    idtoken_pkce_challenge(s, pkce, sizeof pkce);
    if (strlen(pkce) != 43)
        abort();
    free(s);
    return 0;
}
