/*
 * test_backend_audit.c - every call aidc makes that changes state in a
 * scheduler is an audit event (backend.submit, backend.cancel,
 * backend.preempt) holding the request as sent, secrets redacted:
 * - the local executor: the spec it was handed, a stop, a preemption and the
 *   run that follows it;
 * - a fake slurmrestd in this program (so it runs everywhere): the JSON body
 *   and headers of POST job/submit and DELETE job/<id>, with the tokens it
 *   received - and the values of the job's own env - nowhere in
 *   audit_events; a refused submit and one that got no answer are events
 *   with outcome "error"; a delivery tried again after aidcd died between
 *   the cluster's accept and its own commit records the call it made (the
 *   lookup that adopted the job), once;
 * - the real Slurm (when AIDC_TEST_SLURM_URL is set, tests/run.sh): the same,
 *   with the JWT aidc sends nowhere in audit_events.
 *
 * The events are read straight from audit_events as the owner. The fake
 * slurmrestd is a thread of this program, so the suite runs without
 * Check's fork (what it saw must be visible to the tests).
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S 60
#define API    "/slurm/v0.0.38/"

static char *ann, *pia; /* member of chem, member of phys */

/* ---- a fake slurmrestd ------------------------------------------------------------------ */

#define FAKE_MAX_JOBS   64
#define FAKE_MAX_TOKENS 64

struct fake_job {
    long long id;
    char name[64];
    const char *state; /* RUNNING or CANCELLED */
    time_t start, end;
};

/*
 * One request at a time, each on its own connection ("Connection: close").
 * Scripts steer it: "REFUSE" is answered as slurmctld refuses a job (500,
 * 2014), "DROP" gets no answer at all (the connection closes).
 */
static struct {
    int lfd, port;
    pthread_t thread;
    pthread_mutex_t lock;
    atomic_bool stop;
    struct fake_job jobs[FAKE_MAX_JOBS];
    int njobs;
    json_t *bodies;                     /* job name -> the submit body received */
    char tokens[FAKE_MAX_TOKENS][1024]; /* X-SLURM-USER-TOKEN of submits and cancels */
    int ntokens;
    char key_path[300];
} fake = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void fake_send(int fd, int status, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status,
                     status == 200   ? "OK"
                     : status == 404 ? "Not Found"
                                     : "Error",
                     strlen(body));
    if (n > 0 && send(fd, head, (size_t)n, MSG_NOSIGNAL) == n)
        (void)!send(fd, body, strlen(body), MSG_NOSIGNAL);
}

/* The value of header name in the request head (copied into out), or false. */
static bool fake_header(const char *head, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, nl) == 0 && p[2 + nl] == ':') {
            const char *v = p + 3 + nl;
            v += strspn(v, " ");
            snprintf(out, n, "%.*s", (int)strcspn(v, "\r"), v);
            return true;
        }
    }
    return false;
}

/* Read one request: head (NUL-terminated, in buf) and body (at *body). False: none. */
static bool fake_read(int fd, char *buf, size_t cap, char **body)
{
    size_t len = 0;
    char *end = NULL;
    while (!end && len + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n = poll(&p, 1, 5000) == 1 ? recv(fd, buf + len, cap - 1 - len, 0) : -1;
        if (n <= 0)
            return false;
        len += (size_t)n;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end)
        return false;
    *end = '\0';
    *body = end + 4;
    char v[32];
    if (fake_header(buf, "Expect", v, sizeof v))
        (void)!send(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL);
    size_t want = fake_header(buf, "Content-Length", v, sizeof v) ? strtoul(v, NULL, 10) : 0;
    size_t have = len - (size_t)(*body - buf);
    while (have < want && len + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n = poll(&p, 1, 5000) == 1 ? recv(fd, buf + len, cap - 1 - len, 0) : -1;
        if (n <= 0)
            return false;
        len += (size_t)n;
        have += (size_t)n;
        buf[len] = '\0';
    }
    return have >= want;
}

static char *fake_jobs_json(void)
{
    json_t *list = json_array();
    for (int i = 0; i < fake.njobs; i++) {
        struct fake_job *j = &fake.jobs[i];
        json_array_append_new(
            list,
            json_pack("{s:I, s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:i}", "job_id", (json_int_t)j->id,
                      "name", j->name, "user_name", "aidc", "job_state", j->state, "state_reason",
                      "None", "start_time", (json_int_t)j->start, "end_time", (json_int_t)j->end,
                      "exit_code", strcmp(j->state, "CANCELLED") == 0 ? 15 : 0, "restart_cnt", 0));
    }
    json_t *all = json_pack("{s:[], s:o}", "errors", "jobs", list);
    char *text = json_dumps(all, JSON_COMPACT);
    json_decref(all);
    return text;
}

static void fake_submit(int fd, const char *text)
{
    json_t *body = json_loads(text, 0, NULL);
    const char *name = json_string_value(json_object_get(json_object_get(body, "job"), "name"));
    const char *script = json_string_value(json_object_get(body, "script"));
    if (!name || !script || fake.njobs == FAKE_MAX_JOBS) {
        fake_send(fd, 400, "{\"errors\":[{\"error_code\":9002,\"error\":\"bad body\"}]}");
    } else if (strstr(script, "DROP")) {
        /* no answer: as if slurmrestd died with the request */
    } else if (strstr(script, "REFUSE")) {
        fake_send(fd, 500,
                  "{\"errors\":[{\"error_code\":2014,\"error\":\"Requested node "
                  "configuration is not available\"}]}");
    } else {
        struct fake_job *j = &fake.jobs[fake.njobs++];
        j->id = 7000 + fake.njobs;
        snprintf(j->name, sizeof j->name, "%s", name);
        j->state = "RUNNING";
        j->start = time(NULL);
        j->end = j->start + 300;
        json_object_set(fake.bodies, name, body);
        fake_send(fd, 200, fmt("{\"errors\":[],\"job_id\":%lld,\"step_id\":\"BATCH\"}", j->id));
    }
    json_decref(body);
}

static void fake_cancel(int fd, long long id)
{
    for (int i = 0; i < fake.njobs; i++) {
        if (fake.jobs[i].id == id) {
            fake.jobs[i].state = "CANCELLED";
            fake.jobs[i].end = time(NULL);
            fake_send(fd, 200, "{\"errors\":[]}");
            return;
        }
    }
    fake_send(fd, 500,
              "{\"errors\":[{\"error_number\":2017,\"error\":\"Invalid job id "
              "specified\"}]}");
}

static void fake_serve(int fd)
{
    static char buf[1 << 20];
    char *body = NULL, method[16] = "", path[512] = "", token[1024] = "";
    if (!fake_read(fd, buf, sizeof buf, &body) ||
        sscanf(buf, "%15s %511s", method, path) != 2) /* NOLINT(cert-err34-c): strings */
        return;
    fake_header(buf, "X-SLURM-USER-TOKEN", token, sizeof token);
    pthread_mutex_lock(&fake.lock);
    if (strcmp(method, "GET") != 0 && token[0] && fake.ntokens < FAKE_MAX_TOKENS)
        snprintf(fake.tokens[fake.ntokens++], sizeof fake.tokens[0], "%s", token);
    if (strcmp(method, "GET") == 0 && strcmp(path, API "nodes") == 0) {
        fake_send(fd, 200,
                  "{\"errors\":[],\"nodes\":[{\"name\":\"fake-1\",\"state\":\"idle\","
                  "\"state_flags\":[],\"cpus\":64,\"real_memory\":524288,"
                  "\"gres\":\"gpu:v100:8\"}]}");
    } else if (strcmp(method, "GET") == 0 && strncmp(path, API "jobs", strlen(API "jobs")) == 0) {
        char *jobs = fake_jobs_json();
        fake_send(fd, 200, jobs);
        free(jobs);
    } else if (strcmp(method, "POST") == 0 && strcmp(path, API "job/submit") == 0) {
        fake_submit(fd, body);
    } else if (strcmp(method, "DELETE") == 0 &&
               strncmp(path, API "job/", strlen(API "job/")) == 0) {
        fake_cancel(fd, strtoll(path + strlen(API "job/"), NULL, 10));
    } else {
        fake_send(fd, 404, "{\"errors\":[{\"error_code\":404,\"error\":\"no such path\"}]}");
    }
    pthread_mutex_unlock(&fake.lock);
}

static void *fake_main(void *arg)
{
    (void)arg;
    while (!fake.stop) {
        struct pollfd p = {.fd = fake.lfd, .events = POLLIN};
        if (poll(&p, 1, 200) != 1)
            continue;
        int fd = accept(fake.lfd, NULL, NULL);
        if (fd < 0)
            continue;
        fake_serve(fd);
        close(fd);
    }
    return NULL;
}

static void fake_start(void)
{
    fake.bodies = json_object();
    fake.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fake.lfd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    ck_assert_int_eq(bind(fake.lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fake.lfd, 64), 0);
    ck_assert_int_eq(getsockname(fake.lfd, (struct sockaddr *)&a, &al), 0);
    fake.port = ntohs(a.sin_port);
    ck_assert_int_eq(pthread_create(&fake.thread, NULL, fake_main, NULL), 0);
}

static void fake_stop(void)
{
    fake.stop = true;
    pthread_join(fake.thread, NULL);
    close(fake.lfd);
    json_decref(fake.bodies);
}

/* The fake as cluster "fake": a key aidcd mints its tokens with, and its inventory. */
static void fake_register(void)
{
    /* beside aidcd's data directory: a credentials_ref may not name a file in it */
    snprintf(fake.key_path, sizeof fake.key_path, "%s.fake-jwt.key", harness_srv.data_dir);
    FILE *f = fopen(fake.key_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("fake-hs256-key-0123456789abcdef-do-not-log", f);
    fclose(f);
    /* aidcd refuses a credentials_ref file others may read (docs/secrets.md) */
    ck_assert_int_eq(chmod(fake.key_path, 0600), 0);
    jobs_admin_ok("POST", "/api/v1/clusters",
                  fmt("{\"name\":\"fake\",\"kind\":\"slurm\",\"endpoint\":\"http://127.0.0.1:%d\","
                      "\"credentials_ref\":\"file:%s\",\"options\":{\"user_name\":\"aidc\","
                      "\"timeout_seconds\":5}}",
                      fake.port, fake.key_path),
                  201);
    double deadline = jobs_now() + 30;
    for (;;) {
        struct http_res r;
        ck_assert_int_eq(reqj("GET", "/api/v1/clusters/fake", harness_srv.admin_token, NULL, &r),
                         200);
        json_t *v100 = json_object_get(json_object_get(r.json, "inventory"), "gpu:v100");
        bool up = json_integer_value(json_object_get(v100, "total")) == 8 &&
                  json_is_true(json_object_get(r.json, "healthy"));
        http_res_free(&r);
        if (up)
            return;
        ck_assert_msg(jobs_now() < deadline, "no inventory from the fake slurmrestd after 30 s");
        jobs_nap_ms(100);
    }
}

/* ---- audit_events, read as the owner --------------------------------------------------- */

/*
 * The events action of job id (resource), oldest first (new reference), once
 * there are at least want of them (the test fails after WAIT_S).
 */
static json_t *events(const char *action, const char *id, size_t want)
{
    const char *p[2] = {action, id};
    double deadline = jobs_now() + WAIT_S;
    for (;;) {
        PGresult *r = harness_sql(
            harness_srv.owner_url,
            "SELECT coalesce(json_agg(json_build_object('outcome', outcome, 'status', status,"
            " 'tenant_slug', tenant_slug, 'actor', actor_username, 'roles', actor_roles,"
            " 'resource_type', resource_type, 'details', details) ORDER BY id), '[]')"
            " FROM audit_log WHERE action = $1 AND resource_id = $2",
            2, p);
        ck_assert_ptr_nonnull(r);
        json_t *list = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
        PQclear(r);
        ck_assert_ptr_nonnull(list);
        if (json_array_size(list) >= want)
            return list;
        json_decref(list);
        ck_assert_msg(jobs_now() < deadline, "no %zu %s events of job %s after %d s", want, action,
                      id, WAIT_S);
        jobs_nap_ms(100);
    }
}

/* The one event action of job id (new reference); fails unless there is exactly one. */
static json_t *event(const char *action, const char *id)
{
    json_t *list = events(action, id, 1);
    ck_assert_msg(json_array_size(list) == 1, "%zu %s events of job %s", json_array_size(list),
                  action, id);
    json_t *e = json_incref(json_array_get(list, 0));
    json_decref(list);
    return e;
}

/* Whether s occurs anywhere in audit_events (every column of every row). */
static bool audit_has(const char *s)
{
    PGresult *r =
        harness_sql(harness_srv.owner_url,
                    "SELECT coalesce(string_agg(t::text, ' '), '') FROM audit_log t", 0, NULL);
    ck_assert_ptr_nonnull(r);
    bool found = strstr(PQgetvalue(r, 0, 0), s) != NULL;
    PQclear(r);
    return found;
}

static const json_t *at(const json_t *o, const char *path)
{
    char key[64];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        o = json_object_get(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

static const char *sat(const json_t *o, const char *path)
{
    return json_string_value(at(o, path));
}

/* What every backend event holds: who, what, where, how long. */
static void check_common(const json_t *ev, const char *outcome, const char *tenant,
                         const char *cluster, const char *kind, const char *run_key)
{
    char *shown = json_dumps(ev, JSON_COMPACT);
    ck_assert_msg(strcmp(jstr(ev, "outcome"), outcome) == 0, "want %s: %s", outcome, shown);
    ck_assert_str_eq(jstr(ev, "actor"), "aidc");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(ev, "roles"), 0)), "system");
    ck_assert_str_eq(jstr(ev, "resource_type"), "job");
    ck_assert_str_eq(jstr(ev, "tenant_slug"), tenant);
    ck_assert_str_eq(sat(ev, "details.cluster"), cluster);
    ck_assert_str_eq(sat(ev, "details.kind"), kind);
    ck_assert_str_eq(sat(ev, "details.run_key"), run_key);
    ck_assert_msg(json_is_integer(at(ev, "details.duration_ms")) &&
                      json_integer_value(at(ev, "details.duration_ms")) >= 0,
                  "duration_ms: %s", shown);
    ck_assert_msg(json_is_object(at(ev, "details.response")), "response: %s", shown);
    free(shown);
}

/* ---- fixture ------------------------------------------------------------------------------ */

static bool have_slurm;
#define PHYS_A100 "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}"

static void setup(void)
{
    harness_setup("backend_audit", jobs_fast_env);
    jobs_local_cluster("{\"a100\":4}");
    fake_start();
    fake_register();
    ann = jobs_tenant_member("chem", "mol",
                             "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4},"
                             "\"gpu:v100\":{\"guaranteed\":8,\"limit\":8}}",
                             "ann");
    pia = jobs_tenant_member("phys", "lab", PHYS_A100, "pia");
}

static void teardown(void)
{
    /* the crash test may have failed while aidcd was down */
    if (harness_srv.pid <= 0 && jobs_restart_server(jobs_fast_env) != 0)
        fprintf(stderr, "teardown: aidcd did not start again\n");
    free(ann);
    free(pia);
    harness_teardown();
    fake_stop();
    unlink(fake.key_path);
}

static void cancel_and_wait(const char *token, const char *tenant, const char *id)
{
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/%s/jobs/%s/cancel", tenant, id), token, NULL),
                     202);
    json_t *job = jobs_wait(token, tenant, id, "cancelled,failed,succeeded", WAIT_S);
    ck_assert_str_eq(jstr(job, "state"), "cancelled");
    json_decref(job);
}

/* ---- the local executor ------------------------------------------------------------------- */

START_TEST(local_submit_and_cancel_are_audited)
{
    char *id =
        jobs_submit(ann, "chem",
                    "{\"project\":\"mol\",\"name\":\"held\",\"cluster\":\"local\","
                    "\"gpus\":1,\"gpu_type\":\"a100\",\"env\":{\"MODE\":\"mode-value-0042\","
                    "\"HF_TOKEN\":\"hf-secret-value-4711\"},\"command\":[\"sleep\",\"300\"]}");
    json_decref(jobs_wait(ann, "chem", id, "running", WAIT_S));
    json_t *ev = event("backend.submit", id);
    check_common(ev, "success", "chem", "local", "local", id);
    ck_assert(json_is_null(json_object_get(ev, "status"))); /* not over HTTP */
    ck_assert_str_eq(sat(ev, "details.request.action"), "start");
    ck_assert_str_eq(sat(ev, "details.request.spec.job_id"), id);
    /* the job's environment values are the user's: names only, as in job.submit */
    ck_assert_str_eq(sat(ev, "details.request.spec.env.MODE"), "[redacted]");
    ck_assert_str_eq(sat(ev, "details.request.spec.env.HF_TOKEN"), "[redacted]");
    ck_assert_str_eq(json_string_value(json_array_get(at(ev, "details.request.spec.command"), 0)),
                     "sleep");
    ck_assert_str_eq(sat(ev, "details.response.backend_job_id"), id);
    json_decref(ev);
    ck_assert(!audit_has("hf-secret-value-4711"));
    ck_assert(!audit_has("mode-value-0042"));

    cancel_and_wait(ann, "chem", id);
    ev = event("backend.cancel", id);
    check_common(ev, "success", "chem", "local", "local", id);
    ck_assert_str_eq(sat(ev, "details.request.action"), "stop");
    ck_assert_str_eq(sat(ev, "details.request.signal"), "SIGTERM");
    ck_assert(json_is_integer(at(ev, "details.request.shim_pid")));
    ck_assert_str_eq(sat(ev, "details.response.backend_job_id"), id);
    json_decref(ev);
    free(id);
}
END_TEST

/* phys borrows all four GPUs, chem takes two back: a preemption, then run -r1 */
START_TEST(local_preemption_and_the_next_run_are_audited)
{
    char *big = jobs_submit(pia, "phys",
                            "{\"project\":\"lab\",\"name\":\"big\",\"cluster\":\"local\","
                            "\"gpus\":4,\"gpu_type\":\"a100\",\"command\":[\"sleep\",\"300\"]}");
    json_decref(jobs_wait(pia, "phys", big, "running", WAIT_S));
    char *small = jobs_submit(ann, "chem",
                              "{\"project\":\"mol\",\"name\":\"small\",\"cluster\":\"local\","
                              "\"gpus\":2,\"gpu_type\":\"a100\",\"command\":[\"sleep\",\"1\"]}");
    json_t *js = jobs_wait(ann, "chem", small, "succeeded,failed", WAIT_S);
    ck_assert_str_eq(jstr(js, "state"), "succeeded");
    json_decref(js);

    json_t *ev = event("backend.preempt", big);
    check_common(ev, "success", "phys", "local", "local", big);
    ck_assert_str_eq(sat(ev, "details.request.action"), "stop");
    json_decref(ev);
    /* the second run is a second submit, under its own run key */
    json_decref(jobs_wait(pia, "phys", big, "running", WAIT_S));
    json_t *subs = events("backend.submit", big, 2);
    ck_assert_int_eq(json_array_size(subs), 2);
    ck_assert_str_eq(sat(json_array_get(subs, 0), "details.run_key"), big);
    char r1[64];
    snprintf(r1, sizeof r1, "%s-r1", big);
    ck_assert_str_eq(sat(json_array_get(subs, 1), "details.run_key"), r1);
    ck_assert_str_eq(sat(json_array_get(subs, 1), "details.request.spec.job_id"), r1);
    json_decref(subs);
    cancel_and_wait(pia, "phys", big);
    ev = event("backend.cancel", big);
    check_common(ev, "success", "phys", "local", "local", r1);
    json_decref(ev);
    free(big);
    free(small);
}
END_TEST

/* ---- slurmrestd, faked ---------------------------------------------------------------------- */

/* No token fake slurmrestd received, and not its key, is in audit_events. */
static void check_no_tokens(void)
{
    pthread_mutex_lock(&fake.lock);
    int n = fake.ntokens;
    pthread_mutex_unlock(&fake.lock);
    ck_assert_int_gt(n, 0);
    for (int i = 0; i < n; i++)
        ck_assert_msg(!audit_has(fake.tokens[i]), "the token %s is in audit_events",
                      fake.tokens[i]);
    ck_assert(!audit_has("fake-hs256-key"));
}

START_TEST(slurm_requests_are_recorded_as_sent)
{
    char *id = jobs_submit(ann, "chem",
                           "{\"project\":\"mol\",\"name\":\"f\",\"cluster\":\"fake\",\"gpus\":1,"
                           "\"gpu_type\":\"v100\",\"env\":{\"DB_PASSWORD\":\"pw-0815\","
                           "\"SEED\":\"seed-value-1234\"},"
                           "\"script\":\"#!/bin/sh\\nsleep 300\\n\"}");
    json_t *job = jobs_wait(ann, "chem", id, "running", WAIT_S);
    json_t *ev = event("backend.submit", id);
    check_common(ev, "success", "chem", "fake", "slurm", id);
    ck_assert_int_eq(json_integer_value(json_object_get(ev, "status")), 200);
    ck_assert_str_eq(sat(ev, "details.request.method"), "POST");
    ck_assert_str_eq(sat(ev, "details.request.url"),
                     fmt("http://127.0.0.1:%d" API "job/submit", fake.port));
    ck_assert_str_eq(sat(ev, "details.request.headers.X-SLURM-USER-NAME"), "aidc");
    ck_assert_str_eq(sat(ev, "details.request.headers.X-SLURM-USER-TOKEN"), "[redacted]");
    ck_assert_str_eq(sat(ev, "details.request.headers.Content-Type"), "application/json");
    ck_assert_str_eq(sat(ev, "details.response.backend_job_id"), jstr(job, "backend_job_id"));
    /* the body is the one slurmrestd received, but for the values of the job's own env */
    pthread_mutex_lock(&fake.lock);
    json_t *got = json_deep_copy(json_object_get(fake.bodies, id));
    pthread_mutex_unlock(&fake.lock);
    ck_assert_ptr_nonnull(got);
    json_t *env = json_object_get(json_object_get(got, "job"), "environment");
    ck_assert_str_eq(jstr(env, "DB_PASSWORD"), "pw-0815");
    ck_assert_str_eq(jstr(env, "SEED"), "seed-value-1234");
    json_object_set_new(env, "DB_PASSWORD", json_string("[redacted]"));
    json_object_set_new(env, "SEED", json_string("[redacted]"));
    ck_assert_msg(json_equal(got, at(ev, "details.request.body")), "the body differs");
    json_decref(got);
    ck_assert_str_eq(sat(ev, "details.request.body.job.environment.AIDC_JOB_ID"), id);
    ck_assert_str_eq(sat(ev, "details.request.body.job.name"), id);
    ck_assert_str_eq(sat(ev, "details.request.body.job.gres"), "gpu:v100:1");
    json_decref(ev);

    cancel_and_wait(ann, "chem", id);
    ev = event("backend.cancel", id);
    check_common(ev, "success", "chem", "fake", "slurm", id);
    ck_assert_int_eq(json_integer_value(json_object_get(ev, "status")), 200);
    ck_assert_str_eq(sat(ev, "details.request.method"), "DELETE");
    ck_assert_str_eq(sat(ev, "details.request.url"), fmt("http://127.0.0.1:%d" API "job/%s",
                                                         fake.port, jstr(job, "backend_job_id")));
    ck_assert_str_eq(sat(ev, "details.request.headers.X-SLURM-USER-TOKEN"), "[redacted]");
    ck_assert(json_is_null(at(ev, "details.request.body")));
    json_decref(ev);
    ck_assert(!audit_has("pw-0815"));
    ck_assert(!audit_has("seed-value-1234"));
    check_no_tokens();
    json_decref(job);
    free(id);
}
END_TEST

START_TEST(failed_slurm_calls_are_errors)
{
    /* refused as it is: the job fails at once, the event says what Slurm said */
    char *id = jobs_submit(ann, "chem",
                           "{\"project\":\"mol\",\"name\":\"r\",\"cluster\":\"fake\",\"gpus\":1,"
                           "\"gpu_type\":\"v100\",\"script\":\"#!/bin/sh\\necho REFUSE\\n\"}");
    json_t *job = jobs_wait(ann, "chem", id, "failed,succeeded,cancelled", WAIT_S);
    ck_assert_str_eq(jstr(job, "state"), "failed");
    json_decref(job);
    json_t *ev = event("backend.submit", id);
    check_common(ev, "error", "chem", "fake", "slurm", id);
    ck_assert_int_eq(json_integer_value(json_object_get(ev, "status")), 500);
    ck_assert_str_eq(sat(ev, "details.request.method"), "POST");
    ck_assert_msg(strstr(sat(ev, "details.response.error"), "node configuration"), "response: %s",
                  sat(ev, "details.response.error"));
    json_decref(ev);
    free(id);

    /* no answer at all: an error without a status, tried again (another event) */
    id = jobs_submit(ann, "chem",
                     "{\"project\":\"mol\",\"name\":\"d\",\"cluster\":\"fake\",\"gpus\":1,"
                     "\"gpu_type\":\"v100\",\"script\":\"#!/bin/sh\\necho DROP\\n\"}");
    json_t *list = events("backend.submit", id, 2);
    for (size_t i = 0; i < 2; i++) {
        ev = json_array_get(list, i);
        check_common(ev, "error", "chem", "fake", "slurm", id);
        ck_assert(json_is_null(json_object_get(ev, "status")));
        ck_assert_str_eq(sat(ev, "details.request.headers.X-SLURM-USER-TOKEN"), "[redacted]");
        ck_assert_str_eq(sat(ev, "details.request.body.job.name"), id);
        ck_assert_ptr_nonnull(sat(ev, "details.response.error"));
    }
    json_decref(list);
    cancel_and_wait(ann, "chem", id);
    check_no_tokens();
    free(id);
}
END_TEST

/* aidcd dies after the fake accepted the job: the call it never recorded leaves no
 * event; the delivery tried again records its own call, which found the job */
START_TEST(a_retried_delivery_records_its_own_call)
{
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    const char *const faulty[] = {"AIDC_SYNC_INTERVAL_MS=100", "AIDC_ADMISSION_INTERVAL_MS=200",
                                  "AIDC_FAULT=after_backend_submit", "AIDC_OUTBOX_LEASE_SECONDS=5",
                                  NULL};
    ck_assert_int_eq(jobs_restart_server(faulty), 0);
    const char *body = "{\"project\":\"mol\",\"name\":\"c\",\"cluster\":\"fake\",\"gpus\":1,"
                       "\"gpu_type\":\"v100\",\"script\":\"#!/bin/sh\\nsleep 300\\n\"}";
    /* NULL when the crash it sets off beat its answer */
    char *id = jobs_submit_keyed(ann, "chem", body, "crash-c", true);
    int st = 0;
    ck_assert_int_eq(waitpid(harness_srv.pid, &st, 0), harness_srv.pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 99, "aidcd ended with status %d", st);
    harness_srv.pid = 0;
    ck_assert_int_eq(jobs_restart_server(jobs_fast_env), 0);
    if (!id) /* asked again, the key gives the answer the crash lost */
        id = jobs_submit_keyed(ann, "chem", body, "crash-c", false);
    json_t *job = jobs_wait(ann, "chem", id, "running", WAIT_S);
    json_t *ev = event("backend.submit", id);
    check_common(ev, "success", "chem", "fake", "slurm", id);
    ck_assert(json_is_true(at(ev, "details.response.adopted")));
    ck_assert_str_eq(sat(ev, "details.response.backend_job_id"), jstr(job, "backend_job_id"));
    ck_assert(json_is_null(at(ev, "details.request"))); /* nothing was sent again */
    ck_assert_str_eq(sat(ev, "details.lookup.method"), "GET");
    ck_assert_ptr_nonnull(strstr(sat(ev, "details.lookup.url"), API "jobs?update_time="));
    ck_assert_str_eq(sat(ev, "details.lookup.headers.X-SLURM-USER-TOKEN"), "[redacted]");
    json_decref(ev);
    json_decref(job);
    cancel_and_wait(ann, "chem", id);
    free(id);
}
END_TEST

/* ---- the real Slurm --------------------------------------------------------------------- */

/* Cluster "hpc" on the test Slurm, with the JWT of AIDC_TEST_SLURM_JWT sent as it is. */
static void slurm_register(void)
{
    json_t *body = json_pack(
        "{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "name", "hpc", "kind", "slurm", "endpoint",
        getenv("AIDC_TEST_SLURM_URL"), "credentials_ref", "env:AIDC_TEST_SLURM_JWT", "options",
        "user_name", getenv("AIDC_TEST_SLURM_USER"), "partition", "gpu", "preemptible_partition",
        "preempt", "workdir", fmt("%s/jobs", getenv("AIDC_TEST_SLURM_DIR")));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    jobs_admin_ok("POST", "/api/v1/clusters", text, 201);
    free(text);
    double deadline = jobs_now() + 30;
    for (;;) {
        struct http_res r;
        ck_assert_int_eq(reqj("GET", "/api/v1/clusters/hpc", harness_srv.admin_token, NULL, &r),
                         200);
        json_t *h100 = json_object_get(json_object_get(r.json, "inventory"), "gpu:h100");
        bool up = json_integer_value(json_object_get(h100, "total")) > 0 &&
                  json_is_true(json_object_get(r.json, "healthy"));
        http_res_free(&r);
        if (up)
            return;
        ck_assert_msg(jobs_now() < deadline, "no inventory from Slurm after 30 s");
        jobs_nap_ms(100);
    }
}

START_TEST(real_slurm_calls_are_audited_without_the_token)
{
    if (!have_slurm) {
        fprintf(stderr, "no test Slurm (AIDC_TEST_SLURM_*): the real-Slurm case is skipped\n");
        return;
    }
    slurm_register();
    jobs_tenant_quota("phys", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4},"
                              "\"gpu:h100\":{\"guaranteed\":2,\"limit\":2}}");
    const char *jwt = getenv("AIDC_TEST_SLURM_JWT");
    char *id = jobs_submit(pia, "phys",
                           "{\"project\":\"lab\",\"name\":\"s\",\"cluster\":\"hpc\",\"gpus\":1,"
                           "\"gpu_type\":\"h100\",\"cpus\":1,\"memory_gib\":1,"
                           "\"time_limit_minutes\":5,\"script\":\"#!/bin/sh\\nsleep 300\\n\"}");
    json_t *job = jobs_wait(pia, "phys", id, "running", 90);
    json_t *ev = event("backend.submit", id);
    check_common(ev, "success", "phys", "hpc", "slurm", id);
    ck_assert_int_eq(json_integer_value(json_object_get(ev, "status")), 200);
    ck_assert_str_eq(sat(ev, "details.request.method"), "POST");
    ck_assert_str_eq(sat(ev, "details.request.headers.X-SLURM-USER-TOKEN"), "[redacted]");
    ck_assert_str_eq(sat(ev, "details.request.body.job.name"), id);
    ck_assert_str_eq(sat(ev, "details.request.body.job.gres"), "gpu:h100:1");
    ck_assert_str_eq(sat(ev, "details.request.body.script"), "#!/bin/sh\nsleep 300\n");
    ck_assert_str_eq(sat(ev, "details.response.backend_job_id"), jstr(job, "backend_job_id"));
    json_decref(ev);
    cancel_and_wait(pia, "phys", id);
    ev = event("backend.cancel", id);
    check_common(ev, "success", "phys", "hpc", "slurm", id);
    ck_assert_int_eq(json_integer_value(json_object_get(ev, "status")), 200);
    ck_assert_str_eq(sat(ev, "details.request.method"), "DELETE");
    const char *url = sat(ev, "details.request.url");
    ck_assert_msg(strstr(url, fmt("/job/%s", jstr(job, "backend_job_id"))), "url: %s", url);
    json_decref(ev);
    json_decref(job);
    free(id);

    /* more cores than a node has: slurmctld refuses it (2014), an error event */
    id = jobs_submit(pia, "phys",
                     "{\"project\":\"lab\",\"name\":\"wide\",\"cluster\":\"hpc\",\"gpus\":1,"
                     "\"gpu_type\":\"h100\",\"cpus\":17,\"memory_gib\":1,"
                     "\"time_limit_minutes\":5,\"script\":\"#!/bin/sh\\ntrue\\n\"}");
    job = jobs_wait(pia, "phys", id, "failed,succeeded,cancelled", 90);
    ck_assert_str_eq(jstr(job, "state"), "failed");
    ev = event("backend.submit", id);
    check_common(ev, "error", "phys", "hpc", "slurm", id);
    ck_assert_int_eq(json_integer_value(json_object_get(ev, "status")), 500);
    ck_assert_int_eq(json_integer_value(at(ev, "details.request.body.job.cpus_per_task")), 17);
    ck_assert_ptr_nonnull(sat(ev, "details.response.error"));
    json_decref(ev);
    json_decref(job);
    free(id);
    ck_assert_msg(!audit_has(jwt), "the Slurm JWT is in audit_events");
}
END_TEST

int main(void)
{
    harness_require_pg();
    have_slurm = getenv("AIDC_TEST_SLURM_URL") && getenv("AIDC_TEST_SLURM_USER") &&
                 getenv("AIDC_TEST_SLURM_JWT") && getenv("AIDC_TEST_SLURM_DIR");
    Suite *s = suite_create("backend_audit");
    TCase *tc = tcase_create("backend_audit");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, local_submit_and_cancel_are_audited);
    tcase_add_test(tc, local_preemption_and_the_next_run_are_audited);
    tcase_add_test(tc, slurm_requests_are_recorded_as_sent);
    tcase_add_test(tc, failed_slurm_calls_are_errors);
    tcase_add_test(tc, real_slurm_calls_are_audited_without_the_token);
    tcase_add_test(tc, a_retried_delivery_records_its_own_call); /* kills aidcd: last */
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* the fake slurmrestd's memory is this process's */
}
