/* kubejob.c - the Kubernetes backend's data (see kubejob.h). */
#include "kubejob.h"

#include "kubeapp.h"

#include "../lib/gputype.h"

#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../storage/jobmount.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DNS_LABEL_MAX 63
/* KUBEAPP_PORT as an env value */
#define TEXT_OF(x) #x
#define TEXT(x) TEXT_OF(x)

/* ---- names --------------------------------------------------------------------------- */

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most max */
static bool dns_label(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
            return false;
    return true;
}

/* DNS subdomain: labels joined by '.', at most 253 */
static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    char *copy = xstrdup(s), *save = NULL;
    bool ok = s[0] != '.' && s[n - 1] != '.' && !strstr(s, "..");
    for (char *p = strtok_r(copy, ".", &save); ok && p; p = strtok_r(NULL, ".", &save))
        ok = dns_label(p, DNS_LABEL_MAX);
    free(copy);
    return ok;
}

/* a label value: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 */
static bool label_value(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > DNS_LABEL_MAX || !isalnum((unsigned char)s[0]) ||
        !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
            return false;
    return true;
}

/* a qualified name: [prefix/]name, prefix a DNS subdomain, name a label value */
static bool qualified_name(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash)
        return label_value(s);
    char *prefix = xstrndup(s, (size_t)(slash - s));
    bool ok = dns_subdomain(prefix) && label_value(slash + 1);
    free(prefix);
    return ok;
}

/* template with {tenant} and {project} replaced (malloc'd) */
static char *expand(const char *tpl, const char *tenant, const char *project)
{
    struct sbuf b = SBUF_INIT;
    for (const char *p = tpl; *p;) {
        if (strncmp(p, "{tenant}", 8) == 0) {
            sbuf_puts(&b, tenant);
            p += 8;
        } else if (strncmp(p, "{project}", 9) == 0) {
            sbuf_puts(&b, project);
            p += 9;
        } else {
            sbuf_putc(&b, *p++);
        }
    }
    return sbuf_steal(&b);
}

/* ---- options ------------------------------------------------------------------------- */

static bool str_opt(json_t *o, const char *key, const char *def, bool (*valid)(const char *),
                    const char *what, char *err, size_t errsz)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return !def || json_object_set_new(o, key, json_string(def)) == 0;
    if (!json_is_string(v) || !valid(json_string_value(v))) {
        snprintf(err, errsz, "options.%s must be %s", key, what);
        return false;
    }
    return true;
}

/* a template of a name: with one-letter slugs it must be a DNS label (the real slugs are
 * checked when a job is submitted: a name that grows too long fails that job, named) */
static bool template_ok(const char *s)
{
    /* one for all, or one per tenant: {project} alone would make tenants with a project of
     * the same name share it */
    if (strlen(s) > DNS_LABEL_MAX || (strstr(s, "{project}") && !strstr(s, "{tenant}")))
        return false;
    char *worst = expand(s, "t", "p"); /* the characters around the placeholders */
    bool ok = dns_label(worst, DNS_LABEL_MAX);
    free(worst);
    return ok;
}

static bool abs_path(const char *s)
{
    return s[0] == '/' && strlen(s) < 4096;
}

static bool map_opt(json_t *o, const char *key, bool (*key_ok)(const char *),
                    bool (*value_ok)(const char *), const char *what, char *err, size_t errsz)
{
    json_t *m = json_object_get(o, key);
    if (!m)
        return true;
    const char *k;
    json_t *v;
    bool ok = json_is_object(m) && json_object_size(m) <= 256;
    json_object_foreach(ok ? m : NULL, k, v) {
        if (!key_ok(k) || !json_is_string(v) || !value_ok(json_string_value(v))) {
            ok = false;
            break;
        }
    }
    if (!ok)
        snprintf(err, errsz, "options.%s must be %s", key, what);
    return ok;
}

static bool is_priority(const char *s)
{
    return strcmp(s, "high") == 0 || strcmp(s, "normal") == 0 || strcmp(s, "low") == 0;
}

static bool int_opt(const json_t *o, const char *key, long min, long max, char *err, size_t errsz)
{
    json_t *v = json_object_get(o, key);
    if (v && (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)) {
        snprintf(err, errsz, "options.%s must be an integer from %ld to %ld", key, min, max);
        return false;
    }
    return true;
}

/* options.storage: {"claim": "<PersistentVolumeClaim>"}, the storage spaces in each namespace */
static bool storage_opt(const json_t *o, char *err, size_t errsz)
{
    const json_t *st = json_object_get(o, "storage");
    const char *claim = json_string_value(json_object_get(st, "claim"));
    if (st && (!json_is_object(st) || json_object_size(st) != 1 || !claim || !dns_subdomain(claim))) {
        snprintf(err, errsz, "options.storage must be {\"claim\": \"name\"}: the "
                             "PersistentVolumeClaim holding the storage spaces in a job's namespace");
        return false;
    }
    return true;
}

/* how aidcd's relay reaches a session's Service (backends/kubeapp.h) */
static bool session_host_ok(const char *s)
{
    return strcmp(s, "dns") == 0 || strcmp(s, "cluster_ip") == 0;
}

bool kubejob_check_options(json_t *o, char *err, size_t errsz)
{
    static const char *const known[] = {
        "namespace",    "gpu_resource",  "gpu_type_label", "gpu_types",
        "priority_classes", "queue_name", "scheduler_name", "ca_file",
        "timeout_seconds", "page_size",  "max_time_limit_minutes", "storage",
        "session_host", NULL};
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        bool ok = false;
        for (size_t i = 0; known[i]; i++)
            ok |= strcmp(key, known[i]) == 0;
        if (!ok) {
            snprintf(err, errsz, "options.%.64s is not an option of the kubernetes backend", key);
            return false;
        }
    }
    return str_opt(o, "namespace", KUBE_DEFAULT_NAMESPACE, template_ok,
                   "a namespace, {tenant} and {project} standing for slugs (aidc-{tenant})",
                   err, errsz) &&
           str_opt(o, "gpu_resource", KUBE_DEFAULT_GPU_RESOURCE, qualified_name,
                   "a resource name (nvidia.com/gpu)", err, errsz) &&
           str_opt(o, "gpu_type_label", KUBE_DEFAULT_GPU_LABEL, qualified_name,
                   "a node label (nvidia.com/gpu.product)", err, errsz) &&
           map_opt(o, "gpu_types", gputype_valid, label_value,
                   "an object of GPU type -> value of the GPU label (\"a100\": "
                   "\"NVIDIA-A100-SXM4-80GB\")", err, errsz) &&
           map_opt(o, "priority_classes", is_priority, dns_subdomain,
                   "an object of high/normal/low -> PriorityClass name", err, errsz) &&
           str_opt(o, "queue_name", NULL, template_ok,
                   "a Kueue LocalQueue name, {tenant} and {project} standing for slugs", err,
                   errsz) &&
           str_opt(o, "scheduler_name", NULL, dns_subdomain, "a scheduler's name (volcano)", err,
                   errsz) &&
           str_opt(o, "ca_file", NULL, abs_path, "the absolute path of a PEM CA bundle", err,
                   errsz) &&
           int_opt(o, "timeout_seconds", 1, 300, err, errsz) &&
           int_opt(o, "page_size", 1, 5000, err, errsz) &&
           int_opt(o, "max_time_limit_minutes", 1, 525600, err, errsz) &&
           storage_opt(o, err, errsz) &&
           str_opt(o, "session_host", "dns", session_host_ok,
                   "dns (the Service's name in the cluster DNS) or cluster_ip (its address)", err,
                   errsz);
}

bool kubejob_namespace(const json_t *o, const char *tenant, const char *project, char *out,
                       size_t n, char *err, size_t errsz)
{
    const char *tpl = json_string_value(json_object_get(o, "namespace"));
    char *ns = expand(tpl ? tpl : KUBE_DEFAULT_NAMESPACE, tenant, project ? project : "");
    bool ok = dns_label(ns, DNS_LABEL_MAX) && strlen(ns) < n;
    if (ok)
        snprintf(out, n, "%s", ns);
    else
        snprintf(err, errsz, "namespace \"%.80s\" (options.namespace for tenant %s) is no DNS "
                             "label of at most 63 characters", ns, tenant);
    free(ns);
    return ok;
}

void kubejob_name(const char *run_key, char *out, size_t n)
{
    snprintf(out, n, "aidc-%s", run_key);
    for (char *p = out; *p; p++)
        *p = (char)tolower((unsigned char)*p);
}

/* ---- the Job ------------------------------------------------------------------------- */

static json_t *labels(const json_t *o, const struct backend_job *job)
{
    /* the run key is <job id> or <job id>-r<N> */
    char jid[37];
    snprintf(jid, sizeof jid, "%.36s", job->id);
    json_t *l = json_pack("{s:s, s:s, s:s, s:s, s:s}", KUBE_LABEL_MANAGED, "aidc", KUBE_LABEL_RUN,
                          job->id, KUBE_LABEL_JOB, jid, KUBE_LABEL_TENANT, job->tenant,
                          KUBE_LABEL_PROJECT, job->project);
    const char *queue = json_string_value(json_object_get(o, "queue_name"));
    if (l && queue) {
        char *q = expand(queue, job->tenant, job->project);
        json_object_set_new(l, KUBE_LABEL_QUEUE, json_string(q));
        free(q);
    }
    if (l && job->array_count > 0) /* its tasks are reported (kubejob_report_tasks) */
        json_object_set_new(l, KUBE_LABEL_ARRAY, json_sprintf("%d", job->array_count));
    return l;
}

/*
 * s with every '$' doubled (new reference): Kubernetes expands $(VAR) in a
 * container's command, args and env values and turns $$ into $; a job's own
 * text reaches its shell as written.
 */
static json_t *literal(const char *s)
{
    struct sbuf b = SBUF_INIT;
    for (const char *p = s ? s : ""; *p; p++) {
        if (*p == '$')
            sbuf_putc(&b, '$');
        sbuf_putc(&b, *p);
    }
    json_t *v = json_string(sbuf_str(&b));
    sbuf_free(&b);
    return v;
}

static json_t *env_list(const struct backend_job *job)
{
    json_t *env = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)job->env, k, v) {
        if (job->app && strcmp(k, "PORT") == 0)
            continue; /* a session's app listens where its Service sends: set below */
        json_array_append_new(env, json_pack("{s:s, s:o}", "name", k, "value",
                                             literal(json_string_value(v))));
    }
    char jid[37];
    snprintf(jid, sizeof jid, "%.36s", job->id);
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", "AIDC_JOB_ID", "value", jid));
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", "AIDC_RUN", "value", job->id));
    /* a job without GPUs sees none, whatever its image sets (CUDA images say "all") and
     * wherever the NVIDIA runtime is the node's default */
    if (job->gpus <= 0)
        json_array_append_new(env, json_pack("{s:s, s:s}", "name", "NVIDIA_VISIBLE_DEVICES",
                                             "value", "void"));
    if (job->app)
        json_array_append_new(env, json_pack("{s:s, s:s}", "name", "PORT", "value",
                                             TEXT(KUBEAPP_PORT)));
    /* an Indexed Job's pod learns its index from its annotation (JOB_COMPLETION_INDEX) */
    for (int a = 0; job->array_count > 0 && a < 2; a++)
        json_array_append_new(
            env,
            json_pack("{s:s, s:{s:{s:s}}}", "name", a ? "SLURM_ARRAY_TASK_ID" : "AIDC_ARRAY_INDEX",
                      "valueFrom", "fieldRef", "fieldPath",
                      "metadata.annotations['batch.kubernetes.io/job-completion-index']"));
    return env;
}

/* requests = limits: the pod gets exactly what aidc admitted (Guaranteed QoS) */
static json_t *resources(const json_t *o, const struct backend_job *job)
{
    json_t *r = json_object();
    char buf[32];
    if (job->cpus > 0) {
        snprintf(buf, sizeof buf, "%d", job->cpus);
        json_object_set_new(r, "cpu", json_string(buf));
    }
    if (job->memory_gib > 0) {
        snprintf(buf, sizeof buf, "%dGi", job->memory_gib);
        json_object_set_new(r, "memory", json_string(buf));
    }
    if (job->gpus > 0) {
        snprintf(buf, sizeof buf, "%d", job->gpus);
        json_object_set_new(r, json_string_value(json_object_get(o, "gpu_resource")), json_string(buf));
    }
    return json_pack("{s:O, s:o}", "requests", r, "limits", r);
}

#define STORAGE_VOLUME "aidc-storage"

/*
 * The job's storage spaces (storage/jobmount.h) into container and pod: one
 * volume of options.storage.claim, each space a volumeMount of its subPath
 * (<tenant>/<kind dir>/<name>) at its fixed path, datasets read-only, and
 * the variables that say where. false with err when the job cannot have them.
 */
static bool mount_spaces(const json_t *o, const struct backend_job *job, json_t *container,
                         json_t *pod, char *err, size_t errsz)
{
    struct jobmount m[JOBMOUNT_MAX];
    int n = jobmount_parse(job->mounts, job->tenant, job->project, job->user, m, err, errsz);
    const char *claim =
        json_string_value(json_object_get(json_object_get(o, "storage"), "claim"));
    if (n > 0 && !claim)
        snprintf(err, errsz, "the job mounts storage spaces, but this Kubernetes cluster has no "
                             "options.storage.claim (the PersistentVolumeClaim holding them)");
    if (n <= 0 || !claim)
        return n == 0;
    json_t *mounts = json_array(), *env = json_object();
    for (int i = 0; i < n; i++)
        json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:b}", "name", STORAGE_VOLUME,
                                                "mountPath", m[i].target, "subPath", m[i].rel,
                                                "readOnly", m[i].read_only));
    json_object_set_new(container, "volumeMounts", mounts);
    jobmount_env(m, (size_t)n, NULL, env);
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v)
        json_array_append_new(json_object_get(container, "env"),
                              json_pack("{s:s, s:O}", "name", k, "value", v));
    json_decref(env);
    json_object_set_new(pod, "volumes",
                        json_pack("[{s:s, s:{s:s}}]", "name", STORAGE_VOLUME,
                                  "persistentVolumeClaim", "claimName", claim));
    return true;
}

json_t *kubejob_build(const json_t *o, const struct backend_job *job, const char *ns, char *err,
                      size_t errsz)
{
    if (!job->image) {
        snprintf(err, errsz, "a Kubernetes cluster runs jobs in containers: the job names no "
                             "image");
        return NULL;
    }
    if (job->nodes > 1) {
        snprintf(err, errsz, "a Kubernetes job of this backend runs on one node (%d asked)",
                 job->nodes);
        return NULL;
    }
    char name[64];
    kubejob_name(job->id, name, sizeof name);
    json_t *command = json_array();
    size_t ci;
    json_t *cv;
    json_array_foreach(job->command, ci, cv) json_array_append_new(command, literal(json_string_value(cv)));
    if (!job->command) {
        json_array_append_new(command, json_string("/bin/sh"));
        json_array_append_new(command, json_string("-c"));
        json_array_append_new(command, literal(job->script));
    }
    json_t *container = json_pack("{s:s, s:s, s:o, s:o, s:o}", "name", "main", "image",
                                  job->image, "command", command, "env", env_list(job),
                                  "resources", resources(o, job));
    if (job->app) /* what the session's Service sends to (backends/kubeapp.h) */
        json_object_set_new(container, "ports",
                            json_pack("[{s:s, s:i, s:s}]", "name", "app", "containerPort",
                                      KUBEAPP_PORT, "protocol", "TCP"));
    /* a job needs no API token of the cluster, nor every service's address in its env */
    json_t *pod = json_pack("{s:s, s:i, s:b, s:b, s:[o]}", "restartPolicy", "Never",
                            "terminationGracePeriodSeconds", job->grace_seconds,
                            "automountServiceAccountToken", 0, "enableServiceLinks", 0,
                            "containers", container);
    if (!mount_spaces(o, job, container, pod, err, errsz)) {
        json_decref(pod);
        return NULL;
    }
    const char *gpu_type = job->gpus > 0 ? job->gpu_type : NULL;
    if (gpu_type) {
        const char *value =
            json_string_value(json_object_get(json_object_get(o, "gpu_types"), gpu_type));
        json_object_set_new(pod, "nodeSelector",
                            json_pack("{s:s}", json_string_value(json_object_get(o, "gpu_type_label")),
                                      value ? value : gpu_type));
    }
    const char *pc = json_string_value(
        json_object_get(json_object_get(o, "priority_classes"), job->priority ? job->priority : ""));
    if (pc)
        json_object_set_new(pod, "priorityClassName", json_string(pc));
    const char *sched = json_string_value(json_object_get(o, "scheduler_name"));
    if (sched)
        json_object_set_new(pod, "schedulerName", json_string(sched));
    json_t *l = labels(o, job);
    /* finished Jobs are removed by the cluster a day later (servers 1.21+; the list aidc
     * reads every round stays short): aidc has recorded them by then */
    json_t *spec = json_pack("{s:i, s:i, s:{s:{s:O}, s:o}}", "backoffLimit", 0,
                             "ttlSecondsAfterFinished", 86400, "template", "metadata", "labels", l,
                             "spec", pod);
    if (job->time_limit_minutes > 0)
        json_object_set_new(spec, "activeDeadlineSeconds",
                            json_integer((json_int_t)job->time_limit_minutes * 60));
    if (job->array_count > 0) { /* one Indexed Job: a pod per index, max_parallel at once */
        json_object_set_new(spec, "completionMode", json_string("Indexed"));
        json_object_set_new(spec, "completions", json_integer(job->array_count));
        json_object_set_new(
            spec, "parallelism",
            json_integer(job->array_max_parallel > 0 ? job->array_max_parallel : job->array_count));
    }
    json_t *out = json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:o}", "apiVersion", "batch/v1", "kind",
                            "Job", "metadata", "name", name, "namespace", ns, "labels", l, "spec",
                            spec);
    if (!out)
        snprintf(err, errsz, "out of memory building the Job");
    return out;
}

/* ---- what a Job says ------------------------------------------------------------------ */

time_t kubejob_time(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!s)
        return 0;
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end || (*end != 'Z' && *end != '.'))
        return 0;
    return timegm(&tm);
}

/* The condition of type with status "True", or NULL (conditions are read by type). */
static const json_t *condition(const json_t *status, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && strcmp(t, type) == 0 && strcmp(s, "True") == 0)
            return c;
    }
    return NULL;
}

void kubejob_status(const json_t *job, struct backend_status *out)
{
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    const json_t *st = json_object_get(job, "status");
    out->started_at = kubejob_time(json_string_value(json_object_get(st, "startTime")));
    const json_t *done = condition(st, "Complete"), *failed = condition(st, "Failed");
    if (done) {
        out->state = BS_SUCCEEDED;
        out->exit_code = 0;
        out->finished_at = kubejob_time(json_string_value(json_object_get(st, "completionTime")));
        if (!out->finished_at)
            out->finished_at =
                kubejob_time(json_string_value(json_object_get(done, "lastTransitionTime")));
    } else if (failed) {
        out->state = BS_FAILED;
        out->finished_at =
            kubejob_time(json_string_value(json_object_get(failed, "lastTransitionTime")));
        const char *reason = json_string_value(json_object_get(failed, "reason"));
        const char *msg = json_string_value(json_object_get(failed, "message"));
        if (reason && strcmp(reason, "DeadlineExceeded") == 0)
            snprintf(out->reason, sizeof out->reason, "time limit (DeadlineExceeded)");
        else
            snprintf(out->reason, sizeof out->reason, "%.40s%s%.80s",
                     reason ? reason : "failed", msg ? ": " : "", msg ? msg : "");
    } else if (json_is_string(json_object_get(json_object_get(job, "metadata"),
                                              "deletionTimestamp"))) {
        out->state = BS_STOPPED;
    } else {
        /* a suspended Job (Kueue holds it) has no active pods: pending too. Servers that
         * count ready pods (1.24+) tell a running pod from one still waiting for its
         * node or image; 1.20 only counts active ones, waiting included */
        const json_t *ready = json_object_get(st, "ready");
        bool active = json_integer_value(json_is_integer(ready) ? ready
                                                                : json_object_get(st, "active")) > 0 &&
                      out->started_at;
        out->state = active && !condition(st, "Suspended") ? BS_RUNNING : BS_PENDING;
    }
    if (out->state != BS_RUNNING && out->state != BS_SUCCEEDED && out->state != BS_FAILED)
        out->started_at = out->state == BS_STOPPED ? out->started_at : 0;
}

/* ---- inventory ----------------------------------------------------------------------- */

long long kubejob_quantity(const char *s, bool gib)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0) || v > 1e18)
        return -1;
    static const struct {
        const char *suffix;
        double factor;
    } units[] = {{"Ki", 1024.0},     {"Mi", 1048576.0},     {"Gi", 1073741824.0},
                 {"Ti", 1099511627776.0}, {"Pi", 1125899906842624.0}, {"m", 1e-3},
                 {"k", 1e3},         {"M", 1e6},            {"G", 1e9},
                 {"T", 1e12},        {"P", 1e15},           {"", 1.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0) {
            double x = v * units[i].factor / (gib ? 1073741824.0 : 1.0);
            return x > 9e15 ? -1 : (long long)floor(x + 1e-9);
        }
    return -1;
}

static bool node_usable(const json_t *node)
{
    if (json_is_true(json_object_get(json_object_get(node, "spec"), "unschedulable")))
        return false;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, "Ready") == 0)
            return strcmp(json_string_value(json_object_get(c, "status")) ?
                              json_string_value(json_object_get(c, "status")) : "", "True") == 0;
    }
    return false; /* no Ready condition: not (yet) a working node */
}

/*
 * The aidc GPU type of a node label value: through options.gpu_types, else the
 * value itself when it is a GPU type as it stands - the job's nodeSelector
 * names the same value, and label selectors are case-sensitive (NVIDIA's
 * product labels, "NVIDIA-A100-SXM4-80GB", need gpu_types).
 */
static const char *gpu_type_of(const json_t *o, const char *value)
{
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(o, "gpu_types"), k, v)
        if (json_string_value(v) && strcmp(json_string_value(v), value) == 0)
            return k;
    return gputype_valid(value) ? value : NULL;
}

int kubejob_inventory_add(const json_t *o, const json_t *items, struct backend_resource *out,
                          size_t max, int n)
{
    const char *res = json_string_value(json_object_get(o, "gpu_resource"));
    const char *label = json_string_value(json_object_get(o, "gpu_type_label"));
    size_t i;
    json_t *node;
    json_array_foreach(items, i, node) {
        if (!node_usable(node))
            continue;
        const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
        long long cpu = kubejob_quantity(json_string_value(json_object_get(alloc, "cpu")), false);
        long long mem = kubejob_quantity(json_string_value(json_object_get(alloc, "memory")), true);
        long long gpus = kubejob_quantity(
            json_string_value(json_object_get(alloc, res ? res : KUBE_DEFAULT_GPU_RESOURCE)), false);
        if (cpu > 0)
            backend_resource_add(out, max, &n, "cpu", cpu);
        if (mem > 0)
            backend_resource_add(out, max, &n, "memory_gib", mem);
        const char *value = json_string_value(json_object_get(
            json_object_get(json_object_get(node, "metadata"), "labels"),
            label ? label : KUBE_DEFAULT_GPU_LABEL));
        char name[48];
        const char *type = value ? gpu_type_of(o, value) : NULL;
        if (gpus > 0 && type) {
            snprintf(name, sizeof name, "gpu:%.40s", type);
            backend_resource_add(out, max, &n, name, gpus);
        }
    }
    return n;
}

void kubejob_nodes_each(const json_t *o, const json_t *items,
                        void (*report)(void *arg, const struct backend_node *n), void *arg)
{
    const char *res = json_string_value(json_object_get(o, "gpu_resource"));
    const char *label = json_string_value(json_object_get(o, "gpu_type_label"));
    size_t i;
    json_t *node;
    json_array_foreach(items, i, node) {
        const json_t *md = json_object_get(node, "metadata");
        const char *name = json_string_value(json_object_get(md, "name"));
        if (!name)
            continue;
        const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
        long long gpus = kubejob_quantity(
            json_string_value(json_object_get(alloc, res ? res : KUBE_DEFAULT_GPU_RESOURCE)), false);
        const char *value = json_string_value(
            json_object_get(json_object_get(md, "labels"), label ? label : KUBE_DEFAULT_GPU_LABEL));
        const char *type = value ? gpu_type_of(o, value) : NULL;
        bool with_gpus = gpus > 0 && gpus <= 1024 && type;
        struct backend_node bn = {.name = name, .gpu_type = with_gpus ? type : "", .first = 0,
                                  .gpus = with_gpus ? (int)gpus : 0, .usable = node_usable(node)};
        report(arg, &bn);
    }
}

int kubejob_answer_err(const struct httpcall_answer *a, const char *what, char *err, size_t errsz)
{
    if (a->status >= 200 && a->status < 300)
        return 0;
    const char *msg = json_string_value(json_object_get(a->json, "message"));
    char m[300];
    snprintf(m, sizeof m, "%.280s", msg ? msg : (a->body ? a->body : ""));
    switch (a->status) {
    case 401:
        snprintf(err, errsz, "%s: 401, the API server refused the token (expired, revoked or "
                             "wrong: see the cluster's credentials_ref)", what);
        return AIDC_EFORBIDDEN;
    case 403:
        snprintf(err, errsz, "%s: 403, RBAC forbids it: %s", what, m);
        return AIDC_EFORBIDDEN;
    case 404:
        snprintf(err, errsz, "%s: 404, %s", what, m);
        return AIDC_ENOTFOUND;
    case 409:
        snprintf(err, errsz, "%s: 409, %s", what, m);
        return AIDC_ECONFLICT;
    case 400:
    case 422:
        snprintf(err, errsz, "%s: %ld, the API server refuses it: %s", what, a->status, m);
        return AIDC_EINVAL;
    default: /* 429, 5xx and anything odd: tried again later */
        snprintf(err, errsz, "%s: %ld%s%s", what, a->status, m[0] ? ", " : "", m);
        return AIDC_EUNAVAIL;
    }
}

/* Mark the indexes of a list like "0-2,4" (status.completedIndexes) below n. */
static void mark_indexes(const char *list, bool *done, int n)
{
    for (const char *p = list; p && *p;) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0)
            return;
        if (*end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            if (end == q || b < a)
                return;
        }
        for (long i = a; i <= b && i < n; i++)
            done[i] = true;
        p = *end == ',' ? end + 1 : NULL;
    }
}

void kubejob_report_tasks(const json_t *job, const char *id, const struct backend_status *bs,
                          void (*report)(void *arg, const char *backend_id, const char *run_key,
                                         const struct backend_status *status),
                          void *arg)
{
    const json_t *spec = json_object_get(job, "spec"), *st = json_object_get(job, "status");
    /* by aidc's label: servers before 1.21 keep no completionMode */
    const char *array = json_string_value(json_object_get(
        json_object_get(json_object_get(job, "metadata"), "labels"), KUBE_LABEL_ARRAY));
    json_int_t n = json_integer_value(json_object_get(spec, "completions"));
    if (!array || n <= 0 || n > 10000)
        return;
    bool *done = calloc((size_t)n, sizeof *done);
    if (!done)
        return;
    mark_indexes(json_string_value(json_object_get(st, "completedIndexes")), done, (int)n);
    struct backend_status ok = {
        .state = BS_SUCCEEDED, .exit_code = 0, .started_at = bs->started_at};
    for (int i = 0; i < (int)n; i++) {
        /* a Complete Job completed every index; a Failed one ended the rest */
        done[i] = done[i] || bs->state == BS_SUCCEEDED;
        if (!done[i] && bs->state != BS_FAILED)
            continue; /* still to run, or running: a Job tells no more of an index */
        char tid[200];
        snprintf(tid, sizeof tid, "%s_%d", id, i);
        report(arg, tid, "", done[i] ? &ok : bs);
    }
    free(done);
}
