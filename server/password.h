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
#define PASSWORD_MAX_LEN 1024

/* A new malloc'd encoded hash of pw, or NULL if the KDF failed. */
char *password_hash(const char *pw);
/*
 * True when pw matches encoded. With encoded == NULL it still spends the time
 * of one verification (against a fixed dummy) and returns false, so unknown
 * users and wrong passwords cost the same.
 */
bool password_verify(const char *pw, const char *encoded);
bool password_needs_rehash(const char *encoded);
/* NULL when pw is acceptable, else a message for the client. */
const char *password_policy_check(const char *pw);

#endif
