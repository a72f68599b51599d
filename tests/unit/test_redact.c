/*
 * test_redact.c - secrets never reach the audit log: redact_details replaces
 * the value of every secret-named key, at any depth, with "[redacted]", and
 * leaves the names of secrets' metadata (token_id, token_name...) alone.
 */
#include "tests/support/suite.h"
#include "audit/audit.h"

#include <check.h>
#include <jansson.h>
#include <stdlib.h>

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    ck_assert_msg(j != NULL, "test JSON does not parse: %s", jerr.text);
    return j;
}

/* Redact `in` and compare with `want` (both JSON text). */
static void expect_redacted(const char *in, const char *want)
{
    json_t *got = parse(in);
    json_t *exp = parse(want);
    redact_details(got);
    char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    ck_assert_msg(json_equal(got, exp), "redact(%s)\n  got  %s\n  want %s", in, g, want);
    free(g);
    json_decref(got);
    json_decref(exp);
}

START_TEST(test_secret_keys)
{
    static const char *const secret[] = {
        "password",      "new_password",  "Password",       "PASSWORD",
        "passwd",        "token",         "access_token",   "refresh_token",
        "secret",        "client_secret", "authorization",  "Authorization",
        "credentials",   "credential",    "credentials_ref", "private_key",
        "ssh_private_key", "cookie",      "set_cookie",     "api_key",
        "apikey",        "signature",
    };
    for (size_t i = 0; i < sizeof secret / sizeof secret[0]; i++)
        ck_assert_msg(redact_key_is_secret(secret[i]), "\"%s\" is not treated as a secret",
                      secret[i]);
}
END_TEST

START_TEST(test_harmless_keys)
{
    static const char *const harmless[] = {
        "token_id", "token_name", "token_prefix", "password_changed_at", "scopes", "username",
        "user_id",  "name",       "email",        "tenant",              "role",   "description",
        "created_at", "key",      "",
    };
    for (size_t i = 0; i < sizeof harmless / sizeof harmless[0]; i++)
        ck_assert_msg(!redact_key_is_secret(harmless[i]), "\"%s\" is treated as a secret",
                      harmless[i]);
}
END_TEST

START_TEST(test_flat_object)
{
    expect_redacted("{\"username\":\"alice\",\"password\":\"hunter2hunter2\",\"email\":\"a@b\"}",
                    "{\"username\":\"alice\",\"password\":\"[redacted]\",\"email\":\"a@b\"}");
    expect_redacted("{\"token_id\":\"4f9d2c3a-8b1e-4c7d-9a6f-2e5b8c1d0f3a\",\"token_name\":\"ci\","
                    "\"scopes\":[\"jobs:read\"],\"token\":\"aidc_secret\"}",
                    "{\"token_id\":\"4f9d2c3a-8b1e-4c7d-9a6f-2e5b8c1d0f3a\",\"token_name\":\"ci\","
                    "\"scopes\":[\"jobs:read\"],\"token\":\"[redacted]\"}");
}
END_TEST

START_TEST(test_nested)
{
    expect_redacted(
        "{\"user\":{\"username\":\"bob\",\"password\":\"x\",\"profile\":{\"api_key\":\"k\","
        "\"name\":\"Bob\"}},\"cluster\":{\"credentials_ref\":\"vault://k8s/a\","
        "\"private_key\":\"-----BEGIN\"}}",
        "{\"user\":{\"username\":\"bob\",\"password\":\"[redacted]\",\"profile\":{\"api_key\":"
        "\"[redacted]\",\"name\":\"Bob\"}},\"cluster\":{\"credentials_ref\":\"[redacted]\","
        "\"private_key\":\"[redacted]\"}}");
}
END_TEST

START_TEST(test_arrays)
{
    expect_redacted("{\"list\":[{\"secret\":\"s\"},{\"Authorization\":\"Bearer x\"},\"plain\",3,"
                    "[{\"token\":\"t\",\"token_id\":\"i\"}]]}",
                    "{\"list\":[{\"secret\":\"[redacted]\"},{\"Authorization\":\"[redacted]\"},"
                    "\"plain\",3,[{\"token\":\"[redacted]\",\"token_id\":\"i\"}]]}");
    /* a top-level array */
    expect_redacted("[{\"password\":\"p\"},{\"username\":\"u\"}]",
                    "[{\"password\":\"[redacted]\"},{\"username\":\"u\"}]");
}
END_TEST

START_TEST(test_secret_containers_replaced_whole)
{
    /* everything under a secret key goes, whatever its shape */
    expect_redacted("{\"credentials\":{\"user\":\"u\",\"pass\":\"p\"},\"tokens\":[\"a\",\"b\"],"
                    "\"secret\":1234,\"password\":1.5}",
                    "{\"credentials\":\"[redacted]\",\"tokens\":\"[redacted]\","
                    "\"secret\":\"[redacted]\",\"password\":\"[redacted]\"}");
}
END_TEST

START_TEST(test_null_and_bool_untouched)
{
    /* "password": null / true says whether one is set, not what it is */
    expect_redacted("{\"password\":null,\"token\":true,\"secret\":false,\"name\":null}",
                    "{\"password\":null,\"token\":true,\"secret\":false,\"name\":null}");
}
END_TEST

START_TEST(test_non_containers)
{
    expect_redacted("\"password\"", "\"password\"");
    expect_redacted("42", "42");
    expect_redacted("null", "null");
    expect_redacted("{}", "{}");
    expect_redacted("[]", "[]");
    redact_details(NULL); /* must not crash */
}
END_TEST

START_TEST(test_keys_kept)
{
    json_t *j = parse("{\"a\":1,\"password\":\"p\",\"b\":2,\"token\":\"t\",\"c\":3}");
    redact_details(j);
    ck_assert_uint_eq(json_object_size(j), 5);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "a")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "c")), 3);
    json_decref(j);
}
END_TEST

static Suite *redact_suite(void)
{
    Suite *s = suite_create("redact");
    TCase *keys = tcase_create("keys");
    tcase_add_test(keys, test_secret_keys);
    tcase_add_test(keys, test_harmless_keys);
    suite_add_tcase(s, keys);

    TCase *tc = tcase_create("redact");
    tcase_add_test(tc, test_flat_object);
    tcase_add_test(tc, test_nested);
    tcase_add_test(tc, test_arrays);
    tcase_add_test(tc, test_secret_containers_replaced_whole);
    tcase_add_test(tc, test_null_and_bool_untouched);
    tcase_add_test(tc, test_non_containers);
    tcase_add_test(tc, test_keys_kept);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(redact_suite());
}
