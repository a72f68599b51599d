/*
 * quotas.h - tenant and project quotas, and the use that counts against them.
 * Resources: "gpu:<type>", "cpu", "memory_gib", "jobs", "gpu_hours_month",
 * "storage_gib" (a tenant's: its images; a project's: its storage space) and
 * "home_storage_gib" (tenants only: each member's home).
 *
 * Other modules read the storage limits with exactly these statements (keep
 * them true): SELECT "limit" FROM project_quotas WHERE project_id=$1 AND
 * resource='storage_gib', and SELECT "limit" FROM tenant_quotas WHERE
 * tenant_id=$1 AND resource='home_storage_gib' (GiB, numeric).
 */
#ifndef AIDC_DB_QUOTAS_H
#define AIDC_DB_QUOTAS_H

#include "db.h"

#include <stddef.h>

/* A resource of a quota: "gpu:<type>", "cpu", ... (see above). */
#define DB_QUOTA_RESOURCE_MAX 48
/* One resource of a quota; a project's has no guarantee (0). */
struct db_quota_row {
    char resource[DB_QUOTA_RESOURCE_MAX];
    double guaranteed, limit;
};
struct db_quota_rows {
    struct db_quota_row *v;
    size_t n;
};
/*
 * What a tenant or a project uses of a resource now, and how much of it is
 * borrowed. Storage spaces' figures are their last measurement's: when it
 * was taken ("" when never, or for other resources) and whether it was whole
 * (1), cut at the walk's bound (0) or not known (-1).
 */
struct db_quota_use {
    char resource[DB_QUOTA_RESOURCE_MAX];
    double used, borrowed;
    char measured_at[24];
    int complete;
};
struct db_quota_uses {
    struct db_quota_use *v;
    size_t n;
};
/* A GPU type: what the other tenants are guaranteed of it, what all clusters offer. */
struct db_quota_capacity {
    char resource[DB_QUOTA_RESOURCE_MAX];
    double others_guaranteed, capacity;
};
struct db_quota_capacities {
    struct db_quota_capacity *v;
    size_t n;
};

/*
 * The rows below are arrays (v[0..n), malloc'd), quotas in resource order;
 * free them with the matching _free, also after a failure.
 */
/* A tenant's quota. */
int db_quota_tenant_get(struct db *db, const char *tenant_id, struct db_quota_rows *out);
/* A project's quota (limits only). */
int db_quota_project_get(struct db *db, const char *project_id, struct db_quota_rows *out);
/* Both of them in one statement (a submit's checks): tenant_id's and its project
 * project_slug's (none for a project that does not exist). */
int db_quota_both_get(struct db *db, const char *tenant_id, const char *project_slug,
                      struct db_quota_rows *tenant, struct db_quota_rows *project);
/* Send db_quota_both_get's statement ahead (db_prefetch). */
void db_quota_both_prefetch(struct db *db, const char *tenant_id, const char *project_slug);
void db_quota_rows_free(struct db_quota_rows *rows);
/*
 * What a tenant (project_id NULL) or a project uses now: admitted jobs' GPUs
 * per type, cores, GiB, job count, this month's GPU-hours, and storage in
 * GiB (a tenant: its images' as storage_gib and its largest home as
 * home_storage_gib; a project: its space's as storage_gib).
 */
int db_quota_usage(struct db *db, const char *tenant_id, const char *project_id,
                   struct db_quota_uses *out);
void db_quota_uses_free(struct db_quota_uses *uses);
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
 * Every GPU type with what the other tenants are guaranteed of it and what
 * all clusters offer. Takes the quota lock first, so concurrent changes are
 * checked one after the other.
 */
int db_quota_capacity(struct db *db, const char *tenant_id, struct db_quota_capacities *out);
void db_quota_capacities_free(struct db_quota_capacities *caps);

extern const struct db_stmt *const db_quotas_stmts[];

#endif
