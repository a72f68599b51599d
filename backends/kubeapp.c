/* kubeapp.c - a Kubernetes session's Service (see kubeapp.h). */
#include "kubeapp.h"

#include "../lib/err.h"
#include "kubejob.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

/* the run's pods: the labels its Job's pod template carries (kubejob_build) */
static json_t *selector(const char *run_key)
{
    return json_pack("{s:s, s:s}", KUBE_LABEL_MANAGED, "aidc", KUBE_LABEL_RUN, run_key);
}

json_t *kubeapp_service(const struct backend_job *job, const char *ns, const char *owner_uid)
{
    char name[64], jid[37];
    kubejob_name(job->id, name, sizeof name);
    snprintf(jid, sizeof jid, "%.36s", job->id);
    json_t *md =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "name", name, "namespace", ns,
                  "labels", KUBE_LABEL_MANAGED, "aidc", KUBE_LABEL_RUN, job->id, KUBE_LABEL_JOB,
                  jid, KUBE_LABEL_TENANT, job->tenant, KUBE_LABEL_PROJECT, job->project);
    /* blockOwnerDeletion false: deleting the Job never waits for its Service */
    if (md && owner_uid && owner_uid[0])
        json_object_set_new(md, "ownerReferences",
                            json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", "batch/v1",
                                      "kind", "Job", "name", name, "uid", owner_uid, "controller",
                                      0, "blockOwnerDeletion", 0));
    /* no readiness probe in the pod: it is ready (and selected) once its container runs;
     * the relay tells a port nobody listens on yet from an app that answers */
    return json_pack("{s:s, s:s, s:o, s:{s:s, s:o, s:[{s:s, s:s, s:i, s:i}]}}", "apiVersion", "v1",
                     "kind", "Service", "metadata", md, "spec", "type", "ClusterIP", "selector",
                     selector(job->id), "ports", "name", "app", "protocol", "TCP", "port",
                     KUBEAPP_PORT, "targetPort", KUBEAPP_PORT);
}

bool kubeapp_service_ours(const json_t *svc, const char *run_key)
{
    const json_t *l = json_object_get(json_object_get(svc, "metadata"), "labels");
    const char *managed = json_string_value(json_object_get(l, KUBE_LABEL_MANAGED));
    const char *run = json_string_value(json_object_get(l, KUBE_LABEL_RUN));
    json_t *want = selector(run_key);
    /* exactly the run's pods: a selector of fewer labels would take others' too */
    bool ok = want && managed && run && strcmp(managed, "aidc") == 0 && strcmp(run, run_key) == 0 &&
              json_equal(json_object_get(json_object_get(svc, "spec"), "selector"), want);
    json_decref(want);
    return ok;
}

/* The Service's port KUBEAPP_PORT (to the pod's KUBEAPP_PORT), or false. */
static bool port_ok(const json_t *spec)
{
    const json_t *p = json_array_get(json_object_get(spec, "ports"), 0);
    return json_array_size(json_object_get(spec, "ports")) == 1 &&
           json_integer_value(json_object_get(p, "port")) == KUBEAPP_PORT &&
           json_integer_value(json_object_get(p, "targetPort")) == KUBEAPP_PORT;
}

int kubeapp_endpoint(const json_t *svc, const char *run_key, const char *how,
                     struct backend_endpoint *out, char *err, size_t errsz)
{
    memset(out, 0, sizeof *out);
    const json_t *md = json_object_get(svc, "metadata"), *spec = json_object_get(svc, "spec");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!name || !ns || !kubeapp_service_ours(svc, run_key) || !port_ok(spec)) {
        snprintf(err, errsz, "Service %.63s/%.63s is not the one aidc made for run %s",
                 ns ? ns : "", name ? name : "", run_key);
        return AIDC_EINVAL;
    }
    if (how && strcmp(how, "cluster_ip") == 0) {
        const char *ip = json_string_value(json_object_get(spec, "clusterIP"));
        unsigned char buf[sizeof(struct in6_addr)];
        if (!ip || !ip[0])
            return AIDC_ENOTFOUND; /* not allocated yet */
        if (strlen(ip) >= sizeof out->host ||
            (inet_pton(AF_INET, ip, buf) != 1 && inet_pton(AF_INET6, ip, buf) != 1)) {
            snprintf(err, errsz, "Service %s/%s's clusterIP \"%.64s\" is no IP address", ns, name,
                     ip);
            return AIDC_EINVAL;
        }
        snprintf(out->host, sizeof out->host, "%s", ip);
    } else {
        /* names the API server accepted are DNS labels: the host is one */
        int w = snprintf(out->host, sizeof out->host, "%s.%s.svc", name, ns);
        if (w < 0 || (size_t)w >= sizeof out->host) {
            memset(out, 0, sizeof *out);
            snprintf(err, errsz, "Service %.63s/%.63s: its name is too long for a host", ns, name);
            return AIDC_EINVAL;
        }
    }
    out->port = KUBEAPP_PORT;
    return 0;
}
