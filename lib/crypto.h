/*
 * crypto.h - the small cryptographic helpers aidc needs, on OpenSSL 3:
 * random bytes, base64url, SHA-256, UUIDs, constant-time comparison.
 */
#ifndef AIDC_CRYPTO_H
#define AIDC_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fill buf with n cryptographically random bytes. 0 or AIDC_EINTERNAL. */
int crypto_random(void *buf, size_t n);
/* base64url without padding; out needs 4*ceil(n/3)+1 bytes. Returns length. */
size_t crypto_b64url_encode(const unsigned char *in, size_t n, char *out, size_t outsz);
/* Decode base64url (padding optional). Returns decoded length or -1. */
long crypto_b64url_decode(const char *in, size_t n, unsigned char *out, size_t outsz);
/* SHA-256 of data as 64 lowercase hex characters (+NUL) in out[65]. */
void crypto_sha256_hex(const void *data, size_t n, char out[65]);
void crypto_sha256(const void *data, size_t n, unsigned char out[32]);
/* A new random (version 4) UUID in canonical text form, out[37]. */
void crypto_uuid_new(char out[37]);
/* True for a canonical lowercase or uppercase UUID text (8-4-4-4-12 hex). */
bool crypto_uuid_valid(const char *s);
/* Compare n bytes in time independent of their contents. */
bool crypto_equal(const void *a, const void *b, size_t n);

#endif
