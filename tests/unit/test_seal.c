/* test_seal.c - sealed texts (server/seal.h) and UTF-8 handling of lib/sbuf.h. */
#include "tests/support/suite.h"
#include "lib/sbuf.h"
#include "server/seal.h"

#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char key1[32] = "0123456789abcdef0123456789abcdef";
static const unsigned char key2[32] = "fedcba9876543210fedcba9876543210";

START_TEST(seal_round_trip)
{
    seal_key_set(key1, sizeof key1);
    const char *text = "{\"token\":\"aidc_secret\",\"名字\":\"值\"}";
    char *s = seal_text(text, "aad");
    ck_assert_ptr_nonnull(s);
    ck_assert(strncmp(s, "seal1:", 6) == 0);
    ck_assert_ptr_null(strstr(s, "aidc_secret")); /* not readable */
    char *back = seal_open(s, "aad");
    ck_assert_ptr_nonnull(back);
    ck_assert_str_eq(back, text);
    char *again = seal_text(text, "aad");
    ck_assert_str_ne(again, s); /* a fresh nonce each time */
    free(again);
    free(back);
    free(s);
    s = seal_text("", "aad");
    back = seal_open(s, "aad");
    ck_assert_str_eq(back, "");
    free(back);
    free(s);
}
END_TEST

START_TEST(seal_refuses_tampering_and_other_keys)
{
    seal_key_set(key1, sizeof key1);
    char *s = seal_text("payload", "aad");
    size_t n = strlen(s);
    s[n - 3] = s[n - 3] == 'A' ? 'B' : 'A';
    ck_assert_ptr_null(seal_open(s, "aad"));
    free(s);
    s = seal_text("payload", "aad");
    seal_key_set(key2, sizeof key2);
    ck_assert_ptr_null(seal_open(s, "aad"));
    seal_key_set(key1, sizeof key1);
    char *ok = seal_open(s, "aad");
    ck_assert_str_eq(ok, "payload");
    free(ok);
    free(s);
    s = seal_text("bound", "user-1 key-1");
    ck_assert_ptr_null(seal_open(s, "user-2 key-1")); /* moved to another row */
    ok = seal_open(s, "user-1 key-1");
    ck_assert_str_eq(ok, "bound");
    free(ok);
    free(s);
    ck_assert_ptr_null(seal_open("plain text", "aad"));
    ck_assert_ptr_null(seal_open("seal1:", "aad"));
    ck_assert_ptr_null(seal_open("seal1:!!!!", "aad"));
    ck_assert_ptr_null(seal_open("seal1:AAAA", "aad"));
}
END_TEST

START_TEST(json_strings_are_always_valid)
{
    const char *inputs[] = {"plain", "quote\" back\\ nl\n tab\t", "中文 ✓ 🚀", "\xff\xfe",
                            "bad \xc0\xaf overlong", "surrogate \xed\xa0\x80", "cut \xe4\xb8",
                            "\x01\x1f\x7f"};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        struct sbuf sb = SBUF_INIT;
        sbuf_json_str(&sb, inputs[i]);
        json_t *j = json_loads(sbuf_str(&sb), JSON_DECODE_ANY, NULL);
        ck_assert_msg(j != NULL, "input %zu gave invalid JSON: %s", i, sbuf_str(&sb));
        json_decref(j);
        sbuf_free(&sb);
    }
    struct sbuf sb = SBUF_INIT;
    sbuf_json_str(&sb, "中文");
    ck_assert_str_eq(sbuf_str(&sb), "\"中文\""); /* valid text is kept as it is */
    sbuf_free(&sb);
}
END_TEST

START_TEST(utf8_replacement)
{
    struct sbuf sb = SBUF_INIT;
    sbuf_utf8(&sb, "a\xffz");
    ck_assert_str_eq(sbuf_str(&sb), "a\xef\xbf\xbdz");
    sbuf_reset(&sb);
    sbuf_utf8(&sb, "ok 中 🚀");
    ck_assert_str_eq(sbuf_str(&sb), "ok 中 🚀");
    sbuf_free(&sb);
    ck_assert_int_eq(sbuf_utf8_seq((const unsigned char *)"\xf4\x90\x80\x80"), 0); /* > U+10FFFF */
    ck_assert_int_eq(sbuf_utf8_seq((const unsigned char *)"\xe0\x80\x80"), 0);     /* overlong */
    ck_assert_int_eq(sbuf_utf8_seq((const unsigned char *)"\xf0\x9f\x9a\x80"), 4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("seal");
    TCase *tc = tcase_create("seal");
    tcase_add_test(tc, seal_round_trip);
    tcase_add_test(tc, seal_refuses_tampering_and_other_keys);
    tcase_add_test(tc, json_strings_are_always_valid);
    tcase_add_test(tc, utf8_replacement);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
