/* nodeoutbox.c - delivery of node drains (see nodeoutbox.h). */
#include "nodeoutbox.h"

#include "../audit/audit.h"
#include "../backends/backend.h"
#include "../db/gpufaults.h"
#include "../db/pgarray.h"
#include "../db/sched.h"
#include "../lib/clock.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "dispatcher.h"
#include "schedstats.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH               8
#define MAX_BACKOFF_SECONDS 300


static void add_run(void *arg, const char *backend_id, const char *run_key)
{
    (void)run_key;
    pgarray_add(arg, backend_id);
}

/* "{a,b}" (uuids: no quoting) as a JSON array of strings (new reference). */
static json_t *ids_json(const char *literal)
{
    json_t *a = json_array();
    char *copy = xstrdup(literal ? literal : "{}"), *save = NULL;
    for (char *t = strtok_r(copy, "{,}", &save); t; t = strtok_r(NULL, "{,}", &save))
        json_array_append_new(a, json_string(t));
    free(copy);
    return a;
}

/* What one delivery did, recorded in one system transaction with its audit event. */
struct node_outcome {
    long long outbox_id;
    const char *cluster_id, *node;
    bool done;         /* delivered, or nothing more to do */
    int delay;         /* when not done: seconds until the next try */
    const char *error; /* ... and why */
    bool stop_runs;    /* a drain: ask the runs found on the node to stop */
    const char *runs;  /* their backend ids (text[] literal) */
    int grace_seconds;
    struct audit_event ev; /* details owned */
};

static int record(struct db *db, struct node_outcome *o)
{
    const struct db_ctx ctx = {.roles = "system"};
    char *stopped = NULL;
    int e = db_begin(db, &ctx, false);
    if (!e && o->stop_runs)
        e = db_gpu_fault_stop_runs(db, o->cluster_id, o->node, o->runs, o->grace_seconds, &stopped);
    if (!e && stopped)
        json_object_set_new(o->ev.details, "jobs_stopped", ids_json(stopped));
    if (!e)
        e = audit_record_system(db, &o->ev, true);
    if (!e)
        e = o->done ? db_outbox_done(db, o->outbox_id)
                    : db_outbox_failed(db, o->outbox_id, o->error, o->delay);
    /* the node's GPUs leave (or rejoin) the inventory at the next look; jobs may move */
    if (!e && o->done)
        e = db_sched_wake(db, "aidc_sync");
    if (!e && o->done)
        e = db_sched_wake(db, "aidc_jobs");
    free(stopped);
    if (!e)
        return db_commit(db);
    db_rollback(db);
    return e;
}

static void deliver(struct db *db, const struct config *cfg, const struct db_node_outbox *row)
{
    struct backend_cluster cl;
    dispatcher_cluster_row(&cl, &row->cluster, cfg);
    const char *node = row->node, *action = row->action;
    const char *reason = row->reason ? row->reason : "GPU fault";
    bool on = strcmp(action, "drain") == 0;
    const struct backend_ops *ops = backend_find(cl.kind);
    struct backend_call call = {0};
    char err[512] = "", ferr[512] = "";
    double started = clock_now_ms();
    int e = AIDC_EINVAL;
    if (ops && ops->drain)
        e = ops->drain(&cl, node, on, reason, &call, err, sizeof err);
    else
        snprintf(err, sizeof err, "clusters of kind %s have no node drain in this aidcd", cl.kind);
    /* AIDC_EINVAL: this cluster cannot, as configured; its runs there still stop */
    bool settled = e == 0 || e == AIDC_EINVAL;
    struct pgarray runs = PGARRAY_INIT;
    int fe = 0;
    if (on && settled && ops && ops->node_jobs)
        fe = ops->node_jobs(&cl, node, add_run, &runs, ferr, sizeof ferr);
    json_t *response = e ? json_pack("{s:s}", "error", err) : json_pack("{s:b}", "done", true);
    if (fe)
        json_object_set_new(response, "runs_error", json_string(ferr));
    json_t *d = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:i}", "cluster", cl.name, "kind",
                          cl.kind, "node", node, "reason", reason, "request",
                          call.request ? call.request : json_null(), "lookup",
                          call.lookup ? call.lookup : json_null(), "response", response,
                          "duration_ms", (int)(clock_now_ms() - started + 0.5));
    call.request = call.lookup = NULL;
    char resource[400];
    snprintf(resource, sizeof resource, "%s/%s", cl.name, node);
    int attempts = row->attempts;
    int shift = attempts < 9 ? attempts : 9;
    struct node_outcome o = {.outbox_id = row->id,
                             .cluster_id = cl.id,
                             .node = node,
                             .done = settled && fe == 0,
                             .delay = (1 << shift) < MAX_BACKOFF_SECONDS ? 1 << shift
                                                                         : MAX_BACKOFF_SECONDS,
                             .error = fe ? ferr : err,
                             .stop_runs = on && settled && fe == 0,
                             .runs = pgarray_str(&runs),
                             .grace_seconds = cfg->preempt_grace_seconds,
                             .ev = {.action = on ? "backend.drain" : "backend.undrain",
                                    .resource_type = "node",
                                    .resource_id = resource,
                                    .outcome = e || fe ? "error" : "success",
                                    .status = call.status,
                                    .details = d}};
    if (!o.done)
        log_warn("%s of node %s of cluster %s failed (attempt %d, again in %d s): %s", action, node,
                 cl.name, attempts, o.delay, o.error);
    else if (e)
        log_warn("cluster %s cannot %s node %s: %s", cl.name, action, node, err);
    schedstats_delivery(o.done);
    int re = record(db, &o);
    if (re)
        log_warn("cannot record the %s of node %s: %s (the lease expires and it is delivered "
                 "again)",
                 action, node, aidc_err_name(re));
    json_decref(d);
    backend_call_free(&call);
    pgarray_free(&runs);
    json_decref((json_t *)cl.options);
}

struct node_claim {
    int lease_seconds;
    struct db_node_outboxes rows;
};

static int claim(struct db *db, void *arg)
{
    struct node_claim *c = arg;
    return db_gpu_outbox_claim(db, BATCH, c->lease_seconds, &c->rows);
}

int nodeoutbox_round(struct db *db, const struct config *cfg)
{
    struct node_claim c = {.lease_seconds = cfg->outbox_lease_seconds};
    int e = dispatcher_claim(db, claim, &c);
    for (size_t i = 0; !e && i < c.rows.n; i++)
        deliver(db, cfg, &c.rows.v[i]);
    bool full = c.rows.n == BATCH;
    db_node_outboxes_free(&c.rows);
    return e ? e : full;
}
