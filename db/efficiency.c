/* efficiency.c - job efficiency rows and capacity aggregates (see efficiency.h). */
#include "efficiency.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "pgcol.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Efficiencies over the run: cores x nodes x seconds, and memory_gib x nodes.
 * A run shorter than a second counts as one (the shim's clock is in seconds).
 */
static const struct db_stmt st_usage = {
    "eff_usage",
    "INSERT INTO job_efficiency (job_id, tenant_id, cpu_seconds, cpu_efficiency, mem_peak_gib,"
    "   mem_efficiency)"
    " SELECT j.id, j.tenant_id, $2::float8,"
    "   $2::float8 / (j.cpus * j.nodes * greatest($3::float8, 1)),"
    "   $4::float8 / 1073741824.0, $4::float8 / 1073741824.0 / (j.memory_gib * j.nodes)"
    " FROM jobs j WHERE j.id = $1::uuid"
    " ON CONFLICT (job_id) DO UPDATE SET cpu_seconds = EXCLUDED.cpu_seconds,"
    "   cpu_efficiency = EXCLUDED.cpu_efficiency, mem_peak_gib = EXCLUDED.mem_peak_gib,"
    "   mem_efficiency = EXCLUDED.mem_efficiency, updated_at = now()",
    4};

/* columns of a target, in the order of enum target_col */
static const struct db_stmt st_targets = {
    "eff_targets",
    "SELECT j.id, j.backend_job_id, c.kind, c.options->'metrics'->>'prometheus_url',"
    "   coalesce(c.options->'metrics'->>'job_label', 'hpc_job'),"
    "   coalesce(c.options->>'namespace', ''),"
    "   extract(epoch FROM j.started_at)::bigint,"
    "   coalesce(extract(epoch FROM j.finished_at)::bigint, 0), coalesce(e.gpu_attempts, 0)"
    " FROM jobs j JOIN clusters c ON c.id = j.cluster_id"
    " LEFT JOIN job_efficiency e ON e.job_id = j.id"
    " WHERE j.gpus > 0 AND j.backend_job_id IS NOT NULL AND j.started_at IS NOT NULL"
    "   AND jsonb_typeof(c.options->'metrics'->'prometheus_url') = 'string'"
    "   AND ((j.state = 'running' AND (e.gpu_refreshed_at IS NULL"
    "          OR e.gpu_refreshed_at < now() - make_interval(secs => $1::int)))"
    "     OR (j.finished_at IS NOT NULL AND j.finished_at > now() - interval '1 day'"
    "          AND j.state IN ('succeeded', 'failed', 'cancelled', 'preempted')"
    "          AND NOT coalesce(e.gpu_final, false)"
    "          AND (e.gpu_refreshed_at IS NULL OR e.gpu_refreshed_at < now() - interval '2 s')))"
    " ORDER BY e.gpu_refreshed_at NULLS FIRST, j.id LIMIT $2::int",
    2};
enum target_col { TC_ID, TC_BACKEND, TC_KIND, TC_URL, TC_LABEL, TC_NS, TC_START, TC_END, TC_ATT };

/*
 * A read that found nothing keeps what was there (NULL parameters); an ended
 * job is read at most 5 times. Idle: $7 true/false/NULL (unknown: as it was).
 */
static const struct db_stmt st_gpu = {
    "eff_gpu",
    "INSERT INTO job_efficiency AS e (job_id, tenant_id, gpu_util_avg, gpu_util_peak,"
    "   gpu_mem_peak_gib, gpu_refreshed_at, gpu_final, gpu_attempts, idle_since, idle_util_max)"
    " SELECT j.id, j.tenant_id, $2::float8, $3::float8, $4::float8, now(), $5::bool,"
    "   CASE WHEN $2::float8 IS NULL THEN 1 ELSE 0 END,"
    "   CASE WHEN $7::bool THEN now() - make_interval(secs => $8::int) END,"
    "   CASE WHEN $7::bool THEN $6::float8 END"
    " FROM jobs j WHERE j.id = $1::uuid"
    " ON CONFLICT (job_id) DO UPDATE SET"
    "   gpu_util_avg = coalesce(EXCLUDED.gpu_util_avg, e.gpu_util_avg),"
    "   gpu_util_peak = coalesce(EXCLUDED.gpu_util_peak, e.gpu_util_peak),"
    "   gpu_mem_peak_gib = coalesce(EXCLUDED.gpu_mem_peak_gib, e.gpu_mem_peak_gib),"
    "   gpu_refreshed_at = now(),"
    "   gpu_attempts = e.gpu_attempts + EXCLUDED.gpu_attempts,"
    "   gpu_final = EXCLUDED.gpu_final OR e.gpu_attempts + EXCLUDED.gpu_attempts >= 5,"
    "   idle_since = CASE WHEN $7::bool IS NULL THEN e.idle_since"
    "                     WHEN $7::bool THEN coalesce(e.idle_since, EXCLUDED.idle_since) END,"
    "   idle_util_max = CASE WHEN $7::bool IS NULL THEN e.idle_util_max"
    "                        WHEN $7::bool THEN EXCLUDED.idle_util_max END,"
    "   idle_noticed_at = CASE WHEN $7::bool IS NOT NULL AND NOT $7::bool THEN NULL"
    "                          ELSE e.idle_noticed_at END,"
    "   updated_at = now()",
    8};

static const struct db_stmt st_idle = {
    "eff_idle_list",
    "SELECT j.id, t.slug AS tenant, p.slug AS project, j.username AS \"user\", j.name,"
    "   c.name AS cluster, j.gpus, j.gpu_type, j.started_at, e.idle_since,"
    "   extract(epoch FROM now() - e.idle_since)::bigint AS idle_seconds,"
    "   round(e.idle_util_max::numeric, 1)::float8 AS gpu_util_max,"
    "   round(e.gpu_util_avg::numeric, 1)::float8 AS gpu_util_avg, e.idle_noticed_at,"
    "   e.idle_since::text || '|' || j.id AS _cursor"
    " FROM job_efficiency e JOIN jobs j ON j.id = e.job_id"
    " JOIN tenants t ON t.id = j.tenant_id JOIN projects p ON p.id = j.project_id"
    " LEFT JOIN clusters c ON c.id = j.cluster_id"
    " WHERE e.idle_since IS NOT NULL AND j.state = 'running'"
    "   AND ($1::uuid IS NULL OR e.tenant_id = $1::uuid)"
    "   AND ($2::timestamptz IS NULL OR (e.idle_since, j.id) > ($2::timestamptz, $3::uuid))"
    " ORDER BY e.idle_since, j.id LIMIT $4::int + 1",
    4};

static const struct db_stmt st_capacity = {
    "capacity_types",
    "SELECT gpu_type, total, in_use, queued_gpus, extract(epoch FROM now())::float8"
    " FROM aidc_capacity() LIMIT 256",
    0};
static const struct db_stmt st_ends = {
    "capacity_ends", "SELECT gpu_type, ends_at, gpus FROM aidc_capacity_ends() LIMIT 100000", 0};
static const struct db_stmt st_nodes = {"capacity_nodes", "SELECT * FROM aidc_capacity_nodes()", 0};

/* a read that could not be made: the job goes to the back of the line, its figures stay */
static const struct db_stmt st_touch = {
    "eff_touch",
    "INSERT INTO job_efficiency AS e (job_id, tenant_id, gpu_refreshed_at)"
    " SELECT j.id, j.tenant_id, now() FROM jobs j WHERE j.id = $1::uuid"
    " ON CONFLICT (job_id) DO UPDATE SET gpu_refreshed_at = now()",
    1};
const struct db_stmt *const db_efficiency_stmts[] = {
    &st_usage, &st_targets, &st_gpu, &st_touch, &st_idle, &st_capacity, &st_ends, &st_nodes, NULL};

/* A number as a statement parameter; NULL (the caller's unknown) for NaN or negative. */
static const char *num(char *buf, size_t sz, double v)
{
    if (!isfinite(v) || v < 0)
        return NULL;
    int n = snprintf(buf, sz, "%.6f", v);
    return n < 0 || (size_t)n >= sz ? NULL : buf;
}

int db_eff_usage(struct db *db, const char *job_id, double cpu_seconds, double run_seconds,
                 double mem_peak_bytes)
{
    char c[64], r[64], m[64];
    const char *p[4] = {job_id, num(c, sizeof c, cpu_seconds), num(r, sizeof r, run_seconds),
                        num(m, sizeof m, mem_peak_bytes)};
    if (!p[1] && !p[3])
        return 0;
    return db_exec(db, &st_usage, p);
}

static int read_target(const PGresult *r, int i, struct db_eff_target *t)
{
    long long att = 0;
    int e = pgcol_copy(r, i, TC_ID, t->id, sizeof t->id);
    if (!e)
        e = pgcol_copy(r, i, TC_BACKEND, t->backend_id, sizeof t->backend_id);
    if (!e)
        e = pgcol_copy(r, i, TC_KIND, t->kind, sizeof t->kind);
    if (!e)
        e = pgcol_copy(r, i, TC_URL, t->url, sizeof t->url);
    if (!e)
        e = pgcol_copy(r, i, TC_LABEL, t->label, sizeof t->label);
    if (!e)
        e = pgcol_copy(r, i, TC_NS, t->namespace_, sizeof t->namespace_);
    if (!e)
        e = pgcol_ll(r, i, TC_START, 0, &t->started);
    if (!e)
        e = pgcol_ll(r, i, TC_END, 0, &t->finished);
    if (!e)
        e = pgcol_ll(r, i, TC_ATT, 0, &att);
    t->attempts = (int)att;
    return e;
}

int db_eff_targets(struct db *db, int refresh_s, int limit, struct db_eff_targets *out)
{
    memset(out, 0, sizeof *out);
    char rs[16], lim[16];
    snprintf(rs, sizeof rs, "%d", refresh_s);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[2] = {rs, lim};
    int e;
    PGresult *r = db_query(db, &st_targets, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    out->v = xcalloc(n > 0 ? (size_t)n : 1, sizeof *out->v);
    for (int i = 0; i < n; i++) {
        /* a row that does not fit (a backend id or URL past its room) is skipped */
        if (read_target(r, i, &out->v[out->n]) == 0)
            out->n++;
    }
    PQclear(r);
    return 0;
}

void db_eff_targets_free(struct db_eff_targets *t)
{
    free(t->v);
    memset(t, 0, sizeof *t);
}

int db_eff_gpu(struct db *db, const char *job_id, const struct db_eff_gpu *g)
{
    char a[64], pk[64], m[64], im[64], w[16];
    snprintf(w, sizeof w, "%d", g->idle_window_s);
    const char *idle = g->idle < 0 ? NULL : g->idle ? "true" : "false";
    const char *p[8] = {job_id,
                        num(a, sizeof a, g->util_avg),
                        num(pk, sizeof pk, g->util_peak),
                        num(m, sizeof m, g->mem_peak_gib),
                        g->final ? "true" : "false",
                        num(im, sizeof im, g->idle_util_max),
                        idle,
                        w};
    return db_exec(db, &st_gpu, p);
}

int db_eff_idle_list(struct db *db, const char *tenant_id, const char *after, const char *after_id,
                     int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[4] = {tenant_id, after, after ? after_id : NULL, lim};
    return rowjson_query_rows(db, &st_idle, p, false, out);
}

int db_capacity_read(struct db *db, struct db_capacity *out)
{
    memset(out, 0, sizeof *out);
    int e;
    PGresult *r = db_query(db, &st_capacity, NULL, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    out->types = xcalloc(n > 0 ? (size_t)n : 1, sizeof *out->types);
    for (int i = 0; !e && i < n; i++) {
        struct db_capacity_type *t = &out->types[i];
        e = pgcol_copy(r, i, 0, t->gpu_type, sizeof t->gpu_type);
        if (!e)
            e = pgcol_ll(r, i, 1, 0, &t->total);
        if (!e)
            e = pgcol_ll(r, i, 2, 0, &t->in_use);
        if (!e)
            e = pgcol_ll(r, i, 3, 0, &t->queued_gpus);
        if (!e)
            e = pgcol_double(r, i, 4, 0, &out->now);
        out->ntypes = (size_t)i + 1;
    }
    PQclear(r);
    r = e ? NULL : db_query(db, &st_ends, NULL, &e);
    if (!r) {
        db_capacity_free(out);
        return e;
    }
    n = PQntuples(r);
    out->ends = xcalloc(n > 0 ? (size_t)n : 1, sizeof *out->ends);
    for (int i = 0; !e && i < n; i++) {
        struct db_capacity_end *d = &out->ends[i];
        e = pgcol_copy(r, i, 0, d->gpu_type, sizeof d->gpu_type);
        if (!e)
            e = pgcol_double(r, i, 1, 0, &d->at);
        if (!e)
            e = pgcol_ll(r, i, 2, 0, &d->gpus);
        out->nends = (size_t)i + 1;
    }
    PQclear(r);
    if (e)
        db_capacity_free(out);
    return e;
}

void db_capacity_free(struct db_capacity *c)
{
    free(c->types);
    free(c->ends);
    memset(c, 0, sizeof *c);
}

int db_capacity_nodes(struct db *db, json_t **out)
{
    int e;
    PGresult *r = db_query(db, &st_nodes, NULL, &e);
    if (!r)
        return e;
    *out = rowjson_array(r);
    PQclear(r);
    return *out ? 0 : AIDC_EINTERNAL;
}

int db_eff_touch(struct db *db, const char *job_id)
{
    const char *p[1] = {job_id};
    return db_exec(db, &st_touch, p);
}
