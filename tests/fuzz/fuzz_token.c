/*
 * fuzz_token.c - tokens aidc reads: session JWTs (server/session.c: what
 * libjwt decodes, then every claim checked by session_verify), API tokens
 * (server/token.c) and the Slurm credential (backends/slurmrest.c's
 * slurmrest_token: a JWT read without verification for its exp, else an
 * HMAC key).
 *
 * The input is used three ways: as a token as it is; as the claims (JSON) of
 * a session JWT signed with the server's key, so the claim checks behind the
 * signature are reached; and as a Slurm credential file.
 */
#include "fuzz.h"

#include "backends/slurmrest.h"
#include "server/session.h"
#include "server/token.h"

#include <jwt.h>
#include <time.h>

static const unsigned char key[32] = "fuzz-session-key-0123456789abcd";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    session_key_set(key, sizeof key);
    return 0;
}

/* The claims JSON text signed with the session key, or NULL (malloc'd). */
static char *signed_with_key(const char *claims)
{
    jwt_t *j = NULL;
    char *tok = NULL;
    if (jwt_new(&j) == 0 && jwt_set_alg(j, JWT_ALG_HS256, key, (int)sizeof key) == 0 &&
        jwt_add_grants_json(j, claims) == 0)
        tok = jwt_encode_str(j);
    jwt_free(j);
    return tok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_str(data, size);
    time_t now = 1764662400; /* 2025-12-02: fixed, so a run repeats */
    struct session_claims c;

    session_verify(s, now, &c);
    if (token_is_wellformed(s)) {
        char hash[65];
        token_hash(s, hash);
    }
    char *tok = signed_with_key(s);
    if (tok && session_verify(tok, now, &c) == 0 &&
        (strlen(c.sub) != 36 || strlen(c.jti) != 36 || c.exp <= now || c.exp <= c.iat))
        abort(); /* accepted claims must be what the contract says */
    free(tok);

    char out[8192], err[256];
    time_t expires;
    if (slurmrest_token(data, size, "aidc", now, out, sizeof out, &expires, err, sizeof err) ==
            0 &&
        strlen(out) >= sizeof out)
        abort();
    free(s);
    return 0;
}
