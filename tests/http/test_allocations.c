/*
 * test_allocations.c - allocation requests end to end: who may ask (a
 * tenant admin, the project's PI; not another member, a viewer or another
 * tenant), every validation limit, approve as asked and with changes (the
 * project's quota written), reject, the needs_info thread, dual approval
 * above AIDC_ALLOCATION_DUAL_APPROVAL_GPU_HOURS, the usage a read shows,
 * admission holding a project to its allocation (allocation:gpu_hours, and
 * allocation:expired once its period has passed: periods are moved into the
 * past as the database owner), and the finance report as CSV.
 *
 * One server for all the tests; each works on a project of its own.
 */
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *tad, *pia, *mem, *vic, *oth, *pa2, *fin;

#define ADM  harness_srv.admin_token
#define BASE "/api/v1/tenants/lab/allocation-requests"

static const char *const env[] = {"AIDC_SYNC_INTERVAL_MS=100", "AIDC_ADMISSION_INTERVAL_MS=200",
                                  "AIDC_ALLOCATION_DUAL_APPROVAL_GPU_HOURS=1000",
                                  "AIDC_ALLOCATION_NOTICE_DAYS=14", NULL};

static void setup(void)
{
    harness_setup("allocations", env);
    jobs_local_cluster("{\"a100\":4}");
    make_tenant("lab");
    jobs_tenant_quota("lab", "{\"gpu:a100\":{\"guaranteed\":2,\"limit\":4}}");
    tad = make_member_login("lab", "tad", "tenant_admin");
    pia = make_member_login("lab", "pia", "member");
    mem = make_member_login("lab", "mem", "member");
    vic = make_member_login("lab", "vic", "viewer");
    make_tenant("other");
    oth = make_member_login("other", "oth", "tenant_admin");
    make_user("pa2", "pa2-password-1", "[\"platform_admin\"]");
    pa2 = login("pa2", "pa2-password-1");
    make_user("fin", "fin-password-1", "[\"finance\"]");
    fin = login("fin", "fin-password-1");
    ck_assert_ptr_nonnull(pa2);
    ck_assert_ptr_nonnull(fin);
}

static void teardown(void)
{
    char **all[] = {&tad, &pia, &mem, &vic, &oth, &pa2, &fin};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
    jobs_stop_shims(10);
    harness_teardown();
}

/* today + offset days, UTC, as YYYY-MM-DD (rotating static buffers, like fmt) */
static const char *day(int offset)
{
    static char buf[8][11];
    static int k;
    time_t t = time(NULL) + (time_t)offset * 86400;
    struct tm tm;
    gmtime_r(&t, &tm);
    char *b = buf[k++ % 8];
    strftime(b, 11, "%Y-%m-%d", &tm);
    return b;
}

/* A project of lab with pia as its PI. */
static void pi_project(const char *slug)
{
    make_project("lab", slug);
    jobs_admin_ok("PATCH", fmt("/api/v1/tenants/lab/projects/%s", slug), "{\"pi\":\"pia\"}", 200);
}

/* A request body for project over [start, end] asking for gpu_hours. */
static const char *body(const char *project, int start, int end, const char *gpu_hours)
{
    return fmt("{\"project\":\"%s\",\"resources\":{\"gpu:a100\":{\"guaranteed\":1,\"limit\":2}},"
               "\"gpu_hours\":%s,\"storage_gib\":100,\"starts_on\":\"%s\",\"ends_on\":\"%s\","
               "\"justification\":\"protein folding\",\"funding_ref\":\"NSF-123\"}",
               project, gpu_hours, day(start), day(end));
}

/* POST body as token: 201 wanted; the new request's id (malloc'd). */
static char *ask(const char *token, const char *b)
{
    struct http_res r;
    long st = reqj("POST", BASE, token, b, &r);
    ck_assert_msg(st == 201, "create answered %ld: %s", st, r.body ? r.body : "");
    ck_assert_str_eq(jstr(r.json, "state"), "pending");
    char *id = strdup(jstr(r.json, "id"));
    http_res_free(&r);
    return id;
}

/* POST /api/v1/allocation-requests/{id}/<how> as token; the status (answer in out, or freed). */
static long act(const char *id, const char *how, const char *token, const char *b,
                struct http_res *out)
{
    struct http_res r;
    long st = reqj("POST", fmt("/api/v1/allocation-requests/%s/%s", id, how), token, b, &r);
    if (out)
        *out = r;
    else
        http_res_free(&r);
    return st;
}

/* The request as tad reads it (new reference). */
static json_t *get(const char *id)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", fmt(BASE "/%s", id), tad, NULL, &r), 200);
    json_t *j = json_incref(r.json);
    http_res_free(&r);
    return j;
}

static void exec_owner(const char *sql, const char *p1)
{
    const char *p[1] = {p1};
    PGresult *r = harness_sql(harness_srv.owner_url, sql, p1 ? 1 : 0, p);
    ck_assert_ptr_nonnull(r);
    PQclear(r);
}

/* The ids of every item of list path, one page of limit=1 at a time (order kept), as
 * comma-separated text (malloc'd); the pages must not repeat an item. */
static char *walk(const char *path, const char *token)
{
    char *out = calloc(1, 4096);
    char cursor[512] = "";
    ck_assert_ptr_nonnull(out);
    for (int n = 0; n < 100; n++) {
        struct http_res r;
        const char *sep = strchr(path, '?') ? "&" : "?";
        ck_assert_int_eq(reqj("GET",
                              cursor[0] ? fmt("%s%slimit=1&cursor=%s", path, sep, qesc(cursor))
                                        : fmt("%s%slimit=1", path, sep),
                              token, NULL, &r),
                         200);
        json_t *it = json_array_get(json_object_get(r.json, "items"), 0);
        if (it) {
            ck_assert_ptr_null(strstr(out, jstr(it, "id")));
            strcat(out, jstr(it, "id"));
            strcat(out, ",");
        }
        const char *next = jstr(r.json, "next_cursor");
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        http_res_free(&r);
        if (!cursor[0])
            return out;
    }
    ck_abort_msg("more than 100 pages");
    return out;
}

/* The ids of list path in one page (comma-separated, malloc'd). */
static char *whole(const char *path, const char *token)
{
    char *out = calloc(1, 4096);
    ck_assert_ptr_nonnull(out);
    json_t *items = get_items(path, token);
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        strcat(out, jstr(it, "id"));
        strcat(out, ",");
    }
    json_decref(items);
    return out;
}

START_TEST(who_may_ask)
{
    pi_project("vision");
    make_project("lab", "nlp"); /* no PI */
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/lab/projects/vision", vic, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "pi"), "pia");
    http_res_free(&r);
    /* the PI must be a member (a viewer is not; nor is a stranger) */
    ck_assert_int_eq(reqj("PATCH", "/api/v1/tenants/lab/projects/nlp", tad, "{\"pi\":\"vic\"}", &r),
                     422);
    expect_problem(&r, "project.pi_not_member", "username", "vic");
    http_res_free(&r);
    ck_assert_int_eq(req("PATCH", "/api/v1/tenants/lab/projects/nlp", tad, "{\"pi\":\"oth\"}"),
                     422);
    ck_assert_int_eq(req("PATCH", "/api/v1/tenants/lab/projects/nlp", pia, "{\"pi\":\"pia\"}"),
                     403);

    free(ask(tad, body("nlp", 0, 30, "10")));    /* a tenant admin, any project */
    free(ask(pia, body("vision", 0, 30, "10"))); /* the PI, its project */
    ck_assert_int_eq(reqj("POST", BASE, pia, body("nlp", 0, 30, "10"), &r), 403);
    expect_problem(&r, "allocation.not_pi", "project", "nlp");
    http_res_free(&r);
    ck_assert_int_eq(req("POST", BASE, mem, body("vision", 0, 30, "10")), 403);
    ck_assert_int_eq(req("POST", BASE, vic, body("vision", 0, 30, "10")), 403);
    ck_assert_int_eq(req("POST", BASE, oth, body("vision", 0, 30, "10")), 404);
    ck_assert_int_eq(req("GET", BASE, oth, NULL), 404);
    ck_assert_int_eq(reqj("POST", BASE, tad, body("ghost", 0, 30, "10"), &r), 422);
    expect_problem(&r, "project.not_found", "project", "ghost");
    http_res_free(&r);
    /* readers of the tenant read them; the review queue is the platform's */
    ck_assert_uint_eq(count_items(BASE "?project=vision", vic), 1);
    ck_assert_uint_eq(count_items(BASE, tad), 2);
    ck_assert_int_eq(req("GET", "/api/v1/allocation-requests", tad, NULL), 403);
    ck_assert_uint_ge(count_items("/api/v1/allocation-requests?state=pending", ADM), 2);
    /* pages: the tenant's newest first, the queue oldest first, each item once */
    free(ask(tad, body("nlp", 0, 40, "11")));
    char *a = walk(BASE, tad), *b = whole(BASE, tad);
    ck_assert_str_eq(a, b);
    ck_assert_uint_eq(strlen(a), 3 * 37);
    free(a);
    free(b);
    a = walk("/api/v1/allocation-requests?state=pending", ADM);
    b = whole("/api/v1/allocation-requests?state=pending", ADM);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    json_t *items = get_items(BASE, tad);
    ck_assert_str_eq(jstr(json_array_get(items, 0), "ends_on"), day(40)); /* the newest */
    json_decref(items);
    /* a PI no more */
    jobs_admin_ok("PATCH", "/api/v1/tenants/lab/projects/nlp", "{\"pi\":null}", 200);
}
END_TEST

/* POST b as tad: 400 with code on field */
static void refused(const char *b, const char *code, const char *field)
{
    struct http_res r;
    long st = reqj("POST", BASE, tad, b, &r);
    ck_assert_msg(st == 400, "%s answered %ld: %s", b, st, r.body ? r.body : "");
    expect_problem(&r, code, "field", field);
    http_res_free(&r);
}

/* The PI's name as a project and its allocation requests answer it, set, moved and cleared (0042).
 */
START_TEST(the_pi_as_answered)
{
    pi_project("cryo");
    make_project("lab", "astro"); /* no PI */
    char *id = ask(pia, body("cryo", 0, 30, "10"));
    struct http_res r;
    const char *cryo = "/api/v1/tenants/lab/projects/cryo";
    ck_assert_int_eq(reqj("PATCH", cryo, tad, "{\"pi\":\"mem\"}", &r), 200);
    ck_assert_str_eq(jstr(r.json, "pi"), "mem");
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", cryo, vic, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "pi"), "mem");
    http_res_free(&r);
    json_t *a = get(id);
    ck_assert_str_eq(jstr(a, "pi"), "mem");
    json_decref(a);
    /* the list: each project its own PI, none for one without */
    json_t *items = get_items("/api/v1/tenants/lab/projects?limit=100", tad);
    size_t i;
    json_t *it;
    int seen = 0;
    json_array_foreach(items, i, it)
    {
        if (strcmp(jstr(it, "slug"), "cryo") == 0) {
            ck_assert_str_eq(jstr(it, "pi"), "mem");
            seen++;
        }
        if (strcmp(jstr(it, "slug"), "astro") == 0) {
            ck_assert(json_is_null(json_object_get(it, "pi")));
            seen++;
        }
    }
    json_decref(items);
    ck_assert_int_eq(seen, 2);
    /* cleared: neither the project nor its request names one */
    ck_assert_int_eq(reqj("PATCH", cryo, tad, "{\"pi\":null}", &r), 200);
    ck_assert(json_is_null(json_object_get(r.json, "pi")));
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", cryo, vic, NULL, &r), 200);
    ck_assert(json_is_null(json_object_get(r.json, "pi")));
    http_res_free(&r);
    a = get(id);
    ck_assert(json_is_null(json_object_get(a, "pi")));
    json_decref(a);
    /* another change leaves the PI as it is */
    ck_assert_int_eq(reqj("PATCH", cryo, tad, "{\"pi\":\"pia\"}", &r), 200);
    http_res_free(&r);
    ck_assert_int_eq(reqj("PATCH", cryo, tad, "{\"name\":\"Cryo-EM\"}", &r), 200);
    ck_assert_str_eq(jstr(r.json, "pi"), "pia");
    http_res_free(&r);
    free(id);
}
END_TEST

START_TEST(every_limit)
{
    make_project("lab", "limits");
    char ok_dates[64]; /* fmt's buffers rotate: keep it */
    snprintf(ok_dates, sizeof ok_dates, "\"starts_on\":\"%s\",\"ends_on\":\"%s\"", day(0), day(30));
    const char *j = "\"justification\":\"x\"";
    refused(fmt("{\"project\":\"limits\",%s}", ok_dates), "validation.required", "justification");
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":1,\"starts_on\":\"%s\",%s}", day(0), j),
            "validation.required", "ends_on");
    refused(fmt("{\"project\":\"limits\",%s,%s}", ok_dates, j), "allocation.nothing_asked",
            "resources");
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":-1,%s,%s}", ok_dates, j), "validation.range",
            "gpu_hours");
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":1e10,%s,%s}", ok_dates, j),
            "validation.range", "gpu_hours");
    refused(fmt("{\"project\":\"limits\",\"storage_gib\":\"9\",%s,%s}", ok_dates, j),
            "validation.range", "storage_gib");
    refused(fmt("{\"project\":\"limits\",\"resources\":{\"gpu:a100\":{\"limit\":1,"
                "\"guaranteed\":2}},%s,%s}",
                ok_dates, j),
            "quota.limit_below_guaranteed", "resources.gpu:a100");
    refused(
        fmt("{\"project\":\"limits\",\"resources\":{\"fish\":{\"limit\":1}},%s,%s}", ok_dates, j),
        "quota.project_resource_unknown", "resources.fish");
    refused(fmt("{\"project\":\"limits\",\"resources\":{\"cpu\":{}},%s,%s}", ok_dates, j),
            "quota.limit_required", "resources.cpu");
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":1,\"starts_on\":\"2026-02-30\","
                "\"ends_on\":\"%s\",%s}",
                day(30), j),
            "allocation.date", "starts_on");
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":1,\"starts_on\":\"%s\","
                "\"ends_on\":\"%s\",%s}",
                day(5), day(5), j),
            "allocation.ends_before_start", "ends_on");
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":1,\"starts_on\":\"%s\","
                "\"ends_on\":\"%s\",%s}",
                day(0), day(1096), j),
            "allocation.period_too_long", "ends_on");
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":1,\"starts_on\":\"%s\","
                "\"ends_on\":\"%s\",%s}",
                day(-30), day(-1), j),
            "allocation.ends_in_past", "ends_on");
    char *long_text = malloc(8002);
    memset(long_text, 'a', 8001);
    long_text[8001] = '\0';
    char *big = malloc(8200); /* more than fmt's buffers hold */
    snprintf(big, 8200, "{\"project\":\"limits\",\"gpu_hours\":1,%s,\"justification\":\"%s\"}",
             ok_dates, long_text);
    refused(big, "validation.length", "justification");
    free(big);
    long_text[201] = '\0';
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":1,%s,%s,\"funding_ref\":\"%s\"}", ok_dates,
                j, long_text),
            "validation.length", "funding_ref");
    free(long_text);
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":1,%s,%s,\"colour\":1}", ok_dates, j),
            "validation.unknown_field", "colour");
    refused(fmt("{\"project\":\"limits\",\"gpu_hours\":1,%s,%s,\"renews\":\"x\"}", ok_dates, j),
            "validation.uuid", "renews");
    /* renewing another project's request */
    make_project("lab", "elsewhere");
    char *other = ask(tad, body("elsewhere", 0, 30, "1"));
    refused(
        fmt("{\"project\":\"limits\",\"gpu_hours\":1,%s,%s,\"renews\":\"%s\"}", ok_dates, j, other),
        "allocation.renews_other", "renews");
    /* the longest period and text that are allowed */
    free(ask(tad, fmt("{\"project\":\"limits\",\"gpu_hours\":0,\"starts_on\":\"%s\","
                      "\"ends_on\":\"%s\",%s}",
                      day(0), day(1095), j)));
    free(other);
}
END_TEST

START_TEST(approve_with_changes_writes_the_quota)
{
    pi_project("chem");
    char *id = ask(pia, body("chem", -1, 60, "500"));
    struct http_res r;
    ck_assert_int_eq(act(id, "approve", pia, "{}", NULL), 403); /* platform admins decide */
    ck_assert_int_eq(act(id, "approve", ADM,
                         "{\"resources\":{\"gpu:a100\":{\"limit\":1}},\"gpu_hours\":300}", &r),
                     200);
    ck_assert_str_eq(jstr(r.json, "state"), "approved");
    json_t *appr = json_object_get(r.json, "approved");
    ck_assert_int_eq((int)json_number_value(json_object_get(appr, "gpu_hours")), 300);
    ck_assert_int_eq((int)json_number_value(json_object_get(r.json, "gpu_hours")), 500); /* asked */
    ck_assert_int_eq((int)json_number_value(json_object_get(appr, "storage_gib")), 100);
    ck_assert(json_is_null(json_object_get(r.json, "expires_in_days"))); /* 60 days left */
    http_res_free(&r);
    /* decided: no second decision */
    ck_assert_int_eq(act(id, "reject", ADM, "{\"reason\":\"no\"}", &r), 409);
    expect_problem(&r, "allocation.decided", "state", "approved");
    http_res_free(&r);
    /* the project's quota is the approved one */
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/lab/projects/chem/quota", tad, NULL, &r), 200);
    json_t *res = json_object_get(r.json, "resources");
    ck_assert_int_eq(
        (int)json_number_value(json_object_get(json_object_get(res, "gpu:a100"), "limit")), 1);
    ck_assert_int_eq(
        (int)json_number_value(json_object_get(json_object_get(res, "storage_gib"), "limit")), 100);
    http_res_free(&r);
    free(id);
}
END_TEST

START_TEST(reject_and_the_needs_info_thread)
{
    pi_project("bio");
    char *id = ask(pia, body("bio", 0, 30, "50"));
    struct http_res r;
    /* only platform admins ask for information; strangers do not comment */
    ck_assert_int_eq(act(id, "comments", pia, "{\"text\":\"hi\",\"needs_info\":true}", &r), 403);
    expect_problem(&r, "allocation.needs_info_admin", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(act(id, "comments", mem, "{\"text\":\"me too\"}", &r), 403);
    expect_problem(&r, "allocation.not_commenter", NULL, NULL);
    http_res_free(&r);
    ck_assert_int_eq(act(id, "comments", oth, "{\"text\":\"hi\"}", NULL), 404);
    ck_assert_int_eq(
        act(id, "comments", ADM, "{\"text\":\"which grant?\",\"needs_info\":true}", &r), 201);
    ck_assert_str_eq(jstr(r.json, "state"), "needs_info");
    http_res_free(&r);
    ck_assert_uint_ge(count_items("/api/v1/allocation-requests?state=needs_info", ADM), 1);
    /* the requester's answer puts it back in the queue */
    ck_assert_int_eq(act(id, "comments", pia, "{\"text\":\"NSF-123\"}", &r), 201);
    ck_assert_str_eq(jstr(r.json, "state"), "pending");
    json_t *c = json_object_get(r.json, "comments");
    ck_assert_uint_eq(json_array_size(c), 2);
    ck_assert_str_eq(jstr(json_array_get(c, 0), "kind"), "needs_info");
    ck_assert_str_eq(jstr(json_array_get(c, 0), "author"), "admin");
    ck_assert_str_eq(jstr(json_array_get(c, 1), "text"), "NSF-123");
    http_res_free(&r);
    ck_assert_int_eq(act(id, "comments", tad, "{\"text\":\"seconded\"}", NULL), 201);
    ck_assert_int_eq(act(id, "reject", ADM, "{}", &r), 400);
    expect_problem(&r, "validation.required", "field", "reason");
    http_res_free(&r);
    ck_assert_int_eq(act(id, "reject", ADM, "{\"reason\":\"out of budget\"}", &r), 200);
    ck_assert_str_eq(jstr(r.json, "state"), "rejected");
    ck_assert_str_eq(jstr(r.json, "reason"), "out of budget");
    ck_assert_str_eq(jstr(r.json, "decided_by"), "admin");
    http_res_free(&r);
    ck_assert_int_eq(act(id, "approve", ADM, "{}", &r), 409);
    expect_problem(&r, "allocation.decided", "state", "rejected");
    http_res_free(&r);
    ck_assert_int_eq(act("00000000-0000-4000-8000-000000000000", "approve", ADM, "{}", &r), 404);
    expect_problem(&r, "allocation.not_found", "id", "00000000-0000-4000-8000-000000000000");
    http_res_free(&r);
    free(id);
}
END_TEST

START_TEST(dual_approval_above_the_threshold)
{
    pi_project("big");
    char *id = ask(pia, body("big", 0, 365, "5000"));
    struct http_res r;
    ck_assert_int_eq(act(id, "approve", ADM, "{}", &r), 202);
    const char *aid = jstr(json_object_get(r.json, "approval"), "id");
    ck_assert_ptr_nonnull(aid);
    char *approval = strdup(aid);
    http_res_free(&r);
    json_t *j = get(id);
    ck_assert_str_eq(jstr(j, "state"), "pending"); /* nothing decided yet */
    json_decref(j);
    ck_assert_int_eq(req("POST", fmt("/api/v1/approvals/%s/approve", approval), pa2, NULL), 200);
    j = get(id);
    ck_assert_str_eq(jstr(j, "state"), "approved");
    ck_assert_str_eq(jstr(j, "decided_by"), "pa2");
    json_decref(j);
    /* with changes below the threshold: one admin is enough */
    char *id2 = ask(pia, body("big", 0, 365, "5000"));
    ck_assert_int_eq(act(id2, "approve", ADM, "{\"gpu_hours\":900}", NULL), 200);
    free(approval);
    free(id);
    free(id2);
}
END_TEST

/* The reason of job id of tenant lab once admission has looked at it (malloc'd). */
static char *reason(const char *id)
{
    json_t *j = jobs_wait_seen(tad, "lab", id, 10);
    char *r = strdup(jstr(j, "reason") ? jstr(j, "reason") : "");
    json_decref(j);
    return r;
}

START_TEST(admission_holds_a_project_to_its_allocation)
{
    pi_project("gpuh");
    char *id = ask(pia, body("gpuh", -10, 30, "1"));
    ck_assert_int_eq(act(id, "approve", ADM, "{}", NULL), 200);
    /* two GPU-hours used within the period (metered intervals) */
    exec_owner("INSERT INTO usage_intervals (run_id, job_id, tenant_id, project_id, username,"
               " gpu_type, gpus, cpus, memory_gib, started_at, ended_at, period)"
               " SELECT 1, gen_random_uuid(), p.tenant_id, p.id, 'pia', 'a100', 1, 1, 1, s,"
               "  s + interval '1 hour', (date_trunc('month', s, 'UTC') AT TIME ZONE 'UTC')::date"
               " FROM projects p, (SELECT date_trunc('day', now() - interval '5 days', 'UTC')"
               "   + h * interval '1 hour' AS s FROM generate_series(10, 11) h) x"
               " WHERE p.slug = $1",
               "gpuh");
    json_t *j = get(id);
    ck_assert_double_eq_tol(
        json_number_value(json_object_get(json_object_get(j, "usage"), "gpu_hours_used")), 2, 1e-6);
    json_decref(j);
    char *job = jobs_submit(pia, "lab",
                            "{\"project\":\"gpuh\",\"name\":\"g\",\"gpus\":1,"
                            "\"gpu_type\":\"a100\",\"command\":[\"true\"]}");
    char *why = reason(job);
    ck_assert_str_eq(why, "allocation:gpu_hours");
    free(why);
    ck_assert_int_eq(req("POST", fmt("/api/v1/tenants/lab/jobs/%s/cancel", job), tad, NULL), 202);
    free(job);

    /* a period that has passed: the allocation reads expired, jobs wait */
    pi_project("old");
    char *old = ask(pia, body("old", -10, 30, "100"));
    ck_assert_int_eq(act(old, "approve", ADM, "{}", NULL), 200);
    exec_owner("UPDATE allocation_requests SET starts_on = current_date - 60,"
               " ends_on = current_date - 2 WHERE id = $1::uuid",
               old);
    j = get(old);
    ck_assert_str_eq(jstr(j, "state"), "expired");
    json_decref(j);
    ck_assert_uint_ge(count_items(BASE "?state=expired&project=old", tad), 1);
    job = jobs_submit(pia, "lab",
                      "{\"project\":\"old\",\"name\":\"o\",\"gpus\":1,"
                      "\"gpu_type\":\"a100\",\"command\":[\"true\"]}");
    why = reason(job);
    ck_assert_str_eq(why, "allocation:expired");
    free(why);
    /* the renewal, copied from the last one, lets it run */
    char *renewal = ask(pia, fmt("{\"project\":\"old\",\"gpu_hours\":100,\"starts_on\":\"%s\","
                                 "\"ends_on\":\"%s\",\"justification\":\"more\","
                                 "\"renews\":\"%s\"}",
                                 day(0), day(10), old));
    j = get(renewal);
    ck_assert_str_eq(jstr(j, "renews"), old);
    json_decref(j);
    ck_assert_int_eq(act(renewal, "approve", ADM, "{}", NULL), 200);
    j = get(renewal);
    ck_assert_int_eq(jint(j, "expires_in_days"), 10); /* inside the notice window */
    json_decref(j);
    json_decref(jobs_wait(pia, "lab", job, "succeeded", 30));
    free(job);
    free(renewal);
    free(old);
    free(id);
}
END_TEST

START_TEST(the_report_for_finance)
{
    pi_project("grant");
    char *id = ask(pia, body("grant", 0, 90, "250"));
    ck_assert_int_eq(act(id, "approve", ADM, "{}", NULL), 200);
    char *pending = ask(pia, body("grant", 0, 90, "7")); /* not approved: not reported */
    struct http_res r;
    ck_assert_int_eq(
        reqj("GET",
             fmt("/api/v1/allocation-requests/report?from=%s&to=%s&format=csv", day(0), day(1)),
             fin, NULL, &r),
        200);
    ck_assert_ptr_nonnull(r.body);
    ck_assert_msg(strncmp(r.body,
                          "tenant,project,pi,funding_ref,starts_on,ends_on,gpu_hours,"
                          "gpu_hours_used,storage_gib,state,request\r\n",
                          96) == 0,
                  "%s", r.body);
    const char *row =
        fmt("lab,grant,pia,NSF-123,%s,%s,250,0,100,approved,%s\r\n", day(0), day(90), id);
    ck_assert_msg(strstr(r.body, row) != NULL, "no %s in %s", row, r.body);
    ck_assert_ptr_null(strstr(r.body, pending));
    http_res_free(&r);
    /* a window before it: not there */
    ck_assert_int_eq(
        reqj("GET", fmt("/api/v1/allocation-requests/report?to=%s", day(-1)), fin, NULL, &r), 200);
    ck_assert_ptr_null(strstr(r.body, id));
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/allocation-requests/report?from=2026-13-01", fin, NULL),
                     400);
    ck_assert_int_eq(req("GET",
                         fmt("/api/v1/allocation-requests/report?from=%s&to=%s", day(1), day(0)),
                         fin, NULL),
                     400);
    ck_assert_int_eq(req("GET", "/api/v1/allocation-requests/report", tad, NULL), 403);
    free(pending);
    free(id);
}
END_TEST

/* One number from SQL run as the owner (p1: its parameter). */
static long owner_count(const char *sql, const char *p1)
{
    const char *p[1] = {p1};
    long n = harness_sql_long(harness_srv.owner_url, sql, 1, p);
    ck_assert_int_ge(n, 0);
    return n;
}

/* The janitor records allocation.expiring once, when it runs (at start, then every 10 min). */
START_TEST(the_janitor_gives_notice_once)
{
    pi_project("soon");
    char *id = ask(pia, body("soon", -1, 5, "10"));
    ck_assert_int_eq(act(id, "approve", ADM, "{}", NULL), 200);
    ck_assert_int_eq(harness_server_stop(&harness_srv), 0);
    ck_assert_msg(jobs_restart_server(env) == 0, "aidcd did not start again, see %s",
                  harness_srv.log_path);
    const char *events = "SELECT count(*) FROM audit_log WHERE action = 'allocation.expiring'"
                         " AND resource_id = $1";
    double until = jobs_now() + 10;
    while (owner_count(events, id) == 0 && jobs_now() < until)
        jobs_nap_ms(100);
    ck_assert_int_eq(owner_count(events, id), 1);
    ck_assert_int_eq(owner_count("SELECT count(*) FROM allocation_requests WHERE id = $1::uuid"
                                 " AND expiry_noticed_at IS NOT NULL",
                                 id),
                     1);
    json_t *j = get(id);
    ck_assert_int_eq(jint(j, "expires_in_days"), 5);
    json_decref(j);
    free(id);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("allocations");
    TCase *tc = tcase_create("allocations");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, who_may_ask);
    tcase_add_test(tc, the_pi_as_answered);
    tcase_add_test(tc, every_limit);
    tcase_add_test(tc, approve_with_changes_writes_the_quota);
    tcase_add_test(tc, reject_and_the_needs_info_thread);
    tcase_add_test(tc, dual_approval_above_the_threshold);
    tcase_add_test(tc, admission_holds_a_project_to_its_allocation);
    tcase_add_test(tc, the_report_for_finance);
    tcase_add_test(tc, the_janitor_gives_notice_once);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s); /* the_janitor_gives_notice_once restarts aidcd */
}
