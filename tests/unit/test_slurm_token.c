/*
 * test_slurm_token.c - how aidcd authenticates to slurmrestd: tokens taken as
 * they are or minted from jwt_hs256.key (backends/slurmrest.h), and the
 * credentials_ref that holds them (lib/credref.h).
 */
#include "slurm_fixtures.h"

/* ---- slurmrest_token ---------------------------------------------------------------- */

static void b64url(const char *text, char *out, size_t n)
{
    size_t w = crypto_b64url_encode((const unsigned char *)text, strlen(text), out, n);
    ck_assert(w > 0 && w < n);
}

/* "eyJ<header>.<payload>.<signature>" with the given claims. */
static void make_jwt(const char *claims, char *out, size_t n)
{
    char h[128], p[512];
    b64url("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", h, sizeof h);
    b64url(claims, p, sizeof p);
    int w = snprintf(out, n, "%s.%s.c2lnbmF0dXJlLW5vdC1jaGVja2Vk", h, p);
    ck_assert(w > 0 && (size_t)w < n);
    ck_assert(strncmp(out, "eyJ", 3) == 0);
}

START_TEST(test_token_jwt_as_is)
{
    char tok[1024], secret[1100], out[4096], err[256] = "";
    make_jwt("{\"exp\":1800000000,\"iat\":1700000000,\"sun\":\"aidc\"}", tok, sizeof tok);
    /* as a file holds it: with a newline */
    int w = snprintf(secret, sizeof secret, "%s\n", tok);
    ck_assert(w > 0 && (size_t)w < sizeof secret);
    time_t exp = -1;
    int rc = slurmrest_token((const unsigned char *)secret, strlen(secret), "aidc", 1750000000, out,
                             sizeof out, &exp, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_str_eq(out, tok);
    ck_assert_int_eq(exp, 1800000000);

    /* a JWT without exp: 0 */
    make_jwt("{\"sun\":\"aidc\"}", tok, sizeof tok);
    rc = slurmrest_token((const unsigned char *)tok, strlen(tok), "aidc", 1750000000, out,
                         sizeof out, &exp, err, sizeof err);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, tok);
    ck_assert_int_eq(exp, 0);

    /* exp not a number: 0 */
    make_jwt("{\"exp\":\"soon\"}", tok, sizeof tok);
    rc = slurmrest_token((const unsigned char *)tok, strlen(tok), "aidc", 1750000000, out,
                         sizeof out, &exp, err, sizeof err);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(exp, 0);

    /* a token that does not fit: refused, nothing partial */
    make_jwt("{\"exp\":1800000000}", tok, sizeof tok);
    char small[16];
    rc = slurmrest_token((const unsigned char *)tok, strlen(tok), "aidc", 1750000000, small,
                         sizeof small, &exp, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_ETOOBIG);
    ck_assert_str_eq(small, "");
    ck_assert(err[0] != '\0');
}
END_TEST

/* Slurm's jwt_hs256.key is random bytes: a NUL, newlines, a newline last. */
static const unsigned char hs_key[32] = {
    0x8f, 0x00, 0x41, 0x0a, 0xd2, 0x13, 0x7e, 0xff, 0x0a, 0x0d, 0x20, 0x65, 0x79, 0x4a, 0x00, 0x00,
    0x9c, 0x2e, 0x11, 0x80, 0x7f, 0x01, 0xfe, 0x3b, 0x55, 0xaa, 0x0a, 0x42, 0xc3, 0x28, 0x6b, 0x0a};

static int decode_with(const char *tok, const unsigned char *key, size_t n, jwt_t **j)
{
    *j = NULL;
    return jwt_decode(j, tok, key, (int)n);
}

START_TEST(test_token_minted)
{
    const time_t now = 1760000000;
    char out[4096], err[256] = "";
    time_t exp = 0;
    int rc =
        slurmrest_token(hs_key, sizeof hs_key, "aidc", now, out, sizeof out, &exp, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_int_eq(exp, now + SLURMREST_TOKEN_TTL);
    ck_assert(strncmp(out, "eyJ", 3) == 0);

    jwt_t *j = NULL;
    ck_assert_int_eq(decode_with(out, hs_key, sizeof hs_key, &j), 0);
    ck_assert_int_eq(jwt_get_alg(j), JWT_ALG_HS256);
    ck_assert_str_eq(jwt_get_grant(j, "sun"), "aidc");
    long iat = jwt_get_grant_int(j, "iat"), jexp = jwt_get_grant_int(j, "exp");
    ck_assert_int_eq(iat, (long)now);
    ck_assert_int_eq(jexp - iat, SLURMREST_TOKEN_TTL);
    ck_assert_int_eq(jexp, (long)exp);
    jwt_free(j);

    /* the whole key signs: not cut at the NUL, not trimmed of its last newline */
    unsigned char other[sizeof hs_key];
    memcpy(other, hs_key, sizeof other);
    other[20] ^= 1; /* a byte after the NUL */
    ck_assert_int_ne(decode_with(out, other, sizeof other, &j), 0);
    jwt_free(j);
    ck_assert_int_ne(decode_with(out, hs_key, sizeof hs_key - 1, &j), 0);
    jwt_free(j);
    ck_assert_int_ne(decode_with(out, hs_key, 1, &j), 0);
    jwt_free(j);

    /* another user: its own sun */
    rc = slurmrest_token(hs_key, sizeof hs_key, "svc-train", now, out, sizeof out, &exp, err,
                         sizeof err);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(decode_with(out, hs_key, sizeof hs_key, &j), 0);
    ck_assert_str_eq(jwt_get_grant(j, "sun"), "svc-train");
    jwt_free(j);
}
END_TEST

START_TEST(test_token_refused)
{
    char out[4096], err[256];
    time_t exp = 123;
    /* 15 bytes: too short for a key, not a JWT */
    err[0] = '\0';
    int rc =
        slurmrest_token(hs_key, 15, "aidc", 1760000000, out, sizeof out, &exp, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_EINVAL);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(exp, 0);
    ck_assert(err[0] != '\0');
    /* nothing at all */
    rc = slurmrest_token((const unsigned char *)"", 0, "aidc", 1760000000, out, sizeof out, &exp,
                         err, sizeof err);
    ck_assert_int_eq(rc, AIDC_EINVAL);
    /* a broken JWT is a (short) key, refused */
    rc = slurmrest_token((const unsigned char *)"eyJhbGci.x", 10, "aidc", 1760000000, out,
                         sizeof out, &exp, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_EINVAL);
    /* 16 bytes: the shortest key taken */
    rc = slurmrest_token(hs_key, 16, "aidc", 1760000000, out, sizeof out, &exp, err, sizeof err);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(exp, 1760000000 + SLURMREST_TOKEN_TTL);
    /* a minted token that does not fit the buffer: an error, nothing partial */
    char small[32];
    rc = slurmrest_token(hs_key, sizeof hs_key, "aidc", 1760000000, small, sizeof small, &exp, err,
                         sizeof err);
    ck_assert_int_ne(rc, 0);
    ck_assert_str_eq(small, "");
}
END_TEST

/* ---- credref ------------------------------------------------------------------------ */

struct valid_case {
    const char *ref;
    bool valid;
};

static const struct valid_case valid_cases[] = {
    {"file:/etc/slurm/jwt_hs256.key", true},
    {"file:/k", true},
    {"env:SLURM_JWT", true},
    {"env:a_1", true},
    {"env:_X9", true},
    {"env:9X", false},
    {"file:/etc/slurm/../shadow", false},
    {"file:", false},
    {"file:relative/key", false},
    {"file://etc/x", true}, /* an absolute path "//etc/x" */
    {"env:", false},
    {"env:SLURM-JWT", false},
    {"env:A B", false},
    {"env:$X", false},
    {"FILE:/etc/key", false},
    {"/etc/slurm/jwt_hs256.key", false},
    {"vault:secret/slurm", false},
    {"", false},
};

START_TEST(test_credref_valid)
{
    const struct valid_case *c = &valid_cases[_i];
    ck_assert_msg(credref_valid(c->ref) == c->valid, "\"%s\": %d", c->ref, !c->valid);
}
END_TEST

START_TEST(test_credref_valid_long)
{
    /* a file ref of at most 1024 bytes */
    char ref[1100] = "file:/";
    memset(ref + 6, 'a', 1018);
    ref[1024] = '\0';
    ck_assert(credref_valid(ref));
    ref[1024] = 'a';
    ref[1025] = '\0';
    ck_assert(!credref_valid(ref));
    /* a variable name of at most 128 bytes */
    char env[200] = "env:";
    memset(env + 4, 'A', 128);
    env[132] = '\0';
    ck_assert(credref_valid(env));
    env[132] = 'A';
    env[133] = '\0';
    ck_assert(!credref_valid(env));
}
END_TEST

/* A temporary file holding n bytes; its path in path (PATH_MAX-ish). */
static void temp_file(char *path, size_t pathsz, const void *data, size_t n)
{
    int w = snprintf(path, pathsz, "/tmp/aidc-test-slurm-XXXXXX");
    ck_assert(w > 0 && (size_t)w < pathsz);
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, data, n) == (ssize_t)n);
    ck_assert_int_eq(close(fd), 0);
}

START_TEST(test_credref_file_binary)
{
    unsigned char data[300];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 7 + 3);
    data[0] = 0;
    data[5] = '\n';
    data[sizeof data - 1] = '\n';
    char path[64], ref[80], err[256] = "";
    temp_file(path, sizeof path, data, sizeof data);
    snprintf(ref, sizeof ref, "file:%s", path);
    unsigned char *out = malloc(CREDREF_MAX + 1);
    ck_assert_ptr_nonnull(out);
    memset(out, 0xee, CREDREF_MAX + 1);
    size_t len = 0;
    int rc = credref_read(ref, out, CREDREF_MAX + 1, &len, err, sizeof err);
    unlink(path);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_uint_eq(len, sizeof data);
    ck_assert(memcmp(out, data, sizeof data) == 0);
    ck_assert_uint_eq(out[len], 0);
    free(out);
}
END_TEST

START_TEST(test_credref_file_sizes)
{
    /* a buffer of 16 holds 15 bytes and the NUL */
    const char *secret = "SECRET-0123456789abcdef";
    char path[64], ref[80], err[256];
    unsigned char out[16];
    size_t len = 99;

    temp_file(path, sizeof path, secret, 15);
    snprintf(ref, sizeof ref, "file:%s", path);
    err[0] = '\0';
    int rc = credref_read(ref, out, sizeof out, &len, err, sizeof err);
    unlink(path);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_uint_eq(len, 15);
    ck_assert(memcmp(out, secret, 15) == 0 && out[15] == '\0');

    temp_file(path, sizeof path, secret, 16);
    snprintf(ref, sizeof ref, "file:%s", path);
    err[0] = '\0';
    rc = credref_read(ref, out, sizeof out, &len, err, sizeof err);
    unlink(path);
    ck_assert_int_eq(rc, AIDC_ETOOBIG);
    ck_assert_uint_eq(len, 0);
    ck_assert_msg(contains(err, path), "err: %s", err);
    ck_assert_msg(!contains(err, "SECRET"), "err shows the secret: %s", err);
    ck_assert_uint_eq(out[0], 0);

    temp_file(path, sizeof path, secret, strlen(secret));
    snprintf(ref, sizeof ref, "file:%s", path);
    rc = credref_read(ref, out, sizeof out, &len, err, sizeof err);
    unlink(path);
    ck_assert_int_eq(rc, AIDC_ETOOBIG);
    ck_assert_msg(!contains(err, "SECRET"), "err shows the secret: %s", err);

    /* an empty file: no bytes */
    temp_file(path, sizeof path, "", 0);
    snprintf(ref, sizeof ref, "file:%s", path);
    rc = credref_read(ref, out, sizeof out, &len, err, sizeof err);
    unlink(path);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(len, 0);
}
END_TEST

/* A credentials_ref file others may read is refused at each use (lib/secfile.h). */
START_TEST(test_credref_file_others_can_read)
{
    const char *secret = "SECRET-credref-0123456789";
    char path[64], ref[80], err[512] = "";
    unsigned char out[64];
    size_t len = 9;
    temp_file(path, sizeof path, secret, strlen(secret));
    snprintf(ref, sizeof ref, "file:%s", path);
    ck_assert_int_eq(chmod(path, 0644), 0);
    int rc = credref_read(ref, out, sizeof out, &len, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_EFORBIDDEN);
    ck_assert_uint_eq(len, 0);
    ck_assert_msg(contains(err, path) && contains(err, "mode 0644") &&
                      contains(err, "credentials_ref"),
                  "err: %s", err);
    ck_assert_msg(!contains(err, "SECRET"), "err shows the secret: %s", err);
    ck_assert_int_eq(chmod(path, 0640), 0);
    ck_assert_int_eq(credref_read(ref, out, sizeof out, &len, err, sizeof err), AIDC_EFORBIDDEN);
    ck_assert_int_eq(chmod(path, 0400), 0);
    rc = credref_read(ref, out, sizeof out, &len, err, sizeof err);
    unlink(path);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_uint_eq(len, strlen(secret));
}
END_TEST

START_TEST(test_credref_file_missing)
{
    char ref[128], err[256] = "";
    snprintf(ref, sizeof ref, "file:/tmp/aidc-test-slurm-missing-%ld/jwt.key", (long)getpid());
    unsigned char out[64];
    size_t len = 7;
    int rc = credref_read(ref, out, sizeof out, &len, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_ENOTFOUND);
    ck_assert_uint_eq(len, 0);
    ck_assert_msg(contains(err, ref + 5), "err: %s", err);

    /* a directory: cannot be read */
    err[0] = '\0';
    rc = credref_read("file:/tmp", out, sizeof out, &len, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_EIO);
    ck_assert_msg(contains(err, "/tmp"), "err: %s", err);

    /* not a credentials_ref */
    rc = credref_read("vault:x", out, sizeof out, &len, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_EINVAL);
}
END_TEST

START_TEST(test_credref_env)
{
    const char *name = "AIDC_TEST_SLURM_CREDREF";
    const char *value = "eyJsecret.value.SECRET";
    unsigned char out[256];
    char err[256] = "";
    size_t len = 0;
    ck_assert_int_eq(setenv(name, value, 1), 0);
    int rc = credref_read("env:AIDC_TEST_SLURM_CREDREF", out, sizeof out, &len, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_uint_eq(len, strlen(value));
    ck_assert_str_eq((const char *)out, value);

    /* too long for the buffer: named, not shown */
    unsigned char small[8];
    err[0] = '\0';
    rc = credref_read("env:AIDC_TEST_SLURM_CREDREF", small, sizeof small, &len, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_ETOOBIG);
    ck_assert_uint_eq(len, 0);
    ck_assert_msg(contains(err, name), "err: %s", err);
    ck_assert_msg(!contains(err, "SECRET") && !contains(err, "eyJsecret"), "err: %s", err);

    /* empty, then unset: not found, named */
    ck_assert_int_eq(setenv(name, "", 1), 0);
    err[0] = '\0';
    rc = credref_read("env:AIDC_TEST_SLURM_CREDREF", out, sizeof out, &len, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_ENOTFOUND);
    ck_assert_msg(contains(err, name), "err: %s", err);
    ck_assert_int_eq(unsetenv(name), 0);
    err[0] = '\0';
    rc = credref_read("env:AIDC_TEST_SLURM_CREDREF", out, sizeof out, &len, err, sizeof err);
    ck_assert_int_eq(rc, AIDC_ENOTFOUND);
    ck_assert_uint_eq(len, 0);
    ck_assert_msg(contains(err, name), "err: %s", err);
}
END_TEST

/* credref and slurmrest_token together, as slurmrest_call uses them. */
START_TEST(test_credref_key_file_to_token)
{
    char path[64], ref[80], err[256] = "";
    temp_file(path, sizeof path, hs_key, sizeof hs_key);
    snprintf(ref, sizeof ref, "file:%s", path);
    unsigned char *secret = malloc(CREDREF_MAX + 1);
    ck_assert_ptr_nonnull(secret);
    size_t len = 0;
    int rc = credref_read(ref, secret, CREDREF_MAX + 1, &len, err, sizeof err);
    unlink(path);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(len, sizeof hs_key);
    char tok[4096];
    time_t exp = 0;
    rc = slurmrest_token(secret, len, "aidc", 1760000000, tok, sizeof tok, &exp, err, sizeof err);
    ck_assert_int_eq(rc, 0);
    jwt_t *j = NULL;
    ck_assert_int_eq(decode_with(tok, hs_key, sizeof hs_key, &j), 0);
    ck_assert_int_eq(jwt_get_alg(j), JWT_ALG_HS256);
    jwt_free(j);
    free(secret);
}
END_TEST


/* ---- suite -------------------------------------------------------------------------- */

int main(void)
{
    Suite *s = suite_create("slurm_token");
    TCase *tc = slurm_tcase(s, "token");
    tcase_add_test(tc, test_token_jwt_as_is);
    tcase_add_test(tc, test_token_minted);
    tcase_add_test(tc, test_token_refused);

    tc = slurm_tcase(s, "credref");
    tcase_add_loop_test(tc, test_credref_valid, 0, COUNT(valid_cases));
    tcase_add_test(tc, test_credref_valid_long);
    tcase_add_test(tc, test_credref_file_binary);
    tcase_add_test(tc, test_credref_file_sizes);
    tcase_add_test(tc, test_credref_file_others_can_read);
    tcase_add_test(tc, test_credref_file_missing);
    tcase_add_test(tc, test_credref_env);
    tcase_add_test(tc, test_credref_key_file_to_token);
    return suite_run(s);
}
