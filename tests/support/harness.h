/*
 * harness.h - integration-test support: a fresh database per test program,
 * the real build/aidcd started against it, and helpers to drive it.
 *
 * PostgreSQL comes from tests/run.sh through AIDC_TEST_APP_URL and
 * AIDC_TEST_OWNER_URL (URLs of the application and owner roles); without
 * them an integration test exits 77, which ctest reports as skipped.
 *
 * Every secret aidcd is given here, and every credential client.h sends or
 * receives, is recorded for secrets/logs_clean (secrets.h, docs/secrets.md).
 */
#ifndef AIDC_TEST_HARNESS_H
#define AIDC_TEST_HARNESS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <sys/types.h>

#define ADMIN_USER     "admin"
#define ADMIN_PASSWORD "admin-password-1"

struct aidc_server {
    pid_t pid;
    int port;
    char base[64];          /* http://127.0.0.1:PORT */
    int sessions_port;      /* the sessions relay's (-1: none) */
    char sessions_base[64]; /* http://127.0.0.1:SESSIONS_PORT */
    char dbname[64];
    char app_url[512];   /* application role, this test's database */
    char owner_url[512]; /* owner role, this test's database */
    char data_dir[256];
    char log_path[300];
    char admin_token[1024]; /* JWT of ADMIN_USER after harness_setup */
    /*
     * Run aidcd as this uid (and gid) instead of this program's (0: as it is):
     * set before harness_setup. The data directory becomes the uid's, and
     * aidcd runs from a copy of the binary in a directory anyone can read
     * (the build tree may be below a private home).
     */
    unsigned run_as;
};

/* The server of this test program (set up by harness_setup). */
extern struct aidc_server harness_srv;

/* Exit 77 (ctest: skipped) when no test PostgreSQL is configured. */
void harness_require_pg(void);
/*
 * Create a fresh database "aidc_t_<name>_<pid>", migrate it, bootstrap
 * ADMIN_USER, start aidcd with extra environment env (NULL-terminated
 * "NAME=value" strings, may be NULL) and log in as the admin. Aborts the
 * program on failure (a test cannot run without it).
 */
void harness_setup(const char *name, const char *const *env);
/*
 * Stop aidcd and drop the database. Exits the program with 1 when aidcd did
 * not exit 0 or its log has a sanitizer report: the ASan/UBSan build's
 * verdict on the server.
 */
void harness_teardown(void);
/* False (and the report printed) when the log at path holds a sanitizer report. */
bool harness_log_clean(const char *path);

/*
 * Make (or find) the template database harness_db_create copies: once per aidcd
 * binary and day. ctest runs it first (setup/db_template), so that no case's
 * timeout pays for it; a case that finds none makes it itself.
 */
bool harness_db_template(void);
/* Create the database and bootstrap, without starting a server. */
void harness_db_create(struct aidc_server *s, const char *name);
/* Migrate s's database (URLs and data_dir set) and bootstrap ADMIN_USER. */
void harness_db_init(struct aidc_server *s);
void harness_db_drop(struct aidc_server *s);
/* harness_db_drop and the data directory with it: for tests that passed */
void harness_db_discard(struct aidc_server *s);
/* Start aidcd for s (waits for its "listening" line); 0 or -1. */
int harness_server_start(struct aidc_server *s, const char *const *env);
/*
 * SIGTERM and wait; returns the exit status (or -1). The logs below
 * s->data_dir are then copied into the run's log tree (secrets.h), as they
 * are by harness_db_drop and harness_remove_tree.
 */
int harness_server_stop(struct aidc_server *s);

/*
 * Run `aidcd args...` with s's database and data dir plus env; returns its
 * exit status. stdout and stderr go to out_path (if not NULL).
 */
int harness_run_aidcd(const struct aidc_server *s, const char *const *args, const char *const *env,
                      const char *out_path);

/* url with its database name replaced by db. */
void harness_url_with_db(const char *url, const char *db, char *out, size_t n);
/* A superuser's connection to s's database (AIDC_TEST_SUPERUSER_URL); NULL, printed, when it fails.
 */
PGconn *harness_super_connect(const struct aidc_server *s);
/* As s's owner: tenant "physics", user "alice" and project "lhc" of physics; their ids
 * (each 37 bytes). Aborts the test on failure. */
void harness_seed_project(const struct aidc_server *s, char *tenant, char *user, char *project);

/* Run one SQL statement with parameters over url; NULL on failure (printed). */
PGresult *harness_sql(const char *url, const char *sql, int n, const char *const *params);
/* The first value of harness_sql's answer as a number (a count); -1 on failure. */
long harness_sql_long(const char *url, const char *sql, int n, const char *const *params);
/* The first value of harness_sql's answer as a new string; NULL on failure or no row. */
char *harness_sql_text(const char *url, const char *sql, int n, const char *const *params);
/* Whether one SQL statement without parameters ran over url (a failure is printed). */
bool harness_sql_ok(const char *url, const char *sql);
/*
 * End every session of the cluster named application_name (but the caller's),
 * waiting up to 5 s for each to go; how many ended. MATERIALIZED: the name
 * filter runs first, so pg_terminate_backend sees only those sessions (a flat
 * WHERE may call it on every row of the cluster).
 */
long harness_end_sessions(const char *application_name);

/* Remove dir and everything below it (no error when it is gone), its logs kept (secrets.h). */
void harness_remove_tree(const char *dir);
/* Log ADMIN_USER in through harness_srv and keep its JWT in harness_srv.admin_token. */
bool harness_login_admin(void);

/* Read the whole file (malloc'd, NUL-terminated) or NULL. */
char *harness_read_file(const char *path);
/*
 * The access log line of the request with X-Request-Id request_id in
 * harness_srv's log, parsed (json_decref it), or NULL when none was written
 * within 2 s (the line is written once the response is done).
 */
json_t *harness_access_line(const char *request_id);

#endif
