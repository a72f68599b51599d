/*
 * sign.h - the key that signs audit checkpoints, kept outside the database
 * (AIDC_AUDIT_KEY_FILE), so that whoever can rewrite the database - a
 * superuser recomputing every hash - still cannot forge a checkpoint.
 *
 * Two kinds of key file: an Ed25519 private key in PEM (preferred: the
 * public key can be handed to auditors, who verify exports offline without
 * any secret), or a file of at least 32 random bytes used as an HMAC-SHA256
 * key (verifying then needs the same file). A public-key PEM file loads as a
 * verify-only key (aidcd audit verify-export --key PUB.pem).
 */
#ifndef AIDC_AUDIT_SIGN_H
#define AIDC_AUDIT_SIGN_H

#include <stdbool.h>
#include <stddef.h>

struct sign_key;

/* Load path; NULL with a one-line reason in err. */
struct sign_key *sign_key_load(const char *path, char *err, size_t errsz);
void sign_key_free(struct sign_key *k);
/* Write a new Ed25519 private key to path (mode 0600, never overwriting). 0 or -1 (err set). */
int sign_key_generate(const char *path, char *err, size_t errsz);

/* "ed25519" or "hmac-sha256". */
const char *sign_key_alg(const struct sign_key *k);
/* A short stable id of the key (16 hex digits of a hash of its public part). */
const char *sign_key_id(const struct sign_key *k);
/* The public key as PEM (Ed25519 only; NULL for HMAC). Owned by k. */
const char *sign_key_public_pem(const struct sign_key *k);
/* Whether k can sign (a private or HMAC key, not a public key). */
bool sign_key_can_sign(const struct sign_key *k);

/* Sign msg; the signature (at most 64 bytes) goes to sig. Returns its length or -1. */
int sign_message(const struct sign_key *k, const char *msg, unsigned char sig[64]);
/* True if sig (len bytes) is k's signature of msg. */
bool sign_verify(const struct sign_key *k, const char *msg, const unsigned char *sig, size_t len);

#endif
