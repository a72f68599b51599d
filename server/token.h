/*
 * token.h - API token secrets: "aidc_" followed by 32 random bytes in
 * base64url (43 characters). Only the SHA-256 of a token is ever stored; the
 * secret is shown once, when it is created.
 */
#ifndef AIDC_TOKEN_H
#define AIDC_TOKEN_H

#include <stdbool.h>

#define TOKEN_PREFIX "aidc_"
#define TOKEN_LEN 48 /* strlen of a token */

/* A fresh token into secret[TOKEN_LEN+1] and its hash into hash[65]. */
int token_generate(char *secret, char *hash);
/* True when s has the exact shape of an aidc API token. */
bool token_is_wellformed(const char *s);
/* SHA-256 hex of a token (what the database stores). */
void token_hash(const char *secret, char hash[65]);

#endif
