/*
 * test_audit_tamper.c - the audit chain catches what a database superuser
 * does behind aidc's back. aidcd runs with a signing key, seals at once
 * (AIDC_AUDIT_SEAL_GRACE_MS=0) and signs the head every second; a few dozen
 * events are made through the API and wait until they are chained and a
 * signed checkpoint covers them. Then each case tampers directly in
 * PostgreSQL as the superuser, with the append-only triggers switched off
 * for its session (session_replication_role = replica), and both
 * GET /api/v1/audit/verify and `aidcd audit verify` must name the first
 * broken event:
 *
 *   details edited             -> that event
 *   event row deleted          -> that event (its chain entry is left: "missing")
 *   event and entry deleted    -> the next event (chain positions missing)
 *   the newest events and entries deleted, the head moved back -> the signed
 *                                 checkpoint past the chain's end, with checkpoint_id
 *   two events' contents swapped, or two entries' hashes -> the first of them
 *   checkpoint head or signature altered -> the event at its position, with
 *                                 checkpoint_id
 *   chain rewritten consistently after an edit (every later hash recomputed,
 *   then the checkpoints' heads too, or the checkpoints made unsigned) ->
 *                                 the first checkpoint at or after the edit:
 *                                 only the signature stands in the way
 *
 * Every case but the rewrites undoes its tampering in the same database and
 * proves the undo exact (fingerprints of the rows, and the chain verifies
 * again), so each case starts from an intact chain. The observations are
 * collected before undoing and asserted after, so a failed assertion cannot
 * leave the next case a tampered chain. A rewrite cannot be undone (the
 * sealer goes on chaining on the rewritten head), so the rewrites run last.
 * SQL cannot recompute a hash (the canonical JSON is jansson's), so the
 * rewrites are computed here with aidc's own chain_link() over the event
 * as documented, after checking that this reproduces every stored hash.
 *
 * Also: an untouched chain verifies with verified = the number of chain
 * entries, and the application's database role cannot UPDATE, DELETE or
 * TRUNCATE audit events, chain entries or checkpoints.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include "audit/chain.h"

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

#define NTENANTS       8
#define NPROJECTS      3  /* per tenant: 8 + 24 events, plus the bootstrap's and the login */
#define QUIET_WAIT_S   30 /* sealing and signing take about a second here */
#define CLI_DEADLINE_S 60

/* A number as a statement parameter, in a buffer of the caller's (it outlives fmt's). */
#define NUM(buf, x) (snprintf(buf, sizeof buf, "%lld", (long long)(x)), (const char *)buf)

static char keydir[64], keyfile[96];
static char su_url[512];
static long long chain_len; /* entries chained once set-up made its events */

/* ---- SQL ------------------------------------------------------------------------------ */

/* The event at chain position seq. */
static long long event_at(long long seq)
{
    const char *p[1] = {fmt("%lld", seq)};
    return audittest_num(harness_srv.owner_url,
                         "SELECT event_id FROM audit_chain WHERE seq = $1::bigint", 1, p);
}

/* A superuser session on this test's database whose writes fire no (user) triggers. */
static PGconn *su_connect(void)
{
    PGconn *c = PQconnectdb(su_url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "superuser: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, "SET session_replication_role = replica");
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK, "%s", PQresultErrorMessage(r));
    PQclear(r);
    return c;
}

/* Run one statement in the superuser session; its result (the caller clears it). */
static PGresult *su(PGconn *c, const char *sql, int n, const char *const *params)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    ck_assert_msg(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
                  PQresultErrorMessage(r));
    return r;
}

static void su_do(PGconn *c, const char *sql, int n, const char *const *params)
{
    PQclear(su(c, sql, n, params));
}

/* Rows changed by one statement; must be `want`. */
static void su_change(PGconn *c, const char *sql, int n, const char *const *params, int want)
{
    PGresult *r = su(c, sql, n, params);
    ck_assert_msg(atoi(PQcmdTuples(r)) == want, "%s changed %s rows, not %d", sql, PQcmdTuples(r),
                  want);
    PQclear(r);
}

/*
 * A digest of every row of the audit tables up to event id max_id / chain
 * position max_seq / checkpoint max_cp (read as the superuser: no row
 * security), to show that an undo restored them exactly.
 */
static char *fingerprint(PGconn *c, long long max_id, long long max_seq, long long max_cp)
{
    const char *p[3] = {fmt("%lld", max_id), fmt("%lld", max_seq), fmt("%lld", max_cp)};
    PGresult *r =
        su(c,
           "SELECT md5((SELECT string_agg(e::text, '|' ORDER BY e.id) FROM audit_events e"
           "             WHERE e.id <= $1::bigint)"
           " || '#' || (SELECT string_agg(c::text, '|' ORDER BY c.seq) FROM audit_chain c"
           "             WHERE c.seq <= $2::bigint)"
           " || '#' || (SELECT string_agg(k::text, '|' ORDER BY k.id) FROM audit_checkpoints k"
           "             WHERE k.id <= $3::bigint))",
           3, p);
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* The state a tampering case starts from, and the digest to come back to. */
struct before {
    long long head, max_id, max_cp;
    char *digest;
};

static void before_take(PGconn *c, struct before *b)
{
    b->head = audittest_wait_quiet(QUIET_WAIT_S);
    ck_assert_msg(b->head >= chain_len, "the chain did not come to rest");
    b->max_id = audittest_num(harness_srv.owner_url, "SELECT max(id) FROM audit_events", 0, NULL);
    b->max_cp =
        audittest_num(harness_srv.owner_url, "SELECT max(id) FROM audit_checkpoints", 0, NULL);
    b->digest = fingerprint(c, b->max_id, b->head, b->max_cp);
}

/* What both verifiers said about the tampered chain. */
struct seen {
    json_t *api, *cli;
    int cli_rc;
};

static void observe(struct seen *s)
{
    s->api = audittest_api_verify();
    s->cli = audittest_cli_verify(&harness_srv, keyfile, &s->cli_rc);
}

static void seen_free(struct seen *s)
{
    json_decref(s->api);
    json_decref(s->cli);
}

/* One verdict: not ok, broken at event id, by checkpoint cp (0: none named). */
static void expect_broken_one(const char *who, const json_t *v, long long id, long long cp,
                              const char *reason_has)
{
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    ck_assert_msg(v != NULL, "%s: no verdict", who);
    ck_assert_msg(json_is_false(json_object_get(v, "ok")), "%s: not broken: %s", who, text);
    ck_assert_msg(jint(v, "broken_at") == id, "%s: broken_at is not %lld: %s", who, id, text);
    if (cp)
        ck_assert_msg(jint(v, "checkpoint_id") == cp, "%s: checkpoint_id is not %lld: %s", who, cp,
                      text);
    else
        ck_assert_msg(json_object_get(v, "checkpoint_id") == NULL, "%s: names a checkpoint: %s",
                      who, text);
    const char *reason = json_string_value(json_object_get(v, "reason"));
    ck_assert_msg(reason && strstr(reason, reason_has), "%s: reason lacks \"%s\": %s", who,
                  reason_has, text);
    free(text);
}

static void expect_broken(const struct seen *s, long long id, long long cp, const char *reason_has)
{
    expect_broken_one("GET /api/v1/audit/verify", s->api, id, cp, reason_has);
    expect_broken_one("aidcd audit verify", s->cli, id, cp, reason_has);
    ck_assert_int_eq(s->cli_rc, 1);
}

/* The undo restored every row exactly, and both verifiers find the chain whole again. */
static void expect_restored(PGconn *c, struct before *b)
{
    char *now = fingerprint(c, b->max_id, b->head, b->max_cp);
    ck_assert_str_eq(now, b->digest);
    free(now);
    free(b->digest);
    json_t *v = audittest_api_verify();
    ck_assert_ptr_nonnull(v);
    ck_assert_msg(json_is_true(json_object_get(v, "ok")), "after the undo: %s",
                  json_string_value(json_object_get(v, "reason")));
    json_decref(v);
    int rc;
    v = audittest_cli_verify(&harness_srv, keyfile, &rc);
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_true(json_object_get(v, "ok")));
    ck_assert_int_eq(rc, 0);
    json_decref(v);
}

/* ---- fixture ------------------------------------------------------------------------ */

static void setup(void)
{
    harness_require_pg();
    const char *su_base = getenv("AIDC_TEST_SUPERUSER_URL");
    if (!su_base) {
        fprintf(stderr, "skipped: AIDC_TEST_SUPERUSER_URL not set (tampering needs a superuser)\n");
        exit(77);
    }
    snprintf(keydir, sizeof keydir, "/tmp/aidc-audittamper-key-XXXXXX");
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
    harness_setup("audittamper", env);
    harness_url_with_db(su_base, harness_srv.dbname, su_url, sizeof su_url);
    for (int t = 0; t < NTENANTS; t++) {
        make_tenant(fmt("tt%d", t));
        for (int p = 0; p < NPROJECTS; p++)
            make_project(fmt("tt%d", t), fmt("p%d", p));
    }
    chain_len = audittest_wait_quiet(QUIET_WAIT_S);
    if (chain_len < NTENANTS * (1 + NPROJECTS))
        audittest_setup_fail("the events were not chained and signed in time");
}

static void teardown(void)
{
    harness_remove_tree(keydir);
    harness_teardown();
}

/* ---- the untouched chain ---------------------------------------------------------------- */

START_TEST(an_untouched_chain_verifies)
{
    long long head = audittest_wait_quiet(QUIET_WAIT_S);
    ck_assert_int_ge(head, chain_len);
    long long entries =
        audittest_num(harness_srv.owner_url, "SELECT count(*) FROM audit_chain", 0, NULL);
    long long signed_cps =
        audittest_num(harness_srv.owner_url,
                      "SELECT count(*) FROM audit_checkpoints WHERE alg = 'ed25519'", 0, NULL);
    ck_assert_int_eq(entries, head); /* positions 1..head, no gap */
    ck_assert_int_ge(signed_cps, 1);
    ck_assert_int_eq(audittest_num(harness_srv.owner_url,
                                   "SELECT count(*) FROM audit_checkpoints WHERE alg <> 'ed25519'",
                                   0, NULL),
                     0);
    /* the command line writes no event: the chain stays as counted */
    int rc;
    json_t *v = audittest_cli_verify(&harness_srv, keyfile, &rc);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(rc, 0);
    ck_assert(json_is_true(json_object_get(v, "ok")));
    ck_assert_int_eq(jint(v, "verified"), entries);
    ck_assert_int_eq(jint(v, "first_seq"), 1);
    ck_assert_int_eq(jint(v, "last_seq"), head);
    ck_assert_int_eq(jint(v, "checkpoints"), signed_cps);
    ck_assert_int_eq(jint(v, "unsigned_checkpoints"), 0);
    ck_assert_int_eq(jint(v, "unsealed"), 0);
    ck_assert_ptr_null(json_object_get(v, "broken_at"));
    json_decref(v);
    /* the API's own read is recorded after it verified: the same count */
    v = audittest_api_verify();
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_true(json_object_get(v, "ok")));
    ck_assert_int_eq(jint(v, "verified"), entries);
    ck_assert_int_eq(jint(v, "checkpoints"), signed_cps);
    json_decref(v);
}
END_TEST

/* ---- tampering, undone ------------------------------------------------------------------ */

START_TEST(edited_details_are_found_at_that_event)
{
    PGconn *c = su_connect();
    struct before b;
    before_take(c, &b);
    long long id = event_at(5);
    char idb[24];
    const char *p[1] = {NUM(idb, id)};
    su_do(c, "CREATE TEMP TABLE saved (LIKE audit_events)", 0, NULL);
    su_change(c, "INSERT INTO saved SELECT * FROM audit_events WHERE id = $1", 1, p, 1);
    su_change(c,
              "UPDATE audit_events SET details = details || '{\"approved_by\":\"nobody\"}'"
              " WHERE id = $1",
              1, p, 1);
    struct seen s;
    observe(&s);
    su_change(c,
              "UPDATE audit_events e SET details = s.details FROM saved s"
              " WHERE e.id = s.id AND e.ts = s.ts",
              0, NULL, 1);
    expect_broken(&s, id, 0, "was altered");
    seen_free(&s);
    expect_restored(c, &b);
    PQfinish(c);
}
END_TEST

START_TEST(a_deleted_event_is_found_missing)
{
    PGconn *c = su_connect();
    struct before b;
    before_take(c, &b);
    long long id = event_at(8);
    char idb[24];
    const char *p[1] = {NUM(idb, id)};
    su_do(c, "CREATE TEMP TABLE saved (LIKE audit_events)", 0, NULL);
    su_change(c, "INSERT INTO saved SELECT * FROM audit_events WHERE id = $1", 1, p, 1);
    su_change(c, "DELETE FROM audit_events WHERE id = $1", 1, p, 1);
    struct seen s;
    observe(&s);
    /* back where it was: behind the sealer's frontier, so it is not chained a second time */
    su_change(c, "INSERT INTO audit_events SELECT * FROM saved", 0, NULL, 1);
    expect_broken(&s, id, 0, "missing");
    ck_assert_int_eq(jint(s.api, "broken_seq"), 8);
    seen_free(&s);
    expect_restored(c, &b);
    PQfinish(c);
}
END_TEST

START_TEST(a_deleted_event_and_its_entry_break_the_chain_at_the_next)
{
    PGconn *c = su_connect();
    struct before b;
    before_take(c, &b);
    long long id = event_at(11), next = event_at(12);
    char idb[24];
    const char *p[1] = {NUM(idb, id)};
    su_do(c, "CREATE TEMP TABLE saved_e (LIKE audit_events)", 0, NULL);
    su_do(c, "CREATE TEMP TABLE saved_c (LIKE audit_chain)", 0, NULL);
    su_change(c, "INSERT INTO saved_e SELECT * FROM audit_events WHERE id = $1", 1, p, 1);
    su_change(c, "INSERT INTO saved_c SELECT * FROM audit_chain WHERE event_id = $1", 1, p, 1);
    su_change(c, "DELETE FROM audit_chain WHERE event_id = $1", 1, p, 1);
    su_change(c, "DELETE FROM audit_events WHERE id = $1", 1, p, 1);
    struct seen s;
    observe(&s);
    su_change(c, "INSERT INTO audit_events SELECT * FROM saved_e", 0, NULL, 1);
    su_change(c, "INSERT INTO audit_chain SELECT * FROM saved_c", 0, NULL, 1);
    expect_broken(&s, next, 0, "positions 11..11 are missing");
    ck_assert_int_eq(jint(s.cli, "broken_seq"), 12);
    seen_free(&s);
    expect_restored(c, &b);
    PQfinish(c);
}
END_TEST

/*
 * The newest events deleted with their entries, the head moved back onto the last
 * one left: a shorter chain that links perfectly. Only the signed checkpoint past
 * its end tells. The head stays locked until the undo, so the sealer cannot chain
 * the verification's own events onto the shortened chain meanwhile.
 */
#define TRUNCATED 5
#define HEAD_ONTO                                                                                  \
    "UPDATE audit_chain_head SET (seq, hash, upto_ts, upto_id) ="                                  \
    " (SELECT seq, hash, event_ts, event_id FROM audit_chain WHERE seq = %lld)"

START_TEST(truncated_newest_events_are_found_by_the_checkpoint_past_the_end)
{
    PGconn *c = su_connect();
    struct before b;
    before_take(c, &b);
    long long last = b.head - TRUNCATED;
    su_change(c,
              fmt("CREATE TEMP TABLE saved_c AS SELECT * FROM audit_chain WHERE seq > %lld", last),
              0, NULL, TRUNCATED);
    su_change(c,
              "CREATE TEMP TABLE saved_e AS SELECT e.* FROM audit_events e, saved_c s"
              " WHERE (e.ts, e.id) = (s.event_ts, s.event_id)",
              0, NULL, TRUNCATED);
    su_change(c,
              "WITH d AS (DELETE FROM audit_chain c USING saved_c s WHERE c.seq = s.seq"
              " RETURNING c.*) DELETE FROM audit_events e USING d"
              " WHERE (e.ts, e.id) = (d.event_ts, d.event_id)",
              0, NULL, TRUNCATED);
    su_change(c, fmt(HEAD_ONTO, last), 0, NULL, 1);
    su_do(c, "BEGIN", 0, NULL);
    su_do(c, "SELECT 1 FROM audit_chain_head FOR UPDATE", 0, NULL);
    struct seen s;
    observe(&s);
    su_change(c,
              "WITH c AS (INSERT INTO audit_chain SELECT * FROM saved_c)"
              " INSERT INTO audit_events SELECT * FROM saved_e",
              0, NULL, TRUNCATED);
    su_change(c, fmt(HEAD_ONTO, b.head), 0, NULL, 1);
    su_do(c, "COMMIT", 0, NULL); /* the waiting seal finds the head moved and appends nothing */
    expect_broken(&s, 0, b.max_cp, "events were removed"); /* the newest: it names the head */
    ck_assert_int_eq(jint(s.api, "broken_seq"), last + 1);
    ck_assert_int_eq(jint(s.cli, "broken_seq"), last + 1);
    seen_free(&s);
    expect_restored(c, &b);
    PQfinish(c);
}
END_TEST

/* What changes places between two events: all they say, not when or who. */
#define SWAP_CONTENTS                                                                              \
    "UPDATE audit_events e SET action = o.action, resource_type = o.resource_type,"                \
    " resource_id = o.resource_id, details = o.details FROM audit_events o"                        \
    " WHERE (e.id = $1::bigint AND o.id = $2::bigint) OR (e.id = $2::bigint AND o.id = "           \
    "$1::bigint)"

START_TEST(swapped_events_are_found_at_the_first)
{
    PGconn *c = su_connect();
    struct before b;
    before_take(c, &b);
    long long a = event_at(14), z = event_at(15);
    char ab[24], zb[24];
    const char *p[2] = {NUM(ab, a), NUM(zb, z)};
    /* two different events, or the swap would change nothing */
    ck_assert_int_eq(audittest_num(harness_srv.owner_url,
                                   "SELECT count(DISTINCT (action, resource_type, resource_id,"
                                   " details::text)) FROM audit_events WHERE id IN ($1, $2)",
                                   2, p),
                     2);
    su_change(c, SWAP_CONTENTS, 2, p, 2);
    struct seen s;
    observe(&s);
    su_change(c, SWAP_CONTENTS, 2, p, 2); /* swapping again swaps back */
    expect_broken(&s, a, 0, "was altered");
    seen_free(&s);
    expect_restored(c, &b);
    PQfinish(c);
}
END_TEST

#define SWAP_HASHES                                                                                \
    "UPDATE audit_chain c SET hash = o.hash FROM audit_chain o"                                    \
    " WHERE (c.seq = $1::bigint AND o.seq = $1::bigint + 1)"                                       \
    " OR (c.seq = $1::bigint + 1 AND o.seq = $1::bigint)"

START_TEST(swapped_chain_hashes_are_found_at_the_first)
{
    PGconn *c = su_connect();
    struct before b;
    before_take(c, &b);
    long long a = event_at(17);
    const char *p[1] = {"17"};
    su_change(c, SWAP_HASHES, 1, p, 2);
    struct seen s;
    observe(&s);
    su_change(c, SWAP_HASHES, 1, p, 2);
    expect_broken(&s, a, 0, "was altered");
    seen_free(&s);
    expect_restored(c, &b);
    PQfinish(c);
}
END_TEST

/* Flip one bit of a checkpoint's column; flipping it again restores it. */
static void flip(PGconn *c, const char *column, long long cp)
{
    const char *p[1] = {fmt("%lld", cp)};
    su_change(c,
              fmt("UPDATE audit_checkpoints SET %s = set_byte(%s, 0, get_byte(%s, 0) # 1)"
                  " WHERE id = $1::bigint",
                  column, column, column),
              1, p, 1);
}

static void altered_checkpoint_case(const char *column, const char *reason_has)
{
    PGconn *c = su_connect();
    struct before b;
    before_take(c, &b);
    /* the first checkpoint: every one before it (none) verifies */
    long long cp =
        audittest_num(harness_srv.owner_url, "SELECT min(id) FROM audit_checkpoints", 0, NULL);
    const char *p[1] = {fmt("%lld", cp)};
    long long seq = audittest_num(harness_srv.owner_url,
                                  "SELECT seq FROM audit_checkpoints WHERE id = $1::bigint", 1, p);
    long long id = event_at(seq);
    flip(c, column, cp);
    struct seen s;
    observe(&s);
    flip(c, column, cp);
    expect_broken(&s, id, cp, reason_has);
    ck_assert_int_eq(jint(s.api, "broken_seq"), seq);
    seen_free(&s);
    expect_restored(c, &b);
    PQfinish(c);
}

START_TEST(an_altered_checkpoint_head_is_found)
{
    altered_checkpoint_case("head_hash", "names another chain head");
}
END_TEST

START_TEST(an_altered_checkpoint_signature_is_found)
{
    altered_checkpoint_case("signature", "does not verify");
}
END_TEST

/* ---- the application role ---------------------------------------------------------------- */

/* The error of sql run as the application role (malloc'd "SQLSTATE message"), NULL if none. */
static char *app_error(const char *sql)
{
    PGconn *c = PQconnectdb(harness_srv.app_url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "app: %s", PQerrorMessage(c));
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

START_TEST(the_application_role_cannot_rewrite_the_audit_tables)
{
    /* a monthly partition, named directly, is no way round */
    char *part = audittest_sql_value(harness_srv.owner_url,
                                     "SELECT c.relname FROM audit_chain x JOIN pg_class c"
                                     " ON c.oid = x.tableoid WHERE x.seq = 1",
                                     0, NULL);
    ck_assert_ptr_nonnull(part);
    char *evpart = strdup(fmt("audit_events_%s", part + strlen("audit_chain_")));
    const char *tables[] = {"audit_events", "audit_chain", "audit_checkpoints", part, evpart};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        const char *t = tables[i];
        const char *stmts[] = {fmt("UPDATE %s SET %s", t,
                                   strncmp(t, "audit_events", 12) == 0  ? "details = '{}'"
                                   : strncmp(t, "audit_chain", 11) == 0 ? "hash = prev_hash"
                                                                        : "key_id = 'forged'"),
                               fmt("DELETE FROM %s", t), fmt("TRUNCATE %s", t)};
        for (size_t k = 0; k < sizeof stmts / sizeof stmts[0]; k++) {
            char *e = app_error(stmts[k]);
            ck_assert_msg(e != NULL, "the application role may: %s", stmts[k]);
            ck_assert_msg(strncmp(e, "42501 permission denied", 23) == 0, "%s: %s", stmts[k], e);
            free(e);
        }
    }
    /* nor write the chain or move its head other than through aidc_audit_seal() */
    const char *more[] = {
        "INSERT INTO audit_chain SELECT now(), 0, 999999, hash, hash FROM audit_chain_head",
        "UPDATE audit_chain_head SET seq = 0", "DELETE FROM audit_record_ids"};
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) {
        char *e = app_error(more[k]);
        ck_assert_msg(e != NULL, "the application role may: %s", more[k]);
        ck_assert_msg(strncmp(e, "42501 permission denied", 23) == 0, "%s: %s", more[k], e);
        free(e);
    }
    free(part);
    free(evpart);
    /* and nothing changed */
    json_t *v = audittest_api_verify();
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
}
END_TEST

/* ---- a consistent rewrite (last: it is not undone) ----------------------------------------- */

/*
 * An event as the chain hashes it, built here independently of aidcd's own
 * query (db/audit.c): the canonical form is documented (audit/chain.h,
 * docs/audit.md) so auditors can recompute it, and so can an attacker. The
 * test first proves this recomputation reproduces every stored hash.
 */
#define EVENT_AS_HASHED                                                                            \
    "SELECT c.seq, encode(c.prev_hash, 'hex'), encode(c.hash, 'hex'),"                             \
    " json_build_object('id', e.id, 'seq', c.seq,"                                                 \
    "  'ts', to_char(e.ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"               \
    "  'actor', json_build_object('user', e.actor_username, 'user_id', e.actor_user_id,"           \
    "    'token_id', e.actor_token_id, 'roles', e.actor_roles),"                                   \
    "  'tenant', e.tenant_slug, 'tenant_id', e.tenant_id, 'source_ip', host(e.source_ip),"         \
    "  'user_agent', e.user_agent, 'request_id', e.request_id, 'action', e.action,"                \
    "  'resource', json_build_object('type', e.resource_type, 'id', e.resource_id),"               \
    "  'outcome', e.outcome, 'status', e.status, 'details', e.details,"                            \
    "  'record_id', e.record_id)"                                                                  \
    " FROM audit_chain c JOIN audit_events e ON e.ts = c.event_ts AND e.id = c.event_id"           \
    " WHERE c.seq >= $1::bigint ORDER BY c.seq"

/* Hash the rows of EVENT_AS_HASHED from prev on; hashes[i] receives row i's. */
static void rehash(PGresult *r, const unsigned char prev0[CHAIN_HASH_LEN],
                   unsigned char (*hashes)[CHAIN_HASH_LEN])
{
    unsigned char prev[CHAIN_HASH_LEN];
    memcpy(prev, prev0, sizeof prev);
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *ev = json_loads(PQgetvalue(r, i, 3), 0, NULL);
        ck_assert_ptr_nonnull(ev);
        ck_assert_int_eq(chain_link(prev, ev, hashes[i]), 0);
        json_decref(ev);
        memcpy(prev, hashes[i], sizeof prev);
    }
}

#define REWRITE_AT 20 /* the position of the event the rewrites edit */

/* The first checkpoint at or after REWRITE_AT: id, position and the event there. */
struct first_cp {
    long long id, seq, event;
};

static void first_cp_after_edit(struct first_cp *f)
{
    const char *p[1] = {fmt("%d", REWRITE_AT)};
    f->id = audittest_num(harness_srv.owner_url,
                          "SELECT id FROM audit_checkpoints WHERE seq >= $1::bigint"
                          " ORDER BY seq, id LIMIT 1",
                          1, p);
    const char *pc[1] = {fmt("%lld", f->id)};
    f->seq = audittest_num(harness_srv.owner_url,
                           "SELECT seq FROM audit_checkpoints WHERE id = $1::bigint", 1, pc);
    f->event = event_at(f->seq);
}

/*
 * As a superuser who knows the canonical form: merge patch (a JSON object)
 * into the details of the event at REWRITE_AT and chain every entry from
 * there to the head again, moving the head's hash along, in one transaction
 * taken while the chain is at rest. Checkpoints are left as they are.
 */
static void rewrite_chain(PGconn *c, const char *patch)
{
    long long head = audittest_wait_quiet(QUIET_WAIT_S);
    ck_assert_int_ge(head, chain_len);
    char kb[24];
    const char *pk[1] = {NUM(kb, REWRITE_AT)};
    su_do(c, "BEGIN", 0, NULL);
    /* a sealer that finds something to chain meanwhile waits for this transaction */
    PGresult *h = su(c, "SELECT seq FROM audit_chain_head FOR UPDATE", 0, NULL);
    ck_assert_int_eq(strtoll(PQgetvalue(h, 0, 0), NULL, 10), head);
    PQclear(h);
    PGresult *r = su(c, EVENT_AS_HASHED, 1, pk);
    int n = PQntuples(r);
    ck_assert_int_eq(n, head - REWRITE_AT + 1);
    unsigned char prev[CHAIN_HASH_LEN], stored[CHAIN_HASH_LEN];
    unsigned char(*hashes)[CHAIN_HASH_LEN] = calloc((size_t)n, CHAIN_HASH_LEN);
    ck_assert_ptr_nonnull(hashes);
    ck_assert(chain_unhex(PQgetvalue(r, 0, 1), prev));
    /* the recomputation agrees with aidcd on the chain as it is */
    rehash(r, prev, hashes);
    for (int i = 0; i < n; i++) {
        ck_assert(chain_unhex(PQgetvalue(r, i, 2), stored));
        ck_assert_msg(memcmp(stored, hashes[i], CHAIN_HASH_LEN) == 0,
                      "recomputed hash of position %s differs", PQgetvalue(r, i, 0));
    }
    PQclear(r);
    /* edit, and chain everything after it again */
    char idb[24];
    const char *pe[2] = {NUM(idb, event_at(REWRITE_AT)), patch};
    su_change(c, "UPDATE audit_events SET details = details || $2::jsonb WHERE id = $1::bigint", 2,
              pe, 1);
    r = su(c, EVENT_AS_HASHED, 1, pk);
    ck_assert_int_eq(PQntuples(r), n);
    rehash(r, prev, hashes);
    PQclear(r);
    char hex[CHAIN_HEX_LEN + 1], prevhex[CHAIN_HEX_LEN + 1], seqb[24];
    chain_hex(prev, prevhex);
    for (int i = 0; i < n; i++) {
        chain_hex(hashes[i], hex);
        const char *p[3] = {NUM(seqb, REWRITE_AT + i), prevhex, hex};
        su_change(c,
                  "UPDATE audit_chain SET prev_hash = decode($2, 'hex'), hash = decode($3, 'hex')"
                  " WHERE seq = $1::bigint",
                  3, p, 1);
        memcpy(prevhex, hex, sizeof hex);
    }
    const char *ph[1] = {prevhex};
    su_change(c, "UPDATE audit_chain_head SET hash = decode($1, 'hex')", 1, ph, 1);
    su_do(c, "COMMIT", 0, NULL);
    free(hashes);
}

START_TEST(a_consistent_rewrite_is_caught_by_the_signed_checkpoints)
{
    struct first_cp cp;
    first_cp_after_edit(&cp);
    long long cp_last =
        audittest_num(harness_srv.owner_url, "SELECT max(id) FROM audit_checkpoints", 0, NULL);
    PGconn *c = su_connect();
    rewrite_chain(c, "{\"approved_by\":\"nobody\"}");

    /* every hash and link holds: only the signed heads tell */
    struct seen s;
    s.cli = audittest_cli_verify(&harness_srv, keyfile, &s.cli_rc); /* first: it writes no event */
    s.api = audittest_api_verify();
    expect_broken(&s, cp.event, cp.id, "names another chain head");
    ck_assert_int_eq(jint(s.cli, "verified"), cp.seq);
    seen_free(&s);

    /* the checkpoints' heads rewritten too: their signatures still tell */
    char kb[24], lb[24];
    const char *pcp[2] = {NUM(kb, REWRITE_AT), NUM(lb, cp_last)};
    PGresult *u = su(c,
                     "UPDATE audit_checkpoints p SET head_hash = x.hash FROM audit_chain x"
                     " WHERE x.seq = p.seq AND p.seq >= $1::bigint AND p.id <= $2::bigint",
                     2, pcp);
    ck_assert_int_ge(atoi(PQcmdTuples(u)), 1);
    PQclear(u);
    s.cli = audittest_cli_verify(&harness_srv, keyfile, &s.cli_rc);
    s.api = audittest_api_verify();
    expect_broken(&s, cp.event, cp.id, "does not verify");
    seen_free(&s);
    PQfinish(c);
}
END_TEST

/*
 * The same rewrite, and the checkpoints that would tell made unsigned
 * (alg "none", as aidcd writes them when it has no key) instead of forged.
 * aidcd with a key never writes an unsigned checkpoint, so one that names a
 * rewritten head must not let the chain pass for whole: were it accepted,
 * the signature would stand in nobody's way.
 */
START_TEST(checkpoints_made_unsigned_do_not_hide_a_rewrite)
{
    struct first_cp cp;
    first_cp_after_edit(&cp);
    PGconn *c = su_connect();
    rewrite_chain(c, "{\"amount\":\"0.00\"}");
    char kb[24];
    const char *p[1] = {NUM(kb, REWRITE_AT)};
    PGresult *u = su(c,
                     "UPDATE audit_checkpoints p SET head_hash = x.hash, alg = 'none',"
                     " key_id = '', signature = '' FROM audit_chain x"
                     " WHERE x.seq = p.seq AND p.seq >= $1::bigint",
                     1, p);
    ck_assert_int_ge(atoi(PQcmdTuples(u)), 1);
    PQclear(u);
    struct seen s;
    s.cli = audittest_cli_verify(&harness_srv, keyfile, &s.cli_rc);
    s.api = audittest_api_verify();
    expect_broken(&s, cp.event, cp.id, "");
    seen_free(&s);
    PQfinish(c);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("audit_tamper");
    TCase *tc = tcase_create("audit_tamper");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, an_untouched_chain_verifies);
    tcase_add_test(tc, edited_details_are_found_at_that_event);
    tcase_add_test(tc, a_deleted_event_is_found_missing);
    tcase_add_test(tc, a_deleted_event_and_its_entry_break_the_chain_at_the_next);
    tcase_add_test(tc, truncated_newest_events_are_found_by_the_checkpoint_past_the_end);
    tcase_add_test(tc, swapped_events_are_found_at_the_first);
    tcase_add_test(tc, swapped_chain_hashes_are_found_at_the_first);
    tcase_add_test(tc, an_altered_checkpoint_head_is_found);
    tcase_add_test(tc, an_altered_checkpoint_signature_is_found);
    tcase_add_test(tc, the_application_role_cannot_rewrite_the_audit_tables);
    /* last: their rewrites stay */
    tcase_add_test(tc, a_consistent_rewrite_is_caught_by_the_signed_checkpoints);
    tcase_add_test(tc, checkpoints_made_unsigned_do_not_hide_a_rewrite);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
