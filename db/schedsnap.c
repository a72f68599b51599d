/* schedsnap.c - the admission snapshot (see schedsnap.h). */
#include "schedsnap.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "pgarray.h"
#include "schedrows.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACTIVE "('admitted', 'pending', 'running')"

static const struct db_stmt st_clusters = {
    "snap_clusters", "SELECT id, kind, healthy, options::text FROM clusters ORDER BY name", 0};
enum { CL_ID, CL_KIND, CL_HEALTHY, CL_OPTIONS };

static const struct db_stmt st_inventory = {
    "snap_inventory", "SELECT cluster_id, resource, total FROM cluster_inventory", 0};
enum { INV_CLUSTER, INV_RESOURCE, INV_TOTAL };

static const struct db_stmt st_tenants = {"snap_tenants", "SELECT id, suspended FROM tenants", 0};
enum { TE_ID, TE_SUSPENDED };

static const struct db_stmt st_tquotas = {
    "snap_tquotas",
    "SELECT tenant_id, resource, guaranteed::float8, \"limit\"::float8 FROM tenant_quotas", 0};
enum { TQ_TENANT, TQ_RESOURCE, TQ_GUARANTEED, TQ_LIMIT };

/* The slug by its key, row by row: a join let the planner hash every project
 * (project_quotas, a few rows, is rarely analysed) - 13 ms a pass with 20,000
 * projects, for one quota. */
static const struct db_stmt st_pquotas = {
    "snap_pquotas",
    "SELECT q.project_id, q.tenant_id, q.resource, q.\"limit\"::float8,"
    " (SELECT p.slug FROM projects p WHERE p.id = q.project_id) FROM project_quotas q",
    0};
enum { PQ_PROJECT, PQ_TENANT, PQ_RESOURCE, PQ_LIMIT, PQ_SLUG };

/* GPU-hours of this calendar month (UTC): metered, plus what is not yet */
static const struct db_stmt st_hours = {
    "snap_hours",
    "SELECT tenant_id, project_id, sum(s) / 3600 FROM"
    " (SELECT tenant_id, project_id, gpu_seconds AS s FROM usage_monthly"
    "   WHERE period = (date_trunc('month', now(), 'UTC') AT TIME ZONE 'UTC')::date"
    "  UNION ALL SELECT tenant_id, project_id, gpus * extract(epoch FROM e - s)"
    "   FROM aidc_usage_unmetered(date_trunc('month', now(), 'UTC'), now()) WHERE gpus > 0) x"
    " GROUP BY tenant_id, project_id",
    0};
enum { HO_TENANT, HO_PROJECT, HO_HOURS };

/* Projects under allocation (docs/allocations.md): one covers today (UTC),
 * the latest started of those running, or all that started have ended */
static const struct db_stmt st_allocs = {
    "snap_allocs",
    "WITH d AS (SELECT (now() AT TIME ZONE 'UTC')::date AS today),"
    " g AS (SELECT project_id, tenant_id, bool_or(ends_on < d.today) AS ended"
    "        FROM allocation_requests, d WHERE state = 'approved' GROUP BY 1, 2),"
    " cur AS (SELECT DISTINCT ON (a.project_id) a.project_id, a.starts_on, a.ends_on,"
    "           a.approved_gpu_hours AS h FROM allocation_requests a, d"
    "          WHERE a.state = 'approved' AND a.starts_on <= d.today AND a.ends_on >= d.today"
    "          ORDER BY a.project_id, a.starts_on DESC, a.decided_at DESC)"
    " SELECT g.project_id, g.tenant_id, (SELECT slug FROM projects WHERE id = g.project_id),"
    " cur.project_id IS NOT NULL,"
    " coalesce(cur.h, -1)::float8,"
    " CASE WHEN cur.h IS NULL THEN 0 ELSE aidc_allocation_used(g.project_id,"
    "   cur.starts_on::timestamp AT TIME ZONE 'UTC',"
    "   (cur.ends_on + 1)::timestamp AT TIME ZONE 'UTC') END::float8"
    " FROM g LEFT JOIN cur ON cur.project_id = g.project_id"
    " WHERE cur.project_id IS NOT NULL OR g.ended", /* only future ones: not governed yet */
    0};
enum { AL_PROJECT, AL_TENANT, AL_SLUG, AL_ACTIVE, AL_HOURS, AL_USED };

/* GPUs with open faults where aidc assigns indexes: never handed out (NULL: all of the node) */
static const struct db_stmt st_faults = {
    "snap_faults",
    "SELECT f.cluster_id, f.gpu_index FROM gpu_faults f"
    " WHERE f.resolved_at IS NULL AND EXISTS (SELECT 1 FROM cluster_nodes n"
    "   WHERE n.cluster_id = f.cluster_id AND n.node = f.node AND n.per_gpu)",
    0};
enum { FA_CLUSTER, FA_GPU };

static const struct db_stmt st_marks = {
    "snap_marks",
    "SELECT gpu_type, pos, job_id, queue_rank FROM queue_marks"
    " ORDER BY gpu_type COLLATE \"C\", pos",
    0};
enum { MA_TYPE, MA_POS, MA_JOB, MA_RANK };

/* Columns of JOB_SNAP (schedsnap.h), then those of each statement. */
enum {
    JO_ID,
    JO_TENANT,
    JO_PROJECT,
    JO_GPU_TYPE,
    JO_GPUS,
    JO_CPUS,
    JO_MEM,
    JO_NODES,
    JO_RANK,
    JO_SUBMITTED,
    JO_TIME,
    JO_CLUSTER
};
static const struct db_stmt st_queued = {"snap_queued", DB_SCHED_QUEUED_SQL, 0};
enum { QU_REASON = JO_CLUSTER + 1, QU_ESTIMATE, QU_XMIN };
/* With a cache: which rows the pass takes and their versions (xmin: any
 * change of a row is a new version), then the whole of those not cached. */
static const struct db_stmt st_queued_keys = {"snap_queued_keys", DB_SCHED_QUEUED_KEYS_SQL, 0};
enum { QK_ID, QK_XMIN };
static const struct db_stmt st_queued_rows = {"snap_queued_rows",
                                              "SELECT " DB_SCHED_QUEUED_COLS
                                              ", jobs.xmin::text FROM jobs"
                                              " WHERE id = ANY($1::uuid[]) AND state = 'queued'",
                                              1};
/* A DB_QUEUE_NEW read: the rows inserted since the last read, and those touched. */
static const struct db_stmt st_queued_new = {"snap_queued_new", DB_SCHED_QUEUED_NEW_SQL, 2};
/* Taken just before a read of the queue: every transaction older than this one
 * has ended by the time the read takes its snapshot, and what it inserted is
 * seen then; the next DB_QUEUE_NEW read starts here. */
static const struct db_stmt st_queued_mark = {
    "snap_queued_mark", "SELECT pg_snapshot_xmin(pg_current_snapshot())::text", 0};
static const struct db_stmt st_active = {
    "snap_active",
    "SELECT " JOB_SNAP ", cluster_id, preemptible, stop_requested IS NOT NULL,"
    " extract(epoch FROM coalesce(admitted_at, now())),"
    " extract(epoch FROM coalesce(started_at, admitted_at, now())"
    "                    + time_limit_minutes * interval '1 minute'),"
    " gpu_indexes::text FROM jobs WHERE state IN " ACTIVE,
    0};
enum { AC_PREEMPTIBLE = JO_CLUSTER + 1, AC_STOPPING, AC_ADMITTED, AC_END, AC_INDEXES };

const struct db_stmt *const db_schedsnap_stmts[] = {
    &st_clusters,    &st_inventory,   &st_tenants, &st_tquotas,
    &st_pquotas,     &st_hours,       &st_queued,  &st_active,
    &st_queued_keys, &st_queued_rows, &st_marks,   &st_faults,
    &st_queued_new,  &st_queued_mark, &st_allocs,  NULL};

static void read_cluster(struct rowreader *rd, void *row)
{
    struct db_snap_cluster *c = row;
    rowreader_uuid(rd, CL_ID, c->id);
    c->kind = rowreader_text0(rd, CL_KIND);
    c->healthy = rowreader_bool(rd, CL_HEALTHY);
    c->options = rowreader_text0(rd, CL_OPTIONS);
}

static void read_inventory(struct rowreader *rd, void *row)
{
    struct db_snap_inventory *v = row;
    rowreader_uuid(rd, INV_CLUSTER, v->cluster_id);
    v->resource = rowreader_text0(rd, INV_RESOURCE);
    v->total = rowreader_int(rd, INV_TOTAL);
}

static void read_tenant(struct rowreader *rd, void *row)
{
    struct db_snap_tenant *t = row;
    rowreader_uuid(rd, TE_ID, t->id);
    t->suspended = rowreader_bool(rd, TE_SUSPENDED);
}

static void read_tquota(struct rowreader *rd, void *row)
{
    struct db_snap_tquota *q = row;
    rowreader_uuid(rd, TQ_TENANT, q->tenant_id);
    q->resource = rowreader_text0(rd, TQ_RESOURCE);
    q->guaranteed = rowreader_double(rd, TQ_GUARANTEED);
    q->limit = rowreader_double(rd, TQ_LIMIT);
}

static void read_pquota(struct rowreader *rd, void *row)
{
    struct db_snap_pquota *q = row;
    rowreader_uuid(rd, PQ_PROJECT, q->project_id);
    rowreader_uuid(rd, PQ_TENANT, q->tenant_id);
    q->resource = rowreader_text0(rd, PQ_RESOURCE);
    q->limit = rowreader_double(rd, PQ_LIMIT);
    q->slug = rowreader_text(rd, PQ_SLUG); /* NULL: none (admission says so without) */
}

static void read_hours(struct rowreader *rd, void *row)
{
    struct db_snap_hours *h = row;
    rowreader_uuid(rd, HO_TENANT, h->tenant_id);
    rowreader_uuid(rd, HO_PROJECT, h->project_id);
    h->hours = rowreader_double(rd, HO_HOURS);
}

static void read_alloc(struct rowreader *rd, void *row)
{
    struct db_snap_alloc *a = row;
    rowreader_uuid(rd, AL_PROJECT, a->project_id);
    rowreader_uuid(rd, AL_TENANT, a->tenant_id);
    a->slug = rowreader_text(rd, AL_SLUG);
    a->active = rowreader_bool(rd, AL_ACTIVE);
    a->gpu_hours = rowreader_double(rd, AL_HOURS);
    a->used = rowreader_double(rd, AL_USED);
}

static void read_fault(struct rowreader *rd, void *row)
{
    struct db_snap_fault *f = row;
    rowreader_uuid(rd, FA_CLUSTER, f->cluster_id);
    f->gpu_index = rowreader_null(rd, FA_GPU) ? -1 : rowreader_int(rd, FA_GPU);
}

static void read_mark(struct rowreader *rd, void *row)
{
    struct db_snap_mark *m = row;
    m->gpu_type = rowreader_text0(rd, MA_TYPE);
    m->pos = (long)rowreader_ll(rd, MA_POS);
    rowreader_uuid(rd, MA_JOB, m->job_id);
    m->rank = rowreader_int(rd, MA_RANK);
}

static void read_job(struct rowreader *rd, struct db_snap_job *j)
{
    rowreader_uuid(rd, JO_ID, j->id);
    rowreader_uuid(rd, JO_TENANT, j->tenant_id);
    rowreader_uuid(rd, JO_PROJECT, j->project_id);
    j->gpu_type = rowreader_text(rd, JO_GPU_TYPE);
    j->gpus = rowreader_int(rd, JO_GPUS);
    j->cpus = rowreader_int(rd, JO_CPUS);
    j->memory_gib = rowreader_int(rd, JO_MEM);
    j->nodes = rowreader_int(rd, JO_NODES);
    j->queue_rank = rowreader_int(rd, JO_RANK);
    j->submitted = rowreader_double(rd, JO_SUBMITTED);
    j->submitted_text = rowreader_text0(rd, JO_SUBMITTED);
    j->time_limit_s = rowreader_int(rd, JO_TIME);
    j->cluster_id = rowreader_text(rd, JO_CLUSTER);
}

static void read_queued(struct rowreader *rd, void *row)
{
    struct db_snap_job *j = row;
    read_job(rd, j);
    j->reason = rowreader_text(rd, QU_REASON);
    j->has_estimate = !rowreader_null(rd, QU_ESTIMATE);
    j->estimated_start = rowreader_double(rd, QU_ESTIMATE);
}

static void read_active(struct rowreader *rd, void *row)
{
    struct db_snap_job *j = row;
    read_job(rd, j);
    j->preemptible = rowreader_bool(rd, AC_PREEMPTIBLE);
    j->stopping = rowreader_bool(rd, AC_STOPPING);
    j->admitted = rowreader_double(rd, AC_ADMITTED);
    j->expected_end = rowreader_double(rd, AC_END);
    j->gpu_indexes = rowreader_ints(rd, AC_INDEXES, &j->ngpu_indexes);
}

/* One statement of the snapshot into its array (*v, *n) and its store. */
static int part(struct db *db, const struct db_stmt *st,
                void (*read)(struct rowreader *rd, void *row), size_t size, void **v, size_t *n,
                struct db_strings **strings)
{
    int e = 0;
    PGresult *r = db_query(db, st, NULL, &e);
    if (!r)
        return e;
    e = rowreader_all(r, size, read, v, n, strings, st->name);
    PQclear(r);
    return e;
}

/* k: the array's store in out->strings */
#define PART(k, st, fn, arr)                                                                       \
    do {                                                                                           \
        void *v_ = NULL;                                                                           \
        if (!e)                                                                                    \
            e = part(db, &(st), (fn), sizeof *(arr).v, &v_, &(arr).n, &out->strings[k]);           \
        (arr).v = v_;                                                                              \
    } while (0)

/*
 * The cache of queued rows: an open-addressing table by id over batches of
 * fetched rows. A batch (the rows of one fetch and their strings) lives while
 * an entry points into it; a full read drops them all.
 */
enum { XMIN_SIZE = 16 }; /* a transaction id: at most 10 digits */

struct queued_row {
    struct db_snap_job job;
    char xmin[XMIN_SIZE];
};

struct batch {
    struct queued_row *v;
    size_t n;
    struct db_strings *strings;
    size_t refs;
    struct batch *next;
};

struct entry {
    const struct queued_row *row; /* NULL: a free slot */
    struct batch *b;              /* NULL once moved to the next table */
};

struct db_queue_cache {
    struct entry *slots;
    size_t cap; /* a power of two, or 0 */
    /* the entries in the snapshot's order: that of the last full read, then of
     * the rows fetched since (the newest, mostly) - near the queue's own, not
     * the table's */
    size_t *order; /* indexes into slots: one per row kept */
    size_t norder;
    size_t fetched;
    struct batch *batches;
    size_t batch_rows; /* in all batches: held while one of their rows is */
    bool primed;       /* a read went through since the last drop */
    /* where the next DB_QUEUE_NEW read starts (st_queued_mark of the last) */
    char mark[24];
    /* the ids db_queue_cache_touch named since the last read */
    char (*touched)[37];
    size_t ntouched, touched_cap;
};

struct db_queue_cache *db_queue_cache_new(void)
{
    return xcalloc(1, sizeof(struct db_queue_cache));
}

size_t db_queue_cache_fetched(const struct db_queue_cache *c)
{
    return c->fetched;
}

static size_t slot_of(const char *id, size_t cap)
{
    uint64_t h = 14695981039346656037u; /* FNV-1a */
    for (const char *p = id; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    return (size_t)h & (cap - 1);
}

static struct entry *find(struct entry *slots, size_t cap, const char *id)
{
    if (!cap)
        return NULL;
    for (size_t i = slot_of(id, cap);; i = (i + 1) & (cap - 1)) {
        if (!slots[i].row || strcmp(slots[i].row->job.id, id) == 0)
            return &slots[i];
    }
}

/* Free the batches no entry points into any more. */
static void sweep(struct db_queue_cache *c)
{
    for (struct batch **b = &c->batches; *b;) {
        if ((*b)->refs) {
            b = &(*b)->next;
            continue;
        }
        struct batch *dead = *b;
        *b = dead->next;
        c->batch_rows -= dead->n;
        free(dead->v);
        db_strings_free(dead->strings);
        free(dead);
    }
}

static void drop_all(struct db_queue_cache *c)
{
    for (size_t i = 0; i < c->cap; i++)
        if (c->slots[i].b)
            c->slots[i].b->refs--;
    free(c->slots);
    c->slots = NULL;
    c->cap = c->norder = 0;
    c->primed = false;
    c->mark[0] = '\0';
    c->ntouched = 0;
    sweep(c);
}

void db_queue_cache_drop(struct db_queue_cache *c)
{
    if (c)
        drop_all(c);
}

void db_queue_cache_free(struct db_queue_cache *c)
{
    if (!c)
        return;
    drop_all(c);
    free(c->order);
    free(c->touched);
    free(c);
}

static void read_queued_row(struct rowreader *rd, void *row)
{
    struct queued_row *q = row;
    read_queued(rd, &q->job);
    const char *x = rowreader_text0(rd, QU_XMIN);
    if (strlen(x) >= sizeof q->xmin)
        rd->bad = true;
    else
        strcpy(q->xmin, x);
}

/* The rows of r into a new batch, and each of them into the table and at the
 * end of the order, as they come. */
static int adopt(struct db_queue_cache *c, const PGresult *r, struct entry *slots, size_t cap)
{
    struct batch *b = xcalloc(1, sizeof *b);
    void *v = NULL;
    size_t n = 0;
    int e = rowreader_all(r, sizeof *b->v, read_queued_row, &v, &n, &b->strings, "snap_queued");
    b->v = v;
    b->n = n;
    c->batch_rows += n;
    b->next = c->batches;
    c->batches = b;
    for (size_t i = 0; !e && i < n; i++) {
        struct entry *to = find(slots, cap, b->v[i].job.id);
        if (to->row) /* listed twice: keep the first */
            continue;
        to->row = &b->v[i];
        to->b = b;
        b->refs++;
        c->order[c->norder++] = (size_t)(to - slots);
    }
    c->fetched += n;
    return e;
}

static struct entry *table_for(size_t rows, size_t *cap)
{
    *cap = 16;
    while (*cap < rows * 2)
        *cap *= 2;
    return xcalloc(*cap, sizeof(struct entry));
}

/* A new order with room for rows entries (the old one is freed). */
static void order_for(struct db_queue_cache *c, size_t *order)
{
    free(c->order);
    c->order = order;
    c->norder = 0;
}

/* The table becomes the cache's; the entries of the one before that were not
 * moved into it let go of their batches. */
static void install(struct db_queue_cache *c, struct entry *slots, size_t cap)
{
    for (size_t i = 0; i < c->cap; i++)
        if (c->slots[i].b)
            c->slots[i].b->refs--;
    free(c->slots);
    c->slots = slots;
    c->cap = cap;
}

/* A full read: every queued row whole, all kept. */
static int load_all(struct db *db, struct db_queue_cache *c)
{
    int e = 0;
    PGresult *r = db_query(db, &st_queued, NULL, &e);
    if (!r)
        return e;
    size_t cap;
    struct entry *slots = table_for((size_t)PQntuples(r), &cap);
    install(c, slots, cap);
    order_for(c, xcalloc((size_t)PQntuples(r) + 1, sizeof(size_t)));
    e = adopt(c, r, slots, cap);
    PQclear(r);
    return e;
}

/*
 * A pass's read: the rows it takes by their ids and versions, fetching whole
 * those new or changed since the last. The kept rows stay in the order they
 * had (a full read's: by and large the order of submission), the fetched ones
 * follow - mostly the newest.
 */
static int load_changed(struct db *db, struct db_queue_cache *c)
{
    int e = 0;
    PGresult *r = db_query(db, &st_queued_keys, NULL, &e);
    if (!r)
        return e;
    size_t nkeys = (size_t)PQntuples(r), cap;
    struct entry *slots = table_for(nkeys, &cap);
    struct pgarray want = PGARRAY_INIT;
    size_t nwant = 0;
    for (size_t i = 0; i < nkeys; i++) {
        const char *id = PQgetvalue(r, (int)i, QK_ID), *xmin = PQgetvalue(r, (int)i, QK_XMIN);
        if (strlen(id) != 36 || strlen(xmin) >= XMIN_SIZE) {
            e = AIDC_EINTERNAL; /* the statement and the code disagree */
            break;
        }
        struct entry *old = find(c->slots, c->cap, id), *to = find(slots, cap, id);
        if (to->row)
            continue;
        if (old && old->b && strcmp(old->row->xmin, xmin) == 0) {
            *to = *old;
            old->b = NULL; /* moved: its reference goes with it */
        } else {
            pgarray_add(&want, id);
            nwant++;
        }
    }
    PQclear(r);
    size_t *order = xcalloc(nkeys + 1, sizeof(size_t)), norder = 0;
    for (size_t i = 0; i < c->norder; i++) {
        const struct entry *was = &c->slots[c->order[i]];
        if (!was->b) /* moved into the new table */
            order[norder++] = (size_t)(find(slots, cap, was->row->job.id) - slots);
    }
    install(c, slots, cap);
    order_for(c, order);
    c->norder = norder;
    if (!e && nwant) {
        const char *p[1] = {pgarray_str(&want)};
        r = db_query(db, &st_queued_rows, p, &e);
        if (r) {
            e = adopt(c, r, slots, cap);
            PQclear(r);
        }
    }
    pgarray_free(&want);
    return e;
}

void db_queue_cache_touch(struct db_queue_cache *c, const char *id)
{
    if (!c || strlen(id) != 36)
        return;
    if (c->ntouched == c->touched_cap) {
        c->touched_cap = c->touched_cap ? 2 * c->touched_cap : 64;
        c->touched = xrealloc(c->touched, c->touched_cap * sizeof *c->touched);
    }
    memcpy(c->touched[c->ntouched++], id, 37);
}

static int id_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

/*
 * A read of the rows inserted since the last one and of those touched: they
 * come whole and take the place of their kept versions; a touched row that is
 * not among them has left the queue (admitted). Every other kept row stays, in
 * its place; the fetched ones follow.
 */
static int load_new(struct db *db, struct db_queue_cache *c)
{
    struct pgarray touched = PGARRAY_INIT;
    for (size_t i = 0; i < c->ntouched; i++)
        pgarray_add(&touched, c->touched[i]);
    const char *p[2] = {c->mark, pgarray_str(&touched)};
    int e = 0;
    PGresult *r = db_query(db, &st_queued_new, p, &e);
    pgarray_free(&touched);
    if (!r)
        return e;
    if (c->ntouched)
        qsort(c->touched, c->ntouched, sizeof *c->touched, id_cmp);
    size_t nrows = (size_t)PQntuples(r), cap, nkept = 0;
    struct entry *slots = table_for(c->norder + nrows, &cap);
    size_t *order = xcalloc(c->norder + nrows + 1, sizeof(size_t));
    /* the fetched rows first, so that a kept one they replace is known */
    size_t *was_order = c->order, was_n = c->norder;
    c->order = order;
    c->norder = 0;
    e = adopt(c, r, slots, cap);
    PQclear(r);
    size_t nfetched = c->norder;
    size_t *kept = xcalloc(was_n + 1, sizeof(size_t));
    for (size_t i = 0; !e && i < was_n; i++) {
        struct entry *old = &c->slots[was_order[i]];
        const char *id = old->row->job.id;
        struct entry *to = find(slots, cap, id);
        if (to->row ||
            (c->ntouched && bsearch(id, c->touched, c->ntouched, sizeof *c->touched, id_cmp)))
            continue;
        *to = *old;
        old->b = NULL; /* moved: its reference goes with it */
        kept[nkept++] = (size_t)(to - slots);
    }
    /* kept rows in their order, then the fetched ones */
    memmove(order + nkept, order, nfetched * sizeof *order);
    memcpy(order, kept, nkept * sizeof *order);
    c->norder = e ? 0 : nkept + nfetched;
    free(kept);
    free(was_order);
    install(c, slots, cap);
    return e;
}

/* Where the next DB_QUEUE_NEW read starts, taken before this read's snapshot. */
static int read_queue_mark(struct db *db, char *mark, size_t size)
{
    int e = 0;
    PGresult *r = db_query(db, &st_queued_mark, NULL, &e);
    if (!r)
        return e;
    const char *v = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "";
    if (!*v || strlen(v) >= size)
        e = AIDC_EINTERNAL;
    else
        strcpy(mark, v);
    PQclear(r);
    return e;
}

static int queued_cached(struct db *db, struct db_queue_cache *c, enum db_queue_read how,
                         struct db_snapshot *out)
{
    if (!c->primed || c->batch_rows > 2 * c->norder + 1024)
        how = DB_QUEUE_FULL;
    else if (how == DB_QUEUE_NEW && !c->mark[0])
        how = DB_QUEUE_CHANGED;
    char mark[sizeof c->mark];
    int e = read_queue_mark(db, mark, sizeof mark);
    if (e)
        return e;
    c->fetched = 0;
    e = how == DB_QUEUE_FULL      ? load_all(db, c)
        : how == DB_QUEUE_CHANGED ? load_changed(db, c)
                                  : load_new(db, c);
    sweep(c);
    if (e)
        return e;
    c->primed = true;
    strcpy(c->mark, mark);
    c->ntouched = 0;
    out->queued.v = xcalloc(c->norder + 1, sizeof *out->queued.v);
    for (size_t i = 0; i < c->norder; i++)
        out->queued.v[out->queued.n++] = c->slots[c->order[i]].row->job;
    return 0;
}

int db_sched_snapshot(struct db *db, struct db_snapshot *out)
{
    return db_sched_snapshot_cached(db, NULL, DB_QUEUE_FULL, out);
}

int db_sched_snapshot_cached(struct db *db, struct db_queue_cache *cache, enum db_queue_read how,
                             struct db_snapshot *out)
{
    memset(out, 0, sizeof *out);
    int e = 0;
    /* The queue first: each part is read at its own moment (READ COMMITTED), and
     * what a job's submitter saw committed before - a quota lowered, a tenant
     * suspended, a cluster drained - is then seen with the job. Read after
     * them, a job could meet the quota of before the change its submitter
     * waited for (a test saw it under a loaded CI). */
    if (!cache)
        PART(6, st_queued, read_queued, out->queued);
    else if ((e = queued_cached(db, cache, how, out)) != 0)
        drop_all(cache);
    PART(0, st_clusters, read_cluster, out->clusters);
    PART(1, st_inventory, read_inventory, out->inventory);
    PART(2, st_tenants, read_tenant, out->tenants);
    PART(3, st_tquotas, read_tquota, out->tquotas);
    PART(4, st_pquotas, read_pquota, out->pquotas);
    PART(5, st_hours, read_hours, out->hours);
    PART(7, st_active, read_active, out->active);
    PART(8, st_marks, read_mark, out->marks);
    PART(9, st_faults, read_fault, out->faults);
    PART(10, st_allocs, read_alloc, out->allocs);
    if (e)
        db_sched_snapshot_free(out);
    return e;
}
#undef PART

void db_sched_snapshot_free(struct db_snapshot *s)
{
    free(s->clusters.v);
    free(s->inventory.v);
    free(s->tenants.v);
    free(s->tquotas.v);
    free(s->pquotas.v);
    free(s->hours.v);
    free(s->queued.v);
    free(s->active.v);
    free(s->marks.v);
    free(s->faults.v);
    free(s->allocs.v);
    for (size_t i = 0; i < sizeof s->strings / sizeof s->strings[0]; i++)
        db_strings_free(s->strings[i]);
    memset(s, 0, sizeof *s);
}
