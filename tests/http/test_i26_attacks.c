/*
 * test_i26_attacks.c - an attacker's look at issue 26 (arrays, history,
 * notifications): webhook URLs naming the loopback in the numeric spellings
 * that inet_pton does not know (0x7f000001, 2130706433, 0177.0.0.1) refused
 * as any loopback literal is; another tenant's array parent behaving like an
 * id that never was; forged history cursors and LIKE wildcards answered 400
 * or matched literally, never 500.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define ME     "/api/v1/me/notifications"
#define SECRET "0123456789abcdef0123456789abcdef"

static char *ann, *rex; /* a chem member; a member of rival */

static void setup(void)
{
    harness_setup("i26attacks", jobs_fast_env);
    jobs_local_cluster("{\"a100\":4}");
    ann = jobs_tenant_member("chem", "mol", "{\"gpu:a100\":{\"guaranteed\":4,\"limit\":4}}", "ann");
    rex =
        jobs_tenant_member("rival", "spy", "{\"gpu:a100\":{\"guaranteed\":0,\"limit\":0}}", "rex");
}

static void teardown(void)
{
    jobs_kill_leftovers();
    free(ann);
    free(rex);
    harness_teardown();
}

/* aidcd runs without AIDC_WEBHOOK_ALLOW_LOOPBACK here. */
START_TEST(webhook_loopback_in_any_spelling_is_refused)
{
    const char *refused[] = {
        "http://127.0.0.1/x",        "https://[::ffff:127.0.0.1]/x",
        "https://0x7f000001/x",      "https://2130706433/x",
        "https://0177.0.0.1/x",      "https://127.1/x",
        "https://0x7f.1/x",          "https://169.254.169.254/x",
        "https://[::ffff:7f00:1]/x", "https://[0:0:0:0:0:0:0:1]/x",
        "https://0xa9fea9fe/x",      "https://2852039166/x",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        struct http_res r;
        long st = reqj("PUT", ME, ann,
                       fmt("{\"events\":[\"job.ended\"],\"webhooks\":[{\"url\":\"%s\","
                           "\"secret\":\"%s\"}]}",
                           refused[i], SECRET),
                       &r);
        ck_assert_msg(st == 422 || st == 400, "%s answered %ld: %s", refused[i], st, r.body);
        expect_problem(&r, "notify.url", NULL, NULL);
        http_res_free(&r);
    }
}
END_TEST

/* Another tenant's array parent, named in ?array_parent= or depends_on, is as unknown as an id
 * that never was. */
START_TEST(another_tenants_array_is_unknown)
{
    char *parent = jobs_submit(ann, "chem",
                               "{\"project\":\"mol\",\"name\":\"arr\",\"array\":{\"count\":2},"
                               "\"command\":[\"true\"]}");
    const char *ghost = "00000000-0000-4000-8000-000000000001";
    struct http_res a, b;
    long sa = reqj("GET", fmt("/api/v1/tenants/rival/jobs?array_parent=%s", parent), rex, NULL, &a);
    long sb = reqj("GET", fmt("/api/v1/tenants/rival/jobs?array_parent=%s", ghost), rex, NULL, &b);
    ck_assert_int_eq(sa, sb);
    ck_assert_int_eq(count_items(fmt("/api/v1/tenants/rival/jobs?array_parent=%s", parent), rex),
                     0);
    http_res_free(&a);
    http_res_free(&b);
    /* depends_on naming it: the same problem as a ghost */
    sa = reqj("POST", "/api/v1/tenants/rival/jobs", rex,
              fmt("{\"project\":\"spy\",\"name\":\"d\",\"command\":[\"true\"],\"depends_on\":[{"
                  "\"job\":\"%s\",\"condition\":\"ended\"}]}",
                  parent),
              &a);
    sb = reqj("POST", "/api/v1/tenants/rival/jobs", rex,
              fmt("{\"project\":\"spy\",\"name\":\"d\",\"command\":[\"true\"],\"depends_on\":[{"
                  "\"job\":\"%s\",\"condition\":\"ended\"}]}",
                  ghost),
              &b);
    ck_assert_int_eq(sa, sb);
    ck_assert_int_eq(sa, 422);
    expect_problem(&a, "job.depends_on_unknown", NULL, NULL);
    expect_problem(&b, "job.depends_on_unknown", NULL, NULL);
    http_res_free(&a);
    http_res_free(&b);
    /* the chem path: 403 or 404, never the array */
    sa = reqj("GET", fmt("/api/v1/tenants/chem/jobs?array_parent=%s", parent), rex, NULL, &a);
    ck_assert_msg(sa == 403 || sa == 404, "answered %ld", sa);
    http_res_free(&a);
    /* rex cancels ann's parent: as a ghost */
    sa = reqj("POST", fmt("/api/v1/tenants/rival/jobs/%s/cancel", parent), rex, NULL, &a);
    sb = reqj("POST", fmt("/api/v1/tenants/rival/jobs/%s/cancel", ghost), rex, NULL, &b);
    ck_assert_int_eq(sa, sb);
    ck_assert_int_ne(sa / 100, 2);
    http_res_free(&a);
    http_res_free(&b);
    json_decref(jobs_wait(ann, "chem", parent, "succeeded,failed,cancelled", 30));
    free(parent);
}
END_TEST

/* Forged cursors and LIKE metacharacters in the history's name=: 400 or a literal match. */
START_TEST(history_forged_cursors_and_wildcards)
{
    char *id =
        jobs_submit(ann, "chem", "{\"project\":\"mol\",\"name\":\"plain\",\"command\":[\"true\"]}");
    json_decref(jobs_wait(ann, "chem", id, "succeeded,failed", 30));
    const char *cursors[] = {"x",        "%21%21%21", "eyJ4IjoxfQ", "AAAAAAAAAAAAAAAAAAAAAAAA",
                             "%00",      "e30",       "Li4vLi4v",   "LTE",
                             "bnVsbA==", "W10"};
    for (size_t i = 0; i < sizeof cursors / sizeof cursors[0]; i++) {
        struct http_res r;
        long st =
            reqj("GET", fmt("/api/v1/tenants/chem/jobs?cursor=%s", cursors[i]), ann, NULL, &r);
        ck_assert_msg(st == 400, "cursor %s answered %ld: %s", cursors[i], st, r.body);
        http_res_free(&r);
    }
    const char *names[] = {"%25", "_____", "%5C", "%5C%25", "pla%5C", "%5C_lain", "p%25"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct http_res r;
        long st = reqj("GET", fmt("/api/v1/tenants/chem/jobs?name=%s", names[i]), ann, NULL, &r);
        ck_assert_msg(st == 200 || st == 400, "name %s answered %ld: %s", names[i], st, r.body);
        if (st == 200)
            ck_assert_msg(json_array_size(json_object_get(r.json, "items")) == 0,
                          "name %s matched: %s", names[i], r.body);
        http_res_free(&r);
    }
    free(id);
}
END_TEST

/* An array whose tasks together exceed the GPU limit: each task is checked like a job, and the
 * tasks past the limit stay queued; a tenant with no GPUs of a type gets no array of them. */
START_TEST(arrays_do_not_evade_gpu_limits)
{
    struct http_res r;
    long st = reqj("POST", "/api/v1/tenants/rival/jobs", rex,
                   "{\"project\":\"spy\",\"name\":\"a\",\"gpus\":1,\"gpu_type\":\"a100\","
                   "\"array\":{\"count\":3},\"command\":[\"true\"]}",
                   &r);
    ck_assert_msg(st == 422, "answered %ld: %s", st, r.body);
    http_res_free(&r);
    char *parent = jobs_submit(ann, "chem",
                               "{\"project\":\"mol\",\"name\":\"big\",\"gpus\":2,\"gpu_type\":"
                               "\"a100\",\"array\":{\"count\":3},\"command\":[\"sleep\",\"60\"]}");
    double until = jobs_now() + 30;
    long long running = 0;
    while (running < 2 && jobs_now() < until) {
        ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/chem/jobs/%s", parent), ann, NULL, &r),
                         200);
        running = jint(json_object_get(r.json, "array_tasks"), "running");
        ck_assert_int_le(running, 2);
        http_res_free(&r);
        if (running < 2)
            jobs_nap_ms(100);
    }
    ck_assert_int_eq(running, 2);
    /* several admission rounds (every 200 ms) later: still two running, one queued */
    for (int i = 0; i < 10; i++) {
        jobs_nap_ms(100);
        ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/chem/jobs/%s", parent), ann, NULL, &r),
                         200);
        ck_assert_int_eq(jint(json_object_get(r.json, "array_tasks"), "running"), 2);
        ck_assert_int_eq(jint(json_object_get(r.json, "array_tasks"), "queued"), 1);
        http_res_free(&r);
    }
    ck_assert_int_eq(
        reqj("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", parent), ann, NULL, &r) / 100, 2);
    http_res_free(&r);
    json_decref(jobs_wait(ann, "chem", parent, "cancelled", 30));
    free(parent);
}
END_TEST

/* A job name with CR/LF (it reaches the e-mail's Subject) is refused at submission. */
START_TEST(a_job_name_with_crlf_is_refused)
{
    struct http_res r;
    long st = reqj("POST", "/api/v1/tenants/chem/jobs", ann,
                   "{\"project\":\"mol\",\"name\":\"x\\r\\nBcc: evil@example.org\","
                   "\"command\":[\"true\"]}",
                   &r);
    ck_assert_msg(st == 422 || st == 400, "answered %ld: %s", st, r.body);
    http_res_free(&r);
}
END_TEST

/* The idle-GPU reports: a member reads neither the tenant's nor the platform's; another
 * tenant's is as one that does not exist; /capacity names no tenant or job. */
START_TEST(efficiency_reports_are_for_admins_only)
{
    ck_assert_int_eq(req("GET", "/api/v1/tenants/chem/efficiency/idle", ann, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/efficiency/idle", ann, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/capacity/nodes", ann, NULL), 403);
    long theirs = req("GET", "/api/v1/tenants/chem/efficiency/idle", rex, NULL);
    ck_assert_int_eq(theirs, req("GET", "/api/v1/tenants/nosuch/efficiency/idle", rex, NULL));
    ck_assert_int_ne(theirs / 100, 2);
    char *id = jobs_submit(ann, "chem",
                           "{\"project\":\"mol\",\"name\":\"secretname\",\"command\":[\"true\"]}");
    json_decref(jobs_wait(ann, "chem", id, "succeeded,failed", 30));
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/capacity", rex, NULL, &r), 200);
    ck_assert_ptr_null(strstr(r.body, "chem"));
    ck_assert_ptr_null(strstr(r.body, "secretname"));
    ck_assert_ptr_null(strstr(r.body, id));
    http_res_free(&r);
    free(id);
}
END_TEST

/* A project's GPU limit below the cluster's: the array's tasks past it stay queued, and another
 * member of the tenant cancels neither the parent nor a task. */
START_TEST(project_limit_holds_array_tasks_and_members_cancel_only_their_own)
{
    make_project("chem", "small");
    jobs_project_quota("chem", "small", "{\"gpu:a100\":{\"limit\":1}}");
    char *bea = make_member_login("chem", "bea", "member");
    char *parent = jobs_submit(ann, "chem",
                               "{\"project\":\"small\",\"name\":\"q\",\"gpus\":1,\"gpu_type\":"
                               "\"a100\",\"array\":{\"count\":3},\"command\":[\"sleep\",\"60\"]}");
    struct http_res r;
    double until = jobs_now() + 30;
    long long running = 0;
    while (running < 1 && jobs_now() < until) {
        ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/chem/jobs/%s", parent), ann, NULL, &r),
                         200);
        running = jint(json_object_get(r.json, "array_tasks"), "running");
        http_res_free(&r);
        if (running < 1)
            jobs_nap_ms(100);
    }
    ck_assert_int_eq(running, 1);
    for (int i = 0; i < 10; i++) {
        jobs_nap_ms(100);
        ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/chem/jobs/%s", parent), ann, NULL, &r),
                         200);
        ck_assert_int_eq(jint(json_object_get(r.json, "array_tasks"), "running"), 1);
        ck_assert_int_eq(jint(json_object_get(r.json, "array_tasks"), "queued"), 2);
        http_res_free(&r);
    }
    ck_assert_int_eq(
        reqj("GET", fmt("/api/v1/tenants/chem/jobs?array_parent=%s", parent), ann, NULL, &r), 200);
    char *task = strdup(jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"));
    http_res_free(&r);
    /* not a member of the project: 404 (or 403 where the job is seen), nothing cancelled */
    long st = reqj("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", task), bea, NULL, &r);
    ck_assert_msg(st == 403 || st == 404, "task cancel answered %ld", st);
    http_res_free(&r);
    st = reqj("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", parent), bea, NULL, &r);
    ck_assert_msg(st == 403 || st == 404, "parent cancel answered %ld", st);
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/chem/jobs/%s", parent), ann, NULL, &r), 200);
    ck_assert_int_eq(jint(json_object_get(r.json, "array_tasks"), "cancelled"), 0);
    http_res_free(&r);
    ck_assert_int_eq(
        reqj("POST", fmt("/api/v1/tenants/chem/jobs/%s/cancel", parent), ann, NULL, &r) / 100, 2);
    http_res_free(&r);
    json_decref(jobs_wait(ann, "chem", parent, "cancelled", 30));
    free(task);
    free(parent);
    free(bea);
}
END_TEST

static Suite *attacks_suite(void)
{
    Suite *s = suite_create("i26_attacks");
    TCase *tc = tcase_create("i26_attacks");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, webhook_loopback_in_any_spelling_is_refused);
    tcase_add_test(tc, another_tenants_array_is_unknown);
    tcase_add_test(tc, history_forged_cursors_and_wildcards);
    tcase_add_test(tc, arrays_do_not_evade_gpu_limits);
    tcase_add_test(tc, a_job_name_with_crlf_is_refused);
    tcase_add_test(tc, efficiency_reports_are_for_admins_only);
    tcase_add_test(tc, project_limit_holds_array_tasks_and_members_cancel_only_their_own);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    harness_require_pg();
    return suite_run(attacks_suite());
}
