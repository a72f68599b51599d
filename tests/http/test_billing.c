/*
 * test_billing.c - usage reports, prices and invoices through the API of a
 * real aidcd, over runs with known backend times (written as the database
 * owner, as the syncer would have, and metered by the server's own worker):
 *
 * - usage grouped by project, user, day, week, month and tenant, clipped to
 *   from/to, traced to its jobs and intervals; utilization per hour;
 * - prices need a second person; a mid-month price change rates each
 *   interval at the price of its time; a tenant's own price wins;
 * - invoices: lines, subtotals and total to the cent, a preemption credit,
 *   finalize (then immutable), a late interval as next month's adjustment,
 *   a draft that no longer matches the usage refused, missing prices named;
 * - who may read what: finance, tenant admin, member, another tenant; a member's pages of
 *   usage by job hold its own jobs, never spent on others';
 * - an invoice without usage still names its currency;
 * - refusals carry their catalog code and the params their text is made of;
 * - the monthly GPU-hour budget agrees with the report.
 */
#include "tests/support/audittest.h"
#include "tests/support/client.h"
#include "tests/support/harness.h"
#include "tests/support/jobs.h"
#include "tests/support/suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PW "billing-password-1"
#define NOV "from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z"

static char *fin, *adm2, *pa, *pm, *ca;

static void must(long got, long want, const char *what)
{
    if (got != want) {
        fprintf(stderr, "%s: %ld, expected %ld\n", what, got, want);
        audittest_setup_fail(what);
    }
}

/* A finished job with one closed run, as the syncer records one; its id is id, or a random one. */
static void run_as(const char *id, const char *tenant, const char *project, const char *user,
                   int gpus, const char *gpu_type, const char *start, const char *end,
                   const char *end_reason, const char *checkpoint)
{
    char g[8];
    snprintf(g, sizeof g, "%d", gpus);
    const char *p[10] = {tenant, project,    user,       g,  gpus ? gpu_type : NULL,
                         start,  end,        end_reason, checkpoint, id};
    PGresult *r = harness_sql(
        harness_srv.owner_url,
        "WITH j AS (INSERT INTO jobs (id, tenant_id, project_id, user_id, username, name, state,"
        "   gpus, gpu_type, cpus, memory_gib, command, started_at, finished_at)"
        "  SELECT coalesce($10::uuid, gen_random_uuid()), t.id, p.id, u.id, u.username, 'j',"
        "         'succeeded', $4::int, $5, 2, 8, '[\"x\"]', $6::timestamptz, $7::timestamptz"
        "    FROM tenants t JOIN projects p ON p.tenant_id = t.id, users u"
        "   WHERE t.slug = $1 AND p.slug = $2 AND u.username = $3 RETURNING *)"
        " INSERT INTO job_runs (job_id, tenant_id, project_id, gpus, gpu_type, cpus, memory_gib,"
        "   started_at, ended_at, end_reason, checkpoint_at, cluster_id)"
        " SELECT id, tenant_id, project_id, gpus, gpu_type, cpus, memory_gib, started_at,"
        "        finished_at, $8, $9::timestamptz, (SELECT id FROM clusters LIMIT 1) FROM j"
        " RETURNING 1",
        10, p);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(PQntuples(r), 1);
    PQclear(r);
}

static void run(const char *tenant, const char *project, const char *user, int gpus,
                const char *gpu_type, const char *start, const char *end, const char *end_reason,
                const char *checkpoint)
{
    run_as(NULL, tenant, project, user, gpus, gpu_type, start, end, end_reason, checkpoint);
}

/* Wake the metering worker and wait until every closed run is metered to its end. */
static void metered(void)
{
    ck_assert_msg(audittest_wait_metered(30), "the metering worker did not catch up");
}

/* POST a price as finance and have the second admin approve it; the created price. */
static json_t *price(const char *body)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/prices", fin, body, &r), 202);
    const char *id = jstr(json_object_get(r.json, "approval"), "id");
    ck_assert_ptr_nonnull(id);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", id);
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", path, adm2, NULL, &r), 200);
    json_t *result = json_object_get(r.json, "result");
    ck_assert_int_eq(json_integer_value(json_object_get(result, "status")), 201);
    json_t *out = json_incref(json_object_get(result, "body"));
    http_res_free(&r);
    return out;
}

static void setup(void)
{
    /* a small row limit, so the refusal of a larger report is testable */
    const char *env[] = {"AIDC_USAGE_MAX_ROWS=12", NULL};
    harness_setup("billing", env);
    make_user("fin", PW, "[\"finance\"]");
    make_user("adm2", PW, "[\"platform_admin\"]");
    make_user("pa", PW, NULL);
    make_user("pm", PW, NULL);
    make_user("ca", PW, NULL);
    make_tenant("physics");
    make_tenant("chem");
    make_member("physics", "pa", "tenant_admin");
    make_member("physics", "pm", "member");
    make_member("chem", "ca", "tenant_admin");
    make_project("physics", "vision");
    make_project("physics", "nlp");
    make_project("chem", "mol");
    /* a display name that CSV must quote and defuse: comma, quote, newline, formula, UTF-8 */
    must(req("PATCH", "/api/v1/tenants/physics/projects/vision", harness_srv.admin_token,
             "{\"name\":\"=视觉, \\\"组\\\"\\n二\"}"),
         200, "renaming a project");
    jobs_local_cluster("{\"a100\": 8}");
    fin = login("fin", PW);
    adm2 = login("adm2", PW);
    pa = login("pa", PW);
    pm = login("pm", PW);
    ca = login("ca", PW);
    if (!fin || !adm2 || !pa || !pm || !ca)
        audittest_setup_fail("logins");
    /* November: 5 GPU-h of vision (pm), 1 GPU-h of nlp across midnight (pa) */
    run("physics", "vision", "pm", 2, "a100", "2026-11-03T10:00:00Z", "2026-11-03T12:30:00Z",
        NULL, NULL);
    run("physics", "nlp", "pa", 1, "a100", "2026-11-04T23:30:00Z", "2026-11-05T00:30:00Z", NULL,
        NULL);
    /* a preempted run: 2 GPUs 14:00-16:00, checkpoint at 15:30 -> 1 GPU-h credited */
    run("physics", "nlp", "pa", 2, "a100", "2026-11-20T14:00:00Z", "2026-11-20T16:00:00Z",
        "preempted", "2026-11-20T15:30:00Z");
    run("chem", "mol", "ca", 4, "a100", "2026-11-10T00:00:00Z", "2026-11-10T01:00:00Z", NULL, NULL);
    metered();
}

static void teardown(void)
{
    free(fin);
    free(adm2);
    free(pa);
    free(pm);
    free(ca);
    harness_teardown();
}

/* The quantity of the row of rows whose key has k=v (and k2=v2 if given) and resource res. */
static double row_q(const json_t *rows, const char *k, const char *v, const char *k2,
                    const char *v2, const char *res)
{
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const json_t *key = json_object_get(row, "key");
        if (audittest_str_is(jstr(key, k), v) && (!k2 || audittest_str_is(jstr(key, k2), v2)) &&
            audittest_str_is(jstr(row, "resource"), res))
            return json_number_value(json_object_get(row, "quantity"));
    }
    return -1;
}

START_TEST(usage_groups_clips_and_refuses_bad_arguments)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/physics/usage?" NOV "&group_by=project", pm,
                          NULL, &r),
                     200);
    json_t *rows = json_object_get(r.json, "rows");
    ck_assert_double_eq_tol(row_q(rows, "project", "vision", NULL, NULL, "gpu:a100"), 5.0, 1e-9);
    ck_assert_double_eq_tol(row_q(rows, "project", "nlp", NULL, NULL, "gpu:a100"), 5.0, 1e-9);
    ck_assert_double_eq_tol(row_q(rows, "project", "vision", NULL, NULL, "cpu"), 5.0, 1e-9);
    ck_assert_double_eq_tol(row_q(rows, "project", "vision", NULL, NULL, "memory_gib"), 20.0,
                            1e-9);
    size_t i;
    json_t *row;
    int named = 0;
    json_array_foreach(rows, i, row)
    {
        if (audittest_str_is(jstr(json_object_get(row, "key"), "project"), "vision")) {
            ck_assert_str_eq(jstr(json_object_get(row, "names"), "project"), "=视觉, \"组\"\n二");
            named++;
        }
    }
    ck_assert_int_eq(named, 3); /* gpu, cpu, memory */
    http_res_free(&r);
    /* across midnight: half on each day; weeks are ISO weeks */
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/physics/usage?" NOV "&group_by=day,project"
                                 "&project=nlp&resource=gpu:a100",
                          pa, NULL, &r),
                     200);
    rows = json_object_get(r.json, "rows");
    ck_assert_double_eq_tol(row_q(rows, "day", "2026-11-04", "project", "nlp", "gpu:a100"), 0.5,
                            1e-9);
    ck_assert_double_eq_tol(row_q(rows, "day", "2026-11-05", "project", "nlp", "gpu:a100"), 0.5,
                            1e-9);
    ck_assert_int_eq(json_array_size(rows), 3); /* and the preempted run's day */
    http_res_free(&r);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/physics/usage?" NOV "&group_by=week,user", pa,
                          NULL, &r),
                     200);
    ck_assert_double_eq_tol(row_q(json_object_get(r.json, "rows"), "week", "2026-W45", "user", "pm",
                                  "gpu:a100"),
                            5.0, 1e-9);
    http_res_free(&r);
    /* clipped to from/to: half an hour of two GPUs */
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/physics/usage?from=2026-11-03T11:00:00Z"
                                 "&to=2026-11-03T11:30:00Z&resource=gpu:a100",
                          pm, NULL, &r),
                     200);
    rows = json_object_get(r.json, "rows");
    ck_assert_int_eq(json_array_size(rows), 1);
    ck_assert_double_eq_tol(json_number_value(json_object_get(json_array_get(rows, 0), "quantity")),
                            1.0, 1e-9);
    http_res_free(&r);
    /* platform-wide, by tenant and month: finance sees both tenants */
    ck_assert_int_eq(reqj("GET", "/api/v1/usage?" NOV "&group_by=tenant,month&resource=gpu:a100",
                          fin, NULL, &r),
                     200);
    rows = json_object_get(r.json, "rows");
    ck_assert_double_eq_tol(row_q(rows, "tenant", "physics", "month", "2026-11", "gpu:a100"), 10.0,
                            1e-9);
    ck_assert_double_eq_tol(row_q(rows, "tenant", "chem", "month", "2026-11", "gpu:a100"), 4.0,
                            1e-9);
    http_res_free(&r);
    /* refusals, each naming its argument */
    const char *bad[] = {
        "/api/v1/tenants/physics/usage?group_by=tenant",
        "/api/v1/tenants/physics/usage?group_by=hour",
        "/api/v1/tenants/physics/usage?from=yesterday",
        "/api/v1/tenants/physics/usage?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z",
        "/api/v1/tenants/physics/usage?from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z",
        "/api/v1/tenants/physics/usage?resource=gpu:A100",
        "/api/v1/tenants/physics/usage?project=Not%20A%20Slug",
        "/api/v1/tenants/physics/usage?format=xml",
        "/api/v1/tenants/physics/usage/jobs?limit=201",
        "/api/v1/tenants/physics/usage/jobs?from=2026-09-01T00:00:00Z&to=2026-11-01T00:00:00Z",
    };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
        ck_assert_msg(req("GET", bad[b], pa, NULL) == 400, "%s was not refused", bad[b]);
    /* ... with the catalog's code, and the field among its params */
    static const char *const coded[][4] = {
        {"/api/v1/tenants/physics/usage?from=yesterday", "validation.time", "field", "from"},
        {"/api/v1/tenants/physics/usage?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z",
         "validation.after_from", "field", "to"},
        {"/api/v1/tenants/physics/usage?from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z",
         "usage.range_too_long", "max", "366"},
        {"/api/v1/tenants/physics/usage?group_by=tenant", "usage.group_by", "field", "group_by"},
        {"/api/v1/usage?group_by=hour", "usage.group_by_platform", "field", "group_by"},
        {"/api/v1/tenants/physics/usage?format=xml", "validation.one_of", "allowed", "json, csv"},
        {"/api/v1/tenants/physics/usage/jobs?limit=201", "validation.limit", "max", "200"},
        {"/api/v1/usage?tenant=nope", "tenant.not_found", "tenant", "nope"},
        {"/api/v1/usage/utilization?cluster=nope", "cluster.not_found", "cluster", "nope"},
    };
    for (size_t b = 0; b < sizeof coded / sizeof coded[0]; b++) {
        /* the tenant's routes as its admin, the platform's as finance */
        reqj("GET", coded[b][0], strncmp(coded[b][0], "/api/v1/tenants/", 16) == 0 ? pa : fin,
             NULL, &r);
        expect_problem(&r, coded[b][1], coded[b][2], coded[b][3]);
        http_res_free(&r);
    }
    ck_assert_int_eq(req("GET", "/api/v1/usage?tenant=nope", fin, NULL), 404);
    /* more rows than AIDC_USAGE_MAX_ROWS (12): refused, not cut short */
    ck_assert_int_eq(reqj("GET", "/api/v1/usage?" NOV "&group_by=tenant,project,day", fin, NULL,
                          &r),
                     422);
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "detail"), "more than 12 rows"));
    expect_problem(&r, "usage.too_many_rows", "max", "12");
    http_res_free(&r);
}
END_TEST

START_TEST(usage_csv_quotes_defuses_and_keeps_numbers)
{
    struct http_res r;
    const char *accept[] = {"Accept: text/csv", NULL};
    ck_assert_int_eq(http_do(&harness_srv, "GET",
                             "/api/v1/tenants/physics/usage?" NOV "&group_by=project"
                             "&resource=gpu:a100",
                             pa, NULL, accept, &r),
                     200);
    char *ct = http_header(&r, "Content-Type");
    ck_assert_ptr_nonnull(strstr(ct, "text/csv"));
    free(ct);
    json_t *rec = audittest_csv_parse(r.body);
    ck_assert_int_eq(json_array_size(rec), 3);
    const json_t *head = json_array_get(rec, 0);
    ck_assert_str_eq(json_string_value(json_array_get(head, 0)), "project");
    ck_assert_str_eq(json_string_value(json_array_get(head, 1)), "project_name");
    ck_assert_str_eq(json_string_value(json_array_get(head, 2)), "resource");
    ck_assert_str_eq(json_string_value(json_array_get(head, 3)), "quantity");
    ck_assert_str_eq(json_string_value(json_array_get(head, 4)), "unit");
    const json_t *vision = json_array_get(rec, 2);
    ck_assert_str_eq(json_string_value(json_array_get(vision, 0)), "vision");
    /* the name survives commas, quotes, a newline and UTF-8; its formula is defused */
    ck_assert_str_eq(json_string_value(json_array_get(vision, 1)), "'=视觉, \"组\"\n二");
    ck_assert_str_eq(json_string_value(json_array_get(vision, 3)), "5.000000");
    json_decref(rec);
    ck_assert_ptr_nonnull(strstr(r.body, "\"'=视觉, \"\"组\"\"\n二\""));
    http_res_free(&r);
    /* ?format=csv does the same without the header */
    ck_assert_int_eq(reqj("GET", "/api/v1/usage?" NOV "&format=csv&group_by=tenant", fin, NULL, &r),
                     200);
    ck_assert_ptr_nonnull(strstr(r.body, "tenant,tenant_name,resource,quantity,unit\r\n"));
    http_res_free(&r);
}
END_TEST

START_TEST(each_row_traces_to_its_jobs_and_intervals)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/physics/usage/jobs?" NOV
                                 "&project=nlp&resource=gpu:a100&limit=1",
                          pa, NULL, &r),
                     200);
    json_t *items = json_object_get(r.json, "items");
    ck_assert_int_eq(json_array_size(items), 1);
    const char *cursor = jstr(r.json, "next_cursor");
    ck_assert_ptr_nonnull(cursor);
    double sum = 0;
    long intervals = 0;
    char next[256];
    snprintf(next, sizeof next, "%s", cursor);
    for (int page = 0; page < 2; page++) {
        const json_t *it = json_array_get(json_object_get(r.json, "items"), 0);
        ck_assert_str_eq(jstr(it, "project"), "nlp");
        const json_t *res = json_array_get(json_object_get(it, "resources"), 0);
        ck_assert_str_eq(jstr(res, "resource"), "gpu:a100");
        sum += json_number_value(json_object_get(res, "quantity"));
        intervals += (long)json_array_size(json_object_get(it, "intervals"));
        http_res_free(&r);
        if (page == 0)
            ck_assert_int_eq(reqj("GET", fmt("/api/v1/tenants/physics/usage/jobs?" NOV
                                             "&project=nlp&resource=gpu:a100&limit=1&cursor=%s",
                                             qesc(next)),
                                  pa, NULL, &r),
                             200);
    }
    ck_assert_double_eq_tol(sum, 5.0, 1e-9); /* the row's quantity */
    ck_assert_int_eq(intervals, 2 + 2);      /* 23:30-00, 00-00:30; 14-15, 15-16 */
    /* another tenant's admin cannot look */
    ck_assert_int_eq(req("GET", "/api/v1/tenants/physics/usage/jobs?" NOV, ca, NULL), 404);
}
END_TEST

START_TEST(a_member_pages_through_its_own_usage_only)
{
    /* October: three jobs of pa sort before pm's one; a page of pm's must not be spent on
     * them (it was: pm's pages came back empty, and a cursor probed jobs it cannot see) */
    static const char *const theirs[] = {"00000000-0000-4000-8000-000000000001",
                                         "00000000-0000-4000-8000-000000000002",
                                         "00000000-0000-4000-8000-000000000003"};
    for (size_t i = 0; i < 3; i++)
        run_as(theirs[i], "physics", "nlp", "pa", 1, "a100", "2026-10-05T10:00:00Z",
               "2026-10-05T11:00:00Z", NULL, NULL);
    const char *mine = "f0000000-0000-4000-8000-000000000001";
    run_as(mine, "physics", "vision", "pm", 1, "a100", "2026-10-06T10:00:00Z",
           "2026-10-06T11:00:00Z", NULL, NULL);
    metered();
#define OCT "/api/v1/tenants/physics/usage/jobs?from=2026-10-01T00:00:00Z&to=2026-11-01T00:00:00Z"
    char cursor[64] = "";
    int seen = 0, pages = 0;
    do {
        struct http_res r;
        ck_assert_int_eq(reqj("GET", fmt(OCT "&limit=1%s%s", cursor[0] ? "&cursor=" : "", qesc(cursor)),
                              pm, NULL, &r),
                         200);
        json_t *items = json_object_get(r.json, "items");
        ck_assert_int_le(json_array_size(items), 1);
        if (json_array_size(items)) {
            const json_t *it = json_array_get(items, 0);
            ck_assert_str_eq(jstr(json_object_get(it, "job"), "id"), mine);
            ck_assert_str_eq(jstr(it, "user"), "pm");
            seen++;
        }
        const char *next = jstr(r.json, "next_cursor");
        snprintf(cursor, sizeof cursor, "%s", next ? next : "");
        http_res_free(&r);
    } while (cursor[0] && ++pages < 10);
    ck_assert_int_eq(seen, 1);
    /* its tenant admin reads all four */
    struct http_res r;
    ck_assert_int_eq(reqj("GET", OCT "&limit=10", pa, NULL, &r), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 4);
    http_res_free(&r);
#undef OCT
}
END_TEST

START_TEST(utilization_compares_allocation_with_capacity_by_hour)
{
    struct http_res r;
    ck_assert_int_eq(reqj("GET", "/api/v1/usage/utilization?gpu_type=a100"
                                 "&from=2026-11-03T00:00:00Z&to=2026-11-04T00:00:00Z",
                          fin, NULL, &r),
                     200);
    json_t *hours = json_object_get(r.json, "hours");
    ck_assert_int_eq(json_array_size(hours), 24);
    const json_t *h10 = json_array_get(hours, 10), *h12 = json_array_get(hours, 12);
    ck_assert_str_eq(jstr(h10, "hour"), "2026-11-03T10:00:00Z");
    ck_assert_double_eq_tol(json_number_value(json_object_get(h10, "allocated_gpu_hours")), 2.0,
                            1e-9);
    ck_assert_double_eq_tol(json_number_value(json_object_get(h10, "capacity_gpu_hours")), 8.0,
                            1e-9);
    ck_assert_double_eq_tol(json_number_value(json_object_get(h10, "utilization")), 0.25, 1e-9);
    ck_assert_double_eq_tol(json_number_value(json_object_get(h12, "allocated_gpu_hours")), 1.0,
                            1e-9);
    json_t *heat = json_object_get(json_object_get(r.json, "heatmap"), "utilization");
    ck_assert_int_eq(json_array_size(heat), 7);
    /* 2026-11-03 is a Tuesday: row 1, hour 10 */
    ck_assert_double_eq_tol(json_number_value(json_array_get(json_array_get(heat, 1), 10)), 0.25,
                            1e-9);
    ck_assert(json_is_null(json_array_get(json_array_get(heat, 0), 10))); /* no Monday here */
    http_res_free(&r);
    ck_assert_int_eq(req("GET", "/api/v1/usage/utilization", pa, NULL), 403);
    ck_assert_int_eq(req("GET", "/api/v1/usage/utilization?cluster=nope", fin, NULL), 404);
    ck_assert_int_eq(req("GET", "/api/v1/usage/utilization?from=2026-01-01T00:00:00Z"
                                "&to=2026-12-01T00:00:00Z",
                         fin, NULL),
                     400);
}
END_TEST

/* The line of inv with project, resource and kind (and unit price if given). */
static const json_t *line(const json_t *inv, const char *project, const char *resource,
                          const char *kind, const char *unit_price)
{
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(inv, "lines"), i, l)
    {
        if (audittest_str_is(jstr(l, "project"), project) &&
            audittest_str_is(jstr(l, "resource"), resource) &&
            audittest_str_is(jstr(l, "kind"), kind) &&
            (!unit_price || audittest_str_is(jstr(l, "unit_price"), unit_price)))
            return l;
    }
    ck_abort_msg("no %s line for %s %s", kind, project, resource);
    return NULL;
}

START_TEST(prices_invoices_credits_finalization_and_late_usage)
{
    /* no price yet: the draft names what is missing */
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"physics\",\"period\":\"2026-11\"}", &r),
                     422);
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "detail"), "gpu:a100"));
    expect_problem(&r, "invoice.no_price", "resources", "cpu, gpu:a100, memory_gib");
    http_res_free(&r);
    /* prices: validated first, then approved by a second person */
    ck_assert_int_eq(req("POST", "/api/v1/prices", fin,
                         "{\"resource\":\"gpu:a100\",\"unit_price\":10,\"currency\":\"CNY\","
                         "\"effective_from\":\"2026-10-01T00:00:00Z\"}"),
                     400);
    ck_assert_int_eq(req("POST", "/api/v1/prices", fin,
                         "{\"resource\":\"gpu:a100\",\"unit_price\":\"10\",\"currency\":\"CNY\","
                         "\"effective_from\":\"2026-10-01T00:30:00Z\"}"),
                     400);
    ck_assert_int_eq(req("POST", "/api/v1/prices", fin,
                         "{\"resource\":\"gpu:a100\",\"unit_price\":\"10\",\"currency\":\"CNY\","
                         "\"effective_from\":\"2026-10-01T00:00:00.5Z\"}"),
                     400);
    ck_assert_int_eq(req("POST", "/api/v1/prices", pa,
                         "{\"resource\":\"gpu:a100\",\"unit_price\":\"1\",\"currency\":\"CNY\","
                         "\"effective_from\":\"2026-10-01T00:00:00Z\"}"),
                     403);
    json_t *p = price("{\"resource\":\"gpu:a100\",\"unit_price\":\"10.00\",\"currency\":\"CNY\","
                      "\"effective_from\":\"2026-10-01T00:00:00Z\"}");
    ck_assert_str_eq(jstr(p, "created_by"), "fin");
    ck_assert_str_eq(jstr(p, "approved_by"), "adm2");
    ck_assert_str_eq(jstr(p, "unit"), "gpu_hour");
    json_decref(p);
    /* from the 5th, 12.00 a GPU-hour; chem has its own 8.00 */
    json_decref(price("{\"resource\":\"gpu:a100\",\"unit_price\":\"12.00\",\"currency\":\"CNY\","
                      "\"effective_from\":\"2026-11-05T00:00:00Z\"}"));
    json_decref(price("{\"resource\":\"gpu:a100\",\"unit_price\":\"8\",\"currency\":\"CNY\","
                      "\"effective_from\":\"2026-10-01T00:00:00Z\",\"tenant\":\"chem\"}"));
    json_decref(price("{\"resource\":\"cpu\",\"unit_price\":\"0.1\",\"currency\":\"CNY\","
                      "\"effective_from\":\"2026-10-01T00:00:00Z\"}"));
    json_decref(price("{\"resource\":\"memory_gib\",\"unit_price\":\"0.015\",\"currency\":\"CNY\","
                      "\"effective_from\":\"2026-10-01T00:00:00Z\"}"));
    /* never edited in place: the same key and time again is a conflict */
    ck_assert_int_eq(reqj("POST", "/api/v1/prices", fin,
                          "{\"resource\":\"cpu\",\"unit_price\":\"0.2\",\"currency\":\"CNY\","
                          "\"effective_from\":\"2026-10-01T00:00:00Z\"}",
                          &r),
                     202);
    const char *aid = jstr(json_object_get(r.json, "approval"), "id");
    struct http_res a;
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/approvals/%s/approve", aid), adm2, NULL, &a), 200);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(a.json, "result"),
                                                        "status")),
                     409);
    ck_assert_str_eq(jstr(json_object_get(json_object_get(a.json, "result"), "body"), "detail"),
                     "a price of cpu from 2026-10-01T00:00:00Z exists already; prices are never "
                     "edited: add one effective later");
    http_res_free(&a);
    http_res_free(&r);
    /* members see the defaults, not chem's own price */
    ck_assert_int_eq(reqj("GET", "/api/v1/prices?limit=100", pm, NULL, &r), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 4);
    http_res_free(&r);

    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"physics\",\"period\":\"2026-11\"}", &r),
                     201);
    json_t *inv = json_incref(r.json);
    http_res_free(&r);
    ck_assert_str_eq(jstr(inv, "state"), "draft");
    /* vision: 5 GPU-h on the 3rd at 10.00; nlp: half an hour on the 4th at 10.00, then half
     * an hour on the 5th and the preempted run's 2 GPUs x 2 h at 12.00 */
    ck_assert_str_eq(jstr(line(inv, "vision", "gpu:a100", "usage", NULL), "amount"), "50.00");
    ck_assert_str_eq(jstr(line(inv, "vision", "gpu:a100", "usage", NULL), "project_name"),
                     "=视觉, \"组\"\n二");
    ck_assert_str_eq(jstr(line(inv, "nlp", "gpu:a100", "usage", "10.00"), "quantity"), "0.500000");
    ck_assert_str_eq(jstr(line(inv, "nlp", "gpu:a100", "usage", "10.00"), "amount"), "5.00");
    ck_assert_str_eq(jstr(line(inv, "nlp", "gpu:a100", "usage", "12.00"), "quantity"), "4.500000");
    ck_assert_str_eq(jstr(line(inv, "nlp", "gpu:a100", "usage", "12.00"), "amount"), "54.00");
    /* credit: 2 GPUs from the 15:30 checkpoint to 16:00 */
    const json_t *credit = line(inv, "nlp", "gpu:a100", "credit", "12.00");
    ck_assert_str_eq(jstr(credit, "quantity"), "-1.000000");
    ck_assert_str_eq(jstr(credit, "amount"), "-12.00");
    /* cpu: 2 cores x 2.5 h x 0.1; memory: 8 GiB x 3 h = 24 GiB-h x 0.015 */
    ck_assert_str_eq(jstr(line(inv, "vision", "cpu", "usage", NULL), "amount"), "0.50");
    ck_assert_str_eq(jstr(line(inv, "nlp", "memory_gib", "usage", NULL), "quantity"), "24.000000");
    ck_assert_str_eq(jstr(line(inv, "nlp", "memory_gib", "usage", NULL), "amount"), "0.36");
    /* subtotals per project, and the total is the sum of the lines */
    ck_assert_int_eq(json_array_size(json_object_get(inv, "subtotals")), 2);
    const json_t *total = json_object_get(inv, "total");
    ck_assert_str_eq(jstr(total, "currency"), "CNY");
    char sum_sql[64];
    snprintf(sum_sql, sizeof sum_sql, "SELECT sum(amount)::text FROM invoice_lines");
    char *sum = audittest_sql_value(harness_srv.owner_url, sum_sql, 0, NULL);
    ck_assert_str_eq(jstr(total, "amount"), sum);
    free(sum);
    const char *id = jstr(inv, "id");
    char path[128];
    snprintf(path, sizeof path, "/api/v1/invoices/%s", id);
    /* who reads it: finance and the tenant's admin; not its member, not chem */
    ck_assert_int_eq(req("GET", path, pa, NULL), 200);
    ck_assert_int_eq(req("GET", path, pm, NULL), 404);
    ck_assert_int_eq(req("GET", path, ca, NULL), 404);
    ck_assert_int_eq(reqj("GET", "/api/v1/invoices?period=2026-11", ca, NULL, &r), 200);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "items")), 0);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", fmt("%s/finalize", path), pa, NULL), 403);
    /* the CSV: a line per line and the total, names quoted and defused */
    ck_assert_int_eq(reqj("GET", fmt("%s?format=csv", path), fin, NULL, &r), 200);
    json_t *rec = audittest_csv_parse(r.body);
    ck_assert_int_eq(json_array_size(rec), json_array_size(json_object_get(inv, "lines")) + 2);
    const json_t *last = json_array_get(rec, json_array_size(rec) - 1);
    ck_assert_str_eq(json_string_value(json_array_get(last, 6)), "total"); /* as its kind */
    ck_assert_str_eq(json_string_value(json_array_get(last, 11)), jstr(total, "amount"));
    ck_assert_ptr_nonnull(strstr(r.body, ",-12.00,CNY\r\n")); /* a credit stays a number */
    json_decref(rec);
    http_res_free(&r);

    /* finalize: then it never changes, not even by the owner role's hand */
    ck_assert_int_eq(reqj("POST", fmt("%s/finalize", path), fin, NULL, &r), 200);
    ck_assert_str_eq(jstr(r.json, "state"), "final");
    http_res_free(&r);
    ck_assert_int_eq(req("POST", fmt("%s/finalize", path), fin, NULL), 409);
    ck_assert_int_eq(req("POST", "/api/v1/invoices", fin,
                         "{\"tenant\":\"physics\",\"period\":\"2026-11\"}"),
                     409);
    ck_assert_ptr_null(harness_sql(harness_srv.owner_url,
                                   "UPDATE invoice_lines SET amount = 0", 0, NULL));
    ck_assert_ptr_null(harness_sql(harness_srv.owner_url,
                                   "INSERT INTO invoice_lines SELECT invoice_id, 99, tenant_id,"
                                   " project_id, project, project_name, resource, kind,"
                                   " original_period, quantity, unit, unit_price, amount"
                                   " FROM invoice_lines LIMIT 1",
                                   0, NULL));
    ck_assert_int_eq(audittest_num(harness_srv.owner_url,
                                   "SELECT count(*) FROM usage_intervals WHERE invoice_id IS NULL"
                                   " AND tenant_id = (SELECT id FROM tenants WHERE slug ="
                                   " 'physics')",
                                   0, NULL),
                     0);

    /* a run of November arrives late: December's invoice carries it as an adjustment */
    run("physics", "vision", "pm", 1, "a100", "2026-11-29T08:00:00Z", "2026-11-29T09:00:00Z", NULL,
        NULL);
    metered();
    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"physics\",\"period\":\"2026-12\"}", &r),
                     201);
    const json_t *adj = line(r.json, "vision", "gpu:a100", "adjustment", NULL);
    ck_assert_str_eq(jstr(adj, "original_period"), "2026-11");
    ck_assert_str_eq(jstr(adj, "amount"), "12.00");
    /* December has not ended: it cannot be final yet */
    struct http_res f;
    ck_assert_int_eq(
        reqj("POST", fmt("/api/v1/invoices/%s/finalize", jstr(r.json, "id")), fin, NULL, &f), 409);
    expect_problem(&f, "invoice.period_not_ended", "period", "2026-12");
    http_res_free(&f);
    http_res_free(&r);
    /* a future month has no draft */
    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"physics\",\"period\":\"2099-01\"}", &r),
                     422);
    expect_problem(&r, "invoice.period_not_started", "period", "2099-01");
    ck_assert_str_eq(jstr(r.json, "detail"),
                     "period 2099-01 has not started; a draft can cover the current month at most");
    http_res_free(&r);
    /* a tenant the body names that does not exist: the body is wrong (422), not the URL */
    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"nope\",\"period\":\"2026-11\"}", &r),
                     422);
    expect_problem(&r, "tenant.not_found", "tenant", "nope");
    http_res_free(&r);
    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"physics\",\"period\":\"2026-11\"}", &r),
                     409);
    expect_problem(&r, "invoice.final", "period", "2026-11");
    http_res_free(&r);
    ck_assert_int_eq(req("POST", "/api/v1/invoices", fin,
                         "{\"tenant\":\"physics\",\"period\":\"2026-13\"}"),
                     400);

    /* chem: its own price; a draft overtaken by usage is refused, then regenerated */
    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"chem\",\"period\":\"2026-11\"}", &r),
                     201);
    ck_assert_str_eq(jstr(line(r.json, "mol", "gpu:a100", "usage", NULL), "amount"), "32.00");
    char chem[64];
    snprintf(chem, sizeof chem, "/api/v1/invoices/%s/finalize", jstr(r.json, "id"));
    http_res_free(&r);
    run("chem", "mol", "ca", 1, "a100", "2026-11-11T00:00:00Z", "2026-11-11T00:30:00Z", NULL, NULL);
    metered();
    ck_assert_int_eq(reqj("POST", chem, fin, NULL, &r), 409);
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "detail"), "generate it again"));
    expect_problem(&r, "invoice.usage_changed", NULL, NULL);
    /* when the draft was made, as the invoice's own generated_at says it */
    const char *made = jstr(json_object_get(r.json, "params"), "generated_at");
    ck_assert_msg(made && strlen(made) == 20 && made[10] == 'T' && made[19] == 'Z', "%s", r.body);
    http_res_free(&r);
    ck_assert_int_eq(req("POST", "/api/v1/invoices", fin,
                         "{\"tenant\":\"chem\",\"period\":\"2026-11\"}"),
                     201);
    ck_assert_int_eq(reqj("POST", chem, fin, NULL, &r), 200);
    ck_assert_str_eq(jstr(line(r.json, "mol", "gpu:a100", "usage", NULL), "amount"), "36.00");
    http_res_free(&r);
    json_decref(inv);

    /* a tenant whose GPUs are priced in USD and the rest in CNY: no invoice, and why */
    make_tenant("bio");
    make_project("bio", "cells");
    run("bio", "cells", "ca", 1, "a100", "2026-10-05T00:00:00Z", "2026-10-05T01:00:00Z", NULL, NULL);
    metered();
    json_decref(price("{\"resource\":\"gpu:a100\",\"unit_price\":\"2\",\"currency\":\"USD\","
                      "\"effective_from\":\"2026-10-01T00:00:00Z\",\"tenant\":\"bio\"}"));
    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"bio\",\"period\":\"2026-10\"}", &r),
                     422);
    ck_assert_ptr_nonnull(strstr(jstr(r.json, "detail"), "CNY, USD"));
    expect_problem(&r, "invoice.several_currencies", "currencies", "CNY, USD");
    http_res_free(&r);
}
END_TEST

START_TEST(an_invoice_without_usage_names_its_currency)
{
    /* a tenant that used nothing: its total reads like any other, in its prices' currency */
    make_tenant("idle");
    struct http_res r;
    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"idle\",\"period\":\"2026-11\"}", &r),
                     201);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "lines")), 0);
    const json_t *total = json_object_get(r.json, "total");
    ck_assert_str_eq(jstr(total, "amount"), "0.00");
    ck_assert_str_eq(jstr(total, "currency"), "CNY");
    char path[128];
    snprintf(path, sizeof path, "/api/v1/invoices/%s?format=csv", jstr(r.json, "id"));
    http_res_free(&r);
    /* and so does its CSV's total row */
    ck_assert_int_eq(reqj("GET", path, fin, NULL, &r), 200);
    json_t *rec = audittest_csv_parse(r.body);
    ck_assert_int_eq(json_array_size(rec), 2);
    const json_t *last = json_array_get(rec, 1);
    ck_assert_str_eq(json_string_value(json_array_get(last, 6)), "total");
    ck_assert_str_eq(json_string_value(json_array_get(last, 11)), "0.00");
    ck_assert_str_eq(json_string_value(json_array_get(last, 12)), "CNY");
    json_decref(rec);
    http_res_free(&r);
    /* the tenant's own price wins over the default's currency: bio's GPUs are priced in USD,
     * the rest in CNY, so a month of bio without usage has no one currency to name */
    ck_assert_int_eq(reqj("POST", "/api/v1/invoices", fin,
                          "{\"tenant\":\"bio\",\"period\":\"2026-12\"}", &r),
                     201);
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "lines")), 0);
    ck_assert(json_is_null(json_object_get(json_object_get(r.json, "total"), "currency")));
    http_res_free(&r);
}
END_TEST

START_TEST(the_monthly_budget_counts_what_the_report_counts)
{
    /* a run of this month, still open: the budget and the report see it alike */
    PGresult *r = harness_sql(harness_srv.owner_url,
                              "SELECT to_char(date_trunc('hour', now(), 'UTC') - interval '2 hours',"
                              " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
                              0, NULL);
    ck_assert_ptr_nonnull(r);
    char start[40];
    snprintf(start, sizeof start, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    run("chem", "mol", "ca", 3, "a100", start, start, NULL, NULL);
    PQclear(harness_sql(harness_srv.owner_url,
                        "UPDATE job_runs SET ended_at = NULL WHERE ended_at = started_at", 0,
                        NULL));
    struct http_res q, u;
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/chem/quota", ca, NULL, &q), 200);
    ck_assert_int_eq(reqj("GET", "/api/v1/tenants/chem/usage?resource=gpu:a100", ca, NULL, &u),
                     200);
    double budget = json_number_value(json_object_get(
        json_object_get(json_object_get(q.json, "resources"), "gpu_hours_month"), "used"));
    double report = json_number_value(
        json_object_get(json_array_get(json_object_get(u.json, "rows"), 0), "quantity"));
    ck_assert_msg(budget >= 6.0 && report >= 6.0 && budget - report < 0.01 &&
                      report - budget < 0.01,
                  "budget %.6f, report %.6f", budget, report);
    http_res_free(&q);
    http_res_free(&u);
}
END_TEST

START_TEST(a_job_reports_checkpoints_only_while_it_runs)
{
    struct http_res r;
    ck_assert_int_eq(reqj("POST",
                          "/api/v1/tenants/physics/jobs/00000000-0000-0000-0000-000000000000"
                          "/checkpoint",
                          pm, NULL, &r),
                     404);
    expect_problem(&r, "job.not_found", "tenant", "physics");
    http_res_free(&r);
    char *id = audittest_sql_value(harness_srv.owner_url,
                                   "SELECT id FROM jobs WHERE tenant_id = (SELECT id FROM tenants"
                                   " WHERE slug = 'physics') LIMIT 1",
                                   0, NULL);
    ck_assert_int_eq(reqj("POST", fmt("/api/v1/tenants/physics/jobs/%s/checkpoint", id), pm, NULL,
                          &r),
                     409);
    expect_problem(&r, "checkpoint.job_not_running", "state", "succeeded");
    expect_problem(&r, "checkpoint.job_not_running", "id", id);
    http_res_free(&r);
    free(id);
}
END_TEST

int main(void)
{
    harness_require_pg();
    Suite *s = suite_create("billing");
    TCase *tc = tcase_create("billing");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, usage_groups_clips_and_refuses_bad_arguments);
    tcase_add_test(tc, usage_csv_quotes_defuses_and_keeps_numbers);
    tcase_add_test(tc, each_row_traces_to_its_jobs_and_intervals);
    tcase_add_test(tc, utilization_compares_allocation_with_capacity_by_hour);
    tcase_add_test(tc, prices_invoices_credits_finalization_and_late_usage);
    tcase_add_test(tc, an_invoice_without_usage_names_its_currency);
    tcase_add_test(tc, the_monthly_budget_counts_what_the_report_counts);
    tcase_add_test(tc, a_job_reports_checkpoints_only_while_it_runs);
    /* last: its October runs would be in the invoices above */
    tcase_add_test(tc, a_member_pages_through_its_own_usage_only);
    suite_add_tcase(s, tc);
    return suite_run_nofork(s);
}
