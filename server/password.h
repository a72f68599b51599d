/*
 * password.h - password hashing with scrypt (OpenSSL), per-user salt.
 *
 * Encoded as "$scrypt$ln=15,r=8,p=1$<salt b64url>$<hash b64url>" so the cost
 * can be raised later: password_needs_rehash tells when a stored hash uses
 * older parameters (it is then replaced at the next successful login).
 */
#ifndef AIDC_PASSWORD_H
#define AIDC_PASSWORD_H

#include <stdbool.h>

#define PASSWORD_MIN_LEN 10

/* log2 of scrypt's N: the default (32 MiB per hash) and the bounds a stored hash or
 * AIDC_PASSWORD_HASH_COST may have (a forged row cannot make a login allocate
 * gigabytes) */
#define PASSWORD_COST_DEFAULT 15
#define PASSWORD_COST_MIN 10
#define PASSWORD_COST_MAX 18
#define PASSWORD_MAX_LEN 1024

/*
 * At most concurrency hashes at once from now on (each takes 32 MiB): the
 * others wait their turn, so a burst of logins cannot take the server's
 * memory. Before this (command line, unit tests) there is no bound.
 */
void password_init(int concurrency);
/*
 * New hashes from now on use N = 2^ln (outside the bounds: ignored). A stored hash
 * keeps its own cost and is rehashed at its next successful login when it is lower
 * (never when higher: lowering the cost weakens no stored hash).
 * Call before any thread hashes.
 */
void password_set_cost(int ln);
/* The most hashes that ran at once since password_init (for tests). */
int password_peak(void);

/* A new malloc'd encoded hash of pw, or NULL if the KDF failed. */
char *password_hash(const char *pw);
/*
 * True when pw matches encoded. With encoded == NULL it still spends the time
 * of one verification (against a fixed dummy) and returns false, so unknown
 * users and wrong passwords cost the same.
 */
bool password_verify(const char *pw, const char *encoded);
bool password_needs_rehash(const char *encoded);
/* What the password policy says of a new password. */
enum password_policy {
    PASSWORD_OK = 0,
    PASSWORD_TOO_SHORT, /* fewer than PASSWORD_MIN_LEN characters */
    PASSWORD_TOO_LONG,  /* more than PASSWORD_MAX_LEN bytes */
};
enum password_policy password_policy(const char *pw);
/* NULL when pw is acceptable, else the English reason ("must be at least 10
 * characters"), for the command line; the API answers password_policy's codes. */
const char *password_policy_check(const char *pw);

#endif
