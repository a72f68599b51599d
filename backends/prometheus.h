/*
 * prometheus.h - instant queries to a cluster's Prometheus (its HTTP API,
 * /api/v1/query) for the efficiency worker: DCGM exporter series of a job's
 * GPUs. The URL is an operator's setting (the cluster's options.metrics),
 * never a tenant's; still every call has timeouts, a capped answer and no
 * redirects (httpcall.h), and label values are escaped into PromQL.
 */
#ifndef AIDC_PROMETHEUS_H
#define AIDC_PROMETHEUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * Check a cluster's options.metrics: {"prometheus_url": "http(s)://...",
 * "job_label": "hpc_job"} (job_label optional, a Prometheus label name).
 * false with a reason in err.
 */
bool prometheus_metrics_check(const json_t *metrics, char *err, size_t errsz);

/*
 * The label matchers of a job's DCGM series into out ("{hpc_job=\"42\"}"):
 * label = backend_id for Slurm and the local executor; for Kubernetes the
 * pods of the Job its id "<namespace>/<name>" names (pod=~"<name>-.*"; ns
 * when the id has no namespace). -1 when the id cannot be named (or out is
 * too small).
 */
int prometheus_job_selector(char *out, size_t outsz, const char *kind, const char *label,
                            const char *backend_id, const char *ns);

/*
 * Evaluate promql at epoch second at on base_url: *found false when the
 * answer is an empty vector, else *value is its first sample. 0, or
 * AIDC_EUNAVAIL (unreachable, not 200, not a vector) with err set.
 */
int prometheus_scalar(const char *base_url, const char *promql, long long at, double *value,
                      bool *found, char *err, size_t errsz);

#endif
