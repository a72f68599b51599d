/*
 * test_kubernetes_app.c - interactive sessions on a real kube-apiserver
 * 1.20 (deploy/k8s-up.sh: no kubelet, so pods never run), at the backend's
 * level (backend_kubernetes, no aidcd): a submit with app = true makes the
 * Job and a Service selecting its pods on port 8888 (read back from the API
 * server), a retried submit adopts both, app_endpoint answers the Service
 * (its DNS name, or its clusterIP with options.session_host), cancel deletes
 * both; a Service of the run's name that is not aidc's fails the run and is
 * left alone.
 *
 * Needs AIDC_TEST_K8S_URL, _TOKEN and _CA (tests/support/kubetest.h); skipped
 * (77) without them.
 */
#include "backends/backend.h"
#include "backends/kubernetes.h"
#include "lib/err.h"
#include "tests/support/client.h"
#include "tests/support/kubetest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct backend_ops *ops = &backend_kubernetes;
static char tenant[32], ns[64];
static json_t *env;

static void setup(void)
{
    kubetest_env();
    curl_global_init(CURL_GLOBAL_ALL);
    snprintf(tenant, sizeof tenant, "kapp%d", (int)getpid());
    snprintf(ns, sizeof ns, "aidc-%s", tenant);
    kube_namespace_create(ns);
    env = json_pack("{s:s, s:s}", "PORT", "8888", "AIDC_SESSION_BASE_URL", "/sessions/x/");
}

static void teardown(void)
{
    json_decref(env);
    if (ns[0])
        kube_namespace_delete(ns);
}

/* The cluster with options.session_host how (NULL: the default); options freed by the caller. */
static struct backend_cluster cluster_of(const char *how, json_t **options)
{
    *options = json_pack("{s:s, s:s}", "ca_file", kube_ca, "namespace", "aidc-{tenant}");
    if (how)
        json_object_set_new(*options, "session_host", json_string(how));
    char err[256] = "";
    ck_assert_msg(ops->check_options(*options, err, sizeof err), "%s", err);
    return (struct backend_cluster){.id = "c",
                                    .name = "k8s",
                                    .kind = "kubernetes",
                                    .endpoint = kube_url,
                                    .credentials_ref = "env:AIDC_TEST_K8S_TOKEN",
                                    .options = *options};
}

static struct backend_job job_of(const char *run, bool app)
{
    return (struct backend_job){.id = run,
                                .tenant = tenant,
                                .project = "lab",
                                .user = "ann",
                                .name = "nb",
                                .image = "registry.example/lab/nb:1",
                                .script = "exec python3 -m http.server $PORT",
                                .env = env,
                                .cpus = 1,
                                .memory_gib = 1,
                                .nodes = 1,
                                .time_limit_minutes = 60,
                                .grace_seconds = 5,
                                .app = app,
                                .priority = "normal"};
}

static json_t *get(const char *path, long want)
{
    return kube_ok("GET", path, NULL, NULL, want);
}

START_TEST(a_session_gets_a_service_of_its_own)
{
    json_t *options;
    struct backend_cluster c = cluster_of(NULL, &options);
    char run[64], bid[160], err[512] = "";
    snprintf(run, sizeof run, "%d-a", (int)getpid());
    struct backend_job job = job_of(run, true);
    struct backend_call call = {0};
    ck_assert_msg(ops->submit(&c, &job, bid, sizeof bid, &call, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(bid, fmt("%s/aidc-%s", ns, run));
    /* both requests were recorded for the audit trail, the Service's inside the Job's */
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(call.request, "service"), "method")),
        "POST");
    backend_call_free(&call);

    json_t *k8s = get(fmt("/apis/batch/v1/namespaces/%s/jobs/aidc-%s", ns, run), 200);
    json_t *svc = get(fmt("/api/v1/namespaces/%s/services/aidc-%s", ns, run), 200);
    const json_t *tpl = json_object_get(json_object_get(k8s, "spec"), "template");
    const json_t *labels = json_object_get(json_object_get(tpl, "metadata"), "labels");
    const json_t *spec = json_object_get(svc, "spec");
    ck_assert_str_eq(json_string_value(json_object_get(spec, "type")), "ClusterIP");
    /* the selector picks the Job's pods: each of its labels is on the pod template */
    const json_t *sel = json_object_get(spec, "selector");
    const char *k;
    json_t *v;
    ck_assert_uint_ge(json_object_size(sel), 2);
    json_object_foreach((json_t *)sel, k, v)
        ck_assert_msg(json_equal(v, json_object_get(labels, k)), "selector %s differs", k);
    const json_t *port = json_array_get(json_object_get(spec, "ports"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(port, "port")), 8888);
    ck_assert_int_eq(json_integer_value(json_object_get(port, "targetPort")), 8888);
    const json_t *ct =
        json_array_get(json_object_get(json_object_get(tpl, "spec"), "containers"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_array_get(json_object_get(ct, "ports"), 0), "containerPort")),
                     8888);
    /* owned by its Job: the garbage collector removes it with the Job */
    const json_t *owner =
        json_array_get(json_object_get(json_object_get(svc, "metadata"), "ownerReferences"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(owner, "uid")),
                     json_string_value(json_object_get(json_object_get(k8s, "metadata"), "uid")));
    const char *cluster_ip = json_string_value(json_object_get(spec, "clusterIP"));
    ck_assert_ptr_nonnull(cluster_ip);

    /* a retried delivery adopts the Job and finds the Service (409 AlreadyExists) */
    char bid2[160];
    job.retry = true;
    memset(&call, 0, sizeof call);
    ck_assert_msg(ops->submit(&c, &job, bid2, sizeof bid2, &call, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(bid2, bid);
    ck_assert(call.adopted);
    backend_call_free(&call);

    struct backend_endpoint ep;
    ck_assert_msg(ops->app_endpoint(&c, run, bid, &ep, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(ep.host, fmt("aidc-%s.%s.svc", run, ns));
    ck_assert_int_eq(ep.port, 8888);
    json_t *o2;
    struct backend_cluster c2 = cluster_of("cluster_ip", &o2);
    ck_assert_msg(ops->app_endpoint(&c2, run, bid, &ep, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(ep.host, cluster_ip);
    json_decref(o2);
    /* the Service is this run's only */
    ck_assert_int_eq(ops->app_endpoint(&c, "someone-else", bid, &ep, err, sizeof err), AIDC_EINVAL);

    /* cancel deletes both */
    memset(&call, 0, sizeof call);
    ck_assert_msg(ops->cancel(&c, run, bid, &call, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(call.request, "service"), "method")),
        "DELETE");
    backend_call_free(&call);
    json_decref(get(fmt("/apis/batch/v1/namespaces/%s/jobs/aidc-%s", ns, run), 404));
    json_decref(get(fmt("/api/v1/namespaces/%s/services/aidc-%s", ns, run), 404));
    ck_assert_int_eq(ops->app_endpoint(&c, run, bid, &ep, err, sizeof err), AIDC_ENOTFOUND);
    ck_assert_str_eq(ep.host, "");
    json_decref(svc);
    json_decref(k8s);
    json_decref(options);
}
END_TEST

START_TEST(a_batch_job_has_no_service_and_a_strangers_is_refused)
{
    json_t *options;
    struct backend_cluster c = cluster_of(NULL, &options);
    char run[64], bid[160], err[512] = "";
    /* a batch run: no Service, no endpoint; its stop deletes none (404 is fine) */
    snprintf(run, sizeof run, "%d-b", (int)getpid());
    struct backend_job job = job_of(run, false);
    ck_assert_msg(ops->submit(&c, &job, bid, sizeof bid, NULL, err, sizeof err) == 0, "%s", err);
    json_decref(get(fmt("/api/v1/namespaces/%s/services/aidc-%s", ns, run), 404));
    struct backend_endpoint ep;
    ck_assert_int_eq(ops->app_endpoint(&c, run, bid, &ep, err, sizeof err), AIDC_ENOTFOUND);
    ck_assert_msg(ops->cancel(&c, run, bid, NULL, err, sizeof err) == 0, "%s", err);

    /* a Service of the run's name selecting other pods: the run fails, its Job goes, the
     * stranger's Service stays as it was */
    snprintf(run, sizeof run, "%d-c", (int)getpid());
    json_decref(kube_ok("POST", fmt("/api/v1/namespaces/%s/services", ns),
                        fmt("{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
                            "\"aidc-%s\"},\"spec\":{\"selector\":{\"app\":\"other\"},\"ports\":"
                            "[{\"port\":8888}]}}",
                            run),
                        NULL, 201));
    job = job_of(run, true);
    err[0] = '\0';
    ck_assert_int_eq(ops->submit(&c, &job, bid, sizeof bid, NULL, err, sizeof err), AIDC_EINVAL);
    ck_assert_msg(strstr(err, "did not make") != NULL, "%s", err);
    json_decref(get(fmt("/apis/batch/v1/namespaces/%s/jobs/aidc-%s", ns, run), 404));
    json_t *svc = get(fmt("/api/v1/namespaces/%s/services/aidc-%s", ns, run), 200);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(svc, "spec"), "selector"), "app")),
                     "other");
    json_decref(svc);
    ck_assert_int_eq(ops->app_endpoint(&c, run, fmt("%s/aidc-%s", ns, run), &ep, err, sizeof err),
                     AIDC_EINVAL);
    json_decref(options);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kubernetes_app");
    TCase *tc = tcase_create("kubernetes_app");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_session_gets_a_service_of_its_own);
    tcase_add_test(tc, a_batch_job_has_no_service_and_a_strangers_is_refused);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* the tear-down deletes the namespace, also after a failure */
}
