/*
 * admitter.c - the admission worker (see admitter.h). Most of this file turns
 * the snapshot's rows (db/schedsnap.h) into the index-based snapshot of
 * sched/admission.h and the decisions back into array parameters.
 */
#include "admitter.h"

#include "../backends/backend.h"
#include "../db/gpufaults.h"
#include "../db/pgarray.h"
#include "../db/sched.h"
#include "../db/schedsnap.h"
#include "../db/worker.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "admission.h"
#include "idmap.h"
#include "queuemarks.h"
#include "schedstats.h"

#include <jansson.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INDEXES 1024 /* GPU indexes of one cluster where aidc assigns them */
/* an estimate that moved less than this is not worth a write */
#define ESTIMATE_SLACK_S 60
/*
 * Reasons and estimates written by one pass at most. The first pass over a
 * large new queue would otherwise rewrite every row (seconds for 100,000,
 * tests/bench/jobs.sh) and hold back the admissions committed with them; the
 * rest, further back in the queue, follows in passes run at once.
 */
#define MAX_WAIT_WRITES 10000

struct cl_info {
    const struct backend_ops *ops;
    json_t *options;
    unsigned char used[MAX_INDEXES]; /* GPU indexes held by active jobs, or faulty */
};

struct build {
    struct adm_snapshot s;
    struct idmap tenants, projects, clusters, types;
    char **type_names;
    size_t type_cap, project_cap;
    struct cl_info *cl;
    /* snapshot job -> row of the db snapshot: rows of an unknown tenant
     * (created since the tenants were read) are left out of the snapshot */
    size_t *qrow, *arow;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double ms_since(double t0)
{
    return (now_s() - t0) * 1000.0;
}

/* The first day of next month, UTC, when GPU-hour budgets start afresh. */
static double month_end(double now)
{
    time_t t = (time_t)now;
    struct tm tm;
    gmtime_r(&t, &tm);
    tm.tm_mday = 1;
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    tm.tm_mon += 1;
    return (double)timegm(&tm);
}

static void add_type(struct build *b, const char *name)
{
    if (!name || !*name || idmap_get(&b->types, name) >= 0)
        return;
    if (b->types.n == b->type_cap) {
        b->type_cap = b->type_cap ? b->type_cap * 2 : 8;
        b->type_names = xreallocarray(b->type_names, b->type_cap, sizeof *b->type_names);
    }
    b->type_names[b->types.n] = xstrdup(name);
    idmap_add(&b->types, name);
}

static void add_gpu_resource(struct build *b, const char *res)
{
    if (strncmp(res, "gpu:", 4) == 0)
        add_type(b, res + 4);
}

static int type_of(const struct build *b, const char *name)
{
    return name ? idmap_get(&b->types, name) : -1;
}

static void collect_types(struct build *b, const struct db_snapshot *d)
{
    for (size_t i = 0; i < d->inventory.n; i++)
        add_gpu_resource(b, d->inventory.v[i].resource);
    for (size_t i = 0; i < d->tquotas.n; i++)
        add_gpu_resource(b, d->tquotas.v[i].resource);
    for (size_t i = 0; i < d->pquotas.n; i++)
        add_gpu_resource(b, d->pquotas.v[i].resource);
    for (size_t i = 0; i < d->queued.n; i++)
        add_type(b, d->queued.v[i].gpu_type);
    for (size_t i = 0; i < d->active.n; i++)
        add_type(b, d->active.v[i].gpu_type);
    b->s.gpu_types = (const char *const *)b->type_names;
    b->s.ngpu_types = b->types.n;
}

static void build_clusters(struct build *b, const struct db_snapshot *d)
{
    size_t n = d->clusters.n, nt = b->s.ngpu_types;
    b->s.clusters = xcalloc(n + 1, sizeof *b->s.clusters);
    b->cl = xcalloc(n + 1, sizeof *b->cl);
    b->s.nclusters = n;
    for (size_t c = 0; c < n; c++) {
        const struct db_snap_cluster *row = &d->clusters.v[c];
        idmap_add(&b->clusters, row->id);
        struct adm_cluster *cl = &b->s.clusters[c];
        cl->gpus = xcalloc(nt + 1, sizeof *cl->gpus);
        b->cl[c].ops = backend_find(row->kind);
        b->cl[c].options = json_loads(row->options, 0, NULL);
        if (!b->cl[c].options)
            b->cl[c].options = json_object();
        cl->down = !row->healthy || !b->cl[c].ops;
        cl->max_nodes = b->cl[c].ops ? b->cl[c].ops->max_nodes : 0;
        json_int_t maxtl =
            json_integer_value(json_object_get(b->cl[c].options, "max_time_limit_minutes"));
        cl->max_time_limit_s = maxtl > 0 && maxtl < 1000000 ? (int)maxtl * 60 : 0;
    }
    for (size_t i = 0; i < d->inventory.n; i++) {
        const struct db_snap_inventory *inv = &d->inventory.v[i];
        int c = idmap_get(&b->clusters, inv->cluster_id);
        const char *res = inv->resource;
        if (c < 0)
            continue;
        struct adm_cluster *cl = &b->s.clusters[c];
        if (strncmp(res, "gpu:", 4) == 0)
            cl->gpus[idmap_get(&b->types, res + 4)] = inv->total;
        else if (strcmp(res, "cpu") == 0)
            cl->cpus = inv->total;
        else if (strcmp(res, "memory_gib") == 0)
            cl->memory_gib = inv->total;
    }
}

static void build_tenants(struct build *b, const struct db_snapshot *d)
{
    size_t n = d->tenants.n, nt = b->s.ngpu_types;
    b->s.tenants = xcalloc(n + 1, sizeof *b->s.tenants);
    b->s.ntenants = n;
    for (size_t t = 0; t < n; t++) {
        idmap_add(&b->tenants, d->tenants.v[t].id);
        struct adm_tenant *te = &b->s.tenants[t];
        te->gpu = xcalloc(nt + 1, sizeof *te->gpu); /* absent GPU type: 0 and 0 */
        te->cpu_limit = te->memory_limit = te->jobs_limit = ADM_UNLIMITED;
        te->gpu_hours_budget = ADM_UNLIMITED;
        te->suspended = d->tenants.v[t].suspended;
    }
    for (size_t i = 0; i < d->tquotas.n; i++) {
        const struct db_snap_tquota *q = &d->tquotas.v[i];
        int t = idmap_get(&b->tenants, q->tenant_id);
        if (t < 0)
            continue;
        struct adm_tenant *te = &b->s.tenants[t];
        const char *res = q->resource;
        double g = q->guaranteed, l = q->limit;
        if (strncmp(res, "gpu:", 4) == 0) {
            int k = idmap_get(&b->types, res + 4);
            te->gpu[k].guaranteed = g;
            te->gpu[k].limit = l;
        } else if (strcmp(res, "cpu") == 0) {
            te->cpu_limit = l;
        } else if (strcmp(res, "memory_gib") == 0) {
            te->memory_limit = l;
        } else if (strcmp(res, "jobs") == 0) {
            te->jobs_limit = l;
        } else if (strcmp(res, "gpu_hours_month") == 0) {
            te->gpu_hours_budget = l;
        }
    }
}

static int project_of(struct build *b, const char *id, int tenant)
{
    int p = idmap_get(&b->projects, id);
    if (p >= 0)
        return p;
    p = idmap_add(&b->projects, id);
    if (b->projects.n > b->project_cap) {
        b->project_cap = b->project_cap ? b->project_cap * 2 : 64;
        b->s.projects = xreallocarray(b->s.projects, b->project_cap, sizeof *b->s.projects);
    }
    struct adm_project *pr = &b->s.projects[p];
    memset(pr, 0, sizeof *pr);
    pr->tenant = tenant;
    pr->gpu_limit = xcalloc(b->s.ngpu_types + 1, sizeof *pr->gpu_limit);
    for (size_t k = 0; k < b->s.ngpu_types; k++)
        pr->gpu_limit[k] = ADM_UNLIMITED;
    pr->cpu_limit = pr->memory_limit = pr->jobs_limit = ADM_UNLIMITED;
    pr->gpu_hours_budget = ADM_UNLIMITED;
    b->s.nprojects = b->projects.n;
    return p;
}

static void build_projects(struct build *b, const struct db_snapshot *d)
{
    for (size_t i = 0; i < d->pquotas.n; i++) {
        const struct db_snap_pquota *q = &d->pquotas.v[i];
        int t = idmap_get(&b->tenants, q->tenant_id);
        if (t < 0)
            continue;
        int p = project_of(b, q->project_id, t); /* may move b->s.projects */
        struct adm_project *pr = &b->s.projects[p];
        pr->slug = q->slug; /* the snapshot outlives the pass */
        const char *res = q->resource;
        double l = q->limit;
        if (strncmp(res, "gpu:", 4) == 0)
            pr->gpu_limit[idmap_get(&b->types, res + 4)] = l;
        else if (strcmp(res, "cpu") == 0)
            pr->cpu_limit = l;
        else if (strcmp(res, "memory_gib") == 0)
            pr->memory_limit = l;
        else if (strcmp(res, "jobs") == 0)
            pr->jobs_limit = l;
        else if (strcmp(res, "gpu_hours_month") == 0)
            pr->gpu_hours_budget = l;
    }
}

/* Projects under allocation: all ended, or the running one's GPU-hours */
static void build_allocs(struct build *b, const struct db_snapshot *d)
{
    for (size_t i = 0; i < d->allocs.n; i++) {
        const struct db_snap_alloc *a = &d->allocs.v[i];
        int t = idmap_get(&b->tenants, a->tenant_id);
        if (t < 0)
            continue;
        int p = project_of(b, a->project_id, t); /* may move b->s.projects */
        struct adm_project *pr = &b->s.projects[p];
        pr->slug = a->slug;
        pr->alloc = a->active ? ADM_ALLOC_ACTIVE : ADM_ALLOC_EXPIRED;
        pr->alloc_gpu_hours = a->gpu_hours >= 0 ? a->gpu_hours : ADM_UNLIMITED;
        pr->alloc_gpu_hours_used = a->used;
    }
}

static void build_hours(struct build *b, const struct db_snapshot *d)
{
    for (size_t i = 0; i < d->hours.n; i++) {
        const struct db_snap_hours *h = &d->hours.v[i];
        int t = idmap_get(&b->tenants, h->tenant_id);
        int p = idmap_get(&b->projects, h->project_id);
        if (t >= 0)
            b->s.tenants[t].gpu_hours_used += h->hours;
        if (p >= 0)
            b->s.projects[p].gpu_hours_used += h->hours;
    }
}

/* What queued and active jobs share. */
static bool job_common(struct build *b, const struct db_snap_job *r, struct adm_job *j)
{
    j->tenant = idmap_get(&b->tenants, r->tenant_id);
    if (j->tenant < 0)
        return false;
    j->project = project_of(b, r->project_id, j->tenant);
    j->gpu_type = type_of(b, r->gpu_type);
    j->gpus = r->gpus;
    j->cpus = r->cpus;
    j->memory_gib = r->memory_gib;
    j->nodes = r->nodes;
    j->priority = 2 - r->queue_rank; /* queue_rank 0 = high */
    j->submitted = r->submitted;
    j->time_limit_s = r->time_limit_s;
    j->cluster = r->cluster_id ? idmap_get(&b->clusters, r->cluster_id) : -1;
    return true;
}

/* GPU indexes an active job holds into the cluster's used ones */
static void mark_indexes(struct cl_info *cl, const int *idx, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (idx[k] >= 0 && idx[k] < MAX_INDEXES)
            cl->used[idx[k]] = 1;
}

static void build_jobs(struct build *b, const struct db_snapshot *d)
{
    size_t nq = d->queued.n, na = d->active.n;
    b->s.queued = xcalloc(nq + 1, sizeof *b->s.queued);
    b->s.active = xcalloc(na + 1, sizeof *b->s.active);
    b->qrow = xcalloc(nq + 1, sizeof *b->qrow);
    b->arow = xcalloc(na + 1, sizeof *b->arow);
    for (size_t q = 0; q < nq; q++) {
        struct adm_job *j = &b->s.queued[b->s.nqueued];
        if (!job_common(b, &d->queued.v[q], j))
            continue;
        b->qrow[b->s.nqueued++] = q;
    }
    for (size_t a = 0; a < na; a++) {
        const struct db_snap_job *r = &d->active.v[a];
        struct adm_job *j = &b->s.active[b->s.nactive];
        if (!job_common(b, r, j))
            continue;
        b->arow[b->s.nactive] = a;
        j->preemptible = r->preemptible;
        j->stopping = r->stopping;
        j->admitted = r->admitted;
        j->expected_end = r->expected_end;
        if (j->cluster >= 0)
            mark_indexes(&b->cl[j->cluster], r->gpu_indexes, r->ngpu_indexes);
        b->s.nactive++;
    }
}

/* Faulty GPUs are never handed out: as if a job held them (-1: every GPU of the node). */
static void mark_faults(struct build *b, const struct db_snapshot *d)
{
    for (size_t i = 0; i < d->faults.n; i++) {
        const struct db_snap_fault *f = &d->faults.v[i];
        int c = idmap_get(&b->clusters, f->cluster_id);
        if (c < 0)
            continue;
        if (f->gpu_index < 0) {
            memset(b->cl[c].used, 1, sizeof b->cl[c].used);
            continue;
        }
        if (f->gpu_index < MAX_INDEXES)
            b->cl[c].used[f->gpu_index] = 1;
    }
}

static void build_free(struct build *b)
{
    for (size_t c = 0; c < b->s.nclusters; c++) {
        free(b->s.clusters[c].gpus);
        json_decref(b->cl[c].options);
    }
    for (size_t t = 0; t < b->s.ntenants; t++)
        free(b->s.tenants[t].gpu);
    for (size_t p = 0; p < b->s.nprojects; p++)
        free(b->s.projects[p].gpu_limit);
    for (size_t k = 0; k < b->types.n; k++)
        free(b->type_names[k]);
    free(b->type_names);
    free(b->s.clusters);
    free(b->cl);
    free(b->s.tenants);
    free(b->s.projects);
    free(b->s.queued);
    free(b->s.active);
    free(b->qrow);
    free(b->arow);
    idmap_free(&b->tenants);
    idmap_free(&b->projects);
    idmap_free(&b->clusters);
    idmap_free(&b->types);
}

/*
 * Where aidc assigns GPUs, the lowest free indexes of the job's type, as
 * "{4,5}" into out. False when the cluster has not that many free (its
 * options changed under running jobs): the job waits for the next pass.
 */
static bool assign_indexes(struct build *b, const struct adm_job *j, int c, char *out, size_t n)
{
    struct cl_info *cl = &b->cl[c];
    out[0] = '\0';
    if (!cl->ops || !cl->ops->gpu_range || j->gpu_type < 0)
        return true;
    int first = 0, count = 0;
    if (!cl->ops->gpu_range(cl->options, b->s.gpu_types[j->gpu_type], &first, &count))
        return false;
    int pick[64], got = 0;
    for (int i = first; i < first + count && i < MAX_INDEXES && got < j->gpus && got < 64; i++)
        if (!cl->used[i])
            pick[got++] = i;
    if (got < j->gpus)
        return false;
    size_t len = 0;
    for (int k = 0; k < got && len + 8 < n; k++) {
        cl->used[pick[k]] = 1;
        len += (size_t)snprintf(out + len, n - len, "%c%d", k ? ',' : '{', pick[k]);
    }
    snprintf(out + len, n - len, "}");
    return true;
}

static bool estimate_moved(const struct db_snap_job *q, double est)
{
    if (q->has_estimate != (est > 0))
        return true;
    return q->has_estimate && fabs(q->estimated_start - est) >= ESTIMATE_SLACK_S;
}

/* Each queued job written to is touched in cache: the next read takes it again. */
static int write_decisions(struct db *db, struct build *b, const struct db_snapshot *d,
                           const struct adm_result *res, const struct config *cfg,
                           struct db_queue_cache *cache, struct admitter_stats *st)
{
    struct pgarray ids = PGARRAY_INIT, cls = PGARRAY_INIT, pre = PGARRAY_INIT, idx = PGARRAY_INIT;
    struct pgarray vic = PGARRAY_INIT, forj = PGARRAY_INIT;
    struct pgarray wid = PGARRAY_INIT, wreason = PGARRAY_INIT, west = PGARRAY_INIT;
    bool *admitted = xcalloc(d->queued.n + 1, sizeof *admitted);
    for (size_t k = 0; k < res->ndecisions; k++) {
        const struct adm_decision *dc = &res->decisions[k];
        if (dc->kind == ADM_ADMIT) {
            char gi[512];
            const struct adm_job *j = &b->s.queued[dc->job];
            size_t row = b->qrow[dc->job];
            if (!assign_indexes(b, j, dc->cluster, gi, sizeof gi)) {
                log_warn("admission: no free GPU index of the cluster for job %s",
                         d->queued.v[row].id);
                continue;
            }
            admitted[row] = true;
            pgarray_add(&ids, d->queued.v[row].id);
            db_queue_cache_touch(cache, d->queued.v[row].id);
            pgarray_add(&cls, d->clusters.v[dc->cluster].id);
            pgarray_add(&pre, dc->preemptible ? "t" : "f");
            st->borrowed += dc->preemptible;
            pgarray_add(&idx, gi[0] ? gi : NULL);
        } else if (dc->kind == ADM_PREEMPT) {
            pgarray_add(&vic, d->active.v[b->arow[dc->job]].id);
            pgarray_add(&forj, d->queued.v[b->qrow[dc->for_job]].id);
        } else {
            const struct db_snap_job *q = &d->queued.v[b->qrow[dc->job]];
            const char *old = q->reason ? q->reason : "";
            if (strcmp(old, dc->reason) == 0 && !estimate_moved(q, dc->estimated_start))
                continue;
            if (wid.n >= MAX_WAIT_WRITES) {
                st->waits_pending++;
                continue;
            }
            pgarray_add(&wid, q->id);
            db_queue_cache_touch(cache, q->id);
            pgarray_add(&wreason, dc->reason);
            if (dc->estimated_start > 0)
                pgarray_addf(&west, "%.0f", dc->estimated_start);
            else
                pgarray_add(&west, NULL);
        }
    }
    int e = 0;
    long n = 0;
    if (ids.n) {
        e = db_sched_admit(db, pgarray_str(&ids), pgarray_str(&cls), pgarray_str(&pre),
                           pgarray_str(&idx), &n);
        st->admitted = (size_t)n;
        if (st->borrowed > st->admitted) /* a job that left meanwhile was not admitted */
            st->borrowed = st->admitted;
    }
    if (!e && vic.n) {
        e = db_sched_preempt(db, pgarray_str(&vic), pgarray_str(&forj), cfg->preempt_grace_seconds,
                             &n);
        st->preempted = (size_t)n;
    }
    if (!e && wid.n) {
        e = db_sched_waits(db, pgarray_str(&wid), pgarray_str(&wreason), pgarray_str(&west));
        st->waits_written = wid.n;
    }
    if (!e)
        e = queuemarks_write(db, d, admitted);
    free(admitted);
    struct pgarray *all[] = {&ids, &cls, &pre, &idx, &vic, &forj, &wid, &wreason, &west};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pgarray_free(all[i]);
    return e;
}

int admitter_pass(struct db *db, const struct config *cfg, struct admitter_stats *stats)
{
    return admitter_pass_cached(db, cfg, NULL, DB_QUEUE_FULL, stats);
}

int admitter_pass_cached(struct db *db, const struct config *cfg, struct db_queue_cache *cache,
                         enum db_queue_read how, struct admitter_stats *stats)
{
    struct admitter_stats local;
    struct admitter_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    const struct db_ctx ctx = {.roles = "system"};
    double t0 = now_s();
    int e = db_begin(db, &ctx, false);
    bool got = false;
    if (!e)
        e = db_sched_lock(db, DB_LOCK_ADMITTER, &got);
    if (e || !got) {
        db_rollback(db);
        st->skipped = !e;
        return e;
    }
    /* a job a pass before put on a GPU that failed meanwhile stops now (db/gpufaults.h) */
    char *swept = NULL;
    e = db_gpu_fault_sweep(db, cfg->preempt_grace_seconds, &swept);
    if (!e && strcmp(swept, "{}") != 0)
        log_info("admission: jobs on faulty GPUs asked to stop: %s", swept);
    free(swept);
    struct db_snapshot d;
    if (!e)
        e = db_sched_snapshot_cached(db, cache, how, &d);
    if (e) {
        db_rollback(db);
        return e;
    }
    struct build b;
    memset(&b, 0, sizeof b);
    collect_types(&b, &d);
    build_clusters(&b, &d);
    build_tenants(&b, &d);
    build_projects(&b, &d);
    build_jobs(&b, &d);
    mark_faults(&b, &d);
    build_allocs(&b, &d);
    build_hours(&b, &d);
    b.s.now = now_s();
    b.s.starvation_seconds = cfg->starvation_seconds;
    b.s.preempt_grace_seconds = cfg->preempt_grace_seconds;
    b.s.month_end = month_end(b.s.now);
    st->queued = b.s.nqueued;
    st->fetched = cache ? db_queue_cache_fetched(cache) : d.queued.n;
    st->active = b.s.nactive;
    st->load_ms = ms_since(t0);

    double t1 = now_s();
    struct adm_result res;
    admission_run(&b.s, &res);
    st->decide_ms = ms_since(t1);

    double t2 = now_s();
    e = write_decisions(db, &b, &d, &res, cfg, cache, st);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    st->write_ms = ms_since(t2);
    admission_result_free(&res);
    build_free(&b);
    db_sched_snapshot_free(&d);
    if (!e)
        schedstats_admission(ms_since(t0), st->admitted, st->borrowed, st->preempted);
    if (!e && (st->admitted || st->preempted))
        log_info("admission: %zu queued, %zu admitted, %zu preemptions requested (%.1f ms)",
                 st->queued, st->admitted, st->preempted, ms_since(t0));
    return e;
}

/* The worker's state between passes: when the last one started, when the
 * last full read was, the queued jobs it read, whether it left writes for the
 * next; whether it is asked to stop. */
struct admitter_run {
    const struct config *cfg;
    double last_start, last_full;
    struct db_queue_cache *cache;
    bool more;
    size_t followed;    /* the pass's queue at the last question of follow_queue */
    double follow_next; /* when follow_queue asks next, grown or not */
    atomic_bool stop;
};

static void run_free(void *arg)
{
    struct admitter_run *run = arg;
    db_queue_cache_free(run->cache);
    free(run);
}

/*
 * One pass per burst: a pass woken by a notification less than
 * admission_coalesce_ms after the last one started waits out the rest of that
 * time; the pass then takes the notifications that came meanwhile (read_kind:
 * their commits are visible to the snapshot that follows). A burst of submits
 * costs a pass every coalesce_ms instead of one per commit; a lone submit after
 * a quiet spell is looked at at once. (Waiting twice the last pass's length as well halved the
 * admitter's share of a burst, and multiplied the wait of a job behind 10,000
 * held ones by 3-16 at p99: docs/performance.md.) The wait is cut short when
 * aidcd stops.
 */
static void coalesce(struct admitter_run *run)
{
    double gap_s = run->cfg->admission_coalesce_ms / 1000.0;
    double end = run->last_start + gap_s, wait_s = end - now_s();
    if (wait_s <= 0 || wait_s > gap_s)
        return;
    while (wait_s > 0 && !atomic_load(&run->stop)) {
        double nap = wait_s < 0.05 ? wait_s : 0.05;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(nap * 1e9)};
        nanosleep(&ts, NULL);
        wait_s = end - now_s();
    }
}

/* A new lead: what was kept may predate another replica's passes. */
static int on_lead(struct db *db, void *arg)
{
    (void)db;
    struct admitter_run *run = arg;
    db_queue_cache_drop(run->cache);
    return 0;
}

/*
 * How a pass reads the queue. Timed passes, and at least one pass each
 * interval during a steady stream of notifications, read every queued job
 * whole: what changed without a word is seen then. A pass that nothing but
 * submits woke - or that goes on with the writes the last one left - reads the
 * new jobs only; one that anything else woke (a cancel, an end, a requeue, a
 * dependency met, a new connection that may have missed some) reads which
 * jobs are in and the changed ones.
 */
static enum db_queue_read read_kind(struct db *db, struct admitter_run *run, bool notified)
{
    /* those that came since the last pass: this one sees what they announced (a
     * failure shows in the pass's own statements) */
    (void)db_wait(db, 0, -1);
    bool only_submits = db_notified_only(db, "submit");
    bool due = run->last_start - run->last_full >= run->cfg->admission_interval_ms / 1000.0;
    if (due || (!notified && !run->more))
        return DB_QUEUE_FULL;
    return only_submits ? DB_QUEUE_NEW : DB_QUEUE_CHANGED;
}

/*
 * The database is asked whether the statistics of jobs know the queue
 * (db_sched_follow_queue): when the pass's queue reached a thousand jobs or
 * doubled since the last question, and every FOLLOW_PASSES admission
 * intervals besides (a held array is one row of a pass but each of its tasks
 * a row of jobs); after a vacuum held the table, again FOLLOW_RETRY_S later.
 */
#define FOLLOW_PASSES  6
#define FOLLOW_RETRY_S 5.0

static void follow_queue(struct db *db, struct admitter_run *run, size_t queued)
{
    double now = now_s(), every = FOLLOW_PASSES * run->cfg->admission_interval_ms / 1000.0;
    if (queued < run->followed / 4)
        run->followed = queued;
    bool grew = queued >= 1000 && queued >= 2 * run->followed;
    if (!grew && now < run->follow_next)
        return;
    run->followed = queued;
    run->follow_next = now + every;
    const struct db_ctx ctx = {.roles = "system"};
    enum db_follow found = DB_FOLLOW_KNOWN;
    int e = db_begin(db, &ctx, false);
    if (!e)
        e = db_sched_follow_queue(db, &found);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (e)
        log_warn("admission: could not compare the statistics of jobs with the queue: %s",
                 db_last_error(db)->message);
    else if (found == DB_FOLLOW_ANALYZED)
        log_info("admission: the queue outgrew the statistics of jobs: analysed (%zu queued "
                 "in the pass)",
                 queued);
    if (e || found == DB_FOLLOW_BUSY)
        run->follow_next = now + (every < FOLLOW_RETRY_S ? every : FOLLOW_RETRY_S);
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    struct admitter_run *run = arg;
    if (notified)
        coalesce(run);
    if (atomic_load(&run->stop))
        return 0;
    run->last_start = now_s();
    enum db_queue_read how = read_kind(db, run, notified);
    if (how == DB_QUEUE_FULL)
        run->last_full = run->last_start;
    struct admitter_stats st;
    int e = admitter_pass_cached(db, run->cfg, run->cache, how, &st);
    /* the next pass starts from a full read: after a failure, and after a pass
     * another session made (its admissions notify nobody) */
    if (e || st.skipped)
        db_queue_cache_drop(run->cache);
    run->more = !e && st.waits_pending > 0;
    if (!e && !st.skipped)
        follow_queue(db, run, st.queued);
    return e ? e : run->more;
}

struct worker *admitter_start(const struct config *cfg)
{
    struct admitter_run *run = xcalloc(1, sizeof *run);
    run->cfg = cfg;
    run->cache = db_queue_cache_new();
    atomic_init(&run->stop, false);
    struct worker_spec spec = {
        .name = "admitter",
        .lead = WORKER_LEAD_ADMITTER,
        .channels = {"aidc_jobs", NULL},
        .interval_ms = cfg->admission_interval_ms,
        .round = round_fn,
        .arg = run,
        .owns_arg = true,
        .free_arg = run_free,
        .on_lead = on_lead,
        .cancel = &run->stop,
    };
    return worker_start(cfg->worker_database_url, &spec);
}
