/*
 * allocations.c - allocation requests, the tenant's side: asking (a tenant
 * admin, or the project's PI who is a member) and reading them. See
 * allocations.h; the review is in allocreview.c.
 *
 * Periods are whole UTC days, starts_on to ends_on inclusive; a period ends
 * after it starts, lasts at most MAX_PERIOD_DAYS, and does not end in the
 * past (it may have started: a request can cover the running month).
 */
#include "allocations.h"

#include "../db/allocations.h"
#include "../lib/config.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "paging.h"
#include "quotas.h"

#include <ctype.h>
#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PERIOD_DAYS 1096 /* three years, a leap day included */
#define MAX_AMOUNT      QUOTA_MAX_AMOUNT
#define MAX_RESOURCES   64

static const struct vfield create_fields[] = {
    {"project", V_STRING, V_REQUIRED, 1, 63, validate_slug, PROBLEM_V_SLUG},
    {"resources", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
    {"gpu_hours", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
    {"storage_gib", V_ANY, V_NULLABLE, 0, 0, NULL, 0},
    {"starts_on", V_STRING, V_REQUIRED, 10, 10, NULL, 0},
    {"ends_on", V_STRING, V_REQUIRED, 10, 10, NULL, 0},
    {"justification", V_STRING, V_REQUIRED, 1, 8000, NULL, 0},
    {"funding_ref", V_STRING, V_NULLABLE, 0, 200, NULL, 0},
    {"renews", V_STRING, V_NULLABLE, 0, 0, crypto_uuid_valid, PROBLEM_V_UUID},
};

void api_alloc_amount(const json_t *obj, const char *field, char *out, size_t n, struct resp *rs)
{
    json_t *v = json_object_get(obj, field);
    out[0] = '\0';
    if ((v && !json_is_null(v)) && !api_quota_amount(v, out, n)) {
        out[0] = '\0';
        api_field_problem(rs, field, PROBLEM_V_RANGE,
                          json_pack("{s:i, s:i}", "min", 0, "max", (int)MAX_AMOUNT));
    }
}

/* One resource's {"limit", "guaranteed"?}; field errors named fname. */
static void resource_check(const char *fname, const json_t *v, struct resp *rs)
{
    const char *k;
    json_t *x;
    char g[48] = "0", l[48] = "";
    if (!json_is_object(v)) {
        api_field_problem(rs, fname, PROBLEM_V_TYPE_OBJECT, NULL);
        return;
    }
    json_object_foreach((json_t *)v, k,
                        x) if (strcmp(k, "limit") != 0 && strcmp(k, "guaranteed") != 0)
        api_field_problem(rs, fname, PROBLEM_QUOTA_AMOUNT_FIELD, json_pack("{s:s}", "name", k));
    json_t *gv = json_object_get(v, "guaranteed"), *lv = json_object_get(v, "limit");
    if (gv && !api_quota_amount(gv, g, sizeof g))
        api_field_problem(rs, fname, PROBLEM_QUOTA_GUARANTEED, NULL);
    if (!lv || !api_quota_amount(lv, l, sizeof l)) {
        api_field_problem(rs, fname, PROBLEM_QUOTA_LIMIT, NULL);
        return;
    }
    double gd = strtod(g, NULL), ld = strtod(l, NULL);
    if (ld < gd)
        api_field_problem(
            rs, fname, PROBLEM_QUOTA_LIMIT_BELOW_GUARANTEED,
            json_pack("{s:o, s:o}", "limit", problem_number(ld), "guaranteed", problem_number(gd)));
}

bool api_alloc_resources_check(const json_t *v, const char *field, struct resp *rs)
{
    size_t before = rs->err.nfields;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_object(v)) {
        api_field_problem(rs, field, PROBLEM_V_TYPE_OBJECT, NULL);
        return false;
    }
    if (json_object_size(v) > MAX_RESOURCES) {
        api_field_problem(rs, field, PROBLEM_QUOTA_TOO_MANY_RESOURCES,
                          json_pack("{s:i}", "max", MAX_RESOURCES));
        return false;
    }
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x)
    {
        char fname[96];
        snprintf(fname, sizeof fname, "%s.%.40s", field, key);
        if (!api_quota_project_resource(key))
            api_field_problem(rs, fname, PROBLEM_QUOTA_PROJECT_RESOURCE, NULL);
        else
            resource_check(fname, x, rs);
    }
    return rs->err.nfields == before;
}

bool api_alloc_parse_day(const char *s, long *days)
{
    if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-')
        return false;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && !isdigit((unsigned char)s[i]))
            return false;
    /* the digits are checked above: each part is a plain decimal */
    int y = (int)strtol(s, NULL, 10), m = (int)strtol(s + 5, NULL, 10);
    int d = (int)strtol(s + 8, NULL, 10);
    if (y < 1970 || m < 1 || m > 12 || d < 1)
        return false;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d, .tm_hour = 12};
    time_t t = timegm(&tm);
    struct tm back;
    if (t == (time_t)-1 || !gmtime_r(&t, &back) || back.tm_mday != d || back.tm_mon != m - 1)
        return false;
    *days = (long)(t / 86400);
    return true;
}

static void check_period(const json_t *body, struct resp *rs)
{
    long s = 0, e = 0, today = (long)(time(NULL) / 86400);
    bool sok = api_alloc_parse_day(vstr(body, "starts_on"), &s),
         eok = api_alloc_parse_day(vstr(body, "ends_on"), &e);
    if (!sok)
        api_field_problem(rs, "starts_on", PROBLEM_ALLOC_DATE, NULL);
    if (!eok)
        api_field_problem(rs, "ends_on", PROBLEM_ALLOC_DATE, NULL);
    if (!sok || !eok)
        return;
    if (e <= s)
        api_field_problem(rs, "ends_on", PROBLEM_ALLOC_ENDS_BEFORE_START, NULL);
    else if (e - s + 1 > MAX_PERIOD_DAYS)
        api_field_problem(rs, "ends_on", PROBLEM_ALLOC_PERIOD_TOO_LONG,
                          json_pack("{s:i}", "max_days", MAX_PERIOD_DAYS));
    else if (e < today)
        api_field_problem(rs, "ends_on", PROBLEM_ALLOC_ENDS_IN_PAST, NULL);
}

/* The body's checks that need no database; the amounts' text into gh and sg. */
static bool check_body(const json_t *body, struct resp *rs, char *gh, char *sg, size_t n)
{
    if (!validate_object(body, create_fields, sizeof create_fields / sizeof create_fields[0], rs))
        return false;
    json_t *res = json_object_get(body, "resources");
    api_alloc_resources_check(res, "resources", rs);
    api_alloc_amount(body, "gpu_hours", gh, n, rs);
    api_alloc_amount(body, "storage_gib", sg, n, rs);
    check_period(body, rs);
    if (rs->err.nfields == 0 && json_object_size(res) == 0 && !gh[0] && !sg[0])
        api_field_problem(rs, "resources", PROBLEM_ALLOC_NOTHING_ASKED, NULL);
    return rs->err.nfields == 0;
}

int api_alloc_answer(struct req *rq, struct resp *rs, const char *id, int status)
{
    json_t *out = NULL;
    int e = db_alloc_get(rq->db, NULL, id, rq->cfg->allocation_notice_days, &out);
    return e ? e : resp_json(rs, status, out);
}

/* Whether the actor may ask for project's allocations (the PI or an admin). */
static bool may_ask(const struct req *rq, const struct db_alloc_project *pr)
{
    return (rq->actor.roles & GR_PLATFORM_ADMIN) || rq->tenant.role >= TR_ADMIN || pr->is_pi;
}

int api_alloc_create(struct req *rq, struct resp *rs)
{
    char gh[48], sg[48], id[37];
    if (!check_body(rq->json, rs, gh, sg, sizeof gh))
        return api_fail_fields(rs);
    const char *slug = vstr(rq->json, "project"), *renews = vstr(rq->json, "renews");
    struct db_alloc_project pr;
    int e = db_alloc_project(rq->db, rq->tenant.id, slug, rq->actor.user_id, &pr);
    if (e == AIDC_ENOTFOUND)
        return api_problem_status(
            rs, MHD_HTTP_UNPROCESSABLE_CONTENT, PROBLEM_PROJECT_NOT_FOUND,
            json_pack("{s:s, s:s}", "project", slug, "tenant", rq->tenant.slug));
    if (e)
        return e;
    if (!may_ask(rq, &pr))
        return api_problem(rs, PROBLEM_ALLOC_NOT_PI, json_pack("{s:s}", "project", slug));
    if (renews) {
        bool same = false;
        e = db_alloc_of_project(rq->db, renews, pr.id, &same);
        if (e)
            return e;
        if (!same) {
            api_field_problem(rs, "renews", PROBLEM_ALLOC_RENEWS_OTHER,
                              json_pack("{s:s}", "project", slug));
            return api_fail_fields(rs);
        }
    }
    json_t *res = json_object_get(rq->json, "resources");
    char *res_text = json_is_object(res) ? json_dumps(res, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    if (json_is_object(res) && !res_text)
        return AIDC_EINTERNAL;
    struct db_alloc_new n = {
        .tenant_id = rq->tenant.id,
        .project_id = pr.id,
        .user_id = rq->actor.user_id,
        .resources = res_text ? res_text : "{}",
        .gpu_hours = gh[0] ? gh : NULL,
        .storage_gib = sg[0] ? sg : NULL,
        .starts_on = vstr(rq->json, "starts_on"),
        .ends_on = vstr(rq->json, "ends_on"),
        .justification = vstr(rq->json, "justification"),
        .funding_ref = vstr(rq->json, "funding_ref"),
        .renews = renews,
    };
    e = db_alloc_insert(rq->db, &n, id);
    free(res_text);
    if (e)
        return e;
    char *loc = xasprintf("/api/v1/tenants/%s/allocation-requests/%s", rq->tenant.slug, id);
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    resp_audit(rs, "allocation_request", id,
               json_pack("{s:s, s:s, s:s, s:s*}", "project", slug, "starts_on", n.starts_on,
                         "ends_on", n.ends_on, "gpu_hours", n.gpu_hours));
    return api_alloc_answer(rq, rs, id, MHD_HTTP_CREATED);
}

static const char *const states[] = {"pending", "approved", "rejected", "needs_info", "expired"};

static bool state_valid(const char *s)
{
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
        if (strcmp(s, states[i]) == 0)
            return true;
    return false;
}

/* A list of the tenant's (tenant_id) or every tenant's (NULL) requests. */
static int list(struct req *rq, struct resp *rs, const char *tenant_id)
{
    const char *state = req_query(rq, "state"), *project = req_query(rq, "project");
    if (state && !state_valid(state))
        api_field_problem(
            rs, "state", PROBLEM_V_ONE_OF,
            json_pack("{s:s}", "allowed", "pending, approved, rejected, needs_info, expired"));
    if (project && !validate_slug(project))
        api_field_problem(rs, "project", PROBLEM_V_SLUG, NULL);
    if (rs->err.nfields)
        return api_fail_fields(rs);
    struct page pg;
    int e = paging_parse_keyed(rq, rs, &pg);
    if (e)
        return e;
    e = db_alloc_list(rq->db, tenant_id, state, project, pg.after, pg.after_id, pg.limit,
                      rq->cfg->allocation_notice_days, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

int api_alloc_list(struct req *rq, struct resp *rs)
{
    return list(rq, rs, rq->tenant.id);
}

int api_alloc_queue(struct req *rq, struct resp *rs)
{
    return list(rq, rs, NULL);
}

int api_alloc_get(struct req *rq, struct resp *rs)
{
    const char *id;
    int e = validate_id_param(rq, rs, &id);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_alloc_get(rq->db, rq->tenant.id, id, rq->cfg->allocation_notice_days, &out);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_ALLOC_NOT_FOUND, json_pack("{s:s}", "id", id));
    return e ? e : resp_json(rs, MHD_HTTP_OK, out);
}
