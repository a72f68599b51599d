/* harness.c - fresh database and a real aidcd per integration-test program. */
#include "harness.h"

#include "client.h"
#include "secrets.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct aidc_server harness_srv;

static _Noreturn void die(const char *what, const char *detail)
{
    fprintf(stderr, "harness: %s %s\n", what, detail);
    exit(1);
}

void harness_require_pg(void)
{
    if (!getenv("AIDC_TEST_APP_URL") || !getenv("AIDC_TEST_OWNER_URL")) {
        fprintf(stderr, "skipped: AIDC_TEST_APP_URL/AIDC_TEST_OWNER_URL not set "
                        "(run through tests/run.sh)\n");
        exit(77);
    }
}

/* Same URL with another database name (everything after the last '/'). */
void harness_url_with_db(const char *url, const char *db, char *out, size_t n)
{
    const char *slash = strrchr(url, '/');
    const char *q = strchr(slash ? slash : url, '?');
    int len = slash ? (int)(slash - url) : (int)strlen(url);
    snprintf(out, n, "%.*s/%s%s", len, url, db, q ? q : "");
}

/* The first value of sql's one row into out (37 bytes: an id). */
static void owner_id(const struct aidc_server *s, const char *sql, const char *param, char *out)
{
    const char *p[1] = {param};
    PGresult *r = harness_sql(s->owner_url, sql, param ? 1 : 0, p);
    ck_assert_msg(r != NULL && PQntuples(r) == 1, "%s failed", sql);
    snprintf(out, 37, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

void harness_seed_project(const struct aidc_server *s, char *tenant, char *user, char *project)
{
    owner_id(s, "INSERT INTO tenants (slug, name) VALUES ('physics', 'Physics') RETURNING id", NULL,
             tenant);
    owner_id(s, "INSERT INTO users (username) VALUES ('alice') RETURNING id", NULL, user);
    owner_id(s,
             "INSERT INTO projects (tenant_id, slug, name) VALUES ($1::uuid, 'lhc', 'LHC')"
             " RETURNING id",
             tenant, project);
}

PGconn *harness_super_connect(const struct aidc_server *s)
{
    const char *su = getenv("AIDC_TEST_SUPERUSER_URL");
    if (!su || !su[0]) {
        fprintf(stderr, "harness: AIDC_TEST_SUPERUSER_URL not set\n");
        return NULL;
    }
    char url[512];
    harness_url_with_db(su, s->dbname, url, sizeof url);
    PGconn *c = PQconnectdb(url);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "harness: connect as superuser: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    return c;
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg; /* NOTICEs such as "database does not exist, skipping" */
}

PGresult *harness_sql(const char *url, const char *sql, int n, const char *const *params)
{
    PGconn *c = PQconnectdb(url);
    PQsetNoticeProcessor(c, quiet, NULL);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "harness: connect %s: %s", url, PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        fprintf(stderr, "harness: %s: %s", sql, PQresultErrorMessage(r));
        PQclear(r);
        r = NULL;
    }
    PQfinish(c);
    return r;
}

long harness_sql_long(const char *url, const char *sql, int n, const char *const *params)
{
    PGresult *r = harness_sql(url, sql, n, params);
    long v = r && PQntuples(r) > 0 ? strtol(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return v;
}

char *harness_sql_text(const char *url, const char *sql, int n, const char *const *params)
{
    PGresult *r = harness_sql(url, sql, n, params);
    char *v = r && PQntuples(r) > 0 ? strdup(PQgetvalue(r, 0, 0)) : NULL;
    PQclear(r);
    return v;
}

bool harness_sql_ok(const char *url, const char *sql)
{
    PGresult *r = harness_sql(url, sql, 0, NULL);
    PQclear(r);
    return r != NULL;
}

long harness_end_sessions(const char *application_name)
{
    const char *p[1] = {application_name};
    return harness_sql_long(getenv("AIDC_TEST_SUPERUSER_URL"),
                            "WITH mine AS MATERIALIZED (SELECT pid FROM pg_stat_activity"
                            " WHERE application_name = $1 AND pid <> pg_backend_pid())"
                            " SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))"
                            " FROM mine",
                            1, p);
}

char *harness_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

json_t *harness_access_line(const char *request_id)
{
    char key[160];
    snprintf(key, sizeof key, "\"request_id\":\"%s\"", request_id);
    for (int i = 0; i < 200; i++) {
        char *log = harness_read_file(harness_srv.log_path);
        json_t *j = NULL;
        /* every line of the request carries its id: the access line is the one of msg "request" */
        for (char *p = log ? strstr(log, key) : NULL; p && !j; p = strstr(p + 1, key)) {
            char *start = p, *end = p + strcspn(p, "\n");
            while (start > log && start[-1] != '\n')
                start--;
            j = json_loadb(start, (size_t)(end - start), 0, NULL);
            const char *msg = json_string_value(json_object_get(j, "msg"));
            if (j && (!msg || strcmp(msg, "request") != 0)) {
                json_decref(j);
                j = NULL;
            }
        }
        free(log);
        if (j)
            return j;
        usleep(10000);
    }
    return NULL;
}

static void setenv_list(const struct aidc_server *s, const char *const *env)
{
    setenv("AIDC_DATABASE_URL", s->app_url, 1);
    setenv("AIDC_MIGRATE_DATABASE_URL", s->owner_url, 1);
    setenv("AIDC_DATA_DIR", s->data_dir, 1);
    setenv("AIDC_PORTAL_DIR", AIDC_SOURCE_DIR "/portal", 1);
    setenv("AIDC_LISTEN", "127.0.0.1:0", 1);
    /* a free port of its own (the default, the API's + 1, may be taken) */
    setenv("AIDC_SESSIONS_LISTEN", "127.0.0.1:0", 1);
    setenv("AIDC_THREADS", "2", 1);
    setenv("AIDC_LOG_LEVEL", "info", 1);
    /* Set-ups give tenants guarantees freely; raising one by more than this
     * would wait for a second admin's approval. test_approvals.c, which tests
     * that, sets its own threshold (env comes after the defaults). */
    setenv("AIDC_APPROVAL_QUOTA_THRESHOLD", "1000000", 1);
    /* Tests send bursts (a hundred parallel submits) no client would from one
     * address and credential; the per-client limits are tested on their own
     * (test_limits.c sets them). */
    setenv("AIDC_RATE_LIMIT_PER_ADDRESS", "0", 1);
    setenv("AIDC_RATE_LIMIT_PER_TOKEN", "0", 1);
    setenv("AIDC_MAX_CONNECTIONS_PER_ADDRESS", "0", 1);
    /* scrypt at N = 2^10 (milliseconds) instead of 2^15 (170 ms here): a set-up makes
     * and logs in up to a dozen users, in every case of every test. The tests whose
     * subject is the hash's cost (test_identity, test_password_threads) set 15. */
    setenv("AIDC_PASSWORD_HASH_COST", "10", 1);
    for (size_t i = 0; env && env[i]; i++) {
        char *kv = strdup(env[i]);
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = '\0';
            setenv(kv, eq + 1, 1);
        }
        free(kv);
    }
}

/* What aidcd is given: the database URLs' passwords, env's secrets, run.sh's. */
static void note_secrets(const struct aidc_server *s, const char *const *env)
{
    secrets_note_environ();
    secrets_note_url(s->app_url);
    secrets_note_url(s->owner_url);
    secrets_note(ADMIN_PASSWORD);
    secrets_note_env_list(env);
}

/* The key files aidcd has read or made (the session key is made at the first start). */
static void note_key_files(const struct aidc_server *s, const char *const *env)
{
    char path[320];
    snprintf(path, sizeof path, "%s/jwt.key", s->data_dir);
    secrets_note_file(path);
    secrets_note_env("AIDC_JWT_KEY_FILE", getenv("AIDC_JWT_KEY_FILE"));
    secrets_note_env("AIDC_AUDIT_KEY_FILE", getenv("AIDC_AUDIT_KEY_FILE"));
    secrets_note_env_list(env);
}

int harness_run_aidcd(const struct aidc_server *s, const char *const *args, const char *const *env,
                      const char *out_path)
{
    note_secrets(s, env);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setenv_list(s, env);
        if (out_path) {
            int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
        }
        const char *argv[16] = {AIDC_BIN};
        for (int i = 0; args && args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(AIDC_BIN, (char *const *)argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    note_key_files(s, env);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run one statement on c; false (and said why) when it failed. */
static bool exec_ok(PGconn *c, const char *sql, int n, const char *const *params)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    bool ok = st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "harness: %s: %s", sql, PQresultErrorMessage(r));
    bool any = ok && st == PGRES_TUPLES_OK && PQntuples(r) > 0;
    PQclear(r);
    return st == PGRES_TUPLES_OK ? any : ok;
}

/*
 * The database set-ups copy: aidcd migrate + bootstrap, made once per aidcd binary
 * (its migrations are built in) and day (audit partitions are made around the day of
 * migrating), under an advisory lock so concurrent tests make it once. A copy is
 * ~0.1 s against ~1.2 s for migrating anew, in every case of every test. Named
 * aidc_tpl_BUILD_DAY_VERSION; a new one drops those no set-up copies any more, so a
 * day of rebuilds leaves one per build. False: no template (the caller migrates anew).
 */
static bool template_ready(const struct aidc_server *s, char *tpl, size_t tpln)
{
    struct aidc_server t = *s; /* its data directory keeps the template's logs */
    struct stat st;
    if (stat(AIDC_BIN, &st) != 0)
        return false;
    /* FNV-1a of the binary's path (which build), then of its size and mtime (which
     * version of it) */
    uint32_t where = 2166136261u, what;
    for (const char *k = AIDC_BIN; *k; k++)
        where = (where ^ (unsigned char)*k) * 16777619u;
    char key[64];
    snprintf(key, sizeof key, "%lld:%lld.%ld", (long long)st.st_size, (long long)st.st_mtim.tv_sec,
             st.st_mtim.tv_nsec);
    what = where;
    for (const char *k = key; *k; k++)
        what = (what ^ (unsigned char)*k) * 16777619u;
    time_t now = time(NULL);
    struct tm tm;
    char day[16], build[16];
    gmtime_r(&now, &tm);
    strftime(day, sizeof day, "%Y%m%d", &tm);
    snprintf(build, sizeof build, "%08x", where);
    snprintf(tpl, tpln, "aidc_tpl_%s_%s_%08x", build, day, what);

    PGconn *c = PQconnectdb(getenv("AIDC_TEST_OWNER_URL"));
    PQsetNoticeProcessor(c, quiet, NULL);
    bool ok =
        PQstatus(c) == CONNECTION_OK && exec_ok(c, "SELECT pg_advisory_lock(4151101)", 0, NULL);
    const char *p[] = {tpl};
    if (ok && !exec_ok(c, "SELECT 1 FROM pg_database WHERE datname = $1", 1, p)) {
        snprintf(t.dbname, sizeof t.dbname, "aidc_tpl_new_%d", (int)getpid());
        harness_url_with_db(getenv("AIDC_TEST_APP_URL"), t.dbname, t.app_url, sizeof t.app_url);
        harness_url_with_db(getenv("AIDC_TEST_OWNER_URL"), t.dbname, t.owner_url,
                            sizeof t.owner_url);
        char sql[256];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", t.dbname);
        ok = exec_ok(c, sql, 0, NULL);
        snprintf(sql, sizeof sql, "CREATE DATABASE %s", t.dbname);
        ok = ok && exec_ok(c, sql, 0, NULL);
        if (ok)
            harness_db_init(&t);
        snprintf(sql, sizeof sql, "ALTER DATABASE %s RENAME TO %s", t.dbname, tpl);
        ok = ok && exec_ok(c, sql, 0, NULL);
        /* the templates no set-up copies any more: this build's older versions, any
         * build's of earlier days, a creation that died half way (aidc_tpl_new_PID) */
        const char *keep[] = {tpl, build, day};
        PGresult *old =
            PQexecParams(c,
                         "SELECT datname FROM pg_database WHERE datname LIKE "
                         "'aidc\\_tpl\\_%' AND datname <> $1 AND (split_part(datname, '_', 3) = $2"
                         " OR split_part(datname, '_', 4) <> $3)",
                         3, NULL, keep, NULL, NULL, 0);
        for (int i = 0; PQresultStatus(old) == PGRES_TUPLES_OK && i < PQntuples(old); i++) {
            snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", PQgetvalue(old, i, 0));
            (void)exec_ok(c, sql, 0, NULL);
        }
        PQclear(old);
    }
    PQfinish(c); /* and with it the lock */
    return ok;
}

bool harness_db_template(void)
{
    harness_require_pg();
    struct aidc_server s = {0};
    snprintf(s.data_dir, sizeof s.data_dir, "/tmp/aidc-test-template-%d", (int)getpid());
    mkdir(s.data_dir, 0700);
    char tpl[64];
    bool ok = template_ready(&s, tpl, sizeof tpl);
    printf("%s %s\n", ok ? "template" : "no template:", ok ? tpl : "see the errors above");
    harness_remove_tree(s.data_dir);
    return ok;
}

void harness_db_create(struct aidc_server *s, const char *name)
{
    const char *app = getenv("AIDC_TEST_APP_URL"), *owner = getenv("AIDC_TEST_OWNER_URL");
    snprintf(s->dbname, sizeof s->dbname, "aidc_t_%s_%d", name, (int)getpid());
    harness_url_with_db(app, s->dbname, s->app_url, sizeof s->app_url);
    harness_url_with_db(owner, s->dbname, s->owner_url, sizeof s->owner_url);
    snprintf(s->data_dir, sizeof s->data_dir, "/tmp/aidc-test-%s-%d", name, (int)getpid());
    snprintf(s->log_path, sizeof s->log_path, "%s/aidcd.log", s->data_dir);
    mkdir(s->data_dir, 0700);
    char sql[256], tpl[64];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", s->dbname);
    PQclear(harness_sql(owner, sql, 0, NULL));
    if (template_ready(s, tpl, sizeof tpl)) {
        snprintf(sql, sizeof sql, "CREATE DATABASE %s TEMPLATE %s", s->dbname, tpl);
        PGresult *r = harness_sql(owner, sql, 0, NULL);
        if (r) {
            PQclear(r);
            return;
        }
    }
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", s->dbname);
    PGresult *r = harness_sql(owner, sql, 0, NULL);
    if (!r)
        die("cannot create database", s->dbname);
    PQclear(r);
    harness_db_init(s);
}

void harness_db_init(struct aidc_server *s)
{
    char out[320];
    snprintf(out, sizeof out, "%s/migrate.log", s->data_dir);
    const char *margs[] = {"migrate", NULL};
    if (harness_run_aidcd(s, margs, NULL, out) != 0)
        die("aidcd migrate failed, see", out);
    const char *bargs[] = {"bootstrap", "--admin", ADMIN_USER, NULL};
    const char *benv[] = {"AIDC_ADMIN_PASSWORD=" ADMIN_PASSWORD, NULL};
    snprintf(out, sizeof out, "%s/bootstrap.log", s->data_dir);
    if (harness_run_aidcd(s, bargs, benv, out) != 0)
        die("aidcd bootstrap failed, see", out);
}

void harness_db_drop(struct aidc_server *s)
{
    secrets_archive_logs(s->data_dir);
    char sql[256];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", s->dbname);
    /* FORCE ends the other sessions, which only a superuser may do to the
     * application role's (a server that closes its connections a moment late) */
    const char *su = getenv("AIDC_TEST_SUPERUSER_URL");
    PQclear(harness_sql(su && su[0] ? su : getenv("AIDC_TEST_OWNER_URL"), sql, 0, NULL));
}

void harness_db_discard(struct aidc_server *s)
{
    harness_db_drop(s);
    harness_remove_tree(s->data_dir);
}

/*
 * The servers this process started and has not stopped: a test whose set-up
 * fails half way (Check ends it without its teardown) must not leave an aidcd
 * running. Stopped at exit by the process that started them only (Check's
 * forked tests inherit the list, and must not stop their parent's server).
 */
#define MAX_STARTED 32
static struct {
    pid_t owner;
    pid_t pids[MAX_STARTED];
} started;

static void stop_leftovers(void)
{
    if (getpid() != started.owner)
        return;
    for (size_t i = 0; i < MAX_STARTED; i++) {
        pid_t pid = started.pids[i];
        /* a live child of ours only: one a test killed and reaped itself is gone, and
         * its pid may be someone else's by now */
        if (pid <= 0 || waitpid(pid, NULL, WNOHANG) != 0 || kill(pid, SIGTERM) != 0)
            continue;
        fprintf(stderr, "harness: stopping aidcd %d, still running at exit\n", (int)pid);
        for (int t = 0; t < 100 && waitpid(pid, NULL, WNOHANG) == 0; t++) {
            struct timespec nap = {0, 50 * 1000 * 1000};
            nanosleep(&nap, NULL); /* its exit: nothing to block on with a deadline */
        }
        if (kill(pid, 0) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
    }
}

static void track(pid_t pid, bool add)
{
    if (started.owner != getpid()) { /* first start in this process */
        memset(&started, 0, sizeof started);
        started.owner = getpid();
        atexit(stop_leftovers);
    }
    for (size_t i = 0; i < MAX_STARTED; i++)
        if (add ? started.pids[i] == 0 : started.pids[i] == pid) {
            started.pids[i] = add ? pid : 0;
            return;
        }
}

/* Wait for aidcd's "listening" log line and read the port from it. */
static int wait_listening(struct aidc_server *s)
{
    for (int i = 0; i < 1000; i++) {
        char *log = harness_read_file(s->log_path);
        char *p = log ? strstr(log, "\"msg\":\"listening\"") : NULL;
        char *port = p ? strstr(p, "\"port\":") : NULL;
        if (port) {
            s->port = atoi(port + 7);
            char *sp = strstr(p, "\"sessions_port\":");
            s->sessions_port = sp ? atoi(sp + 16) : -1;
            free(log);
            snprintf(s->base, sizeof s->base, "http://127.0.0.1:%d", s->port);
            snprintf(s->sessions_base, sizeof s->sessions_base, "http://127.0.0.1:%d",
                     s->sessions_port);
            return 0;
        }
        free(log);
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            fprintf(stderr, "harness: aidcd exited early, see %s\n", s->log_path);
            track(s->pid, false);
            s->pid = 0;
            return -1;
        }
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL); /* polling a log file: there is nothing to block on */
    }
    return -1;
}

static unsigned chown_to;

static int chown_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    (void)lchown(path, chown_to, chown_to);
    return 0;
}

/*
 * For run_as: the data directory the uid's, and a copy of aidcd it can run
 * (into exe). 0 or -1.
 */
static int prepare_run_as(const struct aidc_server *s, char *exe, size_t exesz)
{
    char dir[128];
    snprintf(dir, sizeof dir, "/tmp/aidc-test-bin-%d", (int)getpid());
    snprintf(exe, exesz, "%s/aidcd", dir);
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || chmod(dir, 0755) != 0)
        return -1;
    char *cmd = NULL;
    if (asprintf(&cmd, "cp -f '%s' '%s' && chmod 755 '%s'", AIDC_BIN, exe, exe) < 0)
        return -1;
    int rc = system(cmd);
    free(cmd);
    chown_to = s->run_as;
    nftw(s->data_dir, chown_entry, 16, FTW_PHYS);
    return rc == 0 ? 0 : -1;
}

int harness_server_start(struct aidc_server *s, const char *const *env)
{
    note_secrets(s, env);
    char exe[160];
    snprintf(exe, sizeof exe, "%s", AIDC_BIN);
    if (s->run_as && prepare_run_as(s, exe, sizeof exe) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setenv_list(s, env);
        int fd = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
            close(fd);
        }
        if (s->run_as &&
            (setgroups(0, NULL) != 0 || setresgid(s->run_as, s->run_as, s->run_as) != 0 ||
             setresuid(s->run_as, s->run_as, s->run_as) != 0)) {
            perror("harness: cannot run aidcd as its uid");
            _exit(126);
        }
        execl(exe, exe, "serve", (char *)NULL);
        _exit(127);
    }
    s->pid = pid;
    track(pid, true);
    int rc = wait_listening(s);
    note_key_files(s, env);
    return rc;
}

int harness_server_stop(struct aidc_server *s)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGTERM);
    int st = 0;
    while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
        ;
    track(s->pid, false);
    s->pid = 0;
    /* its log joins the run's log tree (secrets.h), whatever happens to data_dir */
    secrets_archive_logs(s->data_dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void harness_setup(const char *name, const char *const *env)
{
    harness_require_pg();
    signal(SIGPIPE, SIG_IGN);
    /* The log is appended to: start each program with an empty one. */
    harness_db_create(&harness_srv, name);
    unlink(harness_srv.log_path);
    if (harness_server_start(&harness_srv, env) != 0)
        die("aidcd did not start, see", harness_srv.log_path);
    if (!harness_login_admin())
        die("cannot log in as", ADMIN_USER);
}

bool harness_log_clean(const char *path)
{
    static const char *const reports[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                          "runtime error:", "\"level\":\"fatal\""};
    char *log = harness_read_file(path);
    bool clean = true;
    for (size_t i = 0; log && i < sizeof reports / sizeof reports[0]; i++) {
        const char *hit = strstr(log, reports[i]);
        if (hit) {
            fprintf(stderr, "harness: %s reports: %.2000s\n", path, hit);
            clean = false;
        }
    }
    free(log);
    return clean;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    (void)remove(path);
    return 0;
}

void harness_remove_tree(const char *dir)
{
    secrets_archive_logs(dir); /* the logs below it outlive it (secrets.h) */
    if (dir && dir[0])
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

bool harness_login_admin(void)
{
    char *tok = login(ADMIN_USER, ADMIN_PASSWORD);
    if (!tok)
        return false;
    snprintf(harness_srv.admin_token, sizeof harness_srv.admin_token, "%s", tok);
    free(tok);
    return true;
}

void harness_teardown(void)
{
    int st = harness_server_stop(&harness_srv);
    bool clean = harness_log_clean(harness_srv.log_path);
    harness_db_drop(&harness_srv);
    /* a server that crashed, leaked or misbehaved on the way out fails the program */
    if (st != 0 || !clean) {
        fprintf(stderr, "harness: aidcd exited with %d, see %s\n", st, harness_srv.log_path);
        exit(1);
    }
    /* all went well: nothing left to look at (job directories included, and the
     * directory jobs share with the test: tests/support/jobs.h) */
    char shared[300];
    snprintf(shared, sizeof shared, "%s-shared", harness_srv.data_dir);
    harness_remove_tree(shared);
    harness_remove_tree(harness_srv.data_dir);
}
