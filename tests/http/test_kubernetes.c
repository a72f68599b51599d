/*
 * test_kubernetes.c - jobs through aidc on a real Kubernetes API server
 * (kube-apiserver 1.20 from k8s-up.sh: Jobs are stored, validated, listed and
 * deleted for real, but nothing runs them; the test plays the job controller
 * by writing each Job's status subresource, as fixtures/kubernetes/README.md
 * describes):
 * - the inventory from Nodes: GPUs of Ready, schedulable nodes by their
 *   product label, cores and memory of those nodes only;
 * - the Job aidc creates: pinned image, command, env, resources, node
 *   selector, deadline, no retries, labels, scheduler and priority class;
 * - a Job that runs and completes (Kubernetes' times become the job's), that
 *   fails (BackoffLimitExceeded, DeadlineExceeded), that is cancelled (deleted
 *   at once, propagationPolicy Background), that is preempted by a reclaim
 *   (deleted, requeued, run again as a new Job);
 * - listing in pages (options.page_size 2) follows every page;
 * - a namespace that does not exist fails the job at once, naming it;
 * - mounts: one volume of options.storage.claim and a volumeMount per space
 *   (its subPath, datasets read-only); without a claim the job fails, saying so;
 * - a wrong token makes the cluster unhealthy with a 401.
 * The API server stopped and started again, and aidcd's crash between the
 * API server's accept and its own commit, are test_kubernetes_outage.c's.
 *
 * The API server keeps its state across runs and may serve other runs at the
 * same time: tenants (so namespaces) and Nodes are named after this run, the
 * Nodes carry a GPU product label of this run's own (mapped to "a100" through
 * options.gpu_types) so other runs' Nodes never count as a100, and both are
 * deleted at the end (tests/support/kubetest.h: the fixture both programs
 * share).
 *
 * Needs AIDC_TEST_K8S_URL, _TOKEN and _CA (skipped, 77, without the URL). The
 * clean-up after each test may start aidcd again, so the suite runs without
 * Check's fork.
 */
#include "tests/support/client.h"

#include "lib/imgref.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/kubetest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static char ta[40], tb[40], tc_[40];    /* tenants: main, borrower, without a namespace */
static char nsa[64], nsb[64], nsc[64];  /* their namespaces (aidc-{tenant}) */
static char *ann, *bob, *cat;           /* members of ta, tb, tc_ */

/* ---- fixture ------------------------------------------------------------------------- */

static void setup(void)
{
    static const char *const env[] = {
        /* the pods' grace period (the Job test checks it), and how long a reclaim
         * waits for the borrower's job to stop */
        "AIDC_PREEMPT_GRACE_SECONDS=1",
        "AIDC_TEST_K8S_BAD_TOKEN=not-the-token-of-anybody", /* the wrong token test's */
        NULL};
    kubetest_setup("kubernetes", env);
    kubetest_nodes(true); /* with the cordoned and NotReady ones: the inventory test */
    kubetest_tenant('a', true, ta, sizeof ta, nsa, sizeof nsa);
    kubetest_tenant('b', true, tb, sizeof tb, nsb, sizeof nsb);
    kubetest_tenant('c', false, tc_, sizeof tc_, nsc, sizeof nsc); /* its jobs find no namespace */
    kubetest_cluster_ready();
    ann = jobs_tenant_member(ta, "lab", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":8}}", "ann");
    bob = jobs_tenant_member(tb, "cells", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":8}}", "bob");
    cat = jobs_tenant_member(tc_, "void", "{\"gpu:a100\":{\"guaranteed\":1,\"limit\":1}}", "cat");
}

static void teardown(void)
{
    free(ann);
    free(bob);
    free(cat);
    kubetest_teardown();
}

/* ---- helpers ------------------------------------------------------------------------- */

/* Seconds of the job's RFC 3339 field key, whole (-1 when it has none). */
static double ts_of(const json_t *job, const char *key)
{
    return jobs_ts(json_object_get(job, key));
}

/* Whether s occurs anywhere in audit_events. */
static bool audit_has(const char *s)
{
    PGresult *r =
        harness_sql(harness_srv.owner_url,
                    "SELECT coalesce(string_agg(t::text, ' '), '') FROM audit_log t", 0, NULL);
    ck_assert_ptr_nonnull(r);
    bool found = strstr(PQgetvalue(r, 0, 0), s) != NULL;
    PQclear(r);
    return found;
}

static bool history_has(const char *token, const char *tenant, const char *id, const char *what)
{
    char *h = jobs_history(token, tenant, id);
    bool yes = strstr(h, what) != NULL;
    if (!yes)
        fprintf(stderr, "history of %s: %s (want %s)\n", id, h, what);
    free(h);
    return yes;
}

/* env entry name of a container, or NULL */
static const char *env_value(const json_t *container, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(container, "env"), i, e) {
        if (jstr(e, "name") && strcmp(jstr(e, "name"), name) == 0)
            return jstr(e, "value") ? jstr(e, "value") : "";
    }
    return NULL;
}

/* ---- the inventory --------------------------------------------------------------------- */

/* A quantity of the API in cores (gib false) or GiB, rounded down; -1 when not one. */
static long long quantity(const char *s, bool gib)
{
    if (!s)
        return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno)
        return -1;
    static const struct {
        const char *suffix;
        double factor;
    } units[] = {{"", 1},           {"m", 1e-3},           {"k", 1e3},
                 {"M", 1e6},        {"G", 1e9},            {"T", 1e12},
                 {"Ki", 1024.0},    {"Mi", 1048576.0},     {"Gi", 1073741824.0},
                 {"Ti", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0)
            return (long long)floor(v * units[i].factor / (gib ? 1073741824.0 : 1.0) + 1e-9);
    return -1;
}

/* Cores and GiB of the usable Nodes (Ready, not cordoned) that are not this run's. */
static bool others(long long *cpu, long long *mem)
{
    json_t *items = kube_nodes();
    size_t i, k;
    json_t *n, *c;
    bool ok = true;
    *cpu = *mem = 0;
    json_array_foreach(items, i, n) {
        const char *name = jstr(json_object_get(n, "metadata"), "name");
        bool mine = false;
        for (int m = 0; m < 4; m++)
            mine |= name && strcmp(name, kube_node[m]) == 0;
        if (mine || json_is_true(json_object_get(json_object_get(n, "spec"), "unschedulable")))
            continue;
        bool ready = false;
        json_array_foreach(json_object_get(json_object_get(n, "status"), "conditions"), k, c) {
            if (jstr(c, "type") && strcmp(jstr(c, "type"), "Ready") == 0)
                ready = jstr(c, "status") && strcmp(jstr(c, "status"), "True") == 0;
        }
        if (!ready)
            continue;
        const json_t *a = json_object_get(json_object_get(n, "status"), "allocatable");
        long long x = quantity(jstr(a, "cpu"), false), y = quantity(jstr(a, "memory"), true);
        ok &= x >= 0 && y >= 0;
        *cpu += x > 0 ? x : 0;
        *mem += y > 0 ? y : 0;
    }
    json_decref(items);
    return ok;
}

START_TEST(inventory_counts_ready_schedulable_nodes)
{
    /* GPUs: this run's label only, so exact: 2 usable nodes x 4 */
    json_t *c = kubetest_cluster_get(KUBETEST_CL);
    ck_assert_int_eq(kubetest_total(c, "gpu:a100"), 8);
    ck_assert(json_is_true(json_object_get(c, "healthy")));
    json_t *o = json_object_get(c, "options");
    ck_assert_str_eq(jstr(o, "gpu_resource"), KUBETEST_GPU_RES); /* defaults filled in */
    ck_assert_str_eq(jstr(o, "gpu_type_label"), KUBETEST_GPU_LABEL);
    json_decref(c);
    /* cores and memory: this run's two usable nodes on top of whatever else is usable
     * (other runs may add Nodes meanwhile: look again until both views agree) */
    double deadline = jobs_now() + 30;
    for (;;) {
        long long ocpu = 0, omem = 0;
        ck_assert_msg(others(&ocpu, &omem), "a Node's allocatable is no quantity this test reads");
        ck_assert_int_eq(
            req("POST", "/api/v1/clusters/" KUBETEST_CL "/sync", harness_srv.admin_token, NULL),
            202);
        jobs_nap_ms(300);
        c = kubetest_cluster_get(KUBETEST_CL);
        long long cpu = kubetest_total(c, "cpu"), mem = kubetest_total(c, "memory_gib"),
                  a100 = kubetest_total(c, "gpu:a100");
        json_decref(c);
        if (cpu - ocpu == 64 && mem - omem == 256 && a100 == 8)
            break;
        ck_assert_msg(jobs_now() < deadline,
                      "cpu %lld (others %lld, want +64), memory_gib %lld (others %lld, want "
                      "+256), gpu:a100 %lld (want 8)",
                      cpu, ocpu, mem, omem, a100);
    }
}
END_TEST

/* ---- the Job --------------------------------------------------------------------------- */

START_TEST(the_job_kubernetes_stores_is_the_job_submitted)
{
    char *id = jobs_submit(
        ann, ta,
        fmt("{\"project\":\"lab\",\"name\":\"shape\",\"cluster\":\"" KUBETEST_CL "\",\"image\":\""
            KUBETEST_IMAGE_REPO ":" KUBETEST_IMAGE_TAG "\",\"command\":[\"python\",\"train.py\","
            "\"--epochs\",\"3\"],"
            "\"env\":{\"FOO\":\"bar\",\"WANDB_API_KEY\":\"k8s-test-secret-value\"},\"gpus\":2,"
            "\"gpu_type\":\"a100\",\"cpus\":4,\"memory_gib\":16,\"time_limit_minutes\":30,"
            "\"priority\":\"high\"}"));
    char *bid = kubetest_wait_delivered(ann, ta, id);
    ck_assert_str_eq(bid, kubetest_bid_want(nsa, id));
    json_t *kj = kube_job_get(bid);
    ck_assert_msg(kj != NULL, "the API server has no Job %s", bid);

    const json_t *md = json_object_get(kj, "metadata");
    ck_assert_str_eq(jstr(md, "namespace"), nsa);
    ck_assert_str_eq(jstr(md, "name"), fmt("aidc-%s", id));
    const json_t *spec = json_object_get(kj, "spec");
    const json_t *tmd = json_object_get(json_object_get(spec, "template"), "metadata");
    const json_t *lsets[2] = {json_object_get(md, "labels"), json_object_get(tmd, "labels")};
    for (int i = 0; i < 2; i++) { /* on the Job, and on its pods */
        const json_t *l = lsets[i];
        ck_assert_ptr_nonnull(l);
        ck_assert_str_eq(jstr(l, "aidc.io/run"), id);
        ck_assert_str_eq(jstr(l, "aidc.io/job"), id);
        ck_assert_str_eq(jstr(l, "aidc.io/tenant"), ta);
        ck_assert_str_eq(jstr(l, "aidc.io/project"), "lab");
        ck_assert_str_eq(jstr(l, "app.kubernetes.io/managed-by"), "aidc");
        ck_assert_str_eq(jstr(l, "kueue.x-k8s.io/queue-name"), fmt("%s-q", ta));
    }
    ck_assert_int_eq(json_integer_value(json_object_get(spec, "backoffLimit")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(spec, "activeDeadlineSeconds")), 30 * 60);

    const json_t *pod = json_object_get(json_object_get(spec, "template"), "spec");
    ck_assert_str_eq(jstr(pod, "restartPolicy"), "Never");
    ck_assert_str_eq(jstr(pod, "schedulerName"), "volcano");
    ck_assert_str_eq(jstr(pod, "priorityClassName"), "aidc-high");
    ck_assert_str_eq(jstr(json_object_get(pod, "nodeSelector"), KUBETEST_GPU_LABEL),
                     kube_gpu_value);
    ck_assert_int_eq(json_object_size(json_object_get(pod, "nodeSelector")), 1);
    /* the pods stop with aidc's grace period (AIDC_PREEMPT_GRACE_SECONDS) */
    ck_assert_int_eq(json_integer_value(json_object_get(pod, "terminationGracePeriodSeconds")), 1);

    const json_t *containers = json_object_get(pod, "containers");
    ck_assert_int_eq(json_array_size(containers), 1);
    const json_t *ct = json_array_get(containers, 0);
    /* pinned to its digest */
    ck_assert_str_eq(jstr(ct, "image"), KUBETEST_IMAGE_REPO "@" KUBETEST_DIGEST);
    json_t *want_cmd = json_pack("[s,s,s,s]", "python", "train.py", "--epochs", "3");
    ck_assert_msg(json_equal(json_object_get(ct, "command"), want_cmd), "command differs");
    json_decref(want_cmd);
    ck_assert_str_eq(env_value(ct, "FOO"), "bar");
    ck_assert_str_eq(env_value(ct, "WANDB_API_KEY"), "k8s-test-secret-value");
    ck_assert_str_eq(env_value(ct, "AIDC_JOB_ID"), id);
    const json_t *res = json_object_get(ct, "resources");
    const char *kinds[2] = {"limits", "requests"};
    for (int i = 0; i < 2; i++) {
        const json_t *r = json_object_get(res, kinds[i]);
        ck_assert_msg(r != NULL, "no resources.%s", kinds[i]);
        ck_assert_str_eq(jstr(r, KUBETEST_GPU_RES), "2");
        ck_assert_str_eq(jstr(r, "cpu"), "4");
        ck_assert_str_eq(jstr(r, "memory"), "16Gi");
    }
    json_decref(kj);

    /* the submit is audited as sent: the job's secret values and the token nowhere */
    json_t *ev = kubetest_audit_events("backend.submit", id, 1);
    const json_t *rq = json_object_get(json_object_get(json_array_get(ev, 0), "details"), "request");
    ck_assert_str_eq(jstr(rq, "method"), "POST");
    ck_assert_str_eq(jstr(rq, "url"), fmt("%s/apis/batch/v1/namespaces/%s/jobs", kube_url, nsa));
    json_decref(ev);
    ck_assert(!audit_has("k8s-test-secret-value"));
    ck_assert(!audit_has(kube_token));

    kubetest_complete(ann, ta, id, bid);
    free(bid);
    free(id);
}
END_TEST

START_TEST(a_job_runs_and_completes_with_kubernetes_times)
{
    char *id = jobs_submit(ann, ta, kubetest_job_body("lab", "runs", 1, 10));
    char *bid = kubetest_wait_delivered(ann, ta, id);
    time_t start = time(NULL) - 20;
    kube_job_running(bid, start);
    json_t *j = jobs_wait(ann, ta, id, "running,succeeded,failed,cancelled", KUBETEST_WAIT_S);
    ck_assert_str_eq(jstr(j, "state"), "running");
    ck_assert_msg(ts_of(j, "started_at") == (double)start, "started_at %s, the Job's startTime %s",
                  jstr(j, "started_at"), kube_time(start));
    json_decref(j);

    time_t done = time(NULL) - 1;
    kube_job_complete(bid, start, done);
    j = jobs_wait(ann, ta, id, "succeeded,failed,cancelled", KUBETEST_WAIT_S);
    ck_assert_str_eq(jstr(j, "state"), "succeeded");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "exit_code")), 0);
    ck_assert_msg(ts_of(j, "started_at") == (double)start, "started_at %s, want %s",
                  jstr(j, "started_at"), kube_time(start));
    ck_assert_msg(ts_of(j, "finished_at") == (double)done,
                  "finished_at %s, the Job's completionTime %s", jstr(j, "finished_at"),
                  kube_time(done));
    json_decref(j);
    ck_assert(history_has(ann, ta, id, "pending,running,succeeded"));
    free(bid);
    free(id);
}
END_TEST

START_TEST(failed_jobs_say_why)
{
    char *a = jobs_submit(ann, ta, kubetest_job_body("lab", "backoff", 1, 10));
    char *b = jobs_submit(ann, ta, kubetest_job_body("lab", "deadline", 1, 5));
    char *ba = kubetest_wait_delivered(ann, ta, a), *bb = kubetest_wait_delivered(ann, ta, b);
    json_t *kb = kube_job_get(bb);
    ck_assert_ptr_nonnull(kb);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(kb, "spec"), "activeDeadlineSeconds")),
        300);
    json_decref(kb);

    time_t start = time(NULL) - 30;
    kube_job_running(ba, start);
    json_decref(jobs_wait(ann, ta, a, "running", KUBETEST_WAIT_S));
    kube_job_failed(ba, start, start + 10, "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit");
    kube_job_failed(bb, start, start + 20, "DeadlineExceeded",
                    "Job was active longer than specified deadline");

    json_t *j = jobs_wait(ann, ta, a, "succeeded,failed,cancelled", KUBETEST_WAIT_S);
    ck_assert_str_eq(jstr(j, "state"), "failed");
    ck_assert_msg(jstr(j, "reason") && strstr(jstr(j, "reason"), "BackoffLimitExceeded"),
                  "reason: %s", jstr(j, "reason"));
    ck_assert_msg(ts_of(j, "finished_at") == (double)(start + 10), "finished_at %s",
                  jstr(j, "finished_at"));
    json_decref(j);

    j = jobs_wait(ann, ta, b, "succeeded,failed,cancelled", KUBETEST_WAIT_S);
    ck_assert_str_eq(jstr(j, "state"), "failed");
    ck_assert_msg(jstr(j, "reason") && strstr(jstr(j, "reason"), "time limit"), "reason: %s",
                  jstr(j, "reason"));
    ck_assert_msg(ts_of(j, "started_at") == (double)start, "started_at %s", jstr(j, "started_at"));
    ck_assert_msg(ts_of(j, "finished_at") == (double)(start + 20), "finished_at %s",
                  jstr(j, "finished_at"));
    json_decref(j);
    free(ba);
    free(bb);
    free(a);
    free(b);
}
END_TEST

START_TEST(cancel_deletes_the_job_at_once)
{
    char *id = jobs_submit(ann, ta, kubetest_job_body("lab", "cancelled", 1, 10));
    char *bid = kubetest_wait_delivered(ann, ta, id);
    kube_job_running(bid, time(NULL) - 5);
    json_decref(jobs_wait(ann, ta, id, "running", KUBETEST_WAIT_S));
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/%s/jobs/%s/cancel", ta, id), ann, NULL), 202);

    /* once the DELETE is recorded, the Job is gone: no finalizer keeps it (Background) */
    json_t *ev = kubetest_audit_events("backend.cancel", id, 1);
    json_t *kj = kube_job_get(bid);
    ck_assert_msg(kj == NULL, "the Job %s is still there after its DELETE (deletionTimestamp %s)",
                  bid, kj ? jstr(json_object_get(kj, "metadata"), "deletionTimestamp") : "");
    const json_t *e = json_array_get(ev, 0);
    ck_assert_str_eq(jstr(e, "outcome"), "success");
    const json_t *rq = json_object_get(json_object_get(e, "details"), "request");
    ck_assert_str_eq(jstr(rq, "method"), "DELETE");
    ck_assert_str_eq(jstr(rq, "url"),
                     fmt("%s/apis/batch/v1/namespaces/%s/jobs/aidc-%s", kube_url, nsa, id));
    ck_assert_str_eq(jstr(json_object_get(rq, "body"), "propagationPolicy"), "Background");
    json_decref(ev);
    ck_assert(!audit_has(kube_token));

    json_t *j = jobs_wait(ann, ta, id, "cancelled,failed,succeeded", KUBETEST_WAIT_S);
    ck_assert_str_eq(jstr(j, "state"), "cancelled");
    json_decref(j);
    ck_assert_int_eq(kubetest_job_count(id), 0);
    free(bid);
    free(id);
}
END_TEST

/* options.page_size 2: three live Jobs take two pages of the list, every one is followed */
START_TEST(paging_follows_every_page)
{
    char *id[3], *bid[3];
    for (int i = 0; i < 3; i++)
        id[i] = jobs_submit(ann, ta, kubetest_job_body("lab", fmt("page-%d", i), 1, 10));
    for (int i = 0; i < 3; i++)
        bid[i] = kubetest_wait_delivered(ann, ta, id[i]);
    json_t *mine = kube_jobs_labelled(nsa, "app.kubernetes.io/managed-by=aidc");
    ck_assert_int_ge(json_array_size(mine), 3);
    json_decref(mine);
    time_t start = time(NULL) - 10;
    for (int i = 0; i < 3; i++)
        kube_job_running(bid[i], start);
    for (int i = 0; i < 3; i++)
        json_decref(jobs_wait(ann, ta, id[i], "running", KUBETEST_WAIT_S));
    for (int i = 0; i < 3; i++)
        kube_job_complete(bid[i], start, start + 5 + i);
    for (int i = 0; i < 3; i++) {
        json_t *j = jobs_wait(ann, ta, id[i], "succeeded,failed,cancelled", KUBETEST_WAIT_S);
        ck_assert_str_eq(jstr(j, "state"), "succeeded");
        ck_assert(ts_of(j, "finished_at") == (double)(start + 5 + i));
        json_decref(j);
        free(bid[i]);
        free(id[i]);
    }
}
END_TEST

START_TEST(a_missing_namespace_fails_the_job_at_once)
{
    char *id = jobs_submit(cat, tc_, kubetest_job_body("void", "nowhere", 1, 10));
    json_t *j = jobs_wait(cat, tc_, id, "pending,running,succeeded,failed,cancelled", 30);
    ck_assert_str_eq(jstr(j, "state"), "failed");
    const char *reason = jstr(j, "reason");
    ck_assert_msg(reason && strstr(reason, nsc), "reason: %s (want it to name namespace %s)",
                  reason, nsc);
    json_decref(j);
    /* refused once, not tried again and again */
    ck_assert(history_has(cat, tc_, id, "queued,admitted,failed"));
    json_t *ev = kubetest_audit_events("backend.submit", id, 1);
    ck_assert_int_eq(json_array_size(ev), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(ev, 0), "status")), 404);
    json_decref(ev);
    ck_assert_int_eq(kubetest_job_count(id), 0);
    free(id);
}
END_TEST

/* The body of a job of ann with mounts (JSON text). */
static char *mounted_body(const char *name, const char *mounts)
{
    json_t *b = json_loads(kubetest_job_body("lab", name, 1, 10), 0, NULL);
    ck_assert_ptr_nonnull(b);
    json_object_set_new(b, "mounts", json_loads(mounts, 0, NULL));
    char *text = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return text;
}

/* Mounts: one volume of options.storage.claim, a volumeMount per space at its subPath. */
START_TEST(mounts_are_volume_mounts_of_the_claim)
{
    /* no claim: the job fails at once, saying what is missing */
    char *body = mounted_body("unclaimed", "[{\"space\":\"project\"}]");
    char *id = jobs_submit(ann, ta, body);
    free(body);
    json_t *j = jobs_wait(ann, ta, id, "pending,running,succeeded,failed,cancelled", 30);
    ck_assert_str_eq(jstr(j, "state"), "failed");
    ck_assert_msg(strstr(jstr(j, "reason"), "options.storage.claim"), "%s", jstr(j, "reason"));
    json_decref(j);
    ck_assert_int_eq(kubetest_job_count(id), 0);
    free(id);
    /* with one (the dataset is on aidcd's storage root, as the files API makes it) */
    PQclear(harness_sql(harness_srv.owner_url,
                        "UPDATE clusters SET options = options || "
                        "'{\"storage\":{\"claim\":\"aidc-spaces\"}}' WHERE name = '" KUBETEST_CL "'",
                        0, NULL));
    for (size_t i = 0; i < 4; i++) {
        char path[600];
        int n = snprintf(path, sizeof path, "%s/storage", harness_srv.data_dir);
        if (i)
            snprintf(path + n, sizeof path - (size_t)n, "/%s%s", ta,
                     i == 1 ? "" : i == 2 ? "/datasets" : "/datasets/ref");
        ck_assert_msg(mkdir(path, 0755) == 0 || errno == EEXIST, "%s: %s", path, strerror(errno));
    }
    body = mounted_body("claimed", "[{\"space\":\"project\"},{\"space\":\"home\"},"
                                   "{\"space\":\"dataset\",\"name\":\"ref\"}]");
    id = jobs_submit(ann, ta, body);
    free(body);
    char *bid = kubetest_wait_delivered(ann, ta, id);
    json_t *kj = kube_job_get(bid);
    ck_assert_msg(kj != NULL, "the API server has no Job %s", bid);
    const json_t *pod = json_object_get(
        json_object_get(json_object_get(kj, "spec"), "template"), "spec");
    json_t *want = json_pack("[{s:s, s:{s:s}}]", "name", "aidc-storage", "persistentVolumeClaim",
                             "claimName", "aidc-spaces");
    ck_assert_msg(json_equal(json_object_get(pod, "volumes"), want), "volumes: %s",
                  json_dumps(json_object_get(pod, "volumes"), 0));
    json_decref(want);
    const json_t *ct = json_array_get(json_object_get(pod, "containers"), 0);
    want = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:b, s:s, s:s}]", "name",
                     "aidc-storage", "mountPath", "/data/project", "subPath",
                     fmt("%s/projects/lab", ta), "name", "aidc-storage", "mountPath", "/home/ann",
                     "subPath", fmt("%s/home/ann", ta), "name", "aidc-storage", "readOnly", 1,
                     "mountPath", "/data/datasets/ref", "subPath", fmt("%s/datasets/ref", ta));
    ck_assert_msg(json_equal(json_object_get(ct, "volumeMounts"), want), "volumeMounts: %s",
                  json_dumps(json_object_get(ct, "volumeMounts"), 0));
    json_decref(want);
    ck_assert_str_eq(env_value(ct, "AIDC_PROJECT_DIR"), "/data/project");
    ck_assert_str_eq(env_value(ct, "AIDC_HOME_DIR"), "/home/ann");
    ck_assert_str_eq(env_value(ct, "AIDC_DATASETS_DIR"), "/data/datasets");
    json_decref(kj);
    kubetest_complete(ann, ta, id, bid);
    PQclear(harness_sql(harness_srv.owner_url,
                        "UPDATE clusters SET options = options - 'storage' WHERE name = '"
                        KUBETEST_CL "'", 0, NULL));
    free(bid);
    free(id);
}
END_TEST

START_TEST(a_wrong_token_makes_the_cluster_unhealthy)
{
    kubetest_register_cluster("k8s-bad", "env:AIDC_TEST_K8S_BAD_TOKEN");
    ck_assert_int_eq(req("POST", "/api/v1/clusters/k8s-bad/sync", harness_srv.admin_token, NULL),
                     202);
    double deadline = jobs_now() + 30;
    for (;;) {
        json_t *c = kubetest_cluster_get("k8s-bad");
        const char *err = jstr(c, "last_error");
        if (err) {
            ck_assert(json_is_false(json_object_get(c, "healthy")));
            ck_assert_msg(strstr(err, "401") != NULL, "last_error: %s", err);
            ck_assert_int_eq(json_object_size(json_object_get(c, "inventory")), 0);
            json_decref(c);
            break;
        }
        json_decref(c);
        ck_assert_msg(jobs_now() < deadline, "cluster k8s-bad has no last_error after 30 s");
        jobs_nap_ms(100);
    }
    /* the good one is unaffected */
    json_t *c = kubetest_cluster_get(KUBETEST_CL);
    ck_assert(json_is_true(json_object_get(c, "healthy")));
    json_decref(c);
}
END_TEST

/*
 * bob's tenant (guaranteed 2) borrows 6 of the 8 GPUs; ann's (guaranteed 4) asks for 4:
 * aidc deletes bob's Job, requeues his job, runs ann's, then bob's again as a new Job.
 */
START_TEST(reclaim_deletes_the_borrowers_job_which_runs_again)
{
    char *b = jobs_submit(bob, tb, kubetest_job_body("cells", "borrower", 6, 10));
    char *bbid = kubetest_wait_delivered(bob, tb, b);
    ck_assert_str_eq(bbid, kubetest_bid_want(nsb, b));
    kube_job_running(bbid, time(NULL) - 5);
    json_t *jb = jobs_wait(bob, tb, b, "running", KUBETEST_WAIT_S);
    ck_assert(json_is_true(json_object_get(jb, "preemptible")));
    json_decref(jb);

    char *a = jobs_submit(ann, ta, kubetest_job_body("lab", "owner", 4, 10));
    /* the borrower's Job goes (the preempt is a DELETE, Background) */
    json_t *ev = kubetest_audit_events("backend.preempt", b, 1);
    const json_t *rq = json_object_get(json_object_get(json_array_get(ev, 0), "details"), "request");
    ck_assert_str_eq(jstr(rq, "method"), "DELETE");
    ck_assert_str_eq(jstr(json_object_get(rq, "body"), "propagationPolicy"), "Background");
    json_decref(ev);
    json_t *kj = kube_job_get(bbid);
    ck_assert_msg(kj == NULL, "the borrower's Job %s is still there", bbid);

    jb = jobs_wait(bob, tb, b, "queued,succeeded,failed,cancelled", KUBETEST_WAIT_S);
    ck_assert_str_eq(jstr(jb, "state"), "queued");
    ck_assert_int_eq(json_integer_value(json_object_get(jb, "preemption_count")), 1);
    json_decref(jb);
    ck_assert(history_has(bob, tb, b, "running,preempted,queued"));

    /* the owner's job gets the GPUs, and ends */
    char *abid = kubetest_wait_delivered(ann, ta, a);
    kubetest_complete(ann, ta, a, abid);

    /* the borrower runs again: run 1, a Job of its own */
    char *rbid = kubetest_wait_delivered(bob, tb, b);
    ck_assert_str_eq(rbid, kubetest_bid_want(nsb, fmt("%s-r1", b)));
    json_t *rj = kube_job_get(rbid);
    ck_assert_ptr_nonnull(rj);
    const json_t *l = json_object_get(json_object_get(rj, "metadata"), "labels");
    ck_assert_str_eq(jstr(l, "aidc.io/run"), fmt("%s-r1", b));
    ck_assert_str_eq(jstr(l, "aidc.io/job"), b);
    json_decref(rj);
    ck_assert_int_eq(kubetest_job_count(b), 1); /* the first run's Job is gone */
    kubetest_complete(bob, tb, b, rbid);
    jb = jobs_get(bob, tb, b);
    ck_assert_int_eq(json_integer_value(json_object_get(jb, "preemption_count")), 1);
    json_decref(jb);
    free(rbid);
    free(abid);
    free(bbid);
    free(a);
    free(b);
}
END_TEST

int main(void)
{
    harness_require_pg();
    kubetest_env();
    Suite *s = suite_create("kubernetes");
    TCase *tc = tcase_create("kubernetes");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, NULL, kubetest_settle);
    /* no fork, so Check enforces no timeout: every wait has its own deadline */
    tcase_set_timeout(tc, 540);
    tcase_add_test(tc, inventory_counts_ready_schedulable_nodes);
    tcase_add_test(tc, the_job_kubernetes_stores_is_the_job_submitted);
    tcase_add_test(tc, a_job_runs_and_completes_with_kubernetes_times);
    tcase_add_test(tc, failed_jobs_say_why);
    tcase_add_test(tc, cancel_deletes_the_job_at_once);
    tcase_add_test(tc, paging_follows_every_page);
    tcase_add_test(tc, a_missing_namespace_fails_the_job_at_once);
    tcase_add_test(tc, mounts_are_volume_mounts_of_the_claim);
    tcase_add_test(tc, a_wrong_token_makes_the_cluster_unhealthy);
    tcase_add_test(tc, reclaim_deletes_the_borrowers_job_which_runs_again);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* kubetest_settle may start aidcd again */
}
