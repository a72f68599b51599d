/* kubetest.c - helpers of the tests on a real Kubernetes API server (see kubetest.h). */
#include "kubetest.h"

#include "client.h"

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
        execl("/bin/bash", "bash", path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
