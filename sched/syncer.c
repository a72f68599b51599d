/* syncer.c - backend states and inventory into the database (see syncer.h). */
#include "syncer.h"

#include "../backends/callstats.h"
#include "../backends/backend.h"
#include "../db/clusters.h"
#include "../db/efficiency.h"
#include "../db/jobarrays.h"
#include "../db/sched.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "inventory.h"
#include "schedstats.h"
#include "../db/worker.h"

#include <jansson.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CLUSTERS 256

/* How far before the last look the changes asked for reach (clock skew, and
 * Slurm's update times in whole seconds). */
#define CHANGED_MARGIN_S 10
/* Every this often, ask about all jobs: one the cluster forgot shows as lost. */
#define FULL_POLL_S 600

struct seen {
    char id[37];
    time_t last_inventory;
    time_t last_poll, last_full; /* of poll_changed */
};

/* The worker's round state (it owns it: worker_spec.owns_arg). */
struct syncer {
    const struct config *cfg;
    struct seen seen[MAX_CLUSTERS];
    size_t nseen;
};

struct cluster {
    struct backend_cluster bc;
    const struct backend_ops *ops;
    json_t *options;
};

static struct seen *seen_of(struct syncer *s, const char *id)
{
    for (size_t i = 0; i < s->nseen; i++)
        if (strcmp(s->seen[i].id, id) == 0)
            return &s->seen[i];
    if (s->nseen == MAX_CLUSTERS)
        return NULL;
    struct seen *n = &s->seen[s->nseen++];
    snprintf(n->id, sizeof n->id, "%s", id);
    n->last_inventory = n->last_poll = n->last_full = 0;
    return n;
}

/*
 * The transitions that bring a job from state to what the backend reports:
 * at most two (a job that started and ended between two looks is recorded
 * as running first, so its history and its run interval are whole).
 */
static size_t plan(const char *id, const char *state, const char *stop, bool deletes_on_stop,
                   const struct backend_status *bs, struct db_transition *t)
{
    size_t n = 0;
    bool was_running = strcmp(state, "running") == 0;
    struct db_transition base = {.job_id = id, .from = state, .exit_code = -1,
                                 .started_at = (double)bs->started_at};
    switch (bs->state) {
    case BS_PENDING:
        if (strcmp(state, "admitted") == 0) {
            t[n] = base;
            t[n].to = "pending";
            t[n++].reason = "waiting in the cluster";
        } else if (was_running && bs->restarts > 0) {
            /* the cluster requeued it by itself (Slurm's preemption by partition) */
            t[n] = base;
            t[n].to = "pending";
            t[n++].reason = "requeued by the cluster";
        }
        return n;
    case BS_RUNNING:
        if (!was_running) {
            t[n] = base;
            t[n].to = "running";
            t[n++].reason = "started";
        }
        return n;
    case BS_UNKNOWN:
    case BS_SUCCEEDED:
    case BS_FAILED:
    case BS_STOPPED:
    default:
        break;
    }
    if (!was_running && bs->started_at > 0 && bs->state != BS_UNKNOWN) {
        t[n] = base;
        t[n].to = "running";
        t[n++].reason = "started";
        base.from = "running";
    }
    t[n] = base;
    t[n].finished_at = (double)bs->finished_at;
    t[n].exit_code = bs->exit_code;
    t[n].reason = bs->reason[0] ? bs->reason : NULL;
    /* a job aidc stopped and the cluster no longer has (Kubernetes deletes the Job)
     * ended as asked */
    bool stopped = bs->state == BS_STOPPED || (bs->state == BS_UNKNOWN && stop && deletes_on_stop);
    if (bs->state == BS_SUCCEEDED) {
        t[n].to = "succeeded";
    } else if (stopped && stop && strcmp(stop, "preempt") == 0) {
        t[n].to = "queued";
        t[n].reason = "requeued after preemption";
    } else if (stopped && stop) {
        t[n].to = "cancelled";
        t[n].reason = "cancelled";
    } else if (bs->state == BS_STOPPED) {
        t[n].to = "failed";
        t[n].reason = "stopped outside aidc";
    } else if (bs->state == BS_UNKNOWN) {
        t[n].to = "failed";
        t[n].reason = "the cluster lost the job";
    } else {
        t[n].to = "failed";
    }
    return n + 1;
}

/* Bring active job j to what the backend reports. */
static int apply(struct db *db, const struct db_active_job *j, const struct backend_status *bs,
                 bool deletes_on_stop)
{
    const char *id = j->id;
    const char *stop = j->stop;
    char now[16];
    /* a job gone from a backend that deletes what it stops: was it stopped meanwhile
     * (after this round's snapshot, before the cluster was asked)? */
    if (bs->state == BS_UNKNOWN && deletes_on_stop) {
        int e = db_sched_stop_now(db, id, now, sizeof now);
        if (e)
            return e;
        stop = now[0] ? now : NULL;
    }
    struct db_transition t[2];
    size_t n = plan(id, j->state, stop, deletes_on_stop, bs, t);
    int e = 0;
    for (size_t k = 0; !e && k < n; k++) {
        bool changed = false;
        e = db_job_transition(db, &t[k], &changed);
        if (!e && changed)
            log_debug("job %s: %s -> %s", id, t[k].from, t[k].to);
    }
    /* an ended run's measured use: the job's efficiency (docs/efficiency.md) */
    if (!e && n > 0 && bs->has_usage && t[n - 1].finished_at > 0 &&
        strcmp(t[n - 1].to, "queued") != 0)
        e = db_eff_usage(db, id, bs->cpu_seconds, (double)(bs->finished_at - bs->started_at),
                         bs->mem_peak_bytes);
    /* what keeps it pending, where the cluster says (the local executor's image pull) */
    if (!e && bs->state == BS_PENDING && bs->reason[0])
        e = db_job_pending_reason(db, id, bs->reason);
    return e;
}

/* The active jobs of one cluster, and which of them the backend reported. */
struct batch {
    struct db *db;
    const char *cluster_id;
    const struct db_active_job *v; /* the round's active jobs */
    const size_t *rows;            /* those of this cluster */
    bool *reported;
    size_t n;
    bool deletes_on_stop; /* the backend deletes what it stops (Kubernetes) */
    int e;
};

/* "<id>_<digits>", the id without '_' (a Slurm job id, a Kubernetes namespace/name):
 * a task of a job array (backend.h, array_count) */
static bool array_task_id(const char *s)
{
    const char *us = strchr(s, '_');
    return us && us > s && us[1] && strspn(us + 1, "0123456789") == strlen(us + 1);
}

/* A task of a whole array the cluster shows for the first time: its row joins the
 * active jobs as pending, then moves as reported. */
static int task_seen(struct batch *b, const char *backend_id, const struct backend_status *bs)
{
    struct db_jobarray_task t;
    bool found = false;
    int e = db_jobarray_task_seen(b->db, b->cluster_id, backend_id, &t, &found);
    if (e || !found)
        return e;
    struct db_active_job j = {.state = "pending",
                              .backend_job_id = backend_id,
                              .run_key = t.run_key,
                              .stop = t.stop[0] ? t.stop : NULL};
    snprintf(j.id, sizeof j.id, "%s", t.id);
    snprintf(j.cluster_id, sizeof j.cluster_id, "%s", b->cluster_id);
    return apply(b->db, &j, bs, b->deletes_on_stop);
}

static void on_report(void *arg, const char *backend_id, const char *run_key,
                      const struct backend_status *bs)
{
    (void)run_key;
    struct batch *b = arg;
    for (size_t k = 0; !b->e && k < b->n; k++) {
        const struct db_active_job *j = &b->v[b->rows[k]];
        if (!b->reported[k] && strcmp(j->backend_job_id, backend_id) == 0) {
            b->reported[k] = true;
            if (!j->whole_array)
                b->e = apply(b->db, j, bs, b->deletes_on_stop);
            return;
        }
    }
    if (!b->e && array_task_id(backend_id))
        b->e = task_seen(b, backend_id, bs);
}

/* One call for all of a cluster's jobs: those changed since the last look. */
static int sync_changed(struct syncer *s, struct db *db, struct cluster *c,
                        const struct db_active_job *v, const size_t *rows, size_t n)
{
    struct seen *sn = seen_of(s, c->bc.id);
    time_t now = time(NULL);
    bool full = c->ops->poll_lists_all || !sn || !sn->last_poll ||
                now - sn->last_full >= FULL_POLL_S;
    time_t since = full ? 0 : sn->last_poll - CHANGED_MARGIN_S;
    struct batch b = {.db = db, .cluster_id = c->bc.id, .v = v, .rows = rows, .n = n,
                      .deletes_on_stop = c->ops->poll_lists_all,
                      .reported = xcalloc(n + 1, sizeof *b.reported)};
    char err[512] = "";
    struct timespec t0 = callstats_start();
    int pe = c->ops->poll_changed(&c->bc, since, on_report, &b, err, sizeof err);
    callstats_done(t0, c->bc.name, "poll", pe == 0);
    if (pe) {
        log_warn("cannot ask cluster %s about its jobs: %s", c->bc.name, err);
        free(b.reported);
        if (sn)
            sn->last_inventory = 0; /* the next round checks it whole, and marks it healthy */
        /* the jobs stay as they are; the next round asks again */
        return db_cluster_synced(db, c->bc.id, false, err, "", "");
    }
    /* a full answer without a job it was given: the cluster lost it */
    for (size_t k = 0; full && !b.e && k < n; k++) {
        struct backend_status gone = {.state = BS_UNKNOWN, .exit_code = -1};
        if (!b.reported[k] && !v[rows[k]].whole_array)
            b.e = apply(db, &v[rows[k]], &gone, b.deletes_on_stop);
    }
    free(b.reported);
    if (!b.e)
        b.e = db_cluster_jobs_seen(db, c->bc.id);
    if (!b.e && sn) {
        sn->last_poll = now;
        if (full)
            sn->last_full = now;
    }
    /* a full list is read a job at a time (slurmrest_list): this trims what is left of it */
    if (full && !c->ops->poll_lists_all)
        malloc_trim(0);
    return b.e;
}

static int sync_jobs(struct syncer *s, struct db *db, struct cluster *cl, size_t ncl)
{
    struct db_active_jobs act = {0};
    int e = db_sched_active(db, &act);
    size_t *rows = xcalloc(act.n + 1, sizeof *rows);
    for (size_t k = 0; !e && k < ncl; k++) {
        struct cluster *c = &cl[k];
        size_t n = 0;
        for (size_t i = 0; i < act.n; i++)
            if (strcmp(act.v[i].cluster_id, c->bc.id) == 0)
                rows[n++] = i;
        if (!n || !c->ops)
            continue;
        if (c->ops->poll_changed) {
            e = sync_changed(s, db, c, act.v, rows, n);
            continue;
        }
        bool all = true;
        for (size_t i = 0; !e && i < n; i++) {
            const struct db_active_job *j = &act.v[rows[i]];
            if (j->whole_array)
                continue; /* it follows its tasks */
            struct backend_status bs;
            char err[512] = "";
            memset(&bs, 0, sizeof bs);
            struct timespec t0 = callstats_start();
            int pe = c->ops->poll(&c->bc, j->run_key, j->backend_job_id, &bs, err, sizeof err);
            callstats_done(t0, c->bc.name, "poll", pe == 0);
            if (pe) {
                log_warn("cannot ask cluster %s about job %s: %s", c->bc.name, j->id, err);
                all = false;
                continue;
            }
            e = apply(db, j, &bs, false);
        }
        if (!e && all)
            e = db_cluster_jobs_seen(db, c->bc.id);
    }
    free(rows);
    db_active_jobs_free(&act);
    return e;
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    struct syncer *s = arg;
    const struct db_ctx ctx = {.roles = "system"};
    int e = db_begin(db, &ctx, false);
    bool got = false;
    if (!e)
        e = db_sched_lock(db, DB_LOCK_SYNCER, &got);
    if (e || !got) {
        db_rollback(db);
        return e;
    }
    struct db_clusters all = {0};
    e = db_cluster_all(db, &all);
    size_t ncl = e ? 0 : all.n;
    struct cluster *cl = xcalloc(ncl + 1, sizeof *cl);
    for (size_t k = 0; k < ncl; k++) {
        const struct db_cluster *c = &all.v[k];
        cl[k].options = json_loads(c->options_json, 0, NULL);
        if (!cl[k].options)
            cl[k].options = json_object();
        cl[k].ops = backend_find(c->kind);
        cl[k].bc = (struct backend_cluster){
            .id = c->id, .name = c->name, .kind = c->kind,
            .endpoint = c->endpoint, .credentials_ref = c->credentials_ref,
            .options = cl[k].options, .data_dir = s->cfg->data_dir, .self_exe = s->cfg->self_exe};
    }
    time_t now = time(NULL);
    bool refreshed = false;
    for (size_t k = 0; !e && k < ncl; k++) {
        struct seen *sn = seen_of(s, cl[k].bc.id);
        if (!notified && sn && now - sn->last_inventory < s->cfg->inventory_interval_seconds)
            continue;
        e = inventory_refresh(db, cl[k].ops, &cl[k].bc);
        if (!e && sn)
            sn->last_inventory = now;
        refreshed = true;
    }
    if (!e && refreshed)
        e = db_sched_wake(db, "aidc_jobs"); /* capacity may have changed */
    if (!e)
        e = sync_jobs(s, db, cl, ncl);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (!e)
        schedstats_sync();
    for (size_t k = 0; k < ncl; k++)
        json_decref(cl[k].options);
    free(cl);
    db_clusters_free(&all);
    return e;
}

struct worker *syncer_start(const struct config *cfg)
{
    struct syncer *s = xcalloc(1, sizeof *s);
    s->cfg = cfg;
    struct worker_spec spec = {
        .name = "syncer",
        .lead = WORKER_LEAD_SYNCER,
        .channels = {"aidc_sync", NULL},
        .interval_ms = cfg->sync_interval_ms,
        .round = round_fn,
        .owns_arg = true,
        .arg = s,
    };
    return worker_start(cfg->worker_database_url, &spec);
}
