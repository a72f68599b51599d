/*
 * password.c - scrypt password hashes. Parameters: N = 2^ln (ln 15 by default,
 * AIDC_PASSWORD_HASH_COST), r = 8, p = 1 (32 MiB, tens of milliseconds here), 16-byte
 * salt, 32-byte key.
 */
#include "password.h"

#include "../lib/crypto.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define R        8
#define P        1
#define SALT_LEN 16
#define KEY_LEN  32

/* The pool of hashing slots (password_init); limit 0: unbounded. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t freed;
    int limit, running, peak;
} slots = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

/* log2 of scrypt's N for new hashes and the dummy check: configuration, set once at
 * start (password_set_cost) before any thread hashes */
static int cost_ln = PASSWORD_COST_DEFAULT;

void password_set_cost(int ln)
{
    if (ln >= PASSWORD_COST_MIN && ln <= PASSWORD_COST_MAX)
        cost_ln = ln;
}

void password_init(int concurrency)
{
    pthread_mutex_lock(&slots.mu);
    slots.limit = concurrency > 0 ? concurrency : 1;
    slots.peak = 0;
    pthread_mutex_unlock(&slots.mu);
}

int password_peak(void)
{
    pthread_mutex_lock(&slots.mu);
    int p = slots.peak;
    pthread_mutex_unlock(&slots.mu);
    return p;
}

static void slot_take(void)
{
    pthread_mutex_lock(&slots.mu);
    while (slots.limit > 0 && slots.running >= slots.limit)
        pthread_cond_wait(&slots.freed, &slots.mu);
    if (++slots.running > slots.peak)
        slots.peak = slots.running;
    pthread_mutex_unlock(&slots.mu);
}

static void slot_give(void)
{
    pthread_mutex_lock(&slots.mu);
    slots.running--;
    pthread_cond_signal(&slots.freed);
    pthread_mutex_unlock(&slots.mu);
}

static bool kdf(const char *pw, const unsigned char *salt, size_t saltlen, int ln, int r, int p,
                unsigned char *out)
{
    uint64_t n = (uint64_t)1 << ln;
    uint64_t maxmem = 128u * n * (uint64_t)r * 2 + (1u << 20);
    slot_take();
    bool ok = EVP_PBE_scrypt(pw, strlen(pw), salt, saltlen, n, (uint64_t)r, (uint64_t)p, maxmem,
                             out, KEY_LEN) == 1;
    slot_give();
    return ok;
}

char *password_hash(const char *pw)
{
    unsigned char salt[SALT_LEN], key[KEY_LEN];
    char s64[32], k64[48];
    if (crypto_random(salt, sizeof salt) != 0 || !kdf(pw, salt, sizeof salt, cost_ln, R, P, key)) {
        log_error("password hashing failed");
        return NULL;
    }
    crypto_b64url_encode(salt, sizeof salt, s64, sizeof s64);
    crypto_b64url_encode(key, sizeof key, k64, sizeof k64);
    return xasprintf("$scrypt$ln=%d,r=%d,p=%d$%s$%s", cost_ln, R, P, s64, k64);
}

struct parsed {
    int ln, r, p;
    unsigned char salt[64];
    size_t saltlen;
    unsigned char key[KEY_LEN];
};

/* Read a decimal number of at most 2 digits after the prefix `name=`. */
static bool param(const char **p, const char *name, int *out)
{
    size_t nl = strlen(name);
    if (strncmp(*p, name, nl) != 0 || (*p)[nl] != '=')
        return false;
    const char *d = *p + nl + 1;
    char *end;
    long v = strtol(d, &end, 10);
    if (end == d || end - d > 2 || v < 0)
        return false;
    *out = (int)v;
    *p = end;
    return true;
}

/* Copy the base64url field up to the next '$' (or the end) into out. */
static bool field(const char **p, char *out, size_t n)
{
    size_t len = strcspn(*p, "$");
    if (len == 0 || len >= n ||
        strspn(*p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                   "0123456789-_") != len)
        return false;
    memcpy(out, *p, len);
    out[len] = '\0';
    *p += len;
    return true;
}

static bool parse(const char *enc, struct parsed *ps)
{
    char s64[96], k64[96];
    const char *p = enc;
    const char *prefix = "$scrypt$";
    if (!p || strncmp(p, prefix, strlen(prefix)) != 0)
        return false;
    p += strlen(prefix);
    if (!param(&p, "ln", &ps->ln) || *p++ != ',' || !param(&p, "r", &ps->r) || *p++ != ',' ||
        !param(&p, "p", &ps->p) || *p++ != '$' || !field(&p, s64, sizeof s64) || *p++ != '$' ||
        !field(&p, k64, sizeof k64) || *p != '\0')
        return false;
    /* bounded so a forged row cannot make a login allocate gigabytes */
    if (ps->ln < PASSWORD_COST_MIN || ps->ln > PASSWORD_COST_MAX || ps->r < 1 || ps->r > 16 ||
        ps->p < 1 || ps->p > 4)
        return false;
    long sl = crypto_b64url_decode(s64, strlen(s64), ps->salt, sizeof ps->salt);
    long kl = crypto_b64url_decode(k64, strlen(k64), ps->key, sizeof ps->key);
    if (sl < 8 || kl != KEY_LEN)
        return false;
    ps->saltlen = (size_t)sl;
    return true;
}

bool password_verify(const char *pw, const char *encoded)
{
    struct parsed ps;
    unsigned char got[KEY_LEN];
    if (!parse(encoded, &ps)) {
        /* Same work as a real check, then fail: no timing oracle for users. */
        static const unsigned char dummy_salt[SALT_LEN] = "aidc-dummy-salt";
        (void)kdf(pw, dummy_salt, sizeof dummy_salt, cost_ln, R, P, got);
        return false;
    }
    if (!kdf(pw, ps.salt, ps.saltlen, ps.ln, ps.r, ps.p, got))
        return false;
    return crypto_equal(got, ps.key, KEY_LEN);
}

bool password_needs_rehash(const char *encoded)
{
    struct parsed ps;
    /* up only: a cost lowered for tests never weakens the hashes already stored */
    return !parse(encoded, &ps) || ps.ln < cost_ln || ps.r != R || ps.p != P;
}

enum password_policy password_policy(const char *pw)
{
    size_t n = strlen(pw), chars = 0;
    for (const unsigned char *c = (const unsigned char *)pw; *c; c++)
        chars += (*c & 0xc0) != 0x80; /* count UTF-8 characters, not bytes */
    if (chars < PASSWORD_MIN_LEN)
        return PASSWORD_TOO_SHORT;
    if (n > PASSWORD_MAX_LEN)
        return PASSWORD_TOO_LONG;
    return PASSWORD_OK;
}

const char *password_policy_check(const char *pw)
{
    switch (password_policy(pw)) {
    case PASSWORD_TOO_SHORT:
        return "must be at least 10 characters";
    case PASSWORD_TOO_LONG:
        return "must be at most 1024 bytes";
    case PASSWORD_OK:
        break;
    }
    return NULL;
}
