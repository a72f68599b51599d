/* seal.c - AES-256-GCM sealing (see seal.h). The key is configuration: set once at start. */
#include "seal.h"

#include "../lib/crypto.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "seal1:"
#define NONCE 12
#define TAG 16

static unsigned char key[32];
static int have_key;

void seal_key_set(const unsigned char *material, size_t len)
{
    static const char purpose[] = "aidc seal v1";
    unsigned char *buf = xmalloc(sizeof purpose + len);
    memcpy(buf, purpose, sizeof purpose);
    memcpy(buf + sizeof purpose, material, len);
    SHA256(buf, sizeof purpose + len, key);
    OPENSSL_cleanse(buf, sizeof purpose + len);
    free(buf);
    have_key = 1;
}

char *seal_text(const char *text, const char *aad)
{
    size_t n = strlen(text);
    unsigned char *buf = NULL;
    char *out = NULL;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0;
    if (!have_key || !ctx || n > 0x3fffffff)
        goto done;
    buf = xmalloc(NONCE + n + TAG);
    if (crypto_random(buf, NONCE) != 0 ||
        EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, buf) != 1 ||
        EVP_EncryptUpdate(ctx, NULL, &len, (const unsigned char *)aad, (int)strlen(aad)) != 1 ||
        EVP_EncryptUpdate(ctx, buf + NONCE, &len, (const unsigned char *)text, (int)n) != 1 ||
        EVP_EncryptFinal_ex(ctx, buf + NONCE + len, &fin) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG, buf + NONCE + n) != 1)
        goto done;
    size_t raw = NONCE + n + TAG, cap = strlen(PREFIX) + raw * 4 / 3 + 4;
    out = xmalloc(cap);
    strcpy(out, PREFIX);
    crypto_b64url_encode(buf, raw, out + strlen(PREFIX), cap - strlen(PREFIX));
done:
    if (!out)
        log_error("cannot seal a text");
    EVP_CIPHER_CTX_free(ctx);
    free(buf);
    return out;
}

char *seal_open(const char *s, const char *aad)
{
    size_t pl = strlen(PREFIX);
    if (!have_key || strncmp(s, PREFIX, pl) != 0)
        return NULL;
    size_t enc = strlen(s + pl), cap = enc * 3 / 4 + 3;
    unsigned char *buf = xmalloc(cap);
    char *out = NULL;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    long raw = crypto_b64url_decode(s + pl, enc, buf, cap);
    int len = 0, fin = 0;
    if (!ctx || raw < NONCE + TAG)
        goto done;
    size_t n = (size_t)raw - NONCE - TAG;
    out = xmalloc(n + 1);
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, buf) != 1 ||
        EVP_DecryptUpdate(ctx, NULL, &len, (const unsigned char *)aad, (int)strlen(aad)) != 1 ||
        EVP_DecryptUpdate(ctx, (unsigned char *)out, &len, buf + NONCE, (int)n) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, buf + NONCE + n) != 1 ||
        EVP_DecryptFinal_ex(ctx, (unsigned char *)out + len, &fin) != 1) {
        free(out);
        out = NULL;
        goto done;
    }
    out[n] = '\0';
done:
    EVP_CIPHER_CTX_free(ctx);
    free(buf);
    return out;
}
