/* gpufaults.c - GPU health statements (see gpufaults.h). */
#include "gpufaults.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "schedrows.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACTIVE "('admitted', 'pending', 'running')"

static const struct db_stmt st_nodes_put = {
    "gpu_nodes_put",
    "WITH x AS (SELECT DISTINCT ON (n, t) n, t, f, g, u"
    "             FROM unnest($2::text[], $3::text[], $4::int[], $5::int[], $6::boolean[])"
    "               AS x(n, t, f, g, u) ORDER BY n, t),"
    " gone AS (DELETE FROM cluster_nodes c WHERE c.cluster_id = $1::uuid"
    "          AND NOT EXISTS (SELECT 1 FROM x WHERE x.n = c.node AND x.t = c.gpu_type))"
    " INSERT INTO cluster_nodes AS c (cluster_id, node, gpu_type, first_index, gpus, usable,"
    "                                 per_gpu)"
    " SELECT $1::uuid, n, t, f, g, u, $7::boolean FROM x"
    " ON CONFLICT (cluster_id, node, gpu_type) DO UPDATE"
    "   SET first_index = EXCLUDED.first_index, gpus = EXCLUDED.gpus, usable = EXCLUDED.usable,"
    "       per_gpu = EXCLUDED.per_gpu, updated_at = now()"
    "   WHERE (c.first_index, c.gpus, c.usable, c.per_gpu) IS DISTINCT FROM"
    "         (EXCLUDED.first_index, EXCLUDED.gpus, EXCLUDED.usable, EXCLUDED.per_gpu)",
    7};
static const struct db_stmt st_inventory_apply = {
    "gpu_inventory_apply", "SELECT aidc_inventory_apply_faults($1::uuid)", 1};
static const struct db_stmt st_node_get = {
    "gpu_node_get",
    "SELECT gpu_type, first_index, gpus, usable FROM cluster_nodes"
    " WHERE cluster_id = $1::uuid AND node = $2 ORDER BY first_index, gpu_type",
    2};
enum { N_TYPE, N_FIRST, N_GPUS, N_USABLE };

static const struct db_stmt st_fault_add = {
    "gpu_fault_add",
    "WITH x AS (SELECT DISTINCT g FROM unnest($3::int[]) AS x(g))"
    " INSERT INTO gpu_faults (cluster_id, node, gpu_index, reason, source, alert, since,"
    "                         reported_by)"
    " SELECT $1::uuid, $2, g, $4, $5, $6, least(coalesce($7::timestamptz, now()), now()), $8"
    "   FROM x ORDER BY g NULLS FIRST"
    " ON CONFLICT (cluster_id, node, coalesce(gpu_index, -1)) WHERE resolved_at IS NULL"
    " DO NOTHING RETURNING id, gpu_index",
    8};
/* the columns of st_fault_add and st_fault_resolve */
enum { H_ID, H_GPU };
static const struct db_stmt st_fault_resolve = {
    "gpu_fault_resolve",
    "UPDATE gpu_faults SET resolved_at = now(), resolved_by = $4"
    " WHERE cluster_id = $1::uuid AND node = $2 AND resolved_at IS NULL"
    "   AND ($3::int[] IS NULL"
    "        OR coalesce(gpu_index, -1) IN (SELECT coalesce(g, -1) FROM unnest($3::int[]) g))"
    " RETURNING id, gpu_index",
    4};

/*
 * Ask the jobs of x (id, fault) to stop for their fault: the reclaim path of
 * sched/admission.c with the fault instead of a job as the cause (the syncer's
 * requeue names it, db/sched.c). Only GPU jobs: a fault of GPUs does not
 * touch work that uses none.
 */
#define STOP_FOR_FAULT(x, grace)                                                                   \
    "WITH x AS (" x "),"                                                                           \
    " u AS (UPDATE jobs j SET stop_requested = 'preempt', stop_requested_at = now(),"              \
    "         preempt_by = NULL, preempt_fault = f.id, updated_at = now(),"                        \
    "         reason = 'GPU fault on node ' || f.node || ': stop requested'"                       \
    "       FROM x JOIN gpu_faults f ON f.id = x.fault"                                            \
    "       WHERE j.id = x.id AND j.state IN " ACTIVE " AND j.stop_requested IS NULL"              \
    "         AND j.gpus > 0"                                                                      \
    "       RETURNING j.id, j.tenant_id, j.cluster_id, j.state, f.id AS fault, f.node,"            \
    "         f.gpu_index, f.reason AS why),"                                                      \
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason, details)"     \
    "       SELECT id, tenant_id, state, state, 'GPU fault on node ' || node || ': stop "          \
    "requested',"                                                                                  \
    "              jsonb_build_object('gpu_fault', jsonb_build_object('id', fault, 'node', node,"  \
    "                                   'gpu', gpu_index, 'reason', why),"                         \
    "                                 'grace_seconds', " grace ") FROM u),"                        \
    " o AS (INSERT INTO outbox (job_id, tenant_id, cluster_id, action)"                            \
    "       SELECT id, tenant_id, cluster_id, 'preempt' FROM u)"                                   \
    " SELECT coalesce(array_agg(id ORDER BY id), '{}')::text,"                                     \
    "        CASE WHEN count(*) > 0 THEN pg_notify('aidc_outbox', 'preempt') END FROM u"

/* the first open fault of the node among the job's GPUs (or of all the node's GPUs) */
static const struct db_stmt st_stop_assigned = {
    "gpu_fault_stop_assigned",
    STOP_FOR_FAULT("SELECT j.id, (SELECT f.id FROM gpu_faults f"
                   "               WHERE f.cluster_id = j.cluster_id AND f.node = $2"
                   "                 AND f.resolved_at IS NULL"
                   "                 AND (f.gpu_index IS NULL OR f.gpu_index = ANY (j.gpu_indexes))"
                   "               ORDER BY f.gpu_index NULLS LAST, f.id LIMIT 1) AS fault"
                   "  FROM jobs j WHERE j.cluster_id = $1::uuid AND j.state IN " ACTIVE
                   "   AND j.stop_requested IS NULL AND j.gpus > 0",
                   "$3::int"),
    3};
static const struct db_stmt st_stop_runs = {
    "gpu_fault_stop_runs",
    STOP_FOR_FAULT(
        "SELECT j.id, (SELECT min(f.id) FROM gpu_faults f"
        "               WHERE f.cluster_id = $1::uuid AND f.node = $2"
        "                 AND f.resolved_at IS NULL) AS fault"
        "  FROM jobs j WHERE j.cluster_id = $1::uuid AND j.backend_job_id = ANY ($4::text[])",
        "$3::int"),
    4};
/*
 * Every active GPU job, where aidc assigns GPU indexes, that holds a GPU with
 * an open fault and is not stopping: driven by the open faults, so nearly
 * free when there are none. The admitter runs it every pass: a pass that read
 * its snapshot before a fault committed may have handed the faulty GPU out
 * after the report looked for jobs on it; the next pass stops that job.
 */
static const struct db_stmt st_sweep = {
    "gpu_fault_sweep",
    STOP_FOR_FAULT("SELECT DISTINCT ON (j.id) j.id, f.id AS fault"
                   "  FROM gpu_faults f"
                   "  JOIN jobs j ON j.cluster_id = f.cluster_id AND j.state IN " ACTIVE
                   "   AND j.stop_requested IS NULL AND j.gpus > 0"
                   "   AND (f.gpu_index IS NULL OR f.gpu_index = ANY (j.gpu_indexes))"
                   " WHERE f.resolved_at IS NULL AND EXISTS (SELECT 1 FROM cluster_nodes n"
                   "   WHERE n.cluster_id = f.cluster_id AND n.node = f.node AND n.per_gpu)"
                   " ORDER BY j.id, f.gpu_index NULLS LAST, f.id",
                   "$1::int"),
    1};

static const struct db_stmt st_drain_sync = {
    "gpu_node_drain_sync",
    "WITH open AS (SELECT count(*) AS n FROM gpu_faults"
    "               WHERE cluster_id = $1::uuid AND node = $2 AND resolved_at IS NULL),"
    " last AS (SELECT (SELECT action FROM outbox WHERE cluster_id = $1::uuid AND node = $2"
    "                   ORDER BY id DESC LIMIT 1) AS a),"
    " want AS (SELECT CASE WHEN open.n > 0 AND coalesce(last.a, 'undrain') = 'undrain'"
    "                      THEN 'drain'"
    "                      WHEN open.n = 0 AND last.a = 'drain' THEN 'undrain' END AS a"
    "            FROM open, last),"
    " ins AS (INSERT INTO outbox (cluster_id, action, node, details)"
    "         SELECT $1::uuid, a, $2, jsonb_build_object('reason', $3::text) FROM want"
    "          WHERE a IS NOT NULL RETURNING action)"
    " SELECT action, pg_notify('aidc_outbox', 'node') FROM ins",
    3};

static const struct db_stmt st_list = {
    "gpu_fault_list",
    "SELECT f.id, c.name AS cluster, f.node, f.gpu_index AS gpu,"
    " (SELECT n.gpu_type FROM cluster_nodes n WHERE n.cluster_id = f.cluster_id"
    "    AND n.node = f.node AND n.gpu_type <> '' AND f.gpu_index >= n.first_index"
    "    AND f.gpu_index < n.first_index + n.gpus LIMIT 1) AS gpu_type,"
    " f.reason, f.source, f.alert, f.since, f.reported_by, f.resolved_at, f.resolved_by,"
    " (SELECT jsonb_build_object('action', o.action, 'delivered_at',"
    "          to_char(o.delivered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
    "                            'attempts', o.attempts, 'error', o.last_error)"
    "    FROM outbox o WHERE o.cluster_id = f.cluster_id AND o.node = f.node"
    "   ORDER BY o.id DESC LIMIT 1) AS node_drain,"
    " f.id AS _cursor"
    " FROM gpu_faults f JOIN clusters c ON c.id = f.cluster_id"
    " WHERE f.cluster_id = $1::uuid"
    "   AND ($2 = 'all' OR ($2 = 'open') = (f.resolved_at IS NULL))"
    "   AND ($3::bigint IS NULL OR f.id > $3::bigint)"
    " ORDER BY f.id LIMIT $4::int + 1",
    4};

static const struct db_stmt st_outbox_claim = {
    "gpu_outbox_claim",
    "WITH c AS (SELECT o.id FROM outbox o"
    "            WHERE o.node IS NOT NULL AND o.delivered_at IS NULL"
    "              AND o.next_attempt_at <= now()"
    "              AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.node = o.node"
    "                               AND p.cluster_id = o.cluster_id"
    "                               AND p.delivered_at IS NULL AND p.id < o.id)"
    "            ORDER BY o.id LIMIT $1::int FOR UPDATE SKIP LOCKED),"
    " u AS (UPDATE outbox o SET attempts = o.attempts + 1,"
    "         next_attempt_at = now() + $2::int * interval '1 second'"
    "       FROM c WHERE o.id = c.id RETURNING o.*)"
    " SELECT u.id, u.action, u.attempts, u.node, u.details ->> 'reason', cl.id, cl.name, cl.kind,"
    "  cl.endpoint, cl.credentials_ref, cl.options::text"
    " FROM u JOIN clusters cl ON cl.id = u.cluster_id ORDER BY u.id",
    2};
enum { O_ID, O_ACTION, O_ATTEMPTS, O_NODE, O_REASON, O_CLUSTER };

const struct db_stmt *const db_gpufaults_stmts[] = {
    &st_nodes_put, &st_inventory_apply, &st_node_get,
    &st_fault_add, &st_fault_resolve,   &st_stop_assigned,
    &st_stop_runs, &st_sweep,           &st_drain_sync,
    &st_list,      &st_outbox_claim,    NULL};

static int rows(struct db *db, const struct db_stmt *st, const char *const *p, PGresult **out)
{
    int e = 0;
    *out = db_query(db, st, p, &e);
    return *out ? 0 : e;
}

int db_gpu_nodes_put(struct db *db, const char *cluster_id, const char *names, const char *types,
                     const char *firsts, const char *counts, const char *usable, bool per_gpu)
{
    const char *p[7] = {cluster_id, names, types, firsts, counts, usable, per_gpu ? "t" : "f"};
    return db_exec(db, &st_nodes_put, p);
}

int db_gpu_inventory_apply(struct db *db, const char *cluster_id)
{
    const char *p[1] = {cluster_id};
    return db_exec(db, &st_inventory_apply, p);
}

int db_gpu_node_gpus(struct db *db, const char *cluster_id, const char *node, int *ngpus,
                     bool *known)
{
    const char *p[2] = {cluster_id, node};
    PGresult *r = NULL;
    *ngpus = 0;
    *known = false;
    int e = rows(db, &st_node_get, p, &r);
    for (int i = 0; !e && i < PQntuples(r); i++) {
        struct rowreader rd = {.r = r, .i = i};
        /* in long long: two ints of a row cannot overflow what they add up to */
        long long end = (long long)rowreader_int(&rd, N_FIRST) + rowreader_int(&rd, N_GPUS);
        if (rd.bad || end > INT_MAX || end < 0)
            e = AIDC_EINTERNAL;
        else if (end > *ngpus)
            *ngpus = (int)end;
    }
    if (!e)
        *known = PQntuples(r) > 0;
    PQclear(r);
    return e;
}

static void read_hit(struct rowreader *rd, void *row)
{
    struct db_gpu_fault_hit *h = row;
    h->id = rowreader_ll(rd, H_ID);
    h->gpu_index = rowreader_null(rd, H_GPU) ? -1 : rowreader_int(rd, H_GPU);
}

/* Run st (st_fault_add or st_fault_resolve) and read its faults into *out. */
static int hits(struct db *db, const struct db_stmt *st, const char *const *p,
                struct db_gpu_fault_hits *out)
{
    PGresult *r = NULL;
    out->v = NULL;
    out->n = 0;
    int e = rows(db, st, p, &r);
    if (e)
        return e;
    void *v = NULL;
    struct db_strings *none = NULL; /* the rows have no strings */
    e = rowreader_all(r, sizeof *out->v, read_hit, &v, &out->n, &none, st->name);
    db_strings_free(none);
    out->v = v;
    PQclear(r);
    return e;
}

void db_gpu_fault_hits_free(struct db_gpu_fault_hits *h)
{
    free(h->v);
    h->v = NULL;
    h->n = 0;
}

int db_gpu_fault_add(struct db *db, const char *cluster_id, const char *node, const char *gpus,
                     const char *reason, const char *source, const char *alert, const char *since,
                     const char *by, struct db_gpu_fault_hits *out)
{
    const char *p[8] = {cluster_id, node, gpus, reason, source, alert, since, by};
    return hits(db, &st_fault_add, p, out);
}

int db_gpu_fault_resolve(struct db *db, const char *cluster_id, const char *node, const char *gpus,
                         const char *by, struct db_gpu_fault_hits *out)
{
    const char *p[4] = {cluster_id, node, gpus, by};
    return hits(db, &st_fault_resolve, p, out);
}

static int stop(struct db *db, const struct db_stmt *st, const char *const *p, char **ids)
{
    PGresult *r = NULL;
    int e = rows(db, st, p, &r);
    if (!e)
        *ids = xstrdup(PQntuples(r) ? PQgetvalue(r, 0, 0) : "{}");
    PQclear(r);
    return e;
}

int db_gpu_fault_stop_assigned(struct db *db, const char *cluster_id, const char *node,
                               int grace_seconds, char **ids)
{
    char grace[16];
    snprintf(grace, sizeof grace, "%d", grace_seconds);
    const char *p[3] = {cluster_id, node, grace};
    return stop(db, &st_stop_assigned, p, ids);
}

int db_gpu_fault_stop_runs(struct db *db, const char *cluster_id, const char *node,
                           const char *backend_ids, int grace_seconds, char **ids)
{
    char grace[16];
    snprintf(grace, sizeof grace, "%d", grace_seconds);
    const char *p[4] = {cluster_id, node, grace, backend_ids};
    return stop(db, &st_stop_runs, p, ids);
}

int db_gpu_fault_sweep(struct db *db, int grace_seconds, char **ids)
{
    char grace[16];
    snprintf(grace, sizeof grace, "%d", grace_seconds);
    const char *p[1] = {grace};
    return stop(db, &st_sweep, p, ids);
}

int db_gpu_node_drain_sync(struct db *db, const char *cluster_id, const char *node,
                           const char *reason, char *action, size_t n)
{
    const char *p[3] = {cluster_id, node, reason};
    PGresult *r = NULL;
    int e = rows(db, &st_drain_sync, p, &r);
    if (!e)
        snprintf(action, n, "%s", PQntuples(r) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return e;
}

int db_gpu_fault_list(struct db *db, const char *cluster_id, const char *state, const char *after,
                      int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[4] = {cluster_id, state, after, lim};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

static void read_node_row(struct rowreader *rd, void *row)
{
    struct db_node_outbox *o = row;
    o->id = rowreader_ll(rd, O_ID);
    o->action = rowreader_text0(rd, O_ACTION);
    o->attempts = rowreader_int(rd, O_ATTEMPTS);
    o->node = rowreader_text0(rd, O_NODE);
    o->reason = rowreader_text(rd, O_REASON);
    rowreader_outbox_cluster(rd, O_CLUSTER, &o->cluster);
}

int db_gpu_outbox_claim(struct db *db, int limit, int lease_seconds, struct db_node_outboxes *out)
{
    char lim[16], lease[16];
    snprintf(lim, sizeof lim, "%d", limit);
    snprintf(lease, sizeof lease, "%d", lease_seconds);
    const char *p[2] = {lim, lease};
    memset(out, 0, sizeof *out);
    PGresult *r = NULL;
    int e = rows(db, &st_outbox_claim, p, &r);
    if (e)
        return e;
    void *v = NULL;
    e = rowreader_all(r, sizeof *out->v, read_node_row, &v, &out->n, &out->strings,
                      st_outbox_claim.name);
    out->v = v;
    PQclear(r);
    return e;
}

void db_node_outboxes_free(struct db_node_outboxes *rows)
{
    free(rows->v);
    db_strings_free(rows->strings);
    memset(rows, 0, sizeof *rows);
}
