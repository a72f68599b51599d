/*
 * test_jobarray_backends.c - what the backends make of a whole job array
 * and of a dependency Slurm keeps: Slurm's submit body ("array",
 * "dependency", a file per task, AIDC_ARRAY_INDEX in the script, also
 * before a #! of the job's own), the id a task of GET jobs is known by, and
 * the Kubernetes Indexed Job and the tasks its status tells of.
 */
#include "backends/kubejob.h"
#include "backends/slurm.h"
#include "tests/support/suite.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    ck_assert_msg(v != NULL, "%s: %s", text, e.text);
    return v;
}

static json_t *slurm_options(void)
{
    json_t *o = parse("{\"user_name\":\"aidc\"}");
    char err[256] = "";
    ck_assert_msg(backend_find("slurm")->check_options(o, err, sizeof err), "%s", err);
    return o;
}

static struct backend_job array_job(const json_t *env)
{
    return (struct backend_job){.id = "0f3c-job-42",
                                .tenant = "acme",
                                .project = "vision",
                                .user = "alice",
                                .name = "sweep",
                                .script = "echo $AIDC_ARRAY_INDEX",
                                .env = env,
                                .cpus = 1,
                                .memory_gib = 1,
                                .nodes = 1,
                                .time_limit_minutes = 10,
                                .priority = "normal",
                                .array_count = 100,
                                .array_max_parallel = 8};
}

static json_t *slurm_body(const struct backend_job *job)
{
    json_t *o = slurm_options();
    char err[256] = "";
    json_t *b = slurm_submit_body(job, o, NULL, err, sizeof err);
    ck_assert_msg(b != NULL, "no body: %s", err);
    json_decref(o);
    return b;
}

static const char *job_str(const json_t *body, const char *key)
{
    return json_string_value(json_object_get(json_object_get(body, "job"), key));
}

START_TEST(slurm_array_is_one_submit_with_files_per_task)
{
    json_t *env = json_object();
    struct backend_job job = array_job(env);
    json_t *b = slurm_body(&job);
    ck_assert_str_eq(job_str(b, "array"), "0-99%8");
    ck_assert_ptr_null(json_object_get(json_object_get(b, "job"), "dependency"));
    ck_assert_ptr_nonnull(strstr(job_str(b, "standard_output"), "/0f3c-job-42_%a.out"));
    ck_assert_ptr_nonnull(strstr(job_str(b, "standard_error"), "/0f3c-job-42_%a.err"));
    ck_assert_str_eq(json_string_value(json_object_get(b, "script")),
                     "#!/bin/bash\nexport AIDC_ARRAY_INDEX=\"$SLURM_ARRAY_TASK_ID\"\n"
                     "echo $AIDC_ARRAY_INDEX\n");
    json_decref(b);
    /* a #! of its own runs as a child of bash, which exports the index first */
    job.script = "#!/usr/bin/env python3\nprint(1)\n";
    b = slurm_body(&job);
    const char *s = json_string_value(json_object_get(b, "script"));
    ck_assert_msg(
        strncmp(s, "#!/bin/bash\nexport AIDC_ARRAY_INDEX=\"$SLURM_ARRAY_TASK_ID\"\n", 58) == 0,
        "%s", s);
    ck_assert_ptr_nonnull(strstr(s, "#!/usr/bin/env python3\nprint(1)\n"));
    json_decref(b);
    /* not an array: none of it */
    job.array_count = 0;
    job.script = "true";
    b = slurm_body(&job);
    ck_assert_ptr_null(json_object_get(json_object_get(b, "job"), "array"));
    ck_assert_ptr_null(strstr(json_string_value(json_object_get(b, "script")), "ARRAY"));
    ck_assert_ptr_null(strstr(job_str(b, "standard_output"), "%a"));
    json_decref(b);
    json_decref(env);
}
END_TEST

START_TEST(slurm_dependency_goes_as_given)
{
    json_t *env = json_object();
    struct backend_job job = array_job(env);
    job.array_count = 0;
    job.dependency = "afterok:12,afternotok:13_4";
    json_t *b = slurm_body(&job);
    ck_assert_str_eq(job_str(b, "dependency"), "afterok:12,afternotok:13_4");
    json_decref(b);
    json_decref(env);
}
END_TEST

START_TEST(slurm_ids_of_array_tasks)
{
    static const struct {
        const char *job, *want;
    } cases[] = {
        {"{\"job_id\":7,\"array_job_id\":0,\"array_task_id\":null}", "7"},
        {"{\"job_id\":9,\"array_job_id\":5,\"array_task_id\":3}", "5_3"},
        /* the tasks still pending together: the array's own id */
        {"{\"job_id\":5,\"array_job_id\":5,\"array_task_id\":null,\"array_task_string\":\"4-9%2\"}",
         "5"},
        {"{\"job_id\":8}", "8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = parse(cases[i].job);
        char id[48];
        slurm_backend_id(j, id, sizeof id);
        ck_assert_str_eq(id, cases[i].want);
        json_decref(j);
    }
}
END_TEST

static json_t *kube_options(void)
{
    json_t *o = parse("{}");
    char err[256] = "";
    ck_assert_msg(kubejob_check_options(o, err, sizeof err), "%s", err);
    return o;
}

START_TEST(kube_array_is_an_indexed_job)
{
    json_t *env = json_object(), *o = kube_options();
    struct backend_job job = array_job(env);
    job.image = "registry.example/trainer@sha256:"
                "abababababababababababababababababababababababababababababababab";
    char err[256] = "";
    json_t *k = kubejob_build(o, &job, "ns", err, sizeof err);
    ck_assert_msg(k != NULL, "%s", err);
    json_t *spec = json_object_get(k, "spec");
    ck_assert_str_eq(json_string_value(json_object_get(spec, "completionMode")), "Indexed");
    ck_assert_int_eq(json_integer_value(json_object_get(spec, "completions")), 100);
    ck_assert_int_eq(json_integer_value(json_object_get(spec, "parallelism")), 8);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(json_object_get(k, "metadata"), "labels"),
                                          KUBE_LABEL_ARRAY)),
        "100");
    json_decref(k);
    job.array_count = 0;
    k = kubejob_build(o, &job, "ns", err, sizeof err);
    ck_assert_ptr_null(json_object_get(json_object_get(k, "spec"), "completionMode"));
    ck_assert_ptr_null(json_object_get(json_object_get(k, "spec"), "completions"));
    json_decref(k);
    json_decref(o);
    json_decref(env);
}
END_TEST

struct seen {
    char ids[16][64];
    int states[16];
    int n;
};

static void collect(void *arg, const char *backend_id, const char *run_key,
                    const struct backend_status *st)
{
    (void)run_key;
    struct seen *s = arg;
    ck_assert_int_lt(s->n, 16);
    snprintf(s->ids[s->n], sizeof s->ids[0], "%s", backend_id);
    s->states[s->n++] = st->state;
}

static struct seen tasks_told(const char *job_json, int state)
{
    json_t *j = parse(job_json);
    struct backend_status bs = {.state = state, .exit_code = -1};
    struct seen s = {0};
    kubejob_report_tasks(j, "ns/aidc-x", &bs, collect, &s);
    json_decref(j);
    return s;
}

START_TEST(kube_tasks_a_job_tells_of)
{
#define ARR                                                                                        \
    "{\"metadata\":{\"labels\":{\"aidc.io/array-count\":\"5\"}},\"spec\":{\"completions\":5}"
    /* running: the indexes completed so far (servers 1.21+) */
    struct seen s = tasks_told(ARR ",\"status\":{\"completedIndexes\":\"0,2-3\"}}", BS_RUNNING);
    ck_assert_int_eq(s.n, 3);
    ck_assert_str_eq(s.ids[0], "ns/aidc-x_0");
    ck_assert_str_eq(s.ids[1], "ns/aidc-x_2");
    ck_assert_str_eq(s.ids[2], "ns/aidc-x_3");
    ck_assert_int_eq(s.states[1], BS_SUCCEEDED);
    /* Complete: all of them (1.20 keeps no completedIndexes) */
    s = tasks_told(ARR ",\"status\":{}}", BS_SUCCEEDED);
    ck_assert_int_eq(s.n, 5);
    ck_assert_int_eq(s.states[4], BS_SUCCEEDED);
    /* Failed: those not completed failed with it */
    s = tasks_told(ARR ",\"status\":{\"completedIndexes\":\"1\"}}", BS_FAILED);
    ck_assert_int_eq(s.n, 5);
    ck_assert_int_eq(s.states[0], BS_FAILED);
    ck_assert_int_eq(s.states[1], BS_SUCCEEDED);
    /* garbage and other Jobs: nothing */
    s = tasks_told(ARR ",\"status\":{\"completedIndexes\":\"x,-3,9-2\"}}", BS_RUNNING);
    ck_assert_int_eq(s.n, 0);
    s = tasks_told("{\"spec\":{\"completions\":5},\"status\":{}}", BS_SUCCEEDED);
    ck_assert_int_eq(s.n, 0);
    s = tasks_told("{\"metadata\":{\"labels\":{\"aidc.io/array-count\":\"5\"}},"
                   "\"spec\":{\"completions\":100000}}",
                   BS_SUCCEEDED);
    ck_assert_int_eq(s.n, 0);
#undef ARR
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jobarray_backends");
    TCase *tc = tcase_create("jobarray_backends");
    tcase_add_test(tc, slurm_array_is_one_submit_with_files_per_task);
    tcase_add_test(tc, slurm_dependency_goes_as_given);
    tcase_add_test(tc, slurm_ids_of_array_tasks);
    tcase_add_test(tc, kube_array_is_an_indexed_job);
    tcase_add_test(tc, kube_tasks_a_job_tells_of);
    suite_add_tcase(s, tc);
    return suite_run(s);
}
