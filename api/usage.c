/*
 * usage.c - usage reports (a tenant's, and platform-wide), the jobs and
 * intervals behind a report row, and GPU utilization over time, in JSON or
 * CSV. Quantities are hours of a resource: GPU-hours, core-hours, GiB-hours.
 */
#include "usage.h"

#include "../lib/gputype.h"

#include "../db/billing.h"
#include "../db/clusters.h"
#include "../db/tenants.h"
#include "../lib/config.h"
#include "../lib/crypto.h"
#include "../lib/csv.h"
#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "auditfilter.h"
#include "jobspec.h"
#include "paging.h"
#include "usagequery.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE_MAX_DAYS 366
#define USAGE_JOBS_MAX 200
/* each job lists its hour intervals: a month of them at most (744 per job) */
#define USAGE_JOBS_MAX_DAYS 31
#define UTIL_MAX_DAYS       93
#define UTIL_DEFAULT_DAYS   7

/* Every argument of a usage route; 0, or an error filled into rs. */
static int parse_args(struct req *rq, struct resp *rs, bool platform, long max_days,
                      struct usage_args *a)
{
    int e = usagequery_parse(rq, rs, platform, max_days, rq->cfg->usage_max_rows, a);
    if (e)
        return e;
    if (!platform) {
        a->q.tenant_id = rq->tenant.id;
        return 0;
    }
    const char *slug = req_query(rq, "tenant");
    if (!slug)
        return 0;
    bool suspended;
    if (!validate_slug(slug)) {
        api_field_problem(rs, "tenant", PROBLEM_V_TENANT, NULL);
        return api_fail_fields(rs);
    }
    e = db_tenant_resolve(rq->db, slug, a->tenant_id, &suspended);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_TENANT_NOT_FOUND, json_pack("{s:s}", "tenant", slug));
    a->q.tenant_id = a->tenant_id;
    return e;
}

/* Whether a group key has a display name beside it (tenants and projects do). */
static bool has_name(const char *group)
{
    return strcmp(group, "tenant") == 0 || strcmp(group, "project") == 0;
}

/* The value of the group key named group in row; *name its display name (NULL: none). */
static const char *key_of(const struct db_usage_row *row, const char *group, const char **name)
{
    *name = NULL;
    if (strcmp(group, "tenant") == 0) {
        *name = row->tenant_name;
        return row->tenant;
    }
    if (strcmp(group, "project") == 0) {
        *name = row->project_name;
        return row->project;
    }
    return strcmp(group, "user") == 0   ? row->user
           : strcmp(group, "day") == 0  ? row->day
           : strcmp(group, "week") == 0 ? row->week
                                        : row->month;
}

/* The answer being written, row by row, as the report's rows come. */
struct emit {
    struct sbuf sb;
    const struct usage_args *a;
    size_t rows;
};

static void csv_head(struct emit *em)
{
    for (size_t k = 0; k < em->a->norder; k++)
        sbuf_printf(&em->sb, has_name(em->a->order[k]) ? "%s,%s_name," : "%s,", em->a->order[k],
                    em->a->order[k]);
    sbuf_puts(&em->sb, "resource,quantity,unit\r\n");
}

static void csv_row(const struct db_usage_row *row, void *ctx)
{
    struct emit *em = ctx;
    for (size_t k = 0; k < em->a->norder; k++) {
        const char *name;
        csv_cell(&em->sb, key_of(row, em->a->order[k], &name));
        sbuf_putc(&em->sb, ',');
        if (name) {
            csv_cell(&em->sb, name);
            sbuf_putc(&em->sb, ',');
        }
    }
    csv_cell(&em->sb, row->resource);
    sbuf_putc(&em->sb, ',');
    csv_number(&em->sb, row->quantity);
    sbuf_putc(&em->sb, ',');
    csv_cell(&em->sb, row->unit);
    sbuf_puts(&em->sb, "\r\n");
}

/*
 * The report as JSON text written straight from the rows: a tree of jansson
 * objects for 100,000 rows would take hundreds of MiB. Quantities go out as
 * the exact decimals PostgreSQL rounded (JSON numbers).
 */
static void json_head(struct emit *em)
{
    struct sbuf *sb = &em->sb;
    sbuf_puts(sb, "{\"from\":");
    sbuf_json_str(sb, em->a->from);
    sbuf_puts(sb, ",\"to\":");
    sbuf_json_str(sb, em->a->to);
    sbuf_puts(sb, ",\"group_by\":[");
    for (size_t k = 0; k < em->a->norder; k++)
        sbuf_printf(sb, "%s\"%s\"", k ? "," : "", em->a->order[k]);
    sbuf_puts(sb, "],\"rows\":[");
}

static void json_row(const struct db_usage_row *row, void *ctx)
{
    struct emit *em = ctx;
    struct sbuf *sb = &em->sb;
    const struct usage_args *a = em->a;
    const char *name;
    sbuf_puts(sb, em->rows++ ? ",{\"key\":{" : "{\"key\":{");
    for (size_t k = 0; k < a->norder; k++) {
        sbuf_printf(sb, "%s\"%s\":", k ? "," : "", a->order[k]);
        sbuf_json_str(sb, key_of(row, a->order[k], &name));
    }
    sbuf_puts(sb, "},\"names\":{");
    bool first = true;
    for (size_t k = 0; k < a->norder; k++) {
        (void)key_of(row, a->order[k], &name);
        if (!name)
            continue;
        sbuf_printf(sb, "%s\"%s\":", first ? "" : ",", a->order[k]);
        sbuf_json_str(sb, name);
        first = false;
    }
    sbuf_puts(sb, "},\"resource\":");
    sbuf_json_str(sb, row->resource);
    sbuf_printf(sb, ",\"quantity\":%s,\"unit\":", row->quantity);
    sbuf_json_str(sb, row->unit);
    sbuf_putc(sb, '}');
}

static int report(struct req *rq, struct resp *rs, bool platform)
{
    struct usage_args a;
    int e = parse_args(rq, rs, platform, USAGE_MAX_DAYS, &a);
    if (e)
        return e;
    struct emit em = {SBUF_INIT, &a, 0};
    if (a.csv)
        csv_head(&em);
    else
        json_head(&em);
    e = db_usage_report(rq->rdb, &a.q, a.csv ? csv_row : json_row, &em);
    if (e) {
        sbuf_free(&em.sb);
        return e != AIDC_ETOOBIG
                   ? e
                   : api_problem(rs, PROBLEM_USAGE_TOO_MANY_ROWS,
                                 json_pack("{s:I}", "max", (json_int_t)rq->cfg->usage_max_rows));
    }
    if (a.csv) {
        resp_csv(rs, &em.sb, "usage.csv");
        return 0;
    }
    sbuf_puts(&em.sb, "]}");
    rs->status = MHD_HTTP_OK;
    rs->raw_len = em.sb.len;
    rs->raw = sbuf_steal(&em.sb);
    rs->content_type = "application/json";
    return 0;
}

int api_usage_tenant(struct req *rq, struct resp *rs)
{
    return report(rq, rs, false);
}

int api_usage_platform(struct req *rq, struct resp *rs)
{
    return report(rq, rs, true);
}

static int jobs(struct req *rq, struct resp *rs, bool platform)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    struct usage_args a;
    /* fewer jobs a page than elsewhere: each job lists its intervals */
    if (pg.limit > USAGE_JOBS_MAX)
        api_field_problem(rs, "limit", PROBLEM_V_LIMIT,
                          json_pack("{s:I}", "max", (json_int_t)USAGE_JOBS_MAX));
    else if (pg.after && !crypto_uuid_valid(pg.after))
        api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
    if (rs->err.nfields)
        e = api_fail_fields(rs);
    if (!e)
        e = parse_args(rq, rs, platform, USAGE_JOBS_MAX_DAYS, &a);
    if (!e && a.csv)
        e = api_problem(rs, PROBLEM_NOT_ACCEPTABLE_JSON, NULL);
    if (!e) {
        a.q.limit = pg.limit;
        a.q.after = pg.after;
        e = db_usage_jobs(rq->rdb, &a.q, &pg.rows);
    }
    if (!e)
        e = paging_page(rs, &pg);
    if (!e) {
        json_object_set_new(rs->body, "from", json_string(a.from));
        json_object_set_new(rs->body, "to", json_string(a.to));
    }
    paging_free(&pg);
    return e;
}

int api_usage_tenant_jobs(struct req *rq, struct resp *rs)
{
    return jobs(rq, rs, false);
}

int api_usage_platform_jobs(struct req *rq, struct resp *rs)
{
    return jobs(rq, rs, true);
}

/* Allocated over capacity, or null when there was no capacity. */
static json_t *ratio(double alloc, double cap)
{
    return cap > 0 ? json_real((double)(long long)(alloc / cap * 1e6 + 0.5) / 1e6) : json_null();
}

int api_usage_utilization(struct req *rq, struct resp *rs)
{
    char from[40], to[40], cluster_id[UUID_LEN + 1] = "";
    time_t now = time(NULL);
    time_t hour = now - now % 3600;
    usagequery_range(rq, rs, hour - UTIL_DEFAULT_DAYS * 86400L, hour + 3600, UTIL_MAX_DAYS, from,
                     to, sizeof from);
    const char *cluster = req_query(rq, "cluster"), *gpu_type = req_query(rq, "gpu_type");
    if (gpu_type && (!gputype_valid(gpu_type)))
        api_field_problem(rs, "gpu_type", PROBLEM_V_GPU_TYPE, NULL);
    if (cluster && !validate_slug(cluster))
        api_field_problem(rs, "cluster", PROBLEM_V_CLUSTER, NULL);
    if (rs->err.nfields)
        return api_fail_fields(rs);
    int e = 0;
    if (cluster) {
        char kind[16];
        e = db_cluster_lookup(rq->db, cluster, cluster_id, kind, sizeof kind, NULL);
        if (e == AIDC_ENOTFOUND)
            return api_problem(rs, PROBLEM_CLUSTER_NOT_FOUND,
                               json_pack("{s:s}", "cluster", cluster));
        if (e)
            return e;
    }
    struct db_util_hours uh = {0};
    if ((e = db_usage_utilization(rq->rdb, cluster ? cluster_id : NULL, gpu_type, from, to, &uh))) {
        db_util_hours_free(&uh);
        return e;
    }
    double hw_alloc[7][24] = {{0}}, hw_cap[7][24] = {{0}};
    double total_alloc = 0, total_cap = 0;
    json_t *hours = json_array();
    for (size_t i = 0; i < uh.n; i++) {
        const struct db_util_hour *u = &uh.v[i];
        double alloc = u->allocated, cap = u->capacity;
        int dow = u->isodow - 1, h = u->hour_of_day;
        if (dow >= 0 && dow < 7 && h >= 0 && h < 24) {
            hw_alloc[dow][h] += alloc;
            hw_cap[dow][h] += cap;
        }
        total_alloc += alloc;
        total_cap += cap;
        json_array_append_new(hours, json_pack("{s:s, s:f, s:f, s:o}", "hour", u->hour,
                                               "allocated_gpu_hours", alloc, "capacity_gpu_hours",
                                               cap, "utilization", ratio(alloc, cap)));
    }
    db_util_hours_free(&uh);
    json_t *heat = json_array();
    for (int d = 0; d < 7; d++) {
        json_t *row = json_array();
        for (int h = 0; h < 24; h++)
            json_array_append_new(row, ratio(hw_alloc[d][h], hw_cap[d][h]));
        json_array_append_new(heat, row);
    }
    json_t *out =
        json_pack("{s:o, s:o, s:s, s:s, s:o, s:{s:o, s:f, s:o}, s:{s:s, s:o}}", "cluster",
                  cluster ? json_string(cluster) : json_null(), "gpu_type",
                  gpu_type ? json_string(gpu_type) : json_null(), "from", from, "to", to, "hours",
                  hours, "total", "allocated_gpu_hours",
                  json_real((double)(long long)(total_alloc * 1e6 + 0.5) / 1e6),
                  "capacity_gpu_hours", total_cap, "utilization", ratio(total_alloc, total_cap),
                  "heatmap", "rows", "isodow 1 (Monday) to 7, hours 0-23 UTC", "utilization", heat);
    return resp_json(rs, MHD_HTTP_OK, out);
}
