/*
 * seal.h - authenticated encryption (AES-256-GCM) of small texts kept in the
 * database that must not be readable there, such as an idempotent answer
 * holding a freshly minted API token secret. The key is derived from the
 * session key file, so it lives outside the database; replacing that file
 * makes older sealed texts unreadable (they are short-lived by design).
 */
#ifndef AIDC_SEAL_H
#define AIDC_SEAL_H

#include <stddef.h>

/* Derive the sealing key from key material (the session key). */
void seal_key_set(const unsigned char *material, size_t len);
/*
 * "seal1:" + base64url(nonce | ciphertext | tag) of text, bound to aad
 * (authenticated, not stored: the same aad must be given to open it);
 * malloc'd, NULL on failure.
 */
char *seal_text(const char *text, const char *aad);
/* The text sealed in s (malloc'd), or NULL if s is not ours, was altered,
 * or was sealed for another aad. */
char *seal_open(const char *s, const char *aad);

#endif
