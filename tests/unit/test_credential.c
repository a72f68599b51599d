/*
 * test_credential.c - the credential a request presents (server/credential.c):
 * the Bearer token of Authorization, else the aidc_session cookie among
 * others; another scheme is refused. (Fuzzed too: tests/fuzz/fuzz_auth.c.)
 */
#include "tests/support/suite.h"
#include "server/credential.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static void cookie_is(const char *header, const char *want)
{
    char *got = credential_cookie_session(header);
    if (!want)
        ck_assert_msg(got == NULL, "[%s] gave [%s]", header ? header : "(null)", got);
    else
        ck_assert_msg(got && strcmp(got, want) == 0, "[%s] gave [%s], want [%s]", header,
                      got ? got : "(null)", want);
    free(got);
}

START_TEST(the_session_cookie_among_others)
{
    cookie_is("aidc_session=abc", "abc");
    cookie_is("theme=dark; aidc_session=abc.def; lang=zh", "abc.def");
    cookie_is(";; aidc_session=x;", "x");
    cookie_is("aidc_session_old=y; aidc_session=z", "z");
    cookie_is("aidc_session=", ""); /* empty: auth_authenticate takes it as anonymous */
    cookie_is("aidc_session", NULL);
    cookie_is("xaidc_session=q", NULL);
    cookie_is("", NULL);
    cookie_is(";;;   ", NULL);
    cookie_is(NULL, NULL);
}
END_TEST

START_TEST(bearer_first_then_the_cookie)
{
    const char *tok;
    char *ct;
    ck_assert_int_eq(credential_from_headers("Bearer   aidc_x", "aidc_session=s", &tok, &ct), 0);
    ck_assert_str_eq(tok, "aidc_x");
    ck_assert_ptr_null(ct);
    ck_assert_int_eq(credential_from_headers("bearer t", NULL, &tok, &ct), 0);
    ck_assert_str_eq(tok, "t");
    ck_assert_int_eq(credential_from_headers("Bearer ", NULL, &tok, &ct), 0);
    ck_assert_str_eq(tok, "");
    ck_assert_int_eq(credential_from_headers("Basic dXNlcjpwdw==", "aidc_session=s", &tok, &ct),
                     -1);
    ck_assert_int_eq(credential_from_headers("Bearer", NULL, &tok, &ct), -1);
    ck_assert_int_eq(credential_from_headers(NULL, "a=b; aidc_session=s", &tok, &ct), 0);
    ck_assert_str_eq(tok, "s");
    ck_assert_ptr_eq(tok, ct);
    free(ct);
    ck_assert_int_eq(credential_from_headers(NULL, NULL, &tok, &ct), 0);
    ck_assert_ptr_null(tok);
    ck_assert_ptr_null(ct);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("credential");
    TCase *tc = tcase_create("credential");
    tcase_add_test(tc, the_session_cookie_among_others);
    tcase_add_test(tc, bearer_first_then_the_cookie);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
