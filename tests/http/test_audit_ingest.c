/*
 * test_audit_ingest.c - what enters the audit log from outside and what leaves
 * it, against the real aidcd and PostgreSQL. In: node records through
 * POST /api/v1/audit/commands as NDJSON and as {"commands": [...]}, by a
 * platform admin and by a token with only the audit:ingest scope (which can
 * read nothing); resends counted as duplicates and stored once; a bad record
 * refusing the whole batch with the record named ("line 2", "commands[1]");
 * the record, byte and media-type limits; GET /api/v1/audit/commands with its
 * filters and pages. Out: the NDJSON export, which `aidcd audit verify-export`
 * accepts and refuses once edited or truncated; the CSV export, where node
 * records and user agents are outside text that must not become spreadsheet
 * formulas; and passwords and token secrets, in no export and no log line.
 * Searching, refusals, audited reads and the auditor's rights are in
 * test_audit_api.c.
 *
 * The server takes at most 5 records and 4096 bytes a request here, so the
 * limits are cheap to reach; it chains events at once and signs every second
 * with a key made by `aidcd audit keygen`.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AUD_USER "aud"
#define AUD_PW   "auditor-password-1"
#define CMDS     "/api/v1/audit/commands"
#define WAIT_S   30.0

static char key_dir[64], key_path[300], pub_path[300];
static char aud[1024];    /* JWT of the auditor */
static char *ingest_only; /* the admin's API token with only audit:ingest */

static void setup(void)
{
    static char env_key[700];
    audittest_key("auditingest", key_dir, sizeof key_dir, key_path, sizeof key_path, pub_path,
                  sizeof pub_path, env_key, sizeof env_key);
    const char *env[] = {env_key,
                         "AIDC_AUDIT_SEAL_GRACE_MS=0",
                         "AIDC_AUDIT_CHECKPOINT_SECONDS=1",
                         "AIDC_AUDIT_INGEST_MAX_RECORDS=5",
                         "AIDC_AUDIT_INGEST_MAX_BYTES=4096",
                         NULL};
    harness_setup("auditingest", env);
    audittest_auditor(AUD_USER, AUD_PW, aud, sizeof aud);
    ingest_only = make_token(harness_srv.admin_token, "[\"audit:ingest\"]", NULL);
}

static void teardown(void)
{
    free(ingest_only);
    harness_teardown();
    audittest_key_remove(key_dir);
}

/* ---- helpers ------------------------------------------------------------------------ */

/* Run a shell command; its exit status, its output (stdout and stderr) into out. */
static int run(const char *cmd, char *out, size_t n)
{
    FILE *p = popen(fmt("%s 2>&1", cmd), "r");
    ck_assert_ptr_nonnull(p);
    size_t len = fread(out, 1, n - 1, p);
    out[len] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* RFC 3339 (UTC) of now + offset seconds. */
static const char *ts_at(long offset)
{
    static char bufs[8][32];
    static int next;
    char *b = bufs[next++ % 8];
    time_t t = time(NULL) + offset;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(b, sizeof bufs[0], "%Y-%m-%dT%H:%M:%SZ", &tm);
    return b;
}

/* A valid record (a new reference): host, record_id, command, ran a minute ago. */
static json_t *rec(const char *host, const char *id, const char *command)
{
    return json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:i, s:s}", "ts", ts_at(-60), "host",
                     host, "user", "alice", "uid", 1000, "session", "ses:7", "cwd", "/home/alice",
                     "command", command, "exit_code", 0, "record_id", id);
}

/* rec(...) as one line of JSON text (malloc'd). */
static char *rec_text(const char *host, const char *id, const char *command)
{
    json_t *r = rec(host, id, command);
    char *text = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    return text;
}

/* recs (stolen) as NDJSON lines, or as {"commands": recs}; malloc'd. */
static char *body_of(json_t *recs, bool ndjson)
{
    char *out;
    if (!ndjson) {
        json_t *doc = json_pack("{s:o}", "commands", recs);
        out = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        return out;
    }
    size_t cap = 1, len = 0;
    out = calloc(1, 1);
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        char *line = json_dumps(r, JSON_COMPACT | JSON_ENCODE_ANY);
        cap += strlen(line) + 1;
        out = realloc(out, cap);
        len += (size_t)sprintf(out + len, "%s\n", line);
        free(line);
    }
    json_decref(recs);
    return out;
}

/* POST body to /audit/commands as tok with content type ct; the answer in *out. */
static long post(const char *tok, const char *ct, const char *body, size_t len,
                 struct http_res *out)
{
    return http_raw(&harness_srv, "POST", CMDS, tok, ct, body, len, NULL, out);
}

/* POST recs (stolen) in one form; expect 202 with accepted and duplicates. */
static void ingest(const char *tok, json_t *recs, bool ndjson, long accepted, long duplicates)
{
    char *b = body_of(recs, ndjson);
    struct http_res r;
    long st = post(tok, ndjson ? "application/x-ndjson" : "application/json", b, strlen(b), &r);
    ck_assert_msg(st == 202, "ingest answered %ld: %s (body %s)", st, r.body, b);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "accepted")), accepted);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "duplicates")), duplicates);
    http_res_free(&r);
    free(b);
}

/* The items of GET /audit/commands?query as the auditor (a new reference). */
static json_t *commands(const char *query)
{
    return get_items(fmt(CMDS "?%s", query), aud);
}

/* How many items have field == value. */
static int count(json_t *items, const char *field, const char *value)
{
    int n = 0;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        n += audittest_str_is(jstr(it, field), value);
    }
    return n;
}

/* The answer must be a 400 problem with an error for field whose message holds needle. */
static void expect_named(const struct http_res *r, const char *field, const char *needle,
                         const char *what)
{
    ck_assert_msg(r->status == 400, "%s: %ld %s", what, r->status, r->body);
    char *ct = http_header(r, "Content-Type");
    ck_assert_msg(ct && strstr(ct, "application/problem+json"), "%s: %s", what, ct);
    free(ct);
    bool named = false;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r->json, "errors"), i, e)
    {
        named |= audittest_str_is(jstr(e, "field"), field) &&
                 (!needle || strstr(jstr(e, "message"), needle));
    }
    ck_assert_msg(named, "%s: the 400 does not name %s (%s): %s", what, field, needle ? needle : "",
                  r->body);
}

/* ---- ingest ------------------------------------------------------------------------- */

START_TEST(batches_are_accepted_and_resends_stored_once)
{
    ingest(harness_srv.admin_token,
           json_pack("[o, o, o]", rec("n1", "n1-1", "nvidia-smi"), rec("n1", "n1-2", "ls -la"),
                     rec("n1", "n1-3", "make")),
           true, 3, 0);
    ingest(harness_srv.admin_token,
           json_pack("[o, o, o]", rec("n1", "n1-1", "nvidia-smi"), rec("n1", "n1-2", "ls -la"),
                     rec("n1", "n1-3", "make")),
           true, 0, 3); /* the same lines again: an agent's retry */
    ingest(ingest_only, json_pack("[o, o]", rec("n1", "n1-4", "top"), rec("n1", "n1-5", "df -h")),
           false, 2, 0);
    ingest(ingest_only, json_pack("[o, o]", rec("n1", "n1-4", "top"), rec("n1", "n1-5", "df -h")),
           false, 0, 2);
    /* a record id is the node's own: another host may use it too */
    ingest(ingest_only, json_pack("[o]", rec("n1b", "n1-1", "nvidia-smi")), true, 1, 0);
    /* one new, one resent, a blank line and CRLF line ends */
    char *a = rec_text("n1", "n1-5", "df -h");
    char *b = rec_text("n1", "n1-6", "uptime");
    const char *body = fmt("%s\r\n\r\n%s\r\n", a, b);
    struct http_res r;
    ck_assert_int_eq(post(ingest_only, "application/x-ndjson", body, strlen(body), &r), 202);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "accepted")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "duplicates")), 1);
    http_res_free(&r);
    free(a);
    free(b);

    /* each record once, as the node sent it */
    json_t *items = commands("host=n1&limit=1000");
    ck_assert_int_eq(json_array_size(items), 6);
    for (int i = 1; i <= 6; i++)
        ck_assert_int_eq(count(items, "record_id", fmt("n1-%d", i)), 1);
    json_t *one = json_array_get(items, 0);
    ck_assert_str_eq(jstr(one, "host"), "n1");
    ck_assert_str_eq(jstr(one, "user"), "alice");
    ck_assert_str_eq(jstr(one, "cwd"), "/home/alice");
    ck_assert_str_eq(jstr(one, "kind"), "command");
    ck_assert_str_eq(jstr(one, "ingested_by"), ADMIN_USER);
    ck_assert_int_eq(json_integer_value(json_object_get(one, "exit_code")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(one, "uid")), 1000);
    ck_assert_ptr_nonnull(jstr(one, "ran_at"));
    json_decref(items);

    /* the token delivers and reads nothing */
    ck_assert_int_eq(req("GET", "/api/v1/audit/events", ingest_only, NULL), 403);
    ck_assert_int_eq(req("GET", CMDS, ingest_only, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/audit/events/export", ingest_only, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/audit/verify", ingest_only, NULL), 403);
    /* not even what any token of the user may read: the directory, clusters, itself */
    ck_assert_int_eq(req("GET", "/api/v1/me", ingest_only, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/tenants", ingest_only, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/clusters", ingest_only, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/tokens", ingest_only, NULL), 403);
    ck_assert_int_eq(
        req("POST", "/api/v1/tenants", ingest_only, "{\"slug\":\"tt\",\"name\":\"x\"}"), 403);
    /* nor can an auditor deliver */
    const char *one_line = "{\"ts\":\"2026-01-01T00:00:00Z\",\"host\":\"x\",\"command\":\"x\"}";
    ck_assert_int_eq(post(aud, "application/x-ndjson", one_line, strlen(one_line), &r), 403);
    http_res_free(&r);
}
END_TEST

/* A batch of a valid record and a bad one (changed by set, or without key drop). */
static void bad_batch(const char *set, const char *drop, const char *needle)
{
    for (int ndjson = 0; ndjson < 2; ndjson++) {
        json_t *bad = rec("bad-host", "bad-2", "rm -rf /tmp/x");
        if (set) {
            json_t *patch = json_loads(set, 0, NULL);
            ck_assert_ptr_nonnull(patch);
            json_object_update(bad, patch);
            json_decref(patch);
        }
        if (drop)
            json_object_del(bad, drop);
        char *b = body_of(json_pack("[o, o]", rec("bad-host", "bad-1", "true"), bad), ndjson);
        struct http_res r;
        post(harness_srv.admin_token, ndjson ? "application/x-ndjson" : "application/json", b,
             strlen(b), &r);
        expect_named(
            &r, ndjson ? "line 2" : "commands[1]", needle,
            fmt("%s %s%s", ndjson ? "NDJSON" : "JSON", set ? set : "without ", drop ? drop : ""));
        http_res_free(&r);
        free(b);
    }
}

START_TEST(a_bad_record_refuses_the_batch_and_is_named)
{
    bad_batch("{\"colour\":\"red\"}", NULL, "colour");
    bad_batch(NULL, "host", "host");
    bad_batch(NULL, "command", "command");
    bad_batch(NULL, "ts", "ts");
    bad_batch(fmt("{\"ts\":\"%s\"}", ts_at(7200)), NULL, "ahead");
    bad_batch("{\"ts\":\"yesterday\"}", NULL, "ts");
    bad_batch("{\"ts\":\"2000-01-01T00:00:00Z\"}", NULL, "retention");
    bad_batch("{\"job_id\":\"not-a-uuid\"}", NULL, "job_id");
    bad_batch("{\"job_id\":42}", NULL, "job_id");
    bad_batch("{\"kind\":\"weird\"}", NULL, "kind");
    bad_batch("{\"exit_code\":\"0\"}", NULL, "exit_code");
    bad_batch("{\"exit_code\":1000}", NULL, "exit_code");
    bad_batch("{\"uid\":-1}", NULL, "uid");
    bad_batch("{\"host\":\"\"}", NULL, "host");
    bad_batch("{\"command\":7}", NULL, "command");

    /* NDJSON: a line that is not JSON, and one that is not an object */
    char *good = rec_text("bad-host", "bad-1", "true");
    const char *lines[] = {"{\"ts\": nope}", "[1,2]"};
    for (int i = 0; i < 2; i++) {
        const char *body = fmt("%s\n%s\n", good, lines[i]);
        struct http_res r;
        post(harness_srv.admin_token, "application/x-ndjson", body, strlen(body), &r);
        expect_named(&r, "line 2", NULL, lines[i]);
        http_res_free(&r);
    }
    free(good);
    /* the refusal's code and params: the record is the field, its own field "name" */
    char *late = rec_text("bad-host", "bad-1", "true");
    json_t *bad = rec("bad-host", "bad-2", "true");
    json_object_set_new(bad, "ts", json_string("2000-01-01T00:00:00Z"));
    char *old = json_dumps(bad, JSON_COMPACT);
    json_decref(bad);
    const char *body = fmt("%s\n%s\n", late, old);
    struct http_res r;
    ck_assert_int_eq(post(harness_srv.admin_token, "application/x-ndjson", body, strlen(body), &r),
                     400);
    ck_assert_str_eq(jstr(r.json, "code"), "audit.record_time_expired");
    const json_t *params = json_object_get(r.json, "params");
    ck_assert_str_eq(jstr(params, "field"), "line 2");
    ck_assert_str_eq(jstr(params, "name"), "ts");
    const json_t *e = json_array_get(json_object_get(r.json, "errors"), 0);
    ck_assert_str_eq(jstr(e, "code"), "audit.record_time_expired");
    ck_assert_str_eq(jstr(e, "message"), "ts: is older than the audit retention period");
    http_res_free(&r);
    free(late);
    free(old);
    /* all or nothing: not even the good first records were stored */
    json_t *items = commands("host=bad-host");
    ck_assert_int_eq(json_array_size(items), 0);
    json_decref(items);
}
END_TEST

/* RFC 3339 allows any offset up to 23:59; one the time check lets through must be taken,
 * or refused as the record's fault - not by the database, naming nothing. */
START_TEST(a_far_zone_offset_is_taken_or_refused_as_the_records_fault)
{
    json_t *bad = rec("zone-host", "zone-1", "date");
    json_object_set_new(bad, "ts", json_string(fmt("%.19s+20:00", ts_at(20 * 3600))));
    char *b = body_of(json_pack("[o]", bad), true);
    struct http_res r;
    if (post(harness_srv.admin_token, "application/x-ndjson", b, strlen(b), &r) != 202)
        expect_named(&r, "line 1", "ts", "a ts with offset +20:00");
    http_res_free(&r);
    free(b);
}
END_TEST

START_TEST(limits_of_a_request)
{
    const char *adm = harness_srv.admin_token;
    struct http_res r;
    json_t *six = json_array();
    for (int i = 0; i < 6; i++)
        json_array_append_new(six, rec("lim", fmt("lim-%d", i), "echo"));
    char *nd = body_of(json_deep_copy(six), true), *js = body_of(six, false);
    /* the same refusal either way: NDJSON names the line past the limit */
    ck_assert_int_eq(post(adm, "application/x-ndjson", nd, strlen(nd), &r), 400);
    ck_assert_ptr_nonnull(strstr(r.body, "at most 5 records"));
    ck_assert_str_eq(jstr(r.json, "code"), "audit.records_too_many");
    ck_assert_str_eq(jstr(json_object_get(r.json, "params"), "field"), "line 6");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r.json, "params"), "max")),
                     5);
    http_res_free(&r);
    ck_assert_int_eq(post(adm, "application/json", js, strlen(js), &r), 400);
    ck_assert_ptr_nonnull(strstr(r.body, "at most 5 records"));
    ck_assert_str_eq(jstr(r.json, "code"), "audit.records_too_many");
    http_res_free(&r);
    free(nd);
    free(js);
    json_t *five = json_array();
    for (int i = 0; i < 5; i++)
        json_array_append_new(five, rec("lim", fmt("lim-%d", i), "echo"));
    ingest(adm, five, true, 5, 0);

    /* 4096 bytes at most: 413 however it is sent */
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *huge = body_of(json_pack("[o]", rec("lim", "lim-big", big)), true);
    ck_assert_int_eq(post(adm, "application/x-ndjson", huge, strlen(huge), &r), 413);
    http_res_free(&r);
    const char *chunked[] = {"Transfer-Encoding: chunked", NULL};
    ck_assert_int_eq(http_raw(&harness_srv, "POST", CMDS, adm, "application/x-ndjson", huge,
                              strlen(huge), chunked, &r),
                     413);
    http_res_free(&r);
    free(huge);

    /* media types and empty bodies */
    const char *one = "{\"ts\":\"2026-01-01T00:00:00Z\",\"host\":\"x\",\"command\":\"x\"}";
    ck_assert_int_eq(post(adm, "text/plain", one, strlen(one), &r), 415);
    http_res_free(&r);
    ck_assert_int_eq(post(adm, NULL, one, strlen(one), &r), 415);
    http_res_free(&r);
    ck_assert_int_eq(post(adm, "application/json", "", 0, &r), 400);
    http_res_free(&r);
    ck_assert_int_eq(post(adm, "application/x-ndjson", "", 0, &r), 400);
    http_res_free(&r);
    static const char *const empty[] = {"\n\n\r\n", "{\"commands\":[]}",
                                        "{\"commands\":[],\"extra\":1}", "[]", "{\"commands\":{}}"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        const char *ct = i == 0 ? "application/x-ndjson" : "application/json";
        long st = post(adm, ct, empty[i], strlen(empty[i]), &r);
        ck_assert_msg(st == 400, "%s answered %ld: %s", empty[i], st, r.body);
        http_res_free(&r);
    }
    json_t *items = commands("host=lim&limit=1000");
    ck_assert_int_eq(json_array_size(items), 5);
    json_decref(items);
}
END_TEST

/* ---- reading node records ------------------------------------------------------------ */

START_TEST(command_search_filters_and_pages)
{
    const char *job = "6f1c2b7e-0d7a-4c55-9a0e-3b8f2a1d9c44";
    json_t *a = rec("n2", "f-1", "python3 finetune --epochs 3");
    json_object_set_new(a, "job_id", json_string(job));
    json_t *b = rec("n2", "f-2", "module load cuda/12");
    json_object_set_new(b, "kind", json_string("module"));
    json_object_set_new(b, "user", json_string("bob"));
    json_t *c = rec("n2", "f-3", "docker pull registry/x:1");
    json_object_set_new(c, "kind", json_string("image_pull"));
    json_t *d = rec("n3", "f-4", "hostname");
    json_object_set_new(d, "ts", json_string(ts_at(-7200)));
    json_object_set_new(d, "exit_code", json_null());
    json_incref(d);
    ingest(harness_srv.admin_token, json_pack("[o, o, o, o]", a, b, c, d), true, 4, 0);

    json_t *it = commands("host=n3");
    ck_assert_int_eq(json_array_size(it), 1);
    ck_assert_str_eq(jstr(json_array_get(it, 0), "record_id"), "f-4");
    json_decref(it);
    it = commands("user=bob");
    ck_assert_int_eq(json_array_size(it), 1);
    ck_assert_str_eq(jstr(json_array_get(it, 0), "record_id"), "f-2");
    json_decref(it);
    it = commands("q=finetune");
    ck_assert_int_eq(json_array_size(it), 1);
    ck_assert_str_eq(jstr(json_array_get(it, 0), "record_id"), "f-1");
    json_decref(it);
    it = commands("kind=module");
    ck_assert_int_eq(json_array_size(it), 1);
    ck_assert_str_eq(jstr(json_array_get(it, 0), "kind"), "module");
    json_decref(it);
    it = commands("kind=image_pull&host=n2");
    ck_assert_int_eq(json_array_size(it), 1);
    ck_assert_str_eq(jstr(json_array_get(it, 0), "record_id"), "f-3");
    json_decref(it);
    it = commands(fmt("job_id=%s", job));
    ck_assert_int_eq(json_array_size(it), 1);
    ck_assert_str_eq(jstr(json_array_get(it, 0), "job_id"), job);
    json_decref(it);
    /* from and to bound when the record was written; when it ran is ran_at */
    it = commands(fmt("host=n3&from=%s&to=%s", ts_at(-60), ts_at(60)));
    ck_assert_int_eq(json_array_size(it), 1);
    ck_assert_str_eq(jstr(json_array_get(it, 0), "ran_at"), jstr(d, "ts"));
    ck_assert(json_is_null(json_object_get(json_array_get(it, 0), "exit_code")));
    json_decref(it);
    it = commands(fmt("host=n3&from=%s", ts_at(3600)));
    ck_assert_int_eq(json_array_size(it), 0);
    json_decref(it);
    it = commands(fmt("host=n3&to=%s", ts_at(-3600)));
    ck_assert_int_eq(json_array_size(it), 0);
    json_decref(it);

    struct http_res r;
    static const char *const bad[][2] = {
        {"job_id=42", "job_id"},    {"kind=weird", "kind"}, {"host=n2&colour=red", "colour"},
        {"from=yesterday", "from"}, {"limit=0", "limit"},   {"cursor=garbage", "cursor"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        reqj("GET", fmt(CMDS "?%s", bad[i][0]), aud, NULL, &r);
        expect_named(&r, bad[i][1], NULL, bad[i][0]);
        http_res_free(&r);
    }

    /* n2's three records, one a page: newest first, each once */
    json_t *all = commands("host=n2&limit=1000");
    ck_assert_int_eq(json_array_size(all), 3);
    char *cursor = NULL;
    size_t seen = 0;
    do {
        const char *q = cursor ? fmt("host=n2&limit=1&cursor=%s", cursor) : "host=n2&limit=1";
        ck_assert_int_eq(reqj("GET", fmt(CMDS "?%s", q), aud, NULL, &r), 200);
        json_t *items = json_object_get(r.json, "items");
        ck_assert_int_eq(json_array_size(items), 1);
        ck_assert_int_lt(seen, 3);
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(items, 0), "id")),
                         json_integer_value(json_object_get(json_array_get(all, seen), "id")));
        seen++;
        free(cursor);
        cursor = jstr(r.json, "next_cursor") ? strdup(jstr(r.json, "next_cursor")) : NULL;
        http_res_free(&r);
    } while (cursor);
    ck_assert_int_eq(seen, 3);
    for (size_t i = 1; i < 3; i++)
        ck_assert_str_ge(jstr(json_array_get(all, i - 1), "ts"),
                         jstr(json_array_get(all, i), "ts"));
    json_decref(all);
    json_decref(d);
}
END_TEST

/* ---- the CSV export of outside text --------------------------------------------------- */

START_TEST(csv_export_quotes_and_defuses_formulas)
{
    /* outside text: user agents of refused requests, and a node's host name */
    static const char *const agents[] = {"=HYPERLINK(1)", "+1+1", "-2", "@SUM(A1)",
                                         "agent \"quoted\", with comma"};
    char *rids[5];
    struct http_res r;
    for (int i = 0; i < 5; i++) {
        const char *ua[] = {fmt("User-Agent: %s", agents[i]), NULL};
        ck_assert_int_eq(http_do(&harness_srv, "GET", "/api/v1/me", NULL, NULL, ua, &r), 401);
        rids[i] = http_header(&r, "X-Request-Id");
        http_res_free(&r);
    }
    ingest(harness_srv.admin_token,
           json_pack("[o]", rec("=cmd|' /C calc'!A0", "csv-1", "line one\nline \"two\", end")),
           true, 1, 0);

    ck_assert_int_eq(reqj("GET", "/api/v1/audit/events/export?format=csv", aud, NULL, &r), 200);
    char *ct = http_header(&r, "Content-Type");
    ck_assert_ptr_nonnull(strstr(ct, "text/csv"));
    free(ct);
    static const char header[] = "id,seq,ts,actor,actor_user_id,token_id,roles,tenant,tenant_id,"
                                 "source_ip,user_agent,request_id,action,resource_type,"
                                 "resource_id,outcome,status,details,record_id,prev_hash,hash\r\n";
    ck_assert_msg(strncmp(r.body, header, strlen(header)) == 0, "header: %.200s", r.body);
    json_t *rows = audittest_csv_parse(r.body);
    ck_assert_int_gt(json_array_size(rows), 7);
    int seen = 0, node = 0;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        ck_assert_msg(json_array_size(row) == 21, "record %zu has %zu cells", i,
                      json_array_size(row));
        for (size_t c = 0; c < 21; c++) {
            const char *v = json_string_value(json_array_get(row, c));
            ck_assert_msg(v[0] == '\0' || !strchr("=+-@", v[0]),
                          "record %zu cell %zu is a formula: %s", i, c, v);
        }
        for (int a = 0; a < 5; a++) {
            /* a random request id may start with '-': the export defuses it like any cell */
            char rid[96];
            snprintf(rid, sizeof rid, "%s%s", strchr("=+-@", rids[a][0]) ? "'" : "", rids[a]);
            if (!audittest_str_is(json_string_value(json_array_get(row, 11)), rid))
                continue;
            const char *ua = json_string_value(json_array_get(row, 10));
            const char *want = a < 4 ? fmt("'%s", agents[a]) : agents[a];
            ck_assert_msg(audittest_str_is(ua, want), "user agent cell %s, expected %s", ua, want);
            seen++;
        }
        if (audittest_str_is(json_string_value(json_array_get(row, 18)), "csv-1")) {
            node++;
            ck_assert_str_eq(json_string_value(json_array_get(row, 14)), "'=cmd|' /C calc'!A0");
            json_t *details = json_loads(json_string_value(json_array_get(row, 17)), 0, NULL);
            ck_assert_str_eq(jstr(details, "command"), "line one\nline \"two\", end");
            json_decref(details);
        }
    }
    if (seen != 5) /* say where a missing one is */
        for (int a = 0; a < 5; a++) {
            const char *p[1] = {rids[a]};
            fprintf(stderr, "refused request %s: %lld event(s) in the table\n", rids[a],
                    audittest_num(harness_srv.owner_url,
                                  "SELECT count(*) FROM audit_log WHERE request_id = $1", 1, p));
        }
    ck_assert_int_eq(seen, 5);
    ck_assert_int_eq(node, 1);
    ck_assert_ptr_nonnull(strstr(r.body, ",\"'=HYPERLINK(1)\","));
    ck_assert_ptr_nonnull(strstr(r.body, ",\"agent \"\"quoted\"\", with comma\","));
    json_decref(rows);
    http_res_free(&r);
    for (int a = 0; a < 5; a++)
        free(rids[a]);
    ck_assert_int_eq(reqj("GET", "/api/v1/audit/events/export?format=xml", aud, NULL, &r), 400);
    expect_named(&r, "format", NULL, "format=xml");
    http_res_free(&r);
}
END_TEST

/* ---- out: exports, secrets ------------------------------------------------------------- */

/* Deliver a record of host (alone there) and wait until it is chained and a checkpoint
 * signs it; the record as GET /audit/commands shows it. */
static json_t *chained_record(const char *host, const char *command)
{
    ingest(harness_srv.admin_token, json_pack("[o]", rec(host, "chained-1", command)), true, 1, 0);
    double end = audittest_now() + WAIT_S;
    for (;;) {
        json_t *it = commands(fmt("host=%s", host));
        json_t *one = json_array_get(it, 0);
        long long seq = json_integer_value(json_object_get(one, "seq"));
        if (seq > 0) {
            json_incref(one);
            json_decref(it);
            for (;;) { /* the newest checkpoint covers it */
                struct http_res r;
                ck_assert_int_eq(reqj("GET", "/api/v1/audit/checkpoints?limit=1", aud, NULL, &r),
                                 200);
                json_t *cp = json_array_get(json_object_get(r.json, "items"), 0);
                bool ok = json_integer_value(json_object_get(cp, "seq")) >= seq;
                http_res_free(&r);
                if (ok)
                    return one;
                ck_assert_msg(audittest_now() < end, "no checkpoint at %lld after %.0f s", seq,
                              WAIT_S);
                audittest_nap();
            }
        }
        json_decref(it);
        ck_assert_msg(audittest_now() < end, "record of %s not chained after %.0f s", host, WAIT_S);
        audittest_nap();
    }
}

START_TEST(ndjson_export_verifies_offline_and_edits_are_caught)
{
    json_t *target = chained_record("exp-n", "census --species 'Narwhal pod'");
    struct http_res r;
    audittest_export(aud, "", &r);
    char *ct = http_header(&r, "Content-Type");
    ck_assert_ptr_nonnull(strstr(ct, "application/x-ndjson"));
    free(ct);
    /* every line parses; events and checkpoints, then the trailer */
    long lines = 0, evlines = 0, cplines = 0, target_line = 0;
    json_t *trailer = NULL;
    for (char *p = r.body; *p;) {
        char *nl = strchr(p, '\n');
        ck_assert_msg(nl != NULL, "the export does not end with a newline");
        lines++;
        ck_assert_msg(trailer == NULL, "line %ld follows the trailer", lines);
        json_error_t jerr;
        json_t *o = json_loadb(p, (size_t)(nl - p), 0, &jerr);
        ck_assert_msg(o != NULL, "line %ld is not JSON: %s", lines, jerr.text);
        if (json_object_get(o, "export")) {
            trailer = json_incref(json_object_get(o, "export"));
        } else if (json_object_get(o, "checkpoint")) {
            cplines++;
        } else {
            evlines++;
            if (json_integer_value(json_object_get(o, "id")) ==
                json_integer_value(json_object_get(target, "id")))
                target_line = lines;
        }
        json_decref(o);
        p = nl + 1;
    }
    ck_assert_ptr_nonnull(trailer);
    ck_assert_int_eq(json_integer_value(json_object_get(trailer, "rows")), evlines);
    ck_assert_int_eq(json_integer_value(json_object_get(trailer, "checkpoints")), cplines);
    ck_assert_int_ge(cplines, 1);
    ck_assert_int_gt(target_line, 0);
    ck_assert(json_is_true(json_object_get(trailer, "complete")));
    ck_assert_str_eq(jstr(json_object_get(trailer, "signature"), "alg"), "ed25519");
    json_decref(trailer);

    /* the public key of the API is the one `aidcd audit public-key` printed */
    struct http_res k;
    ck_assert_int_eq(reqj("GET", "/api/v1/audit/public-key", aud, NULL, &k), 200);
    char *pub = harness_read_file(pub_path);
    ck_assert_str_eq(jstr(k.json, "public_key_pem"), pub);
    free(pub);
    char api_pub[320], file[320], out[4096];
    snprintf(api_pub, sizeof api_pub, "%s/api-pub.pem", harness_srv.data_dir);
    audittest_write_file(api_pub, jstr(k.json, "public_key_pem"),
                         strlen(jstr(k.json, "public_key_pem")));
    http_res_free(&k);

    snprintf(file, sizeof file, "%s/export.ndjson", harness_srv.data_dir);
    audittest_write_file(file, r.body, r.body_len);
    const char *verify = fmt("env -u AIDC_AUDIT_KEY_FILE '%s' audit verify-export '%s' --key '%s'",
                             AIDC_BIN, file, api_pub);
    ck_assert_msg(run(verify, out, sizeof out) == 0, "verify-export refused the export: %s", out);
    ck_assert_msg(strstr(out, "export signature verified") != NULL, "%s", out);

    /* one event's details edited (the node's command): refused at its line */
    char *copy = strdup(r.body);
    char *at = strstr(copy, "Narwhal pod");
    ck_assert_ptr_nonnull(at);
    at[2] = 'x'; /* Naxwhal */
    audittest_write_file(file, copy, r.body_len);
    ck_assert_msg(run(verify, out, sizeof out) == 1, "an edited export passed: %s", out);
    ck_assert_msg(strstr(out, fmt("FAILED at line %ld:", target_line)) != NULL,
                  "expected line %ld: %s", target_line, out);
    free(copy);

    /* the trailer dropped: refused */
    size_t cut = r.body_len - 1;
    while (cut > 0 && r.body[cut - 1] != '\n')
        cut--;
    audittest_write_file(file, r.body, cut);
    ck_assert_msg(run(verify, out, sizeof out) == 1, "a truncated export passed: %s", out);
    ck_assert_msg(strstr(out, "truncated") != NULL, "%s", out);

    /* the server's own check agrees: nothing in the database was touched */
    const char *args[] = {"audit", "verify", NULL};
    const char *env[] = {fmt("AIDC_AUDIT_KEY_FILE=%s", key_path), NULL};
    ck_assert_int_eq(
        harness_run_aidcd(&harness_srv, args, env, fmt("%s/verify.out", harness_srv.data_dir)), 0);
    json_decref(target);
    http_res_free(&r);
}
END_TEST

START_TEST(passwords_and_token_secrets_are_never_written)
{
    static const char pw1[] = "Secret-Pw-7f3a9c-one", pw2[] = "Secret-Pw-5e1d0b-two",
                      wrong[] = "Secret-Pw-WRONG-c4e2";
    make_user("redacted", pw1, NULL);
    char *jwt = login("redacted", pw1);
    ck_assert_ptr_nonnull(jwt);
    ck_assert_ptr_null(login("redacted", wrong));
    ck_assert_int_eq(req("PATCH", "/api/v1/users/redacted", harness_srv.admin_token,
                         fmt("{\"password\":\"%s\"}", pw2)),
                     200);
    char *jwt2 = login("redacted", pw2);
    ck_assert_ptr_nonnull(jwt2);
    char *secret = make_token(jwt2, "[\"jobs:read\"]", NULL);
    ck_assert_int_eq(req("GET", "/api/v1/tenants", secret, NULL), 200);
    ck_assert_int_eq(req("POST", "/api/v1/tenants", secret, "{\"slug\":\"x1\",\"name\":\"x\"}"),
                     403);
    char bad[64];
    snprintf(bad, sizeof bad, "%s", secret);
    bad[10] = bad[10] == 'A' ? 'B' : 'A';
    ck_assert_int_eq(req("GET", "/api/v1/me", bad, NULL), 401);
    ck_assert_int_eq(
        req("DELETE", "/api/v1/tokens/00000000-0000-4000-8000-000000000002", secret, NULL), 403);

    struct http_res nd, csv;
    audittest_export(aud, "", &nd);
    audittest_export(aud, "?format=csv", &csv);
    char *log = harness_read_file(harness_srv.log_path);
    ck_assert_ptr_nonnull(log);
    const char *secrets[] = {pw1, pw2, wrong, secret, bad, jwt, jwt2, ingest_only};
    const char *names[] = {"first password",     "second password",      "wrong password",
                           "token secret",       "altered token secret", "session JWT",
                           "second session JWT", "ingest token's secret"};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
        ck_assert_msg(!strstr(nd.body, secrets[i]), "the NDJSON export holds the %s", names[i]);
        ck_assert_msg(!strstr(csv.body, secrets[i]), "the CSV export holds the %s", names[i]);
        ck_assert_msg(!strstr(log, secrets[i]), "the aidcd log holds the %s", names[i]);
    }
    /* the events are there, only without the secrets */
    struct http_res ev;
    ck_assert_int_eq(
        reqj("GET", "/api/v1/audit/events?action=user.update&resource_id=redacted", aud, NULL, &ev),
        200);
    json_t *it = json_object_get(ev.json, "items");
    ck_assert_int_eq(json_array_size(it), 1);
    ck_assert_str_eq(jstr(json_object_get(json_array_get(it, 0), "details"), "password"),
                     "[redacted]");
    http_res_free(&ev);
    free(log);
    http_res_free(&nd);
    http_res_free(&csv);
    free(secret);
    free(jwt);
    free(jwt2);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("audit_ingest");
    TCase *tc = tcase_create("audit_ingest");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, batches_are_accepted_and_resends_stored_once);
    tcase_add_test(tc, a_bad_record_refuses_the_batch_and_is_named);
    tcase_add_test(tc, a_far_zone_offset_is_taken_or_refused_as_the_records_fault);
    tcase_add_test(tc, limits_of_a_request);
    tcase_add_test(tc, command_search_filters_and_pages);
    tcase_add_test(tc, csv_export_quotes_and_defuses_formulas);
    tcase_add_test(tc, ndjson_export_verifies_offline_and_edits_are_caught);
    tcase_add_test(tc, passwords_and_token_secrets_are_never_written);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
