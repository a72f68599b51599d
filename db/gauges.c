/* gauges.c - the platform-wide gauges of /metrics (see gauges.h). */
#include "gauges.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "pgcol.h"

#include <stdlib.h>

#define ACTIVE "('admitted', 'pending', 'running')"

enum gauge_col { GC_METRIC, GC_LABEL1, GC_VALUE1, GC_LABEL2, GC_VALUE2, GC_VALUE };
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
    "  coalesce(extract(epoch FROM clock_timestamp() - min(u.ts)), 0)::float8"
    "  FROM (SELECT e.ts FROM aidc_audit_head() h JOIN audit_events e"
    "    ON e.ts >= h.upto_ts AND (e.ts, e.id) > (h.upto_ts, h.upto_id)"
    "   UNION ALL SELECT ts FROM audit_inbox) u"
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

void db_gauges_free(struct db_gauges *g)
{
    for (size_t i = 0; g->v && i < g->n; i++) {
        free(g->v[i].metric);
        for (int l = 0; l < DB_GAUGE_LABELS; l++) {
            free(g->v[i].label[l]);
            free(g->v[i].label_value[l]);
        }
        free(g->v[i].value);
    }
    free(g->v);
    g->v = NULL;
    g->n = 0;
}

/* A text column, "" for NULL (as the exposition text showed a NULL before). */
static char *text_or_empty(const PGresult *r, int row, int col)
{
    char *s = pgcol_text(r, row, col);
    return s ? s : xstrdup("");
}

int db_gauges(struct db *db, struct db_gauges *out)
{
    *out = (struct db_gauges){0};
    int e;
    PGresult *r = db_query(db, &st_gauges, NULL, &e);
    if (!r)
        return e;
    static const int names[DB_GAUGE_LABELS] = {GC_LABEL1, GC_LABEL2};
    static const int values[DB_GAUGE_LABELS] = {GC_VALUE1, GC_VALUE2};
    int n = PQntuples(r);
    out->v = xcalloc((size_t)n + 1, sizeof *out->v);
    for (int i = 0; !e && i < n; i++, out->n++) {
        struct db_gauge *g = &out->v[i];
        g->metric = pgcol_text(r, i, GC_METRIC);
        for (int l = 0; l < DB_GAUGE_LABELS; l++) {
            g->label[l] = pgcol_text(r, i, names[l]);
            g->label_value[l] = text_or_empty(r, i, values[l]);
        }
        g->value = text_or_empty(r, i, GC_VALUE);
        e = g->metric ? 0 : AIDC_EINTERNAL;
    }
    PQclear(r);
    if (e)
        db_gauges_free(out);
    return e;
}
