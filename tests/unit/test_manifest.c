/*
 * test_manifest.c - the manifests, image indexes and configs aidc reads from
 * a container registry (images/manifest.h), and their digests (names,
 * references and headers: test_imgref.c). The bodies and headers are the real answers of
 * docker-registry 2.8.2 recorded in shared/fixtures/registry/README.md (the
 * manifests byte for byte: their sha256 is the recorded Docker-Content-Digest),
 * plus Docker Hub's bearer challenge and a buildx-style OCI index.
 */
#include "tests/support/registryfix.h"
#include "tests/support/suite.h"

#include "images/manifest.h"
#include "lib/crypto.h"
#include "lib/err.h"
#include "lib/xalloc.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------------------- */

static int parse(const char *body, const char *ct, struct manifest *m, char *err, size_t errsz)
{
    err[0] = '\0';
    return manifest_parse(body, strlen(body), ct, m, err, errsz);
}

/* body must be refused with a reason, and nothing left allocated */
static void refused(const char *body, const char *ct, const char *why)
{
    struct manifest m;
    char err[256];
    int rc = parse(body, ct, &m, err, sizeof err);
    ck_assert_msg(rc == AIDC_EINVAL, "%s: accepted (rc %d): %.200s", why, rc, body);
    ck_assert_msg(err[0], "%s: refused without a reason", why);
    ck_assert_msg(m.children == NULL && m.nchildren == 0, "%s: children left over", why);
    manifest_free(&m);
}

/* A Docker v2 manifest with the given config and layers JSON. */
static char *image_manifest(const char *config, const char *layers)
{
    return xasprintf("{\"schemaVersion\":2,\"mediaType\":\"%s\",\"config\":%s,\"layers\":%s}",
                     MT_DOCKER_MANIFEST, config, layers);
}


/* ---- manifest_parse -------------------------------------------------------------------- */

START_TEST(manifest_docker_v2_from_the_registry)
{
    char hex[65];
    crypto_sha256_hex(DOCKER_V2, strlen(DOCKER_V2), hex);
    ck_assert_str_eq(hex, &DOCKER_V2_DIGEST[7]); /* the recorded bytes, exactly */
    ck_assert_uint_eq(strlen(DOCKER_V2), 584);   /* the recorded Content-Length */

    struct manifest m;
    char err[256];
    int rc = parse(DOCKER_V2, MT_DOCKER_MANIFEST, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert(!m.index);
    ck_assert_str_eq(m.media_type, MT_DOCKER_MANIFEST);
    ck_assert_str_eq(m.config_digest, DOCKER_V2_CONFIG);
    ck_assert_int_eq(m.size, 810 + 209 + 275);
    ck_assert_int_eq(m.size, 1294); /* seed.tsv's size_bytes */
    ck_assert_ptr_null(m.children);
    ck_assert_uint_eq(m.nchildren, 0);
    manifest_free(&m);
    manifest_free(&m); /* twice is harmless */
}
END_TEST

START_TEST(manifest_oci_from_the_registry)
{
    char hex[65];
    crypto_sha256_hex(OCI_MANIFEST, strlen(OCI_MANIFEST), hex);
    ck_assert_str_eq(hex, &OCI_MANIFEST_DIGEST[7]);

    struct manifest m;
    char err[256];
    int rc = parse(OCI_MANIFEST, MT_OCI_MANIFEST, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert(!m.index);
    ck_assert_str_eq(m.media_type, MT_OCI_MANIFEST);
    ck_assert_str_eq(m.config_digest,
                     "sha256:ce8f045e5ff92f26e40fcaded73eb85bd175ea614436c7b0c37f554321675439");
    ck_assert_int_eq(m.size, 817 + 209 + 288);
    ck_assert_int_eq(m.size, 1314);
    manifest_free(&m);

    /* a manifest with no layers is a manifest of its config alone */
    char *b = image_manifest("{\"size\":7,\"digest\":\"" GOOD_DIGEST "\"}", "[]");
    rc = parse(b, NULL, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_int_eq(m.size, 7);
    manifest_free(&m);
    free(b);
}
END_TEST

START_TEST(manifest_index_children_and_platforms)
{
    struct manifest m;
    char err[256];
    int rc = parse(OCI_INDEX, MT_OCI_INDEX, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert(m.index);
    ck_assert_str_eq(m.media_type, MT_OCI_INDEX);
    ck_assert_uint_eq(m.nchildren, 3);
    ck_assert_ptr_nonnull(m.children);
    ck_assert_str_eq(m.children[0].digest, DOCKER_V2_DIGEST);
    ck_assert_str_eq(m.children[0].media_type, MT_OCI_MANIFEST);
    ck_assert_str_eq(m.children[0].platform, "linux/amd64");
    ck_assert_int_eq(m.children[0].size, 584);
    ck_assert_str_eq(m.children[1].digest, OCI_MANIFEST_DIGEST);
    ck_assert_str_eq(m.children[1].platform, "linux/arm64/v8");
    ck_assert_int_eq(m.children[1].size, 630);
    /* the attestation: no platform to run */
    ck_assert_str_eq(m.children[2].platform, "");
    ck_assert_int_eq(m.children[2].size, 566);
    manifest_free(&m);
    ck_assert_ptr_null(m.children);
    ck_assert_uint_eq(m.nchildren, 0);

    /* a Docker manifest list: its media type is kept; no platform → "" */
    const char *list = "{\"schemaVersion\":2,\"mediaType\":\"" MT_DOCKER_LIST "\",\"manifests\":["
                       "{\"mediaType\":\"" MT_DOCKER_MANIFEST "\",\"digest\":\"" DOCKER_V2_DIGEST
                       "\",\"size\":584,"
                       "\"platform\":{\"architecture\":\"ppc64le\",\"os\":\"linux\"}},"
                       "{\"digest\":\"" GOOD_DIGEST "\",\"size\":1}]}";
    rc = parse(list, MT_DOCKER_LIST, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert(m.index);
    ck_assert_str_eq(m.media_type, MT_DOCKER_LIST);
    ck_assert_uint_eq(m.nchildren, 2);
    ck_assert_str_eq(m.children[0].platform, "linux/ppc64le");
    ck_assert_str_eq(m.children[0].media_type, MT_DOCKER_MANIFEST);
    ck_assert_str_eq(m.children[1].platform, "");
    ck_assert_str_eq(m.children[1].media_type, "");
    manifest_free(&m);
}
END_TEST

static char *index_of(size_t n)
{
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:s, s:s, s:I, s:{s:s, s:s}}", "mediaType",
                                              MT_OCI_MANIFEST, "digest", GOOD_DIGEST, "size",
                                              (json_int_t)i + 100, "platform", "architecture",
                                              "amd64", "os", "linux"));
    json_t *doc = json_pack("{s:i, s:s, s:o}", "schemaVersion", 2, "mediaType", MT_OCI_INDEX,
                            "manifests", list);
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    ck_assert_ptr_nonnull(s);
    return s;
}

START_TEST(manifest_index_of_1_to_64_entries)
{
    struct manifest m;
    char err[256];
    char *s = index_of(64);
    int rc = parse(s, MT_OCI_INDEX, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_uint_eq(m.nchildren, 64);
    ck_assert_int_eq(m.children[63].size, 163);
    manifest_free(&m);
    free(s);

    s = index_of(1);
    rc = parse(s, MT_OCI_INDEX, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_uint_eq(m.nchildren, 1);
    manifest_free(&m);
    free(s);

    s = index_of(65);
    refused(s, MT_OCI_INDEX, "65 entries");
    free(s);
    s = index_of(0);
    refused(s, MT_OCI_INDEX, "0 entries");
    free(s);
    refused("{\"schemaVersion\":2,\"mediaType\":\"" MT_OCI_INDEX "\"}", NULL, "no manifests");
    refused("{\"schemaVersion\":2,\"mediaType\":\"" MT_OCI_INDEX "\",\"manifests\":{}}", NULL,
            "manifests an object");
}
END_TEST

START_TEST(manifest_schema1_and_unknown_types_refused)
{
    refused(SCHEMA1, MT_SCHEMA1, "schema 1 (prettyjws)");
    refused(SCHEMA1, MT_DOCKER_MANIFEST, "schema 1 under a v2 Content-Type");
    refused(SCHEMA1, NULL, "schema 1 without Content-Type");
    /* schemaVersion 2 but a type aidc does not know */
    refused("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.artifact.manifest.v1+json\","
            "\"config\":{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"},\"layers\":[]}",
            NULL, "artifact manifest");
    refused("{\"schemaVersion\":2,\"config\":{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"},"
            "\"layers\":[]}",
            MT_SCHEMA1, "v2 body under a schema 1 Content-Type");
    refused("{\"schemaVersion\":2,\"mediaType\":\"text/html\"}", NULL, "text/html");
    refused("{\"schemaVersion\":2}", NULL, "nothing to tell the kind");
    /* schemaVersion missing, a string, or 3 */
    refused("{\"mediaType\":\"" MT_DOCKER_MANIFEST
            "\",\"config\":{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"},\"layers\":[]}",
            NULL, "no schemaVersion");
    refused("{\"schemaVersion\":\"2\",\"mediaType\":\"" MT_DOCKER_MANIFEST
            "\",\"config\":{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"},\"layers\":[]}",
            NULL, "schemaVersion a string");
    refused("{\"schemaVersion\":3,\"mediaType\":\"" MT_DOCKER_MANIFEST
            "\",\"config\":{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"},\"layers\":[]}",
            NULL, "schemaVersion 3");
}
END_TEST

START_TEST(manifest_descriptors_are_checked)
{
    static const char *const D = "{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"}";
    struct {
        const char *config, *layers, *why;
    } bad[] = {
        {"null", "[]", "config null"},
        {"\"" GOOD_DIGEST "\"", "[]", "config a string"},
        {"{\"size\":1}", "[]", "config without digest"},
        {"{\"digest\":\"" GOOD_DIGEST "\"}", "[]", "config without size"},
        {"{\"size\":1,\"digest\":\"sha256:abc\"}", "[]", "config short digest"},
        {"{\"size\":1,\"digest\":\"sha256:"
         "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\"}",
         "[]", "config uppercase digest"},
        {"{\"size\":1,\"digest\":\"sha512:" HEX64 HEX64 "\"}", "[]", "config sha512"},
        {"{\"size\":1,\"digest\":5}", "[]", "config digest a number"},
        {"{\"size\":-1,\"digest\":\"" GOOD_DIGEST "\"}", "[]", "config negative size"},
        {"{\"size\":\"1\",\"digest\":\"" GOOD_DIGEST "\"}", "[]", "config size a string"},
        {"{\"size\":1.5,\"digest\":\"" GOOD_DIGEST "\"}", "[]", "config size a real"},
        {"{\"size\":1125899906842625,\"digest\":\"" GOOD_DIGEST "\"}", "[]", "config 2^50+1"},
        {D, "null", "layers null"},
        {D, "{}", "layers an object"},
        {D, "[5]", "layer a number"},
        {D, "[{\"size\":-209,\"digest\":\"" GOOD_DIGEST "\"}]", "layer negative size"},
        {D, "[{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"},{\"size\":1,\"digest\":\"md5:x\"}]",
         "second layer bad digest"},
        {D, "[{\"size\":1125899906842625,\"digest\":\"" GOOD_DIGEST "\"}]", "layer 2^50+1"},
        {D, "[{\"size\":9223372036854775807,\"digest\":\"" GOOD_DIGEST "\"}]", "layer 2^63-1"},
        {D, "[{\"size\":1125899906842624,\"digest\":\"" GOOD_DIGEST "\"}]",
         "config + layer above 2^50"},
        {D, "[{\"size\":1e3,\"digest\":\"" GOOD_DIGEST "\"}]", "layer size in exponent form"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *b = image_manifest(bad[i].config, bad[i].layers);
        refused(b, NULL, bad[i].why);
        free(b);
    }
    /* missing config and layers altogether */
    refused("{\"schemaVersion\":2,\"mediaType\":\"" MT_DOCKER_MANIFEST "\",\"layers\":[]}", NULL,
            "no config");
    refused("{\"schemaVersion\":2,\"mediaType\":\"" MT_OCI_MANIFEST "\",\"config\":{\"size\":1,"
            "\"digest\":\"" GOOD_DIGEST "\"}}",
            NULL, "no layers");
    /* an index under an image manifest's type: no config */
    refused("{\"schemaVersion\":2,\"mediaType\":\"" MT_OCI_MANIFEST "\",\"manifests\":[{\"size\":1,"
            "\"digest\":\"" GOOD_DIGEST "\"}]}",
            NULL, "index posing as a manifest");
    /* a size beyond what JSON integers hold here */
    char *b =
        image_manifest("{\"size\":99999999999999999999,\"digest\":\"" GOOD_DIGEST "\"}", "[]");
    refused(b, NULL, "size beyond 2^63");
    free(b);

    /* 2^50 exactly is the largest size taken */
    struct manifest m;
    char err[256];
    b = image_manifest("{\"size\":1125899906842624,\"digest\":\"" GOOD_DIGEST "\"}",
                       "[{\"size\":0,\"digest\":\"" GOOD_DIGEST "\"}]");
    int rc = parse(b, NULL, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_int_eq(m.size, 1LL << 50);
    manifest_free(&m);
    free(b);

    /* bad children of an index; the ones read before are freed */
    refused("{\"schemaVersion\":2,\"mediaType\":\"" MT_OCI_INDEX "\",\"manifests\":["
            "{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"},{\"size\":1,\"digest\":\"sha256:nope\"}]}",
            NULL, "index child bad digest");
    refused("{\"schemaVersion\":2,\"mediaType\":\"" MT_OCI_INDEX "\",\"manifests\":["
            "{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"},{\"size\":-1,\"digest\":\"" GOOD_DIGEST
            "\"}]}",
            NULL, "index child negative size");
    refused("{\"schemaVersion\":2,\"mediaType\":\"" MT_OCI_INDEX "\",\"manifests\":["
            "{\"size\":1,\"digest\":\"" GOOD_DIGEST "\"},\"" GOOD_DIGEST "\"]}",
            NULL, "index child a string");
    refused("{\"schemaVersion\":2,\"mediaType\":\"" MT_DOCKER_LIST "\",\"manifests\":["
            "{\"size\":1125899906842625,\"digest\":\"" GOOD_DIGEST "\"}]}",
            NULL, "index child 2^50+1");
}
END_TEST

START_TEST(manifest_not_a_json_object)
{
    refused("", MT_DOCKER_MANIFEST, "empty");
    refused("not json", MT_DOCKER_MANIFEST, "text");
    refused("<html><body>502 Bad Gateway</body></html>", MT_DOCKER_MANIFEST, "html");
    refused("[]", MT_DOCKER_MANIFEST, "array");
    refused("[{\"schemaVersion\":2}]", MT_DOCKER_MANIFEST, "array of a manifest");
    refused("\"manifest\"", MT_DOCKER_MANIFEST, "string");
    refused("2", MT_DOCKER_MANIFEST, "number");
    refused("null", MT_DOCKER_MANIFEST, "null");
    refused("{\"schemaVersion\":2,", MT_DOCKER_MANIFEST, "cut");
    /* the real manifest cut short */
    struct manifest m;
    char err[256];
    ck_assert_int_eq(manifest_parse(DOCKER_V2, 300, MT_DOCKER_MANIFEST, &m, err, sizeof err),
                     AIDC_EINVAL);
    manifest_free(&m);
    /* and followed by more */
    char *b = xasprintf("%s{}", DOCKER_V2);
    refused(b, MT_DOCKER_MANIFEST, "trailing data");
    free(b);
}
END_TEST

START_TEST(manifest_media_type_from_body_or_content_type)
{
    struct manifest m;
    char err[256];
    /* an OCI manifest may leave mediaType out: the Content-Type says, parameters aside */
    const char *nomt = "{\"schemaVersion\":2,\"config\":{\"size\":10,\"digest\":\"" GOOD_DIGEST
                       "\"},\"layers\":[{\"size\":5,\"digest\":\"" GOOD_DIGEST "\"}]}";
    int rc = parse(nomt, "application/vnd.oci.image.manifest.v1+json; charset=utf-8", &m, err,
                   sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert(!m.index);
    ck_assert_str_eq(m.media_type, MT_OCI_MANIFEST);
    ck_assert_int_eq(m.size, 15);
    manifest_free(&m);

    rc = parse(nomt, "application/vnd.oci.image.manifest.v1+json;charset=utf-8", &m, err,
               sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_str_eq(m.media_type, MT_OCI_MANIFEST);
    manifest_free(&m);

    rc = parse(nomt, MT_DOCKER_MANIFEST, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_str_eq(m.media_type, MT_DOCKER_MANIFEST);
    manifest_free(&m);

    /* neither says: the shape does (config → image manifest) */
    rc = parse(nomt, NULL, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert(!m.index);
    ck_assert_str_eq(m.media_type, MT_OCI_MANIFEST);
    manifest_free(&m);

    /* the body's mediaType wins over the Content-Type */
    rc = parse(DOCKER_V2, "application/vnd.oci.image.manifest.v1+json; charset=utf-8", &m, err,
               sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_str_eq(m.media_type, MT_DOCKER_MANIFEST);
    ck_assert_int_eq(m.size, 1294);
    manifest_free(&m);
    rc = parse(DOCKER_V2, "application/octet-stream", &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert_str_eq(m.media_type, MT_DOCKER_MANIFEST);
    manifest_free(&m);

    /* an index without mediaType, told by the Content-Type or by its shape */
    const char *idx = "{\"schemaVersion\":2,\"manifests\":[{\"size\":1,\"digest\":\"" GOOD_DIGEST
                      "\",\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";
    rc = parse(idx, "application/vnd.oci.image.index.v1+json; charset=utf-8", &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert(m.index);
    ck_assert_str_eq(m.media_type, MT_OCI_INDEX);
    ck_assert_str_eq(m.children[0].platform, "linux/amd64");
    manifest_free(&m);
    rc = parse(idx, NULL, &m, err, sizeof err);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
    ck_assert(m.index);
    ck_assert_str_eq(m.media_type, MT_OCI_INDEX);
    manifest_free(&m);

    /* a Content-Type naming an index over a body shaped as an image manifest */
    refused(nomt, "application/vnd.oci.image.index.v1+json; charset=utf-8", "manifest as index");
}
END_TEST

/*
 * An index entry's platform ends up in a label: os/architecture/variant that are
 * not plain words (a cut multi-byte character, control characters, the ','
 * platforms are joined with, an empty variant) make the entry no platform, or
 * come out clean.
 */
START_TEST(an_index_platform_that_is_not_plain_words_is_none)
{
    static const struct {
        const char *platform, *want, *why;
    } cases[] = {
        {"{\"os\":\"linux\",\"architecture\":\"aaaaaaaaaaaaaaaaaaa\\u00e9\"}", NULL,
         "architecture cut inside a character"},
        {"{\"os\":\"li\\nnux\",\"architecture\":\"amd64\"}", NULL, "newline in os"},
        {"{\"os\":\"linux\",\"architecture\":\"amd64\\u001b[31m\"}", NULL,
         "escape in architecture"},
        {"{\"os\":\"linux\",\"architecture\":\"amd64,arm64\"}", NULL, "',' in architecture"},
        {"{\"os\":\"linux\",\"architecture\":\"amd64\",\"variant\":\"\"}", "linux/amd64",
         "empty variant"},
    };
    char failed[1024] = "";
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *body =
            xasprintf("{\"schemaVersion\":2,\"mediaType\":\"%s\",\"manifests\":[{\"size\":1,"
                      "\"digest\":\"%s\",\"platform\":%s}]}",
                      MT_OCI_INDEX, GOOD_DIGEST, cases[i].platform);
        struct manifest m;
        char err[256];
        int rc = parse(body, NULL, &m, err, sizeof err);
        free(body);
        if (rc != 0)
            continue; /* refused: fine */
        const char *pf = m.children[0].platform;
        bool clean = utf8_valid(pf) && !strchr(pf, ',');
        for (const char *q = pf; *q; q++)
            clean = clean && (unsigned char)*q >= ' ' && *q != 127;
        if (cases[i].want && strcmp(pf, cases[i].want) != 0)
            clean = false;
        if (!clean) {
            size_t fl = strlen(failed);
            snprintf(failed + fl, sizeof failed - fl, "%s%s", fl ? "; " : "", cases[i].why);
        }
        manifest_free(&m);
    }
    ck_assert_msg(!failed[0], "index platforms taken unchecked: %s", failed);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("manifest");
    TCase *tc = tcase_create("manifests");
    tcase_add_test(tc, manifest_docker_v2_from_the_registry);
    tcase_add_test(tc, manifest_oci_from_the_registry);
    tcase_add_test(tc, manifest_index_children_and_platforms);
    tcase_add_test(tc, manifest_index_of_1_to_64_entries);
    tcase_add_test(tc, manifest_schema1_and_unknown_types_refused);
    tcase_add_test(tc, manifest_descriptors_are_checked);
    tcase_add_test(tc, manifest_not_a_json_object);
    tcase_add_test(tc, manifest_media_type_from_body_or_content_type);
    tcase_add_test(tc, an_index_platform_that_is_not_plain_words_is_none);
    suite_add_tcase(s, tc);

    return suite_run(s);
}
