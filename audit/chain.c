/* chain.c - canonical events and chain links (see chain.h). */
#include "chain.h"

#include "../lib/crypto.h"
#include "../lib/hex.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *chain_canonical(const json_t *event)
{
    json_t *copy = json_copy((json_t *)event); /* shallow: only the top level loses the hashes */
    if (!copy)
        return NULL;
    json_object_del(copy, "hash");
    json_object_del(copy, "prev_hash");
    char *text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(copy);
    return text;
}

int chain_link(const unsigned char prev[CHAIN_HASH_LEN], const json_t *event,
               unsigned char out[CHAIN_HASH_LEN])
{
    char *text = chain_canonical(event);
    if (!text)
        return -1;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned int len = 0;
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(md, prev, CHAIN_HASH_LEN) == 1 &&
             EVP_DigestUpdate(md, text, strlen(text)) == 1 &&
             EVP_DigestFinal_ex(md, out, &len) == 1 && len == CHAIN_HASH_LEN;
    EVP_MD_CTX_free(md);
    free(text);
    return ok ? 0 : -1;
}

void chain_hex_bytes(const unsigned char *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

void chain_hex(const unsigned char h[CHAIN_HASH_LEN], char out[CHAIN_HEX_LEN + 1])
{
    chain_hex_bytes(h, CHAIN_HASH_LEN, out);
}

bool chain_unhex_bytes(const char *s, unsigned char *out, size_t max, size_t *len)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n % 2 || n / 2 > max)
        return false;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    *len = n / 2;
    return true;
}

bool chain_unhex(const char *s, unsigned char out[CHAIN_HASH_LEN])
{
    size_t len = 0;
    return s && strlen(s) == CHAIN_HEX_LEN && chain_unhex_bytes(s, out, CHAIN_HASH_LEN, &len);
}

void chain_checkpoint_message(long long seq, const char *head_hex, const char *ts, char *out,
                              size_t n)
{
    snprintf(out, n, "aidc-audit-checkpoint/1\nseq=%lld\nhead=%s\nts=%s\n", seq, head_hex, ts);
}
