/*
 * tenants.h - tenants and their members. Run inside a request transaction:
 * row-level security limits every statement to what the actor may see.
 */
#ifndef AIDC_DB_TENANTS_H
#define AIDC_DB_TENANTS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>

/*
 * Tenant id (out[37]) and suspension of slug; AIDC_ENOTFOUND if not visible
 * or deleted. Deleted tenants are left out of the list, get and update too.
 */
int db_tenant_resolve(struct db *db, const char *slug, char *id_out, bool *suspended);
/* Create a tenant; *out is the new tenant object. AIDC_ECONFLICT: slug taken. */
int db_tenant_create(struct db *db, const char *slug, const char *name, json_t **out);
/* Up to limit+1 tenants with slug > after (NULL: from the start), by slug. */
int db_tenant_list(struct db *db, const char *after, int limit, struct db_rows *out);
int db_tenant_get(struct db *db, const char *tenant_id, json_t **out);
/* Change name, suspended, members_see_all_jobs ("true"/"false"; NULL = keep). */
int db_tenant_update(struct db *db, const char *tenant_id, const char *name,
                     const char *suspended, const char *members_see_all_jobs, json_t **out);

/*
 * Soft-delete a tenant (deleted_at set, suspended): its rows stay, it
 * vanishes from every lookup; its slug stays taken. *out is the tenant with
 * deleted_at. AIDC_ENOTFOUND when it is gone already.
 */
int db_tenant_delete(struct db *db, const char *tenant_id, json_t **out);

/* Members of a tenant with username > after, by username (limit+1 rows). */
int db_member_list(struct db *db, const char *tenant_id, const char *after, int limit,
                   struct db_rows *out);
/*
 * Give username the role in the tenant (adding or changing the membership).
 * AIDC_ENOTFOUND when no such user. *created tells whether it is new.
 */
int db_member_put(struct db *db, const char *tenant_id, const char *username, const char *role,
                  json_t **out, bool *created, char **previous_role);
/* Remove username from the tenant; AIDC_ENOTFOUND when not a member. */
int db_member_delete(struct db *db, const char *tenant_id, const char *username);

extern const struct db_stmt *const db_tenants_stmts[];

#endif
