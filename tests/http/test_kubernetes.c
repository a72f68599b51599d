/*
 * test_kubernetes.c - jobs through aidc on a real Kubernetes API server
 * (kube-apiserver 1.20 from k8s-up.sh: Jobs are stored, validated, listed and
 * deleted for real, but nothing runs them; the test plays the job controller
 * by writing each Job's status subresource, as fixtures/kubernetes/README.md
 * describes):
 * - the inventory from Nodes: GPUs of Ready, schedulable nodes by their
 *   product label, cores and memory of those nodes only;
 * - the Job aidc creates: pinned image, command, env, resources, node
 *   selector, deadline, no retries, labels, scheduler and priority class;
 * - a Job that runs and completes (Kubernetes' times become the job's), that
 *   fails (BackoffLimitExceeded, DeadlineExceeded), that is cancelled (deleted
 *   at once, propagationPolicy Background), that is preempted by a reclaim
 *   (deleted, requeued, run again as a new Job);
 * - listing in pages (options.page_size 2) follows every page;
 * - a namespace that does not exist fails the job at once, naming it;
 * - a wrong token makes the cluster unhealthy with a 401;
 * - a job submitted while the API server is stopped waits, and is delivered
 *   once it is back (only with AIDC_TEST_K8S_DIR: it stops the server);
 * - exactly one Job when aidcd dies between the API server's accept and its
 *   own commit (AIDC_FAULT=after_backend_submit).
 *
 * The API server keeps its state across runs and may serve other runs at the
 * same time: tenants (so namespaces) and Nodes are named after this run, the
 * Nodes carry a GPU product label of this run's own (mapped to "a100" through
 * options.gpu_types) so other runs' Nodes never count as a100, and both are
 * deleted at the end.
 *
 * Needs AIDC_TEST_K8S_URL, _TOKEN and _CA (skipped, 77, without the URL);
 * AIDC_TEST_K8S_DIR for the stop/start test. aidcd is killed and started
 * again, so the suite runs without Check's fork.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/kubetest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CL "k8s"
#define WAIT_S 60
#define IMAGE_REPO "aidc-test/trainer"
#define IMAGE_TAG "v1"
#define DIGEST "sha256:abababababababababababababababababababababababababababababababab"
#define GPU_RES "nvidia.com/gpu"
#define GPU_LABEL "nvidia.com/gpu.product"

static char ta[40], tb[40], tc_[40];    /* tenants: main, borrower, without a namespace */
static char nsa[64], nsb[64], nsc[64];  /* their namespaces (aidc-{tenant}) */
static char gpu_value[48];              /* the GPU product label of this run's Nodes */
static char node[4][64];                /* ready, ready, unschedulable, NotReady */
static char *ann, *bob, *cat;           /* members of ta, tb, tc_ */
static char env_token[1200];
static const char *fast[8];

/* ---- fixture ------------------------------------------------------------------------- */

static void public_image(const char *repo, const char *tag)
{
    const char *p[2] = {repo, tag};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "INSERT INTO images (visibility, repository, tag, digest, size_bytes,"
                              " source) VALUES ('public', $1, $2, 'sha256:' || repeat('ab', 32), 1,"
                              " 'sync') RETURNING 1",
                              2, p);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
}

static const char *options_json(void)
{
    return fmt("{\"ca_file\":\"%s\",\"namespace\":\"aidc-{tenant}\",\"gpu_types\":{\"a100\":"
               "\"%s\"},\"priority_classes\":{\"high\":\"aidc-high\"},\"queue_name\":"
               "\"{tenant}-q\",\"scheduler_name\":\"volcano\",\"page_size\":2}",
               kube_ca, gpu_value);
}

static void register_cluster(const char *name, const char *credentials_ref)
{
    jobs_admin_ok("POST", "/api/v1/clusters",
                  fmt("{\"name\":\"%s\",\"kind\":\"kubernetes\",\"endpoint\":\"%s\","
                      "\"credentials_ref\":\"%s\",\"options\":%s}",
                      name, kube_url, credentials_ref, options_json()),
                  201);
}

/* The cluster as aidc shows it (new reference). */
static json_t *cluster_get(const char *name)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/clusters/%s", name), harness_srv.admin_token, NULL,
                          &r),
                     200);
    json_t *j = json_incref(r.json);
    http_res_free(&r);
    return j;
}

static long long total_of(const json_t *cluster, const char *res)
{
    return json_integer_value(
        json_object_get(json_object_get(json_object_get(cluster, "inventory"), res), "total"));
}

static void make_nodes(void)
{
    char labels[256]; /* not an fmt() buffer: the calls below use them all */
    snprintf(labels, sizeof labels, "{\"%s\":\"%s\",\"aidc.io/test-run\":\"%s\"}", GPU_LABEL,
             gpu_value, ta);
    for (int i = 0; i < 4; i++)
        kube_node_delete(node[i]); /* a run before with this pid that did not clean up */
    kube_node_create(node[0], labels, false, GPU_RES, "4", "32", "128Gi", true);
    kube_node_create(node[1], labels, false, GPU_RES, "4", "32", "128Gi", true);
    /* cordoned, and not ready: their GPUs, cores and memory must not count */
    kube_node_create(node[2], labels, true, GPU_RES, "4", "1000", "4000Gi", true);
    kube_node_create(node[3], labels, false, GPU_RES, "4", "1000", "4000Gi", false);
}

/*
 * What this run made on the API server goes at exit, also when the set-up failed
 * half-way (Check runs no tear-down then).
 */
static pid_t cleaner;

static void kube_cleanup(void)
{
    if (getpid() != cleaner)
        return;
    for (int i = 0; i < 4; i++)
        kube_node_delete(node[i]);
    kube_namespace_delete(nsa);
    kube_namespace_delete(nsb);
    kube_namespace_delete(nsc);
}

static void setup(void)
{
    /* unique per run: the API server outlives runs (and a pid comes back) */
    long tag = (long)(time(NULL) % 100000);
    int pid = (int)getpid();
    snprintf(ta, sizeof ta, "k%dt%lda", pid, tag);
    snprintf(tb, sizeof tb, "k%dt%ldb", pid, tag);
    snprintf(tc_, sizeof tc_, "k%dt%ldc", pid, tag);
    snprintf(nsa, sizeof nsa, "aidc-%s", ta);
    snprintf(nsb, sizeof nsb, "aidc-%s", tb);
    snprintf(nsc, sizeof nsc, "aidc-%s", tc_);
    snprintf(gpu_value, sizeof gpu_value, "AIDC-TEST-%d-%ld", pid, tag);
    for (int i = 0; i < 4; i++)
        snprintf(node[i], sizeof node[i], "aidc-test-%d-%ld-n%d", pid, tag, i + 1);
    snprintf(env_token, sizeof env_token, "AIDC_TEST_K8S_TOKEN_FOR_AIDCD=%s", kube_token);
    size_t n = 0;
    fast[n++] = "AIDC_SYNC_INTERVAL_MS=200";
    fast[n++] = "AIDC_ADMISSION_INTERVAL_MS=200";
    fast[n++] = "AIDC_PREEMPT_GRACE_SECONDS=1";
    /* the inventory only when asked (POST .../sync): the stop/start test needs the
     * cluster to look healthy for a while after the API server stopped */
    fast[n++] = "AIDC_INVENTORY_INTERVAL_SECONDS=600";
    fast[n++] = env_token;
    fast[n++] = "AIDC_TEST_K8S_BAD_TOKEN=not-the-token-of-anybody";
    fast[n] = NULL;

    harness_setup("kubernetes", fast);
    curl_global_init(CURL_GLOBAL_ALL);
    cleaner = getpid();
    atexit(kube_cleanup);
    make_nodes();
    kube_namespace_create(nsa);
    kube_namespace_create(nsb); /* not nsc: its tenant's jobs find no namespace */
    public_image(IMAGE_REPO, IMAGE_TAG);
    register_cluster(CL, "env:AIDC_TEST_K8S_TOKEN_FOR_AIDCD");
    /* the syncer reads the Nodes */
    double deadline = jobs_now() + 30;
    for (;;) {
        json_t *c = cluster_get(CL);
        long long a100 = total_of(c, "gpu:a100");
        bool healthy = json_is_true(json_object_get(c, "healthy"));
        char *shown = json_dumps(c, JSON_COMPACT);
        json_decref(c);
        bool done = a100 == 8 && healthy;
        if (!done && jobs_now() > deadline) {
            fprintf(stderr, "no inventory from the API server after 30 s: %s\n", shown);
            free(shown);
            ck_abort_msg("no inventory from the API server after 30 s");
        }
        free(shown);
        if (done)
            break;
        jobs_nap_ms(100);
    }
    ann = jobs_tenant_member(ta, "lab", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":8}}", "ann");
    bob = jobs_tenant_member(tb, "cells", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":8}}", "bob");
    cat = jobs_tenant_member(tc_, "void", "{\"gpu:a100\":{\"guaranteed\":1,\"limit\":1}}", "cat");
}

static void teardown(void)
{
    /* the crash test may have failed while aidcd was down */
    if (harness_srv.pid <= 0 && jobs_restart_server(fast) != 0)
        fprintf(stderr, "teardown: aidcd did not start again\n");
    /* the stop/start test may have failed while the API server was down */
    if (kube_dir && !kube_ready() && kube_script("k8s-up.sh") != 0)
        fprintf(stderr, "teardown: the API server did not start again\n");
    free(ann);
    free(bob);
    free(cat);
    harness_teardown();
}

/* ---- helpers ------------------------------------------------------------------------- */

static const char *sv(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/*
 * A job body for project on cluster k8s with the public image, limited to minutes
 * (an fmt() buffer).
 */
static const char *job_body(const char *project, const char *name, int gpus, int minutes)
{
    return fmt("{\"project\":\"%s\",\"name\":\"%s\",\"cluster\":\"" CL "\",\"image\":\""
               IMAGE_REPO ":" IMAGE_TAG "\",\"command\":[\"sleep\",\"600\"],\"gpus\":%d,"
               "\"gpu_type\":\"a100\",\"cpus\":1,\"memory_gib\":1,\"time_limit_minutes\":%d}",
               project, name, gpus, minutes);
}

/* Wait until the job was handed to the cluster; its backend_job_id (malloc'd). */
static char *wait_delivered(const char *token, const char *tenant, const char *id)
{
    json_t *j = jobs_wait(token, tenant, id, "pending,running,succeeded,failed,cancelled", WAIT_S);
    ck_assert_msg(strcmp(sv(j, "state"), "pending") == 0, "job %s is %s (%s), not pending", id,
                  sv(j, "state"), sv(j, "reason") ? sv(j, "reason") : "");
    ck_assert_ptr_nonnull(sv(j, "backend_job_id"));
    char *bid = strdup(sv(j, "backend_job_id"));
    json_decref(j);
    ck_assert_ptr_nonnull(bid);
    return bid;
}

/* The backend_job_id aidc must give a run: "<namespace>/aidc-<run key>". */
static const char *bid_want(const char *ns, const char *run_key)
{
    return fmt("%s/aidc-%s", ns, run_key);
}

/* Seconds of the job's RFC 3339 field key, whole (-1 when it has none). */
static double ts_of(const json_t *job, const char *key)
{
    return jobs_ts(json_object_get(job, key));
}

/* The events action of job id (want of them at least, waiting up to WAIT_S); new reference. */
static json_t *audit_events(const char *action, const char *id, size_t want)
{
    const char *p[2] = {action, id};
    double deadline = jobs_now() + WAIT_S;
    for (;;) {
        PGresult *r = harness_sql(
            harness_srv.owner_url,
            "SELECT coalesce(json_agg(json_build_object('outcome', outcome, 'status', status,"
            " 'details', details) ORDER BY id), '[]') FROM audit_events"
            " WHERE action = $1 AND resource_id = $2",
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
        jobs_nap_ms(50);
    }
}

/* Whether s occurs anywhere in audit_events. */
static bool audit_has(const char *s)
{
    PGresult *r =
        harness_sql(harness_srv.owner_url,
                    "SELECT coalesce(string_agg(t::text, ' '), '') FROM audit_events t", 0, NULL);
    ck_assert_ptr_nonnull(r);
    bool found = strstr(PQgetvalue(r, 0, 0), s) != NULL;
    PQclear(r);
    return found;
}

static bool history_has(const char *token, const char *tenant, const char *id, const char *what)
{
    char *h = jobs_history(token, tenant, id);
    bool yes = strstr(h, what) != NULL;
    if (!yes)
        fprintf(stderr, "history of %s: %s (want %s)\n", id, h, what);
    free(h);
    return yes;
}

/* How many Jobs carry label aidc.io/job=id, in any namespace. */
static size_t jobs_labelled(const char *id)
{
    json_t *items = kube_jobs_labelled(NULL, fmt("aidc.io/job=%s", id));
    size_t n = json_array_size(items);
    json_decref(items);
    return n;
}

/* Complete the Job of a delivered job and wait until aidc says succeeded. */
static void complete(const char *token, const char *tenant, const char *id, const char *bid)
{
    time_t now = time(NULL);
    kube_job_complete(bid, now - 2, now - 1);
    json_t *j = jobs_wait(token, tenant, id, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(sv(j, "state"), "succeeded");
    json_decref(j);
}

/* env entry name of a container, or NULL */
static const char *env_value(const json_t *container, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(container, "env"), i, e) {
        if (sv(e, "name") && strcmp(sv(e, "name"), name) == 0)
            return sv(e, "value") ? sv(e, "value") : "";
    }
    return NULL;
}

/* ---- between tests ---------------------------------------------------------------------- */

/* Whether a Job has ended (a Complete or Failed condition "True"). */
static bool job_ended(const json_t *kj)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(kj, "status"), "conditions"), i, c) {
        if (sv(c, "status") && strcmp(sv(c, "status"), "True") == 0 && sv(c, "type") &&
            (strcmp(sv(c, "type"), "Complete") == 0 || strcmp(sv(c, "type"), "Failed") == 0))
            return true;
    }
    return false;
}

/*
 * After each test (Check's checked tear-down, which runs also when the test failed):
 * the tests share one aidcd and the cluster's 8 GPUs, so what a failed test left
 * active must end before the next one starts, or one failure becomes many. Jobs
 * with a live Job complete; queued and admitted jobs are cancelled; a job whose Job
 * is gone (aidc may learn of that only when it lists all Jobs: at its start) ends
 * after aidcd starts again. Also brings back aidcd or the API server if a test left
 * them down. Says on stderr what it had to clean up.
 */
static void settle(void)
{
    if (harness_srv.pid <= 0 && jobs_restart_server(fast) != 0)
        ck_abort_msg("settle: aidcd did not start again");
    if (kube_dir && !kube_ready() && kube_script("k8s-up.sh") != 0)
        ck_abort_msg("settle: the API server did not start again");
    double start = jobs_now(), gone_since = 0;
    for (int round = 0;; round++) {
        PGresult *r = harness_sql(harness_srv.owner_url,
                                  "SELECT t.slug, j.id, j.state, j.backend_job_id FROM jobs j"
                                  " JOIN tenants t ON t.id = j.tenant_id"
                                  " WHERE j.state IN ('queued', 'admitted', 'pending', 'running')"
                                  " ORDER BY j.submitted_at",
                                  0, NULL);
        ck_assert_ptr_nonnull(r);
        int n = PQntuples(r), gone = 0;
        for (int i = 0; i < n; i++) {
            const char *tenant = PQgetvalue(r, i, 0), *id = PQgetvalue(r, i, 1);
            const char *state = PQgetvalue(r, i, 2);
            const char *bid = PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3);
            if (round == 0)
                fprintf(stderr, "settle: job %s of %s left %s by the test\n", id, tenant, state);
            json_t *kj = bid ? kube_job_get(bid) : NULL;
            if (kj && !job_ended(kj)) {
                time_t now = time(NULL);
                kube_job_complete(bid, now - 2, now - 1);
            } else if (strcmp(state, "queued") == 0 || strcmp(state, "admitted") == 0) {
                req("POST", fmt("/api/v1/tenants/%s/jobs/%s/cancel", tenant, id),
                    harness_srv.admin_token, NULL);
            } else if (!kj && bid) {
                gone++;
            }
            json_decref(kj);
        }
        PQclear(r);
        if (n == 0)
            return;
        double now = jobs_now();
        if (!gone)
            gone_since = 0;
        else if (!gone_since)
            gone_since = now;
        else if (now - gone_since > 3) {
            fprintf(stderr, "settle: %d jobs whose Job is gone: starting aidcd again (its first "
                            "look lists every Job)\n", gone);
            ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
            ck_assert_int_eq(jobs_restart_server(fast), 0);
            gone_since = 0;
        }
        if (now - start > 90)
            fprintf(stderr, "settle: %d jobs still active after 90 s\n", n);
        ck_assert_msg(now - start <= 90, "settle: %d jobs still active after 90 s", n);
        jobs_nap_ms(300);
    }
}

/* ---- the inventory --------------------------------------------------------------------- */

/* A quantity of the API in cores (gib false) or GiB, rounded down; -1 when not one. */
static long long quantity(const char *s, bool gib)
{
    if (!s)
        return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno)
        return -1;
    static const struct {
        const char *suffix;
        double factor;
    } units[] = {{"", 1},           {"m", 1e-3},           {"k", 1e3},
                 {"M", 1e6},        {"G", 1e9},            {"T", 1e12},
                 {"Ki", 1024.0},    {"Mi", 1048576.0},     {"Gi", 1073741824.0},
                 {"Ti", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0)
            return (long long)floor(v * units[i].factor / (gib ? 1073741824.0 : 1.0) + 1e-9);
    return -1;
}

/* Cores and GiB of the usable Nodes (Ready, not cordoned) that are not this run's. */
static bool others(long long *cpu, long long *mem)
{
    json_t *items = kube_nodes();
    size_t i, k;
    json_t *n, *c;
    bool ok = true;
    *cpu = *mem = 0;
    json_array_foreach(items, i, n) {
        const char *name = sv(json_object_get(n, "metadata"), "name");
        bool mine = false;
        for (int m = 0; m < 4; m++)
            mine |= name && strcmp(name, node[m]) == 0;
        if (mine || json_is_true(json_object_get(json_object_get(n, "spec"), "unschedulable")))
            continue;
        bool ready = false;
        json_array_foreach(json_object_get(json_object_get(n, "status"), "conditions"), k, c) {
            if (sv(c, "type") && strcmp(sv(c, "type"), "Ready") == 0)
                ready = sv(c, "status") && strcmp(sv(c, "status"), "True") == 0;
        }
        if (!ready)
            continue;
        const json_t *a = json_object_get(json_object_get(n, "status"), "allocatable");
        long long x = quantity(sv(a, "cpu"), false), y = quantity(sv(a, "memory"), true);
        ok &= x >= 0 && y >= 0;
        *cpu += x > 0 ? x : 0;
        *mem += y > 0 ? y : 0;
    }
    json_decref(items);
    return ok;
}

START_TEST(inventory_counts_ready_schedulable_nodes)
{
    /* GPUs: this run's label only, so exact: 2 usable nodes x 4 */
    json_t *c = cluster_get(CL);
    ck_assert_int_eq(total_of(c, "gpu:a100"), 8);
    ck_assert(json_is_true(json_object_get(c, "healthy")));
    json_t *o = json_object_get(c, "options");
    ck_assert_str_eq(sv(o, "gpu_resource"), GPU_RES); /* defaults filled in */
    ck_assert_str_eq(sv(o, "gpu_type_label"), GPU_LABEL);
    json_decref(c);
    /* cores and memory: this run's two usable nodes on top of whatever else is usable
     * (other runs may add Nodes meanwhile: look again until both views agree) */
    double deadline = jobs_now() + 30;
    for (;;) {
        long long ocpu = 0, omem = 0;
        ck_assert_msg(others(&ocpu, &omem), "a Node's allocatable is no quantity this test reads");
        ck_assert_int_eq(req("POST", "/api/v1/clusters/" CL "/sync", harness_srv.admin_token, NULL),
                         202);
        jobs_nap_ms(300);
        c = cluster_get(CL);
        long long cpu = total_of(c, "cpu"), mem = total_of(c, "memory_gib"),
                  a100 = total_of(c, "gpu:a100");
        json_decref(c);
        if (cpu - ocpu == 64 && mem - omem == 256 && a100 == 8)
            break;
        ck_assert_msg(jobs_now() < deadline,
                      "cpu %lld (others %lld, want +64), memory_gib %lld (others %lld, want "
                      "+256), gpu:a100 %lld (want 8)",
                      cpu, ocpu, mem, omem, a100);
    }
}
END_TEST

/* ---- the Job --------------------------------------------------------------------------- */

START_TEST(the_job_kubernetes_stores_is_the_job_submitted)
{
    char *id = jobs_submit(
        ann, ta,
        fmt("{\"project\":\"lab\",\"name\":\"shape\",\"cluster\":\"" CL "\",\"image\":\""
            IMAGE_REPO ":" IMAGE_TAG "\",\"command\":[\"python\",\"train.py\",\"--epochs\",\"3\"],"
            "\"env\":{\"FOO\":\"bar\",\"WANDB_API_KEY\":\"k8s-test-secret-value\"},\"gpus\":2,"
            "\"gpu_type\":\"a100\",\"cpus\":4,\"memory_gib\":16,\"time_limit_minutes\":30,"
            "\"priority\":\"high\"}"));
    char *bid = wait_delivered(ann, ta, id);
    ck_assert_str_eq(bid, bid_want(nsa, id));
    json_t *kj = kube_job_get(bid);
    ck_assert_msg(kj != NULL, "the API server has no Job %s", bid);

    const json_t *md = json_object_get(kj, "metadata");
    ck_assert_str_eq(sv(md, "namespace"), nsa);
    ck_assert_str_eq(sv(md, "name"), fmt("aidc-%s", id));
    const json_t *spec = json_object_get(kj, "spec");
    const json_t *tmd = json_object_get(json_object_get(spec, "template"), "metadata");
    const json_t *lsets[2] = {json_object_get(md, "labels"), json_object_get(tmd, "labels")};
    for (int i = 0; i < 2; i++) { /* on the Job, and on its pods */
        const json_t *l = lsets[i];
        ck_assert_ptr_nonnull(l);
        ck_assert_str_eq(sv(l, "aidc.io/run"), id);
        ck_assert_str_eq(sv(l, "aidc.io/job"), id);
        ck_assert_str_eq(sv(l, "aidc.io/tenant"), ta);
        ck_assert_str_eq(sv(l, "aidc.io/project"), "lab");
        ck_assert_str_eq(sv(l, "app.kubernetes.io/managed-by"), "aidc");
        ck_assert_str_eq(sv(l, "kueue.x-k8s.io/queue-name"), fmt("%s-q", ta));
    }
    ck_assert_int_eq(json_integer_value(json_object_get(spec, "backoffLimit")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(spec, "activeDeadlineSeconds")), 30 * 60);

    const json_t *pod = json_object_get(json_object_get(spec, "template"), "spec");
    ck_assert_str_eq(sv(pod, "restartPolicy"), "Never");
    ck_assert_str_eq(sv(pod, "schedulerName"), "volcano");
    ck_assert_str_eq(sv(pod, "priorityClassName"), "aidc-high");
    ck_assert_str_eq(sv(json_object_get(pod, "nodeSelector"), GPU_LABEL), gpu_value);
    ck_assert_int_eq(json_object_size(json_object_get(pod, "nodeSelector")), 1);
    /* the pods stop with aidc's grace period (AIDC_PREEMPT_GRACE_SECONDS) */
    ck_assert_int_eq(json_integer_value(json_object_get(pod, "terminationGracePeriodSeconds")), 1);

    const json_t *containers = json_object_get(pod, "containers");
    ck_assert_int_eq(json_array_size(containers), 1);
    const json_t *ct = json_array_get(containers, 0);
    ck_assert_str_eq(sv(ct, "image"), IMAGE_REPO "@" DIGEST); /* pinned to its digest */
    json_t *want_cmd = json_pack("[s,s,s,s]", "python", "train.py", "--epochs", "3");
    ck_assert_msg(json_equal(json_object_get(ct, "command"), want_cmd), "command differs");
    json_decref(want_cmd);
    ck_assert_str_eq(env_value(ct, "FOO"), "bar");
    ck_assert_str_eq(env_value(ct, "WANDB_API_KEY"), "k8s-test-secret-value");
    ck_assert_str_eq(env_value(ct, "AIDC_JOB_ID"), id);
    const json_t *res = json_object_get(ct, "resources");
    const char *kinds[2] = {"limits", "requests"};
    for (int i = 0; i < 2; i++) {
        const json_t *r = json_object_get(res, kinds[i]);
        ck_assert_msg(r != NULL, "no resources.%s", kinds[i]);
        ck_assert_str_eq(sv(r, GPU_RES), "2");
        ck_assert_str_eq(sv(r, "cpu"), "4");
        ck_assert_str_eq(sv(r, "memory"), "16Gi");
    }
    json_decref(kj);

    /* the submit is audited as sent: the job's secret values and the token nowhere */
    json_t *ev = audit_events("backend.submit", id, 1);
    const json_t *rq = json_object_get(json_object_get(json_array_get(ev, 0), "details"), "request");
    ck_assert_str_eq(sv(rq, "method"), "POST");
    ck_assert_str_eq(sv(rq, "url"), fmt("%s/apis/batch/v1/namespaces/%s/jobs", kube_url, nsa));
    json_decref(ev);
    ck_assert(!audit_has("k8s-test-secret-value"));
    ck_assert(!audit_has(kube_token));

    complete(ann, ta, id, bid);
    free(bid);
    free(id);
}
END_TEST

START_TEST(a_job_runs_and_completes_with_kubernetes_times)
{
    char *id = jobs_submit(ann, ta, job_body("lab", "runs", 1, 10));
    char *bid = wait_delivered(ann, ta, id);
    time_t start = time(NULL) - 20;
    kube_job_running(bid, start);
    json_t *j = jobs_wait(ann, ta, id, "running,succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(sv(j, "state"), "running");
    ck_assert_msg(ts_of(j, "started_at") == (double)start, "started_at %s, the Job's startTime %s",
                  sv(j, "started_at"), kube_time(start));
    json_decref(j);

    time_t done = time(NULL) - 1;
    kube_job_complete(bid, start, done);
    j = jobs_wait(ann, ta, id, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(sv(j, "state"), "succeeded");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "exit_code")), 0);
    ck_assert_msg(ts_of(j, "started_at") == (double)start, "started_at %s, want %s",
                  sv(j, "started_at"), kube_time(start));
    ck_assert_msg(ts_of(j, "finished_at") == (double)done,
                  "finished_at %s, the Job's completionTime %s", sv(j, "finished_at"),
                  kube_time(done));
    json_decref(j);
    ck_assert(history_has(ann, ta, id, "pending,running,succeeded"));
    free(bid);
    free(id);
}
END_TEST

START_TEST(failed_jobs_say_why)
{
    char *a = jobs_submit(ann, ta, job_body("lab", "backoff", 1, 10));
    char *b = jobs_submit(ann, ta, job_body("lab", "deadline", 1, 5));
    char *ba = wait_delivered(ann, ta, a), *bb = wait_delivered(ann, ta, b);
    json_t *kb = kube_job_get(bb);
    ck_assert_ptr_nonnull(kb);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(kb, "spec"), "activeDeadlineSeconds")),
        300);
    json_decref(kb);

    time_t start = time(NULL) - 30;
    kube_job_running(ba, start);
    json_decref(jobs_wait(ann, ta, a, "running", WAIT_S));
    kube_job_failed(ba, start, start + 10, "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit");
    kube_job_failed(bb, start, start + 20, "DeadlineExceeded",
                    "Job was active longer than specified deadline");

    json_t *j = jobs_wait(ann, ta, a, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(sv(j, "state"), "failed");
    ck_assert_msg(sv(j, "reason") && strstr(sv(j, "reason"), "BackoffLimitExceeded"), "reason: %s",
                  sv(j, "reason"));
    ck_assert_msg(ts_of(j, "finished_at") == (double)(start + 10), "finished_at %s",
                  sv(j, "finished_at"));
    json_decref(j);

    j = jobs_wait(ann, ta, b, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(sv(j, "state"), "failed");
    ck_assert_msg(sv(j, "reason") && strstr(sv(j, "reason"), "time limit"), "reason: %s",
                  sv(j, "reason"));
    ck_assert_msg(ts_of(j, "started_at") == (double)start, "started_at %s", sv(j, "started_at"));
    ck_assert_msg(ts_of(j, "finished_at") == (double)(start + 20), "finished_at %s",
                  sv(j, "finished_at"));
    json_decref(j);
    free(ba);
    free(bb);
    free(a);
    free(b);
}
END_TEST

START_TEST(cancel_deletes_the_job_at_once)
{
    char *id = jobs_submit(ann, ta, job_body("lab", "cancelled", 1, 10));
    char *bid = wait_delivered(ann, ta, id);
    kube_job_running(bid, time(NULL) - 5);
    json_decref(jobs_wait(ann, ta, id, "running", WAIT_S));
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/%s/jobs/%s/cancel", ta, id), ann, NULL), 202);

    /* once the DELETE is recorded, the Job is gone: no finalizer keeps it (Background) */
    json_t *ev = audit_events("backend.cancel", id, 1);
    json_t *kj = kube_job_get(bid);
    ck_assert_msg(kj == NULL, "the Job %s is still there after its DELETE (deletionTimestamp %s)",
                  bid, kj ? sv(json_object_get(kj, "metadata"), "deletionTimestamp") : "");
    const json_t *e = json_array_get(ev, 0);
    ck_assert_str_eq(sv(e, "outcome"), "success");
    const json_t *rq = json_object_get(json_object_get(e, "details"), "request");
    ck_assert_str_eq(sv(rq, "method"), "DELETE");
    ck_assert_str_eq(sv(rq, "url"), fmt("%s/apis/batch/v1/namespaces/%s/jobs/aidc-%s", kube_url,
                                        nsa, id));
    ck_assert_str_eq(sv(json_object_get(rq, "body"), "propagationPolicy"), "Background");
    json_decref(ev);
    ck_assert(!audit_has(kube_token));

    json_t *j = jobs_wait(ann, ta, id, "cancelled,failed,succeeded", WAIT_S);
    ck_assert_str_eq(sv(j, "state"), "cancelled");
    json_decref(j);
    ck_assert_int_eq(jobs_labelled(id), 0);
    free(bid);
    free(id);
}
END_TEST

/* options.page_size 2: three live Jobs take two pages of the list, every one is followed */
START_TEST(paging_follows_every_page)
{
    char *id[3], *bid[3];
    for (int i = 0; i < 3; i++)
        id[i] = jobs_submit(ann, ta, job_body("lab", fmt("page-%d", i), 1, 10));
    for (int i = 0; i < 3; i++)
        bid[i] = wait_delivered(ann, ta, id[i]);
    json_t *mine = kube_jobs_labelled(nsa, "app.kubernetes.io/managed-by=aidc");
    ck_assert_int_ge(json_array_size(mine), 3);
    json_decref(mine);
    time_t start = time(NULL) - 10;
    for (int i = 0; i < 3; i++)
        kube_job_running(bid[i], start);
    for (int i = 0; i < 3; i++)
        json_decref(jobs_wait(ann, ta, id[i], "running", WAIT_S));
    for (int i = 0; i < 3; i++)
        kube_job_complete(bid[i], start, start + 5 + i);
    for (int i = 0; i < 3; i++) {
        json_t *j = jobs_wait(ann, ta, id[i], "succeeded,failed,cancelled", WAIT_S);
        ck_assert_str_eq(sv(j, "state"), "succeeded");
        ck_assert(ts_of(j, "finished_at") == (double)(start + 5 + i));
        json_decref(j);
        free(bid[i]);
        free(id[i]);
    }
}
END_TEST

START_TEST(a_missing_namespace_fails_the_job_at_once)
{
    char *id = jobs_submit(cat, tc_, job_body("void", "nowhere", 1, 10));
    json_t *j = jobs_wait(cat, tc_, id, "pending,running,succeeded,failed,cancelled", 30);
    ck_assert_str_eq(sv(j, "state"), "failed");
    const char *reason = sv(j, "reason");
    ck_assert_msg(reason && strstr(reason, nsc), "reason: %s (want it to name namespace %s)",
                  reason, nsc);
    json_decref(j);
    /* refused once, not tried again and again */
    ck_assert(history_has(cat, tc_, id, "queued,admitted,failed"));
    json_t *ev = audit_events("backend.submit", id, 1);
    ck_assert_int_eq(json_array_size(ev), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(ev, 0), "status")), 404);
    json_decref(ev);
    ck_assert_int_eq(jobs_labelled(id), 0);
    free(id);
}
END_TEST

START_TEST(a_wrong_token_makes_the_cluster_unhealthy)
{
    register_cluster("k8s-bad", "env:AIDC_TEST_K8S_BAD_TOKEN");
    ck_assert_int_eq(req("POST", "/api/v1/clusters/k8s-bad/sync", harness_srv.admin_token, NULL),
                     202);
    double deadline = jobs_now() + 30;
    for (;;) {
        json_t *c = cluster_get("k8s-bad");
        const char *err = sv(c, "last_error");
        if (err) {
            ck_assert(json_is_false(json_object_get(c, "healthy")));
            ck_assert_msg(strstr(err, "401") != NULL, "last_error: %s", err);
            ck_assert_int_eq(json_object_size(json_object_get(c, "inventory")), 0);
            json_decref(c);
            break;
        }
        json_decref(c);
        ck_assert_msg(jobs_now() < deadline, "cluster k8s-bad has no last_error after 30 s");
        jobs_nap_ms(100);
    }
    /* the good one is unaffected */
    json_t *c = cluster_get(CL);
    ck_assert(json_is_true(json_object_get(c, "healthy")));
    json_decref(c);
}
END_TEST

/*
 * bob's tenant (guaranteed 2) borrows 6 of the 8 GPUs; ann's (guaranteed 4) asks for 4:
 * aidc deletes bob's Job, requeues his job, runs ann's, then bob's again as a new Job.
 */
START_TEST(reclaim_deletes_the_borrowers_job_which_runs_again)
{
    char *b = jobs_submit(bob, tb, job_body("cells", "borrower", 6, 10));
    char *bbid = wait_delivered(bob, tb, b);
    ck_assert_str_eq(bbid, bid_want(nsb, b));
    kube_job_running(bbid, time(NULL) - 5);
    json_t *jb = jobs_wait(bob, tb, b, "running", WAIT_S);
    ck_assert(json_is_true(json_object_get(jb, "preemptible")));
    json_decref(jb);

    char *a = jobs_submit(ann, ta, job_body("lab", "owner", 4, 10));
    /* the borrower's Job goes (the preempt is a DELETE, Background) */
    json_t *ev = audit_events("backend.preempt", b, 1);
    const json_t *rq = json_object_get(json_object_get(json_array_get(ev, 0), "details"), "request");
    ck_assert_str_eq(sv(rq, "method"), "DELETE");
    ck_assert_str_eq(sv(json_object_get(rq, "body"), "propagationPolicy"), "Background");
    json_decref(ev);
    json_t *kj = kube_job_get(bbid);
    ck_assert_msg(kj == NULL, "the borrower's Job %s is still there", bbid);

    jb = jobs_wait(bob, tb, b, "queued,succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(sv(jb, "state"), "queued");
    ck_assert_int_eq(json_integer_value(json_object_get(jb, "preemption_count")), 1);
    json_decref(jb);
    ck_assert(history_has(bob, tb, b, "running,preempted,queued"));

    /* the owner's job gets the GPUs, and ends */
    char *abid = wait_delivered(ann, ta, a);
    complete(ann, ta, a, abid);

    /* the borrower runs again: run 1, a Job of its own */
    char *rbid = wait_delivered(bob, tb, b);
    ck_assert_str_eq(rbid, bid_want(nsb, fmt("%s-r1", b)));
    json_t *rj = kube_job_get(rbid);
    ck_assert_ptr_nonnull(rj);
    const json_t *l = json_object_get(json_object_get(rj, "metadata"), "labels");
    ck_assert_str_eq(sv(l, "aidc.io/run"), fmt("%s-r1", b));
    ck_assert_str_eq(sv(l, "aidc.io/job"), b);
    json_decref(rj);
    ck_assert_int_eq(jobs_labelled(b), 1); /* the first run's Job is gone */
    complete(bob, tb, b, rbid);
    jb = jobs_get(bob, tb, b);
    ck_assert_int_eq(json_integer_value(json_object_get(jb, "preemption_count")), 1);
    json_decref(jb);
    free(rbid);
    free(abid);
    free(bbid);
    free(a);
    free(b);
}
END_TEST

/*
 * The API server stops (k8s-down.sh) and starts again (k8s-up.sh, same state): a job
 * submitted meanwhile waits for it (backend-unavailable) and is delivered, once.
 */
START_TEST(a_job_waits_for_a_stopped_api_server)
{
    /* no job of this cluster is active (settle): the syncer has no Job to ask about,
     * so only the inventory - not read again for AIDC_INVENTORY_INTERVAL_SECONDS -
     * could mark the cluster down */
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*) FROM jobs WHERE state IN ('queued', 'admitted',"
                              " 'pending', 'running')",
                              0, NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "0");
    PQclear(r);
    /* the inventory was just read: the cluster looks healthy until it is read again
     * (AIDC_INVENTORY_INTERVAL_SECONDS), so the job is admitted and its delivery fails */
    json_t *c = cluster_get(CL);
    char *before = strdup(sv(c, "last_sync_at") ? sv(c, "last_sync_at") : "");
    json_decref(c);
    ck_assert_int_eq(req("POST", "/api/v1/clusters/" CL "/sync", harness_srv.admin_token, NULL),
                     202);
    double deadline = jobs_now() + 30;
    for (;;) {
        c = cluster_get(CL);
        bool synced = sv(c, "last_sync_at") && strcmp(sv(c, "last_sync_at"), before) != 0 &&
                      json_is_true(json_object_get(c, "healthy"));
        json_decref(c);
        if (synced)
            break;
        ck_assert_msg(jobs_now() < deadline, "no sync of cluster " CL " after 30 s");
        jobs_nap_ms(100);
    }
    free(before);

    ck_assert_int_eq(kube_script("k8s-down.sh"), 0);
    bool down = !kube_ready();
    char *id = jobs_submit(ann, ta, job_body("lab", "patient", 1, 10));
    /* what the job did while the server was down; asserted once it is up again (a
     * failure must not leave it down for the tests after this one) */
    char *seen = NULL;
    bool waited = false;
    deadline = jobs_now() + 30;
    while (!waited && jobs_now() < deadline) {
        json_t *j = jobs_get(ann, ta, id);
        waited = sv(j, "reason") && strcmp(sv(j, "reason"), "backend-unavailable") == 0 &&
                 strcmp(sv(j, "state"), "admitted") == 0;
        free(seen);
        seen = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!waited)
            jobs_nap_ms(100);
    }
    int up = kube_script("k8s-up.sh");
    ck_assert_int_eq(up, 0);
    ck_assert(kube_ready());
    ck_assert_msg(down, "the API server still answered after k8s-down.sh");
    ck_assert_msg(waited, "the job did not wait admitted with reason backend-unavailable: %s",
                  seen);
    free(seen);

    /* delivered with the next try (backoff 2, 4, 8, 16, 32 s) */
    json_t *j = jobs_wait(ann, ta, id, "pending,running,succeeded,failed,cancelled", 120);
    ck_assert_msg(strcmp(sv(j, "state"), "pending") == 0, "state %s (%s)", sv(j, "state"),
                  sv(j, "reason") ? sv(j, "reason") : "");
    char *bid = strdup(sv(j, "backend_job_id"));
    json_decref(j);
    ck_assert_str_eq(bid, bid_want(nsa, id));
    ck_assert_int_eq(jobs_labelled(id), 1);
    complete(ann, ta, id, bid);
    free(bid);
    free(id);
}
END_TEST

/* aidcd dies right after the API server accepted the Job: after a restart, one Job */
START_TEST(delivery_is_exactly_once_across_a_crash)
{
    if (kube_dir && !kube_ready()) /* the test before failed with the API server down */
        ck_assert_int_eq(kube_script("k8s-up.sh"), 0);
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    const char *faulty[10];
    size_t n = 0;
    for (; fast[n]; n++)
        faulty[n] = fast[n];
    faulty[n++] = "AIDC_FAULT=after_backend_submit";
    /* the delivery is tried again this soon after the crash */
    faulty[n++] = "AIDC_OUTBOX_LEASE_SECONDS=5";
    faulty[n] = NULL;
    ck_assert_int_eq(jobs_restart_server(faulty), 0);
    char *id = jobs_submit(ann, ta, job_body("lab", "once", 1, 10));
    int st = 0;
    double deadline = jobs_now() + WAIT_S;
    pid_t got;
    while ((got = waitpid(harness_srv.pid, &st, WNOHANG)) == 0) {
        ck_assert_msg(jobs_now() < deadline, "aidcd did not die after the submit");
        jobs_nap_ms(50);
    }
    ck_assert_int_eq(got, harness_srv.pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 99, "aidcd ended with status %d", st);
    harness_srv.pid = 0;
    /* the API server has it; aidc has not recorded it */
    ck_assert_int_eq(jobs_labelled(id), 1);
    ck_assert_int_eq(jobs_restart_server(fast), 0);

    char *bid = wait_delivered(ann, ta, id);
    ck_assert_str_eq(bid, bid_want(nsa, id));
    ck_assert_int_eq(jobs_labelled(id), 1);
    /* the delivery that counted adopted the Job the first one made */
    json_t *ev = audit_events("backend.submit", id, 1);
    ck_assert_int_eq(json_array_size(ev), 1);
    const json_t *resp =
        json_object_get(json_object_get(json_array_get(ev, 0), "details"), "response");
    ck_assert(json_is_true(json_object_get(resp, "adopted")));
    ck_assert_str_eq(sv(resp, "backend_job_id"), bid);
    json_decref(ev);
    complete(ann, ta, id, bid);
    ck_assert_int_eq(jobs_labelled(id), 1);
    free(bid);
    free(id);
}
END_TEST

int main(void)
{
    harness_require_pg();
    kubetest_env();
    Suite *s = suite_create("kubernetes");
    TCase *tc = tcase_create("kubernetes");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, NULL, settle);
    /* no fork, so Check enforces no timeout: every wait has its own deadline */
    tcase_set_timeout(tc, 540);
    tcase_add_test(tc, inventory_counts_ready_schedulable_nodes);
    tcase_add_test(tc, the_job_kubernetes_stores_is_the_job_submitted);
    tcase_add_test(tc, a_job_runs_and_completes_with_kubernetes_times);
    tcase_add_test(tc, failed_jobs_say_why);
    tcase_add_test(tc, cancel_deletes_the_job_at_once);
    tcase_add_test(tc, paging_follows_every_page);
    tcase_add_test(tc, a_missing_namespace_fails_the_job_at_once);
    tcase_add_test(tc, a_wrong_token_makes_the_cluster_unhealthy);
    tcase_add_test(tc, reclaim_deletes_the_borrowers_job_which_runs_again);
    if (kube_dir)
        tcase_add_test(tc, a_job_waits_for_a_stopped_api_server);
    else
        fprintf(stderr, "no AIDC_TEST_K8S_DIR: the test that stops the API server is skipped\n");
    tcase_add_test(tc, delivery_is_exactly_once_across_a_crash); /* kills aidcd: last */
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* the crash test waits for aidcd itself */
}
