/* jobs.c - job test helpers (see jobs.h). */
#include "jobs.h"

#include "client.h"
#include "harness.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const jobs_fast_env[] = {"AIDC_SYNC_INTERVAL_MS=100",
                                     "AIDC_ADMISSION_INTERVAL_MS=200",
                                     "AIDC_PREEMPT_GRACE_SECONDS=1", NULL};

void jobs_admin_ok(const char *method, const char *path, const char *body, long want)
{
    struct http_res r;
    long st = reqj(method, path, harness_srv.admin_token, body, &r);
    ck_assert_msg(st == want, "%s %s answered %ld (want %ld): %s", method, path, st, want,
                  r.body ? r.body : "");
    http_res_free(&r);
}

double jobs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void jobs_nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

double jobs_ts(const json_t *v)
{
    const char *s = json_string_value(v);
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *rest = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!rest)
        return -1;
    double frac = *rest == '.' ? strtod(rest, NULL) : 0;
    return (double)timegm(&tm) + frac;
}

bool jobs_proc_has(const char *pid, const char *what, const char *want, bool prefix)
{
    char path[300], buf[65536];
    snprintf(path, sizeof path, "/proc/%s/%s", pid, what);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f), wl = strlen(want);
    fclose(f);
    buf[n] = '\0';
    for (size_t at = 0; at < n; at += strlen(buf + at) + 1)
        if (prefix ? strncmp(buf + at, want, wl) == 0 : strcmp(buf + at, want) == 0)
            return true;
    return false;
}

static char shared_dir[320];

const char *jobs_shared_dir(void)
{
    snprintf(shared_dir, sizeof shared_dir, "%s-shared", harness_srv.data_dir);
    /* sticky and open to all: jobs run as their tenants' uids */
    if (mkdir(shared_dir, 0700) == 0) {
        if (chmod(shared_dir, 01777) != 0)
            ck_abort_msg("cannot chmod %s: %s", shared_dir, strerror(errno));
    } else if (errno != EEXIST) {
        ck_abort_msg("cannot make %s: %s", shared_dir, strerror(errno));
    }
    return shared_dir;
}

void jobs_shared_dir_remove(void)
{
    struct stat st;
    if (harness_srv.data_dir[0] && stat(jobs_shared_dir(), &st) == 0)
        harness_remove_tree(shared_dir);
}

/* The processes of this program's jobs (killed when kill); how many were found. */
static int leftovers(bool kill_them)
{
    if (!harness_srv.data_dir[0])
        return 0; /* set up nothing, started nothing */
    char mark[300], dirs[300];
    snprintf(mark, sizeof mark, "TEST_RUN=%s", harness_srv.data_dir);
    snprintf(dirs, sizeof dirs, "%s/jobs/", harness_srv.data_dir);
    int found = 0;
    /* a shim killed between two looks may have started its job meanwhile */
    for (int pass = 0; pass < 5; pass++) {
        int now = 0;
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == (int)getpid())
                continue;
            bool shim = jobs_proc_has(e->d_name, "cmdline", "local-shim", false) &&
                        jobs_proc_has(e->d_name, "cmdline", dirs, true);
            if (shim || jobs_proc_has(e->d_name, "environ", mark, false)) {
                char stat[320];
                snprintf(stat, sizeof stat, "/proc/%s/stat", e->d_name);
                char *text = harness_read_file(stat);
                const char *close = text ? strrchr(text, ')') : NULL;
                bool zombie = close && close[1] && close[2] == 'Z'; /* dead, not reaped yet */
                free(text);
                if (zombie)
                    continue;
                if (kill_them)
                    kill((pid_t)atoi(e->d_name), SIGKILL);
                now++;
            }
        }
        if (d)
            closedir(d);
        found += now;
        if (!now || !kill_them)
            break;
        jobs_nap_ms(50);
    }
    return found;
}

int jobs_stop_shims(int timeout_s)
{
    char dirs[300];
    snprintf(dirs, sizeof dirs, "%s/jobs/", harness_srv.data_dir);
    double until = jobs_now() + timeout_s;
    for (bool asked = false;;) {
        int left = 0;
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] < '1' || e->d_name[0] > '9')
                continue;
            if (jobs_proc_has(e->d_name, "cmdline", "local-shim", false) &&
                jobs_proc_has(e->d_name, "cmdline", dirs, true)) {
                if (!asked)
                    kill((pid_t)atoi(e->d_name), SIGTERM); /* "stop the job" */
                left++;
            }
        }
        if (d)
            closedir(d);
        asked = true;
        if (!left)
            return 0;
        if (jobs_now() > until)
            return jobs_kill_leftovers();
        jobs_nap_ms(100);
    }
}

int jobs_kill_leftovers(void)
{
    return leftovers(true);
}

int jobs_count_leftovers(void)
{
    return leftovers(false);
}

static pid_t reaping_pid;

static void reap_at_exit(void)
{
    if (getpid() == reaping_pid && jobs_kill_leftovers())
        fprintf(stderr, "at exit: killed processes the jobs left behind\n");
}

void jobs_reap_at_exit(void)
{
    reaping_pid = getpid();
    atexit(reap_at_exit);
}

void jobs_local_cluster(const char *gpus_json)
{
    jobs_admin_ok("POST", "/api/v1/clusters",
             fmt("{\"name\":\"local\",\"kind\":\"local\",\"options\":{\"gpus\":%s,"
                 "\"cpus\":64,\"memory_gib\":512,\"writable_paths\":[\"%s\"]}}",
                 gpus_json, jobs_shared_dir()),
             201);
}

void jobs_tenant_quota(const char *tenant, const char *resources_json)
{
    jobs_admin_ok("PUT", fmt("/api/v1/tenants/%s/quota", tenant),
             fmt("{\"resources\":%s}", resources_json), 200);
}

void jobs_project_quota(const char *tenant, const char *project, const char *resources_json)
{
    jobs_admin_ok("PUT", fmt("/api/v1/tenants/%s/projects/%s/quota", tenant, project),
             fmt("{\"resources\":%s}", resources_json), 200);
}

int jobs_restart_server(const char *const *env)
{
    static int restarts;
    char aside[320];
    snprintf(aside, sizeof aside, "%s.%d", harness_srv.log_path, ++restarts);
    if (rename(harness_srv.log_path, aside) != 0 || !harness_log_clean(aside))
        return -1;
    return harness_server_start(&harness_srv, env);
}

char *jobs_tenant_member(const char *tenant, const char *project, const char *resources_json,
                         const char *user)
{
    make_tenant(tenant);
    make_project(tenant, project);
    jobs_tenant_quota(tenant, resources_json);
    char password[128];
    snprintf(password, sizeof password, "%s-password-1", user);
    make_user(user, password, NULL);
    make_member(tenant, user, "member");
    char *token = login(user, password);
    ck_assert_ptr_nonnull(token);
    return token;
}

/* The id a submit's answer r (status st, freed here) gave; the test fails unless 201. */
static char *submitted_id(long st, struct http_res *r)
{
    ck_assert_msg(st == 201, "submit answered %ld: %s", st, r->body ? r->body : "");
    const char *id = json_string_value(json_object_get(r->json, "id"));
    ck_assert_ptr_nonnull(id);
    char *out = strdup(id);
    http_res_free(r);
    ck_assert_ptr_nonnull(out);
    return out;
}

char *jobs_submit(const char *token, const char *tenant, const char *body)
{
    struct http_res r;
    long st = reqj("POST", fmt("/api/v1/tenants/%s/jobs", tenant), token, body, &r);
    return submitted_id(st, &r);
}

char *jobs_submit_keyed(const char *token, const char *tenant, const char *body, const char *key,
                        bool unanswered_ok)
{
    char h[160];
    snprintf(h, sizeof h, "Idempotency-Key: %s", key);
    const char *extra[] = {h, NULL};
    struct http_res r;
    long st = http_do(&harness_srv, "POST", fmt("/api/v1/tenants/%s/jobs", tenant), token, body,
                      extra, &r);
    if (st == 0 && unanswered_ok) {
        http_res_free(&r);
        return NULL;
    }
    return submitted_id(st, &r);
}

json_t *jobs_get(const char *token, const char *tenant, const char *id)
{
    struct http_res r;
    long st = reqj("GET", fmt("/api/v1/tenants/%s/jobs/%s", tenant, id), token, NULL, &r);
    ck_assert_msg(st == 200, "GET job %s answered %ld: %s", id, st, r.body ? r.body : "");
    json_t *j = json_incref(r.json);
    http_res_free(&r);
    return j;
}

static bool in_list(const char *state, const char *states)
{
    size_t n = strlen(state);
    for (const char *p = states; (p = strstr(p, state)) != NULL; p += n)
        if ((p == states || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

json_t *jobs_wait(const char *token, const char *tenant, const char *id, const char *states,
                  int timeout_s)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        json_t *j = jobs_get(token, tenant, id);
        const char *state = json_string_value(json_object_get(j, "state"));
        if (state && in_list(state, states))
            return j;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= timeout_s) {
            char *text = json_dumps(j, JSON_COMPACT);
            ck_abort_msg("job %s still %s after %d s (waiting for %s): %s", id, state, timeout_s,
                         states, text ? text : "");
        }
        json_decref(j);
        jobs_nap_ms(20);
    }
}

json_t *jobs_wait_seen(const char *token, const char *tenant, const char *id, int timeout_s)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        json_t *j = jobs_get(token, tenant, id);
        const char *reason = json_string_value(json_object_get(j, "reason"));
        const char *state = json_string_value(json_object_get(j, "state"));
        if (!state || strcmp(state, "queued") != 0 || !reason || strcmp(reason, "submitted") != 0)
            return j;
        json_decref(j);
        clock_gettime(CLOCK_MONOTONIC, &now);
        ck_assert_msg(now.tv_sec - start.tv_sec < timeout_s,
                      "job %s not looked at by admission after %d s", id, timeout_s);
        jobs_nap_ms(20);
    }
}

char *jobs_logs(const char *token, const char *tenant, const char *id, const char *query)
{
    struct http_res r;
    long st = reqj("GET", fmt("/api/v1/tenants/%s/jobs/%s/logs%s%s", tenant, id,
                              query ? "?" : "", query ? query : ""),
                   token, NULL, &r);
    ck_assert_msg(st == 200, "logs of %s answered %ld: %s", id, st, r.body ? r.body : "");
    char *text = strdup(r.body ? r.body : "");
    http_res_free(&r);
    ck_assert_ptr_nonnull(text);
    return text;
}

char *jobs_history(const char *token, const char *tenant, const char *id)
{
    struct http_res r;
    long st = reqj("GET", fmt("/api/v1/tenants/%s/jobs/%s/events?limit=1000", tenant, id), token,
                   NULL, &r);
    ck_assert_msg(st == 200, "events of %s answered %ld", id, st);
    char buf[4096];
    size_t len = 0;
    buf[0] = '\0';
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r.json, "items"), i, e) {
        const char *to = json_string_value(json_object_get(e, "to"));
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? "," : "",
                                to ? to : "?");
        if (len >= sizeof buf)
            break;
    }
    http_res_free(&r);
    char *out = strdup(buf);
    ck_assert_ptr_nonnull(out);
    return out;
}
