/*
 * test_imgref.c - the text of registry exchanges that is not a manifest
 * (images/manifest.h): digests, repository and tag names, image references as
 * jobs write them, the WWW-Authenticate challenge (the registry's Basic one as
 * recorded in shared/fixtures/registry/README.md, Docker Hub's Bearer one),
 * Link paging headers and token answers. Manifests and configs:
 * test_manifest.c.
 */
#include "tests/support/registryfix.h"
#include "tests/support/suite.h"

#include "images/manifest.h"
#include "lib/xalloc.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- digests, repositories, tags ------------------------------------------------------ */

START_TEST(digest_is_sha256_and_64_lowercase_hex)
{
    ck_assert(imgref_digest_valid(GOOD_DIGEST));
    ck_assert(imgref_digest_valid(DOCKER_V2_DIGEST));
    ck_assert(
        !imgref_digest_valid("sha256:"
                            "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
    ck_assert(
        !imgref_digest_valid("sha256:"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"));
    ck_assert(!imgref_digest_valid(GOOD_DIGEST "0"));
    ck_assert(
        !imgref_digest_valid("sha256:"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg"));
    ck_assert(!imgref_digest_valid("sha512:" HEX64 HEX64));
    ck_assert(!imgref_digest_valid("sha512:" HEX64));
    ck_assert(!imgref_digest_valid("SHA256:" HEX64));
    ck_assert(!imgref_digest_valid("sha256" HEX64 "0"));
    ck_assert(!imgref_digest_valid(HEX64));
    ck_assert(!imgref_digest_valid("sha256:"));
    ck_assert(!imgref_digest_valid(""));
    ck_assert(!imgref_digest_valid(NULL));
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
        ck_assert_msg(imgref_repository_valid(good[i]), "[%s] refused", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!imgref_repository_valid(bad[i]), "[%s] accepted", bad[i]);
    ck_assert(!imgref_repository_valid(NULL));

    char *r255 = rep('a', IMAGE_REPO_MAX), *r256 = rep('a', IMAGE_REPO_MAX + 1);
    ck_assert(imgref_repository_valid(r255));
    ck_assert(!imgref_repository_valid(r256));
    /* the limit is on the whole path, not per component */
    r255[100] = '/';
    r255[200] = '/';
    ck_assert(imgref_repository_valid(r255));
    r256[100] = '/';
    ck_assert(!imgref_repository_valid(r256));
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
        ck_assert_msg(imgref_tag_valid(good[i]), "[%s] refused", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!imgref_tag_valid(bad[i]), "[%s] accepted", bad[i]);
    ck_assert(!imgref_tag_valid(NULL));

    char *t128 = rep('t', IMAGE_TAG_MAX), *t129 = rep('t', IMAGE_TAG_MAX + 1);
    ck_assert(imgref_tag_valid(t128));
    ck_assert(!imgref_tag_valid(t129));
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

int main(void)
{
    Suite *s = suite_create("imgref");
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
    return suite_run(s);
}
