/*
 * tplcheck.h - checking a job template as it is written (POST, PUT): its
 * fields, its parameters' declarations, its resources (numbers, or one
 * placeholder of a parameter of the right type) and that every placeholder
 * names a declared parameter. Every problem is a 400 field error, all
 * reported at once. Whether the job it renders is possible is the submit's
 * business (api/templates.c renders it, api/jobs.c checks it as any job).
 */
#ifndef AIDC_TPLCHECK_H
#define AIDC_TPLCHECK_H

#include "../server/request.h"

#include <jansson.h>
#include <stdbool.h>

#define TEMPLATE_MAX_BYTES             65536 /* a template's JSON, all of it */
#define TEMPLATE_MAX_DESCRIPTION       2000  /* characters */
#define TEMPLATE_MAX_PARAM_DESCRIPTION 500

/*
 * Check body (a template; its "name" required when name_required) and
 * return its spec: body less "name", with kind and description defaulted
 * (new). NULL with field errors in rs.
 */
json_t *tplcheck_template(const json_t *body, bool name_required, struct resp *rs);
/* A template's name: a slug (^[a-z][a-z0-9-]{1,62}$). */
bool tplcheck_name_valid(const char *s);

#endif
