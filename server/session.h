/*
 * session.h - login sessions as HS256 JWTs (libjwt).
 *
 * Claims: iss "aidc", sub (user UUID), jti (session UUID, revocable), iat,
 * exp, and sep - the user's session epoch at login: a password change or
 * disabling the user bumps the epoch and so voids every older session. libjwt validates no claims and accepts any algorithm it can decode
 * (see PITFALLS.md), so session_verify checks the algorithm, issuer, expiry,
 * issue time and the shape of every claim itself. Revocation and disabled
 * users are checked against the database by server/auth.c.
 */
#ifndef AIDC_SESSION_H
#define AIDC_SESSION_H

#include <stddef.h>
#include <time.h>

struct session_claims {
    char sub[37];
    char jti[37];
    time_t iat;
    time_t exp;
    long epoch;
};

/*
 * Load the signing key from path, creating it (64 random bytes, mode 0600,
 * parent directory 0700) if it does not exist. A key file readable by group
 * or others, or shorter than 32 bytes, is refused. 0 or an error with a
 * message in err.
 */
int session_key_load(const char *path, char *err, size_t errsz);
/* Use key directly (tests); also derives the sealing key (server/seal.h). */
void session_key_set(const unsigned char *key, size_t len);

/* Mint a token for user_id (at session epoch) valid ttl seconds; malloc'd, NULL on failure. */
char *session_mint(const char *user_id, long epoch, int ttl, struct session_claims *out);
/* Verify token; 0 and the claims, or AIDC_EFORBIDDEN for any defect. */
int session_verify(const char *token, time_t now, struct session_claims *out);

#endif
