/*
 * kubernetes.h - the Kubernetes backend: each run is a batch/v1 Job on the
 * cluster's API server (libcurl over HTTPS, a service-account bearer token
 * named by credentials_ref, the cluster's CA bundle in options.ca_file).
 * aidc decides admission; Kubernetes (or Kueue/Volcano in front of it)
 * places and runs the pod.
 *
 * A cluster: {"kind":"kubernetes","endpoint":"https://api.example:6443",
 * "credentials_ref":"file:/etc/aidc/k8s.token","options":{"ca_file":
 * "/etc/aidc/k8s-ca.pem","namespace":"aidc-{tenant}", ...}} (the options in
 * docs/kubernetes.md; the Job's data in backends/kubejob.h).
 *
 * The Job is named after the run key ("aidc-<job id>[-r<N>]"), so creating
 * it twice answers 409 AlreadyExists: a submit that reached the API server
 * before aidcd died is adopted, never run twice.
 */
#ifndef AIDC_KUBERNETES_H
#define AIDC_KUBERNETES_H

#include "backend.h"

extern const struct backend_ops backend_kubernetes;

#endif
