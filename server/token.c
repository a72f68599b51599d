/* token.c - API token generation and shape checks. */
#include "token.h"

#include "../lib/crypto.h"

#include <string.h>

int token_generate(char *secret, char *hash)
{
    unsigned char raw[32];
    int e = crypto_random(raw, sizeof raw);
    if (e)
        return e;
    size_t plen = strlen(TOKEN_PREFIX);
    strcpy(secret, TOKEN_PREFIX);
    crypto_b64url_encode(raw, sizeof raw, secret + plen, TOKEN_LEN - plen + 1);
    token_hash(secret, hash);
    return 0;
}

bool token_is_wellformed(const char *s)
{
    if (strlen(s) != TOKEN_LEN || strncmp(s, TOKEN_PREFIX, 5) != 0)
        return false;
    unsigned char raw[33];
    return crypto_b64url_decode(s + 5, TOKEN_LEN - 5, raw, sizeof raw) == 32;
}

void token_hash(const char *secret, char hash[65])
{
    crypto_sha256_hex(secret, strlen(secret), hash);
}
