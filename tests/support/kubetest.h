/*
 * kubetest.h - helpers of the tests on a real Kubernetes API server
 * (tests/http/test_kubernetes*.c; shared/scripts/k8s-up.sh or deploy/k8s-up.sh
 * runs kube-apiserver 1.20 with no scheduler, kubelet or job controller):
 * its coordinates from the environment, the API called directly (to check
 * what aidc made there), namespaces and Nodes made for a test, and the job
 * controller played by writing a Job's status subresource; and the fixture
 * those programs share: aidcd with cluster "k8s" on the API server, this
 * run's tenants, namespaces and Nodes, waits for what aidc does, and the
 * clean-up after each test.
 *
 * The API server keeps its state across test runs and may be shared with
 * other runs at the same time: a test names what it makes uniquely (by pid)
 * and removes it at the end.
 */
#ifndef AIDC_TEST_KUBETEST_H
#define AIDC_TEST_KUBETEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/*
 * From AIDC_TEST_K8S_URL (https://127.0.0.1:6443), AIDC_TEST_K8S_TOKEN (a
 * bearer token of group system:masters), AIDC_TEST_K8S_CA (the PEM file that
 * signs the server's certificate) and, optional, AIDC_TEST_K8S_DIR (the
 * k8s-up.sh state directory: the tests that stop and start the API server
 * need it; NULL without).
 */
extern const char *kube_url, *kube_token, *kube_ca, *kube_dir;

/* Read the variables; exit 77 (skipped) without AIDC_TEST_K8S_URL, 1 when the others miss. */
void kubetest_env(void);

/*
 * One call to the API server: method path (below the URL, query included),
 * body (NULL: none) sent as content_type (NULL: application/json). The
 * answer parsed (new reference; NULL when it is not JSON) and its status in
 * *status (0 when no answer came: the server is down). Never fails the test.
 */
json_t *kube_call(const char *method, const char *path, const char *body,
                  const char *content_type, long *status);
/* As kube_call, failing the test unless the status is want; the answer (new reference). */
json_t *kube_ok(const char *method, const char *path, const char *body, const char *content_type,
                long want);

/* Create namespace ns (one that exists already is fine). */
void kube_namespace_create(const char *ns);
/*
 * Delete namespace ns with what it holds (one that is gone already is fine).
 * Never fails the test (for tear-downs): false, said on stderr, when it did not go.
 */
bool kube_namespace_delete(const char *ns);

/*
 * A Node name with labels (JSON object text, may be NULL), unschedulable or
 * not, and its status as a kubelet would write it: capacity = allocatable =
 * {gpu_resource: gpus, cpu, memory} (gpus NULL: none) and a Ready condition
 * "True" or "False".
 */
void kube_node_create(const char *name, const char *labels_json, bool unschedulable,
                      const char *gpu_resource, const char *gpus, const char *cpu,
                      const char *memory, bool ready);
/* Delete Node name (one that is gone already is fine); as kube_namespace_delete. */
bool kube_node_delete(const char *name);
/* The NodeList's items (new reference). */
json_t *kube_nodes(void);

/* "2026-12-02T08:00:00Z" of t (an fmt() buffer). */
const char *kube_time(time_t t);

/*
 * The Job "namespace/name" (aidc's backend_job_id) as the API server has it
 * (new reference), or NULL when it answers 404; any other answer fails the test.
 */
json_t *kube_job_get(const char *backend_id);
/* The Jobs of namespace ns (NULL: all namespaces) with labelSelector selector (items, new reference). */
json_t *kube_jobs_labelled(const char *ns, const char *selector);
/*
 * Play the job controller: merge-patch the Job's status subresource with
 * status_json (the object under "status").
 */
void kube_job_status(const char *backend_id, const char *status_json);
/* ... a started Job: {"startTime": start, "active": 1} */
void kube_job_running(const char *backend_id, time_t start);
/* ... a Job that succeeded: started at start, Complete at done */
void kube_job_complete(const char *backend_id, time_t start, time_t done);
/* ... a Job that failed at when with reason (BackoffLimitExceeded, DeadlineExceeded) and message */
void kube_job_failed(const char *backend_id, time_t start, time_t when, const char *reason,
                     const char *message);

/* Whether the API server answers /readyz with 200. */
bool kube_ready(void);
/* Run deploy/<script> (k8s-down.sh, k8s-up.sh) for kube_dir; its exit status. */
int kube_script(const char *script);

/* ---- the fixture of tests/http/test_kubernetes*.c ---------------------------------------- */

/* The cluster kubetest_cluster_ready registers, and how long the waits below wait. */
#define KUBETEST_CL     "k8s"
#define KUBETEST_WAIT_S 60
/* The public image kubetest_setup registers (jobs name it), and its digest. */
#define KUBETEST_IMAGE_REPO "aidc-test/trainer"
#define KUBETEST_IMAGE_TAG  "v1"
#define KUBETEST_DIGEST \
    "sha256:abababababababababababababababababababababababababababababababab"
/* The GPUs of this run's Nodes: resource name and product label (options' defaults). */
#define KUBETEST_GPU_RES   "nvidia.com/gpu"
#define KUBETEST_GPU_LABEL "nvidia.com/gpu.product"

/*
 * This run's names (kubetest_setup): the GPU product label value of its Nodes
 * ("AIDC-TEST-<pid>-<tag>", mapped to "a100" through options.gpu_types, so
 * other runs' Nodes never count as a100) and the Nodes' names (ready, ready,
 * cordoned, NotReady; kubetest_nodes makes them).
 */
extern char kube_gpu_value[48];
extern char kube_node[4][64];
/* The environment aidcd runs with (NULL-terminated; to start it again with). */
extern const char *const *kube_aidcd_env;

/*
 * Name this run uniquely (pid and time: the API server outlives runs, and a
 * pid comes back), start aidcd as harness_setup(name, ...) with the workers
 * quick (sync and admission every 200 ms), the API token in
 * AIDC_TEST_K8S_TOKEN_FOR_AIDCD and extra_env (NULL-terminated, may be NULL)
 * added, register the public image, and have what the run makes on the API
 * server (kubetest_tenant's namespaces, kubetest_nodes' Nodes) deleted at
 * exit, also when the set-up fails half-way (Check runs no tear-down then).
 */
void kubetest_setup(const char *name, const char *const *extra_env);
/*
 * Tenant letter of this run: its slug ("k<pid>t<tag><letter>") into
 * slug[slugsz] and its namespace under options.namespace ("aidc-<slug>") into
 * ns[nssz]; the namespace is created when make_namespace (else the tenant's
 * jobs find none) and deleted at exit either way.
 */
void kubetest_tenant(char letter, bool make_namespace, char *slug, size_t slugsz, char *ns,
                     size_t nssz);
/*
 * This run's Nodes, labelled with kube_gpu_value: kube_node[0] and [1] ready
 * with 4 GPUs, 32 cores and 128Gi each (8 a100 in all); with unusable_too also
 * [2] cordoned and [3] NotReady, with 4 GPUs, 1000 cores and 4000Gi each, which
 * must not count.
 */
void kubetest_nodes(bool unusable_too);
/*
 * As the admin: register cluster name (kind kubernetes, the API server's URL)
 * with credentials_ref and options: ca_file, namespace "aidc-{tenant}",
 * gpu_types {"a100": kube_gpu_value}, priority_classes {"high": "aidc-high"},
 * queue_name "{tenant}-q", scheduler_name "volcano", page_size 2.
 */
void kubetest_register_cluster(const char *name, const char *credentials_ref);
/* Register KUBETEST_CL with aidcd's token and wait until it is healthy with 8 a100. */
void kubetest_cluster_ready(void);
/* The cluster as aidc shows it (new reference). */
json_t *kubetest_cluster_get(const char *name);
/* The total of resource res ("gpu:a100", "cpu") in the cluster's inventory (0: none). */
long long kubetest_total(const json_t *cluster, const char *res);

/*
 * After each test (Check's checked tear-down, which runs also when the test
 * failed): what a failed test left active ends before the next test starts.
 * Brings back aidcd or the API server when a test left them down.
 */
void kubetest_settle(void);
/* The unchecked tear-down: aidcd and the API server back if need be, then harness_teardown. */
void kubetest_teardown(void);

/*
 * A job body for project on cluster KUBETEST_CL with the public image, sleeping,
 * limited to minutes (an fmt() buffer).
 */
const char *kubetest_job_body(const char *project, const char *name, int gpus, int minutes);
/* Wait until the job was handed to the cluster (pending); its backend_job_id (malloc'd). */
char *kubetest_wait_delivered(const char *token, const char *tenant, const char *id);
/* The backend_job_id aidc must give a run: "<namespace>/aidc-<run key>" (an fmt() buffer). */
const char *kubetest_bid_want(const char *ns, const char *run_key);
/*
 * The audit events action of job id, as [{outcome, status, details}] (want of
 * them at least, waiting up to KUBETEST_WAIT_S); new reference.
 */
json_t *kubetest_audit_events(const char *action, const char *id, size_t want);
/* How many Jobs carry label aidc.io/job=id, in any namespace. */
size_t kubetest_job_count(const char *id);
/* Complete the Job bid of a delivered job and wait until aidc says succeeded. */
void kubetest_complete(const char *token, const char *tenant, const char *id, const char *bid);

#endif
