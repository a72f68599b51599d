/*
 * quotas.c - tenant quotas (guaranteed and limit per resource, set by platform
 * admins) and project quotas (a limit below the tenant's, set by tenant
 * admins), with what is used now.
 *
 * A gpu:<type> absent from a tenant's quota means guaranteed 0 and limit 0;
 * any other absent resource is unlimited (shown with a null limit).
 *
 * Storage: a tenant's storage_gib limits its images; a project's storage_gib
 * its storage space; a tenant's home_storage_gib each member's home there
 * (docs/storage-quotas.md). The spaces' use is their last measurement, with
 * when it was taken (measured_at) and whether it was whole (complete).
 */
#include "quotas.h"

#include "../lib/gputype.h"

#include "../db/projects.h"
#include "../db/quotas.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "approvals.h"
#include "jobspec.h"

#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RESOURCES 64
#define MAX_AMOUNT    QUOTA_MAX_AMOUNT

static bool is_gpu_resource(const char *r)
{
    return strncmp(r, "gpu:", 4) == 0 && gputype_valid(r + 4);
}

static bool is_resource(const char *r, bool tenant)
{
    static const char *const names[] = {"cpu", "memory_gib", "jobs", "gpu_hours_month",
                                        "storage_gib"};
    if (is_gpu_resource(r) || (tenant && strcmp(r, "home_storage_gib") == 0))
        return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(r, names[i]) == 0)
            return true;
    return false;
}

/* The resource whose use is a storage space's measurement (home_storage_gib: the largest home). */
static bool is_space_storage(const char *r, bool tenant)
{
    return strcmp(r, tenant ? "home_storage_gib" : "storage_gib") == 0;
}

/* "resources.<name>": how field errors name a resource of the body. */
static const char *field_name(const char *resource, char *buf, size_t n)
{
    snprintf(buf, n, "resources.%.40s", resource);
    return buf;
}

/* An amount as a JSON number: whole ones as integers. */
static json_t *number(double v)
{
    return v == floor(v) && fabs(v) < 9e15 ? json_integer((json_int_t)v) : json_real(v);
}

static json_t *entry(json_t *doc, const char *res, bool with_guarantee)
{
    json_t *e = json_object_get(doc, res);
    if (!e) {
        bool gpu = is_gpu_resource(res);
        e = json_object();
        if (with_guarantee)
            json_object_set_new(e, "guaranteed", gpu ? json_integer(0) : json_null());
        json_object_set_new(e, "limit", gpu && with_guarantee ? json_integer(0) : json_null());
        json_object_set_new(e, "used", json_integer(0));
        if (with_guarantee)
            json_object_set_new(e, "borrowed", json_integer(0));
        json_object_set_new(doc, res, e);
    }
    return e;
}

/* {"resources": {...}} from the quota rows and the usage rows. */
static int document(struct req *rq, const char *project_id, struct resp *rs, int status)
{
    struct db_quota_rows q = {0};
    struct db_quota_uses u = {0};
    bool tenant = project_id == NULL;
    int e = tenant ? db_quota_tenant_get(rq->db, rq->tenant.id, &q)
                   : db_quota_project_get(rq->db, project_id, &q);
    if (!e)
        e = db_quota_usage(rq->db, rq->tenant.id, project_id, &u);
    json_t *res = e ? NULL : json_object();
    for (size_t i = 0; res && i < q.n; i++) {
        json_t *en = entry(res, q.v[i].resource, tenant);
        if (tenant)
            json_object_set_new(en, "guaranteed", number(q.v[i].guaranteed));
        json_object_set_new(en, "limit", number(q.v[i].limit));
    }
    for (size_t i = 0; res && i < u.n; i++) {
        json_t *en = entry(res, u.v[i].resource, tenant);
        json_object_set_new(en, "used", number(u.v[i].used));
        if (tenant)
            json_object_set_new(en, "borrowed", number(u.v[i].borrowed));
        if (is_space_storage(u.v[i].resource, tenant)) {
            json_object_set_new(en, "measured_at",
                                u.v[i].measured_at[0] ? json_string(u.v[i].measured_at)
                                                      : json_null());
            json_object_set_new(en, "complete",
                                u.v[i].complete < 0 ? json_null() : json_boolean(u.v[i].complete));
        }
    }
    db_quota_rows_free(&q);
    db_quota_uses_free(&u);
    if (e)
        return e;
    return resp_json(rs, status, json_pack("{s:o}", "resources", res));
}

int api_quota_tenant_get(struct req *rq, struct resp *rs)
{
    return document(rq, NULL, rs, MHD_HTTP_OK);
}

bool api_quota_amount(const json_t *v, char *out, size_t n)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || x > (json_int_t)MAX_AMOUNT)
            return false;
        snprintf(out, n, "%lld", (long long)x);
        return true;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v);
        if (!(x >= 0 && x <= MAX_AMOUNT))
            return false;
        snprintf(out, n, "%.6f", x);
        return true;
    }
    return false;
}

struct parsed {
    struct sbuf names, guaranteed, limits;
    size_t n;
    char (*name)[40];
    double *g, *l;
};

static void parsed_free(struct parsed *p)
{
    sbuf_free(&p->names);
    sbuf_free(&p->guaranteed);
    sbuf_free(&p->limits);
    free(p->name);
    free(p->g);
    free(p->l);
}

/* Check the body {"resources": {...}}; field errors go to rs. */
static bool parse_body(const json_t *body, bool tenant, struct resp *rs, struct parsed *p)
{
    memset(p, 0, sizeof *p);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v) if (strcmp(key, "resources") != 0)
        api_field_problem(rs, key, PROBLEM_V_UNKNOWN_FIELD, NULL);
    json_t *resources = json_object_get(body, "resources");
    if (!json_is_object(resources)) {
        api_field_problem(rs, "resources", PROBLEM_QUOTA_RESOURCES_REQUIRED, NULL);
        return false;
    }
    if (json_object_size(resources) > MAX_RESOURCES) {
        api_field_problem(rs, "resources", PROBLEM_QUOTA_TOO_MANY_RESOURCES,
                          json_pack("{s:i}", "max", MAX_RESOURCES));
        return false;
    }
    p->name = xcalloc(json_object_size(resources) + 1, sizeof *p->name);
    p->g = xcalloc(json_object_size(resources) + 1, sizeof *p->g);
    p->l = xcalloc(json_object_size(resources) + 1, sizeof *p->l);
    json_object_foreach(resources, key, v)
    {
        char field[64];
        field_name(key, field, sizeof field);
        if (!is_resource(key, tenant)) {
            api_field_problem(
                rs, field, tenant ? PROBLEM_QUOTA_TENANT_RESOURCE : PROBLEM_QUOTA_PROJECT_RESOURCE,
                NULL);
            continue;
        }
        if (!json_is_object(v)) {
            api_field_problem(rs, field, PROBLEM_V_TYPE_OBJECT, NULL);
            continue;
        }
        char g[48] = "0", l[48] = "";
        const char *k2;
        json_t *x;
        json_object_foreach(v, k2, x)
        {
            if (strcmp(k2, "limit") != 0 && !(tenant && strcmp(k2, "guaranteed") == 0))
                api_field_problem(rs, field, PROBLEM_QUOTA_AMOUNT_FIELD,
                                  json_pack("{s:s%}", "name", k2, sbuf_utf8_prefix(k2, 40)));
        }
        json_t *gv = json_object_get(v, "guaranteed"), *lv = json_object_get(v, "limit");
        if (gv && !api_quota_amount(gv, g, sizeof g))
            api_field_problem(rs, field, PROBLEM_QUOTA_GUARANTEED, NULL);
        else if (strcmp(key, "home_storage_gib") == 0 && strtod(g, NULL) != 0)
            /* nothing to guarantee: a home takes what the disk has, up to its limit */
            api_field_problem(rs, field, PROBLEM_QUOTA_LIMIT_ONLY, NULL);
        if (!lv || !api_quota_amount(lv, l, sizeof l)) {
            api_field_problem(rs, field, PROBLEM_QUOTA_LIMIT, NULL);
            continue;
        }
        double gd = strtod(g, NULL), ld = strtod(l, NULL);
        if (ld < gd)
            api_field_problem(rs, field, PROBLEM_QUOTA_LIMIT_BELOW_GUARANTEED,
                              json_pack("{s:o, s:o}", "limit", problem_number(ld), "guaranteed",
                                        problem_number(gd)));
        snprintf(p->name[p->n], sizeof p->name[0], "%s", key);
        p->g[p->n] = gd;
        p->l[p->n] = ld;
        p->n++;
        sbuf_printf(&p->names, "%s%s", p->names.len ? "," : "", key);
        sbuf_printf(&p->guaranteed, "%s%s", p->guaranteed.len ? "," : "", g);
        sbuf_printf(&p->limits, "%s%s", p->limits.len ? "," : "", l);
    }
    return rs->err.nfields == 0;
}

/* The guarantees of all tenants of each GPU type must fit the clusters. */
static int check_capacity(struct req *rq, struct resp *rs, const struct parsed *p)
{
    struct db_quota_capacities caps = {0};
    char field[64];
    int e = db_quota_capacity(rq->db, rq->tenant.id, &caps);
    if (e) {
        db_quota_capacities_free(&caps);
        return e;
    }
    for (size_t i = 0; i < p->n; i++) {
        if (!is_gpu_resource(p->name[i]) || p->g[i] <= 0)
            continue;
        double others = 0, capacity = 0;
        for (size_t k = 0; k < caps.n; k++) {
            if (strcmp(caps.v[k].resource, p->name[i]) == 0) {
                others = caps.v[k].others_guaranteed;
                capacity = caps.v[k].capacity;
            }
        }
        if (others + p->g[i] > capacity + 1e-9)
            api_field_problem(rs, field_name(p->name[i], field, sizeof field),
                              PROBLEM_QUOTA_OVER_CAPACITY,
                              json_pack("{s:o, s:o}", "total", problem_number(others + p->g[i]),
                                        "capacity", problem_number(capacity)));
    }
    db_quota_capacities_free(&caps);
    if (rs->err.nfields) {
        rs->err.status = MHD_HTTP_UNPROCESSABLE_CONTENT;
        return api_fail_fields(rs);
    }
    return 0;
}

/*
 * Whether p raises some resource's guarantee by more than the threshold
 * (AIDC_APPROVAL_QUOTA_THRESHOLD): that needs dual approval. Lowering, or
 * keeping, never does. The summary names the raises ("gpu:a100 4 -> 8").
 */
static int raises_guarantee(struct req *rq, const struct parsed *p, struct sbuf *summary,
                            bool *raise)
{
    struct db_quota_rows q = {0};
    int e = db_quota_tenant_get(rq->db, rq->tenant.id, &q);
    if (e) {
        db_quota_rows_free(&q);
        return e;
    }
    *raise = false;
    sbuf_printf(summary, "raise the guaranteed quota of tenant \"%s\":", rq->tenant.slug);
    for (size_t i = 0; i < p->n; i++) {
        double cur = 0; /* absent: nothing guaranteed */
        for (size_t k = 0; k < q.n; k++)
            if (strcmp(q.v[k].resource, p->name[i]) == 0)
                cur = q.v[k].guaranteed;
        if (p->g[i] - cur > rq->cfg->approval_quota_threshold + 1e-9) {
            sbuf_printf(summary, "%s %s %g -> %g", *raise ? "," : "", p->name[i], cur, p->g[i]);
            *raise = true;
        }
    }
    db_quota_rows_free(&q);
    return 0;
}

int api_quota_tenant_put(struct req *rq, struct resp *rs)
{
    struct parsed p;
    struct sbuf summary = SBUF_INIT;
    bool raise = false;
    int e;
    if (!parse_body(rq->json, true, rs, &p)) {
        e = api_fail_fields(rs);
        goto out;
    }
    e = check_capacity(rq, rs, &p);
    if (!e)
        e = raises_guarantee(rq, &p, &summary, &raise);
    if (!e && raise) {
        e = approval_required(rq, rs, sbuf_str(&summary));
        if (e) {
            e = e < 0 ? e : 0;
            goto out;
        }
    }
    if (!e)
        e = db_quota_tenant_put(rq->db, rq->tenant.id, sbuf_str(&p.names), sbuf_str(&p.guaranteed),
                                sbuf_str(&p.limits));
    if (!e) {
        resp_audit(rs, "quota", rq->tenant.slug, json_deep_copy(rq->json));
        e = document(rq, NULL, rs, MHD_HTTP_OK);
    }
out:
    sbuf_free(&summary);
    parsed_free(&p);
    return e;
}

static int project_id(struct req *rq, struct resp *rs, char *id)
{
    const char *slug = req_param(rq, "project");
    if (!validate_slug(slug)) {
        api_field_problem(rs, "project", PROBLEM_V_SLUG, NULL);
        return api_fail_fields(rs);
    }
    int e = db_project_id(rq->db, rq->tenant.id, slug, id);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_PROJECT_NOT_FOUND,
                           json_pack("{s:s, s:s}", "project", slug, "tenant", rq->tenant.slug));
    return e;
}

int api_quota_project_get(struct req *rq, struct resp *rs)
{
    char id[37];
    int e = project_id(rq, rs, id);
    return e ? e : document(rq, id, rs, MHD_HTTP_OK);
}

/* A project's limit may not exceed its tenant's. */
static int check_tenant_limits(struct req *rq, struct resp *rs, const struct parsed *p)
{
    struct db_quota_rows q = {0};
    char field[64];
    int e = db_quota_tenant_get(rq->db, rq->tenant.id, &q);
    if (e) {
        db_quota_rows_free(&q);
        return e;
    }
    for (size_t i = 0; i < p->n; i++) {
        /* a project's storage_gib is its space; the tenant's is its images: no ceiling */
        if (strcmp(p->name[i], "storage_gib") == 0)
            continue;
        bool gpu = is_gpu_resource(p->name[i]);
        double tl = gpu ? 0 : -1; /* absent: no GPUs of the type; other resources unlimited */
        for (size_t k = 0; k < q.n; k++)
            if (strcmp(q.v[k].resource, p->name[i]) == 0)
                tl = q.v[k].limit;
        if (tl >= 0 && p->l[i] > tl + 1e-9)
            api_field_problem(rs, field_name(p->name[i], field, sizeof field),
                              PROBLEM_QUOTA_OVER_TENANT_LIMIT,
                              json_pack("{s:o, s:o}", "limit", problem_number(p->l[i]),
                                        "tenant_limit", problem_number(tl)));
    }
    db_quota_rows_free(&q);
    if (rs->err.nfields) {
        rs->err.status = MHD_HTTP_UNPROCESSABLE_CONTENT;
        return api_fail_fields(rs);
    }
    return 0;
}

int api_quota_project_put(struct req *rq, struct resp *rs)
{
    char id[37];
    struct parsed p;
    int e = project_id(rq, rs, id);
    if (e)
        return e;
    if (!parse_body(rq->json, false, rs, &p)) {
        e = api_fail_fields(rs);
        goto out;
    }
    e = check_tenant_limits(rq, rs, &p);
    if (!e)
        e = db_quota_project_put(rq->db, rq->tenant.id, id, sbuf_str(&p.names),
                                 sbuf_str(&p.limits));
    if (!e) {
        resp_audit(rs, "project_quota", req_param(rq, "project"), json_deep_copy(rq->json));
        e = document(rq, id, rs, MHD_HTTP_OK);
    }
out:
    parsed_free(&p);
    return e;
}

bool api_quota_project_resource(const char *name)
{
    return is_resource(name, false);
}
