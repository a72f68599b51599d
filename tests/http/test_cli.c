/*
 * test_cli.c - the aidcd command line and its start-up checks: --help, bad
 * settings stop the start with one line naming them, migrations are applied
 * once and checksummed (an edited one, a newer database or one missing a
 * migration below its highest is refused), serve
 * refuses an unmigrated database (unless AIDC_AUTO_MIGRATE) and a database
 * role that would bypass row-level security, and the session key file.
 */
#include "tests/support/suite.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct aidc_server db;
static char out[320];

static void setup(void)
{
    harness_require_pg();
    harness_db_create(&db, "cli");
    snprintf(out, sizeof out, "%s/cli.out", db.data_dir);
}

static void teardown(void)
{
    harness_db_discard(&db);
}

/* Run aidcd with args/env on db; returns the exit status, output in *text. */
static int run(const char *const *args, const char *const *env, char **text)
{
    int st = harness_run_aidcd(&db, args, env, out);
    *text = harness_read_file(out);
    return st;
}

static void owner_sql(const char *sql)
{
    ck_assert_msg(harness_sql_ok(db.owner_url, sql), "%s failed", sql);
}

/* Start serve on a throwaway port and stop it again; returns the exit status. */
static int serve_once(const char *const *env, char **text)
{
    struct aidc_server s = db;
    snprintf(s.log_path, sizeof s.log_path, "%s/serve-once.log", db.data_dir);
    unlink(s.log_path);
    int st = harness_server_start(&s, env) == 0 ? harness_server_stop(&s) : 1;
    if (s.pid > 0)
        harness_server_stop(&s);
    *text = harness_read_file(s.log_path);
    return st;
}

START_TEST(help_lists_every_setting)
{
    const char *args[] = {"--help", NULL};
    char *t;
    ck_assert_int_eq(run(args, NULL, &t), 0);
    const char *names[] = {"AIDC_DATABASE_URL", "AIDC_MIGRATE_DATABASE_URL", "AIDC_LISTEN",
                           "AIDC_THREADS", "AIDC_DATA_DIR", "AIDC_PORTAL_DIR",
                           "AIDC_JWT_KEY_FILE", "AIDC_MAX_BODY_BYTES", "AIDC_LOG_LEVEL",
                           "AIDC_AUTO_MIGRATE", "AIDC_ADMIN_PASSWORD", "serve", "migrate",
                           "bootstrap", NULL};
    for (int i = 0; names[i]; i++)
        ck_assert_msg(strstr(t, names[i]) != NULL, "--help does not mention %s", names[i]);
    free(t);
    const char *version[] = {"--version", NULL};
    ck_assert_int_eq(run(version, NULL, &t), 0);
    ck_assert_ptr_nonnull(strstr(t, "aidcd "));
    free(t);
}
END_TEST

START_TEST(bad_settings_stop_the_start_naming_the_setting)
{
    struct {
        const char *env, *name;
    } cases[] = {
        {"AIDC_THREADS=many", "AIDC_THREADS"},
        {"AIDC_THREADS=100000", "AIDC_THREADS"},
        {"AIDC_LISTEN=nowhere", "AIDC_LISTEN"},
        {"AIDC_LISTEN=127.0.0.1:99999", "AIDC_LISTEN"},
        {"AIDC_MAX_BODY_BYTES=12", "AIDC_MAX_BODY_BYTES"},
        {"AIDC_LOG_LEVEL=loud", "AIDC_LOG_LEVEL"},
        {"AIDC_AUTO_MIGRATE=perhaps", "AIDC_AUTO_MIGRATE"},
        {"AIDC_COOKIE_SECURE=sometimes", "AIDC_COOKIE_SECURE"},
        {"AIDC_CONFIG_FILE=/nonexistent/aidc.conf", "AIDC_CONFIG_FILE"},
    };
    const char *args[] = {"serve", NULL};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *env[] = {cases[i].env, NULL};
        char *t;
        ck_assert_int_eq(run(args, env, &t), 2);
        ck_assert_msg(strstr(t, cases[i].name) != NULL, "%s: \"%s\"", cases[i].env, t);
        ck_assert_msg(strchr(t, '\n') == t + strlen(t) - 1, "not one line: \"%s\"", t);
        free(t);
    }
    const char *unknown[] = {"frobnicate", NULL};
    char *t;
    ck_assert_int_eq(run(unknown, NULL, &t), 2);
    free(t);
    const char *extra[] = {"migrate", "now", NULL};
    ck_assert_int_eq(run(extra, NULL, &t), 2);
    free(t);
}
END_TEST

START_TEST(migrate_is_idempotent)
{
    const char *args[] = {"migrate", NULL};
    char *t;
    ck_assert_int_eq(run(args, NULL, &t), 0);
    ck_assert_ptr_nonnull(strstr(t, "0 migrations applied"));
    free(t);
    PGresult *r = harness_sql(db.owner_url,
                              "SELECT count(*), count(DISTINCT checksum) FROM aidc_schema_migrations",
                              0, NULL);
    ck_assert_int_ge(atoi(PQgetvalue(r, 0, 0)), 1);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
    PQclear(r);
}
END_TEST

START_TEST(edited_migration_is_refused)
{
    owner_sql("UPDATE aidc_schema_migrations SET checksum = 'tampered' WHERE version = 1");
    const char *args[] = {"migrate", NULL};
    char *t;
    ck_assert_int_eq(run(args, NULL, &t), 1);
    ck_assert_ptr_nonnull(strstr(t, "was changed after it was applied"));
    free(t);
    ck_assert_int_ne(serve_once(NULL, &t), 0);
    ck_assert_ptr_nonnull(strstr(t, "was changed after it was applied"));
    free(t);
    /* put it back as it was */
    owner_sql("DELETE FROM aidc_schema_migrations WHERE version = 1");
    owner_sql("DROP SCHEMA public CASCADE");
    owner_sql("CREATE SCHEMA public");
    ck_assert_int_eq(run(args, NULL, &t), 0);
    free(t);
}
END_TEST

START_TEST(newer_database_is_refused)
{
    owner_sql("INSERT INTO aidc_schema_migrations (version, name, checksum) VALUES (9999, "
              "'9999_future.sql', 'x')");
    char *t;
    ck_assert_int_ne(serve_once(NULL, &t), 0);
    ck_assert_ptr_nonnull(strstr(t, "newer than this aidcd"));
    free(t);
    const char *args[] = {"migrate", NULL};
    ck_assert_int_eq(run(args, NULL, &t), 1);
    ck_assert_ptr_nonnull(strstr(t, "newer than this aidcd"));
    free(t);
    owner_sql("DELETE FROM aidc_schema_migrations WHERE version = 9999");
}
END_TEST

/* A migration missing below the highest applied one: not "current", whatever the version. */
START_TEST(a_hole_in_the_applied_migrations_is_refused)
{
    owner_sql("CREATE TABLE hold_migration AS SELECT * FROM aidc_schema_migrations"
              " WHERE version = 5");
    owner_sql("DELETE FROM aidc_schema_migrations WHERE version = 5");
    char *t;
    ck_assert_int_ne(serve_once(NULL, &t), 0);
    ck_assert_msg(t && strstr(t, "migration 0005_") && strstr(t, "is not applied although later"),
                  "%s", t ? t : "");
    free(t);
    owner_sql("INSERT INTO aidc_schema_migrations SELECT * FROM hold_migration");
    owner_sql("DROP TABLE hold_migration");
    ck_assert_int_eq(serve_once(NULL, &t), 0);
    free(t);
}
END_TEST

START_TEST(unmigrated_database_needs_migrate_or_auto_migrate)
{
    struct aidc_server fresh;
    harness_db_create(&fresh, "cli_fresh");
    /* empty its schema again: the harness migrated it */
    PQclear(harness_sql(fresh.owner_url, "DROP SCHEMA public CASCADE", 0, NULL));
    PQclear(harness_sql(fresh.owner_url, "CREATE SCHEMA public", 0, NULL));
    PQclear(harness_sql(fresh.owner_url, "GRANT USAGE ON SCHEMA public TO PUBLIC", 0, NULL));
    struct aidc_server s = fresh;
    snprintf(s.log_path, sizeof s.log_path, "%s/fresh.log", fresh.data_dir);
    ck_assert_int_ne(harness_server_start(&s, NULL), 0);
    char *t = harness_read_file(s.log_path);
    ck_assert_ptr_nonnull(strstr(t, "aidcd migrate"));
    free(t);
    const char *auto_env[] = {"AIDC_AUTO_MIGRATE=1", NULL};
    unlink(s.log_path);
    ck_assert_int_eq(harness_server_start(&s, auto_env), 0);
    struct http_res r;
    ck_assert_int_eq(http_do(&s, "GET", "/readyz", NULL, NULL, NULL, &r), 200);
    http_res_free(&r);
    ck_assert_int_eq(harness_server_stop(&s), 0);
    harness_db_discard(&fresh);
}
END_TEST

START_TEST(owner_role_cannot_serve)
{
    char *t;
    char env_url[600];
    snprintf(env_url, sizeof env_url, "AIDC_DATABASE_URL=%s", db.owner_url);
    const char *env[] = {env_url, NULL};
    ck_assert_int_ne(serve_once(env, &t), 0);
    ck_assert_ptr_nonnull(strstr(t, "owns the aidc tables"));
    free(t);
}
END_TEST

START_TEST(session_key_file)
{
    char key[300];
    snprintf(key, sizeof key, "%s/jwt.key", db.data_dir);
    unlink(key);
    char *t;
    ck_assert_int_eq(serve_once(NULL, &t), 0);
    free(t);
    struct stat st;
    ck_assert_int_eq(stat(key, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_int_ge(st.st_size, 32);
    chmod(key, 0644);
    ck_assert_int_ne(serve_once(NULL, &t), 0);
    ck_assert_ptr_nonnull(strstr(t, "AIDC_JWT_KEY_FILE"));
    free(t);
    chmod(key, 0600);
}
END_TEST

/*
 * `aidcd serve` with a key file group or others may read: exit 2 at once (a
 * configuration error), one line naming the setting, the file and its mode.
 */
static void expect_refused(const char *const *env, const char *setting, const char *path,
                           const char *mode)
{
    const char *args[] = {"serve", NULL};
    char *t;
    ck_assert_int_eq(run(args, env, &t), 2);
    ck_assert_msg(t && strstr(t, setting) && strstr(t, path) && strstr(t, mode),
                  "%s %s: \"%s\"", setting, mode, t);
    ck_assert_msg(strchr(t, '\n') == t + strlen(t) - 1, "not one line: \"%s\"", t);
    free(t);
}

START_TEST(key_files_others_can_read_stop_the_start)
{
    char jwt[300], audit[300], env_audit[340];
    snprintf(jwt, sizeof jwt, "%s/jwt.key", db.data_dir);
    snprintf(audit, sizeof audit, "%s/audit-hmac.key", db.data_dir);
    snprintf(env_audit, sizeof env_audit, "AIDC_AUDIT_KEY_FILE=%s", audit);
    unlink(jwt);
    unlink(audit);
    FILE *f = fopen(jwt, "w");
    ck_assert_ptr_nonnull(f);
    fputs("0123456789abcdef0123456789abcdef0123456789abcdef", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(jwt, 0644), 0);
    expect_refused(NULL, "AIDC_JWT_KEY_FILE", jwt, "mode 0644");
    ck_assert_int_eq(chmod(jwt, 0640), 0);
    expect_refused(NULL, "AIDC_JWT_KEY_FILE", jwt, "mode 0640");
    ck_assert_int_eq(chmod(jwt, 0600), 0);

    f = fopen(audit, "w");
    ck_assert_ptr_nonnull(f);
    fputs("an HMAC key of more than 32 bytes, for the checkpoints", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(audit, 0604), 0);
    const char *env[] = {env_audit, NULL};
    expect_refused(env, "AIDC_AUDIT_KEY_FILE", audit, "mode 0604");
    unlink(audit);
    unlink(jwt);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, help_lists_every_setting);
    tcase_add_test(tc, bad_settings_stop_the_start_naming_the_setting);
    tcase_add_test(tc, migrate_is_idempotent);
    tcase_add_test(tc, edited_migration_is_refused);
    tcase_add_test(tc, newer_database_is_refused);
    tcase_add_test(tc, a_hole_in_the_applied_migrations_is_refused);
    tcase_add_test(tc, unmigrated_database_needs_migrate_or_auto_migrate);
    tcase_add_test(tc, owner_role_cannot_serve);
    tcase_add_test(tc, session_key_file);
    tcase_add_test(tc, key_files_others_can_read_stop_the_start);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
