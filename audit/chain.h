/*
 * chain.h - the audit hash chain's arithmetic, shared by the sealer, the
 * verifier and the offline export check, so all three agree byte for byte.
 *
 * canonical(event) = the event object as the API shows it, including its
 * chain position "seq" and without "hash" and "prev_hash", encoded by jansson with keys
 * sorted bytewise, no whitespace, UTF-8 kept as is (JSON_COMPACT |
 * JSON_SORT_KEYS); integers in decimal, other numbers as jansson prints
 * doubles (%.17g). hash = SHA-256(prev_hash || canonical), prev_hash of the
 * first entry 32 zero bytes. docs/audit.md states the same for auditors who
 * check with their own tools.
 */
#ifndef AIDC_AUDIT_CHAIN_H
#define AIDC_AUDIT_CHAIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define CHAIN_HASH_LEN 32
#define CHAIN_HEX_LEN 64

/* Canonical text of event (malloc'd; NULL on allocation failure). */
char *chain_canonical(const json_t *event);
/* hash = SHA-256(prev || canonical text of event). 0, or -1 when it cannot be encoded. */
int chain_link(const unsigned char prev[CHAIN_HASH_LEN], const json_t *event,
               unsigned char out[CHAIN_HASH_LEN]);

/* Lowercase hex of 32 bytes into out[65]. */
void chain_hex(const unsigned char h[CHAIN_HASH_LEN], char out[CHAIN_HEX_LEN + 1]);
/* Parse 64 hex digits; false when s is not exactly that. */
bool chain_unhex(const char *s, unsigned char out[CHAIN_HASH_LEN]);
/* Lowercase hex of n bytes into out (2n+1 bytes). */
void chain_hex_bytes(const unsigned char *b, size_t n, char *out);
/* Parse an even number of hex digits (at most 2*max); false otherwise. */
bool chain_unhex_bytes(const char *s, unsigned char *out, size_t max, size_t *len);

/*
 * The text a checkpoint signature covers: the chain position and head hash
 * at time ts (RFC 3339 as stored). out receives at most n bytes (NUL ended).
 */
void chain_checkpoint_message(long long seq, const char *head_hex, const char *ts, char *out,
                              size_t n);

#endif
