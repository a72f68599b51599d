/*
 * templates.h - job templates (migrations/0023_templates.sql): the platform's
 * (tenant NULL) and a tenant's, by name. A template reads as its spec
 * flattened beside name, scope ("platform" or "tenant"), created_by,
 * created_at and updated_at. Row-level security decides who reads and
 * writes which; these functions only say what was found.
 */
#ifndef AIDC_DB_TEMPLATES_H
#define AIDC_DB_TEMPLATES_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>

extern const struct db_stmt *const db_templates_stmts[];

/* Templates of tenant (NULL: the platform's) after name `after` (NULL: from
 * the first), by name, at most limit + 1 (the paging's look-ahead). */
int db_template_list(struct db *db, const char *tenant_id, const char *after, int limit,
                     struct db_rows *out);
/* Template name of tenant (NULL: the platform) into *out (new); AIDC_ENOTFOUND. */
int db_template_get(struct db *db, const char *tenant_id, const char *name, json_t **out);
/*
 * The template a submit in tenant means by name: the tenant's own, else the
 * platform's (new, into *out); AIDC_ENOTFOUND when neither exists.
 */
int db_template_find(struct db *db, const char *tenant_id, const char *name, json_t **out);
/*
 * Create template name of tenant (NULL: platform) with spec (compact JSON)
 * unless the owner has max templates already (AIDC_ETOOBIG); AIDC_ECONFLICT
 * when the name is taken. *out: the template (new).
 */
int db_template_create(struct db *db, const char *tenant_id, const char *name, const char *spec,
                       const char *created_by, int max, json_t **out);
/* Replace the spec of template name; AIDC_ENOTFOUND. *out: the template (new). */
int db_template_update(struct db *db, const char *tenant_id, const char *name, const char *spec,
                       json_t **out);
/* Delete template name; AIDC_ENOTFOUND. */
int db_template_delete(struct db *db, const char *tenant_id, const char *name);

#endif
