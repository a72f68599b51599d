/*
 * projects.h - projects of a tenant. Deleted projects are kept (marked
 * deleted_at) for the jobs, usage and invoices that name them; their slug
 * becomes free again.
 */
#ifndef AIDC_DB_PROJECTS_H
#define AIDC_DB_PROJECTS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>

/* AIDC_ECONFLICT: slug taken in this tenant. */
int db_project_create(struct db *db, const char *tenant_id, const char *slug, const char *name,
                      const char *description, const char *created_by, json_t **out);
/* Up to limit+1 live projects with slug > after, by slug. */
int db_project_list(struct db *db, const char *tenant_id, const char *after, int limit,
                    struct db_rows *out);
/* A live project's JSON object appended to out as text (rowjson_query_one_text):
 * the busiest read of the benchmarks, answered without a tree. */
struct sbuf;
int db_project_get(struct db *db, const char *tenant_id, const char *slug, struct sbuf *out);
/* name/description NULL = keep; set_pi: make pi_user_id (NULL: none) the PI. */
int db_project_update(struct db *db, const char *tenant_id, const char *slug, const char *name,
                      const char *description, bool set_pi, const char *pi_user_id, json_t **out);
/* The id (out[37]) of username when it may be a PI in the tenant (a member or admin);
 * AIDC_ENOTFOUND. */
int db_project_pi_user(struct db *db, const char *tenant_id, const char *username, char *id_out);
/*
 * Mark deleted unless it has unfinished jobs; *out receives {"id", "busy"}
 * (busy: not deleted). AIDC_ENOTFOUND when absent.
 */
int db_project_delete(struct db *db, const char *tenant_id, const char *slug, json_t **out);

/* The id of a live project (out[37]); AIDC_ENOTFOUND. */
int db_project_id(struct db *db, const char *tenant_id, const char *slug, char *id_out);

extern const struct db_stmt *const db_projects_stmts[];

#endif
