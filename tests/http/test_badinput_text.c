/*
 * test_badinput_text.c - SQL metacharacters and non-ASCII text round-trip
 * byte for byte through every field that stores text (create, read, list,
 * patch), and length limits count characters, not bytes: the longest valid
 * values are taken and come back whole. Refusals: test_badinput_bodies.c.
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

static void setup(void)
{
    soft_fixture("badinput_text");
}

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
         g ? soft_show(g, gl) : "(not a string)", soft_shows(want));
}

/* Send o (consumed) and expect want; returns the answer's JSON (caller decrefs) or NULL. */
static json_t *call(const char *method, const char *path, json_t *o, size_t flags, long want)
{
    char *b = soft_jdump(o, flags);
    struct http_res r;
    soft_send_json(method, path, ADM, b, strlen(b), &r);
    soft(r.status == want, "%s %s body %s: %ld, expected %ld: %s", method, path, soft_shows(b),
         r.status, want, soft_show(r.body, r.body_len));
    json_t *j = r.status == want ? json_incref(r.json) : NULL;
    http_res_free(&r);
    free(b);
    return j;
}

static json_t *get(const char *path)
{
    struct http_res r;
    reqj("GET", path, ADM, NULL, &r);
    soft(r.status == 200, "GET %s: %ld %s", path, r.status, soft_show(r.body, r.body_len));
    /* every answer is JSON with each key once (a project's is written as text) */
    json_error_t err;
    json_t *strict =
        r.status == 200 ? json_loadb(r.body, r.body_len, JSON_REJECT_DUPLICATES, &err) : NULL;
    soft(r.status != 200 || strict, "GET %s: not strict JSON (%s): %s", path,
         strict ? "" : err.text, soft_show(r.body, r.body_len));
    json_decref(strict);
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
        same_str(what, json_object_get(soft_find_item(list, "slug", fmt("rt-t%zu", i)), "name"),
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
        same_str(what, json_object_get(j, "tenant"), "rt");
        json_decref(j);
    }
    list = get("/api/v1/tenants/rt/projects?limit=1000");
    for (size_t i = 0; i < 2 * n; i++) {
        char desc[512];
        snprintf(desc, sizeof desc, "%s | %s", nasty[i % n], nasty[(i + 1) % n]);
        json_t *it = soft_find_item(list, "slug", fmt("p-%zu", i));
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
        json_t *it = soft_find_item(list, "username", fmt("rt-user%zu", i));
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
        json_t *it = soft_find_item(list, "username", fmt("rt-user%zu", i));
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
        same_str(what, json_object_get(soft_find_item(list, "id", ids[i]), "name"), nasty[i]);
    }
    json_decref(list);
    soft_done();
}
END_TEST

/* ---- limits count characters, not bytes ------------------------------------------- */

START_TEST(lengths_count_characters)
{
    char what[200];
    char *cjk200 = soft_rep("\xe4\xb8\xad", 200), *cjk201 = soft_rep("\xe4\xb8\xad", 201);
    char *emo200 = soft_rep("\xf0\x9f\x98\x80", 200), *emo100 = soft_rep("\xf0\x9f\x98\x80", 100);
    char *emo101 = soft_rep("\xf0\x9f\x98\x80", 101);
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
    char *b = soft_jdump(json_pack("{s:s}", "name", cjk201), 0);
    soft_bad("PATCH", "/api/v1/tenants/len-cjk", ADM, b, 400, "name");
    free(b);
    json_decref(
        call("PATCH", "/api/v1/tenants/len-cjk", json_pack("{s:s}", "name", emo200), 0, 200));
    /* slugs: 2 and 63 characters are fine */
    char *s63 = soft_rep("s", 63);
    json_decref(
        call("POST", "/api/v1/tenants", json_pack("{s:s, s:s}", "slug", s63, "name", "x"), 0, 201));
    json_decref(call("POST", "/api/v1/tenants", json_pack("{s:s, s:s}", "slug", "ab", "name", "x"),
                     0, 201));
    json_decref(call("POST", "/api/v1/tenants/len-cjk/projects",
                     json_pack("{s:s, s:s}", "slug", s63, "name", emo200), 0, 201));
    /* projects: description up to 4000 characters */
    char *d4000 = soft_rep("\xe4\xb8\xad", 4000), *d4001 = soft_rep("\xe4\xb8\xad", 4001);
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
    b = soft_jdump(json_pack("{s:s}", "description", d4001), 0);
    soft_bad("PATCH", "/api/v1/tenants/len-cjk/projects/long-desc", ADM, b, 400, "description");
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
    char *u63 = soft_rep("u", 63);
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
    char *pw1024 = soft_rep("p", 1024);
    json_decref(call("POST", "/api/v1/users",
                     json_pack("{s:s, s:s}", "username", "len-long-pw", "password", pw1024), 0,
                     201));
    tok = login("len-long-pw", pw1024);
    soft(tok != NULL, "login with a 1024-byte password failed");
    free(tok);
    free(pw1024);
    char *local = soft_rep("l", 254 - strlen("@example.com"));
    char email[300];
    snprintf(email, sizeof email, "%s@example.com", local);
    j = call("POST", "/api/v1/users",
             json_pack("{s:s, s:s, s:s}", "username", "len-mail", "password", "long-enough-pw",
                       "email", email),
             0, 201);
    same_str("user with a 254-byte e-mail", json_object_get(j, "email"), email);
    json_decref(j);
    free(local);
    /* three roles, one twice: accepted (the grant of the two waits for approval: 202) */
    j = call("POST", "/api/v1/users",
             json_pack("{s:s, s:s, s:[sss]}", "username", "len-roles", "password", "long-enough-pw",
                       "roles", "finance", "auditor", "finance"),
             0, 202);
    same_str(
        "roles waiting for approval",
        json_object_get(json_object_get(json_object_get(j, "approval"), "operation"), "summary"),
        "grant finance,auditor to the new user \"len-roles\"");
    json_decref(j);
    /* tokens: names up to 100 characters, 1..730 days, all nine scopes */
    j = call("POST", "/api/v1/tokens",
             json_pack("{s:s, s:[s]}", "name", emo100, "scopes", "jobs:read"), 0, 201);
    same_str("token with a 100-emoji name", json_object_get(j, "name"), emo100);
    json_decref(j);
    b = soft_jdump(json_pack("{s:s, s:[s]}", "name", emo101, "scopes", "jobs:read"), 0);
    soft_bad("POST", "/api/v1/tokens", ADM, b, 400, "name");
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

int main(void)
{
    harness_require_pg();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("badinput_text");
    TCase *tc = tcase_create("badinput_text");
    tcase_add_unchecked_fixture(tc, setup, harness_teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, metacharacters_and_unicode_round_trip);
    tcase_add_test(tc, lengths_count_characters);
    soft_add_server_check(tc);
    suite_add_tcase(s, tc);
    int rc = suite_run(s);
    curl_global_cleanup();
    return rc;
}
