/* crypto.c - thin wrappers over OpenSSL with the error checks in one place. */
#include "crypto.h"

#include "err.h"
#include "log.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int crypto_random(void *buf, size_t n)
{
    if (n > 0x7fffffff || RAND_bytes(buf, (int)n) != 1) {
        log_error("RAND_bytes failed");
        return AIDC_EINTERNAL;
    }
    return 0;
}

static const char b64u[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t crypto_b64url_encode(const unsigned char *in, size_t n, char *out, size_t outsz)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        size_t chars = n - i >= 3 ? 4 : n - i + 1;
        for (size_t k = 0; k < chars; k++) {
            if (o + 1 >= outsz)
                goto done;
            out[o++] = b64u[(v >> (18 - 6 * k)) & 63];
        }
    }
done:
    if (outsz)
        out[o] = '\0';
    return o;
}

static int b64u_val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

long crypto_b64url_decode(const char *in, size_t n, unsigned char *out, size_t outsz)
{
    while (n > 0 && in[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64u_val(in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= outsz)
                return -1;
            out[o++] = (unsigned char)((acc >> bits) & 0xff);
        }
    }
    /* Leftover bits must be zero, so each input has one encoding. */
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        return -1;
    return (long)o;
}

/*
 * SHA256() looks the algorithm up in OpenSSL's provider store on every call
 * (EVP_MD_fetch: a lock and a hash lookup), which made up most of the hash's
 * cost: every authenticated request hashes its credential (perf,
 * docs/performance.md). The algorithm is fetched once and kept for the life
 * of the process, as a constant.
 */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void crypto_sha256(const void *data, size_t n, unsigned char out[32])
{
    unsigned int len = 0;
    if (pthread_once(&sha256_once, sha256_fetch) != 0 || !sha256_md ||
        EVP_Digest(data, n, out, &len, sha256_md, NULL) != 1 || len != 32) {
        log_error("SHA-256 failed");
        abort(); /* a credential unhashed is no credential: nothing safe can be done */
    }
}

void crypto_sha256_hex(const void *data, size_t n, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char d[32];
    crypto_sha256(data, n, d);
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[64] = '\0';
}

void crypto_uuid_new(char out[37])
{
    unsigned char b[16];
    if (crypto_random(b, sizeof b) != 0)
        abort(); /* no randomness: nothing safe can be done */
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

bool crypto_uuid_valid(const char *s)
{
    if (!s || strlen(s) != 36)
        return false;
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return false;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
            return false;
        }
    }
    return true;
}

bool crypto_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}
