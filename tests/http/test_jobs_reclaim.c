/*
 * test_jobs_reclaim.c - the borrow-then-reclaim story between two tenants,
 * through the API and on the real local executor: a tenant borrows idle
 * GPUs beyond its guarantee (preemptible), another tenant's job within its
 * guarantee takes them back - the borrower gets SIGTERM first (it can
 * checkpoint), returns to the queue with preemption_count 1 and an event
 * naming the job and tenant that reclaimed the GPUs and how long it ran -
 * and runs again, as a new run, once the GPUs are free.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static char *ann, *pia; /* member of chem, member of phys */

static void setup(void)
{
    harness_setup("jobs_reclaim", jobs_fast_env);
    jobs_local_cluster("{\"a100\":4}");
    make_tenant("chem");
    make_tenant("phys");
    make_project("chem", "mol");
    make_project("phys", "lab");
    jobs_tenant_quota("chem", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}");
    jobs_tenant_quota("phys", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}");
    make_user("ann", "ann-password-1", NULL);
    make_user("pia", "pia-password-1", NULL);
    make_member("chem", "ann", "member");
    make_member("phys", "pia", "member");
    ann = login("ann", "ann-password-1");
    pia = login("pia", "pia-password-1");
    ck_assert(ann && pia);
}

static void teardown(void)
{
    free(ann);
    free(pia);
    harness_teardown();
}

static json_t *event_to(const char *token, const char *tenant, const char *id, const char *from,
                        const char *to)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/%s/jobs/%s/events", tenant, id), token,
                          NULL, &r),
                     200);
    json_t *found = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(r.json, "items"), i, e) {
        if (!found && jstr(e, "from") && strcmp(jstr(e, "from"), from) == 0 &&
            strcmp(jstr(e, "to"), to) == 0)
            found = json_incref(e);
    }
    http_res_free(&r);
    ck_assert_msg(found != NULL, "job %s has no %s -> %s event", id, from, to);
    return found;
}

START_TEST(borrow_then_reclaim)
{
    /* phys borrows all four GPUs: beyond its guarantee of 2, preemptible;
     * on SIGTERM it "checkpoints" and exits */
    char *big = jobs_submit(pia, "phys",
                            "{\"project\":\"lab\",\"name\":\"big\",\"gpus\":4,\"gpu_type\":\"a100\","
                            "\"script\":\"trap 'echo checkpoint run=$AIDC_JOB_ID; exit 143' TERM\\n"
                            "echo start $AIDC_GPU_INDEXES\\nsleep 300 & wait\"}");
    json_t *jb = jobs_wait(pia, "phys", big, "running", 30);
    ck_assert(json_is_true(json_object_get(jb, "preemptible")));
    ck_assert_int_eq(json_array_size(json_object_get(jb, "gpu_indexes")), 4);
    json_decref(jb);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/phys/quota", pia, NULL, &r), 200);
    json_t *q = json_object_get(json_object_get(r.json, "resources"), "gpu:a100");
    ck_assert_int_eq(json_integer_value(json_object_get(q, "used")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(q, "borrowed")), 4);
    http_res_free(&r);

    /* chem, within its guarantee, takes two GPUs back */
    char *small = jobs_submit(ann, "chem",
                              "{\"project\":\"mol\",\"name\":\"small\",\"gpus\":2,\"gpu_type\":"
                              "\"a100\",\"command\":[\"sh\",\"-c\",\"echo got $AIDC_GPU_INDEXES;"
                              " sleep 1\"]}");
    json_t *js = jobs_wait(ann, "chem", small, "succeeded,failed", 60);
    ck_assert_str_eq(jstr(js, "state"), "succeeded");
    ck_assert(json_is_false(json_object_get(js, "preemptible")));
    json_decref(js);
    char *hist = jobs_history(ann, "chem", small);
    ck_assert_str_eq(hist, "queued,admitted,pending,running,succeeded");
    free(hist);

    /* the borrower: asked to stop, got its grace signal, was preempted and requeued */
    json_t *ask = event_to(pia, "phys", big, "running", "running");
    ck_assert_str_eq(jstr(ask, "reason"), "preemption requested");
    ck_assert_str_eq(jstr(json_object_get(ask, "details"), "preempted_by_job"), small);
    ck_assert_str_eq(jstr(json_object_get(ask, "details"), "preempted_by_tenant"), "chem");
    json_decref(ask);
    json_t *pre = event_to(pia, "phys", big, "running", "preempted");
    json_t *det = json_object_get(pre, "details");
    ck_assert_str_eq(jstr(det, "preempted_by_job"), small);
    ck_assert_str_eq(jstr(det, "preempted_by_tenant"), "chem");
    ck_assert(json_is_integer(json_object_get(det, "ran_seconds")));
    ck_assert_int_ge(json_integer_value(json_object_get(det, "ran_seconds")), 0);
    ck_assert_ptr_nonnull(strstr(jstr(pre, "reason"), small));
    ck_assert_ptr_nonnull(strstr(jstr(pre, "reason"), "chem"));
    json_decref(pre);
    json_decref(event_to(pia, "phys", big, "preempted", "queued"));
    char *first_out = NULL;
    {
        /* the first run's output stays in its own directory */
        char path[512];
        snprintf(path, sizeof path, "%s/jobs/%s/stdout", harness_srv.data_dir, big);
        first_out = harness_read_file(path);
        ck_assert_ptr_nonnull(first_out);
        ck_assert_msg(strstr(first_out, "start 0,1,2,3\n") && strstr(first_out, "checkpoint"),
                      "first run: %s", first_out);
        free(first_out);
    }

    /* once chem's job ended, the borrower runs again as run 1 */
    jb = jobs_wait(pia, "phys", big, "running", 60);
    ck_assert_int_eq(json_integer_value(json_object_get(jb, "preemption_count")), 1);
    char want[64];
    snprintf(want, sizeof want, "%s-r1", big);
    ck_assert_str_eq(jstr(jb, "backend_job_id"), want);
    json_decref(jb);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/phys/jobs/%s/cancel", big), pia, NULL), 202);
    jb = jobs_wait(pia, "phys", big, "cancelled,failed,succeeded", 30);
    ck_assert_str_eq(jstr(jb, "state"), "cancelled");
    json_decref(jb);
    /* two runs were recorded, both closed */
    const char *p[1] = {big};
    PGresult *pr = harness_sql(harness_srv.owner_url,
                               "SELECT count(*), count(ended_at) FROM job_runs WHERE job_id = $1",
                               1, p);
    ck_assert_str_eq(PQgetvalue(pr, 0, 0), "2");
    ck_assert_str_eq(PQgetvalue(pr, 0, 1), "2");
    PQclear(pr);
    free(big);
    free(small);
}
END_TEST

START_TEST(borrowing_waits_while_guaranteed_work_waits)
{
    /* chem fills its guarantee with a long job, phys holds its guarantee */
    char *c1 = jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"c1\",\"gpus\":2,"
                                        "\"gpu_type\":\"a100\",\"command\":[\"sleep\",\"300\"]}");
    char *p1 = jobs_submit(pia, "phys", "{\"project\":\"lab\",\"name\":\"p1\",\"gpus\":2,"
                                        "\"gpu_type\":\"a100\",\"command\":[\"sleep\",\"300\"]}");
    json_decref(jobs_wait(ann, "chem", c1, "running", 30));
    json_decref(jobs_wait(pia, "phys", p1, "running", 30));
    /* nothing idle: chem's borrowing job waits for capacity, never preempting */
    char *c2 = jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"c2\",\"gpus\":2,"
                                        "\"gpu_type\":\"a100\",\"command\":[\"true\"]}");
    json_t *j = jobs_wait_seen(ann, "chem", c2, 10);
    ck_assert_str_eq(jstr(j, "reason"), "capacity:gpu:a100");
    json_decref(j);
    j = jobs_get(pia, "phys", p1);
    ck_assert_str_eq(jstr(j, "state"), "running");
    ck_assert(json_is_null(json_object_get(j, "stop_requested")));
    json_decref(j);
    /* the guaranteed job ends: the GPUs are idle and c2 borrows them */
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/phys/jobs/%s/cancel", p1), pia, NULL), 202);
    j = jobs_wait(ann, "chem", c2, "succeeded", 30);
    ck_assert(json_is_true(json_object_get(j, "preemptible")));
    json_decref(j);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", c1), ann, NULL), 202);
    json_decref(jobs_wait(ann, "chem", c1, "cancelled", 30));
    free(c1);
    free(c2);
    free(p1);
}
END_TEST

static Suite *reclaim_suite(void)
{
    Suite *s = suite_create("jobs_reclaim");
    TCase *tc = tcase_create("reclaim");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, borrow_then_reclaim);
    tcase_add_test(tc, borrowing_waits_while_guaranteed_work_waits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    harness_require_pg();
    return suite_run(reclaim_suite());
}
