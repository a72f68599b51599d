/*
 * test_session.c - session JWTs: minting, verification (every claim, the
 * algorithm, the signature) and the signing key file.
 *
 * libjwt itself validates no claims and would accept "none" or another HMAC
 * (PITFALLS.md): these tests build such tokens by hand or with libjwt and
 * check that session_verify refuses them. A control token made the same way
 * with the right algorithm and claims is accepted, so a refusal is known to
 * come from the defect under test.
 */
#include "tests/support/suite.h"
#include "lib/crypto.h"
#include "lib/err.h"
#include "server/session.h"

#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <jwt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const unsigned char key_a[32] = "0123456789abcdef0123456789abcdef";
static const unsigned char key_b[32] = "fedcba9876543210fedcba9876543210";
static const char *const user = "4f9d2c3a-8b1e-4c7d-9a6f-2e5b8c1d0f3a";
static const char *const jti = "0b6e1f2a-3c4d-4e5f-8a7b-9c0d1e2f3a4b";
#define EPOCH 7L /* the user's session epoch ("sep") */

static void setup(void)
{
    session_key_set(key_a, sizeof key_a);
}

/* A token made with libjwt: alg, key and the claims as JSON text. */
static char *jwt_make(jwt_alg_t alg, const unsigned char *k, size_t klen, const char *claims)
{
    jwt_t *j = NULL;
    ck_assert_int_eq(jwt_new(&j), 0);
    ck_assert_int_eq(jwt_set_alg(j, alg, k, (int)klen), 0);
    ck_assert_int_eq(jwt_add_grants_json(j, claims), 0);
    char *tok = jwt_encode_str(j);
    ck_assert_ptr_nonnull(tok);
    jwt_free(j);
    return tok;
}

/* The claims of a session token as JSON text; NULL strings are left out. */
static char *claims_json(const char *iss, const char *sub, const char *id, long iat, long exp)
{
    json_t *o = json_object();
    json_object_set_new(o, "sep", json_integer(EPOCH));
    if (iss)
        json_object_set_new(o, "iss", json_string(iss));
    if (sub)
        json_object_set_new(o, "sub", json_string(sub));
    if (id)
        json_object_set_new(o, "jti", json_string(id));
    json_object_set_new(o, "iat", json_integer(iat));
    json_object_set_new(o, "exp", json_integer(exp));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* An HS256 token over the given claims with key_a (claims freed). */
static char *hs256(char *claims)
{
    char *tok = jwt_make(JWT_ALG_HS256, key_a, sizeof key_a, claims);
    free(claims);
    return tok;
}

static char *b64url(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(n * 4 / 3 + 8);
    ck_assert_ptr_nonnull(out);
    crypto_b64url_encode((const unsigned char *)s, n, out, n * 4 / 3 + 8);
    return out;
}

/* The decoded payload (middle part) of a token, as new JSON. */
static json_t *payload_of(const char *tok)
{
    const char *a = strchr(tok, '.');
    ck_assert_ptr_nonnull(a);
    const char *b = strchr(a + 1, '.');
    ck_assert_ptr_nonnull(b);
    unsigned char buf[1024];
    long n = crypto_b64url_decode(a + 1, (size_t)(b - a - 1), buf, sizeof buf - 1);
    ck_assert_int_gt(n, 0);
    json_t *j = json_loadb((const char *)buf, (size_t)n, 0, NULL);
    ck_assert_ptr_nonnull(j);
    return j;
}

static void expect_rejected(const char *tok, time_t now, const char *why)
{
    struct session_claims c;
    memset(&c, 0x5a, sizeof c);
    ck_assert_msg(session_verify(tok, now, &c) == AIDC_EFORBIDDEN, "%s: token accepted", why);
}

/* ---- mint and verify ------------------------------------------------------- */

START_TEST(test_round_trip)
{
    struct session_claims minted, got;
    time_t before = time(NULL);
    char *tok = session_mint(user, EPOCH, 3600, &minted);
    time_t after = time(NULL);
    ck_assert_ptr_nonnull(tok);
    ck_assert_str_eq(minted.sub, user);
    ck_assert(crypto_uuid_valid(minted.jti));
    ck_assert_int_ge(minted.iat, before);
    ck_assert_int_le(minted.iat, after);
    ck_assert_int_eq(minted.exp, minted.iat + 3600);
    ck_assert_int_eq(minted.epoch, EPOCH);

    memset(&got, 0, sizeof got);
    ck_assert_int_eq(session_verify(tok, time(NULL), &got), 0);
    ck_assert_str_eq(got.sub, user);
    ck_assert_str_eq(got.jti, minted.jti);
    ck_assert_int_eq(got.iat, minted.iat);
    ck_assert_int_eq(got.exp, minted.exp);
    ck_assert_int_eq(got.epoch, EPOCH);
    ck_assert_int_eq(session_verify(tok, time(NULL), NULL), 0);

    /* what is inside: HS256, iss "aidc" */
    jwt_t *j = NULL;
    ck_assert_int_eq(jwt_decode(&j, tok, key_a, (int)sizeof key_a), 0);
    ck_assert_int_eq(jwt_get_alg(j), JWT_ALG_HS256);
    ck_assert_str_eq(jwt_get_grant(j, "iss"), "aidc");
    ck_assert_str_eq(jwt_get_grant(j, "sub"), user);
    ck_assert_str_eq(jwt_get_grant(j, "jti"), minted.jti);
    ck_assert_int_eq(jwt_get_grant_int(j, "sep"), EPOCH);
    jwt_free(j);
    free(tok);
}
END_TEST

START_TEST(test_each_session_has_its_own_jti)
{
    struct session_claims a, b;
    char *t1 = session_mint(user, EPOCH, 3600, &a);
    char *t2 = session_mint(user, EPOCH, 3600, &b);
    ck_assert_ptr_nonnull(t1);
    ck_assert_ptr_nonnull(t2);
    ck_assert_str_ne(a.jti, b.jti);
    ck_assert_str_ne(t1, t2);
    free(t1);
    free(t2);
}
END_TEST

START_TEST(test_control_token_accepted)
{
    time_t now = time(NULL);
    char *tok = hs256(claims_json("aidc", user, jti, (long)now, (long)now + 600));
    struct session_claims c;
    ck_assert_int_eq(session_verify(tok, now, &c), 0);
    ck_assert_str_eq(c.sub, user);
    ck_assert_str_eq(c.jti, jti);
    ck_assert_int_eq(c.epoch, EPOCH);
    free(tok);
}
END_TEST

START_TEST(test_expired)
{
    struct session_claims m;
    char *tok = session_mint(user, EPOCH, 300, &m);
    ck_assert_ptr_nonnull(tok);
    ck_assert_int_eq(session_verify(tok, m.exp - 1, NULL), 0);
    expect_rejected(tok, m.exp, "at exp");
    expect_rejected(tok, m.exp + 1, "after exp");
    expect_rejected(tok, m.exp + 86400, "a day after exp");
    free(tok);
}
END_TEST

START_TEST(test_issued_in_the_future)
{
    struct session_claims m;
    char *tok = session_mint(user, EPOCH, 3600, &m);
    ck_assert_ptr_nonnull(tok);
    /* up to a minute of clock skew is tolerated */
    ck_assert_int_eq(session_verify(tok, m.iat - 60, NULL), 0);
    expect_rejected(tok, m.iat - 61, "iat 61 s ahead");
    expect_rejected(tok, m.iat - 3000, "iat 50 min ahead");
    free(tok);
}
END_TEST

START_TEST(test_exp_not_after_iat)
{
    time_t now = time(NULL);
    char *tok = hs256(claims_json("aidc", user, jti, (long)now + 30, (long)now + 20));
    expect_rejected(tok, now, "exp before iat");
    free(tok);
}
END_TEST

START_TEST(test_tampered_payload)
{
    struct session_claims m;
    char *tok = session_mint(user, EPOCH, 3600, &m);
    ck_assert_ptr_nonnull(tok);
    /* the same token with another sub and the original signature */
    json_t *p = payload_of(tok);
    json_object_set_new(p, "sub", json_string("11111111-2222-4333-8444-555555555555"));
    char *ptext = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    char *p64 = b64url(ptext);
    const char *dot1 = strchr(tok, '.'), *dot2 = strrchr(tok, '.');
    char forged[2048];
    snprintf(forged, sizeof forged, "%.*s.%s%s", (int)(dot1 - tok), tok, p64, dot2);
    expect_rejected(forged, time(NULL), "payload changed");

    /* a longer expiry is the classic forgery */
    p = payload_of(tok);
    json_object_set_new(p, "exp", json_integer((json_int_t)m.exp + 86400 * 365));
    free(ptext);
    free(p64);
    ptext = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    p64 = b64url(ptext);
    snprintf(forged, sizeof forged, "%.*s.%s%s", (int)(dot1 - tok), tok, p64, dot2);
    expect_rejected(forged, time(NULL), "exp extended");

    free(ptext);
    free(p64);
    free(tok);
}
END_TEST

START_TEST(test_tampered_signature)
{
    char *tok = session_mint(user, EPOCH, 3600, NULL);
    ck_assert_ptr_nonnull(tok);
    char *sig = strrchr(tok, '.') + 1;
    char saved = sig[0];
    sig[0] = saved == 'A' ? 'B' : 'A';
    expect_rejected(tok, time(NULL), "first signature character changed");
    sig[0] = saved;
    ck_assert_int_eq(session_verify(tok, time(NULL), NULL), 0);
    /* no signature at all */
    sig[0] = '\0';
    expect_rejected(tok, time(NULL), "signature removed");
    free(tok);
}
END_TEST

START_TEST(test_other_key)
{
    char *tok = session_mint(user, EPOCH, 3600, NULL);
    ck_assert_ptr_nonnull(tok);
    session_key_set(key_b, sizeof key_b);
    expect_rejected(tok, time(NULL), "verified with another key");
    session_key_set(key_a, sizeof key_a);
    ck_assert_int_eq(session_verify(tok, time(NULL), NULL), 0);
    free(tok);

    /* signed by someone who has another key */
    time_t now = time(NULL);
    char *claims = claims_json("aidc", user, jti, (long)now, (long)now + 600);
    tok = jwt_make(JWT_ALG_HS256, key_b, sizeof key_b, claims);
    free(claims);
    expect_rejected(tok, now, "signed with another key");
    free(tok);
}
END_TEST

START_TEST(test_no_key)
{
    char *tok = session_mint(user, EPOCH, 3600, NULL);
    ck_assert_ptr_nonnull(tok);
    session_key_set(key_a, 0);
    expect_rejected(tok, time(NULL), "no key configured");
    free(tok);
}
END_TEST

START_TEST(test_alg_none)
{
    time_t now = time(NULL);
    char *claims = claims_json("aidc", user, jti, (long)now, (long)now + 600);
    char *h64 = b64url("{\"alg\":\"none\",\"typ\":\"JWT\"}");
    char *p64 = b64url(claims);
    char tok[2048];
    snprintf(tok, sizeof tok, "%s.%s.", h64, p64);
    expect_rejected(tok, now, "alg none");
    /* the same with a signature part that is not empty */
    snprintf(tok, sizeof tok, "%s.%s.c2ln", h64, p64);
    expect_rejected(tok, now, "alg none with a signature");
    /* and "None", which some libraries treat alike */
    free(h64);
    h64 = b64url("{\"alg\":\"None\",\"typ\":\"JWT\"}");
    snprintf(tok, sizeof tok, "%s.%s.", h64, p64);
    expect_rejected(tok, now, "alg None");
    free(h64);
    free(p64);
    free(claims);
}
END_TEST

START_TEST(test_other_hmac_same_key)
{
    time_t now = time(NULL);
    char *claims = claims_json("aidc", user, jti, (long)now, (long)now + 600);
    char *tok = jwt_make(JWT_ALG_HS512, key_a, sizeof key_a, claims);
    expect_rejected(tok, now, "HS512 with the right key");
    free(tok);
    tok = jwt_make(JWT_ALG_HS384, key_a, sizeof key_a, claims);
    expect_rejected(tok, now, "HS384 with the right key");
    free(tok);
    free(claims);
}
END_TEST

START_TEST(test_bad_claims)
{
    time_t now = time(NULL);
    char *tok;
    tok = hs256(claims_json("other", user, jti, (long)now, (long)now + 600));
    expect_rejected(tok, now, "wrong iss");
    free(tok);
    tok = hs256(claims_json("AIDC", user, jti, (long)now, (long)now + 600));
    expect_rejected(tok, now, "iss in capitals");
    free(tok);
    tok = hs256(claims_json(NULL, user, jti, (long)now, (long)now + 600));
    expect_rejected(tok, now, "no iss");
    free(tok);
    tok = hs256(claims_json("aidc", "alice", jti, (long)now, (long)now + 600));
    expect_rejected(tok, now, "sub not a UUID");
    free(tok);
    tok = hs256(claims_json("aidc", NULL, jti, (long)now, (long)now + 600));
    expect_rejected(tok, now, "no sub");
    free(tok);
    tok = hs256(claims_json("aidc", user, "session-1", (long)now, (long)now + 600));
    expect_rejected(tok, now, "jti not a UUID");
    free(tok);
    tok = hs256(claims_json("aidc", user, NULL, (long)now, (long)now + 600));
    expect_rejected(tok, now, "no jti");
    free(tok);

    /* claims with one defect each, everything else right */
    static const struct {
        const char *claim;
        const char *value; /* JSON text; NULL = leave the claim out */
        const char *why;
    } cases[] = {
        {"exp", NULL, "no exp"},
        {"exp", "\"4102444800\"", "exp as a string"},
        {"exp", "4102444800.5", "exp not an integer"},
        {"iat", NULL, "no iat"},
        {"iat", "\"1\"", "iat as a string"},
        {"sep", NULL, "no sep"},
        {"sep", "\"7\"", "sep as a string"},
        {"sep", "7.5", "sep not an integer"},
        {"sub", "42", "sub a number"},
        {"jti", "null", "jti null"},
        {"iss", "[\"aidc\"]", "iss an array"},
    };
    /* collect every case accepted, to report them all at once */
    char accepted[512] = "";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = claims_json("aidc", user, jti, (long)now, (long)now + 600);
        json_t *o = json_loads(text, 0, NULL);
        free(text);
        ck_assert_ptr_nonnull(o);
        if (cases[i].value)
            json_object_set_new(o, cases[i].claim,
                                json_loads(cases[i].value, JSON_DECODE_ANY, NULL));
        else
            json_object_del(o, cases[i].claim);
        text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        tok = jwt_make(JWT_ALG_HS256, key_a, sizeof key_a, text);
        free(text);
        if (session_verify(tok, now, NULL) != AIDC_EFORBIDDEN) {
            strncat(accepted, cases[i].why, sizeof accepted - strlen(accepted) - 1);
            strncat(accepted, "; ", sizeof accepted - strlen(accepted) - 1);
        }
        free(tok);
    }
    ck_assert_msg(accepted[0] == '\0', "tokens accepted: %s", accepted);
    /* the control: the same claims without a defect are accepted */
    tok = hs256(claims_json("aidc", user, jti, (long)now, (long)now + 600));
    ck_assert_int_eq(session_verify(tok, now, NULL), 0);
    free(tok);
}
END_TEST

START_TEST(test_minted_non_uuid_sub_rejected)
{
    char *tok = session_mint("not-a-uuid", EPOCH, 3600, NULL);
    ck_assert_ptr_nonnull(tok);
    expect_rejected(tok, time(NULL), "minted with a non-UUID sub");
    free(tok);
}
END_TEST

START_TEST(test_garbage)
{
    time_t now = time(NULL);
    expect_rejected("", now, "empty");
    expect_rejected("a.b.c", now, "a.b.c");
    expect_rejected("not a token", now, "words");
    expect_rejected("..", now, "dots");
    char *big = malloc(5000);
    ck_assert_ptr_nonnull(big);
    memset(big, 'A', 4999);
    big[4999] = '\0';
    big[100] = '.';
    big[200] = '.';
    expect_rejected(big, now, "5000 bytes");
    free(big);
}
END_TEST

/* ---- key file ---------------------------------------------------------------- */

static char tmpdir[64];

static void key_setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/aidc-ut-session-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void key_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
}

static void write_file(const char *path, const void *data, size_t n, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
    close(fd);
}

START_TEST(test_key_created)
{
    char dir[128], path[160], err[256] = "";
    snprintf(dir, sizeof dir, "%s/data", tmpdir);
    snprintf(path, sizeof path, "%s/jwt.key", dir);
    ck_assert_msg(session_key_load(path, err, sizeof err) == 0, "%s", err);

    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq(st.st_size, 64);
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);

    /* the key in use is the file's: a token survives reloading it */
    char *tok = session_mint(user, EPOCH, 3600, NULL);
    ck_assert_ptr_nonnull(tok);
    session_key_set(key_b, sizeof key_b);
    expect_rejected(tok, time(NULL), "before reload");
    ck_assert_msg(session_key_load(path, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(session_verify(tok, time(NULL), NULL), 0);
    free(tok);

    /* loading again does not replace the key */
    unsigned char k1[64], k2[64];
    int fd = open(path, O_RDONLY);
    ck_assert_int_eq(read(fd, k1, sizeof k1), 64);
    close(fd);
    ck_assert_int_eq(session_key_load(path, err, sizeof err), 0);
    fd = open(path, O_RDONLY);
    ck_assert_int_eq(read(fd, k2, sizeof k2), 64);
    close(fd);
    ck_assert(memcmp(k1, k2, 64) == 0);
}
END_TEST

START_TEST(test_key_from_file_is_used)
{
    char path[160], err[256] = "";
    unsigned char k[40];
    memset(k, 'k', sizeof k);
    snprintf(path, sizeof path, "%s/jwt.key", tmpdir);
    write_file(path, k, sizeof k, 0600);
    ck_assert_msg(session_key_load(path, err, sizeof err) == 0, "%s", err);
    char *tok = session_mint(user, EPOCH, 3600, NULL);
    ck_assert_ptr_nonnull(tok);
    session_key_set(k, sizeof k);
    ck_assert_int_eq(session_verify(tok, time(NULL), NULL), 0);
    session_key_set(k, sizeof k - 1);
    expect_rejected(tok, time(NULL), "one byte less of the key");
    free(tok);
}
END_TEST

START_TEST(test_key_readable_by_others_refused)
{
    char path[160], err[256] = "";
    unsigned char k[64];
    memset(k, 'k', sizeof k);
    snprintf(path, sizeof path, "%s/jwt.key", tmpdir);
    write_file(path, k, sizeof k, 0644);
    ck_assert_int_eq(session_key_load(path, err, sizeof err), AIDC_EINVAL);
    ck_assert_msg(strstr(err, path) != NULL, "message \"%s\" does not name the file", err);
    ck_assert_msg(strstr(err, "AIDC_JWT_KEY_FILE") != NULL, "%s", err);

    ck_assert_int_eq(chmod(path, 0640), 0);
    ck_assert_int_eq(session_key_load(path, err, sizeof err), AIDC_EINVAL);
    ck_assert_int_eq(chmod(path, 0604), 0);
    ck_assert_int_eq(session_key_load(path, err, sizeof err), AIDC_EINVAL);
    ck_assert_int_eq(chmod(path, 0400), 0);
    ck_assert_msg(session_key_load(path, err, sizeof err) == 0, "%s", err);
}
END_TEST

START_TEST(test_key_too_short_refused)
{
    char path[160], err[256] = "";
    unsigned char k[32];
    memset(k, 'k', sizeof k);
    snprintf(path, sizeof path, "%s/jwt.key", tmpdir);
    write_file(path, k, 16, 0600);
    ck_assert_int_eq(session_key_load(path, err, sizeof err), AIDC_EINVAL);
    ck_assert_msg(strstr(err, "32") != NULL, "%s", err);
    write_file(path, k, 31, 0600);
    ck_assert_int_eq(session_key_load(path, err, sizeof err), AIDC_EINVAL);
    write_file(path, k, 0, 0600);
    ck_assert_int_eq(session_key_load(path, err, sizeof err), AIDC_EINVAL);
    write_file(path, k, 32, 0600);
    ck_assert_msg(session_key_load(path, err, sizeof err) == 0, "%s", err);
}
END_TEST

START_TEST(test_key_not_a_regular_file)
{
    char path[160], err[256] = "";
    snprintf(path, sizeof path, "%s/dir.key", tmpdir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_ne(session_key_load(path, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "AIDC_JWT_KEY_FILE"));
}
END_TEST

START_TEST(test_key_directory_cannot_be_created)
{
    char path[160], err[256] = "";
    snprintf(path, sizeof path, "%s/a/b/jwt.key", tmpdir); /* a/ does not exist */
    ck_assert_int_ne(session_key_load(path, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "AIDC_JWT_KEY_FILE"));
}
END_TEST

static Suite *session_suite(void)
{
    Suite *s = suite_create("session");
    TCase *tc = tcase_create("jwt");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_each_session_has_its_own_jti);
    tcase_add_test(tc, test_control_token_accepted);
    tcase_add_test(tc, test_expired);
    tcase_add_test(tc, test_issued_in_the_future);
    tcase_add_test(tc, test_exp_not_after_iat);
    tcase_add_test(tc, test_tampered_payload);
    tcase_add_test(tc, test_tampered_signature);
    tcase_add_test(tc, test_other_key);
    tcase_add_test(tc, test_no_key);
    tcase_add_test(tc, test_alg_none);
    tcase_add_test(tc, test_other_hmac_same_key);
    tcase_add_test(tc, test_bad_claims);
    tcase_add_test(tc, test_minted_non_uuid_sub_rejected);
    tcase_add_test(tc, test_garbage);
    suite_add_tcase(s, tc);

    TCase *kf = tcase_create("key file");
    tcase_add_checked_fixture(kf, key_setup, key_teardown);
    tcase_add_checked_fixture(kf, setup, NULL);
    tcase_add_test(kf, test_key_created);
    tcase_add_test(kf, test_key_from_file_is_used);
    tcase_add_test(kf, test_key_readable_by_others_refused);
    tcase_add_test(kf, test_key_too_short_refused);
    tcase_add_test(kf, test_key_not_a_regular_file);
    tcase_add_test(kf, test_key_directory_cannot_be_created);
    suite_add_tcase(s, kf);
    return s;
}

int main(void)
{
    return suite_run(session_suite());
}
