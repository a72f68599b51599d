/*
 * fuzz_auth.c - the credential headers of a request (server/credential.c,
 * what server/auth.c reads first): "Authorization-value\nCookie-value".
 * An empty first line means no Authorization header, as does a missing one.
 * The token found is then taken as server/auth.c takes it: an API token's
 * shape check and hash, else a session JWT's verification.
 */
#include "fuzz.h"

#include "server/credential.h"
#include "server/session.h"
#include "server/token.h"

#include <time.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static const unsigned char key[32] = "fuzz-session-key-0123456789abcd";
    session_key_set(key, sizeof key);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_str(data, size);
    char *f[2];
    size_t n = fuzz_split(s, '\n', f, 2);
    const char *authorization = n >= 1 && f[0][0] ? f[0] : NULL;
    const char *cookie = n >= 2 ? f[1] : NULL;
    const char *token;
    char *cookie_tok;
    if (credential_from_headers(authorization, cookie, &token, &cookie_tok) == 0 && token &&
        *token) {
        if (cookie_tok && (strchr(cookie_tok, ';') || token != cookie_tok))
            abort(); /* a cookie's value ends at the next ';' */
        if (strncmp(token, TOKEN_PREFIX, strlen(TOKEN_PREFIX)) == 0) {
            char hash[65];
            if (token_is_wellformed(token))
                token_hash(token, hash);
        } else {
            struct session_claims c;
            if (session_verify(token, time(NULL), &c) == 0)
                abort(); /* a forged session: the fuzzer cannot know the key */
        }
    }
    free(cookie_tok);
    free(s);
    return 0;
}
