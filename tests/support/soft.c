/*
 * soft.c - soft checks for the integration tests (see soft.h): the count of
 * discrepancies, a printable rendering of what was sent and answered, and
 * the shared checks of problem answers, stored data and the server's log.
 */
#include "soft.h"

#include "client.h"
#include "harness.h"

#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADM     (harness_srv.admin_token)
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the checks ----------------------------------------------------------------- */

static int nfail;

void soft(bool ok, const char *f, ...)
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

void soft_done(void)
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

const char *soft_show(const char *s, size_t n)
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

const char *soft_shows(const char *s)
{
    return soft_show(s, s ? strlen(s) : 0);
}

/* ---- building requests ---------------------------------------------------------- */

char *soft_rep(const char *unit, size_t times)
{
    size_t ul = strlen(unit);
    char *s = malloc(ul * times + 1);
    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < times; i++)
        memcpy(s + i * ul, unit, ul);
    s[ul * times] = '\0';
    return s;
}

char *soft_jdump(json_t *o, size_t flags)
{
    ck_assert_ptr_nonnull(o);
    char *s = json_dumps(o, JSON_COMPACT | flags);
    json_decref(o);
    ck_assert_ptr_nonnull(s);
    return s;
}

long soft_send_json(const char *method, const char *path, const char *token, const char *body,
                    size_t len, struct http_res *r)
{
    return http_raw(&harness_srv, method, path, token, "application/json", body, len, NULL, r);
}

json_t *soft_find_item(const json_t *doc, const char *key, const char *val)
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

/* ---- refused requests ----------------------------------------------------------- */

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

/* A code of the catalog's shape: dotted lower case (docs/errors.md). */
static bool code_ok(const json_t *code)
{
    const char *c = json_string_value(code);
    return c && strchr(c, '.') && strspn(c, "abcdefghijklmnopqrstuvwxyz0123456789_.") == strlen(c);
}

/* Whether some string of params holds the n bytes at p (then they were filled in). */
static bool in_params(const json_t *params, const char *p, size_t n)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)params, k, v) {
        const char *s = json_string_value(v);
        for (const char *at = s ? strchr(s, *p) : NULL; at; at = strchr(at + 1, *p))
            if (strncmp(at, p, n) == 0)
                return true;
    }
    return false;
}

/* A text with a {placeholder} left unfilled (braces that came in params are
 * the client's or a lower layer's), or "a the"-like doubling. */
static bool text_ok(const char *t, const json_t *params)
{
    if (!t || !*t)
        return false;
    for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{')) {
        size_t n = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz0123456789_");
        if (n && p[1 + n] == '}' && !in_params(params, p, n + 2))
            return false;
    }
    static const char *const doubled[] = {" a a ", " a an ", " a the ", " a another ", " an a ",
                                          " the the ", " the a ", " is is "};
    const char *padded = fmt(" %s ", t);
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof doubled / sizeof doubled[0]; i++)
        ok = !strcasestr(padded, doubled[i]);
    return ok;
}

/* Every problem is coded (issue 21: the portal translates by code): a code,
 * params, and per field error a code, message and params. */
static void coded(const char *what, const struct http_res *r)
{
    const json_t *j = r->json;
    soft(code_ok(json_object_get(j, "code")) && json_is_object(json_object_get(j, "params")),
         "%s: the problem lacks a code or params: %s", what, soft_show(r->body, r->body_len));
    soft(text_ok(json_string_value(json_object_get(j, "detail")), json_object_get(j, "params")),
         "%s: the detail reads wrong (a placeholder left, a doubled word): %s", what,
         soft_show(r->body, r->body_len));
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(j, "errors"), i, e) {
        soft(json_is_string(json_object_get(e, "field")) && code_ok(json_object_get(e, "code")) &&
                 text_ok(json_string_value(json_object_get(e, "message")),
                         json_object_get(e, "params")) &&
                 json_is_object(json_object_get(e, "params")),
             "%s: field error %zu lacks field, code, a good message or params: %s", what, i,
             soft_show(r->body, r->body_len));
    }
}

void soft_problem_fields(const char *what, const struct http_res *r, long status,
                         const char *const *fields)
{
    bool st_ok = status ? r->status == status : (r->status >= 400 && r->status < 500);
    char *ct = http_header(r, "Content-Type");
    char want[32];
    snprintf(want, sizeof want, status ? "%ld" : "a 4xx", status);
    if (!st_ok) {
        soft(false, "%s: status %ld (%s), expected %s; body %s", what, r->status, soft_shows(ct),
             want, soft_show(r->body, r->body_len));
        free(ct);
        return;
    }
    bool ct_ok = ct && strncmp(ct, "application/problem+json", 24) == 0;
    soft(ct_ok, "%s: Content-Type \"%s\", expected application/problem+json (status %ld)", what,
         soft_shows(ct), r->status);
    free(ct);
    const json_t *j = r->json;
    if (!json_is_object(j)) {
        soft(false, "%s: answer is not a JSON object: %s", what, soft_show(r->body, r->body_len));
        return;
    }
    soft(json_integer_value(json_object_get(j, "status")) == r->status,
         "%s: problem \"status\" member does not match the HTTP status %ld: %s", what, r->status,
         soft_show(r->body, r->body_len));
    soft(json_is_string(json_object_get(j, "title")) &&
             json_is_string(json_object_get(j, "detail")),
         "%s: problem lacks title or detail: %s", what, soft_show(r->body, r->body_len));
    char *rid = http_header(r, "X-Request-Id");
    const char *jrid = json_string_value(json_object_get(j, "request_id"));
    soft(rid && jrid && *jrid && strcmp(rid, jrid) == 0,
         "%s: request_id \"%s\" missing or different from X-Request-Id \"%s\": %s", what,
         soft_shows(jrid), soft_shows(rid), soft_show(r->body, r->body_len));
    free(rid);
    coded(what, r);
    for (size_t i = 0; fields && fields[i]; i++)
        soft(names_field(j, fields[i]), "%s: \"errors\" does not name field \"%s\": %s", what,
             soft_shows(fields[i]), soft_show(r->body, r->body_len));
}

void soft_problem(const char *what, const struct http_res *r, long status, const char *field)
{
    const char *f[] = {field, NULL};
    soft_problem_fields(what, r, status, f);
}

void soft_bad_n(const char *method, const char *path, const char *token, const char *body,
                size_t len, long status, const char *field)
{
    struct http_res r;
    char what[700];
    soft_send_json(method, path, token, body, len, &r);
    snprintf(what, sizeof what, "%s %s body %s", method, path, soft_show(body, len));
    soft_problem(what, &r, status, field);
    http_res_free(&r);
}

void soft_bad(const char *method, const char *path, const char *token, const char *body,
              long status, const char *field)
{
    soft_bad_n(method, path, token, body, strlen(body), status, field);
}

/* ---- stored data: a refused request changes nothing ----------------------------- */

void soft_fixture(const char *name)
{
    harness_setup(name, NULL);
    make_tenant("acme");
    make_project("acme", "base");
    make_user("alice", "alice-password-1", NULL);
    make_member("acme", "alice", "member");
}

char *soft_snapshot(void)
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

void soft_same_snapshot(const char *what, const char *before)
{
    char *after = soft_snapshot();
    if (strcmp(before, after) != 0) {
        size_t i = 0;
        while (before[i] && before[i] == after[i])
            i++;
        size_t from = i > 120 ? i - 120 : 0;
        soft(false,
             "%s changed stored data; first difference at byte %zu:\n  before: %s\n  after:  %s",
             what, i, soft_show(before + from, strlen(before + from)),
             soft_show(after + from, strlen(after + from)));
    }
    free(after);
}

/* ---- the server after a run ----------------------------------------------------- */

void soft_log_check(bool json_lines)
{
    char *log = harness_read_file(harness_srv.log_path);
    ck_assert_ptr_nonnull(log);
    int not_json = 0;
    for (char *line = log; line && *line;) {
        char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (memmem(line, len, "\"level\":\"error\"", 15) || memmem(line, len, "\"status\":5", 10))
            soft(false, "aidcd logged: %.*s", (int)(len > 600 ? 600 : len), line);
        if (json_lines) {
            /* a JSON-lines log must stay JSON whatever the client sent (e.g. bytes in paths) */
            json_t *j = json_loadb(line, len, 0, NULL);
            if (!j && not_json++ < 3)
                soft(false, "aidcd log line is not valid JSON: %s", soft_show(line, len));
            json_decref(j);
        }
        line = eol ? eol + 1 : NULL;
    }
    if (json_lines)
        soft(not_json == 0, "%d aidcd log lines are not valid JSON", not_json);
    free(log);
}

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
    /* no request before should have made the server log an error (5xx, crash, bad SQL) */
    soft_log_check(true);
    soft_done();
}
END_TEST

void soft_add_server_check(TCase *tc)
{
    tcase_add_test(tc, server_survives_and_logged_no_errors);
}
