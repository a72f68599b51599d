/*
 * kubetest.h - helpers of the tests on a real Kubernetes API server
 * (tests/http/test_kubernetes.c; shared/scripts/k8s-up.sh or deploy/k8s-up.sh
 * runs kube-apiserver 1.20 with no scheduler, kubelet or job controller):
 * its coordinates from the environment, the API called directly (to check
 * what aidc made there), namespaces and Nodes made for a test, and the job
 * controller played by writing a Job's status subresource.
 *
 * The API server keeps its state across test runs and may be shared with
 * other runs at the same time: a test names what it makes uniquely (by pid)
 * and removes it at the end.
 */
#ifndef AIDC_TEST_KUBETEST_H
#define AIDC_TEST_KUBETEST_H

#include <jansson.h>
#include <stdbool.h>
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

#endif
