/*
 * test_job_arrays_slurm.c - a job array on the real test Slurm: one submit,
 * seen by Slurm as one job array (--array=0-3%2: array_job_id and
 * array_max_tasks), its tasks mapped back to aidc's task rows
 * ("<array job id>_<index>") as they run and end, each with its index in
 * AIDC_ARRAY_INDEX and SLURM_ARRAY_TASK_ID; cancelling the parent cancels
 * the Slurm array and every task.
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

#define T "phys"
#define WAIT_S 90

static char *ann;
static char outdir[256];
static const char *fast[] = {"AIDC_SYNC_INTERVAL_MS=200", "AIDC_ADMISSION_INTERVAL_MS=200",
                             NULL};

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
    ck_assert_int_eq(jint(sj, "array_job_id"), atoll(bid));
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
            ck_assert_int_eq(jint(j, "array_job_id"), atoll(bid));
        }
    }
    json_decref(all);
    ck_assert_int_eq(named, 4);
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
    json_object_set_new(b, "array", json_pack("{s:i, s:i}", "count", 3, "max_parallel", 1));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char *parent = jobs_submit(ann, T, body);
    free(body);
    json_decref(jobs_wait(ann, T, parent, "running", WAIT_S)); /* a task runs */
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/" T "/jobs/%s/cancel", parent), ann, NULL),
                     202);
    json_t *p = jobs_wait(ann, T, parent, "cancelled", WAIT_S);
    ck_assert_int_eq(jint(json_object_get(p, "array_tasks"), "cancelled"), 3);
    json_t *sj = slurm_job_of(p);
    ck_assert_str_eq(jstr(sj, "job_state"), "CANCELLED");
    json_decref(sj);
    json_decref(p);
    free(parent);
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
    suite_add_tcase(s, tc);
    return suite_run(s);
}
