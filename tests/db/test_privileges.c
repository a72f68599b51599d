/*
 * test_privileges.c - what the application role may do beyond row-level
 * security, tested as that role in SQL (no aidcd involved), in the worst
 * database it meets: one whose owner grants it DML on every table it creates
 * (default privileges, as deploy/pg-up.sh did until migration 0009), the
 * audit partitions included.
 *
 *   SECURITY DEFINER functions: the application role runs every one, PUBLIC
 *   and other roles none (0004's were PUBLIC's too)
 *   audit partitions, old and new: no privilege at all, so no event with a
 *   chosen ts goes straight into one, and none is read past the parent's
 *   policy; `aidcd migrate` takes back a grant made on one by hand
 *   through the parents: writes, the ingest function and reads work as before
 *   audit retention: the drop itself and the floor `aidcd migrate` records
 *   are the owner's (test_audit_retention.c shows the floor holding)
 *   login sessions: read, added and dropped, never rewritten
 */
#include "tests/support/harness.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct aidc_server db;
static PGconn *app;

/* The SECURITY DEFINER functions of aidc, triggers aside (FROM pg_proc p). */
#define DEFINERS                                                                                   \
    " p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'aidc\\_%' AND p.prosecdef"       \
    " AND p.prorettype <> 'trigger'::regtype"
#define AUDIT_PARTITIONS                                                                           \
    " FROM pg_inherits i WHERE i.inhparent IN ('audit_events'::regclass, 'audit_chain'::regclass)"
/* The partitions of this month (UTC, as aidc_audit_partitions names them). */
#define THIS_MONTH "to_char(now() AT TIME ZONE 'UTC', 'YYYYMM')"

/* Run sql as the application role; NULL and its SQLSTATE in state (if given) on error. */
static PGresult *app_sql(const char *sql, char *state)
{
    PGresult *r = PQexec(app, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        if (state)
            snprintf(state, 6, "%s", s ? s : "?????");
        PQclear(r);
        PQclear(PQexec(app, "ROLLBACK"));
        return NULL;
    }
    return r;
}

static long count(const char *sql)
{
    char state[6] = "";
    PGresult *r = app_sql(sql, state);
    ck_assert_msg(r != NULL, "%s failed: %s", sql, state);
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static void expect_error(const char *sql, const char *sqlstate)
{
    char state[6] = "";
    PGresult *r = app_sql(sql, state);
    ck_assert_msg(r == NULL, "%s succeeded but should fail with %s", sql, sqlstate);
    ck_assert_msg(strcmp(state, sqlstate) == 0, "%s failed with %s, expected %s", sql, state,
                  sqlstate);
}

/* Run sql as the owner, with the application role's name in the setting aidc_test.app. */
static void owner_do(const char *sql)
{
    PGconn *c = PQconnectdb(db.owner_url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "owner: %s", PQerrorMessage(c));
    const char *app_role = PQuser(app);
    const char *p[1] = {app_role};
    PGresult *r =
        PQexecParams(c, "SELECT set_config('aidc_test.app', $1, false)", 1, NULL, p, NULL, NULL, 0);
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
    r = PQexec(c, sql);
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK, "%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
}

static void migrate(void)
{
    char out[320];
    snprintf(out, sizeof out, "%s/migrate.log", db.data_dir);
    const char *args[] = {"migrate", NULL};
    ck_assert_msg(harness_run_aidcd(&db, args, NULL, out) == 0, "aidcd migrate failed, see %s",
                  out);
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static void open_app(void)
{
    app = PQconnectdb(db.app_url);
    ck_assert_msg(PQstatus(app) == CONNECTION_OK, "app: %s", PQerrorMessage(app));
    PQsetNoticeProcessor(app, quiet, NULL); /* the ROLLBACK after an error outside a transaction */
}

static void close_app(void)
{
    PQfinish(app);
    app = NULL;
}

/* As harness_db_create, with the owner's default privileges set before migrating. */
static void setup(void)
{
    harness_require_pg();
    snprintf(db.dbname, sizeof db.dbname, "aidc_t_privileges_%d", (int)getpid());
    harness_url_with_db(getenv("AIDC_TEST_APP_URL"), db.dbname, db.app_url, sizeof db.app_url);
    harness_url_with_db(getenv("AIDC_TEST_OWNER_URL"), db.dbname, db.owner_url,
                        sizeof db.owner_url);
    snprintf(db.data_dir, sizeof db.data_dir, "/tmp/aidc-test-privileges-%d", (int)getpid());
    mkdir(db.data_dir, 0700);
    const char *owner = getenv("AIDC_TEST_OWNER_URL");
    char sql[128];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", db.dbname);
    PQclear(harness_sql(owner, sql, 0, NULL));
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db.dbname);
    PGresult *r = harness_sql(owner, sql, 0, NULL);
    if (!r) {
        fprintf(stderr, "cannot create database %s\n", db.dbname);
        exit(1);
    }
    PQclear(r);
    open_app();
    owner_do("DO $$ BEGIN EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT,"
             " INSERT, UPDATE, DELETE ON TABLES TO %I', current_setting('aidc_test.app')); END $$");
    close_app();
    migrate();
}

static void teardown(void)
{
    harness_db_discard(&db);
}

START_TEST(definer_functions_are_the_application_roles_alone)
{
    ck_assert_int_ge(count("SELECT count(*) FROM pg_proc p WHERE" DEFINERS), 12);
    ck_assert_int_eq(count("SELECT count(*) FROM pg_proc p WHERE" DEFINERS
                           " AND has_function_privilege('public', p.oid, 'EXECUTE')"),
                     0);
    ck_assert_int_eq(count("SELECT count(*) FROM pg_proc p WHERE" DEFINERS
                           " AND NOT has_function_privilege(current_user, p.oid, 'EXECUTE')"),
                     0);
    ck_assert_int_eq(count("SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a WHERE" DEFINERS
                           " AND a.grantee NOT IN (p.proowner, current_user::regrole::oid)"),
                     0);
    /* the six of 0004 that PUBLIC could run, by name */
    ck_assert_int_eq(count("SELECT count(*) FROM pg_proc p WHERE" DEFINERS
                           " AND p.proname IN ('aidc_audit_partitions', 'aidc_audit_seal',"
                           " 'aidc_audit_head', 'aidc_audit_ingest', 'aidc_audit_search',"
                           " 'aidc_audit_retention')"),
                     6);
    /* what the owner alone runs (from aidc_audit_partitions, aidc_audit_retention and
     * migrations), and the retention floor only it sets */
    expect_error("SELECT aidc_audit_partitions_lock()", "42501");
    expect_error("SELECT aidc_audit_retention_drop(180)", "42501");
    expect_error("SELECT retention_floor_days FROM aidc_audit_policy", "42501");
    expect_error("UPDATE aidc_audit_policy SET retention_floor_days = 180", "42501");
}
END_TEST

START_TEST(audit_partitions_are_reached_through_their_parents_only)
{
    /* made now, as the sealer makes them, under the owner's default privileges */
    ck_assert_int_gt(count("SELECT aidc_audit_partitions(now(), 12)"), 0);
    ck_assert_int_ge(count("SELECT count(*)" AUDIT_PARTITIONS), 2 * 13 + 2);
    ck_assert_int_eq(count("SELECT count(*)" AUDIT_PARTITIONS
                           " AND has_table_privilege(current_user, i.inhrelid,"
                           " 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')"),
                     0);
    /* an event backdated to the start of the month, straight into its partition */
    expect_error("DO $$ BEGIN EXECUTE format('INSERT INTO %I (ts, action, outcome)"
                 " VALUES (%L, ''forged'', ''success'')', 'audit_events_' || " THIS_MONTH ","
                 " date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'); END $$",
                 "42501");
    expect_error("INSERT INTO audit_events_default (ts, action, outcome)"
                 " VALUES ('2001-01-01', 'forged', 'success')",
                 "42501");
    /* read past the parents' row-level security */
    expect_error(
        "DO $$ BEGIN EXECUTE format('SELECT count(*) FROM %I', 'audit_events_' || " THIS_MONTH
        "); END $$",
        "42501");
    expect_error(
        "DO $$ BEGIN EXECUTE format('SELECT count(*) FROM %I', 'audit_chain_' || " THIS_MONTH
        "); END $$",
        "42501");
}
END_TEST

START_TEST(audit_writes_through_the_parents_still_work)
{
    PQclear(app_sql("BEGIN", NULL));
    PQclear(app_sql("SELECT set_config('aidc.roles', 'auditor', true)", NULL));
    ck_assert_int_eq(count("WITH i AS (INSERT INTO audit_events (action, outcome)"
                           " VALUES ('test.app', 'success') RETURNING 1) SELECT count(*) FROM i"),
                     1);
    ck_assert_int_eq(count("SELECT aidc_audit_ingest('[{\"ts\": \"2026-01-01T00:00:00Z\","
                           " \"host\": \"n1\", \"kind\": \"command\", \"record_id\": \"r1\","
                           " \"details\": {\"command\": \"ls\"}}]', NULL, 'agent', NULL, '{}',"
                           " '10.0.0.1', 'test', 'req-1')"),
                     1);
    ck_assert_int_eq(count("SELECT count(*) FROM audit_events"
                           " WHERE action IN ('test.app', 'node.command')"),
                     2);
    ck_assert_int_eq(count("SELECT count(*) FROM aidc_audit_head()"), 1);
    PQclear(app_sql("COMMIT", NULL));
    /* without a role that reads the audit log, the parent's policy hides it */
    ck_assert_int_eq(count("SELECT count(*) FROM audit_events"), 0);
    /* nor can the parent take a ts of the writer's choosing */
    expect_error("INSERT INTO audit_events (ts, action, outcome)"
                 " VALUES ('2001-01-01', 'forged', 'success')",
                 "42501");
}
END_TEST

/* 0012: the application role reads, adds and drops session rows; their origin it cannot
 * rewrite, though the owner's default privileges granted UPDATE on every new table */
START_TEST(a_sessions_origin_is_written_once)
{
    ck_assert_int_eq(count("SELECT count(*) FROM sessions"), 0);
    expect_error("UPDATE sessions SET source_ip = '192.0.2.1'", "42501");
    ck_assert_int_eq(count("SELECT count(*) FROM (SELECT 1 WHERE"
                           " has_table_privilege(current_user, 'sessions', 'DELETE')"
                           " AND has_table_privilege(current_user, 'sessions', 'INSERT')"
                           " AND NOT has_table_privilege(current_user, 'sessions', 'TRUNCATE')) t"),
                     1);
}
END_TEST

START_TEST(migrate_takes_back_a_grant_on_a_partition)
{
    owner_do("DO $$ BEGIN EXECUTE format('GRANT ALL ON %I TO %I', 'audit_events_' || " THIS_MONTH
             ", current_setting('aidc_test.app')); END $$");
    const char *held = "SELECT count(*)" AUDIT_PARTITIONS
                       " AND has_table_privilege(current_user, i.inhrelid, 'INSERT')";
    ck_assert_int_eq(count(held), 1);
    migrate();
    ck_assert_int_eq(count(held), 0);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("privileges");
    TCase *tc = tcase_create("privileges");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, open_app, close_app);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, definer_functions_are_the_application_roles_alone);
    tcase_add_test(tc, audit_partitions_are_reached_through_their_parents_only);
    tcase_add_test(tc, audit_writes_through_the_parents_still_work);
    tcase_add_test(tc, a_sessions_origin_is_written_once);
    tcase_add_test(tc, migrate_takes_back_a_grant_on_a_partition);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
