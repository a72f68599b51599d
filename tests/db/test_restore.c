/*
 * test_restore.c - a backup restores as docs/operations.md says: `pg_dump -Fc`
 * of a migrated database as the owner, `pg_restore --exit-on-error` into an
 * empty database the owner made, and the restored log is searchable.
 *
 * pg_restore builds indexes with an empty search_path: an index expression
 * whose SQL function calls another function of the schema without naming it
 * fails there (the first form of 0038 did), and the restore stops. The restored
 * database must also be at the binary's schema, with the audit event found by
 * its resource id through the rebuilt full-text index. Once an operator
 * validated jobs_row_ok (0040 adds it NOT VALID), pg_dump writes it into the
 * table's definition, and the restore's COPY of jobs calls aidc_job_row_ok for
 * every row - with that same empty search_path.
 */
#include "tests/support/harness.h"
#include "tests/support/pgextra.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RID "af5b16db-cb94-4c49-9cdf-877441603d7b"

static struct aidc_server srv;
static char target[80], target_owner_url[512], dump_path[128];

/* A statement as the owner role, in the database the test databases come from. */
static void admin(const char *sql)
{
    ck_assert_msg(harness_sql_ok(getenv("AIDC_TEST_OWNER_URL"), sql), "%s failed", sql);
}

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&srv, "restore");
    snprintf(target, sizeof target, "%s_r", srv.dbname);
    harness_url_with_db(srv.owner_url, target, target_owner_url, sizeof target_owner_url);
    snprintf(dump_path, sizeof dump_path, "/tmp/aidc-test-restore-%ld.dump", (long)getpid());
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", target);
    admin(sql);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", target);
    admin(sql);
}

static void teardown(void)
{
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", target);
    admin(sql);
    unlink(dump_path);
    harness_db_discard(&srv);
}

/* Run a command line; its exit status. */
static int run(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Dump and restore as docs/operations.md says; pg_restore's exit status. */
static int dump_and_restore(void)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, PGEXTRA_PGBIN "/pg_dump -Fc -d '%s' -f '%s'", srv.owner_url,
             dump_path);
    ck_assert_int_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd, PGEXTRA_PGBIN "/pg_restore --exit-on-error -d '%s' '%s'",
             target_owner_url, dump_path);
    return run(cmd);
}

START_TEST(a_dump_restores_and_its_log_is_searchable)
{
    ck_assert(harness_sql_ok(srv.owner_url,
                             "INSERT INTO audit_events (action, resource_type, resource_id,"
                             " outcome) VALUES ('job.submit', 'job', '" RID "', 'success')"));
    ck_assert_int_eq(dump_and_restore(), 0);
    long want =
        harness_sql_long(srv.owner_url, "SELECT max(version) FROM aidc_schema_migrations", 0, NULL);
    ck_assert_int_eq(harness_sql_long(target_owner_url,
                                      "SELECT max(version) FROM aidc_schema_migrations", 0, NULL),
                     want);
    ck_assert_int_eq(harness_sql_long(target_owner_url,
                                      "SELECT count(*) FROM audit_events WHERE aidc_audit_tsv("
                                      "action, resource_type, resource_id, details)"
                                      " @@ aidc_audit_query('" RID "')",
                                      0, NULL),
                     1);
}
END_TEST

START_TEST(a_validated_job_rule_restores_with_its_rows)
{
    ck_assert(harness_sql_ok(
        srv.owner_url,
        "WITH t AS (INSERT INTO tenants (slug, name) VALUES ('physics', 'Physics') RETURNING id),"
        " u AS (INSERT INTO users (username) VALUES ('alice') RETURNING id),"
        " p AS (INSERT INTO projects (tenant_id, slug, name) SELECT id, 'lhc', 'LHC' FROM t"
        "       RETURNING id, tenant_id)"
        " INSERT INTO jobs (tenant_id, project_id, user_id, username, name, cpus, memory_gib,"
        "   gpus, gpu_type, command) SELECT p.tenant_id, p.id, u.id, 'alice', 'j', 1, 1, 2,"
        "   'a100', '[\"true\"]' FROM p, u"));
    ck_assert(harness_sql_ok(srv.owner_url, "ALTER TABLE jobs VALIDATE CONSTRAINT jobs_row_ok"));
    ck_assert_int_eq(dump_and_restore(), 0);
    ck_assert_int_eq(harness_sql_long(target_owner_url,
                                      "SELECT count(*) FROM jobs WHERE gpu_type = 'a100'", 0, NULL),
                     1);
    ck_assert_int_eq(harness_sql_long(target_owner_url,
                                      "SELECT convalidated::int FROM pg_constraint"
                                      " WHERE conname = 'jobs_row_ok'",
                                      0, NULL),
                     1);
}
END_TEST

static Suite *restore_suite(void)
{
    Suite *s = suite_create("restore");
    TCase *tc = tcase_create("restore");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_dump_restores_and_its_log_is_searchable);
    tcase_add_test(tc, a_validated_job_rule_restores_with_its_rows);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(restore_suite());
}
