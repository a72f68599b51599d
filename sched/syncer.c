/* syncer.c - backend states and inventory into the database (see syncer.h). */
#include "syncer.h"

#include "../backends/backend.h"
#include "../db/clusters.h"
#include "../db/sched.h"
#include "../server/config.h"
#include "../server/err.h"
#include "../server/log.h"
#include "../server/xalloc.h"
#include "inventory.h"
#include "schedstats.h"
#include "worker.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CLUSTERS 256

struct seen {
    char id[37];
    time_t last_inventory;
};

struct syncer {
    const struct config *cfg;
    struct worker *worker;
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
    n->last_inventory = 0;
    return n;
}

/*
 * The transitions that bring a job from state to what the backend reports:
 * at most two (a job that started and ended between two looks is recorded
 * as running first, so its history and its run interval are whole).
 */
static size_t plan(const char *id, const char *state, const char *stop,
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
    if (bs->state == BS_SUCCEEDED) {
        t[n].to = "succeeded";
    } else if (bs->state == BS_STOPPED && stop && strcmp(stop, "preempt") == 0) {
        t[n].to = "queued";
        t[n].reason = "requeued after preemption";
    } else if (bs->state == BS_STOPPED && stop) {
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

static int sync_jobs(struct db *db, struct cluster *cl, size_t ncl)
{
    PGresult *r = NULL;
    int e = db_sched_active(db, &r);
    for (int i = 0; !e && i < PQntuples(r); i++) {
        const char *id = PQgetvalue(r, i, 0), *cid = PQgetvalue(r, i, 1);
        struct cluster *c = NULL;
        for (size_t k = 0; k < ncl && !c; k++)
            if (strcmp(cl[k].bc.id, cid) == 0)
                c = &cl[k];
        if (!c || !c->ops)
            continue;
        struct backend_status bs;
        char err[512] = "";
        memset(&bs, 0, sizeof bs);
        if (c->ops->poll(&c->bc, PQgetvalue(r, i, 4), PQgetvalue(r, i, 3), &bs, err, sizeof err)) {
            log_warn("cannot ask cluster %s about job %s: %s", c->bc.name, id, err);
            continue;
        }
        struct db_transition t[2];
        size_t n = plan(id, PQgetvalue(r, i, 2), PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5),
                        &bs, t);
        for (size_t k = 0; !e && k < n; k++) {
            bool changed = false;
            e = db_job_transition(db, &t[k], &changed);
            if (!e && changed)
                log_debug("job %s: %s -> %s", id, t[k].from, t[k].to);
        }
    }
    PQclear(r);
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
    PGresult *r = NULL;
    e = db_cluster_all(db, &r);
    size_t ncl = e ? 0 : (size_t)PQntuples(r);
    struct cluster *cl = xcalloc(ncl + 1, sizeof *cl);
    for (size_t k = 0; k < ncl; k++) {
        int i = (int)k;
        cl[k].options = json_loads(PQgetvalue(r, i, 5), 0, NULL);
        if (!cl[k].options)
            cl[k].options = json_object();
        cl[k].ops = backend_find(PQgetvalue(r, i, 2));
        cl[k].bc = (struct backend_cluster){
            .id = PQgetvalue(r, i, 0), .name = PQgetvalue(r, i, 1), .kind = PQgetvalue(r, i, 2),
            .endpoint = PQgetvalue(r, i, 3), .credentials_ref = PQgetvalue(r, i, 4),
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
        e = sync_jobs(db, cl, ncl);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (!e)
        schedstats_sync();
    for (size_t k = 0; k < ncl; k++)
        json_decref(cl[k].options);
    free(cl);
    PQclear(r);
    return e;
}

struct syncer *syncer_start(const struct config *cfg)
{
    struct syncer *s = xcalloc(1, sizeof *s);
    s->cfg = cfg;
    struct worker_spec spec = {
        .name = "syncer",
        .channels = {"aidc_sync", NULL},
        .interval_ms = cfg->sync_interval_ms,
        .round = round_fn,
        .arg = s,
    };
    s->worker = worker_start(cfg->database_url, &spec);
    if (!s->worker) {
        free(s);
        return NULL;
    }
    return s;
}

void syncer_stop(struct syncer *s)
{
    if (!s)
        return;
    worker_stop(s->worker);
    free(s);
}
