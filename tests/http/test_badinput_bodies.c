/*
 * test_badinput_bodies.c - bad JSON bodies never crash aidcd, never change
 * or lose data, and always get a clear 4xx problem+json answer: malformed
 * and non-object JSON, duplicate and unknown keys, deep nesting, a wrong
 * Content-Type (415) and bodies over 1 MiB (413) on every body endpoint; and
 * field validation endpoint by endpoint: missing and mistyped fields, length
 * limits (counted in characters), bad slugs, user names, e-mails, scopes and
 * roles, huge numbers. Paths and queries: test_badinput_paths.c; text that
 * must round-trip: test_badinput_text.c.
 *
 * Most checks are "soft" (tests/support/soft.h): every discrepancy is printed
 * to stderr (prefixed DISCREPANCY) with the request and the answer, and the
 * test fails at its end, so one run lists everything that is wrong.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/soft.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADM     (harness_srv.admin_token)
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define MIB     ((size_t)1024 * 1024)

static void setup(void)
{
    soft_fixture("badinput_bodies");
}

struct body_ep {
    const char *method, *path;
    bool auth;
    const char *field; /* a field of its table, for duplicate keys and deep nesting */
};

static const struct body_ep body_eps[] = {
    {"POST", "/api/v1/tenants", true, "name"},
    {"PATCH", "/api/v1/tenants/acme", true, "name"},
    {"PUT", "/api/v1/tenants/acme/members/alice", true, "role"},
    {"POST", "/api/v1/tenants/acme/projects", true, "name"},
    {"PATCH", "/api/v1/tenants/acme/projects/base", true, "name"},
    {"POST", "/api/v1/users", true, "display_name"},
    {"PATCH", "/api/v1/users/alice", true, "display_name"},
    {"POST", "/api/v1/tokens", true, "name"},
    {"POST", "/api/v1/auth/login", false, "username"},
};

struct raw_body {
    const char *text;
    size_t len; /* 0: strlen */
};

/* Malformed JSON and JSON that is not an object: 400 on every body endpoint. */
static const struct raw_body malformed[] = {
    {"{\"name\":", 0},
    {"{\"name\":\"x\"", 0},
    {"{\"name\":\"x", 0},
    {"{", 0},
    {"}", 0},
    {"{\"name\":\"x\"}garbage", 0},
    {"{\"name\":\"x\"} {}", 0},
    {"{\"name\":\"x\"}}", 0},
    {"{\"name\":\"\xff\xfe\"}", 0},
    {"{\"name\":\"\xc3\"}", 0},
    {"{\"name\":\"\xc0\xaf\"}", 0},
    {"{\"name\":\"\xed\xa0\x80\"}", 0},
    {"{\"name\":\"\xf4\x90\x80\x80\"}", 0},
    {"{\"\xff\":\"x\"}", 0},
    {"\xff{}", 0},
    {"{\"name\":\"a\\u0000b\"}", 0},
    {"{\"name\":\"a\0b\"}", 13},
    {"{\"name\":\"x\"}\0", 13},
    {"{\"name\":\"\\ud800\"}", 0},
    {"{\"name\":\"\\x41\"}", 0},
    {"{\"name\":\"tab\there\"}", 0},
    {"{'name':'x'}", 0},
    {"{name:\"x\"}", 0},
    {"{\"name\":\"x\",}", 0},
    {"{\"name\":NaN}", 0},
    {"{\"name\":Infinity}", 0},
    {"{\"name\":01}", 0},
    {"{\"name\":1e400}", 0},
    {"{\"name\":9223372036854775808}", 0},
    {"{\"name\":-9223372036854775809}", 0},
    {"{\"name\":99999999999999999999999999999999}", 0},
    {"/* c */ {}", 0},
    {"{\"k\":1,\"k\":2}", 0},
    {"[]", 0},
    {"[{\"name\":\"x\"}]", 0},
    {"\"string\"", 0},
    {"42", 0},
    {"-1.5", 0},
    {"null", 0},
    {"true", 0},
    {"false", 0},
    {"", 0},
    {" \n\t ", 0},
};

START_TEST(malformed_bodies_are_400_everywhere)
{
    char *before = soft_snapshot();
    for (size_t e = 0; e < N_OF(body_eps); e++) {
        const struct body_ep *ep = &body_eps[e];
        const char *tok = ep->auth ? ADM : NULL;
        for (size_t i = 0; i < N_OF(malformed); i++) {
            size_t len = malformed[i].len ? malformed[i].len : strlen(malformed[i].text);
            soft_bad_n(ep->method, ep->path, tok, malformed[i].text, len, 400, NULL);
        }
        /* a duplicate key of a real field */
        char b[256];
        snprintf(b, sizeof b, "{\"%s\":\"a\",\"%s\":\"b\"}", ep->field, ep->field);
        soft_bad(ep->method, ep->path, tok, b, 400, NULL);
        /* unknown fields are named, also odd ones */
        soft_bad(ep->method, ep->path, tok, "{\"zzz_unknown\":1}", 400, "zzz_unknown");
        soft_bad(ep->method, ep->path, tok, "{\"na\\u00efve-\\ud83d\\ude00\":true}", 400,
                 "na\xc3\xafve-\xf0\x9f\x98\x80");
        /* a long one is named by its first 128 bytes: a refusal does not grow with it */
        char *longkey = soft_rep("k", 300);
        char *lb = soft_jdump(json_pack("{s:i}", longkey, 1), 0);
        char echoed[160];
        snprintf(echoed, sizeof echoed, "%.128s\u2026", longkey);
        soft_bad(ep->method, ep->path, tok, lb, 400, echoed);
        free(lb);
        free(longkey);
    }
    soft_same_snapshot("malformed bodies", before);
    free(before);
    soft_done();
}
END_TEST

/* Deep nesting: the parser must refuse it (400), not blow the stack. */
START_TEST(deeply_nested_json_is_400)
{
    char *before = soft_snapshot();
    const size_t depths[] = {10000, 100000};
    for (size_t d = 0; d < N_OF(depths); d++) {
        size_t n = depths[d];
        for (size_t e = 0; e < N_OF(body_eps); e++) {
            const struct body_ep *ep = &body_eps[e];
            const char *tok = ep->auth ? ADM : NULL;
            /* arrays inside a field */
            size_t fl = strlen(ep->field);
            size_t len = fl + 5 + 2 * n;
            char *b = malloc(len + 1);
            size_t o = (size_t)sprintf(b, "{\"%s\":", ep->field);
            memset(b + o, '[', n);
            memset(b + o + n, ']', n);
            b[o + 2 * n] = '}';
            b[o + 2 * n + 1] = '\0';
            soft_bad_n(ep->method, ep->path, tok, b, strlen(b), 400, NULL);
            free(b);
            /* objects inside a field */
            b = malloc(fl + 8 + n * 6 + 8);
            o = (size_t)sprintf(b, "{\"%s\":", ep->field);
            for (size_t i = 0; i < n; i++) {
                memcpy(b + o, "{\"a\":", 5);
                o += 5;
            }
            b[o++] = '1';
            memset(b + o, '}', n + 1);
            o += n + 1;
            b[o] = '\0';
            soft_bad_n(ep->method, ep->path, tok, b, o, 400, NULL);
            free(b);
        }
        /* a bare nested array as the whole body */
        char *arr = malloc(2 * n + 1);
        memset(arr, '[', n);
        memset(arr + n, ']', n);
        arr[2 * n] = '\0';
        soft_bad_n("POST", "/api/v1/tenants", ADM, arr, 2 * n, 400, NULL);
        /* unterminated nesting */
        soft_bad_n("POST", "/api/v1/tenants", ADM, arr, n, 400, NULL);
        free(arr);
    }
    struct http_res r;
    reqj("GET", "/healthz", NULL, NULL, &r);
    soft(r.status == 200, "healthz after deep nesting: %ld", r.status);
    http_res_free(&r);
    soft_same_snapshot("deeply nested bodies", before);
    free(before);
    soft_done();
}
END_TEST

/* 415 without application/json, 413 over 1 MiB, on every body endpoint. */
START_TEST(content_type_and_size_limits)
{
    char *before = soft_snapshot();
    size_t n = MIB + 1;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\0';
    for (size_t e = 0; e < N_OF(body_eps); e++) {
        const struct body_ep *ep = &body_eps[e];
        const char *tok = ep->auth ? ADM : NULL;
        struct http_res r;
        char what[200];
        const char *b = "{\"name\":\"x\"}";
        http_raw(&harness_srv, ep->method, ep->path, tok, "text/plain", b, strlen(b), NULL, &r);
        snprintf(what, sizeof what, "%s %s as text/plain", ep->method, ep->path);
        soft_problem(what, &r, 415, NULL);
        http_res_free(&r);
        http_raw(&harness_srv, ep->method, ep->path, tok, "application/jsonx", b, strlen(b), NULL,
                 &r);
        snprintf(what, sizeof what, "%s %s as application/jsonx", ep->method, ep->path);
        soft_problem(what, &r, 415, NULL);
        http_res_free(&r);
        http_raw(&harness_srv, ep->method, ep->path, tok, NULL, b, strlen(b), NULL, &r);
        snprintf(what, sizeof what, "%s %s without Content-Type", ep->method, ep->path);
        soft_problem(what, &r, 415, NULL);
        http_res_free(&r);
        http_raw(&harness_srv, ep->method, ep->path, tok, "application/json", big, n, NULL, &r);
        snprintf(what, sizeof what, "%s %s with 1 MiB + 1 byte", ep->method, ep->path);
        soft_problem(what, &r, 413, NULL);
        http_res_free(&r);
    }
    /* exactly 1 MiB is read and validated: the name is too long (400), not too big (413) */
    char *name = soft_rep("a", MIB - strlen("{\"slug\":\"big-one\",\"name\":\"\"}"));
    char *body = malloc(MIB + 1);
    int bl = snprintf(body, MIB + 1, "{\"slug\":\"big-one\",\"name\":\"%s\"}", name);
    ck_assert_int_eq(bl, (int)MIB);
    soft_bad_n("POST", "/api/v1/tenants", ADM, body, MIB, 400, "name");
    free(body);
    free(name);
    free(big);
    soft_same_snapshot("415/413 requests", before);
    free(before);
    soft_done();
}
END_TEST

/* ---- field validation, endpoint by endpoint --------------------------------------- */

struct fcase {
    const char *body;
    const char *field;
};

static void bad_fields(const char *method, const char *path, const char *token, const char *body,
                       const char *const *fields)
{
    struct http_res r;
    char what[700];
    soft_send_json(method, path, token, body, strlen(body), &r);
    snprintf(what, sizeof what, "%s %s body %s", method, path, soft_shows(body));
    soft_problem_fields(what, &r, 400, fields);
    http_res_free(&r);
}

static void run_cases(const char *method, const char *path, const char *token,
                      const struct fcase *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        soft_bad(method, path, token, c[i].body, 400, c[i].field);
}

static const char *const bad_slugs[] = {
    "Upper", "UPPER",      "aB",    "1abc",  "9",     "a",   "",
    "-ab",   "a_b",        "a/b",   "a b",   " ab",   "ab ", "ab\\n",
    "ab.c",  "\303\244bc", "ab\\t", "ab%2f", "ab;--", "a'b", "\\u0430b" /* Cyrillic a */,
};

static void slug_cases(const char *path, const char *extra)
{
    for (size_t i = 0; i < N_OF(bad_slugs); i++)
        soft_bad("POST", path, ADM, fmt("{\"slug\":\"%s\",\"name\":\"x\"%s}", bad_slugs[i], extra),
                 400, "slug");
    char *s64 = soft_rep("a", 64);
    soft_bad("POST", path, ADM, fmt("{\"slug\":\"%s\",\"name\":\"x\"%s}", s64, extra), 400, "slug");
    free(s64);
}

START_TEST(tenant_fields)
{
    char *before = soft_snapshot();
    static const struct fcase create[] = {
        {"{\"slug\":1,\"name\":\"x\"}", "slug"},
        {"{\"slug\":true,\"name\":\"x\"}", "slug"},
        {"{\"slug\":[\"ab\"],\"name\":\"x\"}", "slug"},
        {"{\"slug\":{},\"name\":\"x\"}", "slug"},
        {"{\"slug\":null,\"name\":\"x\"}", "slug"},
        {"{\"slug\":\"ok-slug\",\"name\":1}", "name"},
        {"{\"slug\":\"ok-slug\",\"name\":false}", "name"},
        {"{\"slug\":\"ok-slug\",\"name\":[\"x\"]}", "name"},
        {"{\"slug\":\"ok-slug\",\"name\":{\"x\":1}}", "name"},
        {"{\"slug\":\"ok-slug\",\"name\":null}", "name"},
        {"{\"slug\":\"ok-slug\",\"name\":\"\"}", "name"},
        {"{\"slug\":\"ok-slug\",\"name\":1e30}", "name"},
        {"{\"slug\":\"ok-slug\",\"name\":9223372036854775807}", "name"},
        {"{\"slug\":\"ok-slug\",\"name\":\"x\",\"suspended\":false}", "suspended"},
        {"{\"slug\":\"ok-slug\",\"name\":\"x\",\"id\":\"00000000-0000-0000-0000-000000000000\"}",
         "id"},
    };
    run_cases("POST", "/api/v1/tenants", ADM, create, N_OF(create));
    slug_cases("/api/v1/tenants", "");
    /* a duplicate slug is a 409 problem */
    soft_bad("POST", "/api/v1/tenants", ADM, "{\"slug\":\"acme\",\"name\":\"again\"}", 409, NULL);
    static const struct fcase update[] = {
        {"{\"name\":1}", "name"},
        {"{\"name\":null}", "name"},
        {"{\"name\":[]}", "name"},
        {"{\"name\":\"\"}", "name"},
        {"{\"suspended\":\"true\"}", "suspended"},
        {"{\"suspended\":\"yes\"}", "suspended"},
        {"{\"suspended\":1}", "suspended"},
        {"{\"suspended\":0}", "suspended"},
        {"{\"suspended\":null}", "suspended"},
        {"{\"suspended\":[true]}", "suspended"},
        {"{\"slug\":\"new-slug\"}", "slug"},
        {"{\"created_at\":\"2020-01-01T00:00:00Z\"}", "created_at"},
        /* a valid field next to an invalid one: nothing is applied */
        {"{\"name\":\"changed\",\"suspended\":\"no\"}", "suspended"},
        {"{\"name\":\"changed\",\"bogus\":1}", "bogus"},
    };
    run_cases("PATCH", "/api/v1/tenants/acme", ADM, update, N_OF(update));
    soft_bad("PATCH", "/api/v1/tenants/acme", ADM, "{}", 400, NULL);
    char *n201 = soft_rep("x", 201);
    soft_bad("PATCH", "/api/v1/tenants/acme", ADM, fmt("{\"name\":\"%s\"}", n201), 400, "name");
    soft_bad("POST", "/api/v1/tenants", ADM, fmt("{\"slug\":\"long-name\",\"name\":\"%s\"}", n201),
             400, "name");
    free(n201);
    char *cjk201 = soft_rep("\xe4\xb8\xad", 201);
    soft_bad("PATCH", "/api/v1/tenants/acme", ADM, fmt("{\"name\":\"%s\"}", cjk201), 400, "name");
    soft_bad("POST", "/api/v1/tenants", ADM,
             fmt("{\"slug\":\"long-name\",\"name\":\"%s\"}", cjk201), 400, "name");
    free(cjk201);
    const char *both[] = {"slug", "name", NULL};
    bad_fields("POST", "/api/v1/tenants", ADM, "{}", both);
    const char *three[] = {"slug", "name", "bogus", NULL};
    bad_fields("POST", "/api/v1/tenants", ADM, "{\"slug\":\"Bad\",\"name\":\"\",\"bogus\":1}",
               three);
    soft_same_snapshot("invalid tenant requests", before);
    free(before);
    soft_done();
}
END_TEST

START_TEST(member_fields)
{
    char *before = soft_snapshot();
    static const struct fcase put[] = {
        {"{\"role\":1}", "role"},
        {"{\"role\":null}", "role"},
        {"{\"role\":true}", "role"},
        {"{\"role\":[\"member\"]}", "role"},
        {"{\"role\":{\"name\":\"member\"}}", "role"},
        {"{\"role\":\"owner\"}", "role"},
        {"{\"role\":\"\"}", "role"},
        {"{\"role\":\"Member\"}", "role"},
        {"{\"role\":\"TENANT_ADMIN\"}", "role"},
        {"{\"role\":\" member\"}", "role"},
        {"{\"role\":\"platform_admin\"}", "role"},
        {"{\"role\":\"member' OR '1'='1\"}", "role"},
        {"{\"role\":\"member\",\"extra\":1}", "extra"},
        {"{}", "role"},
    };
    run_cases("PUT", "/api/v1/tenants/acme/members/alice", ADM, put, N_OF(put));
    soft_same_snapshot("invalid member requests", before);
    free(before);
    soft_done();
}
END_TEST

START_TEST(project_fields)
{
    char *before = soft_snapshot();
    const char *path = "/api/v1/tenants/acme/projects";
    static const struct fcase create[] = {
        {"{\"slug\":1,\"name\":\"x\"}", "slug"},
        {"{\"slug\":false,\"name\":\"x\"}", "slug"},
        {"{\"slug\":null,\"name\":\"x\"}", "slug"},
        {"{\"slug\":[],\"name\":\"x\"}", "slug"},
        {"{\"slug\":\"ok-p\",\"name\":2}", "name"},
        {"{\"slug\":\"ok-p\",\"name\":null}", "name"},
        {"{\"slug\":\"ok-p\",\"name\":\"\"}", "name"},
        {"{\"slug\":\"ok-p\",\"name\":[\"x\"]}", "name"},
        {"{\"slug\":\"ok-p\",\"name\":\"x\",\"description\":1}", "description"},
        {"{\"slug\":\"ok-p\",\"name\":\"x\",\"description\":true}", "description"},
        {"{\"slug\":\"ok-p\",\"name\":\"x\",\"description\":[\"d\"]}", "description"},
        {"{\"slug\":\"ok-p\",\"name\":\"x\",\"description\":{}}", "description"},
        {"{\"slug\":\"ok-p\",\"name\":\"x\",\"tenant\":\"acme\"}", "tenant"},
    };
    run_cases("POST", path, ADM, create, N_OF(create));
    slug_cases(path, "");
    slug_cases(path, ",\"description\":\"d\"");
    soft_bad("POST", path, ADM, "{\"slug\":\"base\",\"name\":\"again\"}", 409, NULL);
    const char *both[] = {"slug", "name", NULL};
    bad_fields("POST", path, ADM, "{}", both);
    bad_fields("POST", path, ADM, "{\"description\":\"only\"}", both);
    char *d4001 = soft_rep("\xe4\xb8\xad", 4001);
    char *b = soft_jdump(
        json_pack("{s:s, s:s, s:s}", "slug", "long-d", "name", "x", "description", d4001), 0);
    soft_bad("POST", path, ADM, b, 400, "description");
    free(b);
    b = soft_jdump(json_pack("{s:s}", "description", d4001), 0);
    soft_bad("PATCH", "/api/v1/tenants/acme/projects/base", ADM, b, 400, "description");
    free(b);
    free(d4001);
    char *n201 = soft_rep("\xf0\x9f\x98\x80", 201);
    b = soft_jdump(json_pack("{s:s, s:s}", "slug", "long-n", "name", n201), 0);
    soft_bad("POST", path, ADM, b, 400, "name");
    free(b);
    b = soft_jdump(json_pack("{s:s}", "name", n201), 0);
    soft_bad("PATCH", "/api/v1/tenants/acme/projects/base", ADM, b, 400, "name");
    free(b);
    free(n201);
    static const struct fcase update[] = {
        {"{\"name\":1}", "name"},
        {"{\"name\":null}", "name"},
        {"{\"name\":\"\"}", "name"},
        {"{\"name\":[]}", "name"},
        {"{\"description\":1}", "description"},
        {"{\"description\":null}", "description"},
        {"{\"description\":false}", "description"},
        {"{\"slug\":\"renamed\"}", "slug"},
        {"{\"name\":\"changed\",\"description\":7}", "description"},
    };
    run_cases("PATCH", "/api/v1/tenants/acme/projects/base", ADM, update, N_OF(update));
    soft_bad("PATCH", "/api/v1/tenants/acme/projects/base", ADM, "{}", 400, NULL);
    soft_same_snapshot("invalid project requests", before);
    free(before);
    soft_done();
}
END_TEST

static const char *const bad_usernames[] = {
    "Alice",   "1alice", "",       "a b",      "al/ice",       "alice!",
    "\\u00e4", "-alice", ".alice", "_alice",   "al\\\\ice",    "alice\\n",
    "al:ice",  "al@ice", "al'ice", "alice;--", "\xe4\xb8\xad",
};

static const char *const bad_emails[] = {
    "no-at-sign",
    "@example.com",
    "user@",
    "a@b@example.com",
    "a b@example.com",
    "a\\t@example.com",
    "user@exa mple.com",
    " user@example.com",
    "user@example.com\\n",
    "\\u007f@x.io",
    "@",
};

START_TEST(user_fields)
{
    char *before = soft_snapshot();
    const char *path = "/api/v1/users";
    static const struct fcase create[] = {
        {"{\"username\":1,\"password\":\"long-enough-pw\"}", "username"},
        {"{\"username\":null,\"password\":\"long-enough-pw\"}", "username"},
        {"{\"username\":[\"bob\"],\"password\":\"long-enough-pw\"}", "username"},
        {"{\"username\":{},\"password\":\"long-enough-pw\"}", "username"},
        {"{\"username\":\"ok-user\",\"password\":1}", "password"},
        {"{\"username\":\"ok-user\",\"password\":null}", "password"},
        {"{\"username\":\"ok-user\",\"password\":[\"long-enough-pw\"]}", "password"},
        {"{\"username\":\"ok-user\",\"password\":\"short\"}", "password"},
        {"{\"username\":\"ok-user\",\"password\":\"\"}", "password"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"email\":1}", "email"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"email\":true}", "email"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"email\":[]}", "email"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"display_name\":1}",
         "display_name"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"display_name\":[]}",
         "display_name"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"display_name\":false}",
         "display_name"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":\"finance\"}",
         "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":[1]}", "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":[\"root\"]}",
         "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":[null]}", "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":{}}", "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":null}", "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":[\"Finance\"]}",
         "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":[\"tenant_admin\"]}",
         "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":[[\"finance\"]]}",
         "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"roles\":[\"finance\","
         "\"auditor\",\"platform_admin\",\"finance\"]}",
         "roles"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"disabled\":true}",
         "disabled"},
        {"{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"password_hash\":\"x\"}",
         "password_hash"},
    };
    run_cases("POST", path, ADM, create, N_OF(create));
    for (size_t i = 0; i < N_OF(bad_usernames); i++)
        soft_bad("POST", path, ADM,
                 fmt("{\"username\":\"%s\",\"password\":\"long-enough-pw\"}", bad_usernames[i]),
                 400, "username");
    char *u64 = soft_rep("u", 64);
    soft_bad("POST", path, ADM, fmt("{\"username\":\"%s\",\"password\":\"long-enough-pw\"}", u64),
             400, "username");
    free(u64);
    for (size_t i = 0; i < N_OF(bad_emails); i++) {
        soft_bad("POST", path, ADM,
                 fmt("{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"email\":\"%s\"}",
                     bad_emails[i]),
                 400, "email");
        soft_bad("PATCH", "/api/v1/users/alice", ADM, fmt("{\"email\":\"%s\"}", bad_emails[i]), 400,
                 "email");
    }
    /* 255 bytes: one too many */
    char *local = soft_rep("l", 255 - strlen("@example.com"));
    char *b = soft_jdump(json_pack("{s:s, s:s, s:s+}", "username", "ok-user", "password",
                                   "long-enough-pw", "email", local, "@example.com"),
                         0);
    soft_bad("POST", path, ADM, b, 400, "email");
    free(b);
    free(local);
    char *pw = soft_rep("p", 1025);
    b = soft_jdump(json_pack("{s:s, s:s}", "username", "ok-user", "password", pw), 0);
    soft_bad("POST", path, ADM, b, 400, "password");
    free(b);
    b = soft_jdump(json_pack("{s:s}", "password", pw), 0);
    soft_bad("PATCH", "/api/v1/users/alice", ADM, b, 400, "password");
    free(b);
    free(pw);
    /* 9 characters in 27 bytes: too short, the policy counts characters */
    soft_bad(
        "POST", path, ADM,
        "{\"username\":\"ok-user\",\"password\":\"\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86"
        "\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86\"}",
        400, "password");
    char *dn = soft_rep("\xe4\xb8\xad", 201);
    b = soft_jdump(json_pack("{s:s, s:s, s:s}", "username", "ok-user", "password", "long-enough-pw",
                             "display_name", dn),
                   0);
    soft_bad("POST", path, ADM, b, 400, "display_name");
    free(b);
    b = soft_jdump(json_pack("{s:s}", "display_name", dn), 0);
    soft_bad("PATCH", "/api/v1/users/alice", ADM, b, 400, "display_name");
    free(b);
    free(dn);
    /* the message quotes the bad item, cut to 64 bytes: inside a UTF-8 character here */
    char *role = soft_rep("\xc3\xa9", 40);
    b = soft_jdump(json_pack("{s:s, s:s, s:[s+]}", "username", "ok-user", "password",
                             "long-enough-pw", "roles", "a", role),
                   0);
    soft_bad("POST", path, ADM, b, 400, "roles");
    free(b);
    b = soft_jdump(json_pack("{s:[s+]}", "roles", "a", role), 0);
    soft_bad("PATCH", "/api/v1/users/alice", ADM, b, 400, "roles");
    free(b);
    free(role);
    const char *both[] = {"username", "password", NULL};
    bad_fields("POST", path, ADM, "{}", both);
    bad_fields("POST", path, ADM, "{\"email\":\"a@b.c\",\"roles\":[]}", both);
    const char *all[] = {"username", "password", "email", "roles", "nickname", NULL};
    bad_fields("POST", path, ADM,
               "{\"username\":\"Bad\",\"password\":\"short\",\"email\":\"x\",\"roles\":[\"x\"],"
               "\"nickname\":\"n\"}",
               all);
    static const struct fcase update[] = {
        {"{\"disabled\":\"false\"}", "disabled"},
        {"{\"disabled\":0}", "disabled"},
        {"{\"disabled\":null}", "disabled"},
        {"{\"disabled\":\"true\"}", "disabled"},
        {"{\"roles\":\"finance\"}", "roles"},
        {"{\"roles\":[\"root\"]}", "roles"},
        {"{\"roles\":null}", "roles"},
        {"{\"roles\":[1]}", "roles"},
        {"{\"email\":null}", "email"},
        {"{\"email\":5}", "email"},
        {"{\"display_name\":null}", "display_name"},
        {"{\"display_name\":1}", "display_name"},
        {"{\"password\":\"short\"}", "password"},
        {"{\"password\":5}", "password"},
        {"{\"password\":null}", "password"},
        {"{\"username\":\"bob\"}", "username"},
        {"{\"display_name\":\"changed\",\"email\":\"bad\"}", "email"},
        {"{\"display_name\":\"changed\",\"disabled\":\"yes\"}", "disabled"},
    };
    run_cases("PATCH", "/api/v1/users/alice", ADM, update, N_OF(update));
    soft_bad("PATCH", "/api/v1/users/alice", ADM, "{}", 400, NULL);
    soft_bad("POST", path, ADM, "{\"username\":\"alice\",\"password\":\"long-enough-pw\"}", 409,
             NULL);
    soft_same_snapshot("invalid user requests", before);
    free(before);
    soft_done();
}
END_TEST

START_TEST(token_fields)
{
    char *before = soft_snapshot();
    const char *path = "/api/v1/tokens";
#define TOK(rest) "{\"name\":\"ci\",\"scopes\":[\"jobs:read\"]" rest "}"
    static const struct fcase create[] = {
        {"{\"name\":1,\"scopes\":[\"admin\"]}", "name"},
        {"{\"name\":null,\"scopes\":[\"admin\"]}", "name"},
        {"{\"name\":\"\",\"scopes\":[\"admin\"]}", "name"},
        {"{\"name\":[],\"scopes\":[\"admin\"]}", "name"},
        {"{\"name\":\"ci\",\"scopes\":\"admin\"}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":[]}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":[1]}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":[\"nope\"]}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":[\"ADMIN\"]}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":[\"jobs:read\",\"nope\"]}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":[\"jobs:*\"]}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":[\"\"]}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":null}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":{}}", "scopes"},
        {"{\"name\":\"ci\",\"scopes\":[null]}", "scopes"},
        /* more items than there are scopes */
        {"{\"name\":\"ci\",\"scopes\":[\"jobs:read\",\"jobs:read\",\"jobs:read\",\"jobs:read\","
         "\"jobs:read\",\"jobs:read\",\"jobs:read\",\"jobs:read\",\"jobs:read\",\"jobs:read\","
         "\"jobs:read\"]}",
         "scopes"},
        {TOK(",\"expires_in_days\":0"), "expires_in_days"},
        {TOK(",\"expires_in_days\":731"), "expires_in_days"},
        {TOK(",\"expires_in_days\":-1"), "expires_in_days"},
        {TOK(",\"expires_in_days\":-0"), "expires_in_days"},
        {TOK(",\"expires_in_days\":\"30\""), "expires_in_days"},
        {TOK(",\"expires_in_days\":1.5"), "expires_in_days"},
        {TOK(",\"expires_in_days\":30.0"), "expires_in_days"},
        {TOK(",\"expires_in_days\":1e30"), "expires_in_days"},
        {TOK(",\"expires_in_days\":1E2"), "expires_in_days"},
        {TOK(",\"expires_in_days\":true"), "expires_in_days"},
        {TOK(",\"expires_in_days\":null"), "expires_in_days"},
        {TOK(",\"expires_in_days\":[30]"), "expires_in_days"},
        {TOK(",\"expires_in_days\":9223372036854775807"), "expires_in_days"},
        {TOK(",\"expires_in_days\":-9223372036854775808"), "expires_in_days"},
        {TOK(",\"expires_in_days\":4294967326"), "expires_in_days"}, /* 2^32 + 30 */
        {TOK(",\"expires_in_days\":2147483678"), "expires_in_days"}, /* 2^31 + 30 */
        {TOK(",\"tenant\":\"Acme\""), "tenant"},
        {TOK(",\"tenant\":1"), "tenant"},
        {TOK(",\"tenant\":\"a_b\""), "tenant"},
        {TOK(",\"tenant\":[]"), "tenant"},
        {TOK(",\"token\":\"aidc_chosen\""), "token"},
        {TOK(",\"user\":\"alice\""), "user"},
    };
    run_cases("POST", path, ADM, create, N_OF(create));
    /* integers past 64 bits are refused by the parser: still a 400 problem */
    soft_bad("POST", path, ADM, TOK(",\"expires_in_days\":9223372036854775808"), 400, NULL);
    soft_bad("POST", path, ADM, TOK(",\"expires_in_days\":-9223372036854775809"), 400, NULL);
    soft_bad("POST", path, ADM, TOK(",\"expires_in_days\":1e400"), 400, NULL);
    /* a tenant the caller is not a member of */
    soft_bad("POST", path, ADM, TOK(",\"tenant\":\"acme\""), 422, "tenant");
    soft_bad("POST", path, ADM, TOK(",\"tenant\":\"ghost\""), 422, "tenant");
#undef TOK
    char *n101 = soft_rep("n", 101);
    char *b = soft_jdump(json_pack("{s:s, s:[s]}", "name", n101, "scopes", "admin"), 0);
    soft_bad("POST", path, ADM, b, 400, "name");
    free(b);
    free(n101);
    /* the message quotes the bad item cut to 64 bytes: inside a UTF-8 character here */
    char *scope = soft_rep("\xe4\xb8\xad", 30);
    b = soft_jdump(json_pack("{s:s, s:[s+]}", "name", "ci", "scopes", "xy", scope), 0);
    soft_bad("POST", path, ADM, b, 400, "scopes");
    free(b);
    free(scope);
    const char *both[] = {"name", "scopes", NULL};
    bad_fields("POST", path, ADM, "{}", both);
    bad_fields("POST", path, ADM, "{\"expires_in_days\":30}", both);
    soft_same_snapshot("invalid token requests", before);
    free(before);
    soft_done();
}
END_TEST

START_TEST(login_fields)
{
    char *before = soft_snapshot();
    const char *path = "/api/v1/auth/login";
    static const struct fcase cases[] = {
        {"{\"username\":1,\"password\":\"alice-password-1\"}", "username"},
        {"{\"username\":null,\"password\":\"alice-password-1\"}", "username"},
        {"{\"username\":\"\",\"password\":\"alice-password-1\"}", "username"},
        {"{\"username\":[\"alice\"],\"password\":\"alice-password-1\"}", "username"},
        {"{\"username\":\"alice\",\"password\":1}", "password"},
        {"{\"username\":\"alice\",\"password\":null}", "password"},
        {"{\"username\":\"alice\",\"password\":\"\"}", "password"},
        {"{\"username\":\"alice\",\"password\":true}", "password"},
        {"{\"username\":\"alice\",\"password\":\"alice-password-1\",\"otp\":123456}", "otp"},
    };
    run_cases("POST", path, NULL, cases, N_OF(cases));
    char *u = soft_rep("u", 257);
    char *b = soft_jdump(json_pack("{s:s, s:s}", "username", u, "password", "alice-password-1"), 0);
    soft_bad("POST", path, NULL, b, 400, "username");
    free(b);
    free(u);
    char *pw = soft_rep("p", 1025);
    b = soft_jdump(json_pack("{s:s, s:s}", "username", "alice", "password", pw), 0);
    soft_bad("POST", path, NULL, b, 400, "password");
    free(b);
    free(pw);
    const char *both[] = {"username", "password", NULL};
    bad_fields("POST", path, NULL, "{}", both);
    /* none of this counted as a failed login: the right password still works */
    char *tok = login("alice", "alice-password-1");
    soft(tok != NULL, "alice cannot log in after the malformed login attempts");
    free(tok);
    soft_same_snapshot("invalid logins", before);
    free(before);
    soft_done();
}
END_TEST

int main(void)
{
    harness_require_pg();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("badinput_bodies");
    TCase *tc = tcase_create("badinput_bodies");
    tcase_add_unchecked_fixture(tc, setup, harness_teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, malformed_bodies_are_400_everywhere);
    tcase_add_test(tc, deeply_nested_json_is_400);
    tcase_add_test(tc, content_type_and_size_limits);
    tcase_add_test(tc, tenant_fields);
    tcase_add_test(tc, member_fields);
    tcase_add_test(tc, project_fields);
    tcase_add_test(tc, user_fields);
    tcase_add_test(tc, token_fields);
    tcase_add_test(tc, login_fields);
    soft_add_server_check(tc);
    suite_add_tcase(s, tc);
    int rc = suite_run(s);
    curl_global_cleanup();
    return rc;
}
