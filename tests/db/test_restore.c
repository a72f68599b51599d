/*
 * test_restore.c - a backup restores as docs/operations.md says: `pg_dump -Fc`
 * of a migrated database as the owner, `pg_restore --exit-on-error` into an
 * empty database the owner made, and the restored log is searchable.
 *
 * pg_restore builds indexes with an empty search_path: an index expression
 * whose SQL function calls another function of the schema without naming it
 * fails there (the first form of 0038 did), and the restore stops. The restored
 * database must also be at the binary's schema, with the audit event found by
 * its resource id through the rebuilt full-text index.
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

START_TEST(a_dump_restores_and_its_log_is_searchable)
{
    ck_assert(harness_sql_ok(srv.owner_url,
                             "INSERT INTO audit_events (action, resource_type, resource_id,"
                             " outcome) VALUES ('job.submit', 'job', '" RID "', 'success')"));
    char cmd[2048];
    snprintf(cmd, sizeof cmd, PGEXTRA_PGBIN "/pg_dump -Fc -d '%s' -f '%s'", srv.owner_url,
             dump_path);
    ck_assert_int_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd, PGEXTRA_PGBIN "/pg_restore --exit-on-error -d '%s' '%s'",
             target_owner_url, dump_path);
    ck_assert_int_eq(run(cmd), 0);
    long want = harness_sql_long(srv.owner_url,
                                 "SELECT max(version) FROM aidc_schema_migrations", 0, NULL);
    ck_assert_int_eq(harness_sql_long(target_owner_url,
                                      "SELECT max(version) FROM aidc_schema_migrations", 0,
                                      NULL),
                     want);
    ck_assert_int_eq(harness_sql_long(target_owner_url,
                                      "SELECT count(*) FROM audit_events WHERE aidc_audit_tsv("
                                      "action, resource_type, resource_id, details)"
                                      " @@ aidc_audit_query('" RID "')",
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(restore_suite());
}
