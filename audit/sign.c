/* sign.c - checkpoint signing keys (see sign.h). */
#include "sign.h"

#include "../lib/crypto.h"
#include "../lib/secfile.h"
#include "chain.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HMAC_MIN 32
#define HMAC_MAX 4096

struct sign_key {
    EVP_PKEY *pkey;       /* Ed25519, or NULL for HMAC */
    bool priv;            /* pkey holds the private half */
    unsigned char *hmac;  /* HMAC key bytes */
    size_t hmac_len;
    char id[17];
    char *pub_pem;
};

/* The file at path (at most HMAC_MAX bytes) and its status, read through one descriptor. */
static char *read_small_file(const char *path, struct stat *st, size_t *len, char *err,
                             size_t errsz)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 || fstat(fd, st) != 0) {
        snprintf(err, errsz, "cannot read \"%s\": %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *buf = S_ISREG(st->st_mode) ? malloc(HMAC_MAX + 1) : NULL;
    size_t n = 0;
    ssize_t r = 0;
    while (buf && n < HMAC_MAX + 1 && (r = read(fd, buf + n, HMAC_MAX + 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    if (!buf || r < 0 || n > HMAC_MAX) {
        snprintf(err, errsz, "\"%s\" is unreadable, not a regular file or larger than %d bytes",
                 path, HMAC_MAX);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* The id: SHA-256 of the public key (or, for HMAC, of a domain string and the key). */
static void set_id(struct sign_key *k, const unsigned char *material, size_t n, const char *domain)
{
    unsigned char h[32];
    unsigned int hl = 0;
    char hex[65];
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(md, domain, strlen(domain)) == 1 &&
              EVP_DigestUpdate(md, material, n) == 1 && EVP_DigestFinal_ex(md, h, &hl) == 1 &&
              hl == sizeof h;
    EVP_MD_CTX_free(md);
    if (!ok) {
        snprintf(k->id, sizeof k->id, "unknown");
        return;
    }
    chain_hex(h, hex);
    snprintf(k->id, sizeof k->id, "%.16s", hex);
}

static int finish_ed25519(struct sign_key *k)
{
    unsigned char raw[32];
    size_t rl = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(k->pkey, raw, &rl) != 1)
        return -1;
    set_id(k, raw, rl, "aidc-ed25519:");
    BIO *b = BIO_new(BIO_s_mem());
    if (!b || PEM_write_bio_PUBKEY(b, k->pkey) != 1) {
        BIO_free(b);
        return -1;
    }
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    k->pub_pem = n > 0 ? strndup(data, (size_t)n) : NULL;
    BIO_free(b);
    return k->pub_pem ? 0 : -1;
}

static EVP_PKEY *pem_key(const char *text, size_t len, bool *priv)
{
    BIO *b = BIO_new_mem_buf(text, (int)len);
    if (!b)
        return NULL;
    EVP_PKEY *p = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    *priv = p != NULL;
    if (!p) {
        BIO_free(b);
        b = BIO_new_mem_buf(text, (int)len);
        p = b ? PEM_read_bio_PUBKEY(b, NULL, NULL, NULL) : NULL;
    }
    BIO_free(b);
    return p;
}

struct sign_key *sign_key_load(const char *path, char *err, size_t errsz)
{
    struct stat st;
    size_t len = 0;
    char *text = read_small_file(path, &st, &len, err, errsz);
    if (!text)
        return NULL;
    struct sign_key *k = calloc(1, sizeof *k);
    if (!k) {
        free(text);
        snprintf(err, errsz, "out of memory");
        return NULL;
    }
    if (strstr(text, "-----BEGIN ")) {
        k->pkey = pem_key(text, len, &k->priv);
        if (!k->pkey || EVP_PKEY_get_id(k->pkey) != EVP_PKEY_ED25519) {
            snprintf(err, errsz, "\"%s\" is PEM but not an Ed25519 key", path);
            goto fail;
        }
        /* a public key is no secret; the private one follows secfile.h's rule */
        if (k->priv && !secfile_ok(&st, path, err, errsz))
            goto fail;
        if (finish_ed25519(k) != 0) {
            snprintf(err, errsz, "cannot read the public half of \"%s\"", path);
            goto fail;
        }
    } else {
        if (len < HMAC_MIN) {
            snprintf(err, errsz, "\"%s\" is neither an Ed25519 PEM key nor at least %d bytes "
                                 "of HMAC key", path, HMAC_MIN);
            goto fail;
        }
        if (!secfile_ok(&st, path, err, errsz))
            goto fail;
        k->hmac = malloc(len);
        if (!k->hmac) {
            snprintf(err, errsz, "out of memory");
            goto fail;
        }
        memcpy(k->hmac, text, len);
        k->hmac_len = len;
        set_id(k, k->hmac, len, "aidc-hmac:");
    }
    OPENSSL_cleanse(text, len);
    free(text);
    return k;
fail:
    OPENSSL_cleanse(text, len);
    free(text);
    sign_key_free(k);
    return NULL;
}

void sign_key_free(struct sign_key *k)
{
    if (!k)
        return;
    EVP_PKEY_free(k->pkey);
    if (k->hmac)
        OPENSSL_cleanse(k->hmac, k->hmac_len);
    free(k->hmac);
    free(k->pub_pem);
    free(k);
}

int sign_key_generate(const char *path, char *err, size_t errsz)
{
    EVP_PKEY *p = NULL;
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
    int rc = -1;
    if (!c || EVP_PKEY_keygen_init(c) != 1 || EVP_PKEY_keygen(c, &p) != 1) {
        snprintf(err, errsz, "cannot generate an Ed25519 key");
        goto done;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errsz, "cannot create \"%s\": %s", path, strerror(errno));
        goto done;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        snprintf(err, errsz, "cannot write \"%s\"", path);
        goto done;
    }
    bool ok = PEM_write_PrivateKey(f, p, NULL, NULL, 0, NULL, NULL) == 1;
    if (fclose(f) != 0 || !ok) {
        snprintf(err, errsz, "cannot write \"%s\"", path);
        unlink(path);
        goto done;
    }
    rc = 0;
done:
    EVP_PKEY_free(p);
    EVP_PKEY_CTX_free(c);
    return rc;
}

const char *sign_key_alg(const struct sign_key *k)
{
    return k->pkey ? "ed25519" : "hmac-sha256";
}

const char *sign_key_id(const struct sign_key *k)
{
    return k->id;
}

const char *sign_key_public_pem(const struct sign_key *k)
{
    return k->pub_pem;
}

bool sign_key_can_sign(const struct sign_key *k)
{
    return k->hmac || k->priv;
}

int sign_message(const struct sign_key *k, const char *msg, unsigned char sig[64])
{
    size_t n = strlen(msg);
    if (k->hmac) {
        unsigned int len = 0;
        if (!HMAC(EVP_sha256(), k->hmac, (int)k->hmac_len, (const unsigned char *)msg, n, sig,
                  &len))
            return -1;
        return (int)len;
    }
    if (!k->priv)
        return -1;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    size_t len = 64;
    int ok = md && EVP_DigestSignInit(md, NULL, NULL, NULL, k->pkey) == 1 &&
             EVP_DigestSign(md, sig, &len, (const unsigned char *)msg, n) == 1;
    EVP_MD_CTX_free(md);
    return ok ? (int)len : -1;
}

bool sign_verify(const struct sign_key *k, const char *msg, const unsigned char *sig, size_t len)
{
    if (k->hmac) {
        unsigned char want[64];
        int n = sign_message(k, msg, want);
        return n > 0 && (size_t)n == len && crypto_equal(want, sig, len);
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md && EVP_DigestVerifyInit(md, NULL, NULL, NULL, k->pkey) == 1 &&
              EVP_DigestVerify(md, sig, len, (const unsigned char *)msg, strlen(msg)) == 1;
    EVP_MD_CTX_free(md);
    return ok;
}
