/* kubernetes.c - the Kubernetes backend (see kubernetes.h). */
#include "kubernetes.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../lib/credref.h"
#include "httpcall.h"
#include "kubeapp.h"
#include "kubejob.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CONNECT_TIMEOUT 5
#define TIMEOUT 30
#define MAX_ANSWER (64L * 1024 * 1024)
#define PAGE 500
#define MAX_PAGES 10000
#define SELECTOR "labelSelector=app.kubernetes.io%2Fmanaged-by%3Daidc"
/* on a Node aidc cordoned for a GPU fault: its uncordon may undo only its own */
#define KUBE_ANNOTATION_CORDON "aidc.io/cordoned"

/* ---- calls --------------------------------------------------------------------------- */

/* The bearer token of the cluster (malloc'd), or NULL with err. */
static char *token_of(const struct backend_cluster *c, char *err, size_t errsz)
{
    unsigned char *secret = xmalloc(CREDREF_MAX + 1);
    size_t len = 0;
    char *token = NULL;
    if (credref_read(c->credentials_ref, secret, CREDREF_MAX + 1, &len, err, errsz) == 0) {
        while (len && (secret[len - 1] == '\n' || secret[len - 1] == '\r' || secret[len - 1] == ' '))
            len--;
        bool ok = len > 0;
        for (size_t i = 0; i < len && ok; i++)
            ok = secret[i] > ' ' && secret[i] < 127;
        if (ok)
            token = xstrndup((const char *)secret, len);
        else
            snprintf(err, errsz, "the token of %s is empty or not one printable line",
                     c->credentials_ref);
    }
    memset(secret, 0, CREDREF_MAX + 1);
    free(secret);
    return token;
}

/*
 * One call to the API server: method, path (below the endpoint), body (NULL:
 * none) sent as content_type. The answer whatever its status; *sent (when
 * not NULL) the request as sent, token redacted.
 */
static int kube_call(const struct backend_cluster *c, const char *method, const char *path,
                     const json_t *body, const char *content_type, struct httpcall_answer *a,
                     json_t **sent, char *err, size_t errsz)
{
    memset(a, 0, sizeof *a);
    if (sent)
        *sent = NULL;
    char *token = token_of(c, err, errsz);
    if (!token)
        return AIDC_EFORBIDDEN;
    size_t el = strlen(c->endpoint);
    char *url = xasprintf("%.*s%s", (int)(el && c->endpoint[el - 1] == '/' ? el - 1 : el),
                          c->endpoint, path);
    char *auth = xasprintf("Authorization: Bearer %s", token);
    memset(token, 0, strlen(token));
    free(token);
    char *ct = xasprintf("Content-Type: %s", content_type ? content_type : "application/json");
    const char *lines[] = {"Accept: application/json", auth, ct};
    char *json = body ? json_dumps(body, JSON_COMPACT) : NULL;
    int to = (int)json_integer_value(json_object_get(c->options, "timeout_seconds"));
    struct httpcall hc = {.method = method, .url = url, .headers = lines,
                          .nheaders = body ? 3 : 2, .body = json,
                          .ca_file = json_string_value(json_object_get(c->options, "ca_file")),
                          .connect_timeout_s = to > 0 && to < CONNECT_TIMEOUT ? to : CONNECT_TIMEOUT,
                          .timeout_s = to > 0 ? to : TIMEOUT, .max_answer = MAX_ANSWER};
    int e = 0;
    if (body && !json) {
        snprintf(err, errsz, "out of memory building a request");
        e = AIDC_EINTERNAL;
    } else {
        if (sent) /* before it goes: a call that times out was made all the same */
            *sent = backend_call_http(method, url, lines, hc.nheaders, body);
        e = httpcall_do(&hc, a, err, errsz);
    }
    free(json);
    memset(auth, 0, strlen(auth));
    free(auth);
    free(ct);
    free(url);
    return e;
}


/* "namespace/name" of a Job aidc made, split; false when it is not one. */
static bool split_id(const char *backend_id, char *ns, char *name)
{
    const char *slash = backend_id ? strchr(backend_id, '/') : NULL;
    if (!slash || slash == backend_id || slash - backend_id > 63 || strlen(slash + 1) > 63 ||
        !slash[1] || strchr(slash + 1, '/'))
        return false;
    for (const char *p = backend_id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '/'))
            return false;
    memcpy(ns, backend_id, (size_t)(slash - backend_id));
    ns[slash - backend_id] = '\0';
    strcpy(name, slash + 1);
    return true;
}

/* ---- submit -------------------------------------------------------------------------- */

/* The job's own environment values stay out of the audit trail (their names stay). */
static void hide_env(json_t *request, const json_t *job_env)
{
    json_t *containers = json_object_get(
        json_object_get(json_object_get(json_object_get(json_object_get(request, "body"), "spec"),
                                        "template"),
                        "spec"),
        "containers");
    size_t i, j;
    json_t *ct, *v;
    json_array_foreach(containers, i, ct) {
        json_array_foreach(json_object_get(ct, "env"), j, v) {
            const char *name = json_string_value(json_object_get(v, "name"));
            if (name && json_object_get(job_env, name))
                json_object_set_new(v, "value", json_string("[redacted]"));
        }
    }
}

/* A 409 on create: the run's Job exists (an earlier delivery), or a stranger has its name. */
/* Whether an existing Job is the one this run's earlier delivery made. */
static bool ours(const json_t *k8s_job, const struct backend_job *job)
{
    const json_t *md = json_object_get(k8s_job, "metadata");
    const json_t *l = json_object_get(md, "labels");
    const char *want[][2] = {{KUBE_LABEL_RUN, job->id},
                             {KUBE_LABEL_TENANT, job->tenant},
                             {KUBE_LABEL_PROJECT, job->project},
                             {KUBE_LABEL_MANAGED, "aidc"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *v = json_string_value(json_object_get(l, want[i][0]));
        if (!v || !want[i][1] || strcmp(v, want[i][1]) != 0)
            return false;
    }
    /* made after the run was admitted: not planted before it (a minute of clock skew) */
    time_t created = kubejob_time(json_string_value(json_object_get(md, "creationTimestamp")));
    return created && (job->since <= 0 || created >= job->since - 60);
}

/* metadata.uid of an answer into uid (n bytes; "" when there is none that fits) */
static void uid_of(const json_t *answer, char *uid, size_t n)
{
    const char *u = json_string_value(json_object_get(json_object_get(answer, "metadata"), "uid"));
    snprintf(uid, n, "%s", u && strlen(u) < n ? u : "");
}

static int adopt(const struct backend_cluster *c, const char *ns, const char *name,
                 const struct backend_job *job, struct backend_call *call, char *uid, size_t uidsz,
                 char *err, size_t errsz)
{
    char *path = xasprintf("/apis/batch/v1/namespaces/%s/jobs/%s", ns, name);
    struct httpcall_answer a;
    int e = kube_call(c, "GET", path, NULL, NULL, &a, NULL, err, errsz);
    if (!e)
        e = kubejob_answer_err(&a, path, err, errsz);
    if (!e && !ours(a.json, job)) {
        snprintf(err, errsz, "a Job %s/%s that aidc did not make for this run exists already",
                 ns, name);
        e = AIDC_EINVAL;
    }
    if (!e && call)
        call->adopted = true;
    if (!e)
        uid_of(a.json, uid, uidsz);
    httpcall_answer_free(&a);
    free(path);
    return e;
}

/* The record of a second request of one call (a session's Service) inside the first's. */
static void record_also(struct backend_call *call, json_t *sent)
{
    if (call && call->request && sent)
        json_object_set_new(call->request, "service", sent);
    else
        json_decref(sent);
}

/*
 * A session's Service (backends/kubeapp.h), owned by the Job of uid. One
 * that exists already is fine when it is this run's (an earlier delivery
 * made it); any other of its name is refused (AIDC_EINVAL).
 */
static int create_service(const struct backend_cluster *c, const char *ns, const char *name,
                          const struct backend_job *job, const char *uid,
                          struct backend_call *call, char *err, size_t errsz)
{
    json_t *body = kubeapp_service(job, ns, uid);
    char *path = xasprintf("/api/v1/namespaces/%s/services", ns);
    struct httpcall_answer a;
    json_t *sent = NULL;
    int e = body ? kube_call(c, "POST", path, body, NULL, &a, &sent, err, errsz) : AIDC_EINTERNAL;
    json_decref(body);
    record_also(call, sent);
    if (!e)
        e = kubejob_answer_err(&a, path, err, errsz);
    httpcall_answer_free(&a);
    if (e == AIDC_ECONFLICT) {
        char *one = xasprintf("%s/%s", path, name);
        e = kube_call(c, "GET", one, NULL, NULL, &a, NULL, err, errsz);
        if (!e)
            e = kubejob_answer_err(&a, one, err, errsz);
        if (!e && !kubeapp_service_ours(a.json, job->id)) {
            snprintf(err, errsz, "a Service %s/%s that aidc did not make for this run exists "
                                 "already", ns, name);
            e = AIDC_EINVAL;
        }
        httpcall_answer_free(&a);
        free(one);
    } else if (e == AIDC_ENOTFOUND) {
        e = AIDC_EUNAVAIL; /* the namespace held the Job a moment ago */
    }
    free(path);
    return e;
}

static int delete_job(const struct backend_cluster *c, const char *ns, const char *name,
                      struct backend_call *call, char *err, size_t errsz);

/*
 * The Service of a session whose Job is there: a refusal (another's Service
 * of its name) fails the job, so its Job goes too - nothing would follow it.
 */
static int session_service(const struct backend_cluster *c, const char *ns, const char *name,
                           const struct backend_job *job, const char *uid,
                           struct backend_call *call, char *err, size_t errsz)
{
    int e = create_service(c, ns, name, job, uid, call, err, errsz);
    if (e != AIDC_EINVAL)
        return e;
    char why[256] = "";
    if (delete_job(c, ns, name, NULL, why, sizeof why) != 0)
        return AIDC_EUNAVAIL; /* tried again: the Job must not stay behind */
    return e; /* the Service is another's: left alone */
}

static int submit(const struct backend_cluster *c, const struct backend_job *job, char *backend_id,
                  size_t idsz, struct backend_call *call, char *err, size_t errsz)
{
    char ns[64], name[64];
    if (!kubejob_namespace(c->options, job->tenant, job->project, ns, sizeof ns, err, errsz))
        return AIDC_EINVAL;
    json_t *body = kubejob_build(c->options, job, ns, err, errsz);
    if (!body)
        return AIDC_EINVAL;
    kubejob_name(job->id, name, sizeof name);
    char *path = xasprintf("/apis/batch/v1/namespaces/%s/jobs", ns);
    struct httpcall_answer a;
    int e = kube_call(c, "POST", path, body, NULL, &a, call ? &call->request : NULL, err, errsz);
    json_decref(body);
    if (call)
        hide_env(call->request, job->env);
    if (!e) {
        if (call)
            call->status = (int)a.status;
        e = kubejob_answer_err(&a, path, err, errsz);
    }
    char uid[128] = "";
    if (!e)
        uid_of(a.json, uid, sizeof uid);
    const char *kind = json_string_value(json_object_get(json_object_get(a.json, "details"), "kind"));
    bool missing_namespace = kind && strcmp(kind, "namespaces") == 0;
    httpcall_answer_free(&a);
    if (e == AIDC_ECONFLICT)
        e = adopt(c, ns, name, job, call, uid, sizeof uid, err, errsz);
    else if (e == AIDC_ENOTFOUND && missing_namespace) {
        snprintf(err, errsz, "namespace %s does not exist on cluster %s: create it (aidc does not "
                             "create namespaces; options.namespace names them)", ns, c->name);
        e = AIDC_EINVAL;
    } else if (e == AIDC_ENOTFOUND) {
        e = AIDC_EUNAVAIL; /* a proxy or a wrong endpoint path: not this job's fault */
    }
    free(path);
    if (!e && job->app)
        e = session_service(c, ns, name, job, uid, call, err, errsz);
    if (!e)
        snprintf(backend_id, idsz, "%s/%s", ns, name);
    if (!e && backend_fault("after_backend_submit"))
        _exit(99); /* tests: die between the API server's accept and aidc's commit */
    return e;
}

/* ---- stop ---------------------------------------------------------------------------- */

/*
 * Delete the Job with its pods (propagationPolicy Background: batch/v1's
 * default, orphan, would leave the pods running). The pods stop with the
 * grace period they were created with. A Job already gone is stopped.
 */
static int delete_job(const struct backend_cluster *c, const char *ns, const char *name,
                      struct backend_call *call, char *err, size_t errsz)
{
    char *path = xasprintf("/apis/batch/v1/namespaces/%s/jobs/%s", ns, name);
    json_t *body = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
                             "propagationPolicy", "Background");
    struct httpcall_answer a;
    int e = kube_call(c, "DELETE", path, body, NULL, &a, call ? &call->request : NULL, err,
                      errsz);
    json_decref(body);
    if (!e) {
        if (call)
            call->status = (int)a.status;
        e = kubejob_answer_err(&a, path, err, errsz);
    }
    if (e == AIDC_ENOTFOUND) /* vanished: reported by the next poll, not retried */
        e = 0;
    httpcall_answer_free(&a);
    free(path);
    return e;
}

/*
 * Delete a session's Service (any run may have one: the backend id does not
 * say), recorded in call's request. None (no session, or gone with its Job:
 * the garbage collector follows its ownerReference) is fine.
 */
static int delete_service(const struct backend_cluster *c, const char *ns, const char *name,
                          struct backend_call *call, char *err, size_t errsz)
{
    char *path = xasprintf("/api/v1/namespaces/%s/services/%s", ns, name);
    json_t *sent = NULL;
    struct httpcall_answer a;
    int e = kube_call(c, "DELETE", path, NULL, NULL, &a, call ? &sent : NULL, err, errsz);
    record_also(call, sent);
    if (!e)
        e = kubejob_answer_err(&a, path, err, errsz);
    if (e == AIDC_ENOTFOUND) {
        err[0] = '\0';
        e = 0;
    }
    httpcall_answer_free(&a);
    free(path);
    return e;
}

/* The Job, then its Service: a stop that fails at the Service is tried again, and then
 * finds the Job gone. */
static int stop(const struct backend_cluster *c, const char *backend_id, struct backend_call *call,
                char *err, size_t errsz)
{
    char ns[64], name[64];
    if (!split_id(backend_id, ns, name)) {
        snprintf(err, errsz, "\"%.80s\" is no Job of this backend (namespace/name)",
                 backend_id ? backend_id : "");
        return AIDC_EINVAL;
    }
    int e = delete_job(c, ns, name, call, err, errsz);
    return e ? e : delete_service(c, ns, name, call, err, errsz);
}

static int cancel(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                  struct backend_call *call, char *err, size_t errsz)
{
    (void)job_id;
    return stop(c, backend_id, call, err, errsz);
}

static int preempt(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                   int grace_seconds, struct backend_call *call, char *err, size_t errsz)
{
    (void)job_id;
    (void)grace_seconds; /* the pods were created with it (terminationGracePeriodSeconds) */
    return stop(c, backend_id, call, err, errsz);
}

/* ---- follow -------------------------------------------------------------------------- */

/* The exit code of a failed Job's container "main", when its pod is still there. */
static int exit_code(const struct backend_cluster *c, const char *ns, const char *uid)
{
    char err[256];
    /* the Job's own pods (controller-uid), not any pod labelled with its name */
    char *path = xasprintf("/api/v1/namespaces/%s/pods?labelSelector=controller-uid%%3D%s&limit=5",
                           ns, uid);
    struct httpcall_answer a;
    int code = -1;
    if (kube_call(c, "GET", path, NULL, NULL, &a, NULL, err, sizeof err) == 0 && a.status == 200) {
        size_t i, j;
        json_t *pod, *cs;
        json_array_foreach(json_object_get(a.json, "items"), i, pod) {
            json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"),
                               j, cs) {
                const char *cname = json_string_value(json_object_get(cs, "name"));
                json_t *x = json_object_get(
                    json_object_get(json_object_get(cs, "state"), "terminated"), "exitCode");
                if (cname && strcmp(cname, "main") == 0 && json_is_integer(x) &&
                    json_integer_value(x) >= -255 && json_integer_value(x) <= 255)
                    code = (int)json_integer_value(x);
            }
        }
    }
    httpcall_answer_free(&a);
    free(path);
    return code;
}

/* failed Jobs younger than this get their exit code from their pod (one call each) */
#define EXIT_CODE_WINDOW_S 600

static void job_status(const struct backend_cluster *c, const json_t *job,
                       struct backend_status *bs)
{
    kubejob_status(job, bs);
    /* every round lists every Job aidc left on the cluster: old failures are not asked
     * about again (the syncer recorded them long ago) */
    if (bs->state == BS_FAILED && bs->finished_at > time(NULL) - EXIT_CODE_WINDOW_S) {
        const json_t *md = json_object_get(job, "metadata");
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        const char *uid = json_string_value(json_object_get(md, "uid"));
        if (ns && uid && strlen(uid) <= 64 && !strpbrk(uid, "&=%/ "))
            bs->exit_code = exit_code(c, ns, uid);
    }
}

static int poll_job(const struct backend_cluster *c, const char *job_id, const char *backend_id,
                    struct backend_status *out, char *err, size_t errsz)
{
    (void)job_id;
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    char ns[64], name[64];
    if (!split_id(backend_id, ns, name)) {
        out->state = BS_UNKNOWN;
        return 0;
    }
    char *path = xasprintf("/apis/batch/v1/namespaces/%s/jobs/%s", ns, name);
    struct httpcall_answer a;
    int e = kube_call(c, "GET", path, NULL, NULL, &a, NULL, err, errsz);
    if (!e)
        e = kubejob_answer_err(&a, path, err, errsz);
    if (!e && !json_is_object(json_object_get(a.json, "metadata"))) {
        snprintf(err, errsz, "%s: the answer is no Job", path);
        e = AIDC_EUNAVAIL;
    }
    if (!e)
        job_status(c, a.json, out);
    if (e == AIDC_ENOTFOUND) {
        out->state = BS_UNKNOWN;
        snprintf(out->reason, sizeof out->reason, "the Job is gone from the cluster");
        e = 0;
    }
    httpcall_answer_free(&a);
    free(path);
    return e;
}

/*
 * Every page of a list (path has its query already): each page's items to
 * each(), following metadata.continue.
 */
static int list_all(const struct backend_cluster *c, const char *path,
                    int (*each)(const json_t *items, void *arg), void *arg, char *err,
                    size_t errsz)
{
    long page = json_integer_value(json_object_get(c->options, "page_size"));
    char *cont = NULL, *prev = NULL;
    int e = 0;
    for (int pages = 0; !e; pages++) {
        char *esc = cont ? curl_easy_escape(NULL, cont, 0) : NULL;
        char *p = xasprintf("%s&limit=%ld%s%s", path, page > 0 ? page : PAGE,
                            esc ? "&continue=" : "", esc ? esc : "");
        curl_free(esc);
        free(cont);
        cont = NULL;
        struct httpcall_answer a;
        e = kube_call(c, "GET", p, NULL, NULL, &a, NULL, err, errsz);
        if (!e)
            e = kubejob_answer_err(&a, p, err, errsz);
        json_t *items = json_object_get(a.json, "items");
        if (!e && !json_is_array(items)) {
            snprintf(err, errsz, "%s: the answer has no items", p);
            e = AIDC_EUNAVAIL;
        }
        if (!e)
            e = each(items, arg);
        const char *next = json_string_value(json_object_get(json_object_get(a.json, "metadata"),
                                                             "continue"));
        if (!e && next && next[0]) {
            /* a list cut short would make every Job after the cut look gone */
            if (prev && strcmp(prev, next) == 0) {
                snprintf(err, errsz, "%s: the API server repeats its continue token", path);
                e = AIDC_EUNAVAIL;
            } else if (pages + 1 >= MAX_PAGES) {
                snprintf(err, errsz, "%s: more than %d pages", path, MAX_PAGES);
                e = AIDC_EUNAVAIL;
            } else {
                cont = xstrdup(next);
            }
        }
        free(prev);
        prev = cont ? xstrdup(cont) : NULL;
        httpcall_answer_free(&a);
        free(p);
        if (!e && !cont)
            break;
    }
    free(prev);
    free(cont);
    return e;
}

struct jobs_arg {
    const struct backend_cluster *c;
    void (*report)(void *arg, const char *backend_id, const char *run_key,
                   const struct backend_status *status);
    void *arg;
};

static int each_job(const json_t *items, void *arg)
{
    struct jobs_arg *ja = arg;
    size_t i;
    json_t *job;
    json_array_foreach(items, i, job) {
        const json_t *md = json_object_get(job, "metadata");
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        const char *name = json_string_value(json_object_get(md, "name"));
        const char *run =
            json_string_value(json_object_get(json_object_get(md, "labels"), KUBE_LABEL_RUN));
        if (!ns || !name)
            continue;
        char id[160];
        snprintf(id, sizeof id, "%.63s/%.63s", ns, name);
        struct backend_status bs;
        job_status(ja->c, job, &bs);
        ja->report(ja->arg, id, run ? run : "", &bs);
        kubejob_report_tasks(job, id, &bs, ja->report, ja->arg);
    }
    return 0;
}

/*
 * Kubernetes has no "changed since": every round lists all of aidc's Jobs
 * (by label, in pages), in its one namespace or, when the namespace depends
 * on the tenant, across namespaces.
 */
static int poll_changed(const struct backend_cluster *c, time_t since,
                        void (*report)(void *arg, const char *backend_id, const char *run_key,
                                       const struct backend_status *status),
                        void *arg, char *err, size_t errsz)
{
    (void)since;
    const char *tpl = json_string_value(json_object_get(c->options, "namespace"));
    char *path = tpl && !strchr(tpl, '{')
                     ? xasprintf("/apis/batch/v1/namespaces/%s/jobs?%s", tpl, SELECTOR)
                     : xstrdup("/apis/batch/v1/jobs?" SELECTOR);
    struct jobs_arg ja = {c, report, arg};
    int e = list_all(c, path, each_job, &ja, err, errsz);
    free(path);
    return e;
}

struct nodes_arg {
    const json_t *options;
    struct backend_resource *out;
    size_t max;
    int n;
};

static int each_nodes(const json_t *items, void *arg)
{
    struct nodes_arg *na = arg;
    na->n = kubejob_inventory_add(na->options, items, na->out, na->max, na->n);
    return 0;
}

static int inventory(const struct backend_cluster *c, struct backend_resource *out, size_t max,
                     char *err, size_t errsz)
{
    struct nodes_arg na = {c->options, out, max, 0};
    int e = list_all(c, "/api/v1/nodes?watch=false", each_nodes, &na, err, errsz);
    return e ? -1 : na.n;
}

static int each_node(const json_t *items, void *arg)
{
    struct {
        const json_t *options;
        void (*report)(void *arg, const struct backend_node *n);
        void *arg;
    } *na = arg;
    kubejob_nodes_each(na->options, items, na->report, na->arg);
    return 0;
}

static int nodes(const struct backend_cluster *c,
                 void (*report)(void *arg, const struct backend_node *n), void *arg, char *err,
                 size_t errsz)
{
    struct {
        const json_t *options;
        void (*report)(void *arg, const struct backend_node *n);
        void *arg;
    } na = {c->options, report, arg};
    return list_all(c, "/api/v1/nodes?watch=false", each_node, &na, err, errsz);
}

/* ---- GPU faults: cordon, and the runs on a node ------------------------------------------ */

/*
 * Cordon (on) or uncordon node, marking aidc's cordons with an annotation:
 * a node someone else cordoned is neither cordoned over nor uncordoned. The
 * merge patch carries the resourceVersion read, so a change in between is
 * a 409 and the outbox tries again.
 */
static int drain(const struct backend_cluster *c, const char *node, bool on, const char *reason,
                 struct backend_call *call, char *err, size_t errsz)
{
    char *esc = curl_easy_escape(NULL, node, 0);
    char *path = xasprintf("/api/v1/nodes/%s", esc ? esc : "");
    curl_free(esc);
    struct httpcall_answer a;
    int e = kube_call(c, "GET", path, NULL, NULL, &a, NULL, err, errsz);
    if (!e)
        e = kubejob_answer_err(&a, path, err, errsz);
    const json_t *md = json_object_get(a.json, "metadata");
    bool cordoned = json_is_true(json_object_get(json_object_get(a.json, "spec"), "unschedulable"));
    const char *mark =
        json_string_value(json_object_get(json_object_get(md, "annotations"), KUBE_ANNOTATION_CORDON));
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    if (e == AIDC_ENOTFOUND) { /* the node left the cluster: nothing to cordon or give back */
        err[0] = '\0';
        e = 0;
        if (call)
            call->lookup = json_pack("{s:s, s:b}", "node", node, "exists", false);
        goto out;
    }
    if (e)
        goto out;
    if (call)
        call->lookup = json_pack("{s:s, s:b, s:s?}", "node", node, "unschedulable", cordoned,
                                 "cordoned_by_aidc", mark);
    /* done already, or another's cordon: left as it is */
    if ((on && cordoned) || (!on && (!cordoned || !mark)))
        goto out;
    char why[200];
    snprintf(why, sizeof why, "aidc: %s", reason && *reason ? reason : "GPU fault");
    json_t *body = on ? json_pack("{s:{s:s?, s:{s:s}}, s:{s:b}}", "metadata", "resourceVersion", rv,
                                  "annotations", KUBE_ANNOTATION_CORDON, why, "spec",
                                  "unschedulable", true)
                      : json_pack("{s:{s:s?, s:{s:n}}, s:{s:n}}", "metadata", "resourceVersion", rv,
                                  "annotations", KUBE_ANNOTATION_CORDON, "spec", "unschedulable");
    httpcall_answer_free(&a);
    e = kube_call(c, "PATCH", path, body, "application/merge-patch+json", &a,
                  call ? &call->request : NULL, err, errsz);
    json_decref(body);
    if (!e && call)
        call->status = (int)a.status;
    if (!e)
        e = kubejob_answer_err(&a, path, err, errsz);
    if (e == AIDC_EINVAL || e == AIDC_ENOTFOUND)
        e = AIDC_EUNAVAIL; /* a node changed under us: the next try reads it again */
out:
    httpcall_answer_free(&a);
    free(path);
    return e;
}

struct pods_arg {
    void (*report)(void *arg, const char *backend_id, const char *run_key);
    void *arg;
};

static int each_pod(const json_t *items, void *arg)
{
    struct pods_arg *pa = arg;
    size_t i;
    json_t *pod;
    json_array_foreach(items, i, pod) {
        const json_t *md = json_object_get(pod, "metadata");
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        const char *run =
            json_string_value(json_object_get(json_object_get(md, "labels"), KUBE_LABEL_RUN));
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        if (!ns || !run || (phase && (strcmp(phase, "Succeeded") == 0 ||
                                      strcmp(phase, "Failed") == 0)))
            continue;
        char name[128], id[200];
        kubejob_name(run, name, sizeof name);
        snprintf(id, sizeof id, "%.63s/%.63s", ns, name);
        pa->report(pa->arg, id, run);
    }
    return 0;
}

/* The pods of aidc's Jobs bound to node (fieldSelector spec.nodeName), in any namespace. */
static int node_jobs(const struct backend_cluster *c, const char *node,
                     void (*report)(void *arg, const char *backend_id, const char *run_key),
                     void *arg, char *err, size_t errsz)
{
    char *esc = curl_easy_escape(NULL, node, 0);
    char *path = xasprintf("/api/v1/pods?%s&fieldSelector=spec.nodeName%%3D%s", SELECTOR,
                           esc ? esc : "");
    curl_free(esc);
    struct pods_arg pa = {report, arg};
    int e = list_all(c, path, each_pod, &pa, err, errsz);
    free(path);
    return e;
}

/* A session's Service (backends/kubeapp.h), once it exists. */
static int app_endpoint(const struct backend_cluster *c, const char *job_id,
                        const char *backend_id, struct backend_endpoint *out, char *err,
                        size_t errsz)
{
    memset(out, 0, sizeof *out);
    char ns[64], name[64];
    if (!split_id(backend_id, ns, name))
        return AIDC_ENOTFOUND; /* never reached the cluster */
    char *path = xasprintf("/api/v1/namespaces/%s/services/%s", ns, name);
    struct httpcall_answer a;
    int e = kube_call(c, "GET", path, NULL, NULL, &a, NULL, err, errsz);
    if (!e)
        e = kubejob_answer_err(&a, path, err, errsz);
    const json_t *md = json_object_get(a.json, "metadata");
    const char *got_ns = json_string_value(json_object_get(md, "namespace"));
    const char *got = json_string_value(json_object_get(md, "name"));
    if (!e && (!got_ns || !got || strcmp(got_ns, ns) != 0 || strcmp(got, name) != 0)) {
        snprintf(err, errsz, "%s: the answer is another Service", path);
        e = AIDC_EUNAVAIL;
    }
    if (!e)
        e = kubeapp_endpoint(a.json, job_id,
                             json_string_value(json_object_get(c->options, "session_host")), out,
                             err, errsz);
    if (e == AIDC_ENOTFOUND)
        err[0] = '\0';
    httpcall_answer_free(&a);
    free(path);
    return e;
}

static bool check_options(json_t *options, char *err, size_t errsz)
{
    return kubejob_check_options(options, err, errsz);
}

const struct backend_ops backend_kubernetes = {
    .kind = "kubernetes",
    .check_options = check_options,
    .submit = submit,
    .cancel = cancel,
    .preempt = preempt,
    .poll = poll_job,
    .poll_changed = poll_changed,
    .inventory = inventory,
    .logs = NULL,
    .gpu_range = NULL,
    .nodes = nodes,
    .drain = drain,
    .node_jobs = node_jobs,
    .app_endpoint = app_endpoint,
    .max_nodes = 1,
    .poll_lists_all = true,
};
