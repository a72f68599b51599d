/*
 * test_job_arrays_slurm.c - a job array on the real test Slurm: one submit,
 * seen by Slurm as one job array (--array=0-3%2: array_job_id and
 * array_max_tasks), its tasks mapped back to aidc's task rows
 * ("<array job id>_<index>") as they run and end, each with its index in
 * AIDC_ARRAY_INDEX and SLURM_ARRAY_TASK_ID; a running task is cancelled
 * alone in Slurm, one still waiting in the array is not (409); cancelling
 * the parent cancels the Slurm array and every task. A dependency on a job
 * in the same Slurm cluster is Slurm's own (--dependency afterok:<id>), and
 * one that can no longer hold cancels its dependant there
 * (dependency_failed:<id>).
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/slurmtest.h"
#include "tests/support/suite.h"

#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T      "phys"
#define WAIT_S 90

static char *ann;
static char outdir[256];
static const char *fast[] = {"AIDC_SYNC_INTERVAL_MS=200", "AIDC_ADMISSION_INTERVAL_MS=200", NULL};

static void setup(void)
{
    harness_setup("arrslurm", fast);
    curl_global_init(CURL_GLOBAL_ALL);
    slurmtest_register_cluster();
    ann = jobs_tenant_member(T, "lab", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":8}}", "ann");
    snprintf(outdir, sizeof outdir, "%s/jobs/arrays-%d", slurm_dir, (int)getpid());
    ck_assert_int_eq(mkdir(outdir, 01777), 0);
    ck_assert_int_eq(chmod(outdir, 01777), 0);
}

static void teardown(void)
{
    free(ann);
    harness_teardown();
    for (int i = 0; i < 4; i++)
        unlink(fmt("%s/idx.%d", outdir, i));
    rmdir(outdir);
}

/* The parent's tasks (new reference), by array_index. */
static json_t *tasks_of(const char *parent)
{
    json_t *all = get_items(fmt("/api/v1/tenants/" T "/jobs?array_parent=%s", parent), ann);
    json_t *out = json_array(), *t;
    size_t n = json_array_size(all), i;
    for (size_t want = 0; want < n; want++)
        json_array_foreach(all, i, t) if (json_integer_value(json_object_get(t, "array_index")) ==
                                          (json_int_t)want) json_array_append(out, t);
    json_decref(all);
    return out;
}

START_TEST(an_array_is_one_slurm_job_array_whose_tasks_map_back)
{
    json_t *b = json_loads(slurmtest_job("sweep", 1, "a100",
                                         fmt("#!/bin/bash\necho $AIDC_ARRAY_INDEX "
                                             "$SLURM_ARRAY_TASK_ID > %s/idx.$AIDC_ARRAY_INDEX\n"
                                             "sleep 1\n",
                                             outdir)),
                           0, NULL);
    json_object_set_new(b, "cluster", json_string("hpc"));
    json_object_set_new(b, "array", json_pack("{s:i, s:i}", "count", 4, "max_parallel", 2));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char *parent = jobs_submit(ann, T, body);
    free(body);
    /* delivered once: the parent carries the Slurm array's id */
    json_t *p = jobs_wait(ann, T, parent, "pending,running,succeeded", WAIT_S);
    const char *bid = jstr(p, "backend_job_id");
    ck_assert_ptr_nonnull(bid);
    json_t *sj = slurm_job_of(p);
    ck_assert_int_eq(jint(sj, "array_job_id"), strtoll(bid, NULL, 10));
    ck_assert_int_eq(jint(sj, "array_max_tasks"), 2);
    json_decref(sj);
    json_t *done = jobs_wait(ann, T, parent, "succeeded,failed,cancelled", WAIT_S);
    ck_assert_str_eq(jstr(done, "state"), "succeeded");
    ck_assert_int_eq(jint(json_object_get(done, "array_tasks"), "succeeded"), 4);
    /* one submit: every Slurm job of that name is a task of the one array */
    json_t *all = slurm_get("jobs");
    size_t i;
    json_t *j;
    int named = 0;
    json_array_foreach(json_object_get(all, "jobs"), i, j)
    {
        const char *nm = jstr(j, "name");
        if (nm && strcmp(nm, parent) == 0) {
            named++;
            ck_assert_int_eq(jint(j, "array_job_id"), strtoll(bid, NULL, 10));
        }
    }
    json_decref(all);
    ck_assert_int_eq(named, 4);
    /* metered task by task (a run each, closed); the parent, holding them, has none */
    PGresult *runs = harness_sql(
        harness_srv.owner_url,
        "SELECT count(*) FILTER (WHERE j.array_parent = $1::uuid AND r.ended_at IS NOT NULL),"
        " count(*) FILTER (WHERE j.id = $1::uuid) FROM job_runs r JOIN jobs j ON j.id = r.job_id",
        1, (const char *[]){parent});
    ck_assert_ptr_nonnull(runs);
    ck_assert_str_eq(PQgetvalue(runs, 0, 0), "4");
    ck_assert_str_eq(PQgetvalue(runs, 0, 1), "0");
    PQclear(runs);
    json_t *tasks = tasks_of(parent);
    ck_assert_uint_eq(json_array_size(tasks), 4);
    json_array_foreach(tasks, i, j)
    {
        ck_assert_str_eq(jstr(j, "state"), "succeeded");
        ck_assert_str_eq(jstr(j, "backend_job_id"), fmt("%s_%zu", bid, i));
        ck_assert_str_eq(jstr(j, "cluster"), "hpc");
        char *idx = harness_read_file(fmt("%s/idx.%zu", outdir, i));
        ck_assert_ptr_nonnull(idx);
        ck_assert_str_eq(idx, fmt("%zu %zu\n", i, i));
        free(idx);
    }
    json_decref(tasks);
    json_decref(done);
    json_decref(p);
    free(parent);
}
END_TEST

START_TEST(cancelling_the_parent_cancels_the_slurm_array)
{
    json_t *b = json_loads(slurmtest_job("held", 0, NULL, "#!/bin/bash\nsleep 300\n"), 0, NULL);
    json_object_set_new(b, "cluster", json_string("hpc"));
    json_object_set_new(b, "array", json_pack("{s:i, s:i}", "count", 4, "max_parallel", 1));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char *parent = jobs_submit(ann, T, body);
    free(body);
    json_decref(jobs_wait(ann, T, parent, "running", WAIT_S)); /* a task runs */
    /* the running task alone: cancelled in Slurm as <array>_<index>, the next one starts */
    json_t *tasks = tasks_of(parent);
    const char *first = jstr(json_array_get(tasks, 0), "id");
    json_t *t0 = jobs_wait(ann, T, first, "running", WAIT_S);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/" T "/jobs/%s/cancel", first), ann, NULL),
                     202);
    json_decref(t0);
    t0 = jobs_wait(ann, T, first, "cancelled", WAIT_S);
    json_t *sj0 = slurm_job_of(t0);
    ck_assert_str_eq(jstr(sj0, "job_state"), "CANCELLED");
    json_decref(sj0);
    json_decref(t0);
    json_decref(jobs_wait(ann, T, jstr(json_array_get(tasks, 1), "id"), "running", WAIT_S));
    /* one of the two Slurm still holds together: not alone (Slurm would run it, unmetered;
     * the last one left pending is shown as a task of its own, and may be) */
    struct http_res r;
    const char *last = jstr(json_array_get(tasks, 3), "id");
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/tenants/" T "/jobs/%s/cancel", last), ann, NULL, &r),
                     409);
    expect_problem(&r, "job.array_task_waits", "id", last);
    http_res_free(&r);
    json_decref(tasks);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/" T "/jobs/%s/cancel", parent), ann, NULL),
                     202);
    json_t *p = jobs_wait(ann, T, parent, "cancelled", WAIT_S);
    ck_assert_int_eq(jint(json_object_get(p, "array_tasks"), "cancelled"), 4);
    json_t *sj = slurm_job_of(p);
    ck_assert_str_eq(jstr(sj, "job_state"), "CANCELLED");
    json_decref(sj);
    json_decref(p);
    free(parent);
}
END_TEST

/* A job body on cluster hpc (malloc'd): slurmtest_job's with cluster and extra fields. */
static char *on_hpc(const char *name, const char *script, const char *extra_json)
{
    json_t *b = json_loads(slurmtest_job(name, 0, NULL, script), 0, NULL);
    json_t *x = extra_json ? json_loads(extra_json, 0, NULL) : json_object();
    ck_assert_ptr_nonnull(x);
    json_object_set_new(b, "cluster", json_string("hpc"));
    json_object_update(b, x);
    json_decref(x);
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return body;
}

START_TEST(a_dependency_in_the_same_slurm_cluster_is_slurms)
{
    char *body = on_hpc(
        "first", fmt("#!/bin/bash\nwhile [ ! -e %s/go ]; do sleep 0.2; done\n", outdir), NULL);
    char *a = jobs_submit(ann, T, body);
    free(body);
    json_t *ja = jobs_wait(ann, T, a, "pending,running", WAIT_S);
    char *abid = strdup(jstr(ja, "backend_job_id"));
    json_decref(ja);
    body = on_hpc("second", "#!/bin/bash\ntrue\n",
                  fmt("{\"depends_on\":[{\"job\":\"%s\",\"condition\":\"succeeded\"}]}", a));
    char *b = jobs_submit(ann, T, body);
    free(body);
    /* handed to Slurm at once, which holds it */
    json_t *jb = jobs_wait(ann, T, b, "pending", WAIT_S);
    json_t *sj = slurm_job_of(jb);
    ck_assert_str_eq(jstr(sj, "dependency"), fmt("afterok:%s(unfulfilled)", abid));
    json_decref(sj);
    json_decref(jb);
    /* a peer that fails: the dependant Slurm holds is cancelled by aidc */
    body = on_hpc("bad",
                  fmt("#!/bin/bash\nwhile [ ! -e %s/go ]; do sleep 0.2; done\nexit 3\n", outdir),
                  NULL);
    char *f = jobs_submit(ann, T, body);
    free(body);
    json_decref(jobs_wait(ann, T, f, "pending,running", WAIT_S));
    body = on_hpc("doomed", "#!/bin/bash\ntrue\n",
                  fmt("{\"depends_on\":[{\"job\":\"%s\",\"condition\":\"succeeded\"}]}", f));
    char *c = jobs_submit(ann, T, body);
    free(body);
    json_decref(jobs_wait(ann, T, c, "pending", WAIT_S));
    FILE *go = fopen(fmt("%s/go", outdir), "w");
    ck_assert_ptr_nonnull(go);
    fclose(go);
    json_decref(jobs_wait(ann, T, a, "succeeded", WAIT_S));
    json_decref(jobs_wait(ann, T, b, "succeeded", WAIT_S));
    json_decref(jobs_wait(ann, T, f, "failed", WAIT_S));
    json_t *jc = jobs_wait(ann, T, c, "cancelled", WAIT_S);
    ck_assert_str_eq(jstr(jc, "reason"), fmt("dependency_failed:%s", f));
    json_decref(jc);
    unlink(fmt("%s/go", outdir));
    free(abid);
    free(a);
    free(b);
    free(c);
    free(f);
}
END_TEST

/* max_parallel tasks at once must fit the cluster and the quota (else it would wait for ever) */
START_TEST(a_whole_array_must_fit_max_parallel_tasks)
{
    json_t *b = json_loads(slurmtest_job("wide", 1, "a100", "#!/bin/bash\ntrue\n"), 0, NULL);
    json_object_set_new(b, "cluster", json_string("hpc"));
    json_object_set_new(b, "array", json_pack("{s:i, s:i}", "count", 20, "max_parallel", 20));
    char *body = json_dumps(b, JSON_COMPACT);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/" T "/jobs", ann, body, &r), 422);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "errors"), 0), "field"), "gpus");
    http_res_free(&r);
    free(body);
    /* 20 tasks, 4 at once: fits */
    json_object_set_new(b, "array", json_pack("{s:i, s:i}", "count", 20, "max_parallel", 4));
    json_object_set_new(b, "priority", json_string("low"));
    body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char *id = jobs_submit(ann, T, body);
    free(body);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/" T "/jobs/%s/cancel", id), ann, NULL), 202);
    json_decref(jobs_wait(ann, T, id, "cancelled", WAIT_S));
    free(id);
}
END_TEST

int main(void)
{
    harness_require_pg();
    slurmtest_env();
    Suite *s = suite_create("job_arrays_slurm");
    TCase *tc = tcase_create("job_arrays_slurm");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 2 * WAIT_S);
    tcase_add_test(tc, an_array_is_one_slurm_job_array_whose_tasks_map_back);
    tcase_add_test(tc, cancelling_the_parent_cancels_the_slurm_array);
    tcase_add_test(tc, a_dependency_in_the_same_slurm_cluster_is_slurms);
    tcase_add_test(tc, a_whole_array_must_fit_max_parallel_tasks);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
