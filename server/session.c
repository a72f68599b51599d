/*
 * session.c - JWT minting and verification. The key is configuration: set
 * once at start, read-only afterwards.
 */
#include "session.h"

#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "seal.h"
#include "../lib/secfile.h"
#include "../lib/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <jwt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_MAX 256
#define CLOCK_SKEW 60

static unsigned char key[KEY_MAX];
static size_t keylen;

void session_key_set(const unsigned char *k, size_t len)
{
    keylen = len > KEY_MAX ? KEY_MAX : len;
    memcpy(key, k, keylen);
    /* the same secret, outside the database, also keys sealed texts */
    seal_key_set(key, keylen);
}

static int create_key(const char *path, char *err, size_t errsz)
{
    char *dir = xstrdup(path);
    char *d = dirname(dir);
    if (mkdir(d, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errsz, "AIDC_JWT_KEY_FILE: cannot create directory %s: %s", d,
                 strerror(errno));
        free(dir);
        return AIDC_EIO;
    }
    free(dir);
    unsigned char k[64];
    if (crypto_random(k, sizeof k) != 0) {
        snprintf(err, errsz, "AIDC_JWT_KEY_FILE: no random bytes");
        return AIDC_EINTERNAL;
    }
    /* O_EXCL: two replicas starting at once must not both write a key. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == EEXIST)
            return 0;
        snprintf(err, errsz, "AIDC_JWT_KEY_FILE: cannot create %s: %s", path, strerror(errno));
        return AIDC_EIO;
    }
    ssize_t w = write(fd, k, sizeof k);
    int fs = fsync(fd);
    close(fd);
    if (w != (ssize_t)sizeof k || fs != 0) {
        snprintf(err, errsz, "AIDC_JWT_KEY_FILE: cannot write %s", path);
        unlink(path);
        return AIDC_EIO;
    }
    log_info("generated a new session signing key in %s", path);
    return 0;
}

int session_key_load(const char *path, char *err, size_t errsz)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) {
            snprintf(err, errsz, "AIDC_JWT_KEY_FILE: cannot read %s: %s", path, strerror(errno));
            return AIDC_EIO;
        }
        int e = create_key(path, err, errsz);
        if (e)
            return e;
    }
    char why[400];
    int fd = secfile_open(path, why, sizeof why);
    if (fd < 0) {
        snprintf(err, errsz, "AIDC_JWT_KEY_FILE: %s", why);
        return errno == EPERM ? AIDC_EINVAL : AIDC_EIO;
    }
    unsigned char buf[KEY_MAX];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    if (n < 32) {
        snprintf(err, errsz, "AIDC_JWT_KEY_FILE: %s holds fewer than 32 bytes", path);
        return AIDC_EINVAL;
    }
    session_key_set(buf, (size_t)n);
    return 0;
}

char *session_mint(const char *user_id, long epoch, int ttl, struct session_claims *out)
{
    jwt_t *j = NULL;
    char *tok = NULL;
    struct session_claims c = {0};
    snprintf(c.sub, sizeof c.sub, "%s", user_id);
    crypto_uuid_new(c.jti);
    c.iat = time(NULL);
    c.exp = c.iat + ttl;
    c.epoch = epoch;
    if (jwt_new(&j) != 0)
        goto out;
    if (jwt_set_alg(j, JWT_ALG_HS256, key, (int)keylen) != 0 ||
        jwt_add_grant(j, "iss", "aidc") != 0 || jwt_add_grant(j, "sub", c.sub) != 0 ||
        jwt_add_grant(j, "jti", c.jti) != 0 || jwt_add_grant_int(j, "iat", (long)c.iat) != 0 ||
        jwt_add_grant_int(j, "exp", (long)c.exp) != 0 || jwt_add_grant_int(j, "sep", epoch) != 0)
        goto out;
    tok = jwt_encode_str(j);
    if (tok && out)
        *out = c;
out:
    if (!tok)
        log_error("cannot mint a session token");
    jwt_free(j);
    return tok;
}

/* An integer claim; libjwt reads "7", 7.5 or true as 0 without complaint. */
static bool claim_int(const json_t *claims, const char *name, long *out)
{
    const json_t *v = json_object_get(claims, name);
    if (!json_is_integer(v))
        return false;
    *out = (long)json_integer_value(v);
    return true;
}

int session_verify(const char *token, time_t now, struct session_claims *out)
{
    jwt_t *j = NULL;
    json_t *claims = NULL;
    int rc = AIDC_EFORBIDDEN;
    if (keylen == 0 || strlen(token) > 4096)
        return rc;
    if (jwt_decode(&j, token, key, (int)keylen) != 0 || !j)
        goto out;
    /* libjwt would accept "none" or another algorithm: insist on ours. */
    if (jwt_get_alg(j) != JWT_ALG_HS256)
        goto out;
    /* libjwt checks no claim: read them all and check each one's type */
    char *text = jwt_get_grants_json(j, NULL);
    claims = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    const char *sub = json_string_value(json_object_get(claims, "sub"));
    const char *jti = json_string_value(json_object_get(claims, "jti"));
    long iat, exp, epoch;
    if (!iss || strcmp(iss, "aidc") != 0 || !crypto_uuid_valid(sub) || !crypto_uuid_valid(jti) ||
        !claim_int(claims, "iat", &iat) || !claim_int(claims, "exp", &exp) ||
        !claim_int(claims, "sep", &epoch))
        goto out;
    if (exp <= now || iat > now + CLOCK_SKEW || exp <= iat)
        goto out;
    if (out) {
        snprintf(out->sub, sizeof out->sub, "%s", sub);
        snprintf(out->jti, sizeof out->jti, "%s", jti);
        out->iat = iat;
        out->exp = exp;
        out->epoch = epoch;
    }
    rc = 0;
out:
    json_decref(claims);
    jwt_free(j);
    return rc;
}
