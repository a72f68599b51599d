/* audittest.c - what the audit tests share (see audittest.h). */
#include "audittest.h"

#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

void audittest_key(const char *name, char *dir, size_t dirsz, char *key, size_t keysz,
                   char *pub, size_t pubsz, char *env_key, size_t envsz)
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

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void audittest_key_remove(const char *dir)
{
    if (dir && dir[0])
        nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
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
