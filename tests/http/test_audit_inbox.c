/*
 * test_audit_inbox.c - audit events written through the inbox
 * (0029_audit_inbox.sql), against the real aidcd and PostgreSQL: an event is
 * in the search, the export and the verdict's unsealed count while it is still
 * in the inbox, and exactly once after the sealer moved and chained it; the
 * chain verifies before and after; two movers at once (and the sealer, a
 * third) move every event exactly once.
 *
 * To hold an event in the inbox the test locks its row (FOR UPDATE) as the
 * owner: the sealer's move then waits for that lock, while readers, who take
 * no row locks, read on. Releasing the lock lets the move go on.
 */
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

#define AUD_USER "inboxaud"
#define AUD_PW   "auditor-password-1"
#define TRIES    50

static char key_dir[64], key_path[300], pub_path[300];
static char aud[1024]; /* JWT of the auditor */

static void setup(void)
{
    static char env_key[700];
    audittest_key("auditinbox", key_dir, sizeof key_dir, key_path, sizeof key_path, pub_path,
                  sizeof pub_path, env_key, sizeof env_key);
    /* a sealer round every second: time to catch an event before it is moved */
    const char *env[] = {env_key, "AIDC_AUDIT_SEAL_GRACE_MS=2000",
                         "AIDC_AUDIT_CHECKPOINT_SECONDS=1", NULL};
    harness_setup("auditinbox", env);
    audittest_auditor(AUD_USER, AUD_PW, aud, sizeof aud);
    make_tenant("ib");
}

static void teardown(void)
{
    harness_teardown();
    audittest_key_remove(key_dir);
}

static PGconn *owner_conn(void)
{
    PGconn *c = PQconnectdb(harness_srv.owner_url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "owner: %s", PQerrorMessage(c));
    return c;
}

/* sql on c must succeed; its first value as a number (0 when it returns none). */
static long long owner_num(PGconn *c, const char *sql, const char *arg)
{
    const char *p[1] = {arg};
    PGresult *r = PQexecParams(c, sql, arg ? 1 : 0, NULL, p, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    ck_assert_msg(st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK, "%s: %s", sql,
                  PQresultErrorMessage(r));
    long long n =
        st == PGRES_TUPLES_OK && PQntuples(r) > 0 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    return n;
}

/* How many lines of text hold needle. */
static int lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; n++) {
        const char *eol = strchr(p, '\n');
        p = eol ? strstr(eol, needle) : NULL;
    }
    return n;
}

/*
 * Create projects in tenant ib until the event of one is caught in the inbox
 * and locked there in c's open transaction; its project id into id.
 */
static void hold_one_in_inbox(PGconn *c, char *id, size_t n)
{
    for (int i = 0; i < TRIES; i++) {
        struct http_res r;
        /* the pid: every case (a child of its own) makes its own projects */
        const char *body =
            fmt("{\"slug\":\"held%d-%d\",\"name\":\"Held %d\"}", (int)getpid(), i, i);
        ck_assert_int_eq(
            reqj("POST", "/api/v1/tenants/ib/projects", harness_srv.admin_token, body, &r), 201);
        json_t *b = json_loads(r.body, 0, NULL);
        http_res_free(&r);
        ck_assert_ptr_nonnull(jstr(b, "id"));
        snprintf(id, n, "%s", jstr(b, "id"));
        json_decref(b);
        owner_num(c, "BEGIN", NULL);
        if (owner_num(c,
                      "WITH l AS (SELECT 1 FROM audit_inbox WHERE resource_id = $1"
                      " AND action = 'project.create' FOR UPDATE) SELECT count(*) FROM l",
                      id) == 1)
            return;
        owner_num(c, "ROLLBACK", NULL); /* moved already: the next one */
    }
    ck_abort_msg("no event stayed in the inbox long enough in %d tries", TRIES);
}

/* The project.create events of project id that GET /api/v1/audit/events finds. */
static json_t *events_of(const char *id)
{
    return get_items(fmt("/api/v1/audit/events?action=project.create&resource_id=%s", id), aud);
}

START_TEST(an_event_is_read_at_once_and_exactly_once_after_the_move)
{
    PGconn *c = owner_conn();
    char id[64];
    hold_one_in_inbox(c, id, sizeof id);

    /* in the inbox: found, not chained */
    json_t *items = events_of(id);
    ck_assert_int_eq(json_array_size(items), 1);
    ck_assert(json_is_null(json_object_get(json_array_get(items, 0), "seq")));
    json_decref(items);
    struct http_res r;
    audittest_export(aud, fmt("?resource_id=%s", id), &r);
    ck_assert_int_eq(lines_with(r.body, id), 1);
    http_res_free(&r);
    json_t *v = audittest_api_verify();
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_true(json_object_get(v, "ok")));
    ck_assert_int_ge(jint(v, "unsealed"), 1);
    json_decref(v);

    /* let the sealer move and chain it */
    owner_num(c, "ROLLBACK", NULL);
    ck_assert_int_ge(audittest_wait_quiet(30), 1);
    items = events_of(id);
    ck_assert_int_eq(json_array_size(items), 1);
    ck_assert(json_is_integer(json_object_get(json_array_get(items, 0), "seq")));
    json_decref(items);
    ck_assert_int_eq(owner_num(c, "SELECT count(*) FROM audit_inbox WHERE resource_id = $1", id),
                     0);
    ck_assert_int_eq(owner_num(c,
                               "SELECT count(*) FROM audit_events e JOIN audit_chain k"
                               " ON k.event_ts = e.ts AND k.event_id = e.id"
                               " WHERE e.resource_id = $1",
                               id),
                     1);
    audittest_export(aud, fmt("?resource_id=%s", id), &r);
    ck_assert_int_eq(lines_with(r.body, id), 1);
    http_res_free(&r);
    v = audittest_api_verify();
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_true(json_object_get(v, "ok"))); /* (reads since are unsealed events) */
    json_decref(v);
    PQfinish(c);
}
END_TEST

/* 0031: a move that meets a locked inbox row gives up in about 2 s (55P03), not at the
 * statement timeout; the sealer's next round moves the row once it is free */
START_TEST(a_locked_inbox_row_does_not_stall_the_move)
{
    char id[64];
    PGconn *c = owner_conn();
    hold_one_in_inbox(c, id, sizeof id); /* its row locked in c's open transaction */
    PGconn *app = PQconnectdb(harness_srv.app_url);
    ck_assert_msg(PQstatus(app) == CONNECTION_OK, "app: %s", PQerrorMessage(app));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    PGresult *r = PQexec(app, "SELECT aidc_audit_inbox_move()");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    ck_assert_msg(PQresultStatus(r) == PGRES_FATAL_ERROR && state && strcmp(state, "55P03") == 0,
                  "the move answered %s (%s)", PQresStatus(PQresultStatus(r)), state ? state : "");
    ck_assert_msg(took > 1.5 && took < 10, "the move gave up after %.1f s", took);
    PQclear(r);
    PQfinish(app);
    owner_num(c, "ROLLBACK", NULL);
    /* free again: the sealer moves and chains it */
    ck_assert_int_ge(audittest_wait_quiet(30), 1);
    ck_assert_int_eq(owner_num(c, "SELECT count(*) FROM audit_inbox WHERE resource_id = $1", id),
                     0);
    ck_assert_int_eq(owner_num(c,
                               "SELECT count(*) FROM audit_events WHERE resource_id = $1"
                               " AND action = 'project.create'",
                               id),
                     1);
    PQfinish(c);
}
END_TEST

START_TEST(two_movers_at_once_move_every_event_once)
{
    PGconn *a = owner_conn(), *b = owner_conn();
    owner_num(a,
              "INSERT INTO audit_inbox (actor_username, action, resource_type, resource_id,"
              " outcome) SELECT 'racer', 'race.probe', 'probe', g::text, 'success'"
              " FROM generate_series(1, 500) g",
              NULL);
    /* a moves (waiting for rows the sealer holds, if it is at it) and keeps its locks */
    owner_num(a, "BEGIN", NULL);
    owner_num(a, "SELECT aidc_audit_inbox_move()", NULL);
    /* b's move waits for a's row locks, then finds those rows gone */
    ck_assert_int_eq(PQsendQuery(b, "SELECT aidc_audit_inbox_move()"), 1);
    owner_num(a, "COMMIT", NULL);
    PGresult *r;
    while ((r = PQgetResult(b))) {
        ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "the second move: %s",
                      PQresultErrorMessage(r));
        PQclear(r);
    }
    ck_assert_int_eq(
        owner_num(a, "SELECT count(*) FROM audit_inbox WHERE action = 'race.probe'", NULL), 0);
    ck_assert_int_eq(owner_num(a,
                               "SELECT count(DISTINCT resource_id) FROM audit_events"
                               " WHERE action = 'race.probe'",
                               NULL),
                     500);
    ck_assert_int_eq(
        owner_num(a, "SELECT count(*) FROM audit_log WHERE action = 'race.probe'", NULL), 500);
    /* and the sealer chains them, once each: the chain still verifies */
    ck_assert_int_ge(audittest_wait_quiet(30), 500);
    json_t *v = audittest_api_verify();
    ck_assert_ptr_nonnull(v);
    ck_assert(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    PQfinish(a);
    PQfinish(b);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("audit_inbox");
    TCase *tc = tcase_create("audit_inbox");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, an_event_is_read_at_once_and_exactly_once_after_the_move);
    tcase_add_test(tc, two_movers_at_once_move_every_event_once);
    tcase_add_test(tc, a_locked_inbox_row_does_not_stall_the_move);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
