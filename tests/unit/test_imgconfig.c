/*
 * test_imgconfig.c - image configs (their labels, as aidc keeps them) and the
 * digests of registry answers (images/manifest.h), over the registry's real
 * answers (tests/support/registryfix.h) and made-up hostile ones.
 */
#include "tests/support/registryfix.h"
#include "tests/support/suite.h"

#include "images/manifest.h"
#include "lib/crypto.h"
#include "lib/err.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void labels_of(const char *body, json_t **out)
{
    char err[256] = "";
    *out = manifest_config_labels(body, strlen(body), err, sizeof err);
    ck_assert_msg(*out != NULL, "labels refused: %s", err);
}

/* ---- manifest_config_labels ------------------------------------------------------------ */

START_TEST(labels_of_the_real_config)
{
    json_t *l;
    labels_of(CONFIG_BLOB, &l);
    ck_assert_uint_eq(json_object_size(l), 8);
    ck_assert_str_eq(json_string_value(json_object_get(l, "framework")), "pytorch");
    ck_assert_str_eq(json_string_value(json_object_get(l, "framework_version")), "2.4.0");
    ck_assert_str_eq(json_string_value(json_object_get(l, "cuda_version")), "12.4");
    ck_assert_str_eq(json_string_value(json_object_get(l, "python_version")), "3.11");
    ck_assert_str_eq(json_string_value(json_object_get(l, "org.opencontainers.image.title")),
                     "pytorch");
    ck_assert_str_eq(json_string_value(json_object_get(l, "org.opencontainers.image.version")),
                     "2.4-cuda12.4");
    ck_assert_str_eq(json_string_value(json_object_get(l, "architecture")), "amd64");
    ck_assert_str_eq(json_string_value(json_object_get(l, "os")), "linux");
    json_decref(l);

    /* a config without labels: only the platform */
    labels_of("{\"architecture\":\"arm64\",\"os\":\"linux\",\"config\":{\"Env\":[]}}", &l);
    ck_assert_uint_eq(json_object_size(l), 2);
    ck_assert_str_eq(json_string_value(json_object_get(l, "architecture")), "arm64");
    json_decref(l);
    labels_of("{\"config\":{\"Labels\":null}}", &l);
    ck_assert_uint_eq(json_object_size(l), 0);
    json_decref(l);
    labels_of("{}", &l);
    ck_assert_uint_eq(json_object_size(l), 0);
    json_decref(l);
}
END_TEST

START_TEST(labels_strings_only_printable_only)
{
    json_t *l;
    char *k128 = rep('k', 128), *k129 = rep('q', 129);
    char *body =
        xasprintf("{\"architecture\":5,\"os\":\"li\\nnux\",\"config\":{\"Labels\":{"
                  "\"n\":1,\"nul\":null,\"b\":true,\"o\":{\"x\":\"y\"},\"a\":[\"z\"],\"r\":1.5,"
                  "\"ctl\":\"x\\u0001y\",\"tab\":\"a\\tb\",\"nl\":\"a\\nb\",\"cr\":\"a\\rb\","
                  "\"del\":\"a\\u007fb\","
                  "\"k\\ney\":\"v\",\"\":\"empty key\",\"%s\":\"long key\",\"%s\":\"too long key\","
                  "\"ok\":\"fine\",\"zh\":\"视觉组\",\"empty\":\"\"}}}",
                  k128, k129);
    labels_of(body, &l);
    ck_assert_str_eq(json_string_value(json_object_get(l, "ok")), "fine");
    ck_assert_str_eq(json_string_value(json_object_get(l, "zh")), "视觉组");
    ck_assert_str_eq(json_string_value(json_object_get(l, "empty")), "");
    ck_assert_str_eq(json_string_value(json_object_get(l, k128)), "long key");
    ck_assert_uint_eq(json_object_size(l), 4);
    free(body);
    free(k128);
    free(k129);
    json_decref(l);

    /* an architecture or os that is no short printable string is dropped */
    char *a33 = rep('x', 33);
    body = xasprintf("{\"architecture\":\"%s\",\"os\":\"\",\"config\":{\"Labels\":[\"x\"]}}", a33);
    labels_of(body, &l);
    ck_assert_uint_eq(json_object_size(l), 0);
    json_decref(l);
    free(body);
    free(a33);
}
END_TEST

START_TEST(labels_capped_at_64)
{
    json_t *labels = json_object();
    char k[16];
    for (int i = 0; i < 70; i++) {
        snprintf(k, sizeof k, "l%02d", i);
        json_object_set_new(labels, k, json_string("v"));
    }
    json_t *doc = json_pack("{s:s, s:s, s:{s:O}}", "architecture", "amd64", "os", "linux", "config",
                            "Labels", labels);
    char *body = json_dumps(doc, JSON_COMPACT);
    json_t *l;
    labels_of(body, &l);
    size_t nlabels = 0;
    const char *key;
    json_t *v;
    json_object_foreach(l, key, v)
    {
        if (strcmp(key, "architecture") != 0 && strcmp(key, "os") != 0) {
            ck_assert_msg(json_object_get(labels, key) != NULL, "label [%s] invented", key);
            nlabels++;
        }
    }
    ck_assert_uint_eq(nlabels, IMAGE_LABELS_MAX);
    ck_assert_str_eq(json_string_value(json_object_get(l, "os")), "linux");
    ck_assert_str_eq(json_string_value(json_object_get(l, "architecture")), "amd64");
    json_decref(l);
    free(body);
    json_decref(doc);

    /* labels that are skipped do not count */
    json_t *mixed = json_object();
    for (int i = 0; i < 10; i++) {
        snprintf(k, sizeof k, "n%02d", i);
        json_object_set_new(mixed, k, json_integer(i));
    }
    for (int i = 0; i < IMAGE_LABELS_MAX; i++) {
        snprintf(k, sizeof k, "s%02d", i);
        json_object_set_new(mixed, k, json_string("v"));
    }
    doc = json_pack("{s:{s:o}}", "config", "Labels", mixed);
    body = json_dumps(doc, JSON_COMPACT);
    labels_of(body, &l);
    ck_assert_uint_eq(json_object_size(l), IMAGE_LABELS_MAX);
    ck_assert_ptr_nonnull(json_object_get(l, "s63"));
    json_decref(l);
    free(body);
    json_decref(doc);
    json_decref(labels);
}
END_TEST

/* The label "v" of a config whose value is prefix (n_a times 'a') then tail. */
static char *cut_value(size_t n_a, const char *tail)
{
    char *a = rep('a', n_a);
    char *body = xasprintf("{\"config\":{\"Labels\":{\"v\":\"%s%s\"}}}", a, tail);
    free(a);
    json_t *l;
    labels_of(body, &l);
    free(body);
    const char *s = json_string_value(json_object_get(l, "v"));
    ck_assert_msg(s != NULL, "the long label is gone (a=%zu, tail [%s])", n_a, tail);
    ck_assert_msg(utf8_valid(s), "the long label is no valid UTF-8 (a=%zu)", n_a);
    char *out = xstrdup(s);
    json_decref(l);
    return out;
}

START_TEST(labels_long_values_cut_between_characters)
{
    char *want256 = rep('a', IMAGE_LABEL_VALUE_MAX);
    char *v = cut_value(300, "");
    ck_assert_str_eq(v, want256);
    free(v);
    v = cut_value(256, ""); /* exactly the limit: whole */
    ck_assert_str_eq(v, want256);
    free(v);
    v = cut_value(255, "b");
    ck_assert_uint_eq(strlen(v), 256);
    ck_assert_int_eq(v[255], 'b');
    free(v);

    /* é (2 bytes) across the limit: cut before it */
    v = cut_value(255, "é and more");
    ck_assert_uint_eq(strlen(v), 255);
    ck_assert(strspn(v, "a") == 255);
    free(v);
    /* é ending exactly at the limit: kept */
    v = cut_value(254, "é and more");
    ck_assert_uint_eq(strlen(v), 256);
    ck_assert_str_eq(v + 254, "é");
    free(v);
    /* € (3 bytes) cut after its first or second byte */
    v = cut_value(254, "€€€");
    ck_assert_uint_eq(strlen(v), 254);
    free(v);
    v = cut_value(255, "€€€");
    ck_assert_uint_eq(strlen(v), 255);
    free(v);
    v = cut_value(253, "€€€");
    ck_assert_uint_eq(strlen(v), 256);
    ck_assert_str_eq(v + 253, "€");
    free(v);
    /* 😀 (4 bytes) cut after 1, 2 or 3 of them */
    for (size_t n = 253; n <= 255; n++) {
        v = cut_value(n, "😀😀");
        ck_assert_uint_eq(strlen(v), n);
        free(v);
    }
    v = cut_value(252, "😀😀");
    ck_assert_uint_eq(strlen(v), 256);
    ck_assert_str_eq(v + 252, "😀");
    free(v);
    /* all multi-byte: 100 × 视 (3 bytes) = 300 bytes → 85 characters, 255 bytes */
    char tail[301] = "";
    for (int i = 0; i < 100; i++)
        strcat(tail, "视");
    v = cut_value(0, tail);
    ck_assert_uint_eq(strlen(v), 255);
    free(v);
    free(want256);
}
END_TEST

START_TEST(labels_refused_when_no_config_object)
{
    static const char *const bad[] = {
        "",     "not json",     "[]",  "[{\"config\":{}}]", "\"config\"", "42",
        "null", "{\"config\":", "{}{}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[256] = "";
        json_t *l = manifest_config_labels(bad[i], strlen(bad[i]), err, sizeof err);
        ck_assert_msg(l == NULL, "[%s] accepted", bad[i]);
        ck_assert_msg(err[0], "[%s] refused without a reason", bad[i]);
    }
    /* only len bytes: the real config cut short */
    char err[256] = "";
    ck_assert_ptr_null(manifest_config_labels(CONFIG_BLOB, 100, err, sizeof err));
    ck_assert(err[0]);
}
END_TEST

/* ---- manifest_digest_matches ----------------------------------------------------------- */

START_TEST(digest_matches_the_exact_bytes)
{
    ck_assert(manifest_digest_matches(DOCKER_V2, strlen(DOCKER_V2), DOCKER_V2_DIGEST));
    ck_assert(manifest_digest_matches(OCI_MANIFEST, strlen(OCI_MANIFEST), OCI_MANIFEST_DIGEST));
    /* sha256 of nothing */
    ck_assert(manifest_digest_matches(
        "", 0, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    /* computed here */
    char hex[65];
    crypto_sha256_hex(CONFIG_BLOB, strlen(CONFIG_BLOB), hex);
    char *d = xasprintf("sha256:%s", hex);
    ck_assert_str_eq(d, DOCKER_V2_CONFIG); /* the config's recorded digest */
    ck_assert(manifest_digest_matches(CONFIG_BLOB, strlen(CONFIG_BLOB), d));
    free(d);

    /* other bytes: the same JSON without jq's newline, or reformatted */
    ck_assert(!manifest_digest_matches(DOCKER_V2, strlen(DOCKER_V2) - 1, DOCKER_V2_DIGEST));
    ck_assert(!manifest_digest_matches(OCI_MANIFEST, strlen(OCI_MANIFEST), DOCKER_V2_DIGEST));
    /* a wrong digest: one hex digit changed */
    char wrong[] = DOCKER_V2_DIGEST;
    wrong[70] = wrong[70] == 'f' ? 'e' : 'f';
    ck_assert(!manifest_digest_matches(DOCKER_V2, strlen(DOCKER_V2), wrong));
    /* the digest of the schema-1 conversion is another one */
    ck_assert(!manifest_digest_matches(DOCKER_V2, strlen(DOCKER_V2), GOOD_DIGEST));
    /* invalid digests never match */
    ck_assert(!manifest_digest_matches(
        DOCKER_V2, strlen(DOCKER_V2),
        "sha256:817BAFA10C302B932E90A03C553C00A3B8DD7834CBDC9D2196EFDB0D0C98AFDF"));
    ck_assert(!manifest_digest_matches(DOCKER_V2, strlen(DOCKER_V2), &DOCKER_V2_DIGEST[7]));
    ck_assert(!manifest_digest_matches(
        DOCKER_V2, strlen(DOCKER_V2),
        "sha256:817bafa10c302b932e90a03c553c00a3b8dd7834cbdc9d2196efdb0d0c98afd"));
    ck_assert(!manifest_digest_matches(DOCKER_V2, strlen(DOCKER_V2), "sha512:" HEX64 HEX64));
    ck_assert(!manifest_digest_matches(DOCKER_V2, strlen(DOCKER_V2), ""));
    ck_assert(!manifest_digest_matches(DOCKER_V2, strlen(DOCKER_V2), NULL));
}
END_TEST
int main(void)
{
    Suite *s = suite_create("imgconfig");
    TCase *tc;
    tc = tcase_create("configs");
    tcase_add_test(tc, labels_of_the_real_config);
    tcase_add_test(tc, labels_strings_only_printable_only);
    tcase_add_test(tc, labels_capped_at_64);
    tcase_add_test(tc, labels_long_values_cut_between_characters);
    tcase_add_test(tc, labels_refused_when_no_config_object);
    tcase_add_test(tc, digest_matches_the_exact_bytes);
    suite_add_tcase(s, tc);
    return suite_run(s);
}

