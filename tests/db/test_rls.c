/*
 * test_rls.c - the database's own wall: row-level security and privileges of
 * the application role, tested by talking SQL to PostgreSQL directly as that
 * role (no aidcd involved). Even a handler that forgot its tenant filter
 * would see no foreign rows.
 */
#include "tests/support/suite.h"
#include "tests/support/harness.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static struct aidc_server db;
static char tenant_a[37], tenant_b[37], user_a[37], user_b[37];
static PGconn *app;

/*
 * Run sql on the app connection, with arg as $1 when not NULL; returns the
 * result or NULL (error kept in *state, transaction rolled back).
 */
static PGresult *app_sqlp(const char *sql, const char *arg, char *state)
{
    const char *params[1] = {arg};
    PGresult *r = arg ? PQexecParams(app, sql, 1, NULL, params, NULL, NULL, 0) : PQexec(app, sql);
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

static PGresult *app_sql(const char *sql, char *state)
{
    return app_sqlp(sql, NULL, state);
}

static long countp(const char *sql, const char *arg)
{
    char state[6] = "";
    PGresult *r = app_sqlp(sql, arg, state);
    ck_assert_msg(r != NULL, "%s failed: %s", sql, state);
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static long count(const char *sql)
{
    return countp(sql, NULL);
}

static void expect_errorp(const char *sql, const char *arg, const char *sqlstate)
{
    char state[6] = "";
    PGresult *r = app_sqlp(sql, arg, state);
    ck_assert_msg(r == NULL, "%s succeeded but should fail with %s", sql, sqlstate);
    ck_assert_msg(strcmp(state, sqlstate) == 0, "%s failed with %s, expected %s", sql, state,
                  sqlstate);
}

static void expect_error(const char *sql, const char *sqlstate)
{
    expect_errorp(sql, NULL, sqlstate);
}

static void owner_exec(const char *sql, char *out_id)
{
    PGresult *r = harness_sql(db.owner_url, sql, 0, NULL);
    ck_assert_ptr_nonnull(r);
    if (out_id)
        snprintf(out_id, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

/* BEGIN and set the context of an actor; the caller ends the transaction. */
static void ctx(const char *user, const char *roles, const char *read, const char *admin)
{
    /* as db/db.c derives it: what the global roles let the actor see */
    const char *all = strstr(roles, "platform_admin") ? "admin"
                      : (strstr(roles, "finance") || strstr(roles, "auditor")) ? "read"
                                                                               : "";
    const char *p[5] = {user, roles, read, admin, all};
    PGresult *r = app_sql("BEGIN", NULL);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
    r = PQexecParams(app,
                     "SELECT set_config('aidc.user_id', $1, true), set_config('aidc.roles', $2, true),"
                     " set_config('aidc.read_tenants', $3, true),"
                     " set_config('aidc.admin_tenants', $4, true),"
                     " set_config('aidc.member_tenants', $4, true), set_config('aidc.all', $5, true)",
                     5, NULL, p, NULL, NULL, 0);
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
}

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&db, "rls");
    owner_exec("INSERT INTO tenants (slug, name) VALUES ('tenant-a', 'A') RETURNING id", tenant_a);
    owner_exec("INSERT INTO tenants (slug, name) VALUES ('tenant-b', 'B') RETURNING id", tenant_b);
    owner_exec("INSERT INTO users (username) VALUES ('ua') RETURNING id", user_a);
    owner_exec("INSERT INTO users (username) VALUES ('ub') RETURNING id", user_b);
    const char *ids[4] = {tenant_a, tenant_b, user_a, user_b};
    PQclear(harness_sql(db.owner_url,
                        "INSERT INTO projects (tenant_id, slug, name) VALUES ($1::uuid, 'pa', 'A1'),"
                        " ($2::uuid, 'pb', 'B1'), ($2::uuid, 'pb2', 'B2')",
                        2, ids));
    PQclear(harness_sql(db.owner_url,
                        "INSERT INTO memberships (tenant_id, user_id, role) VALUES"
                        " ($1::uuid, $3::uuid, 'tenant_admin'), ($2::uuid, $4::uuid, 'member')",
                        4, ids));
    PQclear(harness_sql(db.owner_url,
                        "INSERT INTO idempotency_keys (user_id, key, request_hash, status, response,"
                        " expires_at) VALUES ($1::uuid, 'k', 'h', 201, '{}', now() + interval '1 hour'),"
                        " ($2::uuid, 'k', 'h', 201, '{\"secret\":1}', now() + interval '1 hour')",
                        2, ids + 2));
    owner_exec("INSERT INTO audit_events (action, outcome) VALUES ('test.event', 'success') "
               "RETURNING id",
               NULL);
}

static void teardown(void)
{
    harness_db_discard(&db);
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* Each test gets its own session, so no transaction or setting leaks between tests. */
static void open_app(void)
{
    app = PQconnectdb(db.app_url);
    ck_assert_int_eq(PQstatus(app), CONNECTION_OK);
    PQsetNoticeProcessor(app, quiet, NULL);
}

static void close_app(void)
{
    PQfinish(app);
    app = NULL;
}

static long owner_count(const char *sql)
{
    long n = harness_sql_long(db.owner_url, sql, 0, NULL);
    ck_assert_int_ge(n, 0);
    return n;
}

START_TEST(no_context_sees_nothing)
{
    ck_assert_int_eq(count("SELECT count(*) FROM tenants"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM projects"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM memberships"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM idempotency_keys"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM audit_events"), 0);
}
END_TEST

START_TEST(another_tenants_rows_are_invisible)
{
    ctx(user_a, "", tenant_a, tenant_a);
    ck_assert_int_eq(count("SELECT count(*) FROM projects"), 1);
    /* even when asked for by id */
    ck_assert_int_eq(countp("SELECT count(*) FROM projects WHERE tenant_id = $1::uuid", tenant_b), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM tenants"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM tenants WHERE slug = 'tenant-b'"), 0);
    ck_assert_int_eq(countp("SELECT count(*) FROM memberships WHERE tenant_id = $1::uuid", tenant_b),
                     0);
    PQclear(app_sql("COMMIT", NULL));
}
END_TEST

START_TEST(another_tenants_rows_cannot_be_changed)
{
    ctx(user_a, "", tenant_a, tenant_a);
    expect_errorp("INSERT INTO projects (tenant_id, slug, name) VALUES ($1::uuid, 'evil', 'x')",
                  tenant_b, "42501");
    ctx(user_a, "", tenant_a, tenant_a);
    ck_assert_int_eq(countp("WITH u AS (UPDATE projects SET name = 'pwned' WHERE tenant_id = $1::uuid"
                            " RETURNING 1) SELECT count(*) FROM u",
                            tenant_b),
                     0);
    ck_assert_int_eq(countp("WITH d AS (DELETE FROM projects WHERE tenant_id = $1::uuid RETURNING 1)"
                            " SELECT count(*) FROM d",
                            tenant_b),
                     0);
    /* moving an own row into the other tenant is refused too */
    expect_errorp("UPDATE projects SET tenant_id = $1::uuid WHERE slug = 'pa'", tenant_b, "42501");
    /* a reader of B who is not its admin cannot write there */
    ctx(user_b, "", tenant_b, "");
    expect_errorp("INSERT INTO projects (tenant_id, slug, name) VALUES ($1::uuid, 'new', 'x')",
                  tenant_b, "42501");
    PGresult *r = harness_sql(db.owner_url, "SELECT count(*) FROM projects WHERE name = 'pwned'"
                                            " OR slug IN ('evil', 'new')", 0, NULL);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "0");
    PQclear(r);
}
END_TEST

START_TEST(context_ends_with_the_transaction)
{
    ctx(user_a, "", tenant_a, tenant_a);
    ck_assert_int_eq(count("SELECT count(*) FROM projects"), 1);
    PQclear(app_sql("COMMIT", NULL));
    ck_assert_int_eq(count("SELECT count(*) FROM projects"), 0);
}
END_TEST

START_TEST(platform_roles_read_everything_but_only_admins_write)
{
    ctx(user_a, "auditor", "", "");
    ck_assert_int_eq(count("SELECT count(*) FROM projects"), 3);
    ck_assert_int_eq(count("SELECT count(*) FROM audit_events"),
                     owner_count("SELECT count(*) FROM audit_events"));
    expect_error("INSERT INTO tenants (slug, name) VALUES ('by-auditor', 'x')", "42501");
    ctx(user_a, "finance", "", "");
    ck_assert_int_eq(count("SELECT count(*) FROM tenants"), 2);
    ck_assert_int_eq(count("SELECT count(*) FROM audit_events"), 0); /* finance: not audit */
    PQclear(app_sql("COMMIT", NULL));
    ctx(user_a, "platform_admin", "", "");
    ck_assert_int_eq(count("WITH t AS (INSERT INTO tenants (slug, name) VALUES ('by-admin', 'x') "
                           "RETURNING 1) SELECT count(*) FROM t"),
                     1);
    PQclear(app_sql("ROLLBACK", NULL));
}
END_TEST

START_TEST(idempotency_keys_are_private_to_their_user)
{
    ctx(user_a, "", tenant_a, tenant_a);
    ck_assert_int_eq(count("SELECT count(*) FROM idempotency_keys"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM idempotency_keys WHERE response LIKE '%secret%'"),
                     0);
    PQclear(app_sql("COMMIT", NULL));
}
END_TEST

START_TEST(audit_events_are_append_only)
{
    ctx(user_a, "platform_admin", "", "");
    ck_assert_int_eq(count("WITH i AS (INSERT INTO audit_events (action, outcome) VALUES "
                           "('test.app', 'success') RETURNING 1) SELECT count(*) FROM i"),
                     1);
    PQclear(app_sql("COMMIT", NULL));
    ctx(user_a, "platform_admin", "", "");
    expect_error("UPDATE audit_events SET action = 'forged'", "42501");
    ctx(user_a, "platform_admin", "", "");
    expect_error("DELETE FROM audit_events", "42501");
    ctx(user_a, "platform_admin", "", "");
    expect_error("TRUNCATE audit_events", "42501");
    /* not even a superuser gets past the trigger with plain SQL */
    const char *admin_url = getenv("AIDC_TEST_SUPERUSER_URL");
    if (admin_url) {
        char url[600];
        harness_url_with_db(admin_url, db.dbname, url, sizeof url);
        PGconn *su = PQconnectdb(url);
        ck_assert_int_eq(PQstatus(su), CONNECTION_OK);
        PGresult *r = PQexec(su, "UPDATE audit_events SET action = 'forged'");
        ck_assert_int_eq(PQresultStatus(r), PGRES_FATAL_ERROR);
        ck_assert_str_eq(PQresultErrorField(r, PG_DIAG_SQLSTATE), "42501");
        PQclear(r);
        PQfinish(su);
    }
}
END_TEST

/* 0029: events wait in audit_inbox behind the same wall, and leave it only by the move */
START_TEST(the_audit_inbox_is_walled_like_the_log)
{
    const char *ids[1] = {tenant_a};
    PQclear(harness_sql(db.owner_url,
                        "INSERT INTO audit_inbox (action, outcome, tenant_id)"
                        " VALUES ('test.inbox', 'success', $1::uuid)",
                        1, ids));
    /* a tenant's admin reads no event, not even of its own tenant, moved or not */
    ctx(user_a, "", tenant_a, tenant_a);
    ck_assert_int_eq(count("SELECT count(*) FROM audit_inbox"), 0);
    ck_assert_int_eq(count("SELECT count(*) FROM audit_log"), 0);
    PQclear(app_sql("COMMIT", NULL));
    ctx(user_a, "auditor", "", "");
    ck_assert_int_eq(count("SELECT count(*) FROM audit_inbox WHERE action = 'test.inbox'"), 1);
    ck_assert_int_eq(count("SELECT count(*) FROM audit_log"),
                     owner_count("SELECT count(*) FROM audit_log"));
    PQclear(app_sql("COMMIT", NULL));
    const char *refused[] = {"UPDATE audit_inbox SET action = 'forged'", "DELETE FROM audit_inbox",
                             "TRUNCATE audit_inbox",
                             "INSERT INTO audit_inbox (ts, action, outcome)"
                             " VALUES ('2000-01-01', 'forged', 'success')"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ctx(user_a, "platform_admin", "", "");
        expect_error(refused[i], "42501");
    }
    ctx(user_a, "platform_admin", "", "");
    ck_assert_int_ge(count("SELECT aidc_audit_inbox_move()"), 1);
    PQclear(app_sql("COMMIT", NULL));
    ck_assert_int_eq(owner_count("SELECT count(*) FROM audit_inbox"), 0);
    ck_assert_int_eq(owner_count("SELECT count(*) FROM audit_events WHERE action = 'test.inbox'"),
                     1);
}
END_TEST

START_TEST(application_role_cannot_change_the_schema)
{
    expect_error("CREATE TABLE evil (x int)", "42501");
    expect_error("DROP TABLE projects", "42501");
    expect_error("ALTER TABLE projects DISABLE ROW LEVEL SECURITY", "42501");
    expect_error("ALTER TABLE audit_events DISABLE TRIGGER audit_events_immutable", "42501");
    expect_error("INSERT INTO aidc_schema_migrations (version, name, checksum) VALUES (999, 'x', 'y')",
                 "42501");
    ck_assert_int_eq(count("SELECT count(*) FROM pg_roles WHERE rolname = current_user"
                           " AND (rolsuper OR rolbypassrls)"),
                     0);
    ck_assert_int_eq(count("SELECT count(*) FROM pg_tables WHERE tableowner = current_user"), 0);
}
END_TEST

/* job templates (migration 0023): the platform's are read by all and written by
 * platform admins; a tenant's as its other rows, written by its admins */
START_TEST(job_templates_follow_their_owner)
{
    const char *ids[1] = {tenant_b};
    PQclear(harness_sql(db.owner_url,
                        "INSERT INTO job_templates (tenant_id, name, spec, created_by) VALUES"
                        " (NULL, 'rls-plat', '{}', 'o'), ($1::uuid, 'rls-b', '{}', 'o')",
                        1, ids));
    ctx(user_a, "", tenant_a, tenant_a); /* admin of A */
    ck_assert_int_eq(count("SELECT count(*) FROM job_templates WHERE name = 'rls-plat'"), 1);
    ck_assert_int_eq(countp("SELECT count(*) FROM job_templates WHERE tenant_id = $1::uuid", tenant_b),
                     0);
    ck_assert_int_eq(countp("WITH i AS (INSERT INTO job_templates (tenant_id, name, spec, created_by)"
                            " VALUES ($1::uuid, 'rls-a', '{}', 'ua') RETURNING 1) SELECT count(*) FROM i",
                            tenant_a),
                     1);
    ck_assert_int_eq(count("WITH u AS (UPDATE job_templates SET spec = '{\"x\":1}'"
                           " WHERE tenant_id IS NULL RETURNING 1) SELECT count(*) FROM u"),
                     0);
    ck_assert_int_eq(count("WITH d AS (DELETE FROM job_templates WHERE tenant_id IS NULL"
                           " RETURNING 1) SELECT count(*) FROM d"),
                     0);
    PQclear(app_sql("ROLLBACK", NULL));
    ctx(user_a, "", tenant_a, tenant_a);
    expect_errorp("INSERT INTO job_templates (tenant_id, name, spec, created_by)"
                  " VALUES ($1::uuid, 'evil', '{}', 'ua')",
                  tenant_b, "42501");
    ctx(user_a, "", tenant_a, tenant_a);
    expect_error("INSERT INTO job_templates (tenant_id, name, spec, created_by)"
                 " VALUES (NULL, 'evil', '{}', 'ua')",
                 "42501");
    ctx(user_b, "", tenant_b, ""); /* a reader of B, not its admin */
    ck_assert_int_eq(count("SELECT count(*) FROM job_templates WHERE name = 'rls-b'"), 1);
    expect_errorp("INSERT INTO job_templates (tenant_id, name, spec, created_by)"
                  " VALUES ($1::uuid, 'evil', '{}', 'ub')",
                  tenant_b, "42501");
    ctx(user_a, "platform_admin", "", "");
    ck_assert_int_eq(count("WITH u AS (UPDATE job_templates SET spec = '{\"x\":1}'"
                           " WHERE name = 'rls-plat' RETURNING 1) SELECT count(*) FROM u"),
                     1);
    PQclear(app_sql("ROLLBACK", NULL));
    PGresult *r = harness_sql(db.owner_url,
                              "SELECT count(*) FROM job_templates WHERE name IN ('evil', 'rls-a')"
                              " OR spec ? 'x'",
                              0, NULL);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "0");
    PQclear(r);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("rls");
    TCase *tc = tcase_create("rls");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, open_app, close_app);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, no_context_sees_nothing);
    tcase_add_test(tc, another_tenants_rows_are_invisible);
    tcase_add_test(tc, another_tenants_rows_cannot_be_changed);
    tcase_add_test(tc, context_ends_with_the_transaction);
    tcase_add_test(tc, platform_roles_read_everything_but_only_admins_write);
    tcase_add_test(tc, idempotency_keys_are_private_to_their_user);
    tcase_add_test(tc, audit_events_are_append_only);
    tcase_add_test(tc, the_audit_inbox_is_walled_like_the_log);
    tcase_add_test(tc, application_role_cannot_change_the_schema);
    tcase_add_test(tc, job_templates_follow_their_owner);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
