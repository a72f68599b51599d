/*
 * quotas.h - tenant and project quotas, and the use that counts against them.
 * Resources: "gpu:<type>", "cpu", "memory_gib", "jobs", "gpu_hours_month",
 * "storage_gib" (tenants only).
 */
#ifndef AIDC_DB_QUOTAS_H
#define AIDC_DB_QUOTAS_H

#include "db.h"

/* Rows (resource, guaranteed, limit) of a tenant's quota. */
int db_quota_tenant_get(struct db *db, const char *tenant_id, PGresult **out);
/* Rows (resource, limit) of a project's quota. */
int db_quota_project_get(struct db *db, const char *project_id, PGresult **out);
/*
 * Rows (resource, used, borrowed) of what a tenant (project_id NULL) or a
 * project uses now: admitted jobs' GPUs per type, cores, GiB, job count, and
 * this month's GPU-hours.
 */
int db_quota_usage(struct db *db, const char *tenant_id, const char *project_id, PGresult **out);
/*
 * Replace a tenant's quota: resources, guaranteed and limits as
 * comma-separated lists of equal length (empty strings: no resources).
 */
int db_quota_tenant_put(struct db *db, const char *tenant_id, const char *resources,
                        const char *guaranteed, const char *limits);
/* Replace a project's quota (resources and limits, comma-separated). */
int db_quota_project_put(struct db *db, const char *tenant_id, const char *project_id,
                         const char *resources, const char *limits);
/*
 * Rows (resource, others_guaranteed, capacity) for every GPU type: what the
 * other tenants are guaranteed, and what all clusters offer. Takes the quota
 * lock first, so concurrent changes are checked one after the other.
 */
int db_quota_capacity(struct db *db, const char *tenant_id, PGresult **out);

extern const struct db_stmt *const db_quotas_stmts[];

#endif
