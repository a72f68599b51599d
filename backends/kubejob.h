/*
 * kubejob.h - the Kubernetes backend's data, without I/O: a cluster's
 * options, the batch/v1 Job aidc creates for a run, what a Job's status
 * means to aidc, and a cluster's GPUs, cores and memory from its Nodes.
 * Pure functions over JSON, unit-tested over the API server's real answers.
 */
#ifndef AIDC_KUBEJOB_H
#define AIDC_KUBEJOB_H

#include "backend.h"
#include "httpcall.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define KUBE_DEFAULT_NAMESPACE "aidc-{tenant}"
#define KUBE_DEFAULT_GPU_RESOURCE "nvidia.com/gpu"
#define KUBE_DEFAULT_GPU_LABEL "nvidia.com/gpu.product"
/* labels on every Job (and its pods) aidc creates */
#define KUBE_LABEL_MANAGED "app.kubernetes.io/managed-by"
#define KUBE_LABEL_RUN "aidc.io/run"
#define KUBE_LABEL_JOB "aidc.io/job"
#define KUBE_LABEL_TENANT "aidc.io/tenant"
#define KUBE_LABEL_PROJECT "aidc.io/project"
#define KUBE_LABEL_QUEUE "kueue.x-k8s.io/queue-name"
#define KUBE_LABEL_ARRAY "aidc.io/array-count" /* a whole job array's Job: its task count */

/* Check and complete a kubernetes cluster's options in place (defaults added). */
bool kubejob_check_options(json_t *o, char *err, size_t errsz);
/*
 * The namespace of a job: options.namespace with {tenant} and {project}
 * replaced, into out. false when the result is no DNS label (err says why).
 */
bool kubejob_namespace(const json_t *o, const char *tenant, const char *project, char *out,
                       size_t n, char *err, size_t errsz);
/* The Job's name for a run key: "aidc-" + the run key (a DNS label). */
void kubejob_name(const char *run_key, char *out, size_t n);
/*
 * The batch/v1 Job for job (new reference), or NULL with err when the job
 * cannot run on Kubernetes as it is (no image, more than one node).
 */
json_t *kubejob_build(const json_t *o, const struct backend_job *job, const char *ns,
                      char *err, size_t errsz);
/* What a Job (an item of a JobList, or a GET) says about its run. */
void kubejob_status(const json_t *job, struct backend_status *out);
/*
 * The tasks of an Indexed Job (a whole job array, labelled KUBE_LABEL_ARRAY)
 * whose end it tells, each passed to report as "<id>_<index>": those in
 * status.completedIndexes succeeded (servers 1.21+ list them), all of them
 * when the Job is Complete; when it failed (bs), every other one failed with
 * it. Nothing for other Jobs.
 */
void kubejob_report_tasks(const json_t *job, const char *id, const struct backend_status *bs,
                          void (*report)(void *arg, const char *backend_id, const char *run_key,
                                         const struct backend_status *status),
                          void *arg);
/* "2026-12-02T08:00:00Z" -> time_t (0 when it is not such a time). */
time_t kubejob_time(const char *s);
/*
 * A quantity of the API ("8", "7500m", "32Gi", "33554432Ki", "1e3") in
 * units (cores, or GiB with gib): -1 when it is no quantity. Rounds down.
 */
long long kubejob_quantity(const char *s, bool gib);
/*
 * Add the usable Nodes of a NodeList's items (not unschedulable, Ready) to
 * out: "gpu:<type>" by the GPU label (through options.gpu_types), "cpu",
 * "memory_gib". n is the count so far; returns the new count.
 */
int kubejob_inventory_add(const json_t *o, const json_t *items, struct backend_resource *out,
                          size_t max, int n);

/*
 * Each Node of a NodeList's items to report: its GPUs (the GPU resource of
 * its allocatable, of the type of its GPU label), usable as
 * kubejob_inventory_add counts it. Indexes are the device plugin's, 0 up.
 */
void kubejob_nodes_each(const json_t *o, const json_t *items,
                        void (*report)(void *arg, const struct backend_node *n), void *arg);

/*
 * The aidc_err of an API server's answer (0 for 2xx), err naming what and
 * the server's message (a Status object's, else the body's start): each
 * status deliberately - 401/403 forbidden, 404, 409, 400/422 invalid, the
 * rest (429, 5xx, anything odd) unavailable, so tried again later.
 */
int kubejob_answer_err(const struct httpcall_answer *a, const char *what, char *err, size_t errsz);

#endif
