/*
 * test_badinput.c - bad input never crashes aidcd, never changes or loses
 * data, and always gets a clear 4xx problem+json answer: malformed and
 * non-object JSON bodies, unknown/missing/mistyped fields, length limits
 * (counted in characters), bad slugs, user names, e-mails, scopes and roles,
 * huge numbers, deep nesting, bad path parameters and percent-encoded junk,
 * bad ?limit= and ?cursor=, keyset pagination that visits every row once,
 * and SQL metacharacters and non-ASCII text that round-trip byte for byte.
 *
 * Most checks are "soft": every discrepancy is printed to stderr (prefixed
 * DISCREPANCY) with the request and the answer, and the test fails at its
 * end, so one run lists everything that is wrong rather than the first thing.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"

#include <check.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADM     (harness_srv.admin_token)
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define MIB     ((size_t)1024 * 1024)

/* ---- soft checks ------------------------------------------------------------------ */

static int nfail;

static void soft(bool ok, const char *f, ...) __attribute__((format(printf, 2, 3)));

static void soft(bool ok, const char *f, ...)
{
    if (ok)
        return;
    va_list ap;
    va_start(ap, f);
    fputs("DISCREPANCY: ", stderr);
    vfprintf(stderr, f, ap);
    fputc('\n', stderr);
    va_end(ap);
    nfail++;
}

static void soft_done(void)
{
    int n = nfail;
    nfail = 0;
    ck_assert_msg(n == 0, "%d discrepancies (each printed on stderr as DISCREPANCY: ...)", n);
}

/* Length of the well-formed multi-byte UTF-8 character at p (0 if none). */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
    size_t n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (p[0] < 0x80 || n == 0 || n > left)
        return 0;
    for (size_t k = 1; k < n; k++)
        if ((p[k] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
        return 0; /* overlong, surrogate or beyond U+10FFFF */
    return n;
}

/* Printable rendering of n bytes (control bytes and '\\' escaped, long text cut). */
static const char *show(const char *s, size_t n)
{
    static _Thread_local char bufs[8][400];
    static _Thread_local int next;
    char *b = bufs[next++ % 8];
    size_t o = 0, cap = sizeof bufs[0];
    size_t i = 0;
    if (!s) {
        snprintf(b, cap, "(null)");
        return b;
    }
    for (; i < n && o + 12 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        size_t seq = utf8_seq((const unsigned char *)s + i, n - i);
        if (seq > 1 && o + seq + 12 < cap) {
            memcpy(b + o, s + i, seq); /* a whole UTF-8 character */
            o += seq;
            i += seq - 1;
        } else if (c >= 0x20 && c < 0x7f && c != '\\') {
            b[o++] = (char)c;
        } else {
            o += (size_t)snprintf(b + o, cap - o, "\\x%02x", c);
        }
    }
    if (i < n)
        o += (size_t)snprintf(b + o, cap - o, "...(%zu bytes)", n);
    b[o < cap ? o : cap - 1] = '\0';
    return b;
}

static const char *shows(const char *s)
{
    return show(s, s ? strlen(s) : 0);
}

/* ---- small helpers ---------------------------------------------------------------- */

static char *rep(const char *unit, size_t times)
{
    size_t ul = strlen(unit);
    char *s = malloc(ul * times + 1);
    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < times; i++)
        memcpy(s + i * ul, unit, ul);
    s[ul * times] = '\0';
    return s;
}

/* json_dumps and decref (the body text, malloc'd). */
static char *jdump(json_t *o, size_t flags)
{
    ck_assert_ptr_nonnull(o);
    char *s = json_dumps(o, JSON_COMPACT | flags);
    json_decref(o);
    ck_assert_ptr_nonnull(s);
    return s;
}

static void b64url(const unsigned char *in, size_t n, char *out, size_t outsz)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < outsz; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = tab[(v >> 6) & 63];
        if (i + 2 < n)
            out[o++] = tab[v & 63];
    }
    out[o] = '\0';
}

static long send_json(const char *method, const char *path, const char *token, const char *body,
                      size_t len, struct http_res *r)
{
    return http_raw(&harness_srv, method, path, token, "application/json", body, len, NULL, r);
}

/* GET with a URL of any length (client.c's buffer holds 2 KiB). */
static long get_long(const char *path, const char *token, struct http_res *out)
{
    size_t n = strlen(harness_srv.base) + strlen(path) + 1;
    char *url = malloc(n);
    ck_assert_ptr_nonnull(url);
    snprintf(url, n, "%s%s", harness_srv.base, path);
    /* http_raw with an empty base would do, but it copies into 2 KiB: use curl here */
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    FILE *bf, *hf;
    char *bp = NULL, *hp = NULL;
    size_t bn = 0, hn = 0;
    bf = open_memstream(&bp, &bn);
    hf = open_memstream(&hp, &hn);
    struct curl_slist *h = NULL;
    char auth[1100];
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, bf);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, hf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    fclose(bf);
    fclose(hf);
    free(url);
    memset(out, 0, sizeof *out);
    out->status = status;
    out->body = bp;
    out->body_len = bn;
    out->headers = hp;
    out->json = bn ? json_loadb(bp, bn, 0, NULL) : NULL;
    return status;
}

/* ---- problem+json checks ---------------------------------------------------------- */

static bool names_field(const json_t *doc, const char *field)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, "errors"), i, e)
    {
        const char *f = json_string_value(json_object_get(e, "field"));
        if (f && strcmp(f, field) == 0 && json_is_string(json_object_get(e, "message")))
            return true;
    }
    return false;
}

/*
 * r must be a problem document with status (any 4xx when status is 0) whose
 * "errors" name every field in fields (NULL-terminated, may be NULL), and whose
 * request_id matches the X-Request-Id header.
 */
static void problem_fields(const char *what, const struct http_res *r, long status,
                           const char *const *fields)
{
    bool st_ok = status ? r->status == status : (r->status >= 400 && r->status < 500);
    char *ct = http_header(r, "Content-Type");
    char want[32];
    snprintf(want, sizeof want, status ? "%ld" : "a 4xx", status);
    if (!st_ok) {
        soft(false, "%s: status %ld (%s), expected %s; body %s", what, r->status, shows(ct), want,
             show(r->body, r->body_len));
        free(ct);
        return;
    }
    bool ct_ok = ct && strncmp(ct, "application/problem+json", 24) == 0;
    soft(ct_ok, "%s: Content-Type \"%s\", expected application/problem+json (status %ld)", what,
         shows(ct), r->status);
    free(ct);
    const json_t *j = r->json;
    if (!json_is_object(j)) {
        soft(false, "%s: answer is not a JSON object: %s", what, show(r->body, r->body_len));
        return;
    }
    soft(json_integer_value(json_object_get(j, "status")) == r->status,
         "%s: problem \"status\" member does not match the HTTP status %ld: %s", what, r->status,
         show(r->body, r->body_len));
    soft(json_is_string(json_object_get(j, "title")) &&
             json_is_string(json_object_get(j, "detail")),
         "%s: problem lacks title or detail: %s", what, show(r->body, r->body_len));
    char *rid = http_header(r, "X-Request-Id");
    const char *jrid = json_string_value(json_object_get(j, "request_id"));
    soft(rid && jrid && *jrid && strcmp(rid, jrid) == 0,
         "%s: request_id \"%s\" missing or different from X-Request-Id \"%s\": %s", what,
         shows(jrid), shows(rid), show(r->body, r->body_len));
    free(rid);
    for (size_t i = 0; fields && fields[i]; i++)
        soft(names_field(j, fields[i]), "%s: \"errors\" does not name field \"%s\": %s", what,
             shows(fields[i]), show(r->body, r->body_len));
}

static void problem(const char *what, const struct http_res *r, long status, const char *field)
{
    const char *f[] = {field, NULL};
    problem_fields(what, r, status, f);
}

/* Send body (len bytes) and expect a problem naming field (or none). */
static void badn(const char *method, const char *path, const char *token, const char *body,
                 size_t len, long status, const char *field)
{
    struct http_res r;
    char what[700];
    send_json(method, path, token, body, len, &r);
    snprintf(what, sizeof what, "%s %s body %s", method, path, show(body, len));
    problem(what, &r, status, field);
    http_res_free(&r);
}

static void bad(const char *method, const char *path, const char *token, const char *body,
                long status, const char *field)
{
    badn(method, path, token, body, strlen(body), status, field);
}

static void bad_fields(const char *method, const char *path, const char *token, const char *body,
                       const char *const *fields)
{
    struct http_res r;
    char what[700];
    send_json(method, path, token, body, strlen(body), &r);
    snprintf(what, sizeof what, "%s %s body %s", method, path, shows(body));
    problem_fields(what, &r, 400, fields);
    http_res_free(&r);
}

static void bad_get(const char *method, const char *path, long status, const char *field)
{
    struct http_res r;
    char what[700];
    if (strcmp(method, "GET") == 0)
        get_long(path, ADM, &r);
    else
        http_do(&harness_srv, method, path, ADM, NULL, NULL, &r);
    snprintf(what, sizeof what, "%s %s", method, show(path, strlen(path)));
    problem(what, &r, status, field);
    http_res_free(&r);
}

/* ---- state snapshots: a failed request must change nothing ------------------------- */

static char *snapshot(void)
{
    static const char *const paths[] = {
        "/api/v1/tenants?limit=1000",
        "/api/v1/tenants/acme",
        "/api/v1/tenants/acme/projects?limit=1000",
        "/api/v1/tenants/acme/projects/base",
        "/api/v1/tenants/acme/members?limit=1000",
        "/api/v1/users?limit=1000",
        "/api/v1/users/alice",
        "/api/v1/tokens?limit=1000",
    };
    size_t cap = 1, len = 0;
    char *s = calloc(1, 1);
    for (size_t i = 0; i < N_OF(paths); i++) {
        struct http_res r;
        reqj("GET", paths[i], ADM, NULL, &r);
        ck_assert_msg(r.status == 200, "snapshot GET %s: %ld", paths[i], r.status);
        size_t add = strlen(paths[i]) + r.body_len + 4;
        s = realloc(s, cap + add);
        cap += add;
        len += (size_t)snprintf(s + len, cap - len, "%s\n%s\n", paths[i], r.body);
        http_res_free(&r);
    }
    return s;
}

static void same_snapshot(const char *what, const char *before)
{
    char *after = snapshot();
    if (strcmp(before, after) != 0) {
        size_t i = 0;
        while (before[i] && before[i] == after[i])
            i++;
        size_t from = i > 120 ? i - 120 : 0;
        soft(false,
             "%s changed stored data; first difference at byte %zu:\n  before: %s\n  after:  %s",
             what, i, show(before + from, strlen(before + from)),
             show(after + from, strlen(after + from)));
    }
    free(after);
}

/* ---- fixture --------------------------------------------------------------------- */

static void setup(void)
{
    harness_setup("badinput", NULL);
    make_tenant("acme");
    make_project("acme", "base");
    make_user("alice", "alice-password-1", NULL);
    make_member("acme", "alice", "member");
}

static void teardown(void)
{
    harness_teardown();
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
    char *before = snapshot();
    for (size_t e = 0; e < N_OF(body_eps); e++) {
        const struct body_ep *ep = &body_eps[e];
        const char *tok = ep->auth ? ADM : NULL;
        for (size_t i = 0; i < N_OF(malformed); i++) {
            size_t len = malformed[i].len ? malformed[i].len : strlen(malformed[i].text);
            badn(ep->method, ep->path, tok, malformed[i].text, len, 400, NULL);
        }
        /* a duplicate key of a real field */
        char b[256];
        snprintf(b, sizeof b, "{\"%s\":\"a\",\"%s\":\"b\"}", ep->field, ep->field);
        bad(ep->method, ep->path, tok, b, 400, NULL);
        /* unknown fields are named, also odd ones */
        bad(ep->method, ep->path, tok, "{\"zzz_unknown\":1}", 400, "zzz_unknown");
        bad(ep->method, ep->path, tok, "{\"na\\u00efve-\\ud83d\\ude00\":true}", 400,
            "na\xc3\xafve-\xf0\x9f\x98\x80");
        char *longkey = rep("k", 300);
        char *lb = jdump(json_pack("{s:i}", longkey, 1), 0);
        bad(ep->method, ep->path, tok, lb, 400, longkey);
        free(lb);
        free(longkey);
    }
    same_snapshot("malformed bodies", before);
    free(before);
    soft_done();
}
END_TEST

/* Deep nesting: the parser must refuse it (400), not blow the stack. */
START_TEST(deeply_nested_json_is_400)
{
    char *before = snapshot();
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
            badn(ep->method, ep->path, tok, b, strlen(b), 400, NULL);
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
            badn(ep->method, ep->path, tok, b, o, 400, NULL);
            free(b);
        }
        /* a bare nested array as the whole body */
        char *arr = malloc(2 * n + 1);
        memset(arr, '[', n);
        memset(arr + n, ']', n);
        arr[2 * n] = '\0';
        badn("POST", "/api/v1/tenants", ADM, arr, 2 * n, 400, NULL);
        /* unterminated nesting */
        badn("POST", "/api/v1/tenants", ADM, arr, n, 400, NULL);
        free(arr);
    }
    struct http_res r;
    reqj("GET", "/healthz", NULL, NULL, &r);
    soft(r.status == 200, "healthz after deep nesting: %ld", r.status);
    http_res_free(&r);
    same_snapshot("deeply nested bodies", before);
    free(before);
    soft_done();
}
END_TEST

/* 415 without application/json, 413 over 1 MiB, on every body endpoint. */
START_TEST(content_type_and_size_limits)
{
    char *before = snapshot();
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
        problem(what, &r, 415, NULL);
        http_res_free(&r);
        http_raw(&harness_srv, ep->method, ep->path, tok, "application/jsonx", b, strlen(b), NULL,
                 &r);
        snprintf(what, sizeof what, "%s %s as application/jsonx", ep->method, ep->path);
        problem(what, &r, 415, NULL);
        http_res_free(&r);
        http_raw(&harness_srv, ep->method, ep->path, tok, NULL, b, strlen(b), NULL, &r);
        snprintf(what, sizeof what, "%s %s without Content-Type", ep->method, ep->path);
        problem(what, &r, 415, NULL);
        http_res_free(&r);
        http_raw(&harness_srv, ep->method, ep->path, tok, "application/json", big, n, NULL, &r);
        snprintf(what, sizeof what, "%s %s with 1 MiB + 1 byte", ep->method, ep->path);
        problem(what, &r, 413, NULL);
        http_res_free(&r);
    }
    /* exactly 1 MiB is read and validated: the name is too long (400), not too big (413) */
    char *name = rep("a", MIB - strlen("{\"slug\":\"big-one\",\"name\":\"\"}"));
    char *body = malloc(MIB + 1);
    int bl = snprintf(body, MIB + 1, "{\"slug\":\"big-one\",\"name\":\"%s\"}", name);
    ck_assert_int_eq(bl, (int)MIB);
    badn("POST", "/api/v1/tenants", ADM, body, MIB, 400, "name");
    free(body);
    free(name);
    free(big);
    same_snapshot("415/413 requests", before);
    free(before);
    soft_done();
}
END_TEST

/* ---- field validation, endpoint by endpoint --------------------------------------- */

struct fcase {
    const char *body;
    const char *field;
};

static void run_cases(const char *method, const char *path, const char *token,
                      const struct fcase *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        bad(method, path, token, c[i].body, 400, c[i].field);
}

static const char *const bad_slugs[] = {
    "Upper", "UPPER",      "aB",    "1abc",  "9",     "a",   "",
    "-ab",   "a_b",        "a/b",   "a b",   " ab",   "ab ", "ab\\n",
    "ab.c",  "\303\244bc", "ab\\t", "ab%2f", "ab;--", "a'b", "\\u0430b" /* Cyrillic a */,
};

static void slug_cases(const char *path, const char *extra)
{
    for (size_t i = 0; i < N_OF(bad_slugs); i++)
        bad("POST", path, ADM, fmt("{\"slug\":\"%s\",\"name\":\"x\"%s}", bad_slugs[i], extra), 400,
            "slug");
    char *s64 = rep("a", 64);
    bad("POST", path, ADM, fmt("{\"slug\":\"%s\",\"name\":\"x\"%s}", s64, extra), 400, "slug");
    free(s64);
}

START_TEST(tenant_fields)
{
    char *before = snapshot();
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
    bad("POST", "/api/v1/tenants", ADM, "{\"slug\":\"acme\",\"name\":\"again\"}", 409, NULL);
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
    bad("PATCH", "/api/v1/tenants/acme", ADM, "{}", 400, NULL);
    char *n201 = rep("x", 201);
    bad("PATCH", "/api/v1/tenants/acme", ADM, fmt("{\"name\":\"%s\"}", n201), 400, "name");
    bad("POST", "/api/v1/tenants", ADM, fmt("{\"slug\":\"long-name\",\"name\":\"%s\"}", n201), 400,
        "name");
    free(n201);
    char *cjk201 = rep("\xe4\xb8\xad", 201);
    bad("PATCH", "/api/v1/tenants/acme", ADM, fmt("{\"name\":\"%s\"}", cjk201), 400, "name");
    bad("POST", "/api/v1/tenants", ADM, fmt("{\"slug\":\"long-name\",\"name\":\"%s\"}", cjk201),
        400, "name");
    free(cjk201);
    const char *both[] = {"slug", "name", NULL};
    bad_fields("POST", "/api/v1/tenants", ADM, "{}", both);
    const char *three[] = {"slug", "name", "bogus", NULL};
    bad_fields("POST", "/api/v1/tenants", ADM, "{\"slug\":\"Bad\",\"name\":\"\",\"bogus\":1}",
               three);
    same_snapshot("invalid tenant requests", before);
    free(before);
    soft_done();
}
END_TEST

START_TEST(member_fields)
{
    char *before = snapshot();
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
    same_snapshot("invalid member requests", before);
    free(before);
    soft_done();
}
END_TEST

START_TEST(project_fields)
{
    char *before = snapshot();
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
    bad("POST", path, ADM, "{\"slug\":\"base\",\"name\":\"again\"}", 409, NULL);
    const char *both[] = {"slug", "name", NULL};
    bad_fields("POST", path, ADM, "{}", both);
    bad_fields("POST", path, ADM, "{\"description\":\"only\"}", both);
    char *d4001 = rep("\xe4\xb8\xad", 4001);
    char *b =
        jdump(json_pack("{s:s, s:s, s:s}", "slug", "long-d", "name", "x", "description", d4001), 0);
    bad("POST", path, ADM, b, 400, "description");
    free(b);
    b = jdump(json_pack("{s:s}", "description", d4001), 0);
    bad("PATCH", "/api/v1/tenants/acme/projects/base", ADM, b, 400, "description");
    free(b);
    free(d4001);
    char *n201 = rep("\xf0\x9f\x98\x80", 201);
    b = jdump(json_pack("{s:s, s:s}", "slug", "long-n", "name", n201), 0);
    bad("POST", path, ADM, b, 400, "name");
    free(b);
    b = jdump(json_pack("{s:s}", "name", n201), 0);
    bad("PATCH", "/api/v1/tenants/acme/projects/base", ADM, b, 400, "name");
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
    bad("PATCH", "/api/v1/tenants/acme/projects/base", ADM, "{}", 400, NULL);
    same_snapshot("invalid project requests", before);
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
    char *before = snapshot();
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
        bad("POST", path, ADM,
            fmt("{\"username\":\"%s\",\"password\":\"long-enough-pw\"}", bad_usernames[i]), 400,
            "username");
    char *u64 = rep("u", 64);
    bad("POST", path, ADM, fmt("{\"username\":\"%s\",\"password\":\"long-enough-pw\"}", u64), 400,
        "username");
    free(u64);
    for (size_t i = 0; i < N_OF(bad_emails); i++) {
        bad("POST", path, ADM,
            fmt("{\"username\":\"ok-user\",\"password\":\"long-enough-pw\",\"email\":\"%s\"}",
                bad_emails[i]),
            400, "email");
        bad("PATCH", "/api/v1/users/alice", ADM, fmt("{\"email\":\"%s\"}", bad_emails[i]), 400,
            "email");
    }
    /* 255 bytes: one too many */
    char *local = rep("l", 255 - strlen("@example.com"));
    char *b = jdump(json_pack("{s:s, s:s, s:s+}", "username", "ok-user", "password",
                              "long-enough-pw", "email", local, "@example.com"),
                    0);
    bad("POST", path, ADM, b, 400, "email");
    free(b);
    free(local);
    char *pw = rep("p", 1025);
    b = jdump(json_pack("{s:s, s:s}", "username", "ok-user", "password", pw), 0);
    bad("POST", path, ADM, b, 400, "password");
    free(b);
    b = jdump(json_pack("{s:s}", "password", pw), 0);
    bad("PATCH", "/api/v1/users/alice", ADM, b, 400, "password");
    free(b);
    free(pw);
    /* 9 characters in 27 bytes: too short, the policy counts characters */
    bad("POST", path, ADM,
        "{\"username\":\"ok-user\",\"password\":\"\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86"
        "\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86\xe5\xaf\x86\"}",
        400, "password");
    char *dn = rep("\xe4\xb8\xad", 201);
    b = jdump(json_pack("{s:s, s:s, s:s}", "username", "ok-user", "password", "long-enough-pw",
                        "display_name", dn),
              0);
    bad("POST", path, ADM, b, 400, "display_name");
    free(b);
    b = jdump(json_pack("{s:s}", "display_name", dn), 0);
    bad("PATCH", "/api/v1/users/alice", ADM, b, 400, "display_name");
    free(b);
    free(dn);
    /* the message quotes the bad item, cut to 64 bytes: inside a UTF-8 character here */
    char *role = rep("\xc3\xa9", 40);
    b = jdump(json_pack("{s:s, s:s, s:[s+]}", "username", "ok-user", "password", "long-enough-pw",
                        "roles", "a", role),
              0);
    bad("POST", path, ADM, b, 400, "roles");
    free(b);
    b = jdump(json_pack("{s:[s+]}", "roles", "a", role), 0);
    bad("PATCH", "/api/v1/users/alice", ADM, b, 400, "roles");
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
    bad("PATCH", "/api/v1/users/alice", ADM, "{}", 400, NULL);
    bad("POST", path, ADM, "{\"username\":\"alice\",\"password\":\"long-enough-pw\"}", 409, NULL);
    same_snapshot("invalid user requests", before);
    free(before);
    soft_done();
}
END_TEST

START_TEST(token_fields)
{
    char *before = snapshot();
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
        {"{\"name\":\"ci\",\"scopes\":[\"jobs:read\",\"jobs:read\",\"jobs:read\",\"jobs:read\","
         "\"jobs:read\",\"jobs:read\",\"jobs:read\",\"jobs:read\",\"jobs:read\",\"jobs:read\"]}",
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
    bad("POST", path, ADM, TOK(",\"expires_in_days\":9223372036854775808"), 400, NULL);
    bad("POST", path, ADM, TOK(",\"expires_in_days\":-9223372036854775809"), 400, NULL);
    bad("POST", path, ADM, TOK(",\"expires_in_days\":1e400"), 400, NULL);
    /* a tenant the caller is not a member of */
    bad("POST", path, ADM, TOK(",\"tenant\":\"acme\""), 422, "tenant");
    bad("POST", path, ADM, TOK(",\"tenant\":\"ghost\""), 422, "tenant");
#undef TOK
    char *n101 = rep("n", 101);
    char *b = jdump(json_pack("{s:s, s:[s]}", "name", n101, "scopes", "admin"), 0);
    bad("POST", path, ADM, b, 400, "name");
    free(b);
    free(n101);
    /* the message quotes the bad item cut to 64 bytes: inside a UTF-8 character here */
    char *scope = rep("\xe4\xb8\xad", 30);
    b = jdump(json_pack("{s:s, s:[s+]}", "name", "ci", "scopes", "xy", scope), 0);
    bad("POST", path, ADM, b, 400, "scopes");
    free(b);
    free(scope);
    const char *both[] = {"name", "scopes", NULL};
    bad_fields("POST", path, ADM, "{}", both);
    bad_fields("POST", path, ADM, "{\"expires_in_days\":30}", both);
    same_snapshot("invalid token requests", before);
    free(before);
    soft_done();
}
END_TEST

START_TEST(login_fields)
{
    char *before = snapshot();
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
    char *u = rep("u", 257);
    char *b = jdump(json_pack("{s:s, s:s}", "username", u, "password", "alice-password-1"), 0);
    bad("POST", path, NULL, b, 400, "username");
    free(b);
    free(u);
    char *pw = rep("p", 1025);
    b = jdump(json_pack("{s:s, s:s}", "username", "alice", "password", pw), 0);
    bad("POST", path, NULL, b, 400, "password");
    free(b);
    free(pw);
    const char *both[] = {"username", "password", NULL};
    bad_fields("POST", path, NULL, "{}", both);
    /* none of this counted as a failed login: the right password still works */
    char *tok = login("alice", "alice-password-1");
    soft(tok != NULL, "alice cannot log in after the malformed login attempts");
    free(tok);
    same_snapshot("invalid logins", before);
    free(before);
    soft_done();
}
END_TEST

/* ---- path parameters and query junk ----------------------------------------------- */

static json_t *find_item(const json_t *doc, const char *key, const char *val)
{
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(doc, "items"), i, it)
    {
        const char *v = json_string_value(json_object_get(it, key));
        if (v && strcmp(v, val) == 0)
            return it;
    }
    return NULL;
}

static json_t *get_members(const char *tenant)
{
    struct http_res r;
    reqj("GET", fmt("/api/v1/tenants/%s/members?limit=1000", tenant), ADM, NULL, &r);
    json_t *j = json_incref(r.json);
    http_res_free(&r);
    return j;
}

struct pcase {
    const char *method, *path;
    long status; /* 0: 400 or 404 */
    const char *field;
};

START_TEST(bad_path_parameters)
{
    char *before = snapshot();
    static const struct pcase cases[] = {
        {"GET", "/api/v1/tenants/UPPER", 400, "tenant"},
        {"GET", "/api/v1/tenants/UPPER/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/1abc/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/a", 400, "tenant"},
        {"GET", "/api/v1/tenants/a_b/members", 400, "tenant"},
        {"GET", "/api/v1/tenants/%E4%B8%AD%E6%96%87", 400, "tenant"},
        {"GET", "/api/v1/tenants/%FF%FE/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/%27%20OR%20%271%27%3D%271", 400, "tenant"},
        {"GET", "/api/v1/tenants/acme%3B--/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/acme%20/projects", 400, "tenant"},
        {"GET", "/api/v1/tenants/%zz", 400, "tenant"},
        {"GET", "/api/v1/tenants/%", 400, "tenant"},
        {"GET", "/api/v1/tenants/%2e%2e", 0, NULL},
        {"GET", "/api/v1/tenants/ghost-tenant", 404, NULL},
        {"GET", "/api/v1/tenants/ghost-tenant/projects", 404, NULL},
        {"GET", "/api/v1/tenants/acme/projects/UPPER", 400, "project"},
        {"GET", "/api/v1/tenants/acme/projects/x", 400, "project"},
        {"GET", "/api/v1/tenants/acme/projects/%27%3B%20DROP%20TABLE%20projects%3B--", 400,
         "project"},
        {"DELETE", "/api/v1/tenants/acme/projects/Bad_Slug", 400, "project"},
        {"GET", "/api/v1/tenants/acme/projects/nope", 404, NULL},
        {"GET", "/api/v1/tenants/acme/projects/base/extra", 404, NULL},
        {"GET", "/api/v1/users/Alice", 400, "username"},
        {"GET", "/api/v1/users/9lives", 400, "username"},
        {"GET", "/api/v1/users/a%20b", 400, "username"},
        {"GET", "/api/v1/users/%E4%B8%AD", 400, "username"},
        {"GET", "/api/v1/users/alice%27--", 400, "username"},
        {"GET", "/api/v1/users/ghost", 404, NULL},
        {"DELETE", "/api/v1/tenants/acme/members/UPPER", 400, "username"},
        {"DELETE", "/api/v1/tenants/acme/members/a%2Fb", 0, NULL},
        {"DELETE", "/api/v1/tenants/acme/members/ghost", 404, NULL},
        {"DELETE", "/api/v1/tokens/not-a-uuid", 400, "id"},
        {"DELETE", "/api/v1/tokens/00000000-0000-0000-0000-00000000000g", 400, "id"},
        {"DELETE", "/api/v1/tokens/00000000-0000-0000-0000-0000000000000", 400, "id"},
        {"DELETE", "/api/v1/tokens/%27%3B%20DROP%20TABLE%20api_tokens%3B--", 400, "id"},
        {"DELETE", "/api/v1/tokens/00000000000000000000000000000000", 400, "id"},
        {"DELETE", "/api/v1/tokens/00000000-0000-0000-0000-000000000000", 404, NULL},
        {"DELETE", "/api/v1/tokens/%FF", 400, "id"},
    };
    for (size_t i = 0; i < N_OF(cases); i++)
        bad_get(cases[i].method, cases[i].path, cases[i].status, cases[i].field);
    /* a very long path segment */
    char *seg = rep("a", 5000);
    char *p = malloc(6000);
    snprintf(p, 6000, "/api/v1/tenants/%s/projects", seg);
    bad_get("GET", p, 0, NULL);
    snprintf(p, 6000, "/api/v1/users/%s", seg);
    bad_get("GET", p, 0, NULL);
    free(p);
    free(seg);
    /* bodies on bad paths: the path is checked, nothing is written */
    bad("PATCH", "/api/v1/tenants/acme/projects/Bad", ADM, "{\"name\":\"x\"}", 400, "project");
    bad("PATCH", "/api/v1/users/Alice", ADM, "{\"display_name\":\"x\"}", 400, "username");
    bad("PUT", "/api/v1/tenants/acme/members/Bad%20Name", ADM, "{\"role\":\"member\"}", 400,
        "username");
    bad("PUT", "/api/v1/tenants/acme/members/ghost", ADM, "{\"role\":\"member\"}", 404, NULL);
    bad("PATCH", "/api/v1/tenants/UPPER", ADM, "{\"name\":\"x\"}", 400, "tenant");
    bad("POST", "/api/v1/tenants/UPPER/projects", ADM, "{\"slug\":\"ok\",\"name\":\"x\"}", 400,
        "tenant");
    bad("POST", "/api/v1/tenants/ghost-tenant/projects", ADM, "{\"slug\":\"ok\",\"name\":\"x\"}",
        404, NULL);
    /* query junk */
    bad_get("GET", "/api/v1/tenants?%FF=1", 400, NULL);
    bad_get("GET", "/api/v1/tenants?%E4%B8%AD=1", 400, "\xe4\xb8\xad");
    bad_get("GET", "/api/v1/tenants?lim%00it=5", 400, NULL);
    bad_get("GET", "/api/v1/tenants?limit=5&limit=6", 400, NULL);
    bad_get("GET", "/api/v1/users/alice?limit=5", 400, "limit");
    bad_get("GET", "/api/v1/tenants?limit=%FF", 400, "limit");
    same_snapshot("bad paths", before);
    free(before);
    soft_done();
}
END_TEST

/*
 * A percent-encoded NUL in a path must not cut the path short: "acme%00evil"
 * is not "acme", and "victim%00x" must not delete project "victim".
 */
START_TEST(nul_bytes_in_paths_do_not_alias)
{
    make_tenant("nul");
    make_project("nul", "victim");
    make_user("nul-user", "nul-user-password", NULL);
    make_member("nul", "nul-user", "viewer");
    static const struct pcase cases[] = {
        {"GET", "/api/v1/tenants/%00", 0, NULL},
        {"GET", "/api/v1/tenants/nul%00evil", 0, NULL},
        {"GET", "/api/v1/tenants/nul%00/projects", 0, NULL},
        {"GET", "/api/v1/tenants/nul/projects/victim%00x", 0, NULL},
        {"GET", "/api/v1/users/nul-user%00x", 0, NULL},
        {"DELETE", "/api/v1/tenants/nul/projects/victim%00.json", 0, NULL},
        {"DELETE", "/api/v1/tenants/nul/members/nul-user%00x", 0, NULL},
    };
    for (size_t i = 0; i < N_OF(cases); i++)
        bad_get(cases[i].method, cases[i].path, cases[i].status, cases[i].field);
    soft(req("GET", "/api/v1/tenants/nul/projects/victim", ADM, NULL) == 200,
         "project nul/victim is gone after DELETE /api/v1/tenants/nul/projects/victim%%00.json");
    json_t *j = get_members("nul");
    soft(find_item(j, "username", "nul-user") != NULL,
         "member nul-user is gone after DELETE /api/v1/tenants/nul/members/nul-user%%00x");
    json_decref(j);
    soft_done();
}
END_TEST

static const char *const list_paths[] = {
    "/api/v1/tenants", "/api/v1/tenants/acme/projects",
    "/api/v1/users",   "/api/v1/tenants/acme/members",
    "/api/v1/tokens",
};

START_TEST(bad_limits_and_cursors)
{
    /* the admin has a token, so every list has at least one item */
    char *secret = make_token(ADM, "[\"jobs:read\"]", NULL);
    free(secret);
    static const char *const bad_limits[] = {
        "0",
        "-1",
        "1001",
        "99999999999999999999",
        "-99999999999999999999",
        "abc",
        "",
        "1.5",
        "5abc",
        "0x10",
        "1e3",
        "-0",
        "%FF",
        "2147483648",
        "4294967297",
        "%00",
        "5%00",
    };
    static const unsigned char not_utf8[] = {0xff, 0xfe, 0xfd};
    static const unsigned char cut_utf8[] = {'o', 'k', 0xc3}; /* truncated UTF-8 */
    static const unsigned char with_nul[] = {'a', 0, 'b'};
    char enc[128];
    for (size_t l = 0; l < N_OF(list_paths); l++) {
        const char *lp = list_paths[l];
        for (size_t i = 0; i < N_OF(bad_limits); i++)
            bad_get("GET", fmt("%s?limit=%s", lp, bad_limits[i]), 400, "limit");
        struct http_res r;
        get_long(fmt("%s?limit=1000", lp), ADM, &r);
        soft(r.status == 200 && json_is_array(json_object_get(r.json, "items")) &&
                 json_is_null(json_object_get(r.json, "next_cursor")),
             "GET %s?limit=1000: %ld %s", lp, r.status, show(r.body, r.body_len));
        http_res_free(&r);
        get_long(fmt("%s?limit=1&cursor=", lp), ADM, &r);
        soft(r.status == 200, "GET %s?limit=1&cursor= (empty): %ld %s", lp, r.status,
             show(r.body, r.body_len));
        http_res_free(&r);
        /* garbage cursors */
        bad_get("GET", fmt("%s?cursor=!!!", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=%%00", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=%%FF%%FE", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor====", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=a", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=ab%%2Bc", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=ab/c", lp), 400, "cursor");
        bad_get("GET", fmt("%s?cursor=%%27%%20OR%%201%%3D1", lp), 400, "cursor");
        b64url(not_utf8, sizeof not_utf8, enc, sizeof enc);
        bad_get("GET", fmt("%s?cursor=%s", lp, enc), 400, "cursor");
        b64url(cut_utf8, sizeof cut_utf8, enc, sizeof enc);
        bad_get("GET", fmt("%s?cursor=%s", lp, enc), 400, "cursor");
        b64url(with_nul, sizeof with_nul, enc, sizeof enc);
        bad_get("GET", fmt("%s?cursor=%s", lp, enc), 400, "cursor");
        char *longc = rep("QUFB", 1250); /* 5,000 characters of valid base64url */
        char *p = malloc(strlen(lp) + 5100);
        sprintf(p, "%s?cursor=%s", lp, longc);
        bad_get("GET", p, 400, "cursor");
        free(p);
        free(longc);
        /* a real cursor still works afterwards */
        get_long(fmt("%s?limit=1", lp), ADM, &r);
        const char *next = json_string_value(json_object_get(r.json, "next_cursor"));
        if (next) {
            struct http_res r2;
            get_long(fmt("%s?limit=1&cursor=%s", lp, next), ADM, &r2);
            soft(r2.status == 200, "GET %s with its own next_cursor: %ld", lp, r2.status);
            http_res_free(&r2);
        }
        http_res_free(&r);
    }
    /* token cursors are "created_at|id": malformed inner parts are the client's fault */
    static const char *const inner[] = {
        "garbage",
        "2020-01-01|not-a-uuid",
        "not-a-time|00000000-0000-0000-0000-000000000000",
        "|",
        "2020-13-45 99:99:99+00|00000000-0000-0000-0000-000000000000",
        "'; DROP TABLE api_tokens; --|00000000-0000-0000-0000-000000000000",
    };
    for (size_t i = 0; i < N_OF(inner); i++) {
        b64url((const unsigned char *)inner[i], strlen(inner[i]), enc, sizeof enc);
        bad_get("GET", fmt("/api/v1/tokens?cursor=%s", enc), 400, "cursor");
    }
    soft_done();
}
END_TEST

/* ---- keyset pagination ------------------------------------------------------------ */

/*
 * Walk path page by page (limit per page) and compare with one big page:
 * every item once, in the same order, no gaps, the last next_cursor null.
 */
static void walk(const char *path, int limit, const char *key, size_t min_items)
{
    struct http_res all;
    reqj("GET", fmt("%s?limit=1000", path), ADM, NULL, &all);
    ck_assert_msg(all.status == 200, "GET %s?limit=1000: %ld", path, all.status);
    json_t *want = json_object_get(all.json, "items");
    size_t n = json_array_size(want);
    soft(n >= min_items, "%s lists %zu items, expected at least %zu", path, n, min_items);
    json_t *got = json_array();
    char cursor[1024] = "";
    int pages = 0;
    for (;;) {
        struct http_res r;
        const char *url = cursor[0] ? fmt("%s?limit=%d&cursor=%s", path, limit, cursor)
                                    : fmt("%s?limit=%d", path, limit);
        reqj("GET", url, ADM, NULL, &r);
        pages++;
        if (r.status != 200 || pages > 1000) {
            soft(false, "walking %s: GET %s answered %ld %s", path, url, r.status,
                 show(r.body, r.body_len));
            http_res_free(&r);
            break;
        }
        json_t *items = json_object_get(r.json, "items");
        size_t k = json_array_size(items);
        soft(k <= (size_t)limit, "walking %s: page of %zu items with limit %d", path, k, limit);
        json_array_extend(got, items);
        const char *next = json_string_value(json_object_get(r.json, "next_cursor"));
        soft(next || json_is_null(json_object_get(r.json, "next_cursor")),
             "walking %s: next_cursor is neither a string nor null", path);
        if (next)
            soft(k == (size_t)limit, "walking %s: page %d has %zu items but a next_cursor", path,
                 pages, k);
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        http_res_free(&r);
        if (!next)
            break;
    }
    size_t m = json_array_size(got);
    soft(m == n, "walking %s with limit %d collected %zu items, one page of 1000 has %zu", path,
         limit, m, n);
    size_t expect_pages = n ? (n + (size_t)limit - 1) / (size_t)limit : 1;
    soft((size_t)pages == expect_pages, "walking %s with limit %d took %d pages, expected %zu",
         path, limit, pages, expect_pages);
    for (size_t i = 0; i < m && i < n; i++) {
        const char *a = json_string_value(json_object_get(json_array_get(got, i), key));
        const char *b = json_string_value(json_object_get(json_array_get(want, i), key));
        soft(a && b && strcmp(a, b) == 0, "walking %s: item %zu is %s, expected %s", path, i,
             shows(a), shows(b));
        for (size_t j = 0; j < i; j++) {
            const char *c = json_string_value(json_object_get(json_array_get(got, j), key));
            soft(!(a && c && strcmp(a, c) == 0), "walking %s: %s seen twice", path, shows(a));
        }
    }
    json_decref(got);
    http_res_free(&all);
}

START_TEST(keyset_pagination_visits_everything_once)
{
    make_tenant("pager");
    /* slugs and names whose order is easy to get wrong */
    static const char *const slugs[] = {"ab", "a-b", "a-c", "aa", "a0", "b-", "zz-top"};
    for (size_t i = 0; i < N_OF(slugs); i++)
        make_project("pager", slugs[i]);
    static const char *const users[] = {"m.a", "m_a", "m-a", "ma", "m0", "mz", "m.b"};
    for (size_t i = 0; i < N_OF(users); i++) {
        make_user(users[i], "member-password-1", NULL);
        make_member("pager", users[i], i % 2 ? "viewer" : "member");
    }
    for (int i = 0; i < 7; i++)
        free(make_token(ADM, "[\"jobs:read\"]", NULL));
    for (int limit = 1; limit <= 3; limit++) {
        walk("/api/v1/tenants/pager/projects", limit, "slug", 7);
        walk("/api/v1/tenants", limit, "slug", 2);
        walk("/api/v1/users", limit, "username", 8);
        walk("/api/v1/tenants/pager/members", limit, "username", 7);
        walk("/api/v1/tokens", limit, "id", 7);
    }
    walk("/api/v1/tenants/pager/projects", 7, "slug", 7);
    walk("/api/v1/tenants/pager/projects", 6, "slug", 7);
    walk("/api/v1/tenants/pager/members", 7, "username", 7);
    soft_done();
}
END_TEST

/* ---- SQL metacharacters and non-ASCII text round-trip exactly ---------------------- */

static const char *const nasty[] = {
    "O'Brien",
    "say \"hi\"",
    "back\\slash\\",
    "semi;-- comment",
    "100% _under_ %s %n",
    "$1 $2 $$ ${x}",
    "/* c */ x",
    "' OR '1'='1",
    "'); DROP TABLE tenants; --",
    "tab\there\nnew line\r\ncr",
    ("emoji \xf0\x9f\x98\x80 \xf0\x9f\x9a\x80 "
     "\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7"),
    "\xe4\xb8\xad\xe6\x96\x87\xe5\x90\x8d\xe7\xa7\xb0",
    ("\xd7\xa2\xd7\x91\xd7\xa8\xd7\x99\xd7\xaa \xe2\x80\x8fRTL\xe2\x80\x8e "
     "\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a"),
    "combining e\xcc\x81 a\xcc\x8a \xe1\x84\x80\xe1\x85\xa1",
    "ctl \x01\x1f\x7f end",
    "\xf0\x9d\x95\x8f math \xf0\x90\x80\x80",
    "<script>alert(1)</script>&amp;",
    "{\"json\":[1]}",
    "null",
    " leading and trailing ",
    "back`tick` | > < \\u0041 \\n",
    "\357\273\277bom \xef\xbf\xbd replacement \xe2\x80\xa8 ls",
};

static const char *const nasty_emails[] = {
    "o'brien@example.com",
    "\"quoted\\\"x\"@example.com",
    "semi;--@example.com",
    "100%_x@example.com",
    "$1$2@example.com",
    "/*c*/@example.com",
    "'OR'1'='1@example.com",
    "\xf0\x9f\x98\x80@example.com",
    "\xe4\xb8\xad\xe6\x96\x87@\xe4\xbe\x8b\xe5\xad\x90.\xe4\xb8\xad\xe5\x9b\xbd",
    "\xd7\xa2\xd7\x91\xd7\xa8\xd7\x99\xd7\xaa@example.com",
    "e\xcc\x81@example.com",
    "back\\slash@example.com",
};

static void same_str(const char *what, const json_t *got, const char *want)
{
    const char *g = json_string_value(got);
    size_t gl = json_string_length(got);
    soft(g && gl == strlen(want) && memcmp(g, want, gl) == 0, "%s: got \"%s\", sent \"%s\"", what,
         g ? show(g, gl) : "(not a string)", shows(want));
}

/* Send o (consumed) and expect want; returns the answer's JSON (caller decrefs) or NULL. */
static json_t *call(const char *method, const char *path, json_t *o, size_t flags, long want)
{
    char *b = jdump(o, flags);
    struct http_res r;
    send_json(method, path, ADM, b, strlen(b), &r);
    soft(r.status == want, "%s %s body %s: %ld, expected %ld: %s", method, path, shows(b), r.status,
         want, show(r.body, r.body_len));
    json_t *j = r.status == want ? json_incref(r.json) : NULL;
    http_res_free(&r);
    free(b);
    return j;
}

static json_t *get(const char *path)
{
    struct http_res r;
    reqj("GET", path, ADM, NULL, &r);
    soft(r.status == 200, "GET %s: %ld %s", path, r.status, show(r.body, r.body_len));
    json_t *j = json_incref(r.json);
    http_res_free(&r);
    return j;
}

START_TEST(metacharacters_and_unicode_round_trip)
{
    size_t n = N_OF(nasty), ne = N_OF(nasty_emails);
    char what[200];
    make_tenant("rt");
    /* tenants: create, read, list, patch */
    for (size_t i = 0; i < n; i++) {
        const char *slug = fmt("rt-t%zu", i);
        json_t *j =
            call("POST", "/api/v1/tenants", json_pack("{s:s, s:s}", "slug", slug, "name", nasty[i]),
                 i % 2 ? JSON_ENSURE_ASCII : 0, 201);
        snprintf(what, sizeof what, "tenant %s name in the 201", slug);
        same_str(what, json_object_get(j, "name"), nasty[i]);
        json_decref(j);
        j = get(fmt("/api/v1/tenants/%s", slug));
        snprintf(what, sizeof what, "GET tenant %s name", slug);
        same_str(what, json_object_get(j, "name"), nasty[i]);
        json_decref(j);
    }
    json_t *list = get("/api/v1/tenants?limit=1000");
    for (size_t i = 0; i < n; i++) {
        snprintf(what, sizeof what, "tenant rt-t%zu name in the list", i);
        same_str(what, json_object_get(find_item(list, "slug", fmt("rt-t%zu", i)), "name"),
                 nasty[i]);
    }
    json_decref(list);
    for (size_t i = 0; i < n; i++) {
        const char *want = nasty[(i + 3) % n];
        json_t *j = call("PATCH", fmt("/api/v1/tenants/rt-t%zu", i),
                         json_pack("{s:s}", "name", want), 0, 200);
        snprintf(what, sizeof what, "PATCH tenant rt-t%zu name", i);
        same_str(what, json_object_get(j, "name"), want);
        json_decref(j);
        j = get(fmt("/api/v1/tenants/rt-t%zu", i));
        snprintf(what, sizeof what, "GET tenant rt-t%zu name after PATCH", i);
        same_str(what, json_object_get(j, "name"), want);
        json_decref(j);
    }
    /* projects: name and description, raw UTF-8 and \u escapes */
    for (size_t i = 0; i < 2 * n; i++) {
        const char *name = nasty[i % n];
        char desc[512];
        snprintf(desc, sizeof desc, "%s | %s", nasty[i % n], nasty[(i + 1) % n]);
        const char *slug = fmt("p-%zu", i);
        json_t *j =
            call("POST", "/api/v1/tenants/rt/projects",
                 json_pack("{s:s, s:s, s:s}", "slug", slug, "name", name, "description", desc),
                 i >= n ? JSON_ENSURE_ASCII : 0, 201);
        snprintf(what, sizeof what, "project %s in the 201", slug);
        same_str(what, json_object_get(j, "name"), name);
        same_str(what, json_object_get(j, "description"), desc);
        json_decref(j);
        j = get(fmt("/api/v1/tenants/rt/projects/%s", slug));
        snprintf(what, sizeof what, "GET project %s", slug);
        same_str(what, json_object_get(j, "name"), name);
        same_str(what, json_object_get(j, "description"), desc);
        json_decref(j);
    }
    list = get("/api/v1/tenants/rt/projects?limit=1000");
    for (size_t i = 0; i < 2 * n; i++) {
        char desc[512];
        snprintf(desc, sizeof desc, "%s | %s", nasty[i % n], nasty[(i + 1) % n]);
        json_t *it = find_item(list, "slug", fmt("p-%zu", i));
        snprintf(what, sizeof what, "project p-%zu in the list", i);
        same_str(what, json_object_get(it, "name"), nasty[i % n]);
        same_str(what, json_object_get(it, "description"), desc);
    }
    json_decref(list);
    for (size_t i = 0; i < n; i++) {
        const char *name = nasty[(i + 5) % n], *desc = nasty[(i + 7) % n];
        json_t *j = call("PATCH", fmt("/api/v1/tenants/rt/projects/p-%zu", i),
                         json_pack("{s:s, s:s}", "name", name, "description", desc), 0, 200);
        snprintf(what, sizeof what, "PATCH project p-%zu", i);
        same_str(what, json_object_get(j, "name"), name);
        same_str(what, json_object_get(j, "description"), desc);
        json_decref(j);
        j = get(fmt("/api/v1/tenants/rt/projects/p-%zu", i));
        snprintf(what, sizeof what, "GET project p-%zu after PATCH", i);
        same_str(what, json_object_get(j, "name"), name);
        same_str(what, json_object_get(j, "description"), desc);
        json_decref(j);
    }
    /* users: display_name and email; then PATCH; then as members */
    for (size_t i = 0; i < n; i++) {
        const char *u = fmt("rt-user%zu", i);
        json_t *j = call("POST", "/api/v1/users",
                         json_pack("{s:s, s:s, s:s, s:s}", "username", u, "password",
                                   "nasty-password-'\";--", "display_name", nasty[i], "email",
                                   nasty_emails[i % ne]),
                         i % 2 ? JSON_ENSURE_ASCII : 0, 201);
        snprintf(what, sizeof what, "user %s in the 201", u);
        same_str(what, json_object_get(j, "display_name"), nasty[i]);
        same_str(what, json_object_get(j, "email"), nasty_emails[i % ne]);
        json_decref(j);
        j = get(fmt("/api/v1/users/%s", u));
        snprintf(what, sizeof what, "GET user %s", u);
        same_str(what, json_object_get(j, "display_name"), nasty[i]);
        same_str(what, json_object_get(j, "email"), nasty_emails[i % ne]);
        json_decref(j);
    }
    char *tok = login("rt-user0", "nasty-password-'\";--");
    soft(tok != NULL, "rt-user0 cannot log in with a password full of quotes");
    free(tok);
    list = get("/api/v1/users?limit=1000");
    for (size_t i = 0; i < n; i++) {
        json_t *it = find_item(list, "username", fmt("rt-user%zu", i));
        snprintf(what, sizeof what, "user rt-user%zu in the list", i);
        same_str(what, json_object_get(it, "display_name"), nasty[i]);
        same_str(what, json_object_get(it, "email"), nasty_emails[i % ne]);
    }
    json_decref(list);
    for (size_t i = 0; i < n; i++) {
        const char *dn = nasty[(i + 1) % n], *em = nasty_emails[(i + 1) % ne];
        json_t *j = call("PATCH", fmt("/api/v1/users/rt-user%zu", i),
                         json_pack("{s:s, s:s}", "display_name", dn, "email", em), 0, 200);
        snprintf(what, sizeof what, "PATCH user rt-user%zu", i);
        same_str(what, json_object_get(j, "display_name"), dn);
        same_str(what, json_object_get(j, "email"), em);
        json_decref(j);
        j = get(fmt("/api/v1/users/rt-user%zu", i));
        snprintf(what, sizeof what, "GET user rt-user%zu after PATCH", i);
        same_str(what, json_object_get(j, "display_name"), dn);
        same_str(what, json_object_get(j, "email"), em);
        json_decref(j);
        make_member("rt", fmt("rt-user%zu", i), "viewer");
    }
    list = get("/api/v1/tenants/rt/members?limit=1000");
    for (size_t i = 0; i < n; i++) {
        json_t *it = find_item(list, "username", fmt("rt-user%zu", i));
        snprintf(what, sizeof what, "member rt-user%zu in the list", i);
        same_str(what, json_object_get(it, "display_name"), nasty[(i + 1) % n]);
    }
    json_decref(list);
    /* tokens: name */
    char ids[N_OF(nasty)][40];
    for (size_t i = 0; i < n; i++) {
        json_t *j = call("POST", "/api/v1/tokens",
                         json_pack("{s:s, s:[s]}", "name", nasty[i], "scopes", "jobs:read"),
                         i % 2 ? JSON_ENSURE_ASCII : 0, 201);
        snprintf(what, sizeof what, "token %zu in the 201", i);
        same_str(what, json_object_get(j, "name"), nasty[i]);
        snprintf(ids[i], sizeof ids[i], "%s",
                 json_string_value(json_object_get(j, "id"))
                     ? json_string_value(json_object_get(j, "id"))
                     : "");
        json_decref(j);
    }
    list = get("/api/v1/tokens?limit=1000");
    for (size_t i = 0; i < n; i++) {
        snprintf(what, sizeof what, "token %zu in the list", i);
        same_str(what, json_object_get(find_item(list, "id", ids[i]), "name"), nasty[i]);
    }
    json_decref(list);
    soft_done();
}
END_TEST

/* ---- limits count characters, not bytes ------------------------------------------- */

START_TEST(lengths_count_characters)
{
    char what[200];
    char *cjk200 = rep("\xe4\xb8\xad", 200), *cjk201 = rep("\xe4\xb8\xad", 201);
    char *emo200 = rep("\xf0\x9f\x98\x80", 200), *emo100 = rep("\xf0\x9f\x98\x80", 100);
    char *emo101 = rep("\xf0\x9f\x98\x80", 101);
    json_t *j = call("POST", "/api/v1/tenants",
                     json_pack("{s:s, s:s}", "slug", "len-cjk", "name", cjk200), 0, 201);
    same_str("tenant with a 200-character Chinese name", json_object_get(j, "name"), cjk200);
    json_decref(j);
    j = call("POST", "/api/v1/tenants",
             json_pack("{s:s, s:s}", "slug", "len-emoji", "name", emo200), JSON_ENSURE_ASCII, 201);
    same_str("tenant with a 200-emoji name", json_object_get(j, "name"), emo200);
    json_decref(j);
    j = get("/api/v1/tenants/len-emoji");
    same_str("GET tenant with a 200-emoji name", json_object_get(j, "name"), emo200);
    json_decref(j);
    char *b = jdump(json_pack("{s:s}", "name", cjk201), 0);
    bad("PATCH", "/api/v1/tenants/len-cjk", ADM, b, 400, "name");
    free(b);
    json_decref(
        call("PATCH", "/api/v1/tenants/len-cjk", json_pack("{s:s}", "name", emo200), 0, 200));
    /* slugs: 2 and 63 characters are fine */
    char *s63 = rep("s", 63);
    json_decref(
        call("POST", "/api/v1/tenants", json_pack("{s:s, s:s}", "slug", s63, "name", "x"), 0, 201));
    json_decref(call("POST", "/api/v1/tenants", json_pack("{s:s, s:s}", "slug", "ab", "name", "x"),
                     0, 201));
    json_decref(call("POST", "/api/v1/tenants/len-cjk/projects",
                     json_pack("{s:s, s:s}", "slug", s63, "name", emo200), 0, 201));
    /* projects: description up to 4000 characters */
    char *d4000 = rep("\xe4\xb8\xad", 4000), *d4001 = rep("\xe4\xb8\xad", 4001);
    j = call(
        "POST", "/api/v1/tenants/len-cjk/projects",
        json_pack("{s:s, s:s, s:s}", "slug", "long-desc", "name", cjk200, "description", d4000), 0,
        201);
    same_str("project with a 4000-character description", json_object_get(j, "description"), d4000);
    json_decref(j);
    j = get("/api/v1/tenants/len-cjk/projects/long-desc");
    same_str("GET project with a 4000-character description", json_object_get(j, "description"),
             d4000);
    json_decref(j);
    b = jdump(json_pack("{s:s}", "description", d4001), 0);
    bad("PATCH", "/api/v1/tenants/len-cjk/projects/long-desc", ADM, b, 400, "description");
    free(b);
    j = call("PATCH", "/api/v1/tenants/len-cjk/projects/long-desc",
             json_pack("{s:s}", "description", ""), 0, 200);
    same_str("project description emptied", json_object_get(j, "description"), "");
    json_decref(j);
    j = call("POST", "/api/v1/tenants/len-cjk/projects",
             json_pack("{s:s, s:s, s:n}", "slug", "null-desc", "name", "x", "description"), 0, 201);
    const char *nd = json_string_value(json_object_get(j, "description"));
    soft(j && (json_is_null(json_object_get(j, "description")) || (nd && nd[0] == '\0')),
         "project created with description null: description is not null or empty");
    json_decref(j);
    /* users: display names, user names, passwords and e-mails */
    j = call("POST", "/api/v1/users",
             json_pack("{s:s, s:s, s:s}", "username", "len-u1", "password", "long-enough-pw",
                       "display_name", cjk200),
             0, 201);
    same_str("user with a 200-character display name", json_object_get(j, "display_name"), cjk200);
    json_decref(j);
    char *u63 = rep("u", 63);
    json_decref(call("POST", "/api/v1/users",
                     json_pack("{s:s, s:s}", "username", u63, "password", "long-enough-pw"), 0,
                     201));
    json_decref(call("POST", "/api/v1/users",
                     json_pack("{s:s, s:s}", "username", "z", "password", "long-enough-pw"), 0,
                     201));
    /* ten Chinese characters make a long enough password (30 bytes) */
    const char *pw10 = "\xe5\xaf\x86\xe7\xa0\x81\xe5\xaf\x86\xe7\xa0\x81\xe5\xaf\x86\xe7\xa0\x81"
                       "\xe5\xaf\x86\xe7\xa0\x81\xe5\xaf\x86\xe7\xa0\x81";
    json_decref(call("POST", "/api/v1/users",
                     json_pack("{s:s, s:s}", "username", "len-cn-pw", "password", pw10), 0, 201));
    char *tok = login("len-cn-pw", pw10);
    soft(tok != NULL, "login with a 10-character Chinese password failed");
    free(tok);
    char *pw1024 = rep("p", 1024);
    json_decref(call("POST", "/api/v1/users",
                     json_pack("{s:s, s:s}", "username", "len-long-pw", "password", pw1024), 0,
                     201));
    tok = login("len-long-pw", pw1024);
    soft(tok != NULL, "login with a 1024-byte password failed");
    free(tok);
    free(pw1024);
    char *local = rep("l", 254 - strlen("@example.com"));
    char email[300];
    snprintf(email, sizeof email, "%s@example.com", local);
    j = call("POST", "/api/v1/users",
             json_pack("{s:s, s:s, s:s}", "username", "len-mail", "password", "long-enough-pw",
                       "email", email),
             0, 201);
    same_str("user with a 254-byte e-mail", json_object_get(j, "email"), email);
    json_decref(j);
    free(local);
    json_decref(call("POST", "/api/v1/users",
                     json_pack("{s:s, s:s, s:[sss]}", "username", "len-roles", "password",
                               "long-enough-pw", "roles", "finance", "auditor", "finance"),
                     0, 201));
    /* tokens: names up to 100 characters, 1..730 days, all nine scopes */
    j = call("POST", "/api/v1/tokens",
             json_pack("{s:s, s:[s]}", "name", emo100, "scopes", "jobs:read"), 0, 201);
    same_str("token with a 100-emoji name", json_object_get(j, "name"), emo100);
    json_decref(j);
    b = jdump(json_pack("{s:s, s:[s]}", "name", emo101, "scopes", "jobs:read"), 0);
    bad("POST", "/api/v1/tokens", ADM, b, 400, "name");
    free(b);
    for (int days = 1; days <= 730; days += 729) {
        j = call("POST", "/api/v1/tokens",
                 json_pack("{s:s, s:[s], s:i}", "name", "days", "scopes", "jobs:read",
                           "expires_in_days", days),
                 0, 201);
        snprintf(what, sizeof what, "token with expires_in_days %d has no expires_at", days);
        soft(j && json_is_string(json_object_get(j, "expires_at")), "%s", what);
        json_decref(j);
    }
    j = call("POST", "/api/v1/tokens",
             json_pack("{s:s, s:[sssssssss]}", "name", "all", "scopes", "jobs:read", "jobs:write",
                       "images:read", "images:write", "usage:read", "billing:write", "audit:read",
                       "audit:ingest", "admin"),
             0, 201);
    soft(j && json_array_size(json_object_get(j, "scopes")) == 9,
         "token with all nine scopes does not list nine");
    json_decref(j);
    free(s63);
    free(u63);
    free(d4000);
    free(d4001);
    free(cjk200);
    free(cjk201);
    free(emo200);
    free(emo100);
    free(emo101);
    soft_done();
}
END_TEST

/* ---- and after all of it ----------------------------------------------------------- */

START_TEST(server_survives_and_logged_no_errors)
{
    struct http_res r;
    reqj("GET", "/healthz", NULL, NULL, &r);
    soft(r.status == 200, "healthz: %ld", r.status);
    http_res_free(&r);
    reqj("GET", "/readyz", NULL, NULL, &r);
    soft(r.status == 200, "readyz: %ld", r.status);
    http_res_free(&r);
    reqj("GET", "/api/v1/me", ADM, NULL, &r);
    soft(r.status == 200, "me: %ld", r.status);
    http_res_free(&r);
    /* no request above should have made the server log an error (5xx, crash, bad SQL) */
    char *log = harness_read_file(harness_srv.log_path);
    ck_assert_ptr_nonnull(log);
    int not_json = 0;
    for (char *line = log; line && *line;) {
        char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (memmem(line, len, "\"level\":\"error\"", 15) || memmem(line, len, "\"status\":5", 10))
            soft(false, "aidcd logged: %.*s", (int)(len > 600 ? 600 : len), line);
        /* a JSON-lines log must stay JSON whatever the client sent (e.g. bytes in paths) */
        json_t *j = json_loadb(line, len, 0, NULL);
        if (!j && not_json++ < 3)
            soft(false, "aidcd log line is not valid JSON: %s", show(line, len));
        json_decref(j);
        line = eol ? eol + 1 : NULL;
    }
    soft(not_json == 0, "%d aidcd log lines are not valid JSON", not_json);
    free(log);
    soft_done();
}
END_TEST

int main(void)
{
    harness_require_pg();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_unchecked_fixture(tc, setup, teardown);
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
    tcase_add_test(tc, bad_path_parameters);
    tcase_add_test(tc, nul_bytes_in_paths_do_not_alias);
    tcase_add_test(tc, bad_limits_and_cursors);
    tcase_add_test(tc, keyset_pagination_visits_everything_once);
    tcase_add_test(tc, metacharacters_and_unicode_round_trip);
    tcase_add_test(tc, lengths_count_characters);
    tcase_add_test(tc, server_survives_and_logged_no_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
