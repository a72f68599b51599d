/*
 * templates.c - job templates: the platform's and a tenant's, and a submit
 * from one (see templates.h). The two sets share every handler: the
 * platform's are the rows without a tenant. Who may write which is said
 * twice: by the route table (platform_admin; the tenant's admins) and by
 * row-level security (migrations/0023_templates.sql).
 */
#include "templates.h"

#include "../db/templates.h"
#include "../lib/err.h"
#include "../lib/jobtemplate.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "paging.h"
#include "tplcheck.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The owner of the route's templates: the route's tenant, or NULL (the platform). */
static const char *owner(const struct req *rq)
{
    return rq->tenant.id[0] ? rq->tenant.id : NULL;
}

static int not_found(struct resp *rs, const char *name)
{
    return api_problem(rs, PROBLEM_TEMPLATE_NOT_FOUND,
                       json_pack("{s:s%}", "template", name, sbuf_utf8_prefix(name, 64)));
}

static int name_param(struct req *rq, struct resp *rs, const char **out)
{
    *out = req_param(rq, "name");
    if (!*out || !tplcheck_name_valid(*out)) {
        api_field_problem(rs, "name", PROBLEM_V_SLUG, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}

int api_template_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    e = db_template_list(rq->db, owner(rq), pg.after, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

int api_template_get(struct req *rq, struct resp *rs)
{
    const char *name;
    json_t *o = NULL;
    int e = name_param(rq, rs, &name);
    if (!e) {
        e = db_template_get(rq->db, owner(rq), name, &o);
        if (e == AIDC_ENOTFOUND)
            return not_found(rs, name);
    }
    return e ? e : resp_json(rs, MHD_HTTP_OK, o);
}

/* The spec to store, as compact JSON; NULL with the problem in rs. */
static char *checked_spec(struct req *rq, struct resp *rs, bool name_required)
{
    json_t *spec = tplcheck_template(rq->json, name_required, rs);
    if (!spec)
        return NULL;
    char *s = json_dumps(spec, JSON_COMPACT);
    json_decref(spec);
    return s;
}

int api_template_create(struct req *rq, struct resp *rs)
{
    char *spec = checked_spec(rq, rs, true);
    if (!spec)
        return rs->err.nfields ? api_fail_fields(rs) : api_status_err(rs->err.status);
    const char *name = vstr(rq->json, "name");
    json_t *o = NULL;
    int e = db_template_create(rq->db, owner(rq), name, spec, rq->actor.username,
                               TEMPLATE_MAX_PER_OWNER, &o);
    free(spec);
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_TEMPLATE_EXISTS, json_pack("{s:s}", "template", name));
    if (e == AIDC_ETOOBIG)
        return api_problem(rs, PROBLEM_TEMPLATE_TOO_MANY,
                           json_pack("{s:i}", "max", TEMPLATE_MAX_PER_OWNER));
    if (e)
        return e;
    char *loc = owner(rq) ? xasprintf("/api/v1/tenants/%s/templates/%s", rq->tenant.slug, name)
                          : xasprintf("/api/v1/templates/%s", name);
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    resp_audit(rs, "template", name,
               json_pack("{s:s}", "scope", owner(rq) ? "tenant" : "platform"));
    return resp_json(rs, MHD_HTTP_CREATED, o);
}

/* PUT replaces the template as a whole; its name stays. */
int api_template_update(struct req *rq, struct resp *rs)
{
    const char *name;
    int e = name_param(rq, rs, &name);
    if (e)
        return e;
    const char *given = vstr(rq->json, "name");
    if (given && strcmp(given, name) != 0) {
        api_field_problem(rs, "name", PROBLEM_TEMPLATE_NAME_FIXED, NULL);
        return api_fail_fields(rs);
    }
    char *spec = checked_spec(rq, rs, false);
    if (!spec)
        return rs->err.nfields ? api_fail_fields(rs) : api_status_err(rs->err.status);
    json_t *o = NULL;
    e = db_template_update(rq->db, owner(rq), name, spec, &o);
    free(spec);
    if (e == AIDC_ENOTFOUND)
        return not_found(rs, name);
    if (e)
        return e;
    resp_audit(rs, "template", name,
               json_pack("{s:s}", "scope", owner(rq) ? "tenant" : "platform"));
    return resp_json(rs, MHD_HTTP_OK, o);
}

int api_template_delete(struct req *rq, struct resp *rs)
{
    const char *name;
    int e = name_param(rq, rs, &name);
    if (e)
        return e;
    e = db_template_delete(rq->db, owner(rq), name);
    if (e == AIDC_ENOTFOUND)
        return not_found(rs, name);
    if (e)
        return e;
    resp_audit(rs, "template", name,
               json_pack("{s:s}", "scope", owner(rq) ? "tenant" : "platform"));
    return resp_json(rs, MHD_HTTP_NO_CONTENT, NULL);
}

/* ---- a submit from a template ------------------------------------------------------- */

struct param_report {
    struct resp *rs;
    const char *template;
};

static json_t *bound_of(const json_t *decl, const char *key)
{
    const json_t *v = json_object_get(decl, key);
    return v ? json_deep_copy(v) : json_null();
}

static char *choices_text(const json_t *decl)
{
    struct sbuf sb = SBUF_INIT;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(decl, "choices"), i, c)
        sbuf_printf(&sb, "%s%s", i ? ", " : "", json_string_value(c) ? json_string_value(c) : "");
    return sbuf_steal(&sb);
}

/* One bad parameter as a 422 field error "parameters.<name>". */
static void param_problem(void *arg, const char *name, enum jobtemplate_bad bad, const json_t *decl)
{
    struct param_report *r = arg;
    char field[96];
    int n = (int)sbuf_utf8_prefix(name, 64);
    snprintf(field, sizeof field, "parameters.%.*s", n, name);
    json_t *p = json_pack("{s:s%}", "name", name, (size_t)n);
    enum problem pr = PROBLEM_TEMPLATE_PARAM_TYPE;
    switch (bad) {
    case JT_OK:
        return;
    case JT_UNKNOWN:
        pr = PROBLEM_TEMPLATE_PARAM_UNKNOWN;
        json_object_set_new(p, "template", json_string(r->template));
        break;
    case JT_REQUIRED:
        pr = PROBLEM_TEMPLATE_PARAM_REQUIRED;
        break;
    case JT_TYPE:
        json_object_set(p, "type", json_object_get(decl, "type"));
        break;
    case JT_BELOW_MIN:
        pr = PROBLEM_TEMPLATE_PARAM_MIN;
        json_object_set_new(p, "min", bound_of(decl, "min"));
        break;
    case JT_ABOVE_MAX:
        pr = PROBLEM_TEMPLATE_PARAM_MAX;
        json_object_set_new(p, "max", bound_of(decl, "max"));
        break;
    case JT_TOO_LONG:
        pr = PROBLEM_TEMPLATE_PARAM_TOO_LONG;
        json_object_set_new(p, "max", json_integer(JOBTEMPLATE_MAX_VALUE));
        break;
    case JT_PATTERN:
        pr = PROBLEM_TEMPLATE_PARAM_PATTERN;
        json_object_set(p, "pattern", json_object_get(decl, "pattern"));
        break;
    case JT_NOT_CHOICE: {
        pr = PROBLEM_TEMPLATE_PARAM_CHOICE;
        char *c = choices_text(decl);
        json_object_set_new(p, "choices", json_string(c));
        free(c);
        break;
    }
    }
    api_field_problem(r->rs, field, pr, p);
}

/* The body's own fields over the rendered ones. */
static void override(json_t *job, const json_t *body)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v)
    {
        if (strcmp(k, "template") == 0 || strcmp(k, "parameters") == 0)
            continue;
        json_t *mine = json_object_get(job, k);
        if (strcmp(k, "env") == 0 && json_is_object(v) && json_is_object(mine)) {
            json_object_update(mine, v);
            continue;
        }
        /* a job has a command or a script: the one given replaces the template's */
        if (strcmp(k, "command") == 0 && !json_is_null(v))
            json_object_del(job, "script");
        if (strcmp(k, "script") == 0 && !json_is_null(v))
            json_object_del(job, "command");
        json_object_set(job, k, v);
    }
}

/* Template name as rq's tenant sees it, checked for kind; 0 or the problem. */
static int find(struct req *rq, struct resp *rs, const char *name, const char *kind, json_t **tpl)
{
    int e = db_template_find(rq->db, rq->tenant.id, name, tpl);
    if (e == AIDC_ENOTFOUND) {
        api_field_problem(rs, "template", PROBLEM_TEMPLATE_UNKNOWN,
                          json_pack("{s:s, s:s}", "template", name, "tenant", rq->tenant.slug));
        return api_fail_fields(rs);
    }
    if (e)
        return e;
    const char *k = vstr(*tpl, "kind") ? vstr(*tpl, "kind") : "batch";
    if (strcmp(k, kind) != 0) {
        api_field_problem(rs, "template",
                          strcmp(k, "interactive") == 0 ? PROBLEM_TEMPLATE_IS_INTERACTIVE
                                                        : PROBLEM_TEMPLATE_IS_BATCH,
                          json_pack("{s:s}", "template", name));
        return api_fail_fields(rs);
    }
    return 0;
}

int api_template_expand(struct req *rq, struct resp *rs, const char *kind)
{
    const json_t *t = json_object_get(rq->json, "template");
    if (!t)
        return 0;
    const char *name = json_string_value(t);
    if (!name || !tplcheck_name_valid(name))
        api_field_problem(rs, "template", PROBLEM_V_SLUG, NULL);
    const json_t *given = json_object_get(rq->json, "parameters");
    if (given && !json_is_null(given) && !json_is_object(given))
        api_field_problem(rs, "parameters", PROBLEM_V_TYPE_OBJECT, NULL);
    else if (json_object_size(given) > JOBTEMPLATE_MAX_PARAMS) /* one answer, not one per key */
        api_field_problem(rs, "parameters", PROBLEM_TEMPLATE_PARAMS_TOO_MANY,
                          json_pack("{s:i, s:I}", "max", JOBTEMPLATE_MAX_PARAMS, "count",
                                    (json_int_t)json_object_size(given)));
    if (rs->err.nfields)
        return api_fail_fields(rs);
    json_t *tpl = NULL, *values = NULL, *job = NULL;
    int e = find(rq, rs, name, kind, &tpl);
    if (e)
        goto out;
    struct param_report r = {rs, name};
    values = jobtemplate_values(json_object_get(tpl, "parameters"),
                                json_is_object(given) ? given : NULL, param_problem, &r);
    if (!values) {
        e = rs->err.nfields ? api_fail_fields(rs) : AIDC_EINTERNAL;
        goto out;
    }
    bool too_large;
    job = jobtemplate_render(tpl, values, &too_large);
    if (!job) {
        e = too_large ? api_problem(rs, PROBLEM_TEMPLATE_RENDERED_TOO_LARGE,
                                    json_pack("{s:i}", "max", JOBTEMPLATE_MAX_RENDERED))
                      : AIDC_EINTERNAL;
        goto out;
    }
    override(job, rq->json);
    if (strcmp(kind, "interactive") == 0 && !json_object_get(job, "app"))
        json_object_set_new(job, "app",
                            json_string(json_object_get(job, "command") ? "web" : "jupyter"));
    json_decref(rq->json);
    rq->json = job;
    job = NULL;
out:
    json_decref(job);
    json_decref(values);
    json_decref(tpl);
    return e;
}
