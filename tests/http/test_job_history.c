/*
 * test_job_history.c - the job list as a history, like sacct: six real jobs
 * on the local executor (succeeded, failed with exit code 3, a GPU job with
 * LIKE wildcards in its name, cancelled before it started, running, queued),
 * their times then moved into January as the database owner so that every
 * wait and run time is known to the second. Filters (state sets, name
 * patterns taken literally, exit code, GPU type, cluster, user, project,
 * each time window), every sort in both orders with the jobs lacking the
 * value last, keyset pages of one that neither repeat nor skip, CSV with the
 * next cursor in a header, the 400s, and another tenant seeing none of it.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *ann, *bob, *vic, *oth;
/* the six jobs, in the order of their (moved) submit times */
enum { J_OK, J_FAIL, J_GPU, J_CANC, J_RUN, J_WAIT, NJOBS };
static char *ids[NJOBS];
static const char letters[] = "ofgcrw";

#define LIST "/api/v1/tenants/hist/jobs?"

static void move(int k, const char *submitted, const char *started, const char *ended)
{
    const char *p[4] = {ids[k], submitted, started, ended};
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "UPDATE jobs SET submitted_at = $2::timestamptz,"
                              " started_at = $3::timestamptz, finished_at = $4::timestamptz"
                              " WHERE id = $1::uuid",
                              4, p);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
}

static void setup(void)
{
    harness_setup("job_history", jobs_fast_env);
    jobs_local_cluster("{\"a100\":4}");
    make_tenant("hist");
    make_project("hist", "alpha");
    make_project("hist", "beta");
    make_project("hist", "held");
    jobs_tenant_quota("hist", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}");
    jobs_project_quota("hist", "held", "{\"jobs\":{\"limit\":0}}");
    ann = make_member_login("hist", "ann", "member");
    bob = make_member_login("hist", "bob", "member");
    vic = make_member_login("hist", "vic", "viewer");
    make_tenant("other");
    oth = make_member_login("other", "oth", "tenant_admin");

    ids[J_OK] = jobs_submit(ann, "hist",
                            "{\"project\":\"alpha\",\"name\":\"train-a\",\"command\":[\"true\"]}");
    ids[J_FAIL] = jobs_submit(ann, "hist",
                              "{\"project\":\"beta\",\"name\":\"Train-B\",\"script\":\"exit 3\"}");
    ids[J_GPU] = jobs_submit(ann, "hist",
                             "{\"project\":\"alpha\",\"name\":\"eval_x%\",\"gpus\":1,"
                             "\"gpu_type\":\"a100\",\"command\":[\"true\"]}");
    ids[J_CANC] = jobs_submit(bob, "hist",
                              "{\"project\":\"held\",\"name\":\"infer\",\"gpus\":1,"
                              "\"gpu_type\":\"a100\",\"command\":[\"true\"]}");
    ids[J_RUN] = jobs_submit(ann, "hist",
                             "{\"project\":\"alpha\",\"name\":\"long\",\"script\":\"sleep 300\"}");
    ids[J_WAIT] = jobs_submit(bob, "hist",
                              "{\"project\":\"held\",\"name\":\"waiting\",\"gpus\":1,"
                              "\"gpu_type\":\"a100\",\"command\":[\"true\"]}");
    json_decref(jobs_wait(ann, "hist", ids[J_OK], "succeeded", 30));
    json_decref(jobs_wait(ann, "hist", ids[J_FAIL], "failed", 30));
    json_decref(jobs_wait(ann, "hist", ids[J_GPU], "succeeded", 30));
    json_decref(jobs_wait(ann, "hist", ids[J_RUN], "running", 30));
    json_decref(jobs_wait_seen(bob, "hist", ids[J_CANC], 30));
    ck_assert_int_eq(
        req("POST", fmt("/api/v1/tenants/hist/jobs/%s/cancel", ids[J_CANC]), bob, NULL), 202);
    json_decref(jobs_wait(bob, "hist", ids[J_CANC], "cancelled", 30));

    move(J_OK, "2026-01-01T00:00:00Z", "2026-01-01T00:10:00Z", "2026-01-01T01:10:00Z");
    move(J_FAIL, "2026-01-02T00:00:00Z", "2026-01-02T00:01:00Z", "2026-01-02T00:31:00Z");
    move(J_GPU, "2026-01-03T00:00:00Z", "2026-01-03T02:00:00Z", "2026-01-03T02:10:00Z");
    move(J_CANC, "2026-01-04T00:00:00Z", NULL, "2026-01-04T00:30:00Z");
    move(J_RUN, "2026-01-05T00:00:00Z", "2026-01-05T00:05:00Z", NULL);
    move(J_WAIT, "2026-01-06T00:00:00Z", NULL, NULL);
}

static void teardown(void)
{
    char **all[] = {&ann, &bob, &vic, &oth};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
    for (int k = 0; k < NJOBS; k++) {
        free(ids[k]);
        ids[k] = NULL;
    }
    jobs_stop_shims(10);
    harness_teardown();
}

static char letter_of(const char *id)
{
    for (int k = 0; k < NJOBS; k++)
        if (ids[k] && strcmp(ids[k], id) == 0)
            return letters[k];
    return '?';
}

/* The jobs query lists (as vic, who reads them all), as their letters in the order given. */
static const char *order(const char *query)
{
    static char out[8][64];
    static int n;
    char *o = out[n++ % 8];
    struct http_res r;
    long st = reqj("GET", fmt(LIST "%s", query), vic, NULL, &r);
    ck_assert_msg(st == 200, "%s answered %ld: %s", query, st, r.body ? r.body : "");
    size_t i, k = 0;
    json_t *it;
    json_array_foreach(json_object_get(r.json, "items"), i, it) if (k < 63) o[k++] =
        letter_of(jstr(it, "id"));
    o[k] = '\0';
    http_res_free(&r);
    return o;
}

/* As order(), one page of limit=1 at a time: the pages must add up to the same list. */
static const char *walk(const char *query)
{
    static char out[64];
    char cur[512] = "";
    size_t k = 0;
    for (int pages = 0; pages < 10; pages++) {
        struct http_res r;
        ck_assert_int_eq(reqj("GET",
                              fmt(LIST "%s&limit=1%s%s", query, cur[0] ? "&cursor=" : "", cur), vic,
                              NULL, &r),
                         200);
        json_t *it = json_array_get(json_object_get(r.json, "items"), 0);
        if (it && k < 63)
            out[k++] = letter_of(jstr(it, "id"));
        const char *next = jstr(r.json, "next_cursor");
        snprintf(cur, sizeof cur, "%s", next ? next : "");
        http_res_free(&r);
        if (!cur[0])
            break;
    }
    out[k] = '\0';
    return out;
}

START_TEST(filters_narrow_the_history)
{
    ck_assert_str_eq(order(""), "wrcgfo"); /* newest first */
    ck_assert_str_eq(order("state=failed"), "f");
    ck_assert_str_eq(order("state=succeeded,failed,cancelled"), "cgfo");
    ck_assert_str_eq(order("state=queued,running"), "wr");
    /* '*' a wildcard, case ignored, without one anywhere in the name */
    ck_assert_str_eq(order("name=train-*"), "fo");
    ck_assert_str_eq(order("name=TRAIN"), "fo");
    ck_assert_str_eq(order("name=*-b"), "f");
    /* LIKE's own wildcards match only themselves */
    ck_assert_str_eq(order("name=_"), "g");
    ck_assert_str_eq(order("name=x%25"), "g");
    ck_assert_str_eq(order("name=%25"), "g");
    ck_assert_str_eq(order("exit_code=3"), "f");
    ck_assert_str_eq(order("exit_code=0"), "go");
    ck_assert_str_eq(order("gpu_type=a100"), "wcg");
    ck_assert_str_eq(order("gpu_type=t4"), "");
    ck_assert_str_eq(order("cluster=local"), "rgfo");
    ck_assert_str_eq(order("cluster=nowhere"), "");
    ck_assert_str_eq(order("user=bob"), "wc");
    ck_assert_str_eq(order("project=beta"), "f");
    ck_assert_str_eq(order("user=ann&project=alpha&state=succeeded"), "go");
    /* windows: from inclusive, to exclusive */
    ck_assert_str_eq(order("submitted_from=2026-01-02T00:00:00Z&submitted_to=2026-01-04T00:00:00Z"),
                     "gf");
    ck_assert_str_eq(order("submitted_to=2026-01-02T00:00:00Z"), "o");
    ck_assert_str_eq(order("started_from=2026-01-02T00:00:00Z"), "rgf");
    ck_assert_str_eq(
        order("started_from=2026-01-01T00:10:00.000001Z&started_to=2026-01-04T00:00:00Z"), "gf");
    ck_assert_str_eq(order("ended_from=2026-01-02T00:00:00Z&ended_to=2026-01-05T00:00:00Z"), "cgf");
    ck_assert_str_eq(order("ended_to=2026-01-01T01:10:00Z"), "");
    ck_assert_str_eq(order("ended_to=2026-01-01T01:10:00.5Z"), "o");
}
END_TEST

START_TEST(rows_carry_wait_and_run_times)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", LIST "sort=submitted&order=asc", vic, NULL, &r), 200);
    json_t *items = json_object_get(r.json, "items");
    ck_assert_int_eq(json_array_size(items), NJOBS);
    const long long wait[] = {600, 60, 7200, 1800, 300};
    const long long run[] = {3600, 1800, 600, -1};
    for (size_t k = 0; k < 5; k++)
        ck_assert_int_eq(jint(json_array_get(items, k), "wait_seconds"), wait[k]);
    for (size_t k = 0; k < 4; k++) {
        json_t *v = json_object_get(json_array_get(items, k), "run_seconds");
        if (run[k] < 0)
            ck_assert(json_is_null(v));
        else
            ck_assert_int_eq(json_integer_value(v), run[k]);
    }
    /* still running: counted until now; still queued: waiting since January */
    ck_assert_int_gt(jint(json_array_get(items, J_RUN), "run_seconds"), 300 * 86400);
    ck_assert_int_gt(jint(json_array_get(items, J_WAIT), "wait_seconds"), 300 * 86400);
    ck_assert(json_is_null(json_object_get(json_array_get(items, J_WAIT), "run_seconds")));
    http_res_free(&r);
    /* one job's answer carries them too */
    json_t *j = jobs_get(ann, "hist", ids[J_FAIL]);
    ck_assert_int_eq(jint(j, "wait_seconds"), 60);
    ck_assert_int_eq(jint(j, "run_seconds"), 1800);
    json_decref(j);
}
END_TEST

START_TEST(every_sort_both_ways_with_the_unknown_last)
{
    static const struct {
        const char *q, *want;
    } cases[] = {
        {"sort=submitted&order=asc", "ofgcrw"},
        {"sort=submitted&order=desc", "wrcgfo"},
        {"sort=started&order=asc", "ofgr"}, /* + c, w: never started */
        {"sort=started", "rgfo"},
        {"sort=ended&order=asc", "ofgc"}, /* + r, w: not ended */
        {"sort=ended&order=desc", "cgfo"},
        {"sort=wait&order=asc", "froc"}, /* g (7200 s) then w (since January) */
        {"sort=wait", "wgcorf"},
        {"sort=runtime&order=asc", "gfor"},
        {"sort=runtime", "rofg"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = order(cases[i].q);
        ck_assert_msg(strncmp(got, cases[i].want, strlen(cases[i].want)) == 0 &&
                          strlen(got) == NJOBS,
                      "%s: %s, wanted %s first", cases[i].q, got, cases[i].want);
        /* pages of one: the same jobs in the same order, none twice */
        ck_assert_str_eq(walk(cases[i].q), got);
    }
    ck_assert_str_eq(order("sort=wait&order=asc"), "frocgw");
}
END_TEST

START_TEST(csv_exports_the_same_page)
{
    struct http_res r;
    const char *hdr[] = {"Accept: text/csv", NULL};
    ck_assert_int_eq(
        http_do(&harness_srv, "GET", LIST "sort=submitted&order=asc&limit=2", vic, NULL, hdr, &r),
        200);
    char *ct = http_header(&r, "Content-Type");
    ck_assert_ptr_nonnull(ct);
    ck_assert_ptr_nonnull(strstr(ct, "text/csv"));
    free(ct);
    ck_assert_ptr_nonnull(strstr(r.body, "id,name,state,reason,project,user,cluster,gpu_type,"));
    ck_assert_ptr_nonnull(strstr(r.body, fmt("%s,train-a,succeeded,", ids[J_OK])));
    ck_assert_ptr_nonnull(strstr(r.body, ",2026-01-01T00:00:00Z,2026-01-01T00:10:00Z,"
                                         "2026-01-01T01:10:00Z,600,3600,0\r\n"));
    ck_assert_ptr_nonnull(strstr(r.body, ",1800,3\r\n"));
    ck_assert_ptr_null(strstr(r.body, "eval_x"));
    char *next = http_header(&r, "X-Next-Cursor");
    ck_assert_ptr_nonnull(next);
    http_res_free(&r);
    /* the cursor of a CSV page leads on, as JSON or as CSV */
    ck_assert_int_eq(
        reqj("GET", fmt(LIST "sort=submitted&order=asc&limit=2&cursor=%s", next), vic, NULL, &r),
        200);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r.json, "items"), 0), "id"), ids[J_GPU]);
    http_res_free(&r);
    free(next);
    /* the last page has no next */
    ck_assert_int_eq(
        http_do(&harness_srv, "GET", LIST "format=csv&state=failed", vic, NULL, NULL, &r), 200);
    ck_assert_ptr_null(http_header(&r, "X-Next-Cursor"));
    ck_assert_ptr_nonnull(strstr(r.body, "Train-B,failed,exit code 3,"));
    http_res_free(&r);
}
END_TEST

START_TEST(bad_queries_are_400s)
{
    static const struct {
        const char *q, *code, *field;
    } cases[] = {
        {"state=bogus", "validation.one_of", "state"},
        {"state=queued,,bogus", "validation.one_of", "state"},
        {"state=queued,running,queued,running,queued,running,queued,running,queued",
         "validation.one_of", "state"},
        {"sort=size", "validation.one_of", "sort"},
        {"order=up", "validation.one_of", "order"},
        {"format=xml", "validation.one_of", "format"},
        {"exit_code=abc", "validation.type_integer", "exit_code"},
        {"exit_code=99999999999", "validation.type_integer", "exit_code"},
        {"exit_code=", "validation.type_integer", "exit_code"},
        {"gpu_type=A100!", "validation.gpu_type", "gpu_type"},
        {"cluster=..%2F", "validation.cluster", "cluster"},
        {"name=a%0Ab", "validation.printable", "name"},
        {"submitted_from=yesterday", "validation.time", "submitted_from"},
        {"ended_to=2026-13-01T00:00:00Z", "validation.time", "ended_to"},
        {"started_from=2026-02-01T00:00:00Z&started_to=2026-01-01T00:00:00Z",
         "validation.after_from", "started_to"},
        {"submitted_from=2026-02-01T00:00:00Z&submitted_to=2026-02-01T00:00:00Z",
         "validation.after_from", "submitted_to"},
        {"array=1", "validation.unknown_parameter", "array"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct http_res r;
        long st = reqj("GET", fmt(LIST "%s", cases[i].q), vic, NULL, &r);
        ck_assert_msg(st == 400, "%s answered %ld", cases[i].q, st);
        expect_problem(&r, cases[i].code, "field", cases[i].field);
        http_res_free(&r);
    }
    /* a name of 201 bytes */
    char name[202];
    memset(name, 'a', 201);
    name[201] = '\0';
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt(LIST "name=%s", name), vic, NULL, &r), 400);
    expect_problem(&r, "validation.bytes_max", "field", "name");
    http_res_free(&r);
    /* a cursor of one order is no cursor of another */
    ck_assert_int_eq(reqj("GET", LIST "limit=1", vic, NULL, &r), 200);
    char *cur = strdup(jstr(r.json, "next_cursor"));
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", fmt(LIST "limit=1&sort=runtime&cursor=%s", cur), vic, NULL, &r),
                     400);
    expect_problem(&r, "validation.cursor", NULL, NULL);
    http_res_free(&r);
    free(cur);
}
END_TEST

START_TEST(another_tenant_sees_none_of_it)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/other/jobs?name=*&sort=runtime", oth, NULL, &r),
                     200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    http_res_free(&r);
    ck_assert_int_eq(req("GET", LIST "state=failed", oth, NULL), 404);
}
END_TEST

static Suite *history_suite(void)
{
    Suite *s = suite_create("job_history");
    TCase *tc = tcase_create("history");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, filters_narrow_the_history);
    tcase_add_test(tc, rows_carry_wait_and_run_times);
    tcase_add_test(tc, every_sort_both_ways_with_the_unknown_last);
    tcase_add_test(tc, csv_exports_the_same_page);
    tcase_add_test(tc, bad_queries_are_400s);
    tcase_add_test(tc, another_tenant_sees_none_of_it);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    harness_require_pg();
    return suite_run(history_suite());
}
