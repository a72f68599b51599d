/*
 * tenants.c - tenants and memberships. The dispatcher has already resolved
 * {tenant} (404 for tenants the actor may not see) and checked the role;
 * row-level security repeats both checks in the database.
 */
#include "tenants.h"

#include "../db/jobs.h"
#include "../db/tenants.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../server/auth.h"
#include "../server/validate.h"
#include "approvals.h"
#include "paging.h"

#include <microhttpd.h>
#include <string.h>

static const struct vfield create_fields[] = {
    {"slug", V_STRING, V_REQUIRED, 0, 0, validate_slug, PROBLEM_V_SLUG},
    {"name", V_STRING, V_REQUIRED, 1, 200, NULL, 0},
};

static const struct vfield update_fields[] = {
    {"name", V_STRING, 0, 1, 200, NULL, 0},
    {"suspended", V_BOOL, 0, 0, 0, NULL, 0},
    {"members_see_all_jobs", V_BOOL, 0, 0, 0, NULL, 0},
};

static bool is_tenant_role(const char *s)
{
    return auth_tenant_role_parse(s) != TR_NONE;
}

static const struct vfield member_fields[] = {
    {"role", V_STRING, V_REQUIRED, 0, 0, is_tenant_role, PROBLEM_TENANT_ROLE},
};

/* The {tenant} of the path (resolved by the dispatcher, so never NULL in practice). */
static const char *tenant_slug(const struct req *rq)
{
    return rq->tenant.slug ? rq->tenant.slug : "";
}

/* The tenant vanished between the dispatcher's check and the handler's statement. */
static int tenant_not_found(const struct req *rq, struct resp *rs)
{
    return api_problem(rs, PROBLEM_TENANT_NOT_FOUND, json_pack("{s:s}", "tenant", tenant_slug(rq)));
}

int api_tenant_create(struct req *rq, struct resp *rs)
{
    if (!validate_object(rq->json, create_fields, 2, rs))
        return api_fail_fields(rs);
    const char *slug = vstr(rq->json, "slug");
    json_t *out = NULL;
    int e = db_tenant_create(rq->db, slug, vstr(rq->json, "name"), &out);
    if (e == AIDC_ECONFLICT) /* deleted tenants keep their slug (their records name it) */
        return api_problem(rs, PROBLEM_TENANT_SLUG_TAKEN, json_pack("{s:s}", "tenant", slug));
    if (e)
        return e;
    char *loc = xasprintf("/api/v1/tenants/%s", slug);
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    resp_audit(rs, "tenant", slug, json_deep_copy(out));
    return resp_json(rs, MHD_HTTP_CREATED, out);
}

int api_tenant_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    e = db_tenant_list(rq->db, pg.after, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

int api_tenant_get(struct req *rq, struct resp *rs)
{
    json_t *out = NULL;
    int e = db_tenant_get(rq->db, rq->tenant.id, &out);
    if (e == AIDC_ENOTFOUND)
        return tenant_not_found(rq, rs);
    return e ? e : resp_json(rs, MHD_HTTP_OK, out);
}

static const char *bool_text(const json_t *v)
{
    return v ? (json_is_true(v) ? "true" : "false") : NULL;
}

/*
 * A platform admin changes anything; a tenant admin only what is the
 * tenant's own business (whether its members see each other's jobs).
 */
int api_tenant_update(struct req *rq, struct resp *rs)
{
    if (!validate_object(rq->json, update_fields, 3, rs))
        return api_fail_fields(rs);
    if (json_object_size(rq->json) == 0)
        return api_problem(rs, PROBLEM_NOTHING_TO_CHANGE, NULL);
    json_t *sj = json_object_get(rq->json, "suspended");
    if (!(rq->actor.roles & GR_PLATFORM_ADMIN) && (sj || json_object_get(rq->json, "name")))
        return api_problem(rs, PROBLEM_TENANT_PLATFORM_FIELDS, NULL);
    json_t *out = NULL;
    int e = db_tenant_update(rq->db, rq->tenant.id, vstr(rq->json, "name"), bool_text(sj),
                             bool_text(json_object_get(rq->json, "members_see_all_jobs")), &out);
    if (e == AIDC_ENOTFOUND)
        return tenant_not_found(rq, rs);
    if (e)
        return e;
    resp_audit(rs, "tenant", rq->tenant.slug, json_deep_copy(rq->json));
    return resp_json(rs, MHD_HTTP_OK, out);
}

/* Cancel every job of the tenant that has not ended; *n counts them. */
static int cancel_jobs(struct req *rq, int *n)
{
    struct db_job_ids ids = {0};
    int e = db_job_active(rq->db, rq->tenant.id, &ids);
    *n = 0;
    for (size_t i = 0; !e && i < ids.n; i++) {
        char state[16] = "";
        json_t *job = NULL;
        /* the job cancel path itself: queued jobs end now, the others get a
         * stop request the dispatcher carries to their cluster */
        e = db_job_cancel(rq->db, rq->tenant.id, ids.v[i], "tenant deletion", state, sizeof state,
                          &job);
        json_decref(job);
        if (e == AIDC_ECONFLICT || e == AIDC_ENOTFOUND)
            e = 0; /* it ended meanwhile */
        else if (!e)
            (*n)++;
    }
    db_job_ids_free(&ids);
    return e;
}

/*
 * Needs dual approval. Once approved: a soft delete (the rows stay for the
 * audit retention period; see db_tenant_delete) and a cancel of its jobs.
 */
int api_tenant_delete(struct req *rq, struct resp *rs)
{
    char summary[128];
    snprintf(summary, sizeof summary, "delete tenant \"%s\"", rq->tenant.slug);
    int e = approval_required(rq, rs, summary);
    if (e)
        return e < 0 ? e : 0;
    json_t *out = NULL;
    e = db_tenant_delete(rq->db, rq->tenant.id, &out);
    if (e == AIDC_ENOTFOUND)
        return tenant_not_found(rq, rs);
    if (e)
        return e;
    int cancelled = 0;
    e = cancel_jobs(rq, &cancelled);
    if (e) {
        json_decref(out);
        return e;
    }
    json_object_set_new(out, "jobs_cancelled", json_integer(cancelled));
    resp_audit(rs, "tenant", rq->tenant.slug,
               json_pack("{s:s, s:i}", "tenant_id", rq->tenant.id, "jobs_cancelled", cancelled));
    return resp_json(rs, MHD_HTTP_OK, out);
}

int api_member_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    e = db_member_list(rq->db, rq->tenant.id, pg.after, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

static int username_param(struct req *rq, struct resp *rs, const char **out)
{
    *out = req_param(rq, "username");
    if (!validate_username(*out)) {
        api_field_problem(rs, "username", PROBLEM_V_USERNAME, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}

int api_member_put(struct req *rq, struct resp *rs)
{
    const char *username;
    int e = username_param(rq, rs, &username);
    if (e)
        return e;
    if (!validate_object(rq->json, member_fields, 1, rs))
        return api_fail_fields(rs);
    const char *role = vstr(rq->json, "role");
    json_t *out = NULL;
    bool created = false;
    char *previous = NULL;
    e = db_member_put(rq->db, rq->tenant.id, username, role, &out, &created, &previous);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_USER_NOT_FOUND, json_pack("{s:s}", "username", username));
    if (e)
        return e;
    resp_audit(rs, "membership", username,
               json_pack("{s:s, s:s, s:s?}", "username", username, "role", role, "previous_role",
                         previous));
    free(previous);
    return resp_json(rs, MHD_HTTP_OK, out);
}

int api_member_delete(struct req *rq, struct resp *rs)
{
    const char *username;
    int e = username_param(rq, rs, &username);
    if (e)
        return e;
    e = db_member_delete(rq->db, rq->tenant.id, username);
    if (e == AIDC_ENOTFOUND)
        return api_problem(
            rs, PROBLEM_TENANT_NOT_MEMBER,
            json_pack("{s:s, s:s}", "username", username, "tenant", tenant_slug(rq)));
    if (e)
        return e;
    resp_audit(rs, "membership", username, json_pack("{s:s}", "username", username));
    return resp_json(rs, MHD_HTTP_NO_CONTENT, NULL);
}
