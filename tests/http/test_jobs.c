/*
 * test_jobs.c - jobs end to end on the real local executor: a job runs with
 * the GPUs it was given and its environment, a failing job records its exit
 * code, cancel (running, queued, twice, someone else's), the explanations
 * of a waiting job (reason, queue position, estimated start), quotas' used
 * and borrowed, lists with filters and pages, logs, and what other readers
 * of a tenant may see of a job.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static char *ann, *ben, *cat, *tad; /* chem member, chem member, chem viewer, chem admin */

/* jobs_fast_env with a grace period of 10 s: a job's SIGTERM handler is shown to run
 * (cancel_running_queued_and_finished_jobs), and on a busy machine 1 s was not always
 * enough for a shell to run it before the SIGKILL (seen in CI) */
static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=100", "AIDC_ADMISSION_INTERVAL_MS=200",
                                  "AIDC_PREEMPT_GRACE_SECONDS=10", NULL};

static void setup(void)
{
    harness_setup("jobs", env);
    jobs_local_cluster("{\"a100\":4,\"t4\":2}");
    make_tenant("chem");
    make_project("chem", "mol");
    make_project("chem", "held");
    jobs_tenant_quota("chem", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4},"
                              "\"gpu:t4\":{\"guaranteed\":0,\"limit\":2}}");
    jobs_project_quota("chem", "held", "{\"jobs\":{\"limit\":0}}");
    make_user("ann", "ann-password-1", NULL);
    make_user("ben", "ben-password-1", NULL);
    make_user("cat", "cat-password-1", NULL);
    make_user("tad", "tad-password-1", NULL);
    make_member("chem", "ann", "member");
    make_member("chem", "ben", "member");
    make_member("chem", "cat", "viewer");
    make_member("chem", "tad", "tenant_admin");
    ann = login("ann", "ann-password-1");
    ben = login("ben", "ben-password-1");
    cat = login("cat", "cat-password-1");
    tad = login("tad", "tad-password-1");
    ck_assert(ann && ben && cat && tad);
}

static void teardown(void)
{
    free(ann);
    free(ben);
    free(cat);
    free(tad);
    harness_teardown();
}

static json_t *quota_entry(const char *tenant, const char *res)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/%s/quota", tenant), harness_srv.admin_token,
                          NULL, &r),
                     200);
    json_t *e = json_incref(json_object_get(json_object_get(r.json, "resources"), res));
    http_res_free(&r);
    ck_assert_ptr_nonnull(e);
    return e;
}

START_TEST(job_runs_with_its_gpus_and_environment)
{
    char *id = jobs_submit(ann, "chem",
                           "{\"project\":\"mol\",\"name\":\"hello\",\"gpus\":2,\"gpu_type\":"
                           "\"t4\",\"env\":{\"GREETING\":\"ni hao\"},\"script\":"
                           "\"echo gpus=$CUDA_VISIBLE_DEVICES nv=$NVIDIA_VISIBLE_DEVICES "
                           "host=$AIDC_GPU_INDEXES\\n"
                           "echo job=$AIDC_JOB_ID tenant=$AIDC_TENANT user=$AIDC_USER\\n"
                           "echo greeting=$GREETING\\n"
                           /* nothing of aidcd's settings in the shim the job can read */
                           "echo shim_aidc_vars=$(tr '\\\\0' '\\\\n' < /proc/$PPID/environ | "
                           "grep -c ^AIDC_)\\necho oops >&2\"}");
    json_t *j = jobs_wait(ann, "chem", id, "succeeded,failed", 30);
    ck_assert_str_eq(jstr(j, "state"), "succeeded");
    ck_assert_int_eq(jint(j, "exit_code"), 0);
    ck_assert_str_eq(jstr(j, "cluster"), "local");
    ck_assert(json_is_true(json_object_get(j, "preemptible"))); /* t4: no guarantee */
    ck_assert_ptr_nonnull(jstr(j, "started_at"));
    ck_assert_ptr_nonnull(jstr(j, "finished_at"));
    ck_assert(strcmp(jstr(j, "started_at"), jstr(j, "finished_at")) <= 0);
    /* the GPUs it was given are the ones it holds: the two t4 indexes (4-5; a100 is 0-3),
     * which its sandbox numbers from 0 as a container does */
    json_t *idx = json_object_get(j, "gpu_indexes");
    ck_assert_int_eq(json_array_size(idx), 2);
    long long g0 = json_integer_value(json_array_get(idx, 0));
    long long g1 = json_integer_value(json_array_get(idx, 1));
    ck_assert(g0 >= 4 && g0 < 6 && g1 >= 4 && g1 < 6 && g0 != g1);
    char *out = jobs_logs(ann, "chem", id, NULL);
    char want[200];
    snprintf(want, sizeof want, "gpus=0,1 nv=0,1 host=%lld,%lld\n", g0, g1);
    ck_assert_msg(strstr(out, want), "stdout: %s", out);
    snprintf(want, sizeof want, "job=%s tenant=chem user=ann\n", id);
    ck_assert_msg(strstr(out, want), "stdout: %s", out);
    ck_assert_msg(strstr(out, "greeting=ni hao\n"), "stdout: %s", out);
    ck_assert_msg(strstr(out, "shim_aidc_vars=0\n"), "stdout: %s", out);
    free(out);
    out = jobs_logs(ann, "chem", id, "stream=stderr");
    ck_assert_str_eq(out, "oops\n");
    free(out);
    char *hist = jobs_history(ann, "chem", id);
    ck_assert_str_eq(hist, "queued,admitted,pending,running,succeeded");
    free(hist);
    /* nothing held any more, and the run was recorded for GPU-hour budgets */
    json_t *q = quota_entry("chem", "gpu:t4");
    ck_assert_int_eq(jint(q, "used"), 0);
    json_decref(q);
    const char *p[1] = {id};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT count(*) FROM job_runs WHERE job_id = $1::uuid AND gpus = 2"
                              " AND ended_at IS NOT NULL",
                              1, p);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "1");
    PQclear(r);
    json_decref(j);
    free(id);
}
END_TEST

START_TEST(cpu_job_sees_no_gpus_and_failure_keeps_its_exit_code)
{
    char *id = jobs_submit(ann, "chem",
                           "{\"project\":\"mol\",\"name\":\"fails\",\"command\":[\"sh\",\"-c\","
                           "\"echo cvd=[$CUDA_VISIBLE_DEVICES] nv=$NVIDIA_VISIBLE_DEVICES; "
                           "echo bad >&2; exit 3\"]}");
    json_t *j = jobs_wait(ann, "chem", id, "succeeded,failed", 30);
    ck_assert_str_eq(jstr(j, "state"), "failed");
    ck_assert_int_eq(jint(j, "exit_code"), 3);
    ck_assert_str_eq(jstr(j, "reason"), "exit code 3");
    char *out = jobs_logs(ann, "chem", id, "stream=stdout");
    ck_assert_str_eq(out, "cvd=[] nv=none\n");
    free(out);
    json_decref(j);
    free(id);
    /* a program that does not exist fails with 127 and says why on stderr */
    id = jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"nope\",\"command\":"
                                  "[\"/no/such/program\"]}");
    j = jobs_wait(ann, "chem", id, "succeeded,failed", 30);
    ck_assert_int_eq(jint(j, "exit_code"), 127);
    out = jobs_logs(ann, "chem", id, "stream=stderr");
    ck_assert_msg(strstr(out, "/no/such/program"), "stderr: %s", out);
    free(out);
    json_decref(j);
    free(id);
}
END_TEST

START_TEST(cancel_running_queued_and_finished_jobs)
{
    /* a running job gets SIGTERM first: its handler runs */
    char *run = jobs_submit(ann, "chem",
                            "{\"project\":\"mol\",\"name\":\"long\",\"script\":"
                            "\"trap 'echo terminated; exit 143' TERM\\necho started\\n"
                            "sleep 120 & wait\"}");
    json_decref(jobs_wait(ann, "chem", run, "running", 30));
    /* another member does not even see it (members_see_all_jobs is off); the tenant
     * admin could cancel it */
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", run), ben, NULL), 404);
    struct http_res r;
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", run), ann, NULL, &r),
                     202);
    ck_assert_str_eq(jstr(r.json, "stop_requested"), "cancel");
    http_res_free(&r);
    json_t *j = jobs_wait(ann, "chem", run, "cancelled,failed,succeeded", 30);
    ck_assert_str_eq(jstr(j, "state"), "cancelled");
    json_decref(j);
    char *out = jobs_logs(ann, "chem", run, NULL);
    ck_assert_msg(strstr(out, "terminated"), "stdout: %s", out);
    free(out);
    /* cancelling an ended job is a conflict */
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", run), ann, NULL, &r),
                     409);
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "detail"), "cancelled"));
    http_res_free(&r);

    /* a queued job (its project may run no jobs) ends at once, by the tenant admin */
    char *q = jobs_submit(ben, "chem", "{\"project\":\"held\",\"name\":\"q\",\"command\":[\"true\"]}");
    j = jobs_wait_seen(ben, "chem", q, 10);
    ck_assert_str_eq(jstr(j, "reason"), "project-quota:jobs");
    json_decref(j);
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", q), tad, NULL, &r),
                     202);
    ck_assert_str_eq(jstr(r.json, "state"), "cancelled");
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "reason"), "tad"));
    http_res_free(&r);
    char *hist = jobs_history(ben, "chem", q);
    ck_assert_str_eq(hist, "queued,cancelled");
    free(hist);
    /* the viewer may not cancel at all; both cancels were audited */
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", q), cat, NULL), 403);
    const char *p[2] = {run, q};
    PGresult *pr = harness_sql(harness_srv.owner_url,
                               "SELECT count(*) FROM audit_log WHERE action = 'job.cancel'"
                               " AND outcome = 'success' AND resource_id IN ($1, $2)",
                               2, p);
    ck_assert_str_eq(PQgetvalue(pr, 0, 0), "2");
    PQclear(pr);
    free(run);
    free(q);
}
END_TEST

/* The waiting job, once its estimated start is known (the pass after it is seen). */
static json_t *jobs_wait_estimate(const char *tok, const char *tenant, const char *id)
{
    for (int i = 0; i < 200; i++) {
        json_t *j = jobs_get(tok, tenant, id);
        if (json_is_string(json_object_get(j, "estimated_start")))
            return j;
        json_decref(j);
        jobs_nap_ms(50);
    }
    ck_abort_msg("job %s never got an estimated start", id);
    return NULL;
}

/* waiting's estimate is running's start plus minutes (to the second) */
static void assert_estimate(const json_t *waiting, const json_t *running, int minutes)
{
    const char *pp[3] = {jstr(running, "started_at"), jstr(waiting, "estimated_start"),
                         fmt("%d", minutes)};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT abs(extract(epoch FROM $2::timestamptz - ($1::timestamptz"
                              " + make_interval(mins => $3::int)))) < 2",
                              3, pp);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(strcmp(PQgetvalue(r, 0, 0), "t") == 0, "started %s + %d min, estimate %s", pp[0],
                  minutes, pp[1]);
    PQclear(r);
}

START_TEST(waiting_jobs_say_why_where_and_when)
{
    /* chem's guarantee (2) runs; a second 2-GPU job borrows the idle rest */
#define SLEEPER(name, minutes)                                                                   \
    fmt("{\"project\":\"mol\",\"name\":\"%s\",\"gpus\":2,\"gpu_type\":\"a100\","                \
        "\"time_limit_minutes\":%d,\"command\":[\"sleep\",\"120\"]}",                           \
        name, minutes)
    char *a = jobs_submit(ann, "chem", SLEEPER("a", 10));
    json_t *ja = jobs_wait(ann, "chem", a, "running", 30);
    char *b = jobs_submit(ann, "chem", SLEEPER("b", 20));
    json_t *jb = jobs_wait(ann, "chem", b, "running", 30);
    ck_assert(json_is_true(json_object_get(jb, "preemptible")));
    json_t *q = quota_entry("chem", "gpu:a100");
    ck_assert_int_eq(jint(q, "used"), 4);
    ck_assert_int_eq(jint(q, "borrowed"), 2);
    json_decref(q);

    /* chem holds its whole limit: the next a100 jobs wait for quota, in order */
    char *c = jobs_submit(ann, "chem", SLEEPER("c", 5));
    /* the submit answer already knows its place (c is ahead) */
    struct http_res rd;
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/chem/jobs", ben, SLEEPER("d", 5), &rd), 201);
    ck_assert_int_eq(jint(rd.json, "queue_position"), 2);
    char *d = strdup(jstr(rd.json, "id"));
    http_res_free(&rd);
    json_t *jc = jobs_wait_seen(ann, "chem", c, 10);
    ck_assert_str_eq(jstr(jc, "reason"), "quota:gpu:a100");
    ck_assert_int_eq(jint(jc, "queue_position"), 1);
    json_t *jd = jobs_wait_seen(ben, "chem", d, 10);
    ck_assert_int_eq(jint(jd, "queue_position"), 2);
    ck_assert_str_eq(jstr(jd, "reason"), "quota:gpu:a100");
    /* a quota wait is estimated like a capacity wait: c when a's 10 minutes end,
     * d (behind c) when b's 20 minutes end */
    json_decref(jc);
    json_decref(jd);
    jc = jobs_wait_estimate(ann, "chem", c);
    jd = jobs_wait_estimate(ben, "chem", d);
    assert_estimate(jc, ja, 10);
    assert_estimate(jd, jb, 20);
    json_decref(jd);
    json_decref(jc);

    json_decref(ja);
    json_decref(jb);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", c), ann, NULL), 202);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", d), tad, NULL), 202);

    /* GPU types never mix: with every a100 taken, a t4 job runs at once */
    char *t = jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"t\",\"gpus\":2,"
                                       "\"gpu_type\":\"t4\",\"command\":[\"true\"]}");
    json_t *jt = jobs_wait(ann, "chem", t, "succeeded,failed", 30);
    ck_assert_str_eq(jstr(jt, "state"), "succeeded");
    ck_assert(json_is_true(json_object_get(jt, "preemptible"))); /* t4: guarantee 0 */
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(jt, "gpu_indexes"), 0)) >= 4,
                     1); /* t4 indexes follow a100's */
    json_decref(jt);

    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", a), ann, NULL), 202);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", b), ann, NULL), 202);
    json_decref(jobs_wait(ann, "chem", a, "cancelled", 30));
    json_decref(jobs_wait(ann, "chem", b, "cancelled", 30));
    free(a);
    free(b);
    free(c);
    free(d);
    free(t);
}
END_TEST

/* Issue 21: a project's used-up GPU-hours were blamed on the tenant ("budget"). */
START_TEST(budget_waits_say_whose_budget)
{
    make_project("chem", "thrift");
    jobs_project_quota("chem", "thrift", "{\"gpu_hours_month\":{\"limit\":0}}");
    char *p = jobs_submit(ann, "chem", "{\"project\":\"thrift\",\"name\":\"p\",\"gpus\":1,"
                                       "\"gpu_type\":\"t4\",\"command\":[\"true\"]}");
    json_t *jp = jobs_wait_seen(ann, "chem", p, 10);
    ck_assert_str_eq(jstr(jp, "reason"), "budget:project:thrift");
    /* a budget frees up when the month turns (UTC) */
    const char *est = jstr(jp, "estimated_start");
    ck_assert_msg(est && strlen(est) == 20 && strcmp(est + 7, "-01T00:00:00Z") == 0, "%s",
                  est ? est : "null");
    json_decref(jp);
    /* CPU-only work spends no GPU-hours: it runs */
    char *c = jobs_submit(ann, "chem", "{\"project\":\"thrift\",\"name\":\"c\","
                                       "\"command\":[\"true\"]}");
    json_decref(jobs_wait(ann, "chem", c, "succeeded", 30));

    make_tenant("frugal");
    make_project("frugal", "lab");
    jobs_tenant_quota("frugal", "{\"gpu:t4\":{\"guaranteed\":0,\"limit\":2},"
                                "\"gpu_hours_month\":{\"limit\":0}}");
    make_member("frugal", "ann", "member");
    char *ann2 = login("ann", "ann-password-1"); /* a session that knows the new membership */
    char *t = jobs_submit(ann2, "frugal", "{\"project\":\"lab\",\"name\":\"t\",\"gpus\":1,"
                                          "\"gpu_type\":\"t4\",\"command\":[\"true\"]}");
    json_t *jt = jobs_wait_seen(ann2, "frugal", t, 10);
    ck_assert_str_eq(jstr(jt, "reason"), "budget:tenant");
    json_decref(jt);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", p), ann, NULL), 202);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/frugal/jobs/%s/cancel", t), ann2, NULL), 202);
    free(p);
    free(c);
    free(t);
    free(ann2);
}
END_TEST

START_TEST(estimated_start_follows_the_running_jobs)
{
    /* chem runs its guarantee, phys its own: all four a100 are taken */
    make_tenant("phys");
    make_project("phys", "lab");
    jobs_tenant_quota("phys", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":2}}");
    make_user("pia", "pia-password-1", NULL);
    make_member("phys", "pia", "member");
    char *pia = login("pia", "pia-password-1");
    char *a = jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"a\",\"gpus\":2,\"gpu_type\":"
                                       "\"a100\",\"time_limit_minutes\":30,\"command\":"
                                       "[\"sleep\",\"300\"]}");
    json_decref(jobs_wait(ann, "chem", a, "running", 30));
    char *p1 = jobs_submit(pia, "phys", "{\"project\":\"lab\",\"name\":\"p1\",\"gpus\":2,"
                                        "\"gpu_type\":\"a100\",\"time_limit_minutes\":10,"
                                        "\"command\":[\"sleep\",\"300\"]}");
    json_decref(jobs_wait(pia, "phys", p1, "running", 30));
    /* chem's next job is beyond its guarantee and nothing is idle: it waits
     * for capacity, estimated to start when p1's 10-minute limit ends (a's
     * 30 minutes end later) */
    char *w = jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"w\",\"gpus\":2,"
                                       "\"gpu_type\":\"a100\",\"command\":[\"true\"]}");
    json_t *jw = jobs_wait_seen(ann, "chem", w, 10);
    ck_assert_str_eq(jstr(jw, "reason"), "capacity:gpu:a100");
    ck_assert_int_eq(jint(jw, "queue_position"), 1);
    json_t *jp = jobs_get(pia, "phys", p1);
    /* p1 started S, limit 10 min: the estimate is S + 10 min (to the second) */
    const char *est = jstr(jw, "estimated_start");
    ck_assert_ptr_nonnull(est);
    const char *st = jstr(jp, "started_at");
    const char *pp[2] = {st, est};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT abs(extract(epoch FROM $2::timestamptz"
                              " - ($1::timestamptz + interval '10 minutes'))) < 2",
                              2, pp);
    ck_assert_msg(strcmp(PQgetvalue(r, 0, 0), "t") == 0, "started %s, estimate %s", st, est);
    PQclear(r);
    json_decref(jp);
    json_decref(jw);
    /* p1 ends: w runs on its GPUs, borrowing */
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/phys/jobs/%s/cancel", p1), pia, NULL), 202);
    jw = jobs_wait(ann, "chem", w, "succeeded", 30);
    ck_assert(json_is_true(json_object_get(jw, "preemptible")));
    json_decref(jw);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", a), ann, NULL), 202);
    json_decref(jobs_wait(ann, "chem", a, "cancelled", 30));
    free(a);
    free(p1);
    free(w);
    free(pia);
}
END_TEST

START_TEST(lists_filter_and_page)
{
    make_project("chem", "la");
    make_project("chem", "lb");
    jobs_project_quota("chem", "lb", "{\"jobs\":{\"limit\":0}}");
    char *ids[5]; /* even: project la (runs), odd: lb (stays queued) */
    for (int i = 0; i < 5; i++)
        ids[i] = jobs_submit(i < 3 ? ann : ben, "chem",
                             fmt("{\"project\":\"%s\",\"name\":\"l%d\",\"command\":[\"true\"]}",
                                 i % 2 ? "lb" : "la", i));
    for (int i = 0; i < 5; i += 2) /* as its owner: members see only their own */
        json_decref(jobs_wait(i < 3 ? ann : ben, "chem", ids[i], "succeeded", 30));
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/chem/jobs?project=lb&state=queued", cat, NULL,
                          &r),
                     200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 2);
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/chem/jobs?project=la&state=queued", cat, NULL,
                          &r),
                     200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/chem/jobs?user=ben&project=la", cat, NULL, &r),
                     200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 1);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"), ids[4]);
    http_res_free(&r);
    /* pages of 2, newest first: every job of la exactly once (as the viewer: all of them) */
    int seen[5] = {0}, pages = 0;
    char cur[512] = "";
    do {
        ck_assert_int_eq(reqj("GET",
                              fmt("/api/v1/tenants/chem/jobs?limit=2&project=la%s%s",
                                  cur[0] ? "&cursor=" : "", cur),
                              cat, NULL, &r),
                         200);
        size_t i;
        json_t *it;
        json_array_foreach(json_object_get(r.json, "items"), i, it) {
            for (int k = 0; k < 5; k++)
                seen[k] += strcmp(jstr(it, "id"), ids[k]) == 0;
        }
        const char *next = jstr(r.json, "next_cursor");
        snprintf(cur, sizeof cur, "%s", next ? next : "");
        http_res_free(&r);
        pages++;
    } while (cur[0] && pages < 10);
    ck_assert_int_eq(pages, 2);
    ck_assert(seen[0] == 1 && seen[2] == 1 && seen[4] == 1 && seen[1] == 0 && seen[3] == 0);
    for (int i = 0; i < 5; i++) {
        if (i % 2)
            ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", ids[i]), tad,
                                 NULL),
                             202);
        free(ids[i]);
    }
}
END_TEST

START_TEST(others_see_the_job_but_not_its_secrets_or_logs)
{
    char *id = jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"secret\",\"env\":"
                                        "{\"TOKEN\":\"s3cr3t\"},\"command\":[\"sh\",\"-c\","
                                        "\"seq 1 500\"]}");
    json_t *j = jobs_wait(ann, "chem", id, "succeeded", 30);
    ck_assert_str_eq(jstr(json_object_get(j, "env"), "TOKEN"), "s3cr3t");
    json_decref(j);
    j = jobs_get(cat, "chem", id);
    ck_assert_str_eq(jstr(json_object_get(j, "env"), "TOKEN"), "(hidden)");
    json_decref(j);
    j = jobs_get(tad, "chem", id);
    ck_assert_str_eq(jstr(json_object_get(j, "env"), "TOKEN"), "s3cr3t");
    json_decref(j);
    ck_assert_int_eq(req("GET", fmt("/api/v1/tenants/chem/jobs/%s/logs", id), cat, NULL), 403);
    ck_assert_int_eq(req("GET", fmt("/api/v1/tenants/chem/jobs/%s/logs", id), ben, NULL), 404);
    /* the tail: the last lines, default 100 */
    char *out = jobs_logs(tad, "chem", id, "tail=3");
    ck_assert_str_eq(out, "498\n499\n500\n");
    free(out);
    out = jobs_logs(ann, "chem", id, NULL);
    ck_assert(strncmp(out, "401\n", 4) == 0);
    ck_assert_int_eq((int)strlen(out), 100 * 4);
    free(out);
    /* logs are text/plain */
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/chem/jobs/%s/logs?tail=1", id), ann, NULL,
                          &r),
                     200);
    char *ct = http_header(&r, "Content-Type");
    ck_assert_ptr_nonnull(ct);
    ck_assert(strncmp(ct, "text/plain", 10) == 0);
    free(ct);
    http_res_free(&r);
    /* a queued job has an empty log (not a 404: a followed job may go back to the queue) */
    char *q = jobs_submit(ann, "chem", "{\"project\":\"held\",\"name\":\"q\",\"command\":[\"true\"]}");
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/chem/jobs/%s/logs", q), ann, NULL, &r), 200);
    ck_assert_uint_eq(r.body_len, 0);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", q), ann, NULL), 202);
    free(q);
    free(id);
}
END_TEST

/* Whether the job list as token holds job id. */
static bool listed(const char *token, const char *id)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/chem/jobs?limit=1000", token, NULL, &r), 200);
    bool found = false;
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(r.json, "items"), i, j)
        found |= strcmp(jstr(j, "id"), id) == 0;
    http_res_free(&r);
    return found;
}

START_TEST(members_read_their_own_jobs_unless_the_tenant_shares_them)
{
    char *id = jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"mine\",\"env\":"
                                        "{\"TOKEN\":\"s3cr3t\"},\"command\":[\"true\"]}");
    json_decref(jobs_wait(ann, "chem", id, "succeeded", 30));
    /* another member: not there at all, through every route of a job */
    static const char *const routes[][2] = {
        {"GET", ""}, {"GET", "/events"}, {"GET", "/logs"}, {"POST", "/cancel"},
        {"POST", "/checkpoint"}};
    for (size_t k = 0; k < sizeof routes / sizeof *routes; k++)
        ck_assert_msg(req(routes[k][0], fmt("/api/v1/tenants/chem/jobs/%s%s", id, routes[k][1]),
                          ben, NULL) == 404,
                      "%s %s", routes[k][0], routes[k][1]);
    ck_assert(!listed(ben, id));
    ck_assert(listed(ann, id) && listed(cat, id) && listed(tad, id)); /* owner, viewer, admin */
    /* a platform admin or an auditor who is also a plain member still reads every job there
     * (its membership narrowed it to its own: a tenant's deletion then left the rest running) */
    make_user("pat", "pat-password-1", "[\"platform_admin\"]");
    make_user("aud", "aud-password-1", "[\"auditor\"]");
    make_member("chem", "pat", "member");
    make_member("chem", "aud", "member");
    char *pat = login("pat", "pat-password-1"), *aud = login("aud", "aud-password-1");
    ck_assert(pat && aud);
    ck_assert(listed(pat, id) && listed(aud, id));
    ck_assert_int_eq(req("GET", fmt("/api/v1/tenants/chem/jobs/%s", id), pat, NULL), 200);
    ck_assert_int_eq(req("GET", fmt("/api/v1/tenants/chem/jobs/%s/events", id), aud, NULL), 200);
    free(pat);
    free(aud);
    /* the tenant admin shares jobs among members (a member may not, nor rename the tenant) */
    ck_assert_int_eq(req("PATCH", "/api/v1/tenants/chem", ben, "{\"members_see_all_jobs\":true}"),
                     403);
    ck_assert_int_eq(req("PATCH", "/api/v1/tenants/chem", tad, "{\"name\":\"Chem\"}"), 403);
    ck_assert_int_eq(req("PATCH", "/api/v1/tenants/chem", tad, "{\"suspended\":true}"), 403);
    struct http_res r;
    ck_assert_int_eq(reqj("PATCH", "/api/v1/tenants/chem", tad, "{\"members_see_all_jobs\":true}",
                          &r),
                     200);
    ck_assert(json_is_true(json_object_get(r.json, "members_see_all_jobs")));
    http_res_free(&r);
    /* now ben sees it, its secrets hidden; its logs and its cancel stay the owner's */
    ck_assert(listed(ben, id));
    json_t *j = jobs_get(ben, "chem", id);
    ck_assert_str_eq(jstr(json_object_get(j, "env"), "TOKEN"), "(hidden)");
    json_decref(j);
    ck_assert_int_eq(req("GET", fmt("/api/v1/tenants/chem/jobs/%s/events", id), ben, NULL), 200);
    ck_assert_int_eq(req("GET", fmt("/api/v1/tenants/chem/jobs/%s/logs", id), ben, NULL), 403);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", id), ben, NULL), 403);
    /* the change was audited, with who made it */
    const char *p[1] = {"tad"};
    PGresult *pr = harness_sql(harness_srv.owner_url,
                               "SELECT count(*) FROM audit_log WHERE action = 'tenant.update'"
                               " AND actor_username = $1 AND details->>'members_see_all_jobs' = 'true'",
                               1, p);
    ck_assert_str_eq(PQgetvalue(pr, 0, 0), "1");
    PQclear(pr);
    ck_assert_int_eq(req("PATCH", "/api/v1/tenants/chem", tad, "{\"members_see_all_jobs\":false}"),
                     200);
    ck_assert(!listed(ben, id));
    free(id);
}
END_TEST

START_TEST(retried_submit_and_busy_project)
{
    /* a CI pipeline retrying a submit with its Idempotency-Key makes one job */
    make_project("chem", "ci");
    jobs_project_quota("chem", "ci", "{\"jobs\":{\"limit\":0}}");
    const char *body = "{\"project\":\"ci\",\"name\":\"nightly\",\"command\":[\"true\"]}";
    const char *const key[] = {"Idempotency-Key: nightly-2026-12-02", NULL};
    struct http_res a, b;
    ck_assert_int_eq(http_do(&harness_srv, "POST", "/api/v1/tenants/chem/jobs", ann, body, key, &a),
                     201);
    ck_assert_int_eq(http_do(&harness_srv, "POST", "/api/v1/tenants/chem/jobs", ann, body, key, &b),
                     201);
    ck_assert_str_eq(jstr(a.json, "id"), jstr(b.json, "id"));
    char *replayed = http_header(&b, "Idempotent-Replayed");
    ck_assert_ptr_nonnull(replayed);
    free(replayed);
    http_res_free(&b);
    /* the replay's audit event names the job it answered with (it said null, null) */
    const char *ap[2] = {"nightly-2026-12-02", jstr(a.json, "id")};
    PGresult *ar = harness_sql(harness_srv.owner_url,
                               "SELECT resource_type, resource_id FROM audit_log"
                               " WHERE action = 'job.submit' AND details->>'idempotency_key' = $1"
                               " AND (details->>'replayed')::boolean",
                               1, ap);
    ck_assert_ptr_nonnull(ar);
    ck_assert_int_eq(PQntuples(ar), 1);
    ck_assert_str_eq(PQgetvalue(ar, 0, 0), "job");
    ck_assert_str_eq(PQgetvalue(ar, 0, 1), ap[1]);
    PQclear(ar);
    struct http_res l;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/chem/jobs?project=ci", ann, NULL, &l), 200);
    ck_assert_int_eq(json_array_size(json_object_get(l.json, "items")), 1);
    http_res_free(&l);
    /* a project with a job that has not ended cannot be deleted */
    ck_assert_int_eq(req("DELETE", "/api/v1/tenants/chem/projects/ci", tad, NULL), 409);
    ck_assert_int_eq(
        req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", jstr(a.json, "id")), ann, NULL),
        202);
    ck_assert_int_eq(req("DELETE", "/api/v1/tenants/chem/projects/ci", tad, NULL), 204);
    http_res_free(&a);
}
END_TEST

/*
 * A submit's answer is the job as its GET reads it: the fields a job just
 * inserted cannot have yet are written as constants there (db/jobs.c), and
 * must be what the read says of them. Only what the admitter's pass after the
 * commit may change (reason, estimated_start) and the wait's seconds differ -
 * and the position of a job more than 300 past a mark, which the answer leaves
 * null (0044): this one is the queue's only job.
 */
START_TEST(a_submit_answers_the_job_as_read)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/chem/jobs", ann,
                          "{\"project\":\"held\",\"name\":\"same\",\"command\":[\"true\"],"
                          "\"gpus\":1,\"gpu_type\":\"a100\",\"env\":{\"K\":\"v\"}}",
                          &r),
                     201);
    json_t *got = jobs_get(ann, "chem", jstr(r.json, "id"));
    static const char *const moving[] = {"reason", "estimated_start", "wait_seconds"};
    for (size_t i = 0; i < sizeof moving / sizeof *moving; i++) {
        json_object_del(r.json, moving[i]);
        json_object_del(got, moving[i]);
    }
    char *a = json_dumps(r.json, JSON_SORT_KEYS), *b = json_dumps(got, JSON_SORT_KEYS);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(a, b);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(got, "efficiency"), "gpu_util_avg"));
    free(a);
    free(b);
    json_decref(got);
    http_res_free(&r);
}
END_TEST

/*
 * A submit reads its project's quota by the project's name, ahead of its id
 * (db_prefetch): a namesake's quota in another tenant, or that of a deleted
 * project whose name came back, is never the one it meets.
 */
#define OWN_QUOTA_JOB                                                                              \
    "{\"project\":\"%s\",\"name\":\"own-quota\",\"command\":[\"sleep\",\"60\"],\"gpus\":2,"        \
    "\"gpu_type\":\"a100\"}"

START_TEST(a_submit_meets_its_own_project_s_quota)
{
    make_tenant("bio");
    jobs_tenant_quota("bio", "{\"gpu:a100\":{\"guaranteed\":0,\"limit\":4}}");
    make_project("bio", "mol");
    jobs_project_quota("bio", "mol", "{\"gpu:a100\":{\"limit\":1}}");
    make_project("chem", "gone");
    jobs_project_quota("chem", "gone", "{\"gpu:a100\":{\"limit\":1}}");
    ck_assert_int_eq(req("DELETE", "/api/v1/tenants/chem/projects/gone", tad, NULL), 204);
    make_project("chem", "gone");
    static const char *const projects[] = {"mol", "gone"};
    for (int i = 0; i < 4; i++) { /* a member, and a platform admin, who reads every tenant */
        const char *who = i < 2 ? ann : harness_srv.admin_token;
        char *id =
            jobs_submit(who, "chem", fmt(OWN_QUOTA_JOB, projects[i % 2])); /* 201, or it fails */
        ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", id), who, NULL),
                         202);
        json_decref(jobs_wait(who, "chem", id, "cancelled", 30));
        free(id);
    }
    struct http_res r; /* the namesake's own limit still holds for its own jobs */
    ck_assert_int_eq(reqj("POST", "/api/v1/tenants/bio/jobs", harness_srv.admin_token,
                          fmt(OWN_QUOTA_JOB, "mol"), &r),
                     422);
    ck_assert_ptr_nonnull(strstr(r.body, "gpus"));
    http_res_free(&r);
}
END_TEST

/* What the workers did shows in /metrics (the tests before ran jobs). */
START_TEST(workers_show_in_metrics)
{
    char *id = jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"m\",\"command\":[\"true\"]}");
    json_decref(jobs_wait(ann, "chem", id, "succeeded", 30));
    free(id);
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/metrics", NULL, NULL, &r), 200);
    static const char *const names[] = {
        "\naidc_admission_passes_total ",
        "\naidc_jobs_admitted_total ",
        "\naidc_admission_decisions_total{decision=\"admit\"} ",
        "\naidc_outbox_deliveries_total{result=\"ok\"} ",
        "\naidc_sync_rounds_total ",
        "\naidc_backend_calls_total{cluster=\"local\",op=\"submit\",result=\"ok\"} ",
        "\naidc_backend_calls_total{cluster=\"local\",op=\"poll\",result=\"ok\"} ",
        "\naidc_backend_call_duration_seconds_count{cluster=\"local\",op=\"submit\"} ",
        "\naidc_worker_leader{worker=\"admitter\"} ",
        "\naidc_worker_leader{worker=\"dispatcher\"} ",
        "\naidc_worker_leader{worker=\"sealer\"} ",
        "\naidc_db_connections{pool=\"worker\"} ",
        "\naidc_db_scrape_ok ",
        "\naidc_gpus_total{gpu_type=\"a100\"} ",
        "\naidc_cluster_healthy{cluster=\"local\"} "};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *at = strstr(r.body, names[i]);
        ck_assert_msg(at != NULL, "no %s in /metrics", names[i]);
        ck_assert_msg(strtol(at + strlen(names[i]), NULL, 10) > 0, "%s is 0", names[i]);
    }
    ck_assert_ptr_nonnull(strstr(r.body, "\naidc_admission_last_pass_seconds "));
    http_res_free(&r);
}
END_TEST

static Suite *jobs_suite(void)
{
    Suite *s = suite_create("jobs");
    TCase *tc = tcase_create("jobs");
    /* one server for all: the tests end their jobs and share nothing else */
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, job_runs_with_its_gpus_and_environment);
    tcase_add_test(tc, cpu_job_sees_no_gpus_and_failure_keeps_its_exit_code);
    tcase_add_test(tc, cancel_running_queued_and_finished_jobs);
    tcase_add_test(tc, waiting_jobs_say_why_where_and_when);
    tcase_add_test(tc, budget_waits_say_whose_budget);
    tcase_add_test(tc, estimated_start_follows_the_running_jobs);
    tcase_add_test(tc, lists_filter_and_page);
    tcase_add_test(tc, others_see_the_job_but_not_its_secrets_or_logs);
    tcase_add_test(tc, members_read_their_own_jobs_unless_the_tenant_shares_them);
    tcase_add_test(tc, retried_submit_and_busy_project);
    tcase_add_test(tc, a_submit_answers_the_job_as_read);
    tcase_add_test(tc, a_submit_meets_its_own_project_s_quota);
    tcase_add_test(tc, workers_show_in_metrics);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    harness_require_pg();
    return suite_run(jobs_suite());
}
