/*
 * sandbox_fixture.h - the local executor tried as a malicious member would,
 * through the public API only (issue 20): every attack that worked before
 * the sandbox is a test here that shows it failing now, with the aidcd the
 * program starts as root (test_jobs_sandbox.c) or as an unprivileged user
 * (test_jobs_sandbox_user.c: SANDBOX_RUN_AS, with a cgroup delegated to it
 * as systemd's Delegate=yes would).
 *
 * - the job's logs: links to aidcd's session key and FIFOs put where the
 *   logs were read nothing and hold nothing (/healthz answers meanwhile);
 * - control files: links where aidcd and the shim write (stop, status, pid)
 *   leave what they point at unchanged;
 * - a forged status.json changes nothing: the job runs on until stopped;
 * - a process the job detached (setsid) does not outlive it;
 * - another tenant's /dev/shm, /tmp, job directory, environment and uid,
 *   aidcd's environment, key, data directory and signals, the database's
 *   socket and TCP port, aidcd's port, a hidden path: none in reach;
 * - memory over the job's limit ends it "out of memory"; its cgroup holds its
 *   CPU, memory and process limits;
 * - its GPUs: only its own device nodes (fake ones the test makes);
 * - outbound network (slirp4netns) reaches nothing on the host's loopback;
 * - a real image from the test registries (anonymous, and with the
 *   registry's credentials) is what the job runs in, read-only, cached;
 * - when the sandbox cannot be set up, the cluster says why and jobs do not
 *   run unconfined; "unconfined" is an explicit choice, said loudly.
 *
 * Each program includes this once (the definitions are static).
 */
#ifndef AIDC_TEST_SANDBOX_FIXTURE_H
#define AIDC_TEST_SANDBOX_FIXTURE_H

#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/pgextra.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#ifndef SANDBOX_RUN_AS
#define SANDBOX_RUN_AS 0 /* aidcd as this program: root */
#endif
#define SB_UID_FIRST 3100000 /* the cluster's uid_range (root) */
#define SB_UID_FIRST_TEXT "3100000"

static char *ann, *pia;         /* members of chem and phys */
static char sb_dev[340];        /* the fake GPU device nodes */
static char sb_protected[340];  /* a file no job may change */
static char sb_private[340];    /* a hidden path inside a writable one */
static char sb_cgparent[128];   /* the cgroups' parent ("" = the default) */
static char sb_pgport[16];      /* the test database's TCP port */
static mode_t sb_tun_mode;      /* /dev/net/tun's mode before the tests (one changes it) */
/* registries of this program's own (pushing to run.sh's would change what their tests count) */
static char sb_reg_dir[2][128], sb_reg_url[2][128];
#define SB_REG_USER "aidc"
#define SB_REG_PASSWORD "sandbox_registry_pw"

/* ---- helpers ----------------------------------------------------------------------- */

static const char *sb_sv(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void sb_write(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, mode), 0);
}

/*
 * The body of a job of project running script, with env TEST_RUN (jobs.h)
 * and the members of extra (stolen, may be NULL; its "env" joins the job's).
 */
static char *sb_body(const char *project, const char *script, json_t *extra)
{
    json_t *b = json_pack("{s:s, s:s, s:s, s:{s:s}}", "project", project, "name", "sb", "script",
                          script, "env", "TEST_RUN", harness_srv.data_dir);
    ck_assert_ptr_nonnull(b);
    if (extra) {
        json_object_update(json_object_get(b, "env"), json_object_get(extra, "env"));
        json_object_del(extra, "env");
        json_object_update(b, extra);
        json_decref(extra);
    }
    char *text = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    ck_assert_ptr_nonnull(text);
    return text;
}

/* Submit a job (sb_body) as token in tenant; its id (malloc'd). */
static char *sb_submit(const char *token, const char *tenant, const char *project,
                       const char *script, json_t *extra)
{
    char *body = sb_body(project, script, extra);
    char *id = jobs_submit(token, tenant, body);
    free(body);
    return id;
}

/* Poll the job's stdout until it holds want (30 s); the log (malloc'd). */
static char *sb_wait_log(const char *token, const char *tenant, const char *id, const char *want)
{
    double until = jobs_now() + 30;
    for (;;) {
        char *out = jobs_logs(token, tenant, id, "stream=stdout");
        if (strstr(out, want))
            return out;
        json_t *j = jobs_get(token, tenant, id);
        const char *state = sb_sv(j, "state");
        bool over = strcmp(state, "succeeded") == 0 || strcmp(state, "failed") == 0 ||
                    strcmp(state, "cancelled") == 0;
        char *err = over ? jobs_logs(token, tenant, id, "stream=stderr") : NULL;
        ck_assert_msg(!over && jobs_now() < until, "job %s (%s: %s) never printed \"%s\": %s / %s",
                      id, state, sb_sv(j, "reason"), want, out, err ? err : "");
        json_decref(j);
        free(out);
        jobs_nap_ms(50);
    }
}

static void sb_cancel(const char *token, const char *tenant, const char *id)
{
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/%s/jobs/%s/cancel", tenant, id), token,
                         NULL),
                     202);
    json_decref(jobs_wait(token, tenant, id, "cancelled,failed,succeeded", 30));
}

/* Run a job (sb_submit) to its end; it must end in state; its stdout (malloc'd). */
static char *sb_run(const char *token, const char *tenant, const char *project,
                    const char *script, json_t *extra, const char *state)
{
    char *id = sb_submit(token, tenant, project, script, extra);
    json_t *j = jobs_wait(token, tenant, id, "succeeded,failed,cancelled", 60);
    char *err = jobs_logs(token, tenant, id, "stream=stderr");
    ck_assert_msg(strcmp(sb_sv(j, "state"), state) == 0, "job %s: %s (%s), stderr: %s", id,
                  sb_sv(j, "state"), sb_sv(j, "reason"), err);
    free(err);
    json_decref(j);
    char *out = jobs_logs(token, tenant, id, "stream=stdout");
    free(id);
    return out;
}

/* aidcd's session key: 32 random bytes, NULs included, so compared as bytes. */
struct sb_key {
    unsigned char bytes[256];
    size_t len;
};

static void sb_key_read(struct sb_key *k)
{
    int fd = open(fmt("%s/jwt.key", harness_srv.data_dir), O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ssize_t n = read(fd, k->bytes, sizeof k->bytes);
    close(fd);
    ck_assert_int_ge(n, 32);
    k->len = (size_t)n;
}

/* Whether text holds the key, or is itself a piece of it (a partial leak). */
static bool sb_key_in(const char *text, const struct sb_key *k)
{
    size_t n = text ? strlen(text) : 0;
    if (n && memmem(text, n, k->bytes, k->len))
        return true;
    return n >= 4 && memmem(k->bytes, k->len, text, n);
}

static const char *sb_ctl(const char *id)
{
    return fmt("%s/jobs/%s", harness_srv.data_dir, id);
}

/* The uid a tenant's jobs run as. */
static long sb_uid_of(const char *tenant)
{
    if (SANDBOX_RUN_AS)
        return SANDBOX_RUN_AS;
    const char *p[1] = {tenant};
    PGresult *r = harness_sql(harness_srv.owner_url, "SELECT number FROM tenants WHERE slug = $1",
                              1, p);
    ck_assert_ptr_nonnull(r);
    long n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return SB_UID_FIRST + n;
}

/* Change the cluster's options (as an operator re-registering it would). */
static void sb_options(const char *jsonb_patch)
{
    const char *p[1] = {jsonb_patch};
    PQclear(harness_sql(harness_srv.owner_url,
                        "UPDATE clusters SET options = options || $1::jsonb WHERE name = 'local'",
                        1, p));
}

static bool sb_cgroup_v2(void)
{
    struct statfs fs;
    return statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == 0x63677270;
}

/* The job's group in the memory hierarchy (v1) or the unified one (v2). */
static const char *sb_cgroup_dir(const char *controller, const char *id)
{
    const char *parent = sb_cgparent[0] ? sb_cgparent : "/aidc";
    return sb_cgroup_v2() ? fmt("/sys/fs/cgroup%s/%s", parent, id)
                          : fmt("/sys/fs/cgroup/%s%s/%s", controller, parent, id);
}

static json_t *sb_cluster(void)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/clusters/local", harness_srv.admin_token, NULL, &r),
                     200);
    json_t *c = json_incref(r.json);
    http_res_free(&r);
    return c;
}

/* Ask for an inventory refresh and wait until the cluster's health is healthy. */
static json_t *sb_cluster_health(bool healthy)
{
    ck_assert_int_eq(req("POST", "/api/v1/clusters/local/sync", harness_srv.admin_token, NULL),
                     202);
    double until = jobs_now() + 30;
    for (;;) {
        json_t *c = sb_cluster();
        if (json_is_true(json_object_get(c, "healthy")) == healthy)
            return c;
        ck_assert_msg(jobs_now() < until, "the cluster never became %s",
                      healthy ? "healthy" : "unhealthy");
        json_decref(c);
        jobs_nap_ms(100);
    }
}

/* ---- fixture ----------------------------------------------------------------------- */

/* Start a registry of ours (deploy/registry-up.sh) in slot i (1: basic auth); "" when none. */
static void sb_registry_up(int i)
{
    sb_reg_url[i][0] = '\0';
    if (access("/usr/bin/docker-registry", X_OK) != 0)
        return;
    snprintf(sb_reg_dir[i], sizeof sb_reg_dir[i], "/tmp/aidc-sbreg-%d-%d", (int)getpid(), i);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "REGISTRY_DIR=%s REGISTRY_ADDR=127.0.0.1:%d REGISTRY_AUTH=%s REGISTRY_USER=%s "
             "REGISTRY_PASSWORD=%s '%s/deploy/registry-up.sh' 2>&1",
             sb_reg_dir[i], pgextra_free_port(), i ? "htpasswd" : "none", SB_REG_USER,
             SB_REG_PASSWORD, AIDC_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    char line[512];
    while (p && fgets(line, sizeof line, p))
        if (strncmp(line, "REGISTRY_URL='", 14) == 0)
            snprintf(sb_reg_url[i], sizeof sb_reg_url[i], "%.*s", (int)strcspn(line + 14, "'"),
                     line + 14);
    if (!p || pclose(p) != 0) {
        fprintf(stderr, "sandbox: registry %d did not start: %s\n", i, line);
        sb_reg_url[i][0] = '\0';
    }
}

static void sb_registry_down(int i)
{
    if (!sb_reg_dir[i][0])
        return;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "REGISTRY_DIR=%s '%s/deploy/registry-down.sh' --purge >/dev/null 2>&1",
             sb_reg_dir[i], AIDC_SOURCE_DIR);
    if (system(cmd) != 0)
        fprintf(stderr, "sandbox: could not stop the registry in %s\n", sb_reg_dir[i]);
}

/* A cgroup for the unprivileged aidcd's jobs, as systemd's Delegate=yes gives one. */
static void sb_delegate_cgroup(void)
{
    snprintf(sb_cgparent, sizeof sb_cgparent, "/aidc-test-%d", (int)getpid());
    const char *v1[] = {"memory", "pids", "cpu"};
    for (size_t i = 0; i < (sb_cgroup_v2() ? 1 : 3); i++) {
        const char *dir = sb_cgroup_v2() ? fmt("/sys/fs/cgroup%s", sb_cgparent)
                                         : fmt("/sys/fs/cgroup/%s%s", v1[i], sb_cgparent);
        ck_assert_msg(mkdir(dir, 0755) == 0 || errno == EEXIST, "%s: %s", dir, strerror(errno));
        ck_assert_int_eq(chown(dir, SANDBOX_RUN_AS, SANDBOX_RUN_AS), 0);
        static const char *const files[] = {"cgroup.procs", "cgroup.subtree_control", "tasks"};
        for (size_t k = 0; k < 3; k++)
            (void)chown(fmt("%s/%s", dir, files[k]), SANDBOX_RUN_AS, SANDBOX_RUN_AS);
    }
}

static void sb_undelegate_cgroup(void)
{
    if (!sb_cgparent[0])
        return;
    const char *v1[] = {"memory", "pids", "cpu"};
    for (size_t i = 0; i < (sb_cgroup_v2() ? 1 : 3); i++)
        rmdir(sb_cgroup_v2() ? fmt("/sys/fs/cgroup%s", sb_cgparent)
                             : fmt("/sys/fs/cgroup/%s%s", v1[i], sb_cgparent));
}

static void sb_setup(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "the sandbox tests need root (they make device nodes and cgroups)\n");
        exit(77);
    }
    harness_srv.run_as = SANDBOX_RUN_AS;
    struct stat tun;
    if (stat("/dev/net/tun", &tun) == 0)
        sb_tun_mode = tun.st_mode & 07777;
    if (SANDBOX_RUN_AS)
        sb_delegate_cgroup();
    /* the tenants' files belong to the uids their jobs run as (docs/storage.md) */
    static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=100", "AIDC_ADMISSION_INTERVAL_MS=200",
                                      "AIDC_PREEMPT_GRACE_SECONDS=1",
                                      "AIDC_STORAGE_UID_FIRST=" SB_UID_FIRST_TEXT, NULL};
    harness_setup(SANDBOX_RUN_AS ? "sandboxuser" : "sandbox", env);
    const char *shared = jobs_shared_dir();
    snprintf(sb_dev, sizeof sb_dev, "%s/dev", shared);
    snprintf(sb_protected, sizeof sb_protected, "%s/protected", shared);
    snprintf(sb_private, sizeof sb_private, "%s/private", shared);
    ck_assert_int_eq(mkdir(sb_dev, 0755), 0);
    ck_assert_int_eq(mkdir(sb_private, 0755), 0);
    sb_write(fmt("%s/p", sb_private), "operator's\n", 0644);
    sb_write(sb_protected, "precious\n", 0644);
    for (unsigned i = 0; i < 2; i++)
        ck_assert_int_eq(mknod(fmt("%s/nvidia%u", sb_dev, i), S_IFCHR | 0666, makedev(195, i)),
                         0);
    ck_assert_int_eq(mknod(fmt("%s/nvidiactl", sb_dev), S_IFCHR | 0666, makedev(195, 255)), 0);
    const char *port = strrchr(harness_srv.app_url, ':');
    snprintf(sb_pgport, sizeof sb_pgport, "%.*s", (int)strcspn(port ? port + 1 : "", "/"),
             port ? port + 1 : "");
    jobs_admin_ok("POST", "/api/v1/clusters",
                  fmt("{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":{\"a100\":2},"
                      "\"cpus\":64,\"memory_gib\":512,\"writable_paths\":[\"%s\"],"
                      "\"hidden_paths\":[\"%s\"],\"device_dir\":\"%s\","
                      "\"uid_range\":{\"first\":%d,\"count\":1000}%s%s%s}}",
                      shared, sb_private, sb_dev, SB_UID_FIRST,
                      sb_cgparent[0] ? ",\"cgroup_parent\":\"" : "", sb_cgparent,
                      sb_cgparent[0] ? "\"" : ""),
                  201);
    sb_registry_up(0);
    sb_registry_up(1);
    ann = jobs_tenant_member("chem", "mol", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":2}}", "ann");
    pia = jobs_tenant_member("phys", "lab", "{\"gpu:a100\":{\"guaranteed\":0,\"limit\":2}}", "pia");
}

static void sb_teardown(void)
{
    int left = jobs_kill_leftovers();
    if (left)
        fprintf(stderr, "teardown: killed %d processes the jobs left behind\n", left);
    free(ann);
    free(pia);
    jobs_shared_dir_remove();
    struct stat tun;
    if (sb_tun_mode && stat("/dev/net/tun", &tun) == 0 && (tun.st_mode & 07777) != sb_tun_mode)
        chmod("/dev/net/tun", sb_tun_mode);
    harness_teardown();
    sb_undelegate_cgroup();
    sb_registry_down(0);
    sb_registry_down(1);
}

#endif
