/*
 * test_kubernetes_outage.c - aidc's bad days with a real Kubernetes API
 * server (kube-apiserver 1.20 from k8s-up.sh; the test plays the job
 * controller, as test_kubernetes.c does):
 * - a job submitted while the API server is stopped waits, and is delivered
 *   once it is back (only with AIDC_TEST_K8S_DIR: it stops the server with
 *   deploy/k8s-down.sh and starts it again with deploy/k8s-up.sh);
 * - exactly one Job when aidcd dies between the API server's accept and its
 *   own commit (AIDC_FAULT=after_backend_submit).
 *
 * It stops the API server the other Kubernetes tests use, so none of them
 * runs meanwhile (ctest's RESOURCE_LOCK kube_api, which deploy/check holds
 * too). Its tenant (so namespace) and Nodes are named after this
 * run and deleted at the end, as test_kubernetes.c's are (tests/support/
 * kubetest.h: the fixture both programs share).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char ta[40], nsa[64]; /* the tenant and its namespace (aidc-{tenant}) */
static char *ann;            /* a member of ta */

/* ---- fixture ------------------------------------------------------------------------- */

static void setup(void)
{
    /* the inventory only when asked (POST .../sync): the stop/start test needs the
     * cluster to look healthy for a while after the API server stopped */
    static const char *const env[] = {"AIDC_INVENTORY_INTERVAL_SECONDS=600", NULL};
    kubetest_setup("kubernetes_outage", env);
    kubetest_nodes(false);
    kubetest_tenant('a', true, ta, sizeof ta, nsa, sizeof nsa);
    kubetest_cluster_ready();
    ann = jobs_tenant_member(ta, "lab", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":8}}", "ann");
}

static void teardown(void)
{
    free(ann);
    kubetest_teardown();
}

/* ---- the API server stopped, aidcd crashed ------------------------------------------- */

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
    json_t *c = kubetest_cluster_get(KUBETEST_CL);
    char *before = strdup(jstr(c, "last_sync_at") ? jstr(c, "last_sync_at") : "");
    json_decref(c);
    ck_assert_int_eq(
        req("POST", "/api/v1/clusters/" KUBETEST_CL "/sync", harness_srv.admin_token, NULL), 202);
    double deadline = jobs_now() + 30;
    for (;;) {
        c = kubetest_cluster_get(KUBETEST_CL);
        bool synced = jstr(c, "last_sync_at") && strcmp(jstr(c, "last_sync_at"), before) != 0 &&
                      json_is_true(json_object_get(c, "healthy"));
        json_decref(c);
        if (synced)
            break;
        ck_assert_msg(jobs_now() < deadline, "no sync of cluster " KUBETEST_CL " after 30 s");
        jobs_nap_ms(100);
    }
    free(before);

    ck_assert_int_eq(kube_script("k8s-down.sh"), 0);
    bool down = !kube_ready();
    char *id = jobs_submit(ann, ta, kubetest_job_body("lab", "patient", 1, 10));
    /* what the job did while the server was down; asserted once it is up again (a
     * failure must not leave it down for the tests after this one) */
    char *seen = NULL;
    bool waited = false;
    deadline = jobs_now() + 30;
    while (!waited && jobs_now() < deadline) {
        json_t *j = jobs_get(ann, ta, id);
        waited = jstr(j, "reason") && strcmp(jstr(j, "reason"), "backend-unavailable") == 0 &&
                 strcmp(jstr(j, "state"), "admitted") == 0;
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
    ck_assert_msg(strcmp(jstr(j, "state"), "pending") == 0, "state %s (%s)", jstr(j, "state"),
                  jstr(j, "reason") ? jstr(j, "reason") : "");
    char *bid = strdup(jstr(j, "backend_job_id"));
    json_decref(j);
    ck_assert_str_eq(bid, kubetest_bid_want(nsa, id));
    ck_assert_int_eq(kubetest_job_count(id), 1);
    kubetest_complete(ann, ta, id, bid);
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
    for (; kube_aidcd_env[n]; n++)
        faulty[n] = kube_aidcd_env[n];
    faulty[n++] = "AIDC_FAULT=after_backend_submit";
    /* the delivery is tried again this soon after the crash */
    faulty[n++] = "AIDC_OUTBOX_LEASE_SECONDS=5";
    faulty[n] = NULL;
    ck_assert_int_eq(jobs_restart_server(faulty), 0);
    char *body = strdup(kubetest_job_body("lab", "once", 1, 10));
    ck_assert_ptr_nonnull(body);
    /* NULL when the crash it sets off beat its answer */
    char *id = jobs_submit_keyed(ann, ta, body, "crash-once", true);
    int st = 0;
    double deadline = jobs_now() + KUBETEST_WAIT_S;
    pid_t got;
    while ((got = waitpid(harness_srv.pid, &st, WNOHANG)) == 0) {
        ck_assert_msg(jobs_now() < deadline, "aidcd did not die after the submit");
        jobs_nap_ms(50);
    }
    ck_assert_int_eq(got, harness_srv.pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 99, "aidcd ended with status %d", st);
    harness_srv.pid = 0;
    if (id) /* the API server has it; aidc has not recorded it */
        ck_assert_int_eq(kubetest_job_count(id), 1);
    ck_assert_int_eq(jobs_restart_server(kube_aidcd_env), 0);
    if (!id) /* asked again, the key gives the answer the crash lost */
        id = jobs_submit_keyed(ann, ta, body, "crash-once", false);
    free(body);

    char *bid = kubetest_wait_delivered(ann, ta, id);
    ck_assert_str_eq(bid, kubetest_bid_want(nsa, id));
    ck_assert_int_eq(kubetest_job_count(id), 1);
    /* the delivery that counted adopted the Job the first one made */
    json_t *ev = kubetest_audit_events("backend.submit", id, 1);
    ck_assert_int_eq(json_array_size(ev), 1);
    const json_t *resp =
        json_object_get(json_object_get(json_array_get(ev, 0), "details"), "response");
    ck_assert(json_is_true(json_object_get(resp, "adopted")));
    ck_assert_str_eq(jstr(resp, "backend_job_id"), bid);
    json_decref(ev);
    kubetest_complete(ann, ta, id, bid);
    ck_assert_int_eq(kubetest_job_count(id), 1);
    free(bid);
    free(id);
}
END_TEST

int main(void)
{
    harness_require_pg();
    kubetest_env();
    Suite *s = suite_create("kubernetes_outage");
    TCase *tc = tcase_create("kubernetes_outage");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, NULL, kubetest_settle);
    /* no fork, so Check enforces no timeout: every wait has its own deadline */
    tcase_set_timeout(tc, 540);
    if (kube_dir)
        tcase_add_test(tc, a_job_waits_for_a_stopped_api_server);
    else
        fprintf(stderr, "no AIDC_TEST_K8S_DIR: the test that stops the API server is skipped\n");
    tcase_add_test(tc, delivery_is_exactly_once_across_a_crash); /* kills aidcd: last */
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* the crash test waits for aidcd itself */
}
