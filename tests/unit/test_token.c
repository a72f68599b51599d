/*
 * test_token.c - API token secrets (server/token.h) and the crypto helpers
 * they stand on (lib/crypto.h): base64url, SHA-256, UUIDs, comparison.
 */
#include "tests/support/suite.h"
#include "lib/crypto.h"
#include "server/token.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char b64url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static bool all_in(const char *s, const char *set)
{
    return strspn(s, set) == strlen(s);
}

/* "aidc_" followed by 43 copies of c, then last as the 43rd character. */
static void make_token(char *out, char c, char last)
{
    memcpy(out, "aidc_", 5);
    memset(out + 5, c, 42);
    out[47] = last;
    out[48] = '\0';
}

/* ---- tokens ------------------------------------------------------------------ */

START_TEST(test_generate_format)
{
    char secret[TOKEN_LEN + 1], hash[65], expect[65];
    ck_assert_int_eq(token_generate(secret, hash), 0);
    ck_assert_uint_eq(strlen(secret), 48);
    ck_assert_uint_eq(TOKEN_LEN, 48);
    ck_assert(strncmp(secret, "aidc_", 5) == 0);
    ck_assert_msg(all_in(secret + 5, b64url_alphabet), "bad character in %s", secret);
    ck_assert(token_is_wellformed(secret));
    /* the hash returned is the SHA-256 hex of the whole secret */
    ck_assert_uint_eq(strlen(hash), 64);
    ck_assert(all_in(hash, "0123456789abcdef"));
    crypto_sha256_hex(secret, strlen(secret), expect);
    ck_assert_str_eq(hash, expect);
    /* the 43 characters decode to exactly 32 bytes */
    unsigned char raw[40];
    ck_assert_int_eq(crypto_b64url_decode(secret + 5, 43, raw, sizeof raw), 32);
}
END_TEST

START_TEST(test_generate_unique)
{
    char a[TOKEN_LEN + 1], b[TOKEN_LEN + 1], ha[65], hb[65];
    ck_assert_int_eq(token_generate(a, ha), 0);
    ck_assert_int_eq(token_generate(b, hb), 0);
    ck_assert_str_ne(a, b);
    ck_assert_str_ne(ha, hb);
}
END_TEST

START_TEST(test_hash_known_vectors)
{
    char h[65];
    token_hash("abc", h);
    ck_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    token_hash("", h);
    ck_assert_str_eq(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    unsigned char raw[32];
    crypto_sha256("abc", 3, raw);
    ck_assert_uint_eq(raw[0], 0xba);
    ck_assert_uint_eq(raw[31], 0xad);
}
END_TEST

START_TEST(test_wellformed)
{
    char t[64];
    make_token(t, 'A', 'A'); /* 32 zero bytes */
    ck_assert(token_is_wellformed(t));
    make_token(t, '_', 'w'); /* 'w' = 48: low two bits clear */
    ck_assert(token_is_wellformed(t));
    make_token(t, '-', '8');
    ck_assert(token_is_wellformed(t));
}
END_TEST

START_TEST(test_not_wellformed)
{
    char t[64];
    ck_assert(!token_is_wellformed(""));
    ck_assert(!token_is_wellformed("aidc_"));
    make_token(t, 'A', 'A');
    /* wrong prefix */
    t[0] = 'A';
    ck_assert(!token_is_wellformed(t));
    make_token(t, 'A', 'A');
    t[4] = '-';
    ck_assert(!token_is_wellformed(t));
    make_token(t, 'A', 'A');
    memcpy(t, "AIDC_", 5);
    ck_assert(!token_is_wellformed(t));
    /* wrong length */
    make_token(t, 'A', 'A');
    t[47] = '\0';
    ck_assert(!token_is_wellformed(t));
    make_token(t, 'A', 'A');
    t[48] = 'A';
    t[49] = '\0';
    ck_assert(!token_is_wellformed(t));
    /* characters outside base64url */
    make_token(t, 'A', 'A');
    t[20] = '+';
    ck_assert(!token_is_wellformed(t));
    t[20] = '/';
    ck_assert(!token_is_wellformed(t));
    t[20] = ' ';
    ck_assert(!token_is_wellformed(t));
    t[20] = '.';
    ck_assert(!token_is_wellformed(t));
    /* padding instead of the last character */
    make_token(t, 'A', '=');
    ck_assert(!token_is_wellformed(t));
    /* non-canonical: the last character's two unused bits must be zero */
    make_token(t, 'A', 'B');
    ck_assert(!token_is_wellformed(t));
    make_token(t, 'A', 'D');
    ck_assert(!token_is_wellformed(t));
    make_token(t, 'A', '_');
    ck_assert(!token_is_wellformed(t));
}
END_TEST

/* ---- base64url ---------------------------------------------------------------- */

START_TEST(test_b64url_known_vectors)
{
    static const struct {
        const char *in;
        const char *out;
    } v[] = {
        {"", ""},         {"f", "Zg"},          {"fo", "Zm8"},         {"foo", "Zm9v"},
        {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"},
    };
    char out[32];
    unsigned char back[32];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t n = strlen(v[i].in);
        ck_assert_uint_eq(crypto_b64url_encode((const unsigned char *)v[i].in, n, out, sizeof out),
                          strlen(v[i].out));
        ck_assert_str_eq(out, v[i].out);
        ck_assert_int_eq(crypto_b64url_decode(v[i].out, strlen(v[i].out), back, sizeof back),
                         (long)n);
        ck_assert(memcmp(back, v[i].in, n) == 0);
    }
    /* the URL-safe characters: 0xfb 0xff is "+/8=" in standard base64 */
    static const unsigned char fbff[] = {0xfb, 0xff};
    crypto_b64url_encode(fbff, 2, out, sizeof out);
    ck_assert_str_eq(out, "-_8");
    ck_assert_int_eq(crypto_b64url_decode("-_8", 3, back, sizeof back), 2);
    ck_assert_uint_eq(back[0], 0xfb);
    ck_assert_uint_eq(back[1], 0xff);
}
END_TEST

START_TEST(test_b64url_round_trip_0_to_40)
{
    unsigned char in[40], back[48];
    char enc[64];
    for (size_t n = 0; n <= 40; n++) {
        ck_assert_int_eq(crypto_random(in, sizeof in), 0);
        size_t m = crypto_b64url_encode(in, n, enc, sizeof enc);
        ck_assert_uint_eq(m, (4 * n + 2) / 3); /* no padding */
        ck_assert_uint_eq(strlen(enc), m);
        ck_assert_msg(all_in(enc, b64url_alphabet), "n=%zu: %s", n, enc);
        memset(back, 0xaa, sizeof back);
        ck_assert_int_eq(crypto_b64url_decode(enc, m, back, sizeof back), (long)n);
        ck_assert_msg(memcmp(back, in, n) == 0, "n=%zu: round trip differs", n);
        /* padding is optional on input */
        char padded[72];
        snprintf(padded, sizeof padded, "%s%s", enc, m % 4 == 2 ? "==" : m % 4 == 3 ? "=" : "");
        ck_assert_int_eq(crypto_b64url_decode(padded, strlen(padded), back, sizeof back),
                         (long)n);
        ck_assert(memcmp(back, in, n) == 0);
    }
}
END_TEST

START_TEST(test_b64url_decode_rejects)
{
    unsigned char out[64];
    ck_assert_int_eq(crypto_b64url_decode("Zm9v!", 5, out, sizeof out), -1);
    ck_assert_int_eq(crypto_b64url_decode("Zm9!", 4, out, sizeof out), -1);
    ck_assert_int_eq(crypto_b64url_decode("Zm+v", 4, out, sizeof out), -1);
    ck_assert_int_eq(crypto_b64url_decode("Zm/v", 4, out, sizeof out), -1);
    ck_assert_int_eq(crypto_b64url_decode("Zm 9v", 5, out, sizeof out), -1);
    ck_assert_int_eq(crypto_b64url_decode("Zm=v", 4, out, sizeof out), -1);
    ck_assert_int_eq(crypto_b64url_decode("\xc3\xa9", 2, out, sizeof out), -1);
    /* length % 4 == 1 cannot be base64 */
    ck_assert_int_eq(crypto_b64url_decode("Z", 1, out, sizeof out), -1);
    ck_assert_int_eq(crypto_b64url_decode("Zm9vY", 5, out, sizeof out), -1);
    ck_assert_int_eq(crypto_b64url_decode("Zm9vYmFyZ", 9, out, sizeof out), -1);
    /* non-canonical trailing bits: "Zg" is "f", "Zh" is not a valid encoding */
    ck_assert_int_eq(crypto_b64url_decode("Zh", 2, out, sizeof out), -1);
    ck_assert_int_eq(crypto_b64url_decode("Zm9", 3, out, sizeof out), -1);
    /* output buffer too small */
    ck_assert_int_eq(crypto_b64url_decode("Zm9vYmFy", 8, out, 5), -1);
    ck_assert_int_eq(crypto_b64url_decode("Zm9vYmFy", 8, out, 6), 6);
    /* only n bytes are read */
    ck_assert_int_eq(crypto_b64url_decode("Zm9v!!!!", 4, out, sizeof out), 3);
    ck_assert_int_eq(crypto_b64url_decode("", 0, out, sizeof out), 0);
}
END_TEST

START_TEST(test_b64url_encode_small_buffer)
{
    char out[5];
    memset(out, 'x', sizeof out);
    /* "foobar" needs 9 bytes: the output is cut and still terminated */
    size_t m = crypto_b64url_encode((const unsigned char *)"foobar", 6, out, sizeof out);
    ck_assert_uint_eq(m, 4);
    ck_assert_str_eq(out, "Zm9v");
}
END_TEST

/* ---- UUIDs ------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

START_TEST(test_uuid_new_v4)
{
    char u[37];
    for (int i = 0; i < 100; i++) {
        crypto_uuid_new(u);
        ck_assert_uint_eq(strlen(u), 36);
        ck_assert_msg(crypto_uuid_valid(u), "%s", u);
        ck_assert_msg(u[14] == '4', "%s: not version 4", u);
        ck_assert_msg(strchr("89ab", u[19]) != NULL, "%s: not the RFC 4122 variant", u);
        ck_assert_msg(all_in(u, "0123456789abcdef-"), "%s: not lowercase hex", u);
    }
}
END_TEST

START_TEST(test_uuid_new_unique)
{
    enum { N = 5000 };
    char(*u)[37] = calloc(N, sizeof *u);
    ck_assert_ptr_nonnull(u);
    for (int i = 0; i < N; i++)
        crypto_uuid_new(u[i]);
    qsort(u, N, sizeof *u, cmp_str);
    for (int i = 1; i < N; i++)
        ck_assert_msg(strcmp(u[i - 1], u[i]) != 0, "duplicate UUID %s", u[i]);
    free(u);
}
END_TEST

START_TEST(test_uuid_valid)
{
    ck_assert(crypto_uuid_valid("123e4567-e89b-42d3-a456-426614174000"));
    ck_assert(crypto_uuid_valid("123E4567-E89B-42D3-A456-426614174000"));
    ck_assert(crypto_uuid_valid("00000000-0000-0000-0000-000000000000"));
    ck_assert(crypto_uuid_valid("ffffffff-ffff-ffff-ffff-ffffffffffff"));
    ck_assert(!crypto_uuid_valid(NULL));
    ck_assert(!crypto_uuid_valid(""));
    ck_assert(!crypto_uuid_valid("123e4567-e89b-42d3-a456-42661417400"));   /* 35 */
    ck_assert(!crypto_uuid_valid("123e4567-e89b-42d3-a456-4266141740000")); /* 37 */
    ck_assert(!crypto_uuid_valid("123e4567e89b-42d3-a456-4266141740000"));  /* hyphen moved */
    ck_assert(!crypto_uuid_valid("123e4567-e89b-42d3-a456_426614174000"));
    ck_assert(!crypto_uuid_valid("123e4567-e89b-42d3-a456-42661417400g"));
    ck_assert(!crypto_uuid_valid("{23e4567-e89b-42d3-a456-42661417400}"));
    ck_assert(!crypto_uuid_valid("123e4567e89b42d3a456426614174000"));
    ck_assert(!crypto_uuid_valid("123e4567-e89b-42d3-a456-42661417400 "));
    ck_assert(!crypto_uuid_valid("------------------------------------"));
}
END_TEST

START_TEST(test_equal)
{
    unsigned char a[32], b[32];
    memset(a, 7, sizeof a);
    memset(b, 7, sizeof b);
    ck_assert(crypto_equal(a, b, sizeof a));
    b[31] = 8;
    ck_assert(!crypto_equal(a, b, sizeof a));
    ck_assert(crypto_equal(a, b, 31));
    b[31] = 7;
    b[0] = 0;
    ck_assert(!crypto_equal(a, b, sizeof a));
    ck_assert(crypto_equal(a, b, 0));
}
END_TEST

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The fastest of reps comparisons of a and b (n bytes). */
static double fastest(const unsigned char *a, const unsigned char *b, size_t n, int reps)
{
    double best = 1e9;
    volatile bool sink = false;
    for (int i = 0; i < reps; i++) {
        double t0 = now_s();
        sink = crypto_equal(a, b, n);
        double t = now_s() - t0;
        best = t < best ? t : best;
    }
    (void)sink;
    return best;
}

/*
 * The time of a comparison does not tell where the first difference is:
 * memcmp would stop at byte 0 a thousand times sooner than at the last byte
 * of a megabyte; crypto_equal reads every byte either way. The bound is
 * loose (a busy machine) and still far from memcmp's ratio.
 */
START_TEST(test_equal_constant_time)
{
    size_t n = 1 << 20;
    unsigned char *a = malloc(n), *b = malloc(n);
    ck_assert(a && b);
    memset(a, 0x5a, n);
    memcpy(b, a, n);
    b[0] ^= 1;
    double first = fastest(a, b, n, 25);
    b[0] ^= 1;
    b[n - 1] ^= 1;
    double last = fastest(a, b, n, 25);
    ck_assert_msg(first > last * 0.3, "a difference at byte 0 takes %.1f us, at the last %.1f us",
                  first * 1e6, last * 1e6);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_random)
{
    unsigned char a[32], b[32];
    ck_assert_int_eq(crypto_random(a, sizeof a), 0);
    ck_assert_int_eq(crypto_random(b, sizeof b), 0);
    ck_assert(memcmp(a, b, sizeof a) != 0);
}
END_TEST

static Suite *token_suite(void)
{
    Suite *s = suite_create("token");
    TCase *tok = tcase_create("token");
    tcase_add_test(tok, test_generate_format);
    tcase_add_test(tok, test_generate_unique);
    tcase_add_test(tok, test_hash_known_vectors);
    tcase_add_test(tok, test_wellformed);
    tcase_add_test(tok, test_not_wellformed);
    suite_add_tcase(s, tok);

    TCase *b64 = tcase_create("base64url");
    tcase_add_test(b64, test_b64url_known_vectors);
    tcase_add_test(b64, test_b64url_round_trip_0_to_40);
    tcase_add_test(b64, test_b64url_decode_rejects);
    tcase_add_test(b64, test_b64url_encode_small_buffer);
    suite_add_tcase(s, b64);

    TCase *misc = tcase_create("crypto");
    tcase_add_test(misc, test_uuid_new_v4);
    tcase_add_test(misc, test_uuid_new_unique);
    tcase_add_test(misc, test_uuid_valid);
    tcase_add_test(misc, test_equal);
    tcase_add_test(misc, test_equal_constant_time);
    tcase_add_test(misc, test_random);
    suite_add_tcase(s, misc);
    return s;
}

int main(void)
{
    return suite_run(token_suite());
}
