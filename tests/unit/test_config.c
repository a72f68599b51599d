/*
 * test_config.c - config_load with a fake environment (a NULL-terminated table
 * of "NAME=value" strings), the optional AIDC_CONFIG_FILE, and --help.
 */
#include "tests/support/suite.h"
#include "lib/config.h"
#include "lib/log.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
    size_t nl = strlen(name);
    for (const char *const *e = fake_env; e && *e; e++)
        if (strncmp(*e, name, nl) == 0 && (*e)[nl] == '=')
            return *e + nl + 1;
    return NULL;
}

static char err[256];

static bool load(struct config *cfg, const char *const *env)
{
    fake_env = env;
    err[0] = '\0';
    return config_load(cfg, fake_getenv, err, sizeof err);
}

/* Load must fail with a message that names `setting`. */
static void expect_fail(const char *const *env, const char *setting)
{
    struct config cfg;
    bool ok = load(&cfg, env);
    if (ok)
        config_free(&cfg);
    ck_assert_msg(!ok, "%s: accepted", env[0]);
    ck_assert_msg(strstr(err, setting) != NULL, "%s: message \"%s\" does not name %s", env[0],
                  err, setting);
}

/* One variable set; load must succeed. */
static void load_one(struct config *cfg, const char *assignment)
{
    const char *env[] = {assignment, NULL};
    ck_assert_msg(load(cfg, env), "%s: rejected: %s", assignment, err);
}

/* Write text to a new temporary file; path receives its name. */
static void write_temp(char *path, size_t pathsz, const char *text)
{
    snprintf(path, pathsz, "/tmp/aidc-ut-config-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    size_t n = strlen(text);
    ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
}

START_TEST(test_defaults)
{
    struct config cfg;
    const char *env[] = {NULL};
    ck_assert_msg(load(&cfg, env), "defaults rejected: %s", err);
    ck_assert_str_eq(cfg.database_url, "");
    ck_assert_str_eq(cfg.migrate_database_url, "");
    ck_assert_str_eq(cfg.listen, "127.0.0.1:8080");
    ck_assert_str_eq(cfg.listen_host, "127.0.0.1");
    ck_assert_int_eq(cfg.listen_port, 8080);
    ck_assert_int_ge(cfg.threads, 1); /* 0 = number of CPUs */
    ck_assert_int_le(cfg.threads, 64);
    char cwd[4096], want[4200];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(want, sizeof want, "%s/aidc-data", cwd); /* made absolute */
    ck_assert_str_eq(cfg.data_dir, want);
    ck_assert_str_eq(cfg.portal_dir, "portal");
    snprintf(want, sizeof want, "%s/aidc-data/jwt.key", cwd);
    ck_assert_str_eq(cfg.jwt_key_file, want);
    ck_assert(cfg.workers);
    ck_assert_int_eq(cfg.preempt_grace_seconds, 30);
    ck_assert_int_eq(cfg.starvation_seconds, 3600);
    ck_assert_int_eq(cfg.admission_interval_ms, 10000);
    ck_assert_int_eq(cfg.sync_interval_ms, 2000);
    ck_assert_int_eq(cfg.inventory_interval_seconds, 60);
    ck_assert_ptr_nonnull(strstr(cfg.self_exe, "unit_test_config"));
    ck_assert_int_eq(cfg.jwt_ttl_seconds, 28800);
    ck_assert_int_eq(cfg.max_body_bytes, 1048576);
    ck_assert_int_eq(cfg.log_level, LOG_INFO);
    ck_assert(!cfg.auto_migrate);
    ck_assert_int_eq(cfg.login_max_failures, 5);
    ck_assert_int_eq(cfg.login_max_failures_per_ip, 20);
    ck_assert_int_eq(cfg.login_max_failures_per_user, 100);
    ck_assert_int_eq(cfg.db_start_wait_seconds, 60);
    ck_assert_int_eq(cfg.login_window_seconds, 900);
    ck_assert_int_eq(cfg.idempotency_ttl_seconds, 86400);
    ck_assert_int_eq(cfg.shutdown_timeout_seconds, 30);
    ck_assert_int_eq(cfg.cookie_secure, COOKIE_SECURE_AUTO);
    ck_assert_int_eq(cfg.db_statement_timeout_ms, 30000);
    ck_assert_int_eq(cfg.http_idle_timeout_seconds, 60);
    ck_assert_int_eq(cfg.max_connections, 1000);
    ck_assert_str_eq(cfg.trusted_proxies, "");
    ck_assert(config_listen_is_loopback(&cfg));
    config_free(&cfg);
    ck_assert_ptr_null(cfg.database_url);
    ck_assert_ptr_null(cfg.listen_host);
}
END_TEST

START_TEST(test_int_values_and_bounds)
{
    struct config cfg;
    load_one(&cfg, "AIDC_THREADS=4");
    ck_assert_int_eq(cfg.threads, 4);
    config_free(&cfg);
    load_one(&cfg, "AIDC_THREADS=256");
    ck_assert_int_eq(cfg.threads, 256);
    config_free(&cfg);
    load_one(&cfg, "AIDC_JWT_TTL_SECONDS=300");
    ck_assert_int_eq(cfg.jwt_ttl_seconds, 300);
    config_free(&cfg);
    load_one(&cfg, "AIDC_MAX_BODY_BYTES=1073741824");
    ck_assert_int_eq(cfg.max_body_bytes, 1073741824L);
    config_free(&cfg);

    expect_fail((const char *[]){"AIDC_THREADS=abc", NULL}, "AIDC_THREADS");
    expect_fail((const char *[]){"AIDC_THREADS=257", NULL}, "AIDC_THREADS");
    expect_fail((const char *[]){"AIDC_THREADS=-1", NULL}, "AIDC_THREADS");
    expect_fail((const char *[]){"AIDC_THREADS=4x", NULL}, "AIDC_THREADS");
    expect_fail((const char *[]){"AIDC_THREADS=", NULL}, "AIDC_THREADS");
    expect_fail((const char *[]){"AIDC_THREADS=99999999999999999999999", NULL}, "AIDC_THREADS");
    expect_fail((const char *[]){"AIDC_JWT_TTL_SECONDS=299", NULL}, "AIDC_JWT_TTL_SECONDS");
    expect_fail((const char *[]){"AIDC_JWT_TTL_SECONDS=604801", NULL}, "AIDC_JWT_TTL_SECONDS");
    expect_fail((const char *[]){"AIDC_MAX_BODY_BYTES=1073741825", NULL}, "AIDC_MAX_BODY_BYTES");
    expect_fail((const char *[]){"AIDC_MAX_BODY_BYTES=1023", NULL}, "AIDC_MAX_BODY_BYTES");
    expect_fail((const char *[]){"AIDC_LOGIN_MAX_FAILURES=0", NULL}, "AIDC_LOGIN_MAX_FAILURES");
    expect_fail((const char *[]){"AIDC_MAX_CONNECTIONS=3", NULL}, "AIDC_MAX_CONNECTIONS");
}
END_TEST

START_TEST(test_threads_message)
{
    expect_fail((const char *[]){"AIDC_THREADS=abc", NULL}, "AIDC_THREADS");
    ck_assert_msg(strstr(err, "abc") != NULL, "message \"%s\" does not quote the value", err);
    ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line");
}
END_TEST

START_TEST(test_listen)
{
    struct config cfg;
    load_one(&cfg, "AIDC_LISTEN=0.0.0.0:9000");
    ck_assert_str_eq(cfg.listen_host, "0.0.0.0");
    ck_assert_int_eq(cfg.listen_port, 9000);
    ck_assert(!config_listen_is_loopback(&cfg));
    config_free(&cfg);

    load_one(&cfg, "AIDC_LISTEN=[::1]:8080");
    ck_assert_str_eq(cfg.listen_host, "::1");
    ck_assert_int_eq(cfg.listen_port, 8080);
    ck_assert(config_listen_is_loopback(&cfg));
    config_free(&cfg);

    load_one(&cfg, "AIDC_LISTEN=[::]:443");
    ck_assert_str_eq(cfg.listen_host, "::");
    ck_assert_int_eq(cfg.listen_port, 443);
    ck_assert(!config_listen_is_loopback(&cfg));
    config_free(&cfg);

    load_one(&cfg, "AIDC_LISTEN=localhost:0");
    ck_assert_str_eq(cfg.listen_host, "localhost");
    ck_assert_int_eq(cfg.listen_port, 0);
    ck_assert(config_listen_is_loopback(&cfg));
    config_free(&cfg);

    load_one(&cfg, "AIDC_LISTEN=127.0.0.2:65535");
    ck_assert_int_eq(cfg.listen_port, 65535);
    ck_assert(config_listen_is_loopback(&cfg));
    config_free(&cfg);

    expect_fail((const char *[]){"AIDC_LISTEN=host:65536", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=host:-1", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=host:http", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=host:80x", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=host:", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=host", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=:8080", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=[::1]", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=[::1:8080", NULL}, "AIDC_LISTEN");
    expect_fail((const char *[]){"AIDC_LISTEN=[::1]8080", NULL}, "AIDC_LISTEN");
}
END_TEST

START_TEST(test_bool)
{
    static const char *const yes[] = {"AIDC_AUTO_MIGRATE=1", "AIDC_AUTO_MIGRATE=true",
                                      "AIDC_AUTO_MIGRATE=YES", "AIDC_AUTO_MIGRATE=on",
                                      "AIDC_AUTO_MIGRATE=True"};
    static const char *const no[] = {"AIDC_AUTO_MIGRATE=0", "AIDC_AUTO_MIGRATE=false",
                                     "AIDC_AUTO_MIGRATE=no", "AIDC_AUTO_MIGRATE=Off"};
    struct config cfg;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        load_one(&cfg, yes[i]);
        ck_assert_msg(cfg.auto_migrate, "%s: not true", yes[i]);
        config_free(&cfg);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        load_one(&cfg, no[i]);
        ck_assert_msg(!cfg.auto_migrate, "%s: not false", no[i]);
        config_free(&cfg);
    }
    expect_fail((const char *[]){"AIDC_AUTO_MIGRATE=maybe", NULL}, "AIDC_AUTO_MIGRATE");
    expect_fail((const char *[]){"AIDC_AUTO_MIGRATE=", NULL}, "AIDC_AUTO_MIGRATE");
    expect_fail((const char *[]){"AIDC_AUTO_MIGRATE=2", NULL}, "AIDC_AUTO_MIGRATE");
}
END_TEST

START_TEST(test_log_level)
{
    static const struct {
        const char *env;
        int level;
    } cases[] = {
        {"AIDC_LOG_LEVEL=debug", LOG_DEBUG},
        {"AIDC_LOG_LEVEL=info", LOG_INFO},
        {"AIDC_LOG_LEVEL=warn", LOG_WARN},
        {"AIDC_LOG_LEVEL=error", LOG_ERROR},
    };
    struct config cfg;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        load_one(&cfg, cases[i].env);
        ck_assert_int_eq(cfg.log_level, cases[i].level);
        config_free(&cfg);
    }
    expect_fail((const char *[]){"AIDC_LOG_LEVEL=verbose", NULL}, "AIDC_LOG_LEVEL");
    expect_fail((const char *[]){"AIDC_LOG_LEVEL=", NULL}, "AIDC_LOG_LEVEL");
}
END_TEST

START_TEST(test_cookie_secure)
{
    static const struct {
        const char *env;
        int value;
    } cases[] = {
        {"AIDC_COOKIE_SECURE=auto", COOKIE_SECURE_AUTO}, {"AIDC_COOKIE_SECURE=on", COOKIE_SECURE_ON},
        {"AIDC_COOKIE_SECURE=1", COOKIE_SECURE_ON},      {"AIDC_COOKIE_SECURE=true", COOKIE_SECURE_ON},
        {"AIDC_COOKIE_SECURE=off", COOKIE_SECURE_OFF},   {"AIDC_COOKIE_SECURE=0", COOKIE_SECURE_OFF},
        {"AIDC_COOKIE_SECURE=no", COOKIE_SECURE_OFF},
    };
    struct config cfg;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        load_one(&cfg, cases[i].env);
        ck_assert_msg(cfg.cookie_secure == cases[i].value, "%s: got %d", cases[i].env,
                      cfg.cookie_secure);
        config_free(&cfg);
    }
    expect_fail((const char *[]){"AIDC_COOKIE_SECURE=sometimes", NULL}, "AIDC_COOKIE_SECURE");
}
END_TEST

START_TEST(test_migrate_url_default)
{
    struct config cfg;
    load_one(&cfg, "AIDC_DATABASE_URL=postgres://app@db/aidc");
    ck_assert_str_eq(cfg.database_url, "postgres://app@db/aidc");
    ck_assert_str_eq(cfg.migrate_database_url, "postgres://app@db/aidc");
    ck_assert_ptr_ne(cfg.migrate_database_url, cfg.database_url); /* own copy */
    config_free(&cfg);

    const char *env[] = {"AIDC_DATABASE_URL=postgres://app@db/aidc",
                         "AIDC_MIGRATE_DATABASE_URL=postgres://owner@db/aidc", NULL};
    ck_assert_msg(load(&cfg, env), "%s", err);
    ck_assert_str_eq(cfg.database_url, "postgres://app@db/aidc");
    ck_assert_str_eq(cfg.migrate_database_url, "postgres://owner@db/aidc");
    config_free(&cfg);
}
END_TEST

START_TEST(test_jwt_key_file_default)
{
    struct config cfg;
    load_one(&cfg, "AIDC_DATA_DIR=/var/lib/aidc");
    ck_assert_str_eq(cfg.data_dir, "/var/lib/aidc");
    ck_assert_str_eq(cfg.jwt_key_file, "/var/lib/aidc/jwt.key");
    config_free(&cfg);

    const char *env[] = {"AIDC_DATA_DIR=/var/lib/aidc", "AIDC_JWT_KEY_FILE=/etc/aidc/session.key",
                         NULL};
    ck_assert_msg(load(&cfg, env), "%s", err);
    ck_assert_str_eq(cfg.jwt_key_file, "/etc/aidc/session.key");
    config_free(&cfg);

    expect_fail((const char *[]){"AIDC_DATA_DIR=", NULL}, "AIDC_DATA_DIR");
}
END_TEST

START_TEST(test_string_with_line_break_rejected)
{
    expect_fail((const char *[]){"AIDC_DATABASE_URL=postgres://a\nb", NULL}, "AIDC_DATABASE_URL");
}
END_TEST

START_TEST(test_failed_load_leaves_nothing)
{
    struct config cfg;
    const char *env[] = {"AIDC_DATABASE_URL=postgres://x", "AIDC_THREADS=abc", NULL};
    ck_assert(!load(&cfg, env));
    ck_assert_ptr_null(cfg.database_url);
    ck_assert_ptr_null(cfg.listen_host);
    config_free(&cfg); /* harmless a second time */
}
END_TEST

START_TEST(test_config_file)
{
    char path[64];
    write_temp(path, sizeof path,
               "# aidc settings\n"
               "\n"
               "AIDC_THREADS=3\n"
               "  AIDC_DATABASE_URL = \"postgres://file@db/aidc\"  \n"
               "AIDC_LOG_LEVEL='warn'\r\n"
               "AIDC_LISTEN=127.0.0.1:9999\n"
               "AIDC_SHUTDOWN_TIMEOUT_SECONDS=10\n"
               "AIDC_SHUTDOWN_TIMEOUT_SECONDS=20\n");
    char file_env[96];
    snprintf(file_env, sizeof file_env, "AIDC_CONFIG_FILE=%s", path);
    const char *env[] = {file_env, "AIDC_LISTEN=127.0.0.1:7000", NULL};
    struct config cfg;
    bool ok = load(&cfg, env);
    unlink(path);
    ck_assert_msg(ok, "config file rejected: %s", err);
    ck_assert_int_eq(cfg.threads, 3);
    ck_assert_str_eq(cfg.database_url, "postgres://file@db/aidc");
    ck_assert_str_eq(cfg.migrate_database_url, "postgres://file@db/aidc");
    ck_assert_int_eq(cfg.log_level, LOG_WARN);
    ck_assert_int_eq(cfg.listen_port, 7000); /* the environment wins */
    ck_assert_int_eq(cfg.shutdown_timeout_seconds, 20); /* the last line wins */
    config_free(&cfg);
}
END_TEST

START_TEST(test_config_file_unknown_key)
{
    char path[64];
    write_temp(path, sizeof path, "AIDC_THREADS=2\nAIDC_NO_SUCH_SETTING=1\n");
    char file_env[96];
    snprintf(file_env, sizeof file_env, "AIDC_CONFIG_FILE=%s", path);
    expect_fail((const char *[]){file_env, NULL}, "AIDC_NO_SUCH_SETTING");
    unlink(path);
}
END_TEST

START_TEST(test_config_file_malformed_line)
{
    char path[64];
    write_temp(path, sizeof path, "AIDC_THREADS=2\nthis is not a setting\n");
    char file_env[96];
    snprintf(file_env, sizeof file_env, "AIDC_CONFIG_FILE=%s", path);
    expect_fail((const char *[]){file_env, NULL}, "AIDC_CONFIG_FILE");
    ck_assert_msg(strstr(err, ":2:") != NULL, "message \"%s\" does not give the line", err);
    unlink(path);

    write_temp(path, sizeof path, "AIDC_THREADS\n");
    snprintf(file_env, sizeof file_env, "AIDC_CONFIG_FILE=%s", path);
    expect_fail((const char *[]){file_env, NULL}, "AIDC_CONFIG_FILE");
    unlink(path);

    write_temp(path, sizeof path, "THREADS=2\n");
    snprintf(file_env, sizeof file_env, "AIDC_CONFIG_FILE=%s", path);
    expect_fail((const char *[]){file_env, NULL}, "AIDC_CONFIG_FILE");
    unlink(path);
}
END_TEST

START_TEST(test_config_file_bad_value)
{
    char path[64];
    write_temp(path, sizeof path, "AIDC_THREADS=many\n");
    char file_env[96];
    snprintf(file_env, sizeof file_env, "AIDC_CONFIG_FILE=%s", path);
    expect_fail((const char *[]){file_env, NULL}, "AIDC_THREADS");
    /* a valid environment value hides the bad one in the file */
    struct config cfg;
    const char *env[] = {file_env, "AIDC_THREADS=2", NULL};
    bool ok = load(&cfg, env);
    unlink(path);
    ck_assert_msg(ok, "%s", err);
    ck_assert_int_eq(cfg.threads, 2);
    config_free(&cfg);
}
END_TEST

START_TEST(test_config_file_missing)
{
    expect_fail((const char *[]){"AIDC_CONFIG_FILE=/nonexistent/aidc-ut/aidc.env", NULL},
                "AIDC_CONFIG_FILE");
    ck_assert_msg(strstr(err, "/nonexistent/aidc-ut/aidc.env") != NULL, "%s", err);
}
END_TEST

START_TEST(test_help_mentions_every_setting)
{
    static const char *const names[] = {
        "AIDC_DATABASE_URL", "AIDC_MIGRATE_DATABASE_URL", "AIDC_LISTEN",
        "AIDC_THREADS", "AIDC_DATA_DIR", "AIDC_PORTAL_DIR",
        "AIDC_JWT_KEY_FILE", "AIDC_JWT_TTL_SECONDS", "AIDC_MAX_BODY_BYTES",
        "AIDC_LOG_LEVEL", "AIDC_AUTO_MIGRATE", "AIDC_LOGIN_MAX_FAILURES",
        "AIDC_LOGIN_MAX_FAILURES_PER_IP", "AIDC_LOGIN_MAX_FAILURES_PER_USER",
        "AIDC_LOGIN_WINDOW_SECONDS", "AIDC_DB_START_WAIT_SECONDS",
        "AIDC_PASSWORD_HASH_CONCURRENCY", "AIDC_PASSWORD_QUEUE_LENGTH",
        "AIDC_IDEMPOTENCY_TTL_SECONDS", "AIDC_SHUTDOWN_TIMEOUT_SECONDS", "AIDC_COOKIE_SECURE",
        "AIDC_DB_STATEMENT_TIMEOUT_MS", "AIDC_HTTP_IDLE_TIMEOUT_SECONDS", "AIDC_MAX_CONNECTIONS",
        "AIDC_TRUSTED_PROXIES", "AIDC_CONFIG_FILE", "AIDC_ADMIN_PASSWORD",
    };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    config_print_help(f);
    fclose(f);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        /* the name followed by a space, so AIDC_LOGIN_MAX_FAILURES is not found
         * inside AIDC_LOGIN_MAX_FAILURES_PER_IP */
        char needle[64];
        snprintf(needle, sizeof needle, "%s ", names[i]);
        ck_assert_msg(strstr(buf, needle) != NULL, "--help does not mention %s", names[i]);
    }
    ck_assert_msg(strstr(buf, "28800") != NULL, "--help does not show defaults");
    ck_assert_msg(strstr(buf, "127.0.0.1:8080") != NULL, "--help does not show defaults");
    free(buf);
}
END_TEST

/* Every name the help prints is one config_load understands (no stale help). */
START_TEST(test_help_names_are_settings)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    config_print_help(f);
    fclose(f);
    int seen = 0;
    for (char *p = strstr(buf, "AIDC_"); p; p = strstr(p + 1, "AIDC_")) {
        char name[64];
        size_t n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
        if (n >= sizeof name || strncmp(p, "AIDC_NAME", n) == 0 || n == 5)
            continue;
        memcpy(name, p, n);
        name[n] = '\0';
        if (strcmp(name, "AIDC_CONFIG_FILE") == 0 || strcmp(name, "AIDC_ADMIN_PASSWORD") == 0)
            continue;
        /* an invalid value for a known setting fails naming it; an unknown
         * name in a file would fail as "unknown setting" instead */
        char path[64], line[96], file_env[96];
        snprintf(line, sizeof line, "%s=1\n", name);
        write_temp(path, sizeof path, line);
        snprintf(file_env, sizeof file_env, "AIDC_CONFIG_FILE=%s", path);
        struct config cfg;
        const char *env[] = {file_env, NULL};
        bool ok = load(&cfg, env);
        unlink(path);
        if (ok)
            config_free(&cfg);
        ck_assert_msg(strstr(err, "unknown setting") == NULL, "--help names unknown %s", name);
        seen++;
    }
    ck_assert_int_ge(seen, 21);
    free(buf);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *env = tcase_create("environment");
    tcase_add_test(env, test_defaults);
    tcase_add_test(env, test_int_values_and_bounds);
    tcase_add_test(env, test_threads_message);
    tcase_add_test(env, test_listen);
    tcase_add_test(env, test_bool);
    tcase_add_test(env, test_log_level);
    tcase_add_test(env, test_cookie_secure);
    tcase_add_test(env, test_migrate_url_default);
    tcase_add_test(env, test_jwt_key_file_default);
    tcase_add_test(env, test_string_with_line_break_rejected);
    tcase_add_test(env, test_failed_load_leaves_nothing);
    suite_add_tcase(s, env);

    TCase *file = tcase_create("file");
    tcase_add_test(file, test_config_file);
    tcase_add_test(file, test_config_file_unknown_key);
    tcase_add_test(file, test_config_file_malformed_line);
    tcase_add_test(file, test_config_file_bad_value);
    tcase_add_test(file, test_config_file_missing);
    suite_add_tcase(s, file);

    TCase *help = tcase_create("help");
    tcase_add_test(help, test_help_mentions_every_setting);
    tcase_add_test(help, test_help_names_are_settings);
    suite_add_tcase(s, help);
    return s;
}

int main(void)
{
    return suite_run(config_suite());
}
