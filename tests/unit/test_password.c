/*
 * test_password.c - scrypt password hashes and the password policy.
 *
 * Each hash or verification at the production cost (N = 2^15) takes tens of
 * milliseconds, and so does every failed parse (it spends the same time on
 * purpose): the tests keep their number small and use a 60 s timeout.
 * Hashes at a low cost are built here with OpenSSL directly, to check that
 * verification uses the parameters stored in the hash.
 */
#include "lib/crypto.h"
#include "server/password.h"
#include "tests/support/suite.h"

#include <check.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "数据中心平台管理系统": ten Chinese characters */
#define ZH10                                                                                       \
    "\xe6\x95\xb0\xe6\x8d\xae\xe4\xb8\xad\xe5\xbf\x83\xe5\xb9\xb3\xe5\x8f\xb0"                     \
    "\xe7\xae\xa1\xe7\x90\x86\xe7\xb3\xbb\xe7\xbb\x9f"
#define ZH9                                                                                        \
    "\xe6\x95\xb0\xe6\x8d\xae\xe4\xb8\xad\xe5\xbf\x83\xe5\xb9\xb3\xe5\x8f\xb0"                     \
    "\xe7\xae\xa1\xe7\x90\x86\xe7\xb3\xbb"

static const char *const pw = "correct horse battery staple";

/* An encoded hash of p with the given cost, made without password_hash. */
static char *hash_with(const char *p, int ln, int r, int par, const unsigned char *salt,
                       size_t saltlen)
{
    unsigned char key[32];
    char s64[128], k64[64];
    uint64_t n = (uint64_t)1 << ln;
    ck_assert_int_eq(EVP_PBE_scrypt(p, strlen(p), salt, saltlen, n, (uint64_t)r, (uint64_t)par, 0,
                                    key, sizeof key),
                     1);
    crypto_b64url_encode(salt, saltlen, s64, sizeof s64);
    crypto_b64url_encode(key, sizeof key, k64, sizeof k64);
    char *out = malloc(256);
    ck_assert_ptr_nonnull(out);
    snprintf(out, 256, "$scrypt$ln=%d,r=%d,p=%d$%s$%s", ln, r, par, s64, k64);
    return out;
}

static const unsigned char salt16[16] = "0123456789abcdef";

START_TEST(test_round_trip)
{
    char *h1 = password_hash(pw);
    ck_assert_ptr_nonnull(h1);
    ck_assert_msg(strncmp(h1, "$scrypt$ln=15,r=8,p=1$", 22) == 0, "unexpected format %s", h1);
    ck_assert(password_verify(pw, h1));
    ck_assert(!password_verify("correct horse battery stapl", h1));
    ck_assert(!password_needs_rehash(h1));

    /* a second hash of the same password uses another salt */
    char *h2 = password_hash(pw);
    ck_assert_ptr_nonnull(h2);
    ck_assert_str_ne(h1, h2);
    /* the 16-byte salts (22 base64url characters after the parameters) differ */
    ck_assert_int_ne(strncmp(h1 + 22, h2 + 22, 22), 0);
    free(h1);
    free(h2);
}
END_TEST

START_TEST(test_null_encoded)
{
    ck_assert(!password_verify(pw, NULL));
    ck_assert(password_needs_rehash(NULL));
}
END_TEST

START_TEST(test_stored_parameters_are_used)
{
    /* a cheap hash (N = 2^10): verification must use ln/r/p from the string */
    char *h = hash_with(pw, 10, 8, 1, salt16, sizeof salt16);
    ck_assert(password_verify(pw, h));
    ck_assert(!password_verify("wrong password!", h));
    ck_assert(password_needs_rehash(h));
    free(h);

    h = hash_with(pw, 10, 4, 2, salt16, sizeof salt16);
    ck_assert(password_verify(pw, h));
    ck_assert(password_needs_rehash(h));
    free(h);

    /* non-ASCII passwords hash by their UTF-8 bytes */
    h = hash_with(ZH10, 10, 8, 1, salt16, sizeof salt16);
    ck_assert(password_verify(ZH10, h));
    ck_assert(!password_verify(ZH9, h));
    free(h);
}
END_TEST

START_TEST(test_malformed_encodings)
{
    char *good = hash_with(pw, 10, 8, 1, salt16, sizeof salt16);
    ck_assert(password_verify(pw, good));
    size_t len = strlen(good);
    char bad[300];

    /* truncated key */
    snprintf(bad, sizeof bad, "%.*s", (int)(len - 4), good);
    ck_assert(!password_verify(pw, bad));
    ck_assert(password_needs_rehash(bad));

    /* a character outside base64url in the key */
    snprintf(bad, sizeof bad, "%s", good);
    bad[len - 10] = '*';
    ck_assert(!password_verify(pw, bad));

    /* non-canonical last character of the key (its unused bits set) */
    snprintf(bad, sizeof bad, "%s", good);
    bad[len - 1] = bad[len - 1] == 'B' ? 'C' : 'B';
    ck_assert(!password_verify(pw, bad));

    /* trailing garbage */
    snprintf(bad, sizeof bad, "%s$", good);
    ck_assert(!password_verify(pw, bad));

    /* a single changed key byte: well-formed, but not this password's hash */
    snprintf(bad, sizeof bad, "%s", good);
    char *key = strrchr(bad, '$') + 1;
    key[0] = key[0] == 'A' ? 'B' : 'A';
    ck_assert(!password_verify(pw, bad));
    free(good);
}
END_TEST

START_TEST(test_absurd_parameters)
{
    static const char *const bad[] = {
        "$scrypt$ln=40,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "$scrypt$ln=15,r=0,p=1$MDEyMzQ1Njc4OWFiY2RlZg$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "$scrypt$ln=15,r=8,p=99$MDEyMzQ1Njc4OWFiY2RlZg$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "$scrypt$ln=-1,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "$scrypt$ln=15,r=8,p=1$MDEy$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", /* 3-byte salt */
        "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
        "",
        "$scrypt$",
    };
    /* the parse alone decides these: needs_rehash is cheap */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(password_needs_rehash(bad[i]), "needs_rehash(\"%s\") is false", bad[i]);
    /* verify spends a dummy hash on each: check a few */
    ck_assert(!password_verify(pw, bad[0]));
    ck_assert(!password_verify(pw, bad[2]));
    ck_assert(!password_verify(pw, bad[5]));
}
END_TEST

START_TEST(test_policy)
{
    ck_assert_ptr_nonnull(password_policy_check(""));
    ck_assert_ptr_nonnull(password_policy_check("short"));
    ck_assert_ptr_nonnull(password_policy_check("123456789"));
    ck_assert_ptr_null(password_policy_check("1234567890"));
    ck_assert_ptr_null(password_policy_check(pw));
    /* length is counted in characters: 10 Chinese characters pass, 9 fail */
    ck_assert_ptr_null(password_policy_check(ZH10));
    ck_assert_ptr_nonnull(password_policy_check(ZH9));
    ck_assert_str_eq(password_policy_check(ZH9), "must be at least 10 characters");

    char big[PASSWORD_MAX_LEN + 2];
    memset(big, 'x', PASSWORD_MAX_LEN);
    big[PASSWORD_MAX_LEN] = '\0';
    ck_assert_ptr_null(password_policy_check(big));
    big[PASSWORD_MAX_LEN] = 'x';
    big[PASSWORD_MAX_LEN + 1] = '\0';
    ck_assert_ptr_nonnull(password_policy_check(big));

    /* the reasons the API answers with their codes (password.too_short, validation.bytes_max) */
    ck_assert_int_eq(password_policy(""), PASSWORD_TOO_SHORT);
    ck_assert_int_eq(password_policy(ZH9), PASSWORD_TOO_SHORT);
    ck_assert_int_eq(password_policy(ZH10), PASSWORD_OK);
    ck_assert_int_eq(password_policy(big), PASSWORD_TOO_LONG);
    big[PASSWORD_MAX_LEN] = '\0';
    ck_assert_int_eq(password_policy(big), PASSWORD_OK);
}
END_TEST

static void *verify_once(void *encoded)
{
    return (void *)(uintptr_t)password_verify("concurrent-password", encoded);
}

/* Six logins at once: without a bound they overlap; with password_init(2) never more than 2. */
static int peak_of(int bound)
{
    char *h = password_hash("concurrent-password");
    ck_assert_ptr_nonnull(h);
    password_init(bound);
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, verify_once, h), 0);
    for (int i = 0; i < 6; i++) {
        void *ok = NULL;
        pthread_join(t[i], &ok);
        ck_assert_msg(ok != NULL, "a waiting verification failed");
    }
    free(h);
    return password_peak();
}

START_TEST(test_concurrency_is_bounded)
{
    ck_assert_int_le(peak_of(2), 2);
    ck_assert_int_eq(peak_of(1), 1);
    /* the bound is what keeps them apart: six at once overlap with room for six */
    ck_assert_int_ge(peak_of(6), 2);
}
END_TEST

/* AIDC_PASSWORD_HASH_COST: new hashes use it, a stored hash of another cost still
 * verifies and is due for rehashing, a cost out of bounds is ignored (Check forks each
 * test: the default comes back for the others) */
START_TEST(test_configured_cost)
{
    char *old = password_hash(pw); /* at the default, 15 */
    password_set_cost(10);
    char *h = password_hash(pw);
    ck_assert_ptr_nonnull(h);
    ck_assert_msg(strncmp(h, "$scrypt$ln=10,r=8,p=1$", 22) == 0, "unexpected format %s", h);
    ck_assert(password_verify(pw, h));
    ck_assert(!password_needs_rehash(h));
    ck_assert(password_verify(pw, old));
    ck_assert(!password_needs_rehash(old)); /* a lower cost never weakens a stored hash */
    password_set_cost(9);                   /* below PASSWORD_COST_MIN: ignored */
    password_set_cost(19);                  /* above PASSWORD_COST_MAX: ignored */
    char *h2 = password_hash(pw);
    ck_assert_msg(strncmp(h2, "$scrypt$ln=10,", 14) == 0, "unexpected format %s", h2);
    password_set_cost(PASSWORD_COST_DEFAULT);
    ck_assert(password_needs_rehash(h));
    ck_assert(!password_needs_rehash(old));
    free(old);
    free(h);
    free(h2);
}
END_TEST

static Suite *password_suite(void)
{
    Suite *s = suite_create("password");
    TCase *tc = tcase_create("scrypt");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_null_encoded);
    tcase_add_test(tc, test_stored_parameters_are_used);
    tcase_add_test(tc, test_malformed_encodings);
    tcase_add_test(tc, test_absurd_parameters);
    tcase_add_test(tc, test_concurrency_is_bounded);
    tcase_add_test(tc, test_configured_cost);
    suite_add_tcase(s, tc);

    TCase *pol = tcase_create("policy");
    tcase_add_test(pol, test_policy);
    suite_add_tcase(s, pol);
    return s;
}

int main(void)
{
    return suite_run(password_suite());
}
