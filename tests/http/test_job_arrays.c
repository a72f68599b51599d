/*
 * test_job_arrays.c - job arrays and dependencies on the real local
 * executor: every task runs with its index (AIDC_ARRAY_INDEX and
 * SLURM_ARRAY_TASK_ID) and no more than max_parallel run at once (the
 * tasks count each other through files: observed, not timed); the parent's
 * task counts and ?array_parent= lists; cancelling one task, then the
 * parent; dependencies run in order, a dependency that can no longer hold
 * cancels its dependant (dependency_failed:<id>), an array is one peer; and
 * the 422s of bad arrays and dependency lists, another tenant's job being
 * as unknown as one that never was.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <dirent.h>
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOBS "/api/v1/tenants/chem/jobs"

static char *ann, *rex; /* a chem member; a member of rival */

static void setup(void)
{
    harness_setup("jobarrays", jobs_fast_env);
    jobs_local_cluster("{\"a100\":4}");
    ann = jobs_tenant_member("chem", "mol", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":4}}", "ann");
    rex =
        jobs_tenant_member("rival", "spy", "{\"gpu:a100\":{\"guaranteed\":0,\"limit\":0}}", "rex");
    (void)jobs_shared_dir();
}

static void teardown(void)
{
    jobs_kill_leftovers();
    free(ann);
    free(rex);
    jobs_shared_dir_remove();
    harness_teardown();
}

/* printf into a new string (free it). */
__attribute__((format(printf, 1, 2))) static char *sfmt(const char *f, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, f);
    int n = vasprintf(&s, f, ap);
    va_end(ap);
    ck_assert_int_ge(n, 0);
    return s;
}

/* A directory of the shared one for one test's files (made here, mode 1777; free it). */
static char *dir_for(const char *name)
{
    char *d = sfmt("%s/%s", jobs_shared_dir(), name);
    ck_assert_int_eq(mkdir(d, 01777), 0);
    ck_assert_int_eq(chmod(d, 01777), 0);
    return d;
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
}

/* How many files of dir start with prefix. */
static int count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* The tasks of parent (new reference), by array_index. */
static json_t *tasks_of(const char *token, const char *parent)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt(JOBS "?array_parent=%s&limit=100", parent), token, NULL, &r),
                     200);
    json_t *items = json_array(), *t;
    size_t n = json_array_size(json_object_get(r.json, "items"));
    for (size_t want = 0; want < n; want++) {
        size_t i;
        json_array_foreach(json_object_get(r.json, "items"), i,
                           t) if (jint(t, "array_index") == (long long)want)
            json_array_append(items, t);
    }
    http_res_free(&r);
    ck_assert_uint_eq(json_array_size(items), n);
    return items;
}

static long long task_count(const json_t *job, const char *state)
{
    return jint(json_object_get(job, "array_tasks"), state);
}

/* Wait (up to seconds) until parent has n tasks cancelled: its cancel ends them in
 * batches after answering. The parent (new reference). */
static json_t *wait_tasks_cancelled(const char *parent, long long n, double seconds)
{
    double deadline = jobs_now() + seconds;
    json_t *p = jobs_get(ann, "chem", parent);
    while (task_count(p, "cancelled") < n && jobs_now() < deadline) {
        json_decref(p);
        jobs_nap_ms(100);
        p = jobs_get(ann, "chem", parent);
    }
    ck_assert_int_eq(task_count(p, "cancelled"), n);
    return p;
}

/* POST cancel of id as ann: its status, and how long the answer took into *ms. */
static long timed_cancel(const char *id, double *ms)
{
    double t0 = jobs_now();
    long st = req("POST", fmt(JOBS "/%s/cancel", id), ann, NULL);
    *ms = (jobs_now() - t0) * 1000;
    return st;
}

/* parent's tasks are made in chunks of DB_JOBARRAY_CHUNK: every index from 0 to
 * count - 1 once, none lost or doubled at a seam, none past the end */
static void assert_indexes(const char *parent, long count)
{
    const char *pp[1] = {parent};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(DISTINCT array_index), min(array_index),"
                              " max(array_index), count(*) FROM jobs WHERE array_parent = $1::uuid",
                              1, pp);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(strtol(PQgetvalue(r, 0, 0), NULL, 10), count);
    ck_assert_int_eq(strtol(PQgetvalue(r, 0, 1), NULL, 10), 0);
    ck_assert_int_eq(strtol(PQgetvalue(r, 0, 2), NULL, 10), count - 1);
    ck_assert_int_eq(strtol(PQgetvalue(r, 0, 3), NULL, 10), count);
    PQclear(r);
}

/* The first field error of r is field with code. */
static void field_error(const struct http_res *r, const char *field, const char *code)
{
    const json_t *e = json_array_get(json_object_get(r->json, "errors"), 0);
    ck_assert_msg(e != NULL, "no field error in %s", r->body);
    ck_assert_str_eq(jstr(e, "field"), field);
    ck_assert_str_eq(jstr(e, "code"), code);
}

START_TEST(array_tasks_run_with_their_index_at_most_max_parallel_at_once)
{
    char *d = dir_for("arr");
    char *body =
        sfmt("{\"project\":\"mol\",\"name\":\"sweep\",\"array\":{\"count\":5,\"max_parallel\":2},"
             "\"script\":\"d=%s\\ntouch $d/running.$AIDC_ARRAY_INDEX\\n"
             "ls $d | grep -c ^running > $d/seen.$AIDC_ARRAY_INDEX\\n"
             "echo $AIDC_ARRAY_INDEX $SLURM_ARRAY_TASK_ID > $d/index.$AIDC_ARRAY_INDEX\\n"
             "i=0; while [ ! -e $d/go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\\n"
             "rm $d/running.$AIDC_ARRAY_INDEX\"}",
             d);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", JOBS, ann, body, &r), 201);
    free(body);
    char *parent = strdup(jstr(r.json, "id"));
    json_t *arr = json_object_get(r.json, "array");
    ck_assert_int_eq(jint(arr, "count"), 5);
    ck_assert_int_eq(jint(arr, "max_parallel"), 2);
    ck_assert_int_eq(task_count(r.json, "queued"), 5);
    http_res_free(&r);

    /* two run; the admitter then passes (a job submitted after them is admitted) and
     * leaves the other three queued */
    double deadline = jobs_now() + 30;
    while (count_files(d, "running") < 2 && jobs_now() < deadline)
        jobs_nap_ms(50);
    ck_assert_int_eq(count_files(d, "running"), 2);
    char *other =
        jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"x\",\"command\":[\"true\"]}");
    json_decref(jobs_wait(ann, "chem", other, "succeeded", 30));
    free(other);
    json_t *tasks = tasks_of(ann, parent);
    ck_assert_uint_eq(json_array_size(tasks), 5);
    int queued = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t)
    {
        ck_assert_str_eq(jstr(t, "array_parent"), parent);
        queued += strcmp(jstr(t, "state"), "queued") == 0;
    }
    ck_assert_int_eq(queued, 3);
    json_t *p = jobs_get(ann, "chem", parent);
    ck_assert_str_eq(jstr(p, "state"), "queued");
    ck_assert_int_eq(task_count(p, "running"), 2);
    ck_assert_int_eq(task_count(p, "queued"), 3);
    json_decref(p);
    /* the tasks are not in the plain list */
    json_t *all = get_items(JOBS "?limit=100", ann);
    json_array_foreach(all, i, t) ck_assert(json_is_null(json_object_get(t, "array_parent")));
    json_decref(all);

    touch(fmt("%s/go", d));
    p = jobs_wait(ann, "chem", parent, "succeeded,failed,cancelled", 60);
    ck_assert_str_eq(jstr(p, "state"), "succeeded");
    ck_assert_int_eq(task_count(p, "succeeded"), 5);
    json_decref(p);
    for (int k = 0; k < 5; k++) {
        char *seen = harness_read_file(fmt("%s/seen.%d", d, k));
        char *index = harness_read_file(fmt("%s/index.%d", d, k));
        ck_assert_ptr_nonnull(seen);
        ck_assert_ptr_nonnull(index);
        ck_assert_msg(strtol(seen, NULL, 10) >= 1 && strtol(seen, NULL, 10) <= 2,
                      "task %d saw %s running", k, seen);
        ck_assert_str_eq(index, fmt("%d %d\n", k, k));
        free(seen);
        free(index);
    }
    json_decref(tasks);
    tasks = tasks_of(ann, parent);
    json_array_foreach(tasks, i, t) ck_assert_str_eq(jstr(t, "state"), "succeeded");
    json_decref(tasks);
    /* another tenant sees no tasks of it */
    ck_assert_uint_eq(count_items(fmt("/api/v1/tenants/rival/jobs?array_parent=%s", parent), rex),
                      0);
    free(parent);
    free(d);
}
END_TEST

START_TEST(cancel_one_task_then_the_array)
{
    char *d = dir_for("cancel");
    char *body =
        sfmt("{\"project\":\"mol\",\"name\":\"held\",\"array\":{\"count\":3,\"max_parallel\":1},"
             "\"script\":\"touch %s/running.$AIDC_ARRAY_INDEX; sleep 600\"}",
             d);
    char *parent = jobs_submit(ann, "chem", body);
    free(body);
    double deadline = jobs_now() + 30;
    while (count_files(d, "running") < 1 && jobs_now() < deadline)
        jobs_nap_ms(50);
    json_t *tasks = tasks_of(ann, parent);
    ck_assert_str_eq(jstr(json_array_get(tasks, 2), "state"), "queued");
    ck_assert_str_eq(jstr(json_array_get(tasks, 2), "reason"), "array:max_parallel");
    const char *last = jstr(json_array_get(tasks, 2), "id");
    /* one task alone */
    ck_assert_int_eq(req("POST", fmt(JOBS "/%s/cancel", last), ann, NULL), 202);
    json_t *p = jobs_get(ann, "chem", parent);
    ck_assert_str_eq(jstr(p, "state"), "queued");
    ck_assert_int_eq(task_count(p, "cancelled"), 1);
    json_decref(p);
    /* the parent takes the rest: the queued one at once, the running one stopped */
    ck_assert_int_eq(req("POST", fmt(JOBS "/%s/cancel", parent), ann, NULL), 202);
    json_t *first = jobs_wait(ann, "chem", jstr(json_array_get(tasks, 0), "id"), "cancelled", 30);
    json_decref(first);
    json_t *second = jobs_wait(ann, "chem", jstr(json_array_get(tasks, 1), "id"), "cancelled", 30);
    json_decref(second);
    p = wait_tasks_cancelled(parent, 3, 30);
    ck_assert_str_eq(jstr(p, "state"), "cancelled");
    json_decref(p);
    json_decref(tasks);
    free(parent);
    free(d);
}
END_TEST

START_TEST(dependencies_run_in_order_and_fail_forward)
{
    char *d = dir_for("deps");
    char *body =
        sfmt("{\"project\":\"mol\",\"name\":\"first\",\"script\":\"i=0; while [ ! -e %s/go ] && "
             "[ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; date +%%s.%%N > %s/first\"}",
             d, d);
    char *a = jobs_submit(ann, "chem", body);
    free(body);
    body = sfmt("{\"project\":\"mol\",\"name\":\"second\",\"script\":\"test -e "
                "%s/first\",\"depends_on\":[{\"job\":\"%s\",\"condition\":"
                "\"succeeded\"}]}",
                d, a);
    char *b = jobs_submit(ann, "chem", body);
    free(body);
    json_t *jb = jobs_get(ann, "chem", b);
    ck_assert_str_eq(jstr(jb, "state"), "queued");
    ck_assert_str_eq(jstr(jb, "reason"), fmt("dependency:%s", a));
    ck_assert_str_eq(jstr(json_array_get(json_object_get(jb, "depends_on"), 0), "job"), a);
    json_decref(jb);
    /* a job that fails, and those waiting on it */
    char *f =
        jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"bad\",\"command\":[\"false\"]}");
    char *on_ok = jobs_submit(
        ann, "chem",
        fmt("{\"project\":\"mol\",\"name\":\"c\",\"command\":[\"true\"],\"depends_on\":[{\"job\":"
            "\"%s\",\"condition\":\"succeeded\"}]}",
            f));
    char *on_fail = jobs_submit(
        ann, "chem",
        fmt("{\"project\":\"mol\",\"name\":\"d\",\"command\":[\"true\"],\"depends_on\":[{\"job\":"
            "\"%s\",\"condition\":\"failed\"},{\"job\":\"%s\",\"condition\":\"ended\"}]}",
            f, a));
    json_t *jf = jobs_wait(ann, "chem", f, "failed", 30);
    json_decref(jf);
    json_t *jc = jobs_wait(ann, "chem", on_ok, "cancelled", 30);
    ck_assert_str_eq(jstr(jc, "reason"), fmt("dependency_failed:%s", f));
    json_decref(jc);
    json_t *jd = jobs_get(ann, "chem", on_fail);
    ck_assert_str_eq(jstr(jd, "state"), "queued"); /* f failed; a has not ended */
    ck_assert_str_eq(jstr(jd, "reason"), fmt("dependency:%s", a));
    json_decref(jd);
    /* a dependency already doomed at submission cancels the job at once */
    struct http_res r;
    ck_assert_int_eq(
        reqj("POST", JOBS, ann,
             fmt("{\"project\":\"mol\",\"name\":\"e\",\"command\":[\"true\"],\"depends_on\":[{"
                 "\"job\":\"%s\",\"condition\":\"succeeded\"}]}",
                 f),
             &r),
        201);
    ck_assert_str_eq(jstr(r.json, "state"), "cancelled");
    ck_assert_str_eq(jstr(r.json, "reason"), fmt("dependency_failed:%s", f));
    http_res_free(&r);

    touch(fmt("%s/go", d));
    json_t *ja = jobs_wait(ann, "chem", a, "succeeded", 30);
    jb = jobs_wait(ann, "chem", b, "succeeded,failed,cancelled", 30);
    ck_assert_str_eq(jstr(jb, "state"), "succeeded"); /* it saw first's file */
    ck_assert(jobs_ts(json_object_get(jb, "started_at")) >=
              jobs_ts(json_object_get(ja, "finished_at")));
    json_decref(jb);
    json_decref(ja);
    json_decref(jobs_wait(ann, "chem", on_fail, "succeeded", 30));
    free(a);
    free(b);
    free(f);
    free(on_ok);
    free(on_fail);
    free(d);
}
END_TEST

START_TEST(a_dependency_on_an_array_waits_for_all_its_tasks)
{
    char *arr = jobs_submit(ann, "chem",
                            "{\"project\":\"mol\",\"name\":\"a\",\"array\":{\"count\":3},"
                            "\"script\":\"test $AIDC_ARRAY_INDEX != 1\"}");
    char *after = jobs_submit(
        ann, "chem",
        fmt("{\"project\":\"mol\",\"name\":\"after\",\"command\":[\"true\"],\"depends_on\":[{"
            "\"job\":\"%s\",\"condition\":\"succeeded\"}]}",
            arr));
    char *cleanup = jobs_submit(
        ann, "chem",
        fmt("{\"project\":\"mol\",\"name\":\"cleanup\",\"command\":[\"true\"],\"depends_on\":[{"
            "\"job\":\"%s\",\"condition\":\"ended\"}]}",
            arr));
    json_t *p = jobs_wait(ann, "chem", arr, "succeeded,failed,cancelled", 30);
    ck_assert_str_eq(jstr(p, "state"), "failed"); /* task 1 failed */
    ck_assert_int_eq(task_count(p, "succeeded"), 2);
    ck_assert_int_eq(task_count(p, "failed"), 1);
    json_decref(p);
    json_t *j = jobs_wait(ann, "chem", after, "cancelled", 30);
    ck_assert_str_eq(jstr(j, "reason"), fmt("dependency_failed:%s", arr));
    json_decref(j);
    json_decref(jobs_wait(ann, "chem", cleanup, "succeeded", 30));
    free(arr);
    free(after);
    free(cleanup);
}
END_TEST

struct bad {
    const char *extra; /* after the job's other fields */
    const char *field, *code;
};

START_TEST(bad_arrays_and_dependencies_are_422)
{
    char *mine =
        jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"m\",\"command\":[\"true\"]}");
    char *theirs =
        jobs_submit(rex, "rival", "{\"project\":\"spy\",\"name\":\"t\",\"command\":[\"true\"]}");
    char many[32 * 80 + 64] = "\"depends_on\":[";
    for (int i = 0; i < 33; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many),
                 "%s{\"job\":\"00000000-0000-4000-8000-%012d\",\"condition\":\"ended\"}",
                 i ? "," : "", i);
    strcat(many, "]");
    const struct bad cases[] = {
        {"\"array\":{\"count\":0}", "array.count", "job.array_count"},
        {"\"array\":{\"count\":10001}", "array.count", "job.array_count"},
        {"\"array\":{\"count\":4,\"max_parallel\":0}", "array.max_parallel",
         "job.array_max_parallel"},
        {"\"array\":{\"count\":4,\"max_parallel\":5}", "array.max_parallel",
         "job.array_max_parallel"},
        {"\"array\":5", "array", "job.array_shape"},
        {"\"array\":{\"count\":\"4\"}", "array", "job.array_shape"},
        {"\"array\":{\"count\":4,\"extra\":1}", "array", "job.array_shape"},
        {"\"depends_on\":{}", "depends_on", "job.depends_on_shape"},
        {many, "depends_on", "job.depends_on_too_many"},
        {"\"depends_on\":[{\"job\":\"x\",\"condition\":\"ended\"}]", "depends_on[0].job",
         "validation.uuid"},
        {fmt("\"depends_on\":[{\"job\":\"%s\",\"condition\":\"afterok\"}]", mine),
         "depends_on[0].condition", "job.depends_on_condition"},
        {fmt("\"depends_on\":[{\"job\":\"%s\",\"condition\":\"ended\"},{\"job\":\"%s\","
             "\"condition\":\"failed\"}]",
             mine, mine),
         "depends_on[1]", "job.depends_on_duplicate"},
        /* never was, and another tenant's: the same answer */
        {"\"depends_on\":[{\"job\":\"00000000-0000-4000-8000-000000000001\",\"condition\":"
         "\"ended\"}]",
         "depends_on[0].job", "job.depends_on_unknown"},
        {fmt("\"depends_on\":[{\"job\":\"%s\",\"condition\":\"ended\"},{\"job\":\"%s\","
             "\"condition\":\"ended\"}]",
             mine, theirs),
         "depends_on[1].job", "job.depends_on_unknown"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct http_res r;
        char *body = sfmt("{\"project\":\"mol\",\"name\":\"bad\",\"command\":[\"true\"],%s}",
                          cases[i].extra);
        long st = reqj("POST", JOBS, ann, body, &r);
        ck_assert_msg(st == 422, "case %zu: %ld %s", i, st, r.body);
        field_error(&r, cases[i].field, cases[i].code);
        free(body);
        http_res_free(&r);
    }
    /* the unknown answer says nothing of the other tenant's job */
    struct http_res a, b;
    reqj("POST", JOBS, ann,
         fmt("{\"project\":\"mol\",\"name\":\"b\",\"command\":[\"true\"],\"depends_on\":[{"
             "\"job\":\"%s\",\"condition\":\"ended\"}]}",
             theirs),
         &a);
    reqj("POST", JOBS, ann,
         "{\"project\":\"mol\",\"name\":\"b\",\"command\":[\"true\"],\"depends_on\":[{"
         "\"job\":\"00000000-0000-4000-8000-000000000001\",\"condition\":\"ended\"}]}",
         &b);
    ck_assert_int_eq(a.status, b.status);
    json_t *ea = json_array_get(json_object_get(a.json, "errors"), 0),
           *eb = json_array_get(json_object_get(b.json, "errors"), 0);
    ck_assert_str_eq(jstr(ea, "code"), jstr(eb, "code"));
    ck_assert_str_eq(jstr(json_object_get(ea, "params"), "tenant"), "chem");
    http_res_free(&a);
    http_res_free(&b);
    /* at the limit: 10000 tasks, held by a dependency that cannot hold once mine
     * succeeds (then all of them are cancelled with their parent) */
    char *big =
        jobs_submit(ann, "chem",
                    fmt("{\"project\":\"mol\",\"name\":\"big\",\"command\":[\"true\"],\"array\":{"
                        "\"count\":10000,\"max_parallel\":1},\"depends_on\":[{\"job\":\"%s\","
                        "\"condition\":\"failed\"}]}",
                        mine));
    ck_assert_int_eq(req("GET", JOBS "?array_parent=nope", ann, NULL), 400);
    json_decref(jobs_wait(ann, "chem", mine, "succeeded", 30));
    json_t *p = jobs_wait(ann, "chem", big, "cancelled", 30);
    ck_assert_str_eq(jstr(p, "reason"), fmt("dependency_failed:%s", mine));
    json_decref(p);
    p = wait_tasks_cancelled(big, 10000, 120);
    json_decref(p);
    free(big);
    free(mine);
    free(theirs);
}
END_TEST

/* A job that runs until d/go appears (at most a minute): what held arrays wait for. */
static char *gate_job(const char *d)
{
    char *body = sfmt("{\"project\":\"mol\",\"name\":\"gate\",\"script\":\"i=0; while [ ! -e "
                      "%s/go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\"}",
                      d);
    char *gate = jobs_submit(ann, "chem", body);
    free(body);
    return gate;
}

static void open_gate(const char *d, const char *gate)
{
    touch(fmt("%s/go", d));
    json_decref(jobs_wait(ann, "chem", gate, "succeeded", 30));
}

/* A body of an array of count tasks held by a dependency on gate (an fmt() buffer). */
static const char *held_array(const char *gate, int count)
{
    return fmt("{\"project\":\"mol\",\"name\":\"h\",\"command\":[\"true\"],\"array\":{"
               "\"count\":%d},\"depends_on\":[{\"job\":\"%s\",\"condition\":\"succeeded\"}]}",
               count, gate);
}

/* Array tasks not ended are rows every admission pass may read: 20,000 per tenant */
START_TEST(a_tenant_has_at_most_20000_open_array_tasks)
{
    char *d = dir_for("open");
    char *gate = gate_job(d);
    char *a1 = jobs_submit(ann, "chem", held_array(gate, 10000));
    /* 7,500 + 2,500: arrays whose last chunk is short */
    char *a2 = jobs_submit(ann, "chem", held_array(gate, 7500));
    char *a2b = jobs_submit(ann, "chem", held_array(gate, 2500));
    assert_indexes(a2, 7500);
    assert_indexes(a2b, 2500);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", JOBS, ann, held_array(gate, 1), &r), 422);
    field_error(&r, "array.count", "job.array_tenant_open");
    json_t *params =
        json_object_get(json_array_get(json_object_get(r.json, "errors"), 0), "params");
    ck_assert_int_eq(jint(params, "open"), 20000);
    ck_assert_int_eq(jint(params, "max"), 20000);
    http_res_free(&r);
    /* another tenant is not counted */
    char *theirs = jobs_submit(rex, "rival",
                               "{\"project\":\"spy\",\"name\":\"t\",\"command\":[\"true\"],"
                               "\"array\":{\"count\":2}}");
    free(theirs);
    /* the tasks of a cancelled array are not counted, from its cancel's answer on
     * (they are ended after it, in batches) */
    double ms1, ms2;
    ck_assert_int_eq(timed_cancel(a1, &ms1), 202);
    char *a3 = jobs_submit(ann, "chem", held_array(gate, 1));
    ck_assert_int_eq(timed_cancel(a2, &ms2), 202);
    ck_assert_int_eq(req("POST", fmt(JOBS "/%s/cancel", a2b), ann, NULL), 202);
    ck_assert_int_eq(req("POST", fmt(JOBS "/%s/cancel", a3), ann, NULL), 202);
    fprintf(stderr, "cancel of a 10000-task array answered in %.0f ms, of 7500 in %.0f ms\n", ms1,
            ms2);
    /* 20,000 task rows rewritten in batches: ~10 s on a quiet machine, 93 s once
     * in a loaded CI run (hence the case's own timeout, below) */
    double t0 = jobs_now();
    json_decref(wait_tasks_cancelled(a1, 10000, 240));
    json_decref(wait_tasks_cancelled(a2, 7500, 240));
    json_decref(wait_tasks_cancelled(a2b, 2500, 240));
    fprintf(stderr, "the 20000 tasks of the three arrays all ended cancelled %.1f s later\n",
            jobs_now() - t0);
    open_gate(d, gate);
    free(a1);
    free(a2);
    free(a2b);
    free(a3);
    free(gate);
    free(d);
}
END_TEST

/*
 * The cancel of an array of 10,000 tasks, two of them running, answers at once
 * (it used to cancel every task in its statement and, on a busy machine, outlive
 * the statement timeout): then no task starts any more, the running ones stop,
 * every task and the parent end cancelled. How long the answer took is logged.
 */
START_TEST(cancelling_an_array_of_10000_tasks_answers_and_ends_them_all)
{
    char *d = dir_for("big");
    char *body = sfmt("{\"project\":\"mol\",\"name\":\"big\",\"array\":{\"count\":10000,"
                      "\"max_parallel\":2},\"script\":\"touch %s/started.$AIDC_ARRAY_INDEX; "
                      "sleep 600\"}",
                      d);
    double t_submit = jobs_now();
    char *parent = jobs_submit(ann, "chem", body);
    fprintf(stderr, "submit of a 10000-task array answered in %.0f ms\n",
            (jobs_now() - t_submit) * 1000);
    free(body);
    assert_indexes(parent, 10000);
    double deadline = jobs_now() + 60;
    while (count_files(d, "started") < 2 && jobs_now() < deadline)
        jobs_nap_ms(50);
    ck_assert_int_eq(count_files(d, "started"), 2);
    double ms;
    ck_assert_int_eq(timed_cancel(parent, &ms), 202);
    double t0 = jobs_now();
    json_t *p = wait_tasks_cancelled(parent, 10000, 120);
    fprintf(stderr,
            "cancel of a 10000-task array (2 running) answered in %.0f ms; its tasks all "
            "ended cancelled %.1f s later\n",
            ms, jobs_now() - t0);
    json_decref(p);
    p = jobs_wait(ann, "chem", parent, "cancelled", 30);
    json_decref(p);
    /* none started after the answer: only the two that ran before it ever did */
    ck_assert_int_eq(count_files(d, "started"), 2);
    free(parent);
    free(d);
}
END_TEST

/*
 * An array whose tasks another transaction holds does not hold back the cancel of
 * another array (the worker goes round the marked arrays): the tasks of the array
 * with the lower id - the one the worker used to take first, every round - are
 * locked until the other array's tasks have ended.
 */
START_TEST(a_held_array_does_not_hold_back_another_cancel)
{
    char *d = dir_for("held");
    char *gate = gate_job(d);
    char *a = jobs_submit(ann, "chem", held_array(gate, 3));
    char *b = jobs_submit(ann, "chem", held_array(gate, 3));
    const char *first = strcmp(a, b) < 0 ? a : b, *other = first == a ? b : a;
    PGconn *hold = PQconnectdb(harness_srv.owner_url);
    ck_assert_int_eq(PQstatus(hold), CONNECTION_OK);
    const char *p[1] = {first};
    PGresult *r = PQexec(hold, "BEGIN");
    ck_assert_int_eq(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    r = PQexecParams(hold, "SELECT id FROM jobs WHERE array_parent = $1::uuid FOR UPDATE", 1, NULL,
                     p, NULL, NULL, 0);
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    ck_assert_int_eq(PQntuples(r), 3);
    PQclear(r);
    ck_assert_int_eq(req("POST", fmt(JOBS "/%s/cancel", first), ann, NULL), 202);
    ck_assert_int_eq(req("POST", fmt(JOBS "/%s/cancel", other), ann, NULL), 202);
    json_decref(wait_tasks_cancelled(other, 3, 20));
    r = PQexec(hold, "COMMIT");
    PQclear(r);
    PQfinish(hold);
    json_decref(wait_tasks_cancelled(first, 3, 20));
    open_gate(d, gate);
    free(a);
    free(b);
    free(gate);
    free(d);
}
END_TEST

static Suite *arrays_suite(void)
{
    Suite *s = suite_create("job_arrays");
    TCase *tc = tcase_create("job_arrays");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300); /* for each case: 20,000 tasks cancelled on a busy machine */
    tcase_add_test(tc, array_tasks_run_with_their_index_at_most_max_parallel_at_once);
    tcase_add_test(tc, cancel_one_task_then_the_array);
    tcase_add_test(tc, dependencies_run_in_order_and_fail_forward);
    tcase_add_test(tc, a_dependency_on_an_array_waits_for_all_its_tasks);
    tcase_add_test(tc, bad_arrays_and_dependencies_are_422);
    tcase_add_test(tc, a_tenant_has_at_most_20000_open_array_tasks);
    tcase_add_test(tc, cancelling_an_array_of_10000_tasks_answers_and_ends_them_all);
    tcase_add_test(tc, a_held_array_does_not_hold_back_another_cancel);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    harness_require_pg();
    return suite_run(arrays_suite());
}
