/*
 * jwks.h - a JSON Web Key Set (RFC 7517) reduced to the public keys that can
 * check RS256 and ES256 signatures; lib/idtoken.h verifies ID tokens with
 * them (and wraps this set as its struct idtoken_keys).
 */
#ifndef AIDC_JWKS_H
#define AIDC_JWKS_H

#include <openssl/evp.h>
#include <stddef.h>

struct jwks; /* immutable once parsed: may be shared by threads */

enum jwks_kty { JWKS_RSA = 1, JWKS_EC };

struct jwks_key {
    char *kid;         /* NULL when the JWK has none */
    enum jwks_kty kty; /* RSA: for RS256 only; EC (P-256): for ES256 only */
    EVP_PKEY *pkey;    /* the public key, owned by the set */
};

/*
 * Parse a JWKS document. Keeps RSA keys (n, e; 2048..8192 bits, e odd >= 3)
 * and EC P-256 keys (crv, x, y), with their kid. Skips keys whose "use" is not
 * "sig", whose "key_ops" lacks "verify", whose alg is not RS256 (RSA) / ES256
 * (EC), other key types and RSA keys under 2048 bits. Refuses the document
 * (-1) for a key with private or secret members (d, p, q, dp, dq, qi, oth,
 * k), a malformed RSA or EC key, more than 32 keys, or no usable key (err
 * then says why, naming the last skip). 0 and *out (err may name a skipped
 * key), or -1 and a reason in err.
 */
int jwks_parse(const char *json, size_t len, struct jwks **out, char *err, size_t errsz);
void jwks_free(struct jwks *k);
size_t jwks_count(const struct jwks *k);
/* The i-th kept key (in document order), or NULL past the end. */
const struct jwks_key *jwks_key_at(const struct jwks *k, size_t i);

/*
 * s[0..n) as JOSE writes base64url (the URL-safe alphabet only, no '='
 * padding) decoded into a fresh buffer of *len bytes (free it),
 * or NULL.
 */
unsigned char *jwks_b64u_decode(const char *s, size_t n, size_t *len);

#endif
