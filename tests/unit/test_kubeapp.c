/*
 * test_kubeapp.c - a Kubernetes session's data without an API server
 * (backends/kubeapp.h, kubejob_build with app = true): the Job's container
 * listens on 8888 (PORT, whatever the env said), the Service selects exactly
 * the run's pods, and the endpoint is that Service's - never another's.
 * tests/http/test_kubernetes_app.c does the same against kube-apiserver.
 */
#include "backends/kubeapp.h"
#include "backends/kubejob.h"
#include "lib/err.h"
#include "tests/support/suite.h"

#include <check.h>
#include <string.h>

#define RUN "0192a0b1-c2d3-7e4f-8a9b-0c1d2e3f4a5b-r1"

static json_t *env;
static struct backend_job job = {.id = RUN,
                                 .tenant = "acme",
                                 .project = "lab",
                                 .user = "ann",
                                 .image = "registry.example/lab/nb@sha256:ab",
                                 .cpus = 1,
                                 .memory_gib = 1,
                                 .nodes = 1,
                                 .grace_seconds = 5,
                                 .priority = "normal",
                                 .app = true};

static void setup(void)
{
    env = json_pack("{s:s, s:s}", "PORT", "9999", "AIDC_SESSION_BASE_URL", "/s/x/");
    job.env = env;
    job.script = "jupyter lab --port=$PORT";
}

static void teardown(void)
{
    json_decref(env);
}

static json_t *options(void)
{
    json_t *o = json_object();
    char err[256];
    ck_assert_msg(kubejob_check_options(o, err, sizeof err), "%s", err);
    return o;
}

/* the value of env name in the container's env list, or NULL (and how often it is there) */
static const char *env_of(const json_t *container, const char *name, int *count)
{
    const char *v = NULL;
    size_t i;
    json_t *e;
    *count = 0;
    json_array_foreach(json_object_get(container, "env"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0) {
            v = json_string_value(json_object_get(e, "value"));
            ++*count;
        }
    }
    return v;
}

START_TEST(the_sessions_container_listens_on_8888)
{
    json_t *o = options();
    char err[256];
    json_t *k8s = kubejob_build(o, &job, "aidc-acme", err, sizeof err);
    ck_assert_msg(k8s != NULL, "%s", err);
    const json_t *tpl = json_object_get(json_object_get(k8s, "spec"), "template");
    const json_t *ct =
        json_array_get(json_object_get(json_object_get(tpl, "spec"), "containers"), 0);
    const json_t *port = json_array_get(json_object_get(ct, "ports"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(port, "containerPort")), KUBEAPP_PORT);
    int n;
    ck_assert_str_eq(env_of(ct, "PORT", &n), "8888"); /* not the env's 9999 */
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(env_of(ct, "AIDC_SESSION_BASE_URL", &n), "/s/x/");
    /* no readiness probe: as any job */
    ck_assert_ptr_null(json_object_get(ct, "readinessProbe"));

    /* the Service selects the pod template's labels (a subset of them), port 8888 */
    json_t *svc = kubeapp_service(&job, "aidc-acme", "uid-1");
    ck_assert_ptr_nonnull(svc);
    const json_t *sel = json_object_get(json_object_get(svc, "spec"), "selector");
    const json_t *labels = json_object_get(json_object_get(tpl, "metadata"), "labels");
    const char *k;
    json_t *v;
    ck_assert_uint_ge(json_object_size(sel), 2);
    json_object_foreach((json_t *)sel, k, v) ck_assert(json_equal(v, json_object_get(labels, k)));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(svc, "metadata"), "name")),
                     "aidc-" RUN);
    const json_t *owner =
        json_array_get(json_object_get(json_object_get(svc, "metadata"), "ownerReferences"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(owner, "uid")), "uid-1");
    ck_assert_str_eq(json_string_value(json_object_get(owner, "kind")), "Job");
    ck_assert(kubeapp_service_ours(svc, RUN));
    ck_assert(!kubeapp_service_ours(svc, RUN "0"));
    json_decref(svc);
    json_decref(k8s);

    /* not a session: no port, the env's PORT as it is */
    job.app = false;
    k8s = kubejob_build(o, &job, "aidc-acme", err, sizeof err);
    job.app = true;
    ct = json_array_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(k8s, "spec"), "template"), "spec"),
            "containers"),
        0);
    ck_assert_ptr_null(json_object_get(ct, "ports"));
    ck_assert_str_eq(env_of(ct, "PORT", &n), "9999");
    json_decref(k8s);
    json_decref(o);
}
END_TEST

/* The Service as the API server would answer it: with its clusterIP. */
static json_t *served(const char *cluster_ip)
{
    json_t *svc = kubeapp_service(&job, "aidc-acme", NULL);
    json_object_set_new(json_object_get(svc, "spec"), "clusterIP", json_string(cluster_ip));
    return svc;
}

START_TEST(the_endpoint_is_the_services)
{
    struct backend_endpoint ep;
    char err[256];
    json_t *svc = served("10.96.3.4");
    ck_assert_int_eq(kubeapp_endpoint(svc, RUN, "dns", &ep, err, sizeof err), 0);
    ck_assert_str_eq(ep.host, "aidc-" RUN ".aidc-acme.svc");
    ck_assert_int_eq(ep.port, 8888);
    ck_assert_int_eq(kubeapp_endpoint(svc, RUN, "cluster_ip", &ep, err, sizeof err), 0);
    ck_assert_str_eq(ep.host, "10.96.3.4");
    /* another run's, a wider selector, another port, a headless Service: none */
    ck_assert_int_eq(kubeapp_endpoint(svc, "other", "dns", &ep, err, sizeof err), AIDC_EINVAL);
    json_object_del(json_object_get(json_object_get(svc, "spec"), "selector"), KUBE_LABEL_RUN);
    ck_assert_int_eq(kubeapp_endpoint(svc, RUN, "dns", &ep, err, sizeof err), AIDC_EINVAL);
    ck_assert_str_eq(ep.host, "");
    json_decref(svc);
    svc = served("10.96.3.4");
    json_object_set_new(json_array_get(json_object_get(json_object_get(svc, "spec"), "ports"), 0),
                        "targetPort", json_integer(22));
    ck_assert_int_eq(kubeapp_endpoint(svc, RUN, "dns", &ep, err, sizeof err), AIDC_EINVAL);
    json_decref(svc);
    svc = served("None");
    ck_assert_int_eq(kubeapp_endpoint(svc, RUN, "cluster_ip", &ep, err, sizeof err), AIDC_EINVAL);
    json_decref(svc);
    svc = served("");
    ck_assert_int_eq(kubeapp_endpoint(svc, RUN, "cluster_ip", &ep, err, sizeof err),
                     AIDC_ENOTFOUND);
    json_decref(svc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kubeapp");
    TCase *tc = tcase_create("kubeapp");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, the_sessions_container_listens_on_8888);
    tcase_add_test(tc, the_endpoint_is_the_services);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
