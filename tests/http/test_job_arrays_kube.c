/*
 * test_job_arrays_kube.c - a job array on the real test kube-apiserver: one
 * Indexed Job (completions = count, parallelism = max_parallel; each pod's
 * AIDC_ARRAY_INDEX and SLURM_ARRAY_TASK_ID from its completion-index
 * annotation) that the test's job controller completes, after which every
 * task and the parent have succeeded. The API server runs no pods: the
 * object is what is checked. Servers before 1.21 drop completionMode (the
 * test server is 1.20): checked only where the server keeps it.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/kubetest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char ta[40], nsa[64];
static char *ann;

static void setup(void)
{
    kubetest_setup("arrkube", NULL);
    kubetest_nodes(false);
    kubetest_tenant('a', true, ta, sizeof ta, nsa, sizeof nsa);
    kubetest_cluster_ready();
    ann = jobs_tenant_member(ta, "lab", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":8}}", "ann");
}

static void teardown(void)
{
    free(ann);
    kubetest_teardown();
}

/* The env entry name of container (borrowed), or NULL. */
static const json_t *env_entry(const json_t *container, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(container, "env"), i,
                       e) if (jstr(e, "name") && strcmp(jstr(e, "name"), name) == 0) return e;
    return NULL;
}

START_TEST(an_array_is_one_indexed_job)
{
    json_t *b = json_loads(kubetest_job_body("lab", "sweep", 1, 10), 0, NULL);
    json_object_set_new(b, "array", json_pack("{s:i, s:i}", "count", 3, "max_parallel", 2));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char *parent = jobs_submit(ann, ta, body);
    free(body);
    char *bid = kubetest_wait_delivered(ann, ta, parent);
    ck_assert_uint_eq(kubetest_job_count(parent), 1); /* one Job for the array */
    json_t *kj = kube_job_get(bid);
    ck_assert_ptr_nonnull(kj);
    json_t *spec = json_object_get(kj, "spec");
    ck_assert_int_eq(jint(spec, "completions"), 3);
    ck_assert_int_eq(jint(spec, "parallelism"), 2);
    const char *mode = jstr(spec, "completionMode");
    ck_assert(mode == NULL || strcmp(mode, "Indexed") == 0);
    json_t *c = json_array_get(
        json_object_get(json_object_get(json_object_get(spec, "template"), "spec"), "containers"),
        0);
    for (int k = 0; k < 2; k++) {
        const json_t *e = env_entry(c, k ? "SLURM_ARRAY_TASK_ID" : "AIDC_ARRAY_INDEX");
        ck_assert_ptr_nonnull(e);
        ck_assert_str_eq(
            jstr(json_object_get(json_object_get(e, "valueFrom"), "fieldRef"), "fieldPath"),
            "metadata.annotations['batch.kubernetes.io/job-completion-index']");
    }
    json_decref(kj);
    /* the job controller completes it: every index succeeded */
    time_t now = time(NULL);
    kube_job_complete(bid, now - 5, now);
    json_t *p = jobs_wait(ann, ta, parent, "succeeded,failed,cancelled", KUBETEST_WAIT_S);
    ck_assert_str_eq(jstr(p, "state"), "succeeded");
    ck_assert_int_eq(jint(json_object_get(p, "array_tasks"), "succeeded"), 3);
    json_decref(p);
    json_t *tasks = get_items(fmt("/api/v1/tenants/%s/jobs?array_parent=%s", ta, parent), ann);
    size_t i;
    json_t *t;
    ck_assert_uint_eq(json_array_size(tasks), 3);
    json_array_foreach(tasks, i, t)
    {
        ck_assert_str_eq(jstr(t, "state"), "succeeded");
        ck_assert_str_eq(jstr(t, "backend_job_id"), fmt("%s_%lld", bid, jint(t, "array_index")));
    }
    json_decref(tasks);
    free(bid);
    free(parent);
}
END_TEST

int main(void)
{
    harness_require_pg();
    kubetest_env();
    Suite *s = suite_create("job_arrays_kube");
    TCase *tc = tcase_create("job_arrays_kube");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, NULL, kubetest_settle);
    tcase_set_timeout(tc, 2 * KUBETEST_WAIT_S);
    tcase_add_test(tc, an_array_is_one_indexed_job);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
