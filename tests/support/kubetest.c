/* kubetest.c - helpers of the tests on a real Kubernetes API server (see kubetest.h). */
#include "kubetest.h"

#include "lib/imgref.h"

#include "client.h"
#include "harness.h"
#include "jobs.h"

#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *kube_url, *kube_token, *kube_ca, *kube_dir;

void kubetest_env(void)
{
    kube_url = getenv("AIDC_TEST_K8S_URL");
    kube_token = getenv("AIDC_TEST_K8S_TOKEN");
    kube_ca = getenv("AIDC_TEST_K8S_CA");
    kube_dir = getenv("AIDC_TEST_K8S_DIR");
    if (kube_dir && !kube_dir[0])
        kube_dir = NULL;
    if (!kube_url || !kube_url[0]) {
        fprintf(stderr, "no test Kubernetes API server (AIDC_TEST_K8S_URL): skipped\n");
        exit(77);
    }
    if (!kube_token || !kube_token[0] || !kube_ca || !kube_ca[0]) {
        fprintf(stderr, "AIDC_TEST_K8S_URL is set but AIDC_TEST_K8S_TOKEN or AIDC_TEST_K8S_CA "
                        "is not\n");
        exit(1);
    }
}

/* ---- calls -------------------------------------------------------------------------- */

struct kbuf {
    char *p;
    size_t n;
};

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    struct kbuf *b = arg;
    size_t n = size * nmemb;
    char *p = realloc(b->p, b->n + n + 1);
    if (!p)
        return 0;
    memcpy(p + b->n, data, n);
    b->n += n;
    p[b->n] = '\0';
    b->p = p;
    return n;
}

json_t *kube_call(const char *method, const char *path, const char *body,
                  const char *content_type, long *status)
{
    struct kbuf b = {NULL, 0};
    char line[1200];
    *status = 0;
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    struct curl_slist *hdr = NULL;
    snprintf(line, sizeof line, "Authorization: Bearer %s", kube_token);
    hdr = curl_slist_append(hdr, line);
    hdr = curl_slist_append(hdr, "Accept: application/json");
    snprintf(line, sizeof line, "Content-Type: %s",
             content_type ? content_type : "application/json");
    if (body)
        hdr = curl_slist_append(hdr, line);
    hdr = curl_slist_append(hdr, "Expect:");
    snprintf(line, sizeof line, "%s%s", kube_url, path);
    curl_easy_setopt(h, CURLOPT_URL, line);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_CAINFO, kube_ca);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    json_t *j = b.p ? json_loads(b.p, 0, NULL) : NULL;
    free(b.p);
    return j;
}

json_t *kube_ok(const char *method, const char *path, const char *body, const char *content_type,
                long want)
{
    long st = 0;
    json_t *j = kube_call(method, path, body, content_type, &st);
    if (st != want) {
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        char shown[600];
        snprintf(shown, sizeof shown, "%s", text ? text : "(no JSON)");
        free(text);
        json_decref(j);
        ck_abort_msg("API server: %s %s answered %ld (want %ld): %s", method, path, st, want,
                     shown);
    }
    return j;
}

/* method path must answer one of the statuses in ok (0-terminated). */
static void kube_expect(const char *method, const char *path, const char *body,
                        const char *content_type, const long *ok)
{
    long st = 0;
    json_t *j = kube_call(method, path, body, content_type, &st);
    bool fine = false;
    for (size_t i = 0; ok[i]; i++)
        fine |= st == ok[i];
    char *text = j && !fine ? json_dumps(j, JSON_COMPACT) : NULL;
    char shown[600];
    snprintf(shown, sizeof shown, "%s", text ? text : "");
    free(text);
    json_decref(j);
    ck_assert_msg(fine, "API server: %s %s answered %ld: %s", method, path, st, shown);
}

/* ---- namespaces and Nodes ------------------------------------------------------------ */

void kube_namespace_create(const char *ns)
{
    static const long ok[] = {201, 409, 0};
    kube_expect("POST", "/api/v1/namespaces",
                fmt("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}",
                    ns),
                NULL, ok);
}

/* method path: one of the statuses in ok (0-terminated)? Says so on stderr when not. */
static bool kube_quiet(const char *method, const char *path, const long *ok)
{
    long st = 0;
    json_decref(kube_call(method, path, NULL, NULL, &st));
    for (size_t i = 0; ok[i]; i++)
        if (st == ok[i])
            return true;
    fprintf(stderr, "API server: %s %s answered %ld\n", method, path, st);
    return false;
}

bool kube_namespace_delete(const char *ns)
{
    static const long ok[] = {200, 202, 404, 0};
    return kube_quiet("DELETE", fmt("/api/v1/namespaces/%s", ns), ok);
}

const char *kube_time(time_t t)
{
    struct tm tm;
    char buf[32];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return fmt("%s", buf);
}

void kube_node_create(const char *name, const char *labels_json, bool unschedulable,
                      const char *gpu_resource, const char *gpus, const char *cpu,
                      const char *memory, bool ready)
{
    json_t *labels = labels_json ? json_loads(labels_json, 0, NULL) : json_object();
    ck_assert_msg(labels != NULL, "labels are no JSON: %s", labels_json);
    json_t *node = json_pack("{s:s, s:s, s:{s:s, s:o}, s:{s:b}}", "apiVersion", "v1", "kind",
                             "Node", "metadata", "name", name, "labels", labels, "spec",
                             "unschedulable", unschedulable);
    char *text = json_dumps(node, JSON_COMPACT);
    json_decref(node);
    json_decref(kube_ok("POST", "/api/v1/nodes", text, NULL, 201));
    free(text);

    json_t *res = json_pack("{s:s, s:s, s:s}", "cpu", cpu, "memory", memory, "pods", "110");
    if (gpus)
        json_object_set_new(res, gpu_resource, json_string(gpus));
    const char *now = kube_time(time(NULL));
    json_t *status = json_pack(
        "{s:{s:O, s:O, s:[{s:s, s:s, s:s, s:s, s:s, s:s}]}}", "status", "capacity", res,
        "allocatable", res, "conditions", "type", "Ready", "status", ready ? "True" : "False",
        "reason", ready ? "KubeletReady" : "KubeletNotReady", "message",
        ready ? "kubelet is posting ready status" : "container runtime is down",
        "lastHeartbeatTime", now, "lastTransitionTime", now);
    json_decref(res);
    text = json_dumps(status, JSON_COMPACT);
    json_decref(status);
    json_decref(kube_ok("PATCH", fmt("/api/v1/nodes/%s/status", name), text,
                        "application/merge-patch+json", 200));
    free(text);
}

bool kube_node_delete(const char *name)
{
    static const long ok[] = {200, 202, 404, 0};
    return kube_quiet("DELETE", fmt("/api/v1/nodes/%s", name), ok);
}

json_t *kube_nodes(void)
{
    json_t *list = kube_ok("GET", "/api/v1/nodes", NULL, NULL, 200);
    json_t *items = json_incref(json_object_get(list, "items"));
    json_decref(list);
    ck_assert_msg(json_is_array(items), "the NodeList has no items");
    return items;
}

/* ---- Jobs ----------------------------------------------------------------------------- */

/* "/apis/batch/v1/namespaces/<ns>/jobs/<name>" of "ns/name" (an fmt() buffer). */
static const char *job_path(const char *backend_id)
{
    const char *slash = backend_id ? strchr(backend_id, '/') : NULL;
    ck_assert_msg(slash != NULL, "\"%s\" is no namespace/name", backend_id ? backend_id : "");
    return fmt("/apis/batch/v1/namespaces/%.*s/jobs/%s", (int)(slash - backend_id), backend_id,
               slash + 1);
}

json_t *kube_job_get(const char *backend_id)
{
    long st = 0;
    const char *path = job_path(backend_id);
    json_t *j = kube_call("GET", path, NULL, NULL, &st);
    if (st == 404) {
        json_decref(j);
        return NULL;
    }
    if (st != 200)
        json_decref(j);
    ck_assert_msg(st == 200, "API server: GET %s answered %ld", path, st);
    return j;
}

json_t *kube_jobs_labelled(const char *ns, const char *selector)
{
    json_t *list = kube_ok("GET",
                           ns ? fmt("/apis/batch/v1/namespaces/%s/jobs?labelSelector=%s", ns,
                                    qesc(selector))
                              : fmt("/apis/batch/v1/jobs?labelSelector=%s", qesc(selector)),
                           NULL, NULL, 200);
    json_t *items = json_incref(json_object_get(list, "items"));
    json_decref(list);
    ck_assert_msg(json_is_array(items), "the JobList has no items");
    return items;
}

void kube_job_status(const char *backend_id, const char *status_json)
{
    json_decref(kube_ok("PATCH", fmt("%s/status", job_path(backend_id)),
                        fmt("{\"status\":%s}", status_json), "application/merge-patch+json",
                        200));
}

void kube_job_running(const char *backend_id, time_t start)
{
    kube_job_status(backend_id, fmt("{\"startTime\":\"%s\",\"active\":1}", kube_time(start)));
}

void kube_job_complete(const char *backend_id, time_t start, time_t done)
{
    const char *s = kube_time(start), *d = kube_time(done);
    kube_job_status(backend_id,
                    fmt("{\"startTime\":\"%s\",\"active\":0,\"succeeded\":1,\"completionTime\":"
                        "\"%s\",\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\","
                        "\"lastProbeTime\":\"%s\",\"lastTransitionTime\":\"%s\"}]}",
                        s, d, d, d));
}

void kube_job_failed(const char *backend_id, time_t start, time_t when, const char *reason,
                     const char *message)
{
    const char *s = kube_time(start), *w = kube_time(when);
    kube_job_status(backend_id,
                    fmt("{\"startTime\":\"%s\",\"active\":0,\"failed\":1,\"conditions\":[{\"type\":"
                        "\"Failed\",\"status\":\"True\",\"reason\":\"%s\",\"message\":\"%s\","
                        "\"lastProbeTime\":\"%s\",\"lastTransitionTime\":\"%s\"}]}",
                        s, reason, message, w, w));
}

/* ---- the server itself ----------------------------------------------------------------- */

bool kube_ready(void)
{
    long st = 0;
    json_decref(kube_call("GET", "/readyz", NULL, NULL, &st));
    return st == 200;
}

int kube_script(const char *script)
{
    ck_assert_msg(kube_dir != NULL, "AIDC_TEST_K8S_DIR is not set");
    const char *colon = strrchr(kube_url, ':');
    const char *port = colon && colon[1] >= '0' && colon[1] <= '9' ? colon + 1 : "6443";
    char path[512];
    snprintf(path, sizeof path, "%s/deploy/%s", AIDC_SOURCE_DIR, script);
    pid_t pid = fork();
    if (pid == 0) {
        /* what it starts runs on (setsid): it keeps none of this program's descriptors */
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        setenv("K8S_DIR", kube_dir, 1);
        setenv("K8S_TOKEN", kube_token, 1);
        setenv("K8S_PORT", port, 1);
        /* the same etcd port as the server was started with (tests/run.sh's is not the default) */
        if (getenv("AIDC_TEST_K8S_ETCD_PORT"))
            setenv("K8S_ETCD_PORT", getenv("AIDC_TEST_K8S_ETCD_PORT"), 1);
        execl("/bin/bash", "bash", path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- the fixture of tests/http/test_kubernetes*.c ----------------------------------------- */

char kube_gpu_value[48];
char kube_node[4][64];
const char *const *kube_aidcd_env;

static char run_id[32];     /* "k<pid>t<tag>": this run's tenants are it and a letter */
static char env_token[1200];
static const char *aidcd_env[16];
static char made_ns[4][64]; /* the namespaces named by kubetest_tenant */
static size_t n_made_ns;
static size_t n_made_nodes; /* kube_node[0 .. n_made_nodes - 1] */
static pid_t cleaner;

/* What this run made on the API server goes at exit (in this process, not a child's). */
static void kube_cleanup(void)
{
    if (getpid() != cleaner)
        return;
    for (size_t i = 0; i < n_made_nodes; i++)
        kube_node_delete(kube_node[i]);
    for (size_t i = 0; i < n_made_ns; i++)
        kube_namespace_delete(made_ns[i]);
}

void kubetest_setup(const char *name, const char *const *extra_env)
{
    /* unique per run: the API server outlives runs (and a pid comes back) */
    long tag = (long)(time(NULL) % 100000);
    int pid = (int)getpid();
    snprintf(run_id, sizeof run_id, "k%dt%ld", pid, tag);
    snprintf(kube_gpu_value, sizeof kube_gpu_value, "AIDC-TEST-%d-%ld", pid, tag);
    for (int i = 0; i < 4; i++)
        snprintf(kube_node[i], sizeof kube_node[i], "aidc-test-%d-%ld-n%d", pid, tag, i + 1);
    snprintf(env_token, sizeof env_token, "AIDC_TEST_K8S_TOKEN_FOR_AIDCD=%s", kube_token);
    size_t n = 0;
    aidcd_env[n++] = "AIDC_SYNC_INTERVAL_MS=200";
    aidcd_env[n++] = "AIDC_ADMISSION_INTERVAL_MS=200";
    aidcd_env[n++] = env_token;
    for (size_t i = 0; extra_env && extra_env[i]; i++) {
        if (n + 1 >= sizeof aidcd_env / sizeof aidcd_env[0]) {
            fprintf(stderr, "kubetest_setup: too much extra environment\n");
            exit(1);
        }
        aidcd_env[n++] = extra_env[i];
    }
    aidcd_env[n] = NULL;
    kube_aidcd_env = aidcd_env;

    harness_setup(name, aidcd_env);
    curl_global_init(CURL_GLOBAL_ALL);
    cleaner = getpid();
    atexit(kube_cleanup);
    const char *p[3] = {KUBETEST_IMAGE_REPO, KUBETEST_IMAGE_TAG, KUBETEST_DIGEST};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "INSERT INTO images (visibility, repository, tag, digest, size_bytes,"
                              " source) VALUES ('public', $1, $2, $3, 1, 'sync') RETURNING 1",
                              3, p);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
}

void kubetest_tenant(char letter, bool make_namespace, char *slug, size_t slugsz, char *ns,
                     size_t nssz)
{
    ck_assert_msg(n_made_ns < sizeof made_ns / sizeof made_ns[0], "too many tenants");
    snprintf(slug, slugsz, "%s%c", run_id, letter);
    snprintf(ns, nssz, "aidc-%s", slug);
    snprintf(made_ns[n_made_ns++], sizeof made_ns[0], "%s", ns);
    if (make_namespace)
        kube_namespace_create(ns);
}

void kubetest_nodes(bool unusable_too)
{
    char labels[256]; /* not an fmt() buffer: the calls below use them all */
    snprintf(labels, sizeof labels, "{\"%s\":\"%s\",\"aidc.io/test-run\":\"%s\"}",
             KUBETEST_GPU_LABEL, kube_gpu_value, run_id);
    n_made_nodes = unusable_too ? 4 : 2;
    for (size_t i = 0; i < n_made_nodes; i++)
        kube_node_delete(kube_node[i]); /* a run before with this pid that did not clean up */
    kube_node_create(kube_node[0], labels, false, KUBETEST_GPU_RES, "4", "32", "128Gi", true);
    kube_node_create(kube_node[1], labels, false, KUBETEST_GPU_RES, "4", "32", "128Gi", true);
    if (!unusable_too)
        return;
    /* cordoned, and not ready: their GPUs, cores and memory must not count */
    kube_node_create(kube_node[2], labels, true, KUBETEST_GPU_RES, "4", "1000", "4000Gi", true);
    kube_node_create(kube_node[3], labels, false, KUBETEST_GPU_RES, "4", "1000", "4000Gi", false);
}

void kubetest_register_cluster(const char *name, const char *credentials_ref)
{
    jobs_admin_ok("POST", "/api/v1/clusters",
                  fmt("{\"name\":\"%s\",\"kind\":\"kubernetes\",\"endpoint\":\"%s\","
                      "\"credentials_ref\":\"%s\",\"options\":{\"ca_file\":\"%s\",\"namespace\":"
                      "\"aidc-{tenant}\",\"gpu_types\":{\"a100\":\"%s\"},\"priority_classes\":"
                      "{\"high\":\"aidc-high\"},\"queue_name\":\"{tenant}-q\",\"scheduler_name\":"
                      "\"volcano\",\"page_size\":2}}",
                      name, kube_url, credentials_ref, kube_ca, kube_gpu_value),
                  201);
}

void kubetest_cluster_ready(void)
{
    kubetest_register_cluster(KUBETEST_CL, "env:AIDC_TEST_K8S_TOKEN_FOR_AIDCD");
    /* the syncer reads the Nodes */
    double deadline = jobs_now() + 30;
    for (;;) {
        json_t *c = kubetest_cluster_get(KUBETEST_CL);
        long long a100 = kubetest_total(c, "gpu:a100");
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
}

json_t *kubetest_cluster_get(const char *name)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/clusters/%s", name), harness_srv.admin_token, NULL,
                          &r),
                     200);
    json_t *j = json_incref(r.json);
    http_res_free(&r);
    return j;
}

long long kubetest_total(const json_t *cluster, const char *res)
{
    return json_integer_value(
        json_object_get(json_object_get(json_object_get(cluster, "inventory"), res), "total"));
}

/* ---- between tests ------------------------------------------------------------------------ */

/* Whether a Job has ended (a Complete or Failed condition "True"). */
static bool job_ended(const json_t *kj)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(kj, "status"), "conditions"), i, c) {
        if (jstr(c, "status") && strcmp(jstr(c, "status"), "True") == 0 && jstr(c, "type") &&
            (strcmp(jstr(c, "type"), "Complete") == 0 || strcmp(jstr(c, "type"), "Failed") == 0))
            return true;
    }
    return false;
}

/*
 * The tests of a program share one aidcd and the cluster's 8 GPUs, so what a
 * failed test left active must end before the next one starts, or one failure
 * becomes many. Jobs with a live Job complete; queued and admitted jobs are
 * cancelled; a job whose Job is gone (aidc may learn of that only when it lists
 * all Jobs: at its start) ends after aidcd starts again. Also brings back aidcd
 * or the API server if a test (the outage tests: a crash, a stop) left them
 * down. Says on stderr what it had to clean up.
 */
void kubetest_settle(void)
{
    if (harness_srv.pid <= 0 && jobs_restart_server(kube_aidcd_env) != 0)
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
            ck_assert_int_eq(jobs_restart_server(kube_aidcd_env), 0);
            gone_since = 0;
        }
        if (now - start > 90)
            fprintf(stderr, "settle: %d jobs still active after 90 s\n", n);
        ck_assert_msg(now - start <= 90, "settle: %d jobs still active after 90 s", n);
        jobs_nap_ms(300);
    }
}

void kubetest_teardown(void)
{
    /* a crash test may have failed while aidcd was down */
    if (harness_srv.pid <= 0 && jobs_restart_server(kube_aidcd_env) != 0)
        fprintf(stderr, "teardown: aidcd did not start again\n");
    /* a stop/start test may have failed while the API server was down */
    if (kube_dir && !kube_ready() && kube_script("k8s-up.sh") != 0)
        fprintf(stderr, "teardown: the API server did not start again\n");
    harness_teardown();
}

/* ---- jobs through aidc ---------------------------------------------------------------------- */

const char *kubetest_job_body(const char *project, const char *name, int gpus, int minutes)
{
    return fmt("{\"project\":\"%s\",\"name\":\"%s\",\"cluster\":\"" KUBETEST_CL "\",\"image\":\""
               KUBETEST_IMAGE_REPO ":" KUBETEST_IMAGE_TAG "\",\"command\":[\"sleep\",\"600\"],"
               "\"gpus\":%d,\"gpu_type\":\"a100\",\"cpus\":1,\"memory_gib\":1,"
               "\"time_limit_minutes\":%d}",
               project, name, gpus, minutes);
}

char *kubetest_wait_delivered(const char *token, const char *tenant, const char *id)
{
    json_t *j = jobs_wait(token, tenant, id, "pending,running,succeeded,failed,cancelled",
                          KUBETEST_WAIT_S);
    ck_assert_msg(strcmp(jstr(j, "state"), "pending") == 0, "job %s is %s (%s), not pending", id,
                  jstr(j, "state"), jstr(j, "reason") ? jstr(j, "reason") : "");
    ck_assert_ptr_nonnull(jstr(j, "backend_job_id"));
    char *bid = strdup(jstr(j, "backend_job_id"));
    json_decref(j);
    ck_assert_ptr_nonnull(bid);
    return bid;
}

const char *kubetest_bid_want(const char *ns, const char *run_key)
{
    return fmt("%s/aidc-%s", ns, run_key);
}

json_t *kubetest_audit_events(const char *action, const char *id, size_t want)
{
    const char *p[2] = {action, id};
    double deadline = jobs_now() + KUBETEST_WAIT_S;
    for (;;) {
        PGresult *r = harness_sql(
            harness_srv.owner_url,
            "SELECT coalesce(json_agg(json_build_object('outcome', outcome, 'status', status,"
            " 'details', details) ORDER BY id), '[]') FROM audit_log"
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
                      id, KUBETEST_WAIT_S);
        jobs_nap_ms(50);
    }
}

size_t kubetest_job_count(const char *id)
{
    json_t *items = kube_jobs_labelled(NULL, fmt("aidc.io/job=%s", id));
    size_t n = json_array_size(items);
    json_decref(items);
    return n;
}

void kubetest_complete(const char *token, const char *tenant, const char *id, const char *bid)
{
    time_t now = time(NULL);
    kube_job_complete(bid, now - 2, now - 1);
    json_t *j = jobs_wait(token, tenant, id, "succeeded,failed,cancelled", KUBETEST_WAIT_S);
    ck_assert_str_eq(jstr(j, "state"), "succeeded");
    json_decref(j);
}
