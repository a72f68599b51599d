/*
 * templates.h - job templates (docs/templates.md): the platform's
 * (/api/v1/templates: platform admins write, every signed-in user reads)
 * and a tenant's (/api/v1/tenants/{tenant}/templates: its admins write, its
 * readers read), and a submit from one (api_template_expand).
 */
#ifndef AIDC_API_TEMPLATES_H
#define AIDC_API_TEMPLATES_H

#include "../server/request.h"

#define TEMPLATE_MAX_PER_OWNER 200 /* templates of the platform, of one tenant */

/* The routes of both: a tenant's when the path names one (rq->tenant), else the platform's. */
int api_template_list(struct req *rq, struct resp *rs);
int api_template_create(struct req *rq, struct resp *rs);
int api_template_get(struct req *rq, struct resp *rs);
int api_template_update(struct req *rq, struct resp *rs);
int api_template_delete(struct req *rq, struct resp *rs);

/*
 * A submit body naming a template ({"template": name, "parameters": {…},
 * …overrides}): rq->json replaced by the job body the template renders in
 * the request's tenant (its own template of that name, else the
 * platform's), the body's other fields over the template's (env merged by
 * variable). kind is what the route starts: "batch" (POST …/jobs) or
 * "interactive" (POST …/sessions); a template of the other kind is a 422.
 * A body without "template" is left as it is. 0, or the problem in rs
 * (parameters unknown, missing, of the wrong type or out of bounds: 422
 * naming "parameters.<name>").
 */
int api_template_expand(struct req *rq, struct resp *rs, const char *kind);

#endif
