/*
 * test_kubejob.c - the Kubernetes backend's data (backends/kubejob.h): a
 * cluster's options, the namespace and name of a run, the batch/v1 Job built
 * for it, what a Job's status says, times, quantities and the inventory from
 * Nodes. The Jobs are what a real kube-apiserver 1.20.2 answered to the Jobs
 * kubejob_build made (POST, PATCH .../status as a job controller writes it,
 * GET of the JobList, DELETE; see shared/fixtures/kubernetes/README.md). The
 * Nodes have that server's shape but were not created (Nodes are
 * cluster-wide). Nothing here talks to a network. JSON literals use ' for ".
 */
#include "backends/kubejob.h"
#include "lib/xalloc.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOB_ID "0192a0b1-c2d3-7e4f-8a9b-0c1d2e3f4a5b"
#define RUN    JOB_ID "-r2"
#define IMAGE                                                                                      \
    "registry.example/pytorch@sha256:"                                                             \
    "817bafa10c302b932e90a03c553c00a3b8dd7834cbdc9d2196efdb0d0c98afdf"
#define T0 1796198400LL /* 2026-12-02T08:00:00Z */

/* 201 to POST .../namespaces/kubejob-fixture/jobs of full_job() (without managedFields) */
static const char JOB_CREATED[] =
    "{'kind':'Job','apiVersion':'batch/v1','metadata':{'name':'aidc-" RUN "',"
    "'namespace':'kubejob-fixture','uid':'d95f6be6-af7b-4d46-8206-3d2470eb2674',"
    "'resourceVersion':'200','creationTimestamp':'2026-12-03T03:25:44Z',"
    "'labels':{'aidc.io/job':'" JOB_ID "','aidc.io/project':'vision','aidc.io/run':'" RUN "',"
    "'aidc.io/tenant':'acme','app.kubernetes.io/managed-by':'aidc',"
    "'kueue.x-k8s.io/queue-name':'q-acme'}},'spec':{'parallelism':1,'completions':1,"
    "'activeDeadlineSeconds':5400,'backoffLimit':0,"
    "'selector':{'matchLabels':{'controller-uid':'d95f6be6-af7b-4d46-8206-3d2470eb2674'}},"
    "'template':{'metadata':{'creationTimestamp':null,'labels':{'aidc.io/job':'" JOB_ID "',"
    "'aidc.io/project':'vision','aidc.io/run':'" RUN "','aidc.io/tenant':'acme',"
    "'app.kubernetes.io/managed-by':'aidc',"
    "'controller-uid':'d95f6be6-af7b-4d46-8206-3d2470eb2674','job-name':'aidc-" RUN "',"
    "'kueue.x-k8s.io/queue-name':'q-acme'}},'spec':{'containers':[{'name':'main',"
    "'image':'" IMAGE "',"
    "'command':['/bin/sh','-c','echo hi; exit 3'],'env':[{'name':'FOO','value':'bar'},"
    "{'name':'AIDC_JOB_ID','value':'" JOB_ID "'},{'name':'AIDC_RUN','value':'" RUN "'}],"
    "'resources':{'limits':{'cpu':'8','memory':'32Gi','nvidia.com/gpu':'2'},"
    "'requests':{'cpu':'8','memory':'32Gi','nvidia.com/gpu':'2'}},"
    "'terminationMessagePath':'/dev/termination-log','terminationMessagePolicy':'File',"
    "'imagePullPolicy':'IfNotPresent'}],'restartPolicy':'Never',"
    "'terminationGracePeriodSeconds':30,'dnsPolicy':'ClusterFirst',"
    "'nodeSelector':{'nvidia.com/gpu.product':'NVIDIA-A100-SXM4-80GB'},'securityContext':{},"
    "'schedulerName':'default-scheduler','priorityClassName':'aidc-high'}}},'status':{}}";

/* the pod template the same server kept of cpu_job() with options {"scheduler_name":"volcano"} */
static const char CPU_POD_CREATED[] =
    "{'containers':[{'name':'main','image':'busybox:1.36','command':['python3','train.py'],"
    "'env':[{'name':'AIDC_JOB_ID','value':'" JOB_ID "'},{'name':'AIDC_RUN','value':'" JOB_ID "'}],"
    "'resources':{'limits':{'cpu':'2','memory':'4Gi'},'requests':{'cpu':'2','memory':'4Gi'}},"
    "'terminationMessagePath':'/dev/termination-log','terminationMessagePolicy':'File',"
    "'imagePullPolicy':'IfNotPresent'}],'restartPolicy':'Never',"
    "'terminationGracePeriodSeconds':10,'dnsPolicy':'ClusterFirst','securityContext':{},"
    "'schedulerName':'volcano'}";


/* status as the server returned it after each merge-patch of .../status */
#define STARTED    "'startTime':'2026-12-02T08:00:00Z'"
#define ST_RUNNING "{" STARTED ",'active':1}"
#define ST_COMPLETE                                                                                \
    "{'conditions':[{'type':'Complete','status':'True','lastProbeTime':'2026-12-02T09:30:01Z',"    \
    "'lastTransitionTime':'2026-12-02T09:30:01Z'}]," STARTED                                       \
    ",'completionTime':'2026-12-02T09:30:00Z','succeeded':1}"
#define ST_BACKOFF                                                                                 \
    "{'conditions':[{'type':'Failed','status':'True','lastProbeTime':'2026-12-02T08:10:00Z',"      \
    "'lastTransitionTime':'2026-12-02T08:10:00Z','reason':'BackoffLimitExceeded',"                 \
    "'message':'Job has reached the specified backoff limit'}]," STARTED ",'failed':1}"
#define ST_DEADLINE                                                                                \
    "{'conditions':[{'type':'Failed','status':'True','lastProbeTime':'2026-12-02T09:30:00Z',"      \
    "'lastTransitionTime':'2026-12-02T09:30:00Z','reason':'DeadlineExceeded',"                     \
    "'message':'Job was active longer than specified deadline'}]," STARTED ",'failed':1}"
#define ST_SUSPENDED                                                                               \
    "{'conditions':[{'type':'Suspended','status':'True','lastProbeTime':'2026-12-02T08:00:00Z',"   \
    "'lastTransitionTime':'2026-12-02T08:00:00Z','reason':'JobSuspended',"                         \
    "'message':'Job suspended'}]}"
#define ST_RESUMED                                                                                 \
    "{'conditions':[{'type':'Suspended','status':'False','lastProbeTime':'2026-12-02T08:05:00Z',"  \
    "'lastTransitionTime':'2026-12-02T08:05:00Z','reason':'JobResumed','message':'Job resumed'}]," \
    "'startTime':'2026-12-02T08:05:00Z','active':1}"
/* what DELETE ?propagationPolicy=Foreground adds to metadata (200, the Job, until the GC) */
#define META_DELETING                                                                              \
    "{'deletionTimestamp':'2026-12-03T03:26:16Z','deletionGracePeriodSeconds':0,"                  \
    "'finalizers':['foregroundDeletion']}"

/* ---- helpers ------------------------------------------------------------------------- */

static json_t *parse(const char *s)
{
    char *d = xstrdup(s);
    for (char *p = d; *p; p++)
        *p = *p == '\'' ? '"' : *p;
    json_error_t e;
    json_t *j = json_loads(d, JSON_DECODE_ANY, &e);
    free(d);
    ck_assert_msg(j != NULL, "fixture does not parse: %s (%s)", e.text, s);
    return j;
}

/* j.k1.k2... (keys may hold '/' and '.', as label names do) */
static const json_t *at_(const json_t *j, ...)
{
    va_list ap;
    va_start(ap, j);
    for (const char *k = va_arg(ap, const char *); k && j; k = va_arg(ap, const char *))
        j = json_object_get(j, k);
    va_end(ap);
    return j;
}
#define AT(...)  at_(__VA_ARGS__, (const char *)NULL)
#define STR(...) json_string_value(AT(__VA_ARGS__))

/* options checked, as every cluster's are */
static json_t *checked(const char *opts)
{
    json_t *o = parse(opts);
    char err[256] = "";
    ck_assert_msg(kubejob_check_options(o, err, sizeof err), "%s refused: %s", opts, err);
    return o;
}

/* A pod template the API server returned, without the defaults it adds: what aidc sent. */
static void strip_pod(json_t *pod)
{
    json_t *c = json_array_get(json_object_get(pod, "containers"), 0);
    json_object_del(c, "terminationMessagePath");
    json_object_del(c, "terminationMessagePolicy");
    json_object_del(c, "imagePullPolicy");
    json_object_del(pod, "dnsPolicy");
    json_object_del(pod, "securityContext");
    if (strcmp(STR(pod, "schedulerName"), "default-scheduler") == 0)
        json_object_del(pod, "schedulerName");
}

/* What aidc added since the captures (the server keeps them as given): asserted, removed. */
static void added_since(json_t *pod, bool gpus)
{
    ck_assert(json_is_false(json_object_get(pod, "automountServiceAccountToken")));
    ck_assert(json_is_false(json_object_get(pod, "enableServiceLinks")));
    json_object_del(pod, "automountServiceAccountToken");
    json_object_del(pod, "enableServiceLinks");
    json_t *env = json_object_get(json_array_get(json_object_get(pod, "containers"), 0), "env");
    json_t *last = json_array_get(env, json_array_size(env) - 1);
    bool hidden = last && strcmp(json_string_value(json_object_get(last, "name")),
                                 "NVIDIA_VISIBLE_DEVICES") == 0;
    ck_assert_msg(hidden == !gpus, "NVIDIA_VISIBLE_DEVICES=void is for jobs without GPUs");
    if (hidden) {
        ck_assert_str_eq(json_string_value(json_object_get(last, "value")), "void");
        json_array_remove(env, json_array_size(env) - 1);
    }
}

/* Built what the server accepted, less what it adds (compare sorted when not). */
static void same(const json_t *built, const json_t *sent, const char *what)
{
    if (!json_equal(built, sent))
        ck_abort_msg("built another %s than the API server accepted:\n%s\n%s", what,
                     json_dumps(built, JSON_SORT_KEYS), json_dumps(sent, JSON_SORT_KEYS));
}

/* the options, the job and the namespace of the captured GPU Job */
#define GPU_OPTS                                                                                   \
    "{'gpu_types':{'a100':'NVIDIA-A100-SXM4-80GB'},"                                               \
    "'priority_classes':{'high':'aidc-high','low':'aidc-low'},'queue_name':'q-{tenant}'}"
#define AMD_OPTS                                                                                   \
    "{'gpu_resource':'amd.com/gpu','gpu_type_label':'amd.com/gpu.product',"                        \
    "'gpu_types':{'mi300x':'AMD-Instinct-MI300X'}}"

static struct backend_job full_job(const json_t *env)
{
    struct backend_job j = {.id = RUN, .tenant = "acme", .project = "vision", .image = IMAGE,
                            .script = "echo hi; exit 3", .env = env, .gpus = 2, .gpu_type = "a100",
                            .cpus = 8, .memory_gib = 32, .nodes = 1, .time_limit_minutes = 90,
                            .grace_seconds = 30, .priority = "high"};
    return j;
}

static json_t *build(const json_t *o, const struct backend_job *j)
{
    char err[256] = "";
    json_t *b = kubejob_build(o, j, "kubejob-fixture", err, sizeof err);
    ck_assert_msg(b != NULL, "job %s refused: %s", j->id, err);
    return b;
}

/* ---- kubejob_check_options ----------------------------------------------------------- */

START_TEST(options_defaults_filled)
{
    json_t *o = checked("{}");
    ck_assert_uint_eq(json_object_size(o), 4);
    ck_assert_str_eq(STR(o, "namespace"), "aidc-{tenant}");
    ck_assert_str_eq(STR(o, "session_host"), "dns");
    ck_assert_str_eq(STR(o, "gpu_resource"), "nvidia.com/gpu");
    ck_assert_str_eq(STR(o, "gpu_type_label"), "nvidia.com/gpu.product");
    json_decref(o);
    /* what is given stays; only what is missing is added */
    o = checked("{'namespace':'{tenant}-{project}','gpu_resource':'amd.com/gpu',"
                "'timeout_seconds':20,'session_host':'cluster_ip'}");
    ck_assert_uint_eq(json_object_size(o), 5);
    ck_assert_str_eq(STR(o, "session_host"), "cluster_ip");
    ck_assert_str_eq(STR(o, "namespace"), "{tenant}-{project}");
    ck_assert_str_eq(STR(o, "gpu_resource"), "amd.com/gpu");
    json_decref(o);
}
END_TEST

/* every option with good and bad values (JSON) */
static const struct opt_case {
    const char *key, *good[6], *bad[13];
} opts[] = {
    {"namespace",
     {"'aidc-{tenant}'", "'{tenant}'", "'{tenant}-{project}'", "'{tenant}{project}'",
      "'shared-jobs'", "'ml-{tenant}-{project}-9'"},
     {"'ml-{project}-9'", "null", "''", "'Aidc-{tenant}'", "'aidc_{tenant}'", "'-{tenant}'", "'{tenant}-'",
      "'a.{tenant}'", "'{Tenant}'", "'{tenants}'", "'aidc-{user}'", "'{tenant'"}},
    {"gpu_resource", {"'nvidia.com/gpu'", "'amd.com/gpu'", "'gpu.intel.com/i915'"},
     {"''", "'Nvidia.com/gpu'", "'nvidia.com/'", "'/gpu'", "'nvidia.com/gpu/0'",
      "'nvidia com/gpu'", "['nvidia.com/gpu']"}},
    {"gpu_type_label",
     {"'nvidia.com/gpu.product'", "'cloud.google.com/gke-accelerator'", "'accelerator'",
      "'example.com/GPU_Model'"},
     {"'nvidia.com/-gpu'", "'nvidia..com/gpu'", "'.nvidia.com/gpu'", "7"}},
    {"gpu_types",
     {"{}", "{'a100':'NVIDIA-A100-SXM4-80GB','h100':'NVIDIA-H100-80GB-HBM3','l4':'nvidia-l4',"
            "'mi300x':'AMD_Instinct.MI300X'}"},
     {"[]", "'a100'", "{'A100':'x'}", "{'-a100':'x'}", "{'a100':''}", "{'a100':'NVIDIA A100'}",
      "{'a100':'-A100'}", "{'a100':5}"}},
    {"priority_classes", {"{}", "{'high':'aidc-high','normal':'aidc.normal','low':'low'}"},
     {"{'urgent':'x'}", "{'high':'Aidc-High'}", "{'high':1}", "[]"}},
    {"queue_name", {"'team-{tenant}'", "'{tenant}-{project}'"}, {"'Team'", "1", "'q_{tenant}'"}},
    {"scheduler_name", {"'volcano'", "'sched.example.com'"}, {"''", "'Volcano'", "true"}},
    {"ca_file", {"'/etc/aidc/k8s-ca.pem'"}, {"'ca.pem'", "''", "3"}},
    {"timeout_seconds", {"1", "300"}, {"0", "301", "'30'", "5.0"}},
    {"page_size", {"1", "5000"}, {"0", "5001"}},
    {"max_time_limit_minutes", {"1", "525600"}, {"0", "525601", "null"}},
    {"session_host", {"'dns'", "'cluster_ip'"}, {"''", "'DNS'", "'clusterIP'", "'node'", "1"}},
};

START_TEST(options_values)
{
    const struct opt_case *c = &opts[_i];
    char err[256] = "", want[64];
    for (size_t i = 0; i < 6 && c->good[i]; i++) {
        json_t *v = parse(c->good[i]), *o = json_pack("{s:O}", c->key, v);
        ck_assert_msg(kubejob_check_options(o, err, sizeof err), "%s = %s refused: %s", c->key,
                      c->good[i], err);
        ck_assert_msg(json_equal(AT(o, c->key), v), "%s changed", c->key);
        ck_assert(STR(o, "namespace") && STR(o, "gpu_resource") && STR(o, "gpu_type_label"));
        json_decref(o);
        json_decref(v);
    }
    snprintf(want, sizeof want, "options.%s ", c->key);
    for (size_t i = 0; i < 13 && c->bad[i]; i++) {
        json_t *o = json_pack("{s:o}", c->key, parse(c->bad[i]));
        ck_assert_msg(!kubejob_check_options(o, err, sizeof err), "%s = %s accepted", c->key,
                      c->bad[i]);
        ck_assert_msg(strstr(err, want), "%s = %s: \"%s\" names no option", c->key, c->bad[i],
                      err);
        json_decref(o);
    }
}
END_TEST

START_TEST(options_sizes_and_unknown)
{
    char err[256], k[16];
    /* a namespace template of 63 characters, not 64 */
    json_t *o = json_pack("{s:o}", "namespace", json_sprintf("{tenant}-%054d", 0));
    ck_assert_uint_eq(strlen(STR(o, "namespace")), 63);
    ck_assert(kubejob_check_options(o, err, sizeof err));
    json_object_set_new(o, "namespace", json_sprintf("{tenant}-%055d", 0));
    ck_assert(!kubejob_check_options(o, err, sizeof err) && strstr(err, "options.namespace"));
    json_decref(o);
    /* ca_file: shorter than PATH_MAX */
    o = json_pack("{s:o}", "ca_file", json_sprintf("/%04094d", 0));
    ck_assert(kubejob_check_options(o, err, sizeof err));
    json_object_set_new(o, "ca_file", json_sprintf("/%04095d", 0));
    ck_assert(!kubejob_check_options(o, err, sizeof err) && strstr(err, "options.ca_file"));
    json_decref(o);
    /* gpu_types: at most 256 */
    json_t *types = json_object();
    for (int i = 0; i < 256; i++) {
        snprintf(k, sizeof k, "t%d", i);
        json_object_set_new(types, k, json_string("GPU-X"));
    }
    o = json_pack("{s:O}", "gpu_types", types);
    ck_assert(kubejob_check_options(o, err, sizeof err));
    json_object_set_new(types, "t256", json_string("GPU-X"));
    ck_assert(!kubejob_check_options(o, err, sizeof err) && strstr(err, "options.gpu_types"));
    json_decref(o);
    json_decref(types);
    /* an unknown option, even among good ones */
    static const char *const unknown[] = {"{'gpu_type':'a100'}", "{'Namespace':'x'}",
                                          "{'namespace':'aidc-{tenant}','token':'t'}", "{'':1}"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        o = parse(unknown[i]);
        ck_assert_msg(!kubejob_check_options(o, err, sizeof err), "%s accepted", unknown[i]);
        ck_assert_msg(strstr(err, "is not an option of the kubernetes backend"), "%s", err);
        json_decref(o);
    }
}
END_TEST

/* ---- kubejob_namespace, kubejob_name --------------------------------------------------- */

#define T58 "t234567890t234567890t234567890t234567890t234567890t2345678"
static const struct ns_case {
    const char *opts, *tenant, *project, *want; /* want NULL: refused */
} ns_cases[] = {
    {"{'namespace':'aidc-{tenant}'}", "acme", "vision", "aidc-acme"},
    {"{}", "acme", NULL, "aidc-acme"}, /* options not checked: the default */
    {"{'namespace':'{tenant}-{project}'}", "acme", "vision", "acme-vision"},
    {"{'namespace':'p-{project}-{tenant}'}", "acme", "vision", "p-vision-acme"},
    {"{'namespace':'shared'}", "acme", "vision", "shared"},
    {"{}", T58, "p", "aidc-" T58},                    /* 63 */
    {"{}", T58 "9", "p", NULL},                       /* 64 */
    {"{'namespace':'{tenant}'}", "{project}", "x", NULL}, /* a value is not expanded again */
    {"{'namespace':'{tenant}-{project}'}", "acme", NULL, NULL}, /* "acme-" */
    {"{}", "Acme", "p", NULL}, {"{}", "ac_me", "p", NULL}, {"{}", "acme-", "p", NULL},
    {"{}", "ac.me", "p", NULL}, {"{}", "", "p", NULL}, {"{}", "ac me", "p", NULL},
};

START_TEST(namespace_of_a_job)
{
    const struct ns_case *c = &ns_cases[_i];
    char ns[64] = "untouched", err[256] = "";
    json_t *o = parse(c->opts);
    bool ok = kubejob_namespace(o, c->tenant, c->project, ns, sizeof ns, err, sizeof err);
    if (c->want) {
        ck_assert_msg(ok, "%s for %s: refused: %s", c->opts, c->tenant, err);
        ck_assert_str_eq(ns, c->want);
        /* a buffer one byte short: refused, not cut */
        ck_assert(!kubejob_namespace(o, c->tenant, c->project, ns, strlen(ns), err, sizeof err));
    } else {
        ck_assert_msg(!ok, "%s for %s: %s", c->opts, c->tenant, ns);
        ck_assert_str_eq(ns, "untouched");
        ck_assert_msg(strstr(err, "namespace") && strstr(err, "63"), "message: %s", err);
    }
    json_decref(o);
}
END_TEST

/*
 * expand() sizes its buffer for two copies of each slug: with a third it
 * stops short, and the cut result passes as a namespace.
 */
START_TEST(namespace_never_cut_short)
{
    char ns[64] = "", err[256] = "";
    const char *tenant = "abcdefghijklmnopqrstuvwxy"; /* 25: three copies are 75 characters */
    json_t *o = checked("{'namespace':'{tenant}{tenant}{tenant}'}");
    bool ok = kubejob_namespace(o, tenant, NULL, ns, sizeof ns, err, sizeof err);
    json_decref(o);
    ck_assert_msg(!ok, "BUG: namespace \"{tenant}{tenant}{tenant}\" for tenant %s (75 "
                       "characters, no DNS label) gave \"%s\" (%zu characters): expand() cut it",
                  tenant, ns, strlen(ns));
}
END_TEST

START_TEST(name_of_a_run)
{
    char name[64], small[8];
    kubejob_name(RUN, name, sizeof name);
    ck_assert_str_eq(name, "aidc-" RUN);
    kubejob_name(JOB_ID "-r12", name, sizeof name);
    ck_assert_str_eq(name, "aidc-" JOB_ID "-r12"); /* 46: a DNS label */
    kubejob_name("0192A0B1-C2D3-R3", name, sizeof name);
    ck_assert_str_eq(name, "aidc-0192a0b1-c2d3-r3");
    kubejob_name(RUN, small, sizeof small);
    ck_assert_str_eq(small, "aidc-01");
}
END_TEST

/* ---- kubejob_build ------------------------------------------------------------------- */

START_TEST(build_the_captured_gpu_job)
{
    json_t *o = checked(GPU_OPTS), *env = parse("{'FOO':'bar'}");
    struct backend_job j = full_job(env);
    json_t *b = build(o, &j), *sent = parse(JOB_CREATED);
    /* the parts that matter, spelled out */
    const json_t *pod = AT(b, "spec", "template", "spec");
    const json_t *c = json_array_get(AT(pod, "containers"), 0);
    ck_assert_str_eq(STR(b, "metadata", "name"), "aidc-" RUN);
    ck_assert_str_eq(STR(b, "metadata", "labels", KUBE_LABEL_QUEUE), "q-acme");
    ck_assert_int_eq(json_integer_value(AT(b, "spec", "activeDeadlineSeconds")), 90 * 60);
    ck_assert_str_eq(STR(pod, "nodeSelector", KUBE_DEFAULT_GPU_LABEL), "NVIDIA-A100-SXM4-80GB");
    ck_assert_str_eq(STR(c, "resources", "limits", "nvidia.com/gpu"), "2");
    /* and the whole: what the API server accepted, less what it added */
    json_object_del(sent, "status");
    json_t *md = json_object_get(sent, "metadata"), *spec = json_object_get(sent, "spec");
    json_object_del(md, "uid");
    json_object_del(md, "resourceVersion");
    json_object_del(md, "creationTimestamp");
    json_object_del(spec, "parallelism");
    json_object_del(spec, "completions");
    json_object_del(spec, "selector");
    json_t *tmd = json_object_get(json_object_get(spec, "template"), "metadata");
    json_object_del(tmd, "creationTimestamp");
    json_object_del(json_object_get(tmd, "labels"), "controller-uid");
    json_object_del(json_object_get(tmd, "labels"), "job-name");
    strip_pod(json_object_get(json_object_get(spec, "template"), "spec"));
    added_since((json_t *)AT(b, "spec", "template", "spec"), true);
    /* 1.20 drops ttlSecondsAfterFinished (1.21+) */
    ck_assert_int_eq(json_integer_value(AT(b, "spec", "ttlSecondsAfterFinished")), 86400);
    json_object_del(json_object_get(b, "spec"), "ttlSecondsAfterFinished");
    same(b, sent, "Job");
    json_decref(sent);
    json_decref(b);
    json_decref(env);
    json_decref(o);
}
END_TEST

START_TEST(build_cpu_only_job)
{
    json_t *o = checked("{'scheduler_name':'volcano'}"), *cmd = parse("['python3','train.py']");
    struct backend_job j = {.id = JOB_ID, .tenant = "acme", .project = "vision",
                            .image = "busybox:1.36", .command = cmd, .script = "ignored", .cpus = 2,
                            .memory_gib = 4, .nodes = 1, .grace_seconds = 10, .priority = "normal"};
    json_t *b = build(o, &j), *sent = parse(CPU_POD_CREATED);
    const json_t *pod = AT(b, "spec", "template", "spec");
    ck_assert_ptr_null(AT(pod, "nodeSelector"));
    ck_assert_ptr_null(AT(b, "spec", "activeDeadlineSeconds")); /* no time limit */
    ck_assert_int_eq(json_integer_value(AT(b, "spec", "backoffLimit")), 0);
    ck_assert_uint_eq(json_object_size(AT(b, "metadata", "labels")), 5); /* no queue */
    ck_assert_str_eq(STR(b, "metadata", "labels", KUBE_LABEL_JOB), JOB_ID);
    ck_assert(AT(json_array_get(AT(pod, "containers"), 0), "command") != cmd); /* a copy */
    strip_pod(sent);
    added_since((json_t *)pod, false);
    same(pod, sent, "pod");
    json_decref(sent);
    json_decref(b);
    json_decref(cmd);
    json_decref(o);
}
END_TEST

static const struct sel_case {
    const char *opts;
    int gpus;
    const char *type, *resource, *label, *value; /* NULL: no GPU resource / no nodeSelector */
} sel_cases[] = {
    {GPU_OPTS, 2, "a100", "nvidia.com/gpu", "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
    {GPU_OPTS, 1, "h100", "nvidia.com/gpu", "nvidia.com/gpu.product", "h100"}, /* not mapped */
    {"{}", 4, "a100", "nvidia.com/gpu", "nvidia.com/gpu.product", "a100"},
    {AMD_OPTS, 8, "mi300x", "amd.com/gpu", "amd.com/gpu.product", "AMD-Instinct-MI300X"},
    {GPU_OPTS, 2, NULL, "nvidia.com/gpu", NULL, NULL}, /* any GPU */
    {GPU_OPTS, 0, "a100", NULL, NULL, NULL},           /* no GPU: the type is no matter */
    {AMD_OPTS, 0, NULL, NULL, NULL, NULL},
};

START_TEST(build_gpu_resource_and_selector)
{
    const struct sel_case *s = &sel_cases[_i];
    json_t *o = checked(s->opts);
    struct backend_job j = full_job(NULL);
    j.gpus = s->gpus;
    j.gpu_type = s->type;
    json_t *b = build(o, &j);
    const json_t *pod = AT(b, "spec", "template", "spec");
    const json_t *res = AT(json_array_get(AT(pod, "containers"), 0), "resources");
    ck_assert(json_equal(AT(res, "requests"), AT(res, "limits"))); /* Guaranteed QoS */
    ck_assert_uint_eq(json_object_size(AT(res, "requests")), s->resource ? 3 : 2);
    if (s->resource)
        ck_assert_int_eq(atoi(STR(res, "limits", s->resource)), s->gpus);
    ck_assert_uint_eq(json_object_size(AT(pod, "nodeSelector")), s->label ? 1 : 0);
    if (s->label)
        ck_assert_str_eq(STR(pod, "nodeSelector", s->label), s->value);
    json_decref(b);
    json_decref(o);
}
END_TEST

START_TEST(build_priority_env_command_refusals)
{
    json_t *o = checked("{'priority_classes':{'high':'aidc-high','low':'aidc-low'}}");
    json_t *env = parse("{'B':'2','A':1,'AIDC_RUN':'mine'}"), *sh = parse("['/bin/sh','-c','']");
    /* the job's own variables (a non-string as ""), then aidc's: the last one wins */
    json_t *want_env = parse("[{'name':'B','value':'2'},{'name':'A','value':''},{'name':"
                             "'AIDC_RUN','value':'mine'},{'name':'AIDC_JOB_ID','value':'" JOB_ID
                             "'},{'name':'AIDC_RUN','value':'" RUN "'}]");
    static const char *const prio[][2] = {
        {"high", "aidc-high"}, {"low", "aidc-low"}, {"normal", NULL}, {NULL, NULL}};
    for (size_t i = 0; i < 4; i++) {
        struct backend_job j = full_job(env);
        j.priority = prio[i][0];
        j.script = NULL; /* neither command nor script: an empty script */
        json_t *b = build(o, &j);
        const json_t *pod = AT(b, "spec", "template", "spec");
        ck_assert_pstr_eq(STR(pod, "priorityClassName"), prio[i][1]);
        const json_t *c = json_array_get(AT(pod, "containers"), 0);
        ck_assert(json_equal(AT(c, "command"), sh));
        ck_assert(json_equal(AT(c, "env"), want_env));
        json_decref(b);
    }
    /* refused: no image, more than one node */
    char err[256] = "";
    struct backend_job j = full_job(NULL);
    j.image = NULL;
    ck_assert_ptr_null(kubejob_build(o, &j, "ns", err, sizeof err));
    ck_assert_msg(strstr(err, "no image"), "message: %s", err);
    j = full_job(NULL);
    j.nodes = 2;
    ck_assert_ptr_null(kubejob_build(o, &j, "ns", err, sizeof err));
    ck_assert_msg(strstr(err, "one node") && strstr(err, "2 asked"), "message: %s", err);
    j.nodes = 0; /* not said: one */
    json_decref(build(o, &j));
    json_decref(want_env);
    json_decref(sh);
    json_decref(env);
    json_decref(o);
}
END_TEST

/* ---- kubejob_status ------------------------------------------------------------------ */

#define JUNK(status) {status, status, NULL, BS_PENDING, 0, 0, -1, ""}
static const struct st_case {
    const char *what, *status, *meta; /* meta: merged into the Job's metadata */
    int state;
    long long started, finished;
    int exit_code;
    const char *reason;
} st_cases[] = {
    {"just created", "{}", NULL, BS_PENDING, 0, 0, -1, ""},
    {"running", ST_RUNNING, NULL, BS_RUNNING, T0, 0, -1, ""},
    {"complete", ST_COMPLETE, NULL, BS_SUCCEEDED, T0, T0 + 5400, 0, ""},
    {"backoff", ST_BACKOFF, NULL, BS_FAILED, T0, T0 + 600, -1,
     "BackoffLimitExceeded: Job has reached the specified backoff limit"},
    {"deadline", ST_DEADLINE, NULL, BS_FAILED, T0, T0 + 5400, -1, "time limit (DeadlineExceeded)"},
    {"suspended", ST_SUSPENDED, NULL, BS_PENDING, 0, 0, -1, ""},
    {"resumed", ST_RESUMED, NULL, BS_RUNNING, T0 + 300, 0, -1, ""},
    {"deleting, running", ST_RUNNING, META_DELETING, BS_STOPPED, T0, 0, -1, ""},
    {"deleting, suspended", ST_SUSPENDED, META_DELETING, BS_STOPPED, 0, 0, -1, ""},
    {"deleting, complete", ST_COMPLETE, META_DELETING, BS_SUCCEEDED, T0, T0 + 5400, 0, ""},
    {"deleting, deadline", ST_DEADLINE, META_DELETING, BS_FAILED, T0, T0 + 5400, -1,
     "time limit (DeadlineExceeded)"},
    {"complete, no completionTime", "{'conditions':[{'type':'Complete','status':'True',"
     "'lastTransitionTime':'2026-12-02T09:30:01Z'}]," STARTED "}", NULL, BS_SUCCEEDED, T0,
     T0 + 5401, 0, ""},
    {"Complete False", "{'conditions':[{'type':'Complete','status':'False'}]," STARTED
     ",'active':1}", NULL, BS_RUNNING, T0, 0, -1, ""},
    {"Failed Unknown", "{'conditions':[{'type':'Failed','status':'Unknown','reason':"
     "'BackoffLimitExceeded'}]," STARTED ",'active':1}", NULL, BS_RUNNING, T0, 0, -1, ""},
    {"Suspended Unknown", "{'conditions':[{'type':'Suspended','status':'Unknown'}]," STARTED
     ",'active':1}", NULL, BS_RUNNING, T0, 0, -1, ""},
    {"FailureTarget, then Failed", "{'conditions':[{'type':'Suspended','status':'False'},"
     "{'type':'FailureTarget','status':'True','reason':'BackoffLimitExceeded'},{'type':'Failed',"
     "'status':'True','reason':'DeadlineExceeded','lastTransitionTime':'2026-12-02T09:30:00Z'}],"
     STARTED "}", NULL, BS_FAILED, T0, T0 + 5400, -1, "time limit (DeadlineExceeded)"},
    {"SuccessCriteriaMet, then Complete", "{'conditions':[{'type':'SuccessCriteriaMet',"
     "'status':'True'},{'type':'Failed','status':'False'},{'type':'Complete','status':'True'}],"
     STARTED ",'completionTime':'2026-12-02T09:30:00Z'}", NULL, BS_SUCCEEDED, T0, T0 + 5400, 0,
     ""},
    {"Failed, nothing said", "{'conditions':[{'type':'Failed','status':'True'}]}", NULL,
     BS_FAILED, 0, 0, -1, "failed"},
    {"Failed, a reason only", "{'conditions':[{'type':'Failed','status':'True','reason':"
     "'BackoffLimitExceeded'}]}", NULL, BS_FAILED, 0, 0, -1, "BackoffLimitExceeded"},
    {"Failed, junk said", "{'conditions':[{'type':'Failed','status':'True','reason':5,"
     "'message':[],'lastTransitionTime':7}]}", NULL, BS_FAILED, 0, 0, -1, "failed"},
    /* junk where the server puts a status */
    JUNK("'x'"), JUNK("[]"), JUNK("{'conditions':{}}"), JUNK("{'conditions':'Complete'}"),
    JUNK("{'conditions':[1,null,'x',[],{'type':5,'status':true},{'type':'Complete'},"
         "{'status':'True'},{'type':'Complete','status':1}]}"),
    JUNK("{'startTime':5,'active':'1'}"), JUNK("{'startTime':'yesterday','active':1}"),
    JUNK("{'startTime':null,'active':1e300}"),
    {"active, no startTime", "{'active':1}", NULL, BS_PENDING, 0, 0, -1, ""},
    {"startTime, nothing active", "{" STARTED "}", NULL, BS_PENDING, 0, 0, -1, ""},
};

START_TEST(status_of_jobs)
{
    const struct st_case *c = &st_cases[_i];
    json_t *job = parse(JOB_CREATED), *m = parse(c->meta ? c->meta : "{}");
    json_object_set_new(job, "status", parse(c->status));
    json_object_update(json_object_get(job, "metadata"), m);
    if (_i % 2) { /* as an item of a JobList (GET .../jobs?labelSelector=...) */
        json_object_del(job, "kind");
        json_object_del(job, "apiVersion");
    }
    struct backend_status st;
    memset(&st, 0x5a, sizeof st); /* every field must be written */
    kubejob_status(job, &st);
    json_decref(job);
    json_decref(m);
    ck_assert_msg(st.state == c->state, "%s: state %d, want %d", c->what, st.state, c->state);
    ck_assert_msg(st.started_at == c->started && st.finished_at == c->finished,
                  "%s: started_at %lld, finished_at %lld", c->what, (long long)st.started_at,
                  (long long)st.finished_at);
    ck_assert_msg(st.exit_code == c->exit_code && st.restarts == 0, "%s: exit_code %d", c->what,
                  st.exit_code);
    ck_assert(memchr(st.reason, '\0', sizeof st.reason) != NULL);
    ck_assert_msg(strcmp(st.reason, c->reason) == 0, "%s: reason \"%s\"", c->what, st.reason);
}
END_TEST

START_TEST(status_of_garbage)
{
    static const char *const garbage[] = {"null", "[]", "'x'", "5", "{'metadata':5}"};
    struct backend_status st;
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        json_t *j = parse(garbage[i]);
        memset(&st, 0x5a, sizeof st);
        kubejob_status(j, &st);
        json_decref(j);
        ck_assert_msg(st.state == BS_PENDING && st.started_at == 0 && st.finished_at == 0 &&
                          st.exit_code == -1 && st.reason[0] == '\0',
                      "%s: state %d", garbage[i], st.state);
    }
    kubejob_status(NULL, &st);
    ck_assert_int_eq(st.state, BS_PENDING);
}
END_TEST

/* ---- kubejob_inventory_add ----------------------------------------------------------- */

/*
 * Nodes as the API server returns them after POST /api/v1/nodes and a merge-patch of
 * their status: capacity above allocatable (what pods get), the pressure conditions,
 * the not-ready taint the server adds at create. NULL: no such label/resource/condition.
 */
static const struct node_case {
    const char *name, *product, *gpus, *cpu, *mem, *ready;
    bool cordoned;
} nodes[] = {
    {"a100-1", "NVIDIA-A100-SXM4-80GB", "8", "127900m", "1056451700Ki", "True", false},
    {"a100-2", "NVIDIA-A100-SXM4-80GB", "8", "128", "1056964608Ki", "True", false},
    {"h100-1", "NVIDIA-H100-80GB-HBM3", "4", "96", "768Gi", "True", false},
    {"cpu-1", NULL, NULL, "64", "263846412Ki", "True", false},
    /* GPUs without the label, a label no GPU type can be made of, a label with 0 GPUs */
    {"gpu-nolabel", NULL, "2", "32", "128Gi", "True", false},
    {"mig-1", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-long", "7", "16", "64Gi", "True", false},
    {"l4-0", "NVIDIA-L4", "0", "8", "32Gi", "True", false},
    /* not usable: not ready, unknown, cordoned, no Ready condition yet */
    {"down", "NVIDIA-A100-SXM4-80GB", "8", "999", "999Gi", "False", false},
    {"lost", "NVIDIA-L4", "8", "999", "999Gi", "Unknown", false},
    {"cordoned", "NVIDIA-L4", "8", "999", "999Gi", "True", true},
    {"new", "NVIDIA-L4", "8", "999", "999Gi", NULL, false},
};

static json_t *node(const struct node_case *c)
{
    json_t *n = parse("{'metadata':{'resourceVersion':'230','labels':{'kubernetes.io/os':'linux'}},"
                      "'spec':{'taints':[{'key':'node.kubernetes.io/not-ready','effect':"
                      "'NoSchedule'}]},'status':{'capacity':{'cpu':'1000','memory':'4Ti',"
                      "'pods':'110'},'allocatable':{'pods':'110'},'conditions':["
                      "{'type':'MemoryPressure','status':'False'},{'type':'DiskPressure',"
                      "'status':'False'},{'type':'PIDPressure','status':'False'}]}}");
    json_t *md = json_object_get(n, "metadata"), *st = json_object_get(n, "status");
    json_t *alloc = json_object_get(st, "allocatable");
    json_object_set_new(md, "name", json_string(c->name));
    if (c->product)
        json_object_set_new(json_object_get(md, "labels"), KUBE_DEFAULT_GPU_LABEL,
                            json_string(c->product));
    if (c->gpus)
        json_object_set_new(alloc, KUBE_DEFAULT_GPU_RESOURCE, json_string(c->gpus));
    json_object_set_new(alloc, "cpu", json_string(c->cpu));
    json_object_set_new(alloc, "memory", json_string(c->mem));
    if (c->ready)
        json_array_append_new(json_object_get(st, "conditions"),
                              json_pack("{s:s, s:s, s:s}", "type", "Ready", "status", c->ready,
                                        "reason", "KubeletReady"));
    if (c->cordoned)
        json_object_set_new(json_object_get(n, "spec"), "unschedulable", json_true());
    return n;
}

static long long total(const struct backend_resource *r, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].name, name) == 0)
            return r[i].total;
    return -1;
}

START_TEST(inventory_from_nodes)
{
    json_t *o = checked(GPU_OPTS), *items = json_array(), *first = json_array();
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        json_array_append_new(i < 2 ? first : items, node(&nodes[i]));
    struct backend_resource r[16], p[16];
    int n = kubejob_inventory_add(o, first, r, 16, 0); /* a page at a time, counts carried */
    ck_assert_int_eq(n, 3);
    n = kubejob_inventory_add(o, items, r, 16, n);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(total(r, n, "cpu"), 127 + 128 + 96 + 64 + 32 + 16 + 8);
    ck_assert_int_eq(total(r, n, "memory_gib"), 1007 + 1008 + 768 + 251 + 128 + 64 + 32);
    ck_assert_int_eq(total(r, n, "gpu:a100"), 16);                 /* through gpu_types */
    /* an unmapped label that is no GPU type as it stands is not offered (a job could not
     * select its nodes by it: selectors are case-sensitive) */
    ck_assert_int_eq(total(r, n, "gpu:nvidia-h100-80gb-hbm3"), -1);
    /* at most max; the ones there still add up */
    ck_assert_int_eq(kubejob_inventory_add(o, first, p, 2, 0), 2);
    ck_assert_int_eq(kubejob_inventory_add(o, items, p, 2, 2), 2);
    ck_assert_int_eq(total(p, 2, "cpu"), total(r, n, "cpu"));
    ck_assert_int_eq(total(p, 2, "memory_gib"), total(r, n, "memory_gib"));
    ck_assert_int_eq(kubejob_inventory_add(o, items, p, 0, 0), 0);
    /* without gpu_types: NVIDIA's product labels are not GPU types, so no GPUs */
    json_t *plain = checked("{}");
    ck_assert_int_eq(kubejob_inventory_add(plain, first, p, 16, 0), 2);
    ck_assert_int_eq(total(p, 2, "gpu:nvidia-a100-sxm4-80gb"), -1);
    /* no list, or junk in it */
    ck_assert_int_eq(kubejob_inventory_add(o, NULL, p, 16, 0), 0);
    json_t *junk = parse("[null,5,'x',{},{'status':'x'},{'status':{'conditions':[{'type':'Ready',"
                         "'status':'True'}],'allocatable':{'cpu':'lots','memory':5,"
                         "'nvidia.com/gpu':'-8'}}}]");
    ck_assert_int_eq(kubejob_inventory_add(o, junk, p, 16, 0), 0);
    json_decref(junk);
    /* another resource and label: the NVIDIA ones are not read */
    json_t *amd = checked(AMD_OPTS), *a = node(&nodes[6]), *one = json_pack("[o]", a);
    json_object_set_new((json_t *)AT(a, "metadata", "labels"), "amd.com/gpu.product",
                        json_string("AMD-Instinct-MI300X"));
    json_object_set_new((json_t *)AT(a, "status", "allocatable"), "amd.com/gpu", json_string("8"));
    json_object_set_new((json_t *)AT(a, "status", "allocatable"), "nvidia.com/gpu",
                        json_string("3"));
    ck_assert_int_eq(kubejob_inventory_add(amd, one, p, 16, 0), 3);
    ck_assert(total(p, 3, "gpu:mi300x") == 8 && total(p, 3, "cpu") == 8);
    json_decref(one);
    json_decref(amd);
    json_decref(plain);
    json_decref(first);
    json_decref(items);
    json_decref(o);
}
END_TEST

/*
 * The inventory offers a GPU type only under a name whose nodeSelector selects
 * its nodes: through gpu_types, or a label value that is a GPU type as it stands.
 */
START_TEST(inventory_type_selects_its_nodes)
{
    json_t *o = checked("{}"), *items = json_array();
    json_t *h = node(&nodes[2]); /* NVIDIA-H100-80GB-HBM3: not offered without gpu_types */
    json_array_append(items, h);
    struct backend_resource r[4];
    ck_assert_int_eq(kubejob_inventory_add(o, items, r, 4, 0), 2);
    json_object_set_new((json_t *)AT(h, "metadata", "labels"), KUBE_DEFAULT_GPU_LABEL,
                        json_string("h100"));
    int n = kubejob_inventory_add(o, items, r, 4, 0);
    ck_assert(n == 3 && strcmp(r[2].name, "gpu:h100") == 0);
    struct backend_job j = full_job(NULL);
    j.gpu_type = r[2].name + 4;
    json_t *b = build(o, &j);
    const char *v = STR(b, "spec", "template", "spec", "nodeSelector", KUBE_DEFAULT_GPU_LABEL);
    ck_assert_str_eq(v ? v : "(none)", "h100");
    json_decref(b);
    json_decref(h);
    json_decref(items);
    json_decref(o);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {options_defaults_filled, options_sizes_and_unknown,
                            namespace_never_cut_short, name_of_a_run, build_the_captured_gpu_job,
                            build_cpu_only_job, build_priority_env_command_refusals,
                            status_of_garbage, inventory_from_nodes,
                            inventory_type_selects_its_nodes};
    Suite *s = suite_create("kubejob");
    TCase *tc = tcase_create("kubejob");
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        tcase_add_test(tc, tests[i]);
#define LOOP(test, table) tcase_add_loop_test(tc, test, 0, (int)(sizeof table / sizeof table[0]))
    LOOP(options_values, opts);
    LOOP(namespace_of_a_job, ns_cases);
    LOOP(build_gpu_resource_and_selector, sel_cases);
    LOOP(status_of_jobs, st_cases);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
