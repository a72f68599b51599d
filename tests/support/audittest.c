/* audittest.c - what the audit tests share (see audittest.h). */
#include "audittest.h"

#include "client.h"
#include "harness.h"

#include <check.h>
#include <time.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int audittest_run_aidcd(const char *const *args, const char *const *env, const char *out,
                        const char *err, unsigned deadline_s)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        for (size_t i = 0; env && env[i]; i++) {
            char *kv = strdup(env[i]);
            char *eq = kv ? strchr(kv, '=') : NULL;
            if (eq) {
                *eq = '\0';
                setenv(kv, eq + 1, 1);
            }
            free(kv);
        }
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0)
            _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        close(fo);
        close(fe);
        alarm(deadline_s);
        const char *argv[16] = {AIDC_BIN};
        for (int i = 0; args && args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(AIDC_BIN, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static _Noreturn void key_fail(const char *what, const char *where)
{
    fprintf(stderr, "test setup: %s (%s)\n", what, where);
    exit(1);
}

void audittest_key(const char *name, char *dir, size_t dirsz, char *key, size_t keysz, char *pub,
                   size_t pubsz, char *env_key, size_t envsz)
{
    snprintf(dir, dirsz, "/tmp/aidc-%s-key-XXXXXX", name);
    if (!mkdtemp(dir))
        key_fail("cannot make a directory for the audit key", dir);
    snprintf(key, keysz, "%s/audit.pem", dir);
    snprintf(pub, pubsz, "%s/audit.pub", dir);
    char err[512];
    snprintf(err, sizeof err, "%s/keygen.err", dir);
    char env[600];
    snprintf(env, sizeof env, "AIDC_AUDIT_KEY_FILE=%s", key);
    const char *kargs[] = {"audit", "keygen", key, NULL};
    const char *pargs[] = {"audit", "public-key", NULL};
    const char *penv[] = {env, NULL};
    if (audittest_run_aidcd(kargs, NULL, "/dev/null", err, 60) != 0 ||
        audittest_run_aidcd(pargs, penv, pub, err, 60) != 0)
        key_fail("cannot make the audit key", err);
    snprintf(env_key, envsz, "%s", env);
}

void audittest_key_remove(const char *dir)
{
    if (dir && dir[0])
        harness_remove_tree(dir);
}

char *audittest_sql_value(const char *url, const char *sql, int n, const char *const *params)
{
    PGresult *r = harness_sql(url, sql, n, params);
    char *v = r && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? strdup(PQgetvalue(r, 0, 0)) : NULL;
    PQclear(r);
    return v;
}

_Noreturn void audittest_setup_fail(const char *what)
{
    fprintf(stderr, "setup: %s (aidcd log: %s)\n", what, harness_srv.log_path);
    if (harness_srv.pid > 0) /* leave no aidcd behind, nor its database */
        harness_server_stop(&harness_srv);
    if (harness_srv.dbname[0])
        harness_db_drop(&harness_srv);
    exit(1);
}

long long audittest_num(const char *url, const char *sql, int n, const char *const *params)
{
    char *v = audittest_sql_value(url, sql, n, params);
    ck_assert_msg(v != NULL, "no value from: %s", sql);
    long long x = strtoll(v, NULL, 10);
    free(v);
    return x;
}

long long audittest_wait_quiet(int deadline_s)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        PGresult *r =
            harness_sql(harness_srv.owner_url,
                        "SELECT NOT EXISTS (SELECT 1 FROM audit_events e WHERE e.ts >= h.upto_ts"
                        "                   AND (e.ts, e.id) > (h.upto_ts, h.upto_id))"
                        " AND NOT EXISTS (SELECT 1 FROM audit_inbox) AND h.seq > 0 AND "
                        "coalesce((SELECT max(seq) FROM audit_checkpoints), 0) = h.seq,"
                        " h.seq FROM audit_chain_head h",
                        0, NULL);
        bool quiet = r && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        long long head = quiet ? strtoll(PQgetvalue(r, 0, 1), NULL, 10) : 0;
        PQclear(r);
        if (quiet)
            return head;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > deadline_s)
            return -1;
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL); /* polling the sealer's progress: nothing to block on */
    }
}

json_t *audittest_api_verify(void)
{
    struct http_res r;
    long st = reqj("GET", "/api/v1/audit/verify", harness_srv.admin_token, NULL, &r);
    json_t *v = st == 200 ? json_incref(r.json) : NULL;
    if (!v)
        fprintf(stderr, "GET /api/v1/audit/verify answered %ld: %s\n", st, r.body);
    http_res_free(&r);
    return v;
}

json_t *audittest_cli_verify(const struct aidc_server *s, const char *keyfile, int *rc)
{
    char out[320], err[320], db[600], dir[300], key[400];
    snprintf(out, sizeof out, "%s/verify.out", s->data_dir);
    snprintf(err, sizeof err, "%s/verify.err", s->data_dir);
    snprintf(db, sizeof db, "AIDC_DATABASE_URL=%s", s->app_url);
    snprintf(dir, sizeof dir, "AIDC_DATA_DIR=%s", s->data_dir);
    snprintf(key, sizeof key, "AIDC_AUDIT_KEY_FILE=%s", keyfile);
    const char *args[] = {"audit", "verify", NULL};
    const char *env[] = {db, dir, key, NULL};
    *rc = audittest_run_aidcd(args, env, out, err, 60);
    json_error_t jerr;
    json_t *v = json_load_file(out, 0, &jerr);
    if (!v) {
        char *e = harness_read_file(err);
        fprintf(stderr, "aidcd audit verify (exit %d): stdout is not JSON (%s); stderr: %s\n", *rc,
                jerr.text, e ? e : "");
        free(e);
    }
    return v;
}

double audittest_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void audittest_nap(void)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL); /* between two polls of a condition */
}

void audittest_auditor(const char *user, const char *pw, char *jwt, size_t n)
{
    make_user(user, pw, "[\"auditor\"]");
    char *t = login(user, pw);
    if (!t) {
        fprintf(stderr, "test setup: cannot log in as the auditor\n");
        exit(1);
    }
    snprintf(jwt, n, "%s", t);
    free(t);
}

json_t *audittest_csv_parse(const char *text)
{
    json_t *rows = json_array(), *row = json_array();
    static char cell[65536];
    for (const char *p = text; *p;) {
        size_t n = 0;
        if (*p == '"') {
            for (p++;; p++) {
                ck_assert_msg(*p != '\0', "an unterminated quoted cell");
                if (*p == '"' && p[1] != '"') {
                    p++;
                    break;
                }
                if (*p == '"')
                    p++;
                if (n + 1 < sizeof cell)
                    cell[n++] = *p;
            }
        } else {
            for (; *p && *p != ',' && *p != '\r'; p++) {
                ck_assert_msg(*p != '"' && *p != '\n', "a bare quote or newline in a cell");
                if (n + 1 < sizeof cell)
                    cell[n++] = *p;
            }
        }
        cell[n] = '\0';
        json_array_append_new(row, json_string(cell));
        if (*p == ',') {
            p++;
            continue;
        }
        ck_assert_msg(p[0] == '\r' && p[1] == '\n', "a record does not end with CRLF");
        p += 2;
        json_array_append_new(rows, row);
        row = json_array();
    }
    json_decref(row);
    return rows;
}

void audittest_export(const char *jwt, const char *query, struct http_res *out)
{
    long st = reqj("GET", fmt("/api/v1/audit/events/export%s", query), jwt, NULL, out);
    ck_assert_msg(st == 200, "export%s: %ld %s", query, st, out->body);
}

void audittest_write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

bool audittest_str_is(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

void audittest_wait_checkpoint(const char *jwt, long long seq, double wait_s)
{
    double end = audittest_now() + wait_s;
    for (;;) {
        struct http_res r;
        ck_assert_int_eq(reqj("GET", "/api/v1/audit/checkpoints?limit=1", jwt, NULL, &r), 200);
        json_t *cp = json_array_get(json_object_get(r.json, "items"), 0);
        bool ok = cp && json_integer_value(json_object_get(cp, "seq")) >= seq;
        http_res_free(&r);
        if (ok)
            return;
        ck_assert_msg(audittest_now() < end, "no checkpoint at position %lld after %.0f s", seq,
                      wait_s);
        audittest_nap();
    }
}

bool audittest_wait_metered(double wait_s)
{
    PQclear(harness_sql(harness_srv.owner_url, "SELECT pg_notify('aidc_jobs', 'test')", 0, NULL));
    for (double until = audittest_now() + wait_s;; audittest_nap()) {
        /* not audittest_num: this also serves programs outside Check (portal_world) */
        char *n = audittest_sql_value(harness_srv.owner_url,
                                      "SELECT count(*) FROM job_runs WHERE ended_at IS NOT NULL"
                                      " AND metered_to IS DISTINCT FROM ended_at",
                                      0, NULL);
        bool done = n && strcmp(n, "0") == 0;
        free(n);
        if (done)
            return true;
        if (audittest_now() > until)
            return false;
    }
}

json_t *audittest_event_with(const char *action, const char *needle, double wait_s)
{
    double deadline = audittest_now() + wait_s;
    for (;;) {
        struct http_res r;
        ck_assert_int_eq(reqj("GET", fmt("/api/v1/audit/events?action=%s&limit=50", action),
                              harness_srv.admin_token, NULL, &r),
                         200);
        json_t *found = NULL;
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(r.json, "items"), i, e) {
            char *t = json_dumps(e, JSON_COMPACT);
            if (!found && t && strstr(t, needle))
                found = json_incref(e);
            free(t);
        }
        http_res_free(&r);
        if (found)
            return found;
        ck_assert_msg(audittest_now() < deadline, "no %s event with %s", action, needle);
        audittest_nap();
    }
}
