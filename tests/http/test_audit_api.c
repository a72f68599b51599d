/*
 * test_audit_api.c - the audit log as an auditor reads it, against the real
 * aidcd and PostgreSQL: search with every filter, newest first, keyset
 * pagination that visits every event once, bad arguments named in a 400;
 * refusals (401, 403, failed logins) findable by the X-Request-Id they were
 * answered with; reads of the audit log audited themselves; an auditor that
 * can read everything and change nothing (every write route of the table
 * answers 403, and each refusal is in the log); verification, signed
 * checkpoints and the public key. Node records, the exports and redaction
 * are in test_audit_ingest.c.
 *
 * The server signs checkpoints with a key made by `aidcd audit keygen`,
 * chains events at once (grace 0) and signs every second; tests wait for an
 * event to be chained by polling until it has a "seq". It trusts
 * X-Forwarded-For from 127.0.0.1, so requests can come "from" addresses of
 * their own and source_ip filters have something to tell apart.
 */
#include "lib/crypto.h"
#include "server/router.h"
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AUD_USER "aud"
#define AUD_PW   "auditor-password-1"
#define WAIT_S   30.0

static char key_dir[64], key_path[300], pub_path[300];
static char aud[1024]; /* JWT of the auditor */

static void setup(void)
{
    static char env_key[700];
    audittest_key("auditapi", key_dir, sizeof key_dir, key_path, sizeof key_path, pub_path,
                  sizeof pub_path, env_key, sizeof env_key);
    const char *env[] = {env_key, "AIDC_AUDIT_SEAL_GRACE_MS=0", "AIDC_AUDIT_CHECKPOINT_SECONDS=1",
                         "AIDC_TRUSTED_PROXIES=127.0.0.1", NULL};
    harness_setup("auditapi", env);
    audittest_auditor(AUD_USER, AUD_PW, aud, sizeof aud);
}

static void teardown(void)
{
    harness_teardown();
    audittest_key_remove(key_dir);
}

/* ---- helpers ------------------------------------------------------------------------ */

/* method path as token (NULL: none) from address ip (NULL: 127.0.0.1) with an optional
 * User-Agent; the answer in *out. */
static long call(const char *tok, const char *method, const char *path, const char *body,
                 const char *ip, const char *ua, struct http_res *out)
{
    const char *extra[3] = {NULL, NULL, NULL};
    int n = 0;
    if (ip)
        extra[n++] = fmt("X-Forwarded-For: %s", ip);
    if (ua)
        extra[n++] = fmt("User-Agent: %s", ua);
    return http_do(&harness_srv, method, path, tok, body, extra, out);
}

/* As call, expecting status want; returns the X-Request-Id of the answer (malloc'd). */
static char *call_rid(const char *tok, const char *method, const char *path, const char *body,
                      const char *ip, long want)
{
    struct http_res r;
    long st = call(tok, method, path, body, ip, NULL, &r);
    ck_assert_msg(st == want, "%s %s answered %ld, expected %ld: %s", method, path, st, want,
                  r.body);
    char *rid = http_header(&r, "X-Request-Id");
    ck_assert_ptr_nonnull(rid);
    http_res_free(&r);
    return rid;
}

/* The items of GET /api/v1/audit/events?query as the auditor (a new reference). */
static json_t *events(const char *query)
{
    return get_items(fmt("/api/v1/audit/events?%s", query), aud);
}

/* The first item of items whose field (a top-level string) equals value, or NULL. */
static json_t *find(json_t *items, const char *field, const char *value)
{
    size_t i;
    json_t *ev;
    json_array_foreach(items, i, ev)
    {
        if (audittest_str_is(jstr(ev, field), value))
            return ev;
    }
    return NULL;
}

/* Poll the search query until it finds the event of request rid (chained, if sealed);
 * a new reference. */
static json_t *wait_event(const char *query, const char *rid, bool sealed)
{
    double end = audittest_now() + WAIT_S;
    for (;;) {
        json_t *items = events(query);
        json_t *ev = find(items, "request_id", rid);
        if (ev && (!sealed || json_is_integer(json_object_get(ev, "seq")))) {
            json_incref(ev);
            json_decref(items);
            return ev;
        }
        json_decref(items);
        ck_assert_msg(audittest_now() < end, "no %sevent of request %s in %s after %.0f s",
                      sealed ? "chained " : "", rid, query, WAIT_S);
        audittest_nap();
    }
}

/* GET path as the auditor must answer want: 400, a problem naming field; 0, 200 or such a
 * 400; else exactly want. A mismatch is appended to errs (some tests list every case that
 * goes wrong, not only the first). */
static void check_get(const char *path, const char *field, long want, char *errs, size_t n)
{
    struct http_res r;
    long st = call(aud, "GET", path, NULL, NULL, NULL, &r);
    char *ct = http_header(&r, "Content-Type");
    bool named = ct && strstr(ct, "application/problem+json");
    bool found = false;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r.json, "errors"), i, e)
    {
        found |= audittest_str_is(jstr(e, "field"), field);
    }
    named = named && found;
    bool ok = want == 400 ? st == 400 && named
              : want == 0 ? st == 200 || (st == 400 && named)
                          : st == want;
    if (!ok)
        snprintf(errs + strlen(errs), n - strlen(errs), "\n  GET %s: %ld %.160s", path, st, r.body);
    free(ct);
    http_res_free(&r);
}

static void expect_400(const char *path, const char *field)
{
    char errs[512] = "";
    check_get(path, field, 400, errs, sizeof errs);
    ck_assert_msg(errs[0] == '\0', "expected a 400 naming \"%s\":%s", field, errs);
}

/* ---- search ------------------------------------------------------------------------- */

static bool all_have(json_t *items, const char *field, const char *value, bool prefix)
{
    size_t i;
    json_t *ev;
    json_array_foreach(items, i, ev)
    {
        const char *v = jstr(ev, field);
        if (!v || (prefix ? strncmp(v, value, strlen(value)) != 0 : strcmp(v, value) != 0))
            return false;
    }
    return true;
}

START_TEST(search_filters)
{
    const char *adm = harness_srv.admin_token;
    free(call_rid(adm, "POST", "/api/v1/tenants", "{\"slug\":\"sa\",\"name\":\"Tenant sa\"}",
                  "10.71.1.1", 201));
    free(call_rid(adm, "POST", "/api/v1/tenants", "{\"slug\":\"sb\",\"name\":\"Tenant sb\"}",
                  "10.71.2.2", 201));
    char *r1 = call_rid(adm, "POST", "/api/v1/tenants/sa/projects",
                        "{\"slug\":\"quokka\",\"name\":\"Quokka habitat\"}", "10.71.1.1", 201);
    char *r2 = call_rid(adm, "POST", "/api/v1/tenants/sb/projects",
                        "{\"slug\":\"wombat\",\"name\":\"Wombat burrow\"}", "10.71.2.2", 201);
    char *r3 =
        call_rid(NULL, "POST", "/api/v1/auth/login",
                 "{\"username\":\"admin\",\"password\":\"not-the-password\"}", "10.71.3.3", 401);

    /* tenant + exact action */
    json_t *it = events("tenant=sa&action=project.create");
    ck_assert_int_eq(json_array_size(it), 1);
    json_t *p1 = json_incref(json_array_get(it, 0));
    json_decref(it);
    ck_assert_str_eq(jstr(p1, "request_id"), r1);
    ck_assert_str_eq(jstr(p1, "source_ip"), "10.71.1.1");
    ck_assert_str_eq(jstr(p1, "outcome"), "success");
    ck_assert_int_eq(json_integer_value(json_object_get(p1, "status")), 201);
    ck_assert_str_eq(jstr(json_object_get(p1, "actor"), "user"), ADMIN_USER);
    ck_assert_str_eq(jstr(json_object_get(p1, "resource"), "type"), "project");
    const char *pid = jstr(json_object_get(p1, "resource"), "id");
    ck_assert_ptr_nonnull(pid);

    /* actor: only the admin's events, the tenant's among them */
    it = events("actor=admin&tenant=sb&limit=1000");
    ck_assert_ptr_nonnull(find(it, "request_id", r2));
    size_t i;
    json_t *ev;
    json_array_foreach(it, i, ev)
    {
        ck_assert_str_eq(jstr(json_object_get(ev, "actor"), "user"), ADMIN_USER);
        ck_assert_str_eq(jstr(ev, "tenant"), "sb");
    }
    json_decref(it);
    it = events("actor=nobody-at-all");
    ck_assert_int_eq(json_array_size(it), 0);
    json_decref(it);

    /* action prefix; outcome */
    it = events(fmt("action=%s&limit=1000", qesc("auth.*")));
    ck_assert_msg(all_have(it, "action", "auth.", true), "auth.* matched another action");
    ck_assert_ptr_nonnull(find(it, "request_id", r3));
    ck_assert_ptr_nonnull(find(it, "action", "auth.login"));
    json_decref(it);
    it = events("action=auth&limit=1000"); /* exact: no action is "auth" */
    ck_assert_int_eq(json_array_size(it), 0);
    json_decref(it);
    it = events("outcome=denied&limit=1000");
    ck_assert_msg(all_have(it, "outcome", "denied", false), "outcome=denied matched another");
    ck_assert_ptr_nonnull(find(it, "request_id", r3));
    ck_assert_ptr_null(find(it, "request_id", r1));
    json_decref(it);

    /* source_ip: an address, networks */
    it = events("source_ip=10.71.1.1&limit=1000");
    ck_assert_int_ge(json_array_size(it), 2);
    ck_assert_msg(all_have(it, "source_ip", "10.71.1.1", false), "source_ip=10.71.1.1");
    json_decref(it);
    it = events(fmt("source_ip=%s&limit=1000", qesc("10.71.0.0/16")));
    ck_assert_msg(all_have(it, "source_ip", "10.71.", true), "10.71.0.0/16 matched another");
    ck_assert_ptr_nonnull(find(it, "request_id", r1));
    ck_assert_ptr_nonnull(find(it, "request_id", r2));
    ck_assert_ptr_nonnull(find(it, "request_id", r3));
    json_decref(it);
    it = events(fmt("source_ip=%s&limit=1000", qesc("10.71.2.0/24")));
    ck_assert_msg(all_have(it, "source_ip", "10.71.2.2", false), "10.71.2.0/24 matched another");
    ck_assert_ptr_nonnull(find(it, "request_id", r2));
    json_decref(it);

    /* q: words of details (the project's name), of the action, of the resource */
    it = events("q=quokka");
    ck_assert_ptr_nonnull(find(it, "request_id", r1));
    ck_assert_ptr_null(find(it, "request_id", r2));
    json_decref(it);
    it = events(fmt("q=%s", qesc("wombat burrow")));
    ck_assert_ptr_nonnull(find(it, "request_id", r2));
    ck_assert_ptr_null(find(it, "request_id", r1));
    json_decref(it);
    it = events(fmt("q=%s&limit=1000", qesc("project create")));
    ck_assert_ptr_nonnull(find(it, "request_id", r1));
    ck_assert_ptr_nonnull(find(it, "request_id", r2));
    json_decref(it);
    it = events(fmt("q=%s", pid));
    ck_assert_ptr_nonnull(find(it, "request_id", r1));
    json_decref(it);

    /* resource */
    it = events(fmt("resource_type=project&resource_id=%s", pid));
    ck_assert_int_eq(json_array_size(it), 1);
    ck_assert_str_eq(jstr(json_array_get(it, 0), "request_id"), r1);
    json_decref(it);

    /* from (inclusive) and to (exclusive), at the events' own times */
    it = events("action=project.create&tenant=sb");
    json_t *p2 = json_incref(json_array_get(it, 0));
    json_decref(it);
    const char *t1 = jstr(p1, "ts"), *t2 = jstr(p2, "ts");
    ck_assert_msg(strcmp(t1, t2) < 0, "%s !< %s", t1, t2);
    it = events(fmt("action=project.create&from=%s&limit=1000", qesc(t2)));
    ck_assert_ptr_nonnull(find(it, "request_id", r2));
    ck_assert_ptr_null(find(it, "request_id", r1));
    json_decref(it);
    it = events(fmt("action=project.create&to=%s&limit=1000", qesc(t2)));
    ck_assert_ptr_nonnull(find(it, "request_id", r1));
    ck_assert_ptr_null(find(it, "request_id", r2));
    json_decref(it);
    it = events(fmt("action=project.create&from=%s&to=%s", qesc("2000-01-01T02:00:00+02:00"),
                    qesc("2100-01-01T00:00:00-05:30")));
    ck_assert_ptr_nonnull(find(it, "request_id", r1));
    json_decref(it);

    /* newest first: ts, then id, descending */
    it = events("limit=200");
    for (i = 1; i < json_array_size(it); i++) {
        json_t *a = json_array_get(it, i - 1), *b = json_array_get(it, i);
        int c = strcmp(jstr(a, "ts"), jstr(b, "ts"));
        ck_assert_msg(c > 0 || (c == 0 && json_integer_value(json_object_get(a, "id")) >
                                              json_integer_value(json_object_get(b, "id"))),
                      "items %zu and %zu are not newest first", i - 1, i);
    }
    json_decref(it);
    json_decref(p1);
    json_decref(p2);
    free(r1);
    free(r2);
    free(r3);
}
END_TEST

/* Walk query (with limit) page by page; the events' [id, ts] in order (a new reference). */
static json_t *walk(const char *query, int *pages)
{
    json_t *seen = json_array();
    char *cursor = NULL;
    *pages = 0;
    do {
        struct http_res r;
        const char *path = cursor ? fmt("/api/v1/audit/events?%s&cursor=%s", query, qesc(cursor))
                                  : fmt("/api/v1/audit/events?%s", query);
        ck_assert_int_eq(call(aud, "GET", path, NULL, NULL, NULL, &r), 200);
        size_t i;
        json_t *ev;
        json_array_foreach(json_object_get(r.json, "items"), i, ev)
        {
            json_array_append_new(
                seen, json_pack("[O, O]", json_object_get(ev, "id"), json_object_get(ev, "ts")));
        }
        free(cursor);
        const char *next = jstr(r.json, "next_cursor");
        cursor = next ? strdup(next) : NULL;
        (*pages)++;
        ck_assert_int_lt(*pages, 10000);
        http_res_free(&r);
    } while (cursor);
    return seen;
}

static long long id_at(json_t *seen, size_t i)
{
    return json_integer_value(json_array_get(json_array_get(seen, i), 0));
}

START_TEST(keyset_pagination_visits_every_event_once)
{
    /* the whole log, 7 a page; each page adds an event, but newer than the walk's start */
    int pages;
    json_t *seen = walk("limit=7", &pages);
    ck_assert_int_gt(json_array_size(seen), 7);
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%lld", id_at(seen, 0));
    const char *p[2] = {json_string_value(json_array_get(json_array_get(seen, 0), 1)), idbuf};
    PGresult *q = harness_sql(harness_srv.owner_url,
                              "SELECT id FROM audit_log WHERE (ts, id) <= ($1::timestamptz,"
                              " $2::bigint) ORDER BY ts DESC, id DESC",
                              2, p);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(PQntuples(q), (int)json_array_size(seen));
    for (int i = 0; i < PQntuples(q); i++)
        ck_assert_int_eq(strtoll(PQgetvalue(q, i, 0), NULL, 10), id_at(seen, (size_t)i));
    ck_assert_int_eq(pages, (PQntuples(q) + 6) / 7);
    PQclear(q);
    json_decref(seen);

    /* a filtered walk, 2 a page, equals the same search in one page, without repeats */
    for (int k = 0; k < 5; k++)
        free(call_rid(NULL, "GET", "/api/v1/me", NULL, "10.73.0.1", 401));
    const char *f = "source_ip=10.73.0.1";
    seen = walk(fmt("%s&limit=2", f), &pages);
    json_t *all = events(fmt("%s&limit=1000", f));
    ck_assert_int_eq(json_array_size(all), 5);
    ck_assert_int_eq(json_array_size(seen), 5);
    ck_assert_int_eq(pages, 3);
    for (size_t i = 0; i < json_array_size(all); i++) {
        ck_assert_int_eq(id_at(seen, i),
                         json_integer_value(json_object_get(json_array_get(all, i), "id")));
        for (size_t j = 0; j < i; j++)
            ck_assert_int_ne(id_at(seen, i), id_at(seen, j));
    }
    json_decref(seen);
    json_decref(all);
}
END_TEST

START_TEST(bad_search_arguments_are_400_naming_the_field)
{
    const char *e = "/api/v1/audit/events";
    expect_400(fmt("%s?from=yesterday", e), "from");
    expect_400(fmt("%s?from=2026-02-30T00:00:00Z", e), "from");
    expect_400(fmt("%s?to=2026-01-01", e), "to");
    expect_400(fmt("%s?to=2026-01-01T00:00:00", e), "to"); /* no zone */
    expect_400(fmt("%s?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", e), "to");
    expect_400(fmt("%s?from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", e), "to");
    expect_400(fmt("%s?outcome=maybe", e), "outcome");
    expect_400(fmt("%s?source_ip=nonsense", e), "source_ip");
    expect_400(fmt("%s?source_ip=%s", e, qesc("10.0.0.0/33")), "source_ip");
    expect_400(fmt("%s?source_ip=%s", e, qesc("::1/129")), "source_ip");
    expect_400(fmt("%s?limit=0", e), "limit");
    expect_400(fmt("%s?limit=1001", e), "limit");
    expect_400(fmt("%s?limit=ten", e), "limit");
    expect_400(fmt("%s?cursor=garbage", e), "cursor");
    expect_400(fmt("%s?cursor=%s", e, "MjAyNnx4"), "cursor"); /* "2026|x" */
    expect_400(fmt("%s?colour=red", e), "colour");
    char q[202];
    memset(q, 'q', 201);
    q[201] = '\0';
    expect_400(fmt("%s?q=%s", e, q), "q");
    struct http_res r; /* 200 characters are fine */
    ck_assert_int_eq(call(aud, "GET", fmt("%s?q=%s", e, q + 1), NULL, NULL, NULL, &r), 200);
    http_res_free(&r);
    /* each with the catalog's code and the params its text is made of */
    static const char *const coded[][4] = {
        {"q=%s", "validation.text", "max", "200"},
        {"outcome=maybe", "validation.one_of", "allowed", "success, denied, error"},
        {"source_ip=nonsense", "audit.source_ip", "field", "source_ip"},
        {"from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "validation.after_from", "field",
         "to"},
        {"cursor=garbage", "validation.cursor", "field", "cursor"},
    };
    for (size_t i = 0; i < sizeof coded / sizeof coded[0]; i++) {
        const char *path = i == 0 ? fmt("%s?q=%s", e, q) : fmt("%s?%s", e, coded[i][0]);
        ck_assert_int_eq(call(aud, "GET", path, NULL, NULL, NULL, &r), 400);
        ck_assert_msg(audittest_str_is(jstr(r.json, "code"), coded[i][1]), "%s: %s", path, r.body);
        const json_t *v = json_object_get(json_object_get(r.json, "params"), coded[i][2]);
        char num[32];
        const char *got = json_string_value(v);
        if (json_is_integer(v)) {
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            got = num;
        }
        ck_assert_msg(audittest_str_is(got, coded[i][3]), "%s: %s", path, r.body);
        http_res_free(&r);
    }
}
END_TEST

/* Time windows compare whole instants: fractions count, and the epoch is a time too. */
START_TEST(time_windows_are_compared_exactly)
{
    char errs[2048] = "";
    const char *e = "/api/v1/audit/events";
    check_get(fmt("%s?from=%s&to=%s", e, qesc("2030-01-01T00:00:00.100Z"),
                  qesc("2030-01-01T00:00:00.900Z")),
              "to", 200, errs, sizeof errs);
    check_get(fmt("%s?from=%s&to=%s", e, qesc("2030-01-01T00:00:00.900Z"),
                  qesc("2030-01-01T00:00:00.100Z")),
              "to", 400, errs, sizeof errs);
    check_get(fmt("%s?from=1970-01-01T00:00:00Z&to=1970-01-01T00:00:00Z", e), "to", 400, errs,
              sizeof errs);
    ck_assert_msg(errs[0] == '\0', "time windows judged wrongly:%s", errs);
}
END_TEST

/* What the checks of filters and cursors let through reaches PostgreSQL: an input it refuses
 * must be a 400 naming the argument, not the database's anonymous "invalid request". An offset
 * up to 23:59 is RFC 3339: taken (200) or refused by name. */
START_TEST(filters_and_cursors_are_checked_before_the_database)
{
    char errs[4096] = "";
    static const char *const nets[] = {"10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/ 8", "::1/-5"};
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++)
        check_get(fmt("/api/v1/audit/events?source_ip=%s", qesc(nets[i])), "source_ip", 400, errs,
                  sizeof errs);
    check_get(fmt("/api/v1/audit/events?to=%s", qesc("2026-01-01T00:00:00-23:59")), "to", 0, errs,
              sizeof errs);
    check_get(fmt("/api/v1/audit/commands?from=%s", qesc("2026-01-01T00:00:00+20:00")), "from", 0,
              errs, sizeof errs);
    /* cursors of the right shape that no server issued */
    static const char *const forged[][2] = {
        {"events", "2026|5"},
        {"commands", "|5"},
        {"events", "2026-01-01 00:00:00+00|99999999999999999999"},
        {"checkpoints", "99999999999999999999"}};
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        char enc[128];
        crypto_b64url_encode((const unsigned char *)forged[i][1], strlen(forged[i][1]), enc,
                             sizeof enc);
        check_get(fmt("/api/v1/audit/%s?cursor=%s", forged[i][0], enc), "cursor", 400, errs,
                  sizeof errs);
    }
    ck_assert_msg(errs[0] == '\0', "refused by the database, not by the check:%s", errs);
}
END_TEST

/* ---- refusals and audited reads --------------------------------------------------- */

/* The denied event of request rid (action) as the auditor finds it: status, source. */
static void expect_denied(const char *action, const char *rid, long status, const char *ip,
                          const char *user)
{
    json_t *ev = wait_event(fmt("action=%s&outcome=denied&limit=1000", action), rid, false);
    ck_assert_str_eq(jstr(ev, "outcome"), "denied");
    ck_assert_int_eq(json_integer_value(json_object_get(ev, "status")), status);
    ck_assert_str_eq(jstr(ev, "source_ip"), ip);
    const char *who = jstr(json_object_get(ev, "actor"), "user");
    if (user)
        ck_assert_msg(audittest_str_is(who, user), "%s: actor %s, expected %s", rid, who, user);
    json_decref(ev);
}

START_TEST(refusals_are_findable_by_their_request_id)
{
    make_tenant("rt");
    make_user("plain", "plain-password-1", NULL);
    make_member("rt", "plain", "member");
    char *pl = login("plain", "plain-password-1");
    ck_assert_ptr_nonnull(pl);
    char *scoped = make_token(pl, "[\"jobs:read\"]", NULL);
    char *rid;

    rid = call_rid(NULL, "GET", "/api/v1/me", NULL, "10.72.0.1", 401); /* no credentials */
    expect_denied("auth.me", rid, 401, "10.72.0.1", NULL);
    free(rid);
    rid = call_rid("not-a-token", "GET", "/api/v1/tenants", NULL, "10.72.0.2", 401);
    expect_denied("tenant.list", rid, 401, "10.72.0.2", NULL);
    free(rid);
    rid = call_rid("aidc_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "GET", "/api/v1/me", NULL,
                   "10.72.0.3", 401); /* well-formed, unknown */
    expect_denied("auth.me", rid, 401, "10.72.0.3", NULL);
    free(rid);
    rid = call_rid(pl, "POST", "/api/v1/tenants", "{\"slug\":\"zz\",\"name\":\"x\"}", "10.72.0.4",
                   403); /* no global role */
    expect_denied("tenant.create", rid, 403, "10.72.0.4", "plain");
    free(rid);
    rid = call_rid(pl, "POST", "/api/v1/tenants/rt/projects", "{\"slug\":\"pp\",\"name\":\"x\"}",
                   "10.72.0.5", 403); /* member, admin route */
    expect_denied("project.create", rid, 403, "10.72.0.5", "plain");
    free(rid);
    rid = call_rid(scoped, "POST", "/api/v1/tokens", "{\"name\":\"x\",\"scopes\":[\"jobs:read\"]}",
                   "10.72.0.6", 403); /* token without the admin scope */
    expect_denied("token.create", rid, 403, "10.72.0.6", "plain");
    free(rid);
    /* a token never exceeds its creator's roles: a member gets no admin token */
    rid = call_rid(pl, "POST", "/api/v1/tokens", "{\"name\":\"x\",\"scopes\":[\"admin\"]}",
                   "10.72.0.9", 403); /* refused by the handler */
    expect_denied("token.create", rid, 403, "10.72.0.9", "plain");
    free(rid);
    rid = call_rid(NULL, "POST", "/api/v1/auth/login",
                   "{\"username\":\"plain\",\"password\":\"wrong-password-1\"}", "10.72.0.7", 401);
    expect_denied("auth.login", rid, 401, "10.72.0.7", NULL);
    json_t *ev = wait_event("action=auth.login&outcome=denied&limit=1000", rid, false);
    ck_assert_str_eq(jstr(json_object_get(ev, "details"), "username"), "plain");
    char *text = json_dumps(ev, 0);
    ck_assert_ptr_null(strstr(text, "wrong-password-1"));
    free(text);
    json_decref(ev);
    free(rid);
    rid = call_rid(NULL, "POST", "/api/v1/auth/login",
                   "{\"username\":\"no-such-user\",\"password\":\"whatever-1\"}", "10.72.0.8", 401);
    expect_denied("auth.login", rid, 401, "10.72.0.8", NULL);
    free(rid);
    free(scoped);
    free(pl);
}
END_TEST

/* The audit event of the auditor's request rid (action), with its details. */
static json_t *read_event(const char *action, const char *rid)
{
    return wait_event(fmt("action=%s&actor=" AUD_USER "&limit=1000", action), rid, false);
}

START_TEST(reading_the_audit_log_is_audited)
{
    struct http_res r;
    ck_assert_int_eq(call(aud, "GET", "/api/v1/audit/events?actor=admin&outcome=success&limit=3",
                          NULL, NULL, NULL, &r),
                     200);
    char *rid = http_header(&r, "X-Request-Id");
    http_res_free(&r);
    json_t *ev = read_event("audit.search", rid);
    json_t *d = json_object_get(ev, "details");
    ck_assert_str_eq(jstr(d, "actor"), ADMIN_USER);
    ck_assert_str_eq(jstr(d, "outcome"), "success");
    ck_assert_str_eq(jstr(d, "limit"), "3");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "returned")), 3);
    ck_assert_str_eq(jstr(ev, "outcome"), "success");
    json_decref(ev);
    free(rid);

    audittest_export(aud, "?action=auth.login", &r);
    rid = http_header(&r, "X-Request-Id");
    http_res_free(&r);
    ev = read_event("audit.export", rid);
    ck_assert_str_eq(jstr(json_object_get(ev, "details"), "format"), "ndjson");
    ck_assert_str_eq(jstr(json_object_get(ev, "details"), "action"), "auth.login");
    json_decref(ev);
    free(rid);

    ck_assert_int_eq(call(aud, "GET", "/api/v1/audit/verify", NULL, NULL, NULL, &r), 200);
    rid = http_header(&r, "X-Request-Id");
    http_res_free(&r);
    ev = read_event("audit.verify", rid);
    ck_assert(json_is_true(json_object_get(json_object_get(ev, "details"), "ok")));
    json_decref(ev);
    free(rid);

    ck_assert_int_eq(call(aud, "GET", "/api/v1/audit/commands?host=h1", NULL, NULL, NULL, &r), 200);
    rid = http_header(&r, "X-Request-Id");
    http_res_free(&r);
    ev = read_event("audit.commands", rid);
    ck_assert_str_eq(jstr(json_object_get(ev, "details"), "host"), "h1");
    json_decref(ev);
    free(rid);
}
END_TEST

/* ---- an auditor reads everything and changes nothing ------------------------------ */

/* pattern with its {params} filled with names that exist (or harmless ones). */
static const char *fill(const char *pattern)
{
    static char out[512];
    size_t o = 0;
    for (const char *p = pattern; *p && o + 1 < sizeof out;) {
        const char *end = *p == '{' ? strchr(p, '}') : NULL;
        if (!end) {
            out[o++] = *p++;
            continue;
        }
        const char *v = "00000000-0000-4000-8000-000000000001"; /* {id} */
        if (strncmp(p, "{tenant}", 8) == 0)
            v = "ro";
        else if (strncmp(p, "{project}", 9) == 0)
            v = "ro-p";
        else if (strncmp(p, "{username}", 10) == 0)
            v = "ro-victim";
        else if (strncmp(p, "{name}", 6) == 0)
            v = "nocluster";
        o += (size_t)snprintf(out + o, sizeof out - o, "%s", v);
        p = end + 1;
    }
    out[o < sizeof out ? o : sizeof out - 1] = '\0';
    return out;
}

START_TEST(an_auditor_reads_everything_and_changes_nothing)
{
    make_tenant("ro");
    make_project("ro", "ro-p");
    make_user("ro-victim", "victim-password-1", NULL);
    static const char *const reads[] = {"/api/v1/audit/events",
                                        "/api/v1/audit/events/export",
                                        "/api/v1/audit/events/export?format=csv",
                                        "/api/v1/audit/verify",
                                        "/api/v1/audit/checkpoints",
                                        "/api/v1/audit/public-key",
                                        "/api/v1/audit/commands",
                                        "/api/v1/users",
                                        "/api/v1/tenants/ro"};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        struct http_res r;
        long st = call(aud, "GET", reads[i], NULL, NULL, NULL, &r);
        ck_assert_msg(st == 200, "auditor GET %s: %ld %s", reads[i], st, r.body);
        http_res_free(&r);
    }
    /* every other read answers something, never a server error */
    for (size_t i = 0; i < routes_count; i++) {
        if (strcmp(routes[i].method, "GET") != 0 || (routes[i].flags & RF_PUBLIC))
            continue;
        struct http_res r;
        long st = call(aud, "GET", fill(routes[i].pattern), NULL, NULL, NULL, &r);
        ck_assert_msg(st >= 200 && st < 500 && st != 401, "auditor GET %s: %ld %s",
                      fill(routes[i].pattern), st, r.body);
        http_res_free(&r);
    }
    json_t *rids = json_array();
    int walked = 0;
    for (size_t i = 0; i < routes_count; i++) {
        const struct route *rt = &routes[i];
        /* reads; and login, logout and one's own tokens, which every user has */
        if (strcmp(rt->method, "GET") == 0 || (rt->flags & (RF_PUBLIC | RF_ANY_USER)))
            continue;
        const char *path = fill(rt->pattern);
        struct http_res r;
        long st = call(aud, rt->method, path, "{}", "10.74.0.1", NULL, &r);
        ck_assert_msg(st == 403, "auditor %s %s answered %ld (expected 403): %s", rt->method, path,
                      st, r.body);
        char *ct = http_header(&r, "Content-Type");
        ck_assert_msg(ct && strstr(ct, "application/problem+json"), "%s %s", rt->method, path);
        free(ct);
        char *rid = http_header(&r, "X-Request-Id");
        json_array_append_new(rids, json_pack("{s:s, s:s}", "rid", rid, "action", rt->action));
        free(rid);
        http_res_free(&r);
        walked++;
    }
    ck_assert_int_ge(walked, 15);
    /* every one of those refusals is in the log */
    json_t *denied = events("actor=" AUD_USER "&outcome=denied&limit=1000");
    size_t i;
    json_t *w;
    json_array_foreach(rids, i, w)
    {
        json_t *ev = find(denied, "request_id", jstr(w, "rid"));
        ck_assert_msg(ev != NULL, "the refusal of %s (%s) is not in the log", jstr(w, "action"),
                      jstr(w, "rid"));
        ck_assert_str_eq(jstr(ev, "action"), jstr(w, "action"));
        ck_assert_int_eq(json_integer_value(json_object_get(ev, "status")), 403);
        ck_assert_str_eq(jstr(ev, "source_ip"), "10.74.0.1");
    }
    json_decref(denied);
    json_decref(rids);
    /* and nothing changed */
    struct http_res r;
    ck_assert_int_eq(
        reqj("GET", "/api/v1/tenants/ro/projects/ro-p", harness_srv.admin_token, NULL, &r), 200);
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/users/ro-victim", harness_srv.admin_token, NULL, &r),
                     200);
    ck_assert(json_is_false(json_object_get(r.json, "disabled")));
    http_res_free(&r);
}
END_TEST

/* ---- verification, checkpoints, the key -------------------------------------------- */

START_TEST(verify_checkpoints_and_public_key)
{
    make_tenant("vf");
    char *rid = call_rid(harness_srv.admin_token, "POST", "/api/v1/tenants/vf/projects",
                         "{\"slug\":\"vf-p\",\"name\":\"Verify me\"}", NULL, 201);
    json_t *ev = wait_event("action=project.create&tenant=vf", rid, true);
    long long seq = json_integer_value(json_object_get(ev, "seq"));
    ck_assert_int_gt(seq, 0);
    ck_assert_uint_eq(strlen(jstr(ev, "hash")), 64);
    audittest_wait_checkpoint(aud, seq, WAIT_S);
    json_decref(ev);
    free(rid);

    struct http_res r;
    ck_assert_int_eq(call(aud, "GET", "/api/v1/audit/verify", NULL, NULL, NULL, &r), 200);
    ck_assert_msg(json_is_true(json_object_get(r.json, "ok")), "%s", r.body);
    ck_assert_int_ge(json_integer_value(json_object_get(r.json, "verified")), seq);
    ck_assert_int_ge(json_integer_value(json_object_get(r.json, "checkpoints")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "unsigned_checkpoints")), 0);
    http_res_free(&r);
    ck_assert_int_eq(call(aud, "GET",
                          fmt("/api/v1/audit/verify?from=%s", qesc("2000-01-01T00:00:00Z")), NULL,
                          NULL, NULL, &r),
                     200);
    ck_assert(json_is_true(json_object_get(r.json, "ok")));
    http_res_free(&r);
    expect_400("/api/v1/audit/verify?from=soon", "from");
    expect_400("/api/v1/audit/verify?actor=admin", "actor");

    struct http_res k;
    ck_assert_int_eq(call(aud, "GET", "/api/v1/audit/public-key", NULL, NULL, NULL, &k), 200);
    ck_assert_str_eq(jstr(k.json, "alg"), "ed25519");
    ck_assert_ptr_nonnull(strstr(jstr(k.json, "public_key_pem"), "-----BEGIN PUBLIC KEY-----"));
    ck_assert_int_eq(call(aud, "GET", "/api/v1/audit/checkpoints?limit=1", NULL, NULL, NULL, &r),
                     200);
    json_t *cp = json_array_get(json_object_get(r.json, "items"), 0);
    ck_assert_str_eq(jstr(cp, "alg"), "ed25519");
    ck_assert_str_eq(jstr(cp, "key_id"), jstr(k.json, "key_id"));
    ck_assert_uint_eq(strlen(jstr(cp, "signature")), 128);
    ck_assert_uint_eq(strlen(jstr(cp, "head_hash")), 64);
    ck_assert_int_ge(json_integer_value(json_object_get(cp, "seq")), seq);
    long long newest = json_integer_value(json_object_get(cp, "id"));
    const char *next = jstr(r.json, "next_cursor");
    if (next) { /* the next page goes on below */
        struct http_res r2;
        ck_assert_int_eq(call(aud, "GET", fmt("/api/v1/audit/checkpoints?limit=1&cursor=%s", next),
                              NULL, NULL, NULL, &r2),
                         200);
        json_t *cp2 = json_array_get(json_object_get(r2.json, "items"), 0);
        ck_assert_int_lt(json_integer_value(json_object_get(cp2, "id")), newest);
        ck_assert_str_eq(jstr(cp2, "alg"), "ed25519");
        http_res_free(&r2);
    }
    http_res_free(&r);
    http_res_free(&k);
    expect_400("/api/v1/audit/checkpoints?cursor=garbage", "cursor");
    expect_400("/api/v1/audit/checkpoints?limit=0", "limit");
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("audit_api");
    TCase *tc = tcase_create("audit_api");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, search_filters);
    tcase_add_test(tc, keyset_pagination_visits_every_event_once);
    tcase_add_test(tc, bad_search_arguments_are_400_naming_the_field);
    tcase_add_test(tc, time_windows_are_compared_exactly);
    tcase_add_test(tc, filters_and_cursors_are_checked_before_the_database);
    tcase_add_test(tc, refusals_are_findable_by_their_request_id);
    tcase_add_test(tc, reading_the_audit_log_is_audited);
    tcase_add_test(tc, an_auditor_reads_everything_and_changes_nothing);
    tcase_add_test(tc, verify_checkpoints_and_public_key);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
