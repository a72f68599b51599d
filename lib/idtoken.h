/*
 * idtoken.h - OpenID Connect ID tokens as a relying party checks them: the
 * provider's JWKS, the signature of a compact JWS (RS256 or ES256 only) and
 * the claims (iss, aud/azp, exp, iat, nbf, nonce, sub, at_hash); plus the
 * PKCE S256 challenge.
 *
 * Written on OpenSSL rather than libjwt, which validates no claims and takes
 * the algorithm from the token (docs/design.md, "Identity"). Pure: no I/O, no
 * clock (the caller passes now), no global state; keys are immutable once
 * parsed, so one struct idtoken_keys may be shared by threads.
 */
#ifndef AIDC_IDTOKEN_H
#define AIDC_IDTOKEN_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

struct idtoken_keys; /* a parsed JWKS (opaque) */

/*
 * Parse a JWKS document (JSON text). Keeps the usable signing keys: RSA (n, e;
 * >= 2048 bits) and EC P-256 (crv, x, y), each with its kid (may be absent)
 * and alg (may be absent). Skipped: keys with "use" other than "sig", other
 * key types ("oct" is never an HMAC secret here), an alg other than RS256 /
 * ES256, RSA keys under 2048 bits. Refused (-1): a key with private members
 * (the provider leaked it: anyone could sign), a malformed member of an RSA or
 * EC key, more than 32 keys, no usable key at all.
 * 0 and *out (free with idtoken_jwks_free), or -1 with a reason in err.
 * The caller bounds the document's size.
 */
int idtoken_jwks_parse(const char *json, size_t len, struct idtoken_keys **out, char *err,
                       size_t errsz);
void idtoken_jwks_free(struct idtoken_keys *k);
/* How many usable keys were kept. */
size_t idtoken_jwks_count(const struct idtoken_keys *k);

struct idtoken_expect {
    const char *issuer;       /* exact match, byte for byte */
    const char *client_id;    /* aud equals it or (array) contains it; azp == client_id when
                                 several audiences (and whenever azp is present) */
    const char *nonce;        /* must equal the token's nonce; NULL refuses every token */
    const char *access_token; /* when not NULL and the token has at_hash: at_hash must match
                                 (left half of SHA-256, b64url) */
    time_t now;
    int leeway_s; /* skew allowed for exp, iat, nbf (60); negative counts as 0 */
};

enum idtoken_result { IDTOKEN_OK = 0, IDTOKEN_KID_UNKNOWN, IDTOKEN_INVALID };

/*
 * Verify a compact JWS ID token: alg RS256 or ES256 only (refused: "none",
 * HS*, everything else, a header alg that does not fit the key's kty/alg, a
 * "crit" header, a typ other than JWT); kid selects the key (no kid: the only
 * key of a fitting type, when exactly one); a kid not in keys ->
 * IDTOKEN_KID_UNKNOWN (the caller refetches the JWKS once and retries);
 * signature (RS256: PKCS#1 v1.5 SHA-256; ES256: the raw r||s, 64 bytes);
 * claims: iss, aud/azp, exp (required, > now - leeway), iat (required, <= now
 * + leeway), nbf (if present, <= now + leeway), nonce, sub (required,
 * non-empty string <= 255 bytes), at_hash. Duplicate members in header or
 * payload are refused (parsers disagree on which one counts).
 * On IDTOKEN_OK *claims is the payload object (a new reference); otherwise
 * *claims is NULL and why holds a short English reason, never the token.
 * Limits: token <= 16 KiB, header and payload JSON depth and size bounded.
 */
enum idtoken_result idtoken_verify(const char *jwt, const struct idtoken_keys *keys,
                                   const struct idtoken_expect *ex, json_t **claims, char *why,
                                   size_t whysz);

/* PKCE S256: BASE64URL(SHA256(verifier)) without padding, into out (>= 44 bytes). */
void idtoken_pkce_challenge(const char *verifier, char *out, size_t outsz);

#endif
