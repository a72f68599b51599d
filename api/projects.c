/* projects.c - projects, the unit jobs, quotas and usage are grouped by. */
#include "projects.h"

#include "../db/projects.h"
#include "../lib/err.h"
#include "../lib/jsonout.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "paging.h"

#include <microhttpd.h>

static const struct vfield create_fields[] = {
    {"slug", V_STRING, V_REQUIRED, 0, 0, validate_slug, PROBLEM_V_SLUG},
    {"name", V_STRING, V_REQUIRED, 1, 200, NULL, 0},
    {"description", V_STRING, V_NULLABLE, 0, 4000, NULL, 0},
};

static const struct vfield update_fields[] = {
    {"name", V_STRING, 0, 1, 200, NULL, 0},
    {"description", V_STRING, 0, 0, 4000, NULL, 0},
    /* the PI (docs/allocations.md): a member's user name, null for none */
    {"pi", V_STRING, V_NULLABLE, 1, 63, validate_username, PROBLEM_V_USERNAME},
};

static int project_param(struct req *rq, struct resp *rs, const char **out)
{
    *out = req_param(rq, "project");
    if (!validate_slug(*out)) {
        api_field_problem(rs, "project", PROBLEM_V_SLUG, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}

/* Projects are always read within their tenant: name it without a join. */
static json_t *with_tenant(const struct req *rq, json_t *project)
{
    json_object_set_new(project, "tenant", json_string(rq->tenant.slug));
    return project;
}

/* project slug of rq's tenant, for a problem's params */
static json_t *project_params(const struct req *rq, const char *slug)
{
    return json_pack("{s:s, s:s}", "project", slug, "tenant",
                     rq->tenant.slug ? rq->tenant.slug : "");
}

static int not_found(struct req *rq, struct resp *rs, const char *slug)
{
    return api_problem(rs, PROBLEM_PROJECT_NOT_FOUND, project_params(rq, slug));
}

int api_project_create(struct req *rq, struct resp *rs)
{
    if (!validate_object(rq->json, create_fields, 3, rs))
        return api_fail_fields(rs);
    const char *slug = vstr(rq->json, "slug");
    json_t *out = NULL;
    int e = db_project_create(rq->db, rq->tenant.id, slug, vstr(rq->json, "name"),
                              vstr(rq->json, "description"), rq->actor.user_id, &out);
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_PROJECT_EXISTS, project_params(rq, slug));
    if (e)
        return e;
    char *loc = xasprintf("/api/v1/tenants/%s/projects/%s", rq->tenant.slug, slug);
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    resp_audit(rs, "project", json_string_value(json_object_get(out, "id")),
               json_pack("{s:s, s:O}", "slug", slug, "name", json_object_get(out, "name")));
    return resp_json(rs, MHD_HTTP_CREATED, with_tenant(rq, out));
}

int api_project_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    e = db_project_list(rq->db, rq->tenant.id, pg.after, pg.limit, &pg.rows);
    if (!e)
        e = paging_page(rs, &pg);
    if (!e) {
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(rs->body, "items"), i, item) with_tenant(rq, item);
    }
    paging_free(&pg);
    return e;
}

int api_project_get(struct req *rq, struct resp *rs)
{
    const char *slug;
    int e = project_param(rq, rs, &slug);
    if (e)
        return e;
    struct sbuf out = SBUF_INIT;
    sbuf_reserve(&out, 512); /* a project's answer: one allocation */
    e = db_project_get(rq->db, rq->tenant.id, slug, &out);
    if (!e && rq->tenant.slug && !jsonout_object_add_string(&out, "tenant", rq->tenant.slug))
        e = AIDC_EINTERNAL;
    if (!e)
        return resp_json_text(rs, MHD_HTTP_OK, &out);
    sbuf_free(&out);
    return e == AIDC_ENOTFOUND ? not_found(rq, rs, slug) : e;
}

int api_project_update(struct req *rq, struct resp *rs)
{
    const char *slug;
    int e = project_param(rq, rs, &slug);
    if (e)
        return e;
    if (!validate_object(rq->json, update_fields, 3, rs))
        return api_fail_fields(rs);
    if (json_object_size(rq->json) == 0)
        return api_problem(rs, PROBLEM_NOTHING_TO_CHANGE, NULL);
    char pi_id[37] = "";
    const char *pi = vstr(rq->json, "pi");
    if (pi) {
        e = db_project_pi_user(rq->db, rq->tenant.id, pi, pi_id);
        if (e == AIDC_ENOTFOUND)
            return api_problem(rs, PROBLEM_PROJECT_PI_NOT_MEMBER,
                               json_pack("{s:s, s:s}", "username", pi, "tenant", rq->tenant.slug));
        if (e)
            return e;
    }
    json_t *out = NULL;
    e = db_project_update(rq->db, rq->tenant.id, slug, vstr(rq->json, "name"),
                          vstr(rq->json, "description"), vhas(rq->json, "pi"), pi ? pi_id : NULL,
                          &out);
    if (e == AIDC_ENOTFOUND)
        return not_found(rq, rs, slug);
    if (e)
        return e;
    resp_audit(rs, "project", json_string_value(json_object_get(out, "id")),
               json_deep_copy(rq->json));
    return resp_json(rs, MHD_HTTP_OK, with_tenant(rq, out));
}

int api_project_delete(struct req *rq, struct resp *rs)
{
    const char *slug;
    int e = project_param(rq, rs, &slug);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_project_delete(rq->db, rq->tenant.id, slug, &out);
    if (e == AIDC_ENOTFOUND)
        return not_found(rq, rs, slug);
    if (e)
        return e;
    if (json_is_true(json_object_get(out, "busy"))) {
        json_decref(out);
        return api_problem(rs, PROBLEM_PROJECT_BUSY, project_params(rq, slug));
    }
    resp_audit(rs, "project", json_string_value(json_object_get(out, "id")),
               json_pack("{s:s}", "slug", slug));
    json_decref(out);
    return resp_json(rs, MHD_HTTP_NO_CONTENT, NULL);
}
