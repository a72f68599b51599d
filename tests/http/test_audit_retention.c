/*
 * test_audit_retention.c - audit retention drops whole old months and the
 * chain still verifies across the hole, because the drop is itself recorded
 * in the chain (details.runs: the positions that left and the last hash).
 *
 * aidcd runs with a signing key, seals at once and signs the head every
 * second. Monthly partitions back to January 2025 are made as the owner and
 * events dated January and February 2025 written into them directly, before
 * aidcd first runs: the chain is in (ts, id) order behind a frontier, so an
 * event dated before the frontier would never be chained; written first,
 * they are the start of the chain, as the oldest months are in any database
 * that has run long enough for retention to matter. aidc_audit_retention(400),
 * called as the application role as aidcd's sealer calls it, must drop every
 * month that ended more than 400 days ago (events and chain entries) and
 * record one 'audit.retention' event per month naming its runs; then
 * GET /api/v1/audit/verify, `aidcd audit verify` and an offline check of a
 * signed export (`aidcd audit verify-export --key PUBLIC.pem`) must accept
 * what is left. The tests after the drop build on it: they run in order.
 * The call asks for 180 days, as a compromised application role would: the
 * floor `aidcd migrate` recorded (AIDC_AUDIT_RETENTION_DAYS, 400 by default)
 * must hold, so exactly the months older than 400 days go.
 *
 * Retention below 180 days is refused both by the database function and by
 * aidcd's settings.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RETENTION_DAYS 400
#define QUIET_WAIT_S   30
#define CLI_DEADLINE_S 60

static char keydir[64], keyfile[96];

/* ---- aidcd's command line ----------------------------------------------------------- */

/* `aidcd audit SUB` on database s with the key; stdout (malloc'd) in *out, exit status returned. */
static int cli_audit(const struct aidc_server *s, const char *sub, char **out)
{
    char o[320], e[320];
    snprintf(o, sizeof o, "%s/cli.out", s->data_dir);
    snprintf(e, sizeof e, "%s/cli.err", s->data_dir);
    const char *args[] = {"audit", sub, NULL};
    char db[600], dir[300], key[128];
    snprintf(db, sizeof db, "AIDC_DATABASE_URL=%s", s->app_url);
    snprintf(dir, sizeof dir, "AIDC_DATA_DIR=%s", s->data_dir);
    snprintf(key, sizeof key, "AIDC_AUDIT_KEY_FILE=%s", keyfile);
    const char *env[] = {db, dir, key, NULL};
    int rc = audittest_run_aidcd(args, env, o, e, CLI_DEADLINE_S);
    *out = harness_read_file(o);
    if (rc != 0 && rc != 1) {
        char *text = harness_read_file(e);
        fprintf(stderr, "aidcd audit %s exited %d: %s\n", sub, rc, text ? text : "");
        free(text);
    }
    return rc;
}

/* The error of sql run over url (malloc'd "SQLSTATE message"), NULL if none. */
static char *sql_error(const char *url, const char *sql)
{
    PGconn *c = PQconnectdb(url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    char *e = NULL;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        e = strdup(fmt("%s %s", code ? code : "?", msg ? msg : "?"));
    }
    PQclear(r);
    PQfinish(c);
    return e;
}

/* The monthly audit_events partitions of s's database (a JSON array of names). */
static json_t *month_partitions(const char *url)
{
    char *v = audittest_sql_value(url,
                                  "SELECT coalesce(json_agg(c.relname ORDER BY c.relname), '[]')"
                                  " FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                                  " WHERE i.inhparent = 'audit_events'::regclass"
                                  " AND c.relname ~ '^audit_events_[0-9]{6}$'",
                                  0, NULL);
    ck_assert_ptr_nonnull(v);
    json_t *a = json_loads(v, 0, NULL);
    free(v);
    ck_assert_ptr_nonnull(a);
    return a;
}

/* Whether the month of partition audit_events_YYYYMM ended more than days ago (UTC). */
static bool month_expired(const char *name, int days)
{
    int ym = atoi(name + strlen("audit_events_"));
    struct tm end = {.tm_year = ym / 100 - 1900, .tm_mon = ym % 100, .tm_mday = 1};
    time_t ends = timegm(&end); /* tm_mon is 0-based: this is the first of the next month */
    return ends <= time(NULL) - (time_t)days * 86400;
}

static bool relation_exists(const char *url, const char *name)
{
    const char *p[1] = {name};
    char *v = audittest_sql_value(url, "SELECT to_regclass($1) IS NOT NULL", 1, p);
    bool yes = v && strcmp(v, "t") == 0;
    free(v);
    return yes;
}

/* ---- fixture ------------------------------------------------------------------------ */

/*
 * Write two events dated ts1 and ts2 straight into their month's partition,
 * as the owner, tagged tag in details. False (printed) on failure.
 */
static bool old_events(const char *url, const char *ts1, const char *ts2, const char *tag)
{
    const char *p[3] = {ts1, ts2, tag};
    PGresult *r = harness_sql(
        url,
        "INSERT INTO audit_events (ts, actor_username, actor_roles, action, resource_type,"
        " resource_id, outcome, status, details)"
        " SELECT t::timestamptz, 'legacy', '{admin}', 'legacy.import', 'record', $3 || n,"
        " 'success', 200, jsonb_build_object('tag', $3, 'n', n)"
        " FROM unnest(ARRAY[$1, $2]) WITH ORDINALITY AS u(t, n)",
        3, p);
    bool ok = r && strcmp(PQcmdTuples(r), "2") == 0;
    PQclear(r);
    return ok;
}

/* harness_setup, with the old months written between migrating and aidcd's start */
static void setup(void)
{
    harness_require_pg();
    signal(SIGPIPE, SIG_IGN);
    snprintf(keydir, sizeof keydir, "/tmp/aidc-auditret-key-XXXXXX");
    if (!mkdtemp(keydir))
        audittest_setup_fail("cannot make a directory for the key");
    snprintf(keyfile, sizeof keyfile, "%s/audit.pem", keydir);
    char out[128], err[128];
    snprintf(out, sizeof out, "%s/keygen.out", keydir);
    snprintf(err, sizeof err, "%s/keygen.err", keydir);
    const char *kargs[] = {"audit", "keygen", keyfile, NULL};
    if (audittest_run_aidcd(kargs, NULL, out, err, CLI_DEADLINE_S) != 0)
        audittest_setup_fail("aidcd audit keygen failed");
    static char envkey[128];
    snprintf(envkey, sizeof envkey, "AIDC_AUDIT_KEY_FILE=%s", keyfile);
    const char *env[] = {envkey, "AIDC_AUDIT_SEAL_GRACE_MS=0", "AIDC_AUDIT_CHECKPOINT_SECONDS=1",
                         NULL};
    harness_db_create(&harness_srv, "auditret");
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT aidc_audit_partitions('2025-01-01', 3)", 0, NULL);
    if (!r)
        audittest_setup_fail("cannot make the old partitions");
    PQclear(r);
    if (!old_events(harness_srv.owner_url, "2025-01-15T10:00:00Z", "2025-01-20T11:30:00Z", "jan") ||
        !old_events(harness_srv.owner_url, "2025-02-10T09:00:00Z", "2025-02-27T23:59:59Z", "feb"))
        audittest_setup_fail("cannot write the old events");
    unlink(harness_srv.log_path);
    if (harness_server_start(&harness_srv, env) != 0)
        audittest_setup_fail("aidcd did not start");
    if (!harness_login_admin())
        audittest_setup_fail("cannot log in");
    for (int t = 0; t < 4; t++)
        make_tenant(fmt("rt%d", t));
    if (audittest_wait_quiet(QUIET_WAIT_S) < 8)
        audittest_setup_fail("the events were not chained and signed in time");
}

static void teardown(void)
{
    harness_remove_tree(keydir);
    harness_teardown();
}

/* ---- refusals ---------------------------------------------------------------------------- */

START_TEST(retention_below_180_days_is_refused_by_the_database)
{
    json_t *before = month_partitions(harness_srv.owner_url);
    const char *calls[] = {"SELECT aidc_audit_retention(100)", "SELECT aidc_audit_retention(179)",
                           "SELECT aidc_audit_retention(0)", "SELECT aidc_audit_retention(-1)"};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        char *e = sql_error(harness_srv.app_url, calls[i]);
        ck_assert_msg(e != NULL, "accepted: %s", calls[i]);
        ck_assert_msg(strncmp(e, "23514 ", 6) == 0 && strstr(e, "below 180 days"), "%s: %s",
                      calls[i], e);
        free(e);
    }
    json_t *after = month_partitions(harness_srv.owner_url);
    ck_assert(json_equal(before, after));
    ck_assert(relation_exists(harness_srv.owner_url, "audit_events_202501"));
    json_decref(before);
    json_decref(after);
}
END_TEST

START_TEST(aidcd_refuses_a_retention_setting_below_180_days)
{
    char out[320];
    snprintf(out, sizeof out, "%s/serve-retention.out", harness_srv.data_dir);
    const char *args[] = {"serve", NULL};
    const char *values[] = {"AIDC_AUDIT_RETENTION_DAYS=90", "AIDC_AUDIT_RETENTION_DAYS=179"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        const char *env[] = {values[i], NULL};
        ck_assert_int_eq(harness_run_aidcd(&harness_srv, args, env, out), 2);
        char *t = harness_read_file(out);
        ck_assert_ptr_nonnull(t);
        ck_assert_msg(strstr(t, "AIDC_AUDIT_RETENTION_DAYS") && strstr(t, "180"), "%s: \"%s\"",
                      values[i], t);
        ck_assert_msg(strchr(t, '\n') == t + strlen(t) - 1, "not one line: \"%s\"", t);
        free(t);
    }
}
END_TEST

/* ---- the drop ------------------------------------------------------------------------------ */

/* The run of chain positions of the events tagged tag, and its last hash: [{...}]. */
static json_t *run_of(const char *tag)
{
    const char *p[1] = {tag};
    char *v =
        audittest_sql_value(harness_srv.owner_url,
                            "SELECT json_build_array(json_build_object('first_seq', min(c.seq),"
                            " 'last_seq', max(c.seq), 'last_hash',"
                            " encode((array_agg(c.hash ORDER BY c.seq DESC))[1], 'hex')))"
                            " FROM audit_events e JOIN audit_chain c ON c.event_id = e.id"
                            " AND c.event_ts = e.ts WHERE e.details ->> 'tag' = $1",
                            1, p);
    ck_assert_ptr_nonnull(v);
    json_t *runs = json_loads(v, 0, NULL);
    free(v);
    ck_assert_ptr_nonnull(runs);
    return runs;
}

/*
 * SELECT aidc_audit_retention(days) as the application role: the number of
 * partitions dropped. Retention can deadlock with the sealer running beside
 * it (it drops the chain's partition, then the events', while a reader locks
 * audit_events, then audit_chain); PostgreSQL then undoes the whole call, so
 * it is tried again: this test is about what retention does, not that race.
 */
static int retention_as_app(int days)
{
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT aidc_audit_retention(%d)", days);
    for (int attempt = 1;; attempt++) {
        PGconn *c = PQconnectdb(harness_srv.app_url);
        ck_assert_msg(PQstatus(c) == CONNECTION_OK, "app: %s", PQerrorMessage(c));
        PGresult *r = PQexec(c, sql);
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        bool deadlock = state && strcmp(state, "40P01") == 0;
        int dropped = -1;
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
            dropped = atoi(PQgetvalue(r, 0, 0));
        else if (!deadlock || attempt == 5)
            ck_abort_msg("%s: %s", sql, PQresultErrorMessage(r));
        else
            fprintf(stderr, "%s: deadlock (attempt %d), again\n", sql, attempt);
        PQclear(r);
        PQfinish(c);
        if (dropped >= 0)
            return dropped;
    }
}

/* The details of the audit.retention event of partition name (NULL if there is none). */
static json_t *retention_details(const char *name)
{
    const char *p[1] = {name};
    char *v =
        audittest_sql_value(harness_srv.owner_url,
                            "SELECT details FROM audit_events WHERE action = 'audit.retention'"
                            " AND resource_type = 'audit_partition' AND resource_id = $1",
                            1, p);
    json_t *d = v ? json_loads(v, 0, NULL) : NULL;
    free(v);
    return d;
}

START_TEST(retention_drops_the_old_months_and_records_their_runs)
{
    const char *owner = harness_srv.owner_url;
    /* the old months are the start of the chain: January 1..2, February 3..4 */
    json_t *jan_runs = run_of("jan"), *feb_runs = run_of("feb");
    json_t *jan = json_array_get(jan_runs, 0), *feb = json_array_get(feb_runs, 0);
    ck_assert_int_eq(jint(jan, "first_seq"), 1);
    ck_assert_int_eq(jint(jan, "last_seq"), 2);
    ck_assert_int_eq(jint(feb, "first_seq"), 3);
    ck_assert_int_eq(jint(feb, "last_seq"), 4);
    ck_assert_int_gt(audittest_wait_quiet(QUIET_WAIT_S), 0);
    json_t *v = audittest_api_verify();
    ck_assert_ptr_nonnull(v);
    ck_assert_msg(json_is_true(json_object_get(v, "ok")), "before retention: %s",
                  json_string_value(json_object_get(v, "reason")));
    json_decref(v);

    /* what must go: every month that ended more than RETENTION_DAYS ago */
    json_t *parts = month_partitions(owner);
    size_t i;
    json_t *name;
    int expired = 0;
    json_array_foreach(parts, i, name)
    {
        expired += month_expired(json_string_value(name), RETENTION_DAYS);
    }
    ck_assert_int_ge(expired, 2); /* January and February 2025 at least */
    ck_assert_int_eq(
        audittest_num(owner, "SELECT count(*) FROM audit_events WHERE ts < '2025-03-01'", 0, NULL),
        4);

    /* as aidcd's sealer does it: the application role; asking for less than the
     * floor of migrate (RETENTION_DAYS) drops no more */
    ck_assert_int_eq(retention_as_app(180), expired);

    json_array_foreach(parts, i, name)
    {
        const char *ev = json_string_value(name);
        char chain[64];
        snprintf(chain, sizeof chain, "audit_chain_%s", ev + strlen("audit_events_"));
        bool gone = month_expired(ev, RETENTION_DAYS);
        ck_assert_msg(relation_exists(owner, ev) != gone, "%s %s", ev, gone ? "kept" : "dropped");
        ck_assert_msg(relation_exists(owner, chain) != gone, "%s %s", chain,
                      gone ? "kept" : "dropped");
        json_t *d = retention_details(ev);
        ck_assert_msg((d != NULL) == gone, "%s: retention event %s", ev,
                      d ? "for a kept month" : "missing");
        if (!d)
            continue;
        ck_assert_int_eq(jint(d, "retention_days"), RETENTION_DAYS);
        ck_assert_str_eq(json_string_value(json_object_get(d, "partition")), ev);
        bool is_jan = strcmp(ev, "audit_events_202501") == 0;
        bool is_feb = strcmp(ev, "audit_events_202502") == 0;
        ck_assert_int_eq(jint(d, "count"), is_jan || is_feb ? 2 : 0);
        json_t *runs = json_object_get(d, "runs");
        json_t *want = is_jan ? jan_runs : is_feb ? feb_runs : NULL;
        char *got = json_dumps(runs, JSON_COMPACT | JSON_SORT_KEYS);
        if (want)
            ck_assert_msg(json_equal(runs, want), "%s: runs %s", ev, got);
        else
            ck_assert_msg(json_is_array(runs) && json_array_size(runs) == 0, "%s: runs %s", ev,
                          got);
        free(got);
        json_decref(d);
    }
    ck_assert_int_eq(
        audittest_num(owner, "SELECT count(*) FROM audit_events WHERE ts < '2025-03-01'", 0, NULL),
        0);
    ck_assert_int_eq(
        audittest_num(owner, "SELECT count(*) FROM audit_chain WHERE seq <= 4", 0, NULL), 0);
    ck_assert_int_eq(
        audittest_num(owner, "SELECT count(*) FROM audit_events WHERE action = 'audit.retention'",
                      0, NULL),
        expired);
    json_decref(parts);
    json_decref(jan_runs);
    json_decref(feb_runs);
}
END_TEST

/* After the drop: positions 1..4 are gone, and recorded as runs {1..2} and {3..4}. */
START_TEST(the_chain_verifies_after_retention)
{
    long long head = audittest_wait_quiet(QUIET_WAIT_S);
    ck_assert_int_gt(head, 4);
    long long entries =
        audittest_num(harness_srv.owner_url, "SELECT count(*) FROM audit_chain", 0, NULL);
    ck_assert_int_eq(entries, head - 4);
    /* both verdicts first, so that a failure shows both */
    int rc;
    json_t *cli = audittest_cli_verify(&harness_srv, keyfile, &rc), *api = audittest_api_verify();
    ck_assert_ptr_nonnull(cli);
    ck_assert_ptr_nonnull(api);
    char *ct = json_dumps(cli, JSON_COMPACT), *at = json_dumps(api, JSON_COMPACT);
    ck_assert_msg(rc == 0 && json_is_true(json_object_get(cli, "ok")) &&
                      json_is_true(json_object_get(api, "ok")),
                  "after retention: aidcd audit verify (exit %d): %s; GET verify: %s", rc, ct, at);
    ck_assert_int_eq(jint(cli, "verified"), entries);
    ck_assert_int_eq(jint(cli, "first_seq"), 5);
    ck_assert_int_eq(jint(cli, "last_seq"), head);
    ck_assert_int_ge(jint(cli, "checkpoints"), 1);
    ck_assert_int_eq(jint(api, "verified"), entries);
    free(ct);
    free(at);
    json_decref(cli);
    json_decref(api);
}
END_TEST

/* A signed export of what is left checks offline with the public key alone; an edit of it does not.
 */
START_TEST(an_export_after_retention_verifies_offline)
{
    ck_assert_int_gt(audittest_wait_quiet(QUIET_WAIT_S), 4);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/audit/public-key", harness_srv.admin_token, NULL, &r),
                     200);
    const char *pem = json_string_value(json_object_get(r.json, "public_key_pem"));
    ck_assert_ptr_nonnull(pem);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "alg")), "ed25519");
    char *cli_pem = NULL;
    ck_assert_int_eq(cli_audit(&harness_srv, "public-key", &cli_pem), 0);
    ck_assert_str_eq(cli_pem, pem);
    char pubfile[320], exportfile[320], verout[320], vererr[320];
    snprintf(pubfile, sizeof pubfile, "%s/audit-public.pem", harness_srv.data_dir);
    snprintf(exportfile, sizeof exportfile, "%s/audit-export.ndjson", harness_srv.data_dir);
    snprintf(verout, sizeof verout, "%s/verify-export.out", harness_srv.data_dir);
    snprintf(vererr, sizeof vererr, "%s/verify-export.err", harness_srv.data_dir);
    audittest_write_file(pubfile, pem, strlen(pem));
    free(cli_pem);
    http_res_free(&r);

    ck_assert_int_eq(reqj("GET", "/api/v1/audit/events/export", harness_srv.admin_token, NULL, &r),
                     200);
    ck_assert_ptr_null(strstr(r.body, "legacy.import")); /* the dropped months are not in it */
    ck_assert_ptr_nonnull(strstr(r.body, "\"audit.retention\""));
    ck_assert_ptr_nonnull(strstr(r.body, "\"checkpoint\":"));
    audittest_write_file(exportfile, r.body, r.body_len);
    const char *vargs[] = {"audit", "verify-export", exportfile, "--key", pubfile, NULL};
    int rc = audittest_run_aidcd(vargs, NULL, verout, vererr, CLI_DEADLINE_S);
    char *said = harness_read_file(verout);
    ck_assert_msg(rc == 0 && said && strncmp(said, "OK: ", 4) == 0 &&
                      strstr(said, "export signature verified"),
                  "verify-export (exit %d): %s", rc, said ? said : "");
    free(said);

    char *edited = strdup(r.body);
    char *at = strstr(edited, "\"tenant.create\"");
    ck_assert_ptr_nonnull(at);
    memcpy(at + strlen("\"tenant."), "CREATE", 6);
    audittest_write_file(exportfile, edited, r.body_len);
    free(edited);
    http_res_free(&r);
    ck_assert_int_eq(audittest_run_aidcd(vargs, NULL, verout, vererr, CLI_DEADLINE_S), 1);
    said = harness_read_file(verout);
    ck_assert_msg(said && strncmp(said, "FAILED", 6) == 0, "verify-export of an edit: %s",
                  said ? said : "");
    free(said);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("audit_retention");
    TCase *tc = tcase_create("audit_retention");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    /* in this order: the refusals leave the old months for the drop, which the rest follow */
    tcase_add_test(tc, retention_below_180_days_is_refused_by_the_database);
    tcase_add_test(tc, aidcd_refuses_a_retention_setting_below_180_days);
    tcase_add_test(tc, retention_drops_the_old_months_and_records_their_runs);
    tcase_add_test(tc, the_chain_verifies_after_retention);
    tcase_add_test(tc, an_export_after_retention_verifies_offline);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
