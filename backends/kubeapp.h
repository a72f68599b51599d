/*
 * kubeapp.h - the Kubernetes backend's side of interactive sessions
 * (backend_job.app), without I/O: each session's run gets a Service of its
 * own next to its Job - ClusterIP, named like the Job ("aidc-<run key>", a
 * DNS-1035 label), selecting the run's pod by its labels, port 8888 (the
 * container's PORT and containerPort) - and aidcd's relay connects to that
 * Service: "<name>.<namespace>.svc" (aidcd in the cluster, its DNS) or its
 * clusterIP (options.session_host "cluster_ip": aidcd outside the cluster
 * DNS, with a route to Service addresses).
 *
 * The Service is owned by its Job (ownerReferences), so the garbage
 * collector removes it with the Job whoever deletes that (ttlSecondsAfter-
 * Finished, an administrator); aidc's own stops delete it as well.
 */
#ifndef AIDC_KUBEAPP_H
#define AIDC_KUBEAPP_H

#include "backend.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Where a session's app listens in its pod, and the port of its Service. */
#define KUBEAPP_PORT 8888

/*
 * The v1 Service of job's session in namespace ns (new reference), owned
 * by the Job of that name with uid owner_uid (NULL or "": not owned).
 */
json_t *kubeapp_service(const struct backend_job *job, const char *ns, const char *owner_uid);
/*
 * Whether svc (as the API server answers it) is the Service kubeapp_service
 * made for run_key: aidc's labels, and a selector of that run's pods only.
 */
bool kubeapp_service_ours(const json_t *svc, const char *run_key);
/*
 * Where run_key's app answers, from its Service svc: how is
 * options.session_host ("dns", "cluster_ip"). 0; AIDC_ENOTFOUND while the
 * Service has no clusterIP yet; AIDC_EINVAL with err when svc is not the
 * run's (kubeapp_service_ours) or its address is none.
 */
int kubeapp_endpoint(const json_t *svc, const char *run_key, const char *how,
                     struct backend_endpoint *out, char *err, size_t errsz);

#endif
