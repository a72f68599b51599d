/* gauges.c - the platform-wide gauges of /metrics (see gauges.h). */
#include "gauges.h"

#define ACTIVE "('admitted', 'pending', 'running')"

/* Every part is an aggregate over an indexed or small set: a scrape must stay cheap
 * with 100,000 queued jobs (the partial index jobs_active serves the job counts). */
static const struct db_stmt st_gauges = {
    "ops_gauges",
    "SELECT 'aidc_jobs_queued', 'gpu_type', coalesce(nullif(gpu_type, ''), 'none'), NULL, NULL,"
    "  count(*)::float8 FROM jobs WHERE state = 'queued' GROUP BY 3"
    " UNION ALL SELECT 'aidc_jobs_active', 'state', s, NULL, NULL, count(j.id)::float8"
    "  FROM unnest(ARRAY['admitted', 'pending', 'running']) s LEFT JOIN jobs j ON j.state = s"
    "  GROUP BY s"
    " UNION ALL SELECT 'aidc_gpus_total', 'gpu_type', substr(i.resource, 5), NULL, NULL,"
    "  sum(CASE WHEN c.healthy THEN i.total ELSE 0 END)::float8"
    "  FROM cluster_inventory i JOIN clusters c ON c.id = i.cluster_id"
    "  WHERE i.resource LIKE 'gpu:%' GROUP BY 3"
    " UNION ALL SELECT 'aidc_gpus_allocated', 'gpu_type', gpu_type, NULL, NULL,"
    "  sum(gpus * nodes)::float8 FROM jobs WHERE state IN " ACTIVE " AND gpus > 0 GROUP BY 3"
    " UNION ALL SELECT 'aidc_gpus_faulty', 'cluster', cluster, 'gpu_type', gpu_type,"
    "  gpus::float8 FROM aidc_gpus_faulty()"
    " UNION ALL SELECT 'aidc_cluster_healthy', 'cluster', name, NULL, NULL,"
    "  CASE WHEN healthy THEN 1 ELSE 0 END::float8 FROM clusters"
    " UNION ALL SELECT 'aidc_outbox_backlog', NULL, NULL, NULL, NULL, count(*)::float8"
    "  FROM outbox WHERE delivered_at IS NULL"
    " UNION ALL SELECT 'aidc_outbox_oldest_seconds', NULL, NULL, NULL, NULL,"
    "  coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8"
    "  FROM outbox WHERE delivered_at IS NULL"
    " UNION ALL SELECT 'aidc_audit_seal_lag_seconds', NULL, NULL, NULL, NULL,"
    "  coalesce(extract(epoch FROM clock_timestamp() - min(e.ts)), 0)::float8"
    "  FROM aidc_audit_head() h JOIN audit_events e"
    "    ON e.ts >= h.upto_ts AND (e.ts, e.id) > (h.upto_ts, h.upto_id)"
    " UNION ALL SELECT 'aidc_audit_checkpoint_age_seconds', NULL, NULL, NULL, NULL,"
    "  extract(epoch FROM clock_timestamp() - max(ts))::float8 FROM audit_checkpoints"
    "  HAVING count(*) > 0"
    " UNION ALL SELECT 'aidc_metering_lag_seconds', NULL, NULL, NULL, NULL,"
    "  coalesce(extract(epoch FROM now() - min(ended_at)), 0)::float8 FROM job_runs"
    "  WHERE (metered_to IS NULL OR ended_at IS NULL OR metered_to < ended_at)"
    "    AND ended_at IS NOT NULL"
    " UNION ALL SELECT 'aidc_registry_sync_ok', 'registry', name, NULL, NULL,"
    "  CASE WHEN last_sync_ok THEN 1 ELSE 0 END::float8 FROM registries"
    "  WHERE last_sync_at IS NOT NULL",
    0};

const struct db_stmt *const db_gauges_stmts[] = {&st_gauges, NULL};

PGresult *db_gauges(struct db *db, int *err)
{
    return db_query(db, &st_gauges, NULL, err);
}
