/*
 * test_manifest.c - what aidc reads from a container registry (images/manifest.h):
 * image references, the auth challenge, paging links, token answers, manifests,
 * image configs and digests. The bodies and headers are the real answers of
 * docker-registry 2.8.2 recorded in shared/fixtures/registry/README.md (the
 * manifests byte for byte: their sha256 is the recorded Docker-Content-Digest),
 * plus Docker Hub's bearer challenge and a buildx-style OCI index.
 */
#include "tests/support/suite.h"

#include "images/manifest.h"
#include "server/crypto.h"
#include "server/err.h"
#include "server/xalloc.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the recorded answers ------------------------------------------------------------ */

/* GET /v2/pytorch/pytorch/manifests/2.4-cuda12.4: Content-Length 584, with jq's newline */
static const char DOCKER_V2[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
    "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"size\":810,"
    "\"digest\":\"sha256:63a9914a0ff3846ebf15ecfac4371d68ca6a0eaa378b1e9424a586c34bb38ac1\"},"
    "\"layers\":[{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"size\":209,"
    "\"digest\":\"sha256:6e71575bd948ce341dae590d4e8ac03ccb1318235642b1b38d797d7cdb117374\"},"
    "{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"size\":275,"
    "\"digest\":\"sha256:3f6a53345631b4b2afee4da2da1e3a42038aba90b7a0db00f8ae2d8fb5b77ffb\"}]}\n";
#define DOCKER_V2_DIGEST "sha256:817bafa10c302b932e90a03c553c00a3b8dd7834cbdc9d2196efdb0d0c98afdf"
#define DOCKER_V2_CONFIG "sha256:63a9914a0ff3846ebf15ecfac4371d68ca6a0eaa378b1e9424a586c34bb38ac1"

/* GET /v2/tensorflow/tensorflow/manifests/2.16-gpu (Content-Type: OCI image manifest) */
static const char OCI_MANIFEST[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"size\":817,"
    "\"digest\":\"sha256:ce8f045e5ff92f26e40fcaded73eb85bd175ea614436c7b0c37f554321675439\"},"
    "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"size\":209,"
    "\"digest\":\"sha256:6e71575bd948ce341dae590d4e8ac03ccb1318235642b1b38d797d7cdb117374\"},"
    "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"size\":288,"
    "\"digest\":\"sha256:7b2312fc4cf7af24950ecbbde14a27c051b913fdfa7134778c3222d347aed6de\"}],"
    "\"annotations\":{\"org.opencontainers.image.created\":\"2024-03-08T00:00:00Z\"}}\n";
#define OCI_MANIFEST_DIGEST                                                                        \
    "sha256:f06701933d31aa4feaea7adc9f1c9d16fa87e27d4e18da540820af795f8f79cf"

/* GET /v2/pytorch/pytorch/blobs/sha256:63a9914a… (the config of DOCKER_V2, 810 bytes) */
static const char CONFIG_BLOB[] =
    "{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":\"2024-07-24T00:00:00Z\","
    "\"config\":{\"Env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\","
    "\"NVIDIA_VISIBLE_DEVICES=all\",\"CUDA_VERSION=12.4\"],\"Cmd\":[\"python3\"],"
    "\"WorkingDir\":\"/workspace\",\"Labels\":{\"framework\":\"pytorch\",\"framework_version\":"
    "\"2.4.0\",\"cuda_version\":\"12.4\",\"python_version\":\"3.11\","
    "\"org.opencontainers.image.title\":\"pytorch\",\"org.opencontainers.image.version\":"
    "\"2.4-cuda12.4\"}},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":["
    "\"sha256:488b53e53e1f86437c1e1edcf58cab278600641d16446c074a7b8e6ce47cd2a7\","
    "\"sha256:24b603dd4bc236194214a232f3c35ac4e6012fbd0c06952d826f980a917fd6a6\"]},"
    "\"history\":[{\"created\":\"2024-07-24T00:00:00Z\",\"created_by\":\"registry-seed.sh base "
    "layer\"},{\"created\":\"2024-07-24T00:00:00Z\",\"created_by\":\"registry-seed.sh pytorch "
    "2.4.0\"}]}\n";

/*
 * What the same registry answers without an Accept header: a signed schema 1
 * manifest (shape of distribution's conversion; the signature is not checked).
 */
static const char SCHEMA1[] =
    "{\n   \"schemaVersion\": 1,\n   \"name\": \"pytorch/pytorch\",\n   \"tag\": "
    "\"2.4-cuda12.4\",\n"
    "   \"architecture\": \"amd64\",\n   \"fsLayers\": [\n      {\n         \"blobSum\": "
    "\"sha256:3f6a53345631b4b2afee4da2da1e3a42038aba90b7a0db00f8ae2d8fb5b77ffb\"\n      },\n"
    "      {\n         \"blobSum\": "
    "\"sha256:6e71575bd948ce341dae590d4e8ac03ccb1318235642b1b38d797d7cdb117374\"\n      }\n   ],\n"
    "   \"history\": [\n      {\n         \"v1Compatibility\": "
    "\"{\\\"architecture\\\":\\\"amd64\\\"}\"\n"
    "      }\n   ],\n   \"signatures\": [\n      {\n         \"header\": {\n            \"jwk\": "
    "{\n"
    "               \"crv\": \"P-256\",\n               \"kty\": \"EC\"\n            },\n"
    "            \"alg\": \"ES256\"\n         },\n         \"signature\": \"c2ln\",\n"
    "         \"protected\": \"eyJmb3JtYXRMZW5ndGgiOjEyMzR9\"\n      }\n   ]\n}";
#define MT_SCHEMA1 "application/vnd.docker.distribution.manifest.v1+prettyjws"

/* A multi-platform image as buildx pushes it: two platforms and an attestation. */
static const char OCI_INDEX[] =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":["
    "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"digest\":\"sha256:817bafa10c302b932e90a03c553c00a3b8dd7834cbdc9d2196efdb0d0c98afdf\","
    "\"size\":584,\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}},"
    "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"digest\":\"sha256:f06701933d31aa4feaea7adc9f1c9d16fa87e27d4e18da540820af795f8f79cf\","
    "\"size\":630,\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\",\"variant\":\"v8\"}},"
    "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"digest\":\"sha256:924264646214395dd83f4aa65cb05ba12549d17f1097275d88f05c590efc38c9\","
    "\"size\":566,\"annotations\":{\"vnd.docker.reference.digest\":"
    "\"sha256:817bafa10c302b932e90a03c553c00a3b8dd7834cbdc9d2196efdb0d0c98afdf\","
    "\"vnd.docker.reference.type\":\"attestation-manifest\"},"
    "\"platform\":{\"architecture\":\"unknown\",\"os\":\"unknown\"}}]}";

#define HEX64       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define GOOD_DIGEST "sha256:" HEX64

/* ---- helpers --------------------------------------------------------------------------- */

/* n copies of c (malloc'd) */
static char *rep(char c, size_t n)
{
    char *s = xmalloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static bool utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t extra = *p < 0x80             ? 0
                       : (*p & 0xE0) == 0xC0 ? 1
                       : (*p & 0xF0) == 0xE0 ? 2
                       : (*p & 0xF8) == 0xF0 ? 3
                                             : 9;
        if (extra == 9)
            return false;
        p++;
        for (size_t i = 0; i < extra; i++, p++)
            if ((*p & 0xC0) != 0x80)
                return false;
    }
    return true;
}

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

static void labels_of(const char *body, json_t **out)
{
    char err[256] = "";
    *out = manifest_config_labels(body, strlen(body), err, sizeof err);
    ck_assert_msg(*out != NULL, "labels refused: %s", err);
}

/* ---- digests, repositories, tags ------------------------------------------------------ */

START_TEST(digest_is_sha256_and_64_lowercase_hex)
{
    ck_assert(image_digest_valid(GOOD_DIGEST));
    ck_assert(image_digest_valid(DOCKER_V2_DIGEST));
    ck_assert(
        !image_digest_valid("sha256:"
                            "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
    ck_assert(
        !image_digest_valid("sha256:"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"));
    ck_assert(!image_digest_valid(GOOD_DIGEST "0"));
    ck_assert(
        !image_digest_valid("sha256:"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg"));
    ck_assert(!image_digest_valid("sha512:" HEX64 HEX64));
    ck_assert(!image_digest_valid("sha512:" HEX64));
    ck_assert(!image_digest_valid("SHA256:" HEX64));
    ck_assert(!image_digest_valid("sha256" HEX64 "0"));
    ck_assert(!image_digest_valid(HEX64));
    ck_assert(!image_digest_valid("sha256:"));
    ck_assert(!image_digest_valid(""));
    ck_assert(!image_digest_valid(NULL));
}
END_TEST

START_TEST(repository_follows_dockers_grammar)
{
    static const char *const good[] = {
        "a",
        "ubuntu",
        "pytorch/pytorch",
        "library/ubuntu",
        "a__b",
        "a_b",
        "a.b",
        "a--b",
        "a---b",
        "a-b-c/d.e_f",
        "0/9",
        "a/b/c/d",
        "x1.y2__z3--w4",
    };
    static const char *const bad[] = {
        "",      "A",    "pyTorch/pytorch",
        "a___b", "a..b", "a._b",
        "a_.b",  "_a",   "a_",
        "-a",    "a-",   ".a",
        "a.",    "/a",   "a/",
        "a//b",  "//",   "a/ /b",
        "a b",   "a:b",  "a@b",
        "a/B",   "é",    "a/-b",
        "a/b.",  "a\nb",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        ck_assert_msg(image_repository_valid(good[i]), "[%s] refused", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!image_repository_valid(bad[i]), "[%s] accepted", bad[i]);
    ck_assert(!image_repository_valid(NULL));

    char *r255 = rep('a', IMAGE_REPO_MAX), *r256 = rep('a', IMAGE_REPO_MAX + 1);
    ck_assert(image_repository_valid(r255));
    ck_assert(!image_repository_valid(r256));
    /* the limit is on the whole path, not per component */
    r255[100] = '/';
    r255[200] = '/';
    ck_assert(image_repository_valid(r255));
    r256[100] = '/';
    ck_assert(!image_repository_valid(r256));
    free(r255);
    free(r256);
}
END_TEST

START_TEST(tag_follows_dockers_grammar)
{
    static const char *const good[] = {"latest", "2.4-cuda12.4", "_x",  "A",  "v1.0_RC-2",
                                       "0",      "a..b",         "a--", "x.", "Z_"};
    static const char *const bad[] = {"", ".x", "-x", "a/b", "a:b", "a b", "a@b", "é", "a\tb"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        ck_assert_msg(image_tag_valid(good[i]), "[%s] refused", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!image_tag_valid(bad[i]), "[%s] accepted", bad[i]);
    ck_assert(!image_tag_valid(NULL));

    char *t128 = rep('t', IMAGE_TAG_MAX), *t129 = rep('t', IMAGE_TAG_MAX + 1);
    ck_assert(image_tag_valid(t128));
    ck_assert(!image_tag_valid(t129));
    free(t128);
    free(t129);
}
END_TEST

/* ---- imgref_parse ---------------------------------------------------------------------- */

static void ref_is(const char *s, const char *host, const char *repo, const char *tag,
                   const char *digest)
{
    struct imgref r;
    char err[256] = "";
    ck_assert_msg(imgref_parse(s, &r, err, sizeof err), "[%s] refused: %s", s, err);
    ck_assert_msg(strcmp(r.host, host) == 0, "[%s] host [%s], expected [%s]", s, r.host, host);
    ck_assert_msg(strcmp(r.repository, repo) == 0, "[%s] repository [%s], expected [%s]", s,
                  r.repository, repo);
    ck_assert_msg(strcmp(r.tag, tag) == 0, "[%s] tag [%s], expected [%s]", s, r.tag, tag);
    ck_assert_msg(strcmp(r.digest, digest) == 0, "[%s] digest [%s], expected [%s]", s, r.digest,
                  digest);
}

static void ref_refused(const char *s)
{
    struct imgref r;
    char err[256] = "";
    ck_assert_msg(!imgref_parse(s, &r, err, sizeof err), "[%.80s] accepted (repository [%s])",
                  s ? s : "(null)", r.repository);
    ck_assert_msg(err[0], "[%.80s] refused without a reason", s ? s : "(null)");
}

START_TEST(imgref_reads_references_as_jobs_write_them)
{
    ref_is("pytorch/pytorch:2.4-cuda12.4", "", "pytorch/pytorch", "2.4-cuda12.4", "");
    ref_is("ubuntu", "", "ubuntu", "latest", "");
    ref_is("ubuntu:22.04", "", "ubuntu", "22.04", "");
    ref_is("library/ubuntu", "", "library/ubuntu", "latest", "");
    ref_is("127.0.0.1:5000/pytorch/pytorch:2.4", "127.0.0.1:5000", "pytorch/pytorch", "2.4", "");
    /* enroot's (pyxis') spelling names the host with a # */
    ref_is("nvcr.io#nvidia/pytorch:24.01-py3", "nvcr.io", "nvidia/pytorch", "24.01-py3", "");
    ref_is("registry#team/img", "registry", "team/img", "latest", "");
    ref_is("localhost/x", "localhost", "x", "latest", "");
    ref_is("localhost:5000/x:1", "localhost:5000", "x", "1", "");
    ref_is("registry.example.com:443/a/b@" GOOD_DIGEST, "registry.example.com:443", "a/b", "",
           GOOD_DIGEST);
    ref_is("pytorch/pytorch@" DOCKER_V2_DIGEST, "", "pytorch/pytorch", "", DOCKER_V2_DIGEST);
    /* tag and digest: both kept (the digest is what gets pinned) */
    ref_is("repo:tag@" GOOD_DIGEST, "", "repo", "tag", GOOD_DIGEST);
    ref_is("registry.example.com/team/repo:v1@" GOOD_DIGEST, "registry.example.com", "team/repo",
           "v1", GOOD_DIGEST);
    ref_is("[::1]:5000/a/b:t", "[::1]:5000", "a/b", "t", "");
    /* a first component without '.', ':' and not localhost is part of the repository */
    ref_is("team/sub/repo:t", "", "team/sub/repo", "t", "");
    ref_is("localhost", "", "localhost", "latest", "");
}
END_TEST

START_TEST(imgref_host_alone_is_a_repository_and_tag)
{
    /*
     * "example.com:5000" has no '/': by Docker's grammar (a domain is only
     * recognized before a '/'), it is repository "example.com", tag "5000"
     * (docker pull example.com:5000 asks Docker Hub for library/example.com:5000).
     * aidc then finds no such image for the tenant: nothing is fetched from
     * example.com.
     */
    ref_is("example.com:5000", "", "example.com", "5000", "");
    ref_is("localhost:5000", "", "localhost", "5000", "");
    /* with the '/', the host is recognized and the repository is missing */
    ref_refused("example.com:5000/");
    ref_refused("localhost/");
    ref_refused("example.com:5000/:tag");
    ref_refused("example.com:5000/@" GOOD_DIGEST);
}
END_TEST

START_TEST(imgref_refuses_what_is_no_reference)
{
    ref_refused("");
    ref_refused(NULL);
    ref_refused("ubuntu@");
    ref_refused("ubuntu@sha256:"
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde");
    ref_refused("ubuntu@sha256:"
                "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF");
    ref_refused("ubuntu@sha512:" HEX64 HEX64);
    ref_refused("ubuntu@" GOOD_DIGEST "@" GOOD_DIGEST);
    ref_refused("@" GOOD_DIGEST);
    ref_refused("Ubuntu");
    ref_refused("pytorch/PyTorch:2.4");
    ref_refused("127.0.0.1:5000/PyTorch/pytorch");
    ref_refused("ubuntu:");
    ref_refused("ubuntu:-x");
    ref_refused("ubuntu:.x");
    ref_refused("ubuntu:a:b");
    ref_refused(":tag");
    ref_refused("a//b");
    ref_refused("a b");
    ref_refused("bad_host.example/x");
    ref_refused("ex ample.com/x");
}
END_TEST

START_TEST(imgref_limits)
{
    /* the longest reference: host 253, repository 255, tag 128, digest: 710 characters */
    char *host = rep('h', IMAGE_HOST_MAX), *repo = rep('r', IMAGE_REPO_MAX),
         *tag = rep('t', IMAGE_TAG_MAX);
    snprintf(host + IMAGE_HOST_MAX - 4, 5, ".com");
    char *s = xasprintf("%s/%s:%s@%s", host, repo, tag, GOOD_DIGEST);
    ck_assert_uint_eq(strlen(s), 710);
    ref_is(s, host, repo, tag, GOOD_DIGEST);
    free(s);

    /* one more anywhere: refused */
    s = xasprintf("%s/%s:%sx@%s", host, repo, tag, GOOD_DIGEST);
    ref_refused(s);
    free(s);
    s = xasprintf("x%s/%s:%s@%s", host, repo, tag, GOOD_DIGEST);
    ref_refused(s);
    free(s);
    s = xasprintf("%s/%sx:%s", host, repo, tag);
    ref_refused(s);
    free(s);
    s = xasprintf("%s:%sx", repo, tag);
    ref_refused(s);
    free(s);
    s = xasprintf("x%s/%s", host, repo);
    ref_refused(s);
    free(s);

    /* a long string of nothing in particular */
    char *junk = rep('a', 5000);
    ref_refused(junk);
    free(junk);
    free(host);
    free(repo);
    free(tag);
}
END_TEST

/* ---- registry_parse_challenge ---------------------------------------------------------- */

START_TEST(challenge_basic_as_the_registry_sends_it)
{
    struct regchallenge c;
    ck_assert(registry_parse_challenge("Basic realm=\"aidc-registry\"", &c));
    ck_assert_str_eq(c.scheme, "Basic");
    ck_assert_str_eq(c.realm, "aidc-registry");
    ck_assert_str_eq(c.service, "");
    ck_assert_str_eq(c.scope, "");
}
END_TEST

START_TEST(challenge_bearer_parameters_in_any_order)
{
    struct regchallenge c;
    ck_assert(registry_parse_challenge(
        "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
        "scope=\"repository:library/ubuntu:pull\"",
        &c));
    ck_assert_str_eq(c.scheme, "Bearer");
    ck_assert_str_eq(c.realm, "https://auth.docker.io/token");
    ck_assert_str_eq(c.service, "registry.docker.io");
    ck_assert_str_eq(c.scope, "repository:library/ubuntu:pull");

    /* reordered, spaces after the commas, a comma inside a quoted value */
    ck_assert(registry_parse_challenge(
        "Bearer scope=\"repository:a/b:pull,push\", service=\"reg.example\", "
        "realm=\"http://127.0.0.1:5001/auth\"",
        &c));
    ck_assert_str_eq(c.realm, "http://127.0.0.1:5001/auth");
    ck_assert_str_eq(c.service, "reg.example");
    ck_assert_str_eq(c.scope, "repository:a/b:pull,push");

    /* quoted-pairs: \" and \\ */
    ck_assert(
        registry_parse_challenge("Bearer realm=\"https://a.example/t\",service=\"a \\\"quoted\\\" "
                                 "service\",scope=\"x\\\\y\"",
                                 &c));
    ck_assert_str_eq(c.service, "a \"quoted\" service");
    ck_assert_str_eq(c.scope, "x\\y");
    ck_assert_str_eq(c.realm, "https://a.example/t");

    /* scheme and parameter names are case-insensitive; bare values */
    ck_assert(registry_parse_challenge("bearer Realm=https://a.example/t,SERVICE=s", &c));
    ck_assert_str_eq(c.scheme, "bearer");
    ck_assert_str_eq(c.realm, "https://a.example/t");
    ck_assert_str_eq(c.service, "s");

    /* unknown parameters are skipped */
    ck_assert(registry_parse_challenge(
        "Bearer error=\"insufficient_scope\",realm=\"https://a.example/t\",scope=\"s\"", &c));
    ck_assert_str_eq(c.realm, "https://a.example/t");
    ck_assert_str_eq(c.scope, "s");
}
END_TEST

START_TEST(challenge_refused_when_unusable)
{
    struct regchallenge c;
    /* a Bearer challenge is only usable with an http(s) realm */
    ck_assert(!registry_parse_challenge("Bearer service=\"registry.docker.io\",scope=\"x\"", &c));
    ck_assert(!registry_parse_challenge("Bearer", &c));
    ck_assert(!registry_parse_challenge("Bearer realm=\"\"", &c));
    ck_assert(!registry_parse_challenge("Bearer realm=\"ftp://auth.example/token\"", &c));
    ck_assert(!registry_parse_challenge("Bearer realm=\"file:///etc/passwd\"", &c));
    ck_assert(!registry_parse_challenge("Bearer realm=\"auth.docker.io/token\"", &c));
    ck_assert(!registry_parse_challenge("Bearer realm=\"javascript:alert(1)\"", &c));
    ck_assert(!registry_parse_challenge("Bearer realm=\"//auth.example/token\"", &c));
    /* garbage */
    ck_assert(!registry_parse_challenge("", &c));
    ck_assert(!registry_parse_challenge("   ", &c));
    ck_assert(!registry_parse_challenge("!!!", &c));
    ck_assert(!registry_parse_challenge("=\"x\"", &c));
    ck_assert(!registry_parse_challenge("Bearer\"realm\"", &c));
    ck_assert(!registry_parse_challenge("Bearer,realm=\"https://a.example/t\"", &c));
    ck_assert(
        !registry_parse_challenge("Negotiateeeeeeeeeeeeeeee realm=\"https://a.example/t\"", &c));
    ck_assert(!registry_parse_challenge(NULL, &c));
}
END_TEST

/* ---- registry_next_link ---------------------------------------------------------------- */

#define ORIGIN "http://127.0.0.1:5000"

/* want NULL: no link to follow; bad: ... because the next link cannot be followed */
static void next_is_bad(const char *header, const char *want, bool bad)
{
    bool unfollowable = !bad;
    char *got = registry_next_link(header, ORIGIN, &unfollowable);
    ck_assert_msg(unfollowable == bad, "[%s]: unfollowable %d, expected %d",
                  header ? header : "(null)", unfollowable, bad);
    if (!want) {
        ck_assert_msg(got == NULL, "[%s] gave [%s], expected none", header ? header : "(null)",
                      got);
    } else {
        ck_assert_msg(got != NULL, "[%s] gave none, expected [%s]", header, want);
        ck_assert_msg(strcmp(got, want) == 0, "[%s] gave [%s], expected [%s]", header, got, want);
    }
    free(got);
}

static void next_is(const char *header, const char *want)
{
    next_is_bad(header, want, false);
}

START_TEST(next_link_follows_the_registrys_own_path)
{
    next_is("</v2/_catalog?last=pytorch%2Fpytorch&n=1>; rel=\"next\"",
            "/v2/_catalog?last=pytorch%2Fpytorch&n=1");
    next_is("</v2/pytorch/pytorch/tags/list?last=2.3-cuda12.1&n=1>; rel=\"next\"",
            "/v2/pytorch/pytorch/tags/list?last=2.3-cuda12.1&n=1");
    next_is("</v2/_catalog?last=b&n=1>;rel=next", "/v2/_catalog?last=b&n=1");
    /* several links: the one with rel="next" */
    next_is("</v2/_catalog?n=1>; rel=\"first\", </v2/_catalog?last=b&n=1>; rel=\"next\", "
            "</v2/_catalog?last=z&n=1>; rel=\"last\"",
            "/v2/_catalog?last=b&n=1");
    next_is("</v2/_catalog?last=a&n=1>; rel=\"prev\", </v2/_catalog?last=c&n=1>; rel=\"next\"",
            "/v2/_catalog?last=c&n=1");
}
END_TEST

START_TEST(next_link_never_leaves_the_registry)
{
    /* elsewhere: not followed, and the listing is known to be incomplete */
    next_is_bad("<https://evil.example/v2/_catalog?last=x&n=1>; rel=\"next\"", NULL, true);
    next_is_bad("<http://127.0.0.1:5000.evil.example/v2/_catalog>; rel=\"next\"", NULL, true);
    next_is_bad("<https://127.0.0.1:5000/v2/_catalog>; rel=\"next\"", NULL, true);
    next_is_bad("<//evil.example/v2/_catalog>; rel=\"next\"", NULL, true);
    next_is_bad("</v3/_catalog>; rel=\"next\"", NULL, true);
    next_is_bad("</v2>; rel=\"next\"", NULL, true);
    next_is_bad("<v2/_catalog>; rel=\"next\"", NULL, true);
    next_is_bad("</token?x=1>; rel=\"next\"", NULL, true);
    /* an absolute next after a relative prev */
    next_is_bad(
        "</v2/_catalog?n=1>; rel=\"prev\", <https://evil.example/v2/_catalog?n=2>; rel=\"next\"",
        NULL, true);
    /* the registry's own absolute URL (Quay) is its path */
    next_is("<http://127.0.0.1:5000/v2/_catalog?last=x&n=1>; rel=\"next\"",
            "/v2/_catalog?last=x&n=1");
}
END_TEST

START_TEST(next_link_absent)
{
    next_is("</v2/_catalog?n=1>; rel=\"prev\"", NULL);
    next_is("</v2/_catalog?n=1>", NULL);
    next_is("", NULL);
    next_is(NULL, NULL);
    next_is("garbage", NULL);
    next_is("rel=\"next\"", NULL);
    next_is("</v2/_catalog?n=1; rel=\"next\"", NULL);
    next_is("<<<<", NULL);
}
END_TEST

START_TEST(next_link_refuses_header_injection)
{
    next_is_bad("</v2/_catalog?n=1\r\nX-Evil: 1>; rel=\"next\"", NULL, true);
    next_is_bad("</v2/_catalog?n=1\nX-Evil: 1>; rel=\"next\"", NULL, true);
    next_is_bad("</v2/_catalog?n=1\rX>; rel=\"next\"", NULL, true);
    next_is_bad("</v2/_catalog?n=1 HTTP/1.1>; rel=\"next\"", NULL, true);
    next_is_bad("</v2/_catalog?n=1\tx>; rel=\"next\"", NULL, true);
}
END_TEST

/* ---- registry_parse_token -------------------------------------------------------------- */

static void token_is(const char *body, const char *want)
{
    char *got = registry_parse_token(body, strlen(body));
    if (!want) {
        ck_assert_msg(got == NULL, "[%.100s] gave [%s], expected none", body, got);
    } else {
        ck_assert_msg(got != NULL, "[%.100s] gave none, expected [%s]", body, want);
        ck_assert_str_eq(got, want);
    }
    free(got);
}

START_TEST(token_from_token_or_access_token)
{
    /* Docker Hub's answer carries both */
    token_is("{\"token\":\"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIifQ.c2ln\",\"access_token\":"
             "\"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIifQ.c2ln\",\"expires_in\":300,"
             "\"issued_at\":\"2024-07-24T00:00:00.000000000Z\"}",
             "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIifQ.c2ln");
    token_is("{\"token\":\"abc.def-ghi_~+/=\"}", "abc.def-ghi_~+/=");
    token_is("{\"access_token\":\"xyz\",\"expires_in\":60}", "xyz");
    token_is("{\"token\":\"first\",\"access_token\":\"second\"}", "first");
    token_is("{\"token\":\"\",\"access_token\":\"second\"}", "second");
    token_is("{\"token\":5,\"access_token\":\"second\"}", "second");

    /* only len bytes are read */
    const char *b = "{\"token\":\"x\"}trailing garbage";
    char *got = registry_parse_token(b, 13);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, "x");
    free(got);

    /* 8191 characters: kept */
    char *t = rep('t', 8191);
    char *body = xasprintf("{\"token\":\"%s\"}", t);
    token_is(body, t);
    free(body);
    free(t);
}
END_TEST

START_TEST(token_refused_when_missing_or_unfit_for_a_header)
{
    token_is("{}", NULL);
    token_is("{\"expires_in\":300}", NULL);
    token_is("{\"token\":5}", NULL);
    token_is("{\"token\":null}", NULL);
    token_is("{\"token\":[\"a\"]}", NULL);
    token_is("{\"token\":{\"a\":\"b\"}}", NULL);
    token_is("{\"token\":\"\"}", NULL);
    token_is("{\"token\":\"\",\"access_token\":\"\"}", NULL);
    token_is("{\"token\":\"a b\"}", NULL);
    token_is("{\"token\":\"a\\tb\"}", NULL);
    token_is("{\"token\":\"a\\r\\nX-Evil: 1\"}", NULL);
    token_is("{\"token\":\"a\\u0001b\"}", NULL);
    token_is("{\"token\":\"a\\u007fb\"}", NULL);
    token_is("{\"token\":\"caf\\u00e9\"}", NULL);
    token_is("{\"access_token\":\"a b\"}", NULL);
    token_is("[\"token\"]", NULL);
    token_is("\"token\"", NULL);
    token_is("token=abc", NULL);
    token_is("{\"token\":\"abc\"", NULL);
    token_is("", NULL);
    token_is("<html>502 Bad Gateway</html>", NULL);

    char *t = rep('t', 8192);
    char *body = xasprintf("{\"token\":\"%s\"}", t);
    token_is(body, NULL);
    free(body);
    free(t);
}
END_TEST

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
    Suite *s = suite_create("manifest");
    TCase *tc = tcase_create("names");
    tcase_add_test(tc, digest_is_sha256_and_64_lowercase_hex);
    tcase_add_test(tc, repository_follows_dockers_grammar);
    tcase_add_test(tc, tag_follows_dockers_grammar);
    tcase_add_test(tc, imgref_reads_references_as_jobs_write_them);
    tcase_add_test(tc, imgref_host_alone_is_a_repository_and_tag);
    tcase_add_test(tc, imgref_refuses_what_is_no_reference);
    tcase_add_test(tc, imgref_limits);
    suite_add_tcase(s, tc);

    tc = tcase_create("headers");
    tcase_add_test(tc, challenge_basic_as_the_registry_sends_it);
    tcase_add_test(tc, challenge_bearer_parameters_in_any_order);
    tcase_add_test(tc, challenge_refused_when_unusable);
    tcase_add_test(tc, next_link_follows_the_registrys_own_path);
    tcase_add_test(tc, next_link_never_leaves_the_registry);
    tcase_add_test(tc, next_link_absent);
    tcase_add_test(tc, next_link_refuses_header_injection);
    tcase_add_test(tc, token_from_token_or_access_token);
    tcase_add_test(tc, token_refused_when_missing_or_unfit_for_a_header);
    suite_add_tcase(s, tc);

    tc = tcase_create("manifests");
    tcase_add_test(tc, manifest_docker_v2_from_the_registry);
    tcase_add_test(tc, manifest_oci_from_the_registry);
    tcase_add_test(tc, manifest_index_children_and_platforms);
    tcase_add_test(tc, manifest_index_of_1_to_64_entries);
    tcase_add_test(tc, manifest_schema1_and_unknown_types_refused);
    tcase_add_test(tc, manifest_descriptors_are_checked);
    tcase_add_test(tc, manifest_not_a_json_object);
    tcase_add_test(tc, manifest_media_type_from_body_or_content_type);
    /* fails until images/manifest.c is fixed: see the test */
    tcase_add_test(tc, an_index_platform_that_is_not_plain_words_is_none);
    suite_add_tcase(s, tc);

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
