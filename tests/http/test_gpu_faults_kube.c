/*
 * test_gpu_faults_kube.c - a GPU fault on a Node of the real Kubernetes API
 * server (1.20, nothing runs pods: the test plays the job controller and
 * the scheduler by writing the Job's status and creating its pod bound to
 * the Node): the report cordons the Node (GET shows spec.unschedulable true
 * and aidc's annotation), the job whose pod runs there is stopped (its Job
 * deleted) and requeued naming the fault, the Node's GPUs leave the
 * inventory; giving them back uncordons it. A Node someone else cordoned is
 * neither cordoned over nor uncordoned by aidc.
 *
 * The API server is shared: Nodes and namespaces carry this run's names and
 * go at the end (tests/support/kubetest.h). Needs AIDC_TEST_K8S_URL, _TOKEN,
 * _CA (skipped, 77, without the URL); runs without Check's fork, as the
 * other Kubernetes programs.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/kubetest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAULTS "/api/v1/clusters/" KUBETEST_CL "/gpu-faults"

static char ta[40], nsa[64]; /* this run's tenant and its namespace */
static char *ann;

static void setup(void)
{
    static const char *const env[] = {"AIDC_PREEMPT_GRACE_SECONDS=1",
                                      "AIDC_INVENTORY_INTERVAL_SECONDS=1", NULL};
    kubetest_setup("gpu_faults_kube", env);
    kubetest_nodes(false);
    kubetest_tenant('a', true, ta, sizeof ta, nsa, sizeof nsa);
    kubetest_cluster_ready();
    ann = jobs_tenant_member(ta, "lab", "{\"gpu:a100\":{\"guaranteed\":8,\"limit\":8}}", "ann");
    /* pods are checked against their namespace's service account (no controller makes it) */
    long st = 0;
    json_decref(kube_call("POST", fmt("/api/v1/namespaces/%s/serviceaccounts", nsa),
                          "{\"metadata\":{\"name\":\"default\"}}", NULL, &st));
    ck_assert_msg(st == 201 || st == 409, "service account: %ld", st);
}

static void teardown(void)
{
    free(ann);
    kubetest_teardown();
}

/* Node name as the API server has it: unschedulable, and aidc's annotation (into mark). */
static bool cordoned(const char *name, char *mark, size_t n)
{
    json_t *nd = kube_ok("GET", fmt("/api/v1/nodes/%s", name), NULL, NULL, 200);
    bool c = json_is_true(json_object_get(json_object_get(nd, "spec"), "unschedulable"));
    const char *a =
        jstr(json_object_get(json_object_get(nd, "metadata"), "annotations"), "aidc.io/cordoned");
    if (mark)
        snprintf(mark, n, "%s", a ? a : "");
    json_decref(nd);
    return c;
}

static void wait_cordoned(const char *name, bool want)
{
    double deadline = jobs_now() + KUBETEST_WAIT_S;
    while (cordoned(name, NULL, 0) != want) {
        ck_assert_msg(jobs_now() < deadline, "%s is %scordoned", name, want ? "not " : "still ");
        jobs_nap_ms(100);
    }
}

static void cordon_by_hand(const char *name, bool on)
{
    json_decref(kube_ok("PATCH", fmt("/api/v1/nodes/%s", name),
                        on ? "{\"spec\":{\"unschedulable\":true}}"
                           : "{\"spec\":{\"unschedulable\":null}}",
                        "application/merge-patch+json", 200));
}

static long long a100(const char *field)
{
    json_t *c = kubetest_cluster_get(KUBETEST_CL);
    long long v = json_integer_value(json_object_get(
        json_object_get(json_object_get(c, "inventory"), "gpu:a100"), field));
    json_decref(c);
    return v;
}

static void wait_a100(long long total, long long faulty)
{
    double deadline = jobs_now() + KUBETEST_WAIT_S;
    while (a100("total") != total || a100("faulty") != faulty) {
        ck_assert_msg(jobs_now() < deadline, "gpu:a100 total %lld faulty %lld, want %lld %lld",
                      a100("total"), a100("faulty"), total, faulty);
        jobs_nap_ms(100);
    }
}

START_TEST(a_fault_cordons_the_node_and_requeues_the_job_on_it)
{
    const char *node = kube_node[0];
    char *id = jobs_submit(ann, ta, kubetest_job_body("lab", "victim", 1, 10));
    char *bid = kubetest_wait_delivered(ann, ta, id);
    /* the scheduler binds its pod to the node, the job controller says it runs */
    json_decref(kube_ok("POST", fmt("/api/v1/namespaces/%s/pods", nsa),
                        fmt("{\"metadata\":{\"name\":\"aidc-%s-x1\",\"labels\":{"
                            "\"app.kubernetes.io/managed-by\":\"aidc\",\"aidc.io/run\":\"%s\","
                            "\"job-name\":\"aidc-%s\"}},\"spec\":{\"nodeName\":\"%s\","
                            "\"automountServiceAccountToken\":false,\"containers\":[{\"name\":"
                            "\"main\",\"image\":\"busybox\"}]}}",
                            id, id, id, node),
                        NULL, 201));
    kube_job_running(bid, time(NULL) - 5);
    json_decref(jobs_wait(ann, ta, id, "running", KUBETEST_WAIT_S));

    struct http_res r;
    ck_assert_int_eq(reqj("POST", FAULTS, harness_srv.admin_token,
                          fmt("{\"node\":\"%s\",\"gpus\":\"all\",\"reason\":\"XID 48\"}", node), &r),
                     201);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "drains"), 0), "action"), "drain");
    http_res_free(&r);
    ck_assert_int_eq(a100("total"), 4); /* at once: the node's 4 GPUs are out */
    ck_assert_int_eq(a100("faulty"), 4);

    /* cordoned, with aidc's mark; its job stopped for the fault and requeued */
    wait_cordoned(node, true);
    char mark[256];
    cordoned(node, mark, sizeof mark);
    ck_assert_str_eq(mark, "aidc: XID 48");
    /* details.jobs_stopped names it */
    json_t *ev = audittest_event_with("backend.drain", id, KUBETEST_WAIT_S);
    json_t *sent = json_object_get(json_object_get(ev, "details"), "request");
    ck_assert_str_eq(jstr(sent, "method"), "PATCH");
    ck_assert_str_eq(jstr(json_object_get(sent, "headers"), "Content-Type"),
                     "application/merge-patch+json");
    ck_assert(json_is_true(json_object_get(json_object_get(json_object_get(sent, "body"), "spec"),
                                           "unschedulable")));
    ck_assert_str_eq(jstr(json_object_get(sent, "headers"), "Authorization"), "[redacted]");
    json_decref(ev);
    json_t *job = jobs_wait(ann, ta, id, "queued,admitted,pending,running", KUBETEST_WAIT_S);
    double deadline = jobs_now() + KUBETEST_WAIT_S;
    while (json_integer_value(json_object_get(job, "preemption_count")) != 1) {
        ck_assert_msg(jobs_now() < deadline, "the job was not requeued");
        json_decref(job);
        jobs_nap_ms(100);
        job = jobs_get(ann, ta, id);
    }
    json_decref(job);
    char *h = jobs_history(ann, ta, id);
    ck_assert_msg(strstr(h, "running,running,preempted,queued") != NULL, "history %s", h);
    free(h);
    ck_assert_ptr_null(kube_job_get(bid)); /* the run's Job is deleted */
    wait_a100(4, 4); /* and the syncer, seeing the node cordoned, counts it out once */

    /* healthy again: uncordoned, the mark gone, the GPUs back */
    ck_assert_int_eq(reqj("DELETE", fmt(FAULTS "/%s", node), harness_srv.admin_token, NULL, &r),
                     200);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "drains"), 0), "action"),
                     "undrain");
    http_res_free(&r);
    wait_cordoned(node, false);
    cordoned(node, mark, sizeof mark);
    ck_assert_str_eq(mark, "");
    wait_a100(8, 0);
    free(bid);
    free(id);
}
END_TEST

START_TEST(a_cordon_by_someone_else_is_left_alone)
{
    const char *node = kube_node[1];
    cordon_by_hand(node, true);
    wait_a100(4, 0);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", FAULTS, harness_srv.admin_token,
                          fmt("{\"node\":\"%s\",\"gpus\":[3],\"reason\":\"fans\"}", node), &r),
                     201);
    http_res_free(&r);
    json_t *ev = audittest_event_with("backend.drain", node, KUBETEST_WAIT_S);
    ck_assert(json_is_null(json_object_get(json_object_get(ev, "details"), "request")));
    json_decref(ev);
    ck_assert_int_eq(reqj("DELETE", fmt(FAULTS "/%s", node), harness_srv.admin_token, NULL, &r),
                     200);
    http_res_free(&r);
    ev = audittest_event_with("backend.undrain", node, KUBETEST_WAIT_S);
    ck_assert(json_is_null(json_object_get(json_object_get(ev, "details"), "request")));
    json_decref(ev);
    ck_assert(cordoned(node, NULL, 0)); /* still the other's cordon */
    cordon_by_hand(node, false);
    wait_a100(8, 0);
}
END_TEST

int main(void)
{
    harness_require_pg();
    kubetest_env();
    Suite *s = suite_create("gpu_faults_kube");
    TCase *tc = tcase_create("gpu_faults_kube");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, NULL, kubetest_settle);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, a_fault_cordons_the_node_and_requeues_the_job_on_it);
    tcase_add_test(tc, a_cordon_by_someone_else_is_left_alone);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s);
}
