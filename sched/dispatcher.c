/* dispatcher.c - outbox delivery (see dispatcher.h). */
#include "dispatcher.h"

#include "../audit/audit.h"
#include "../backends/backend.h"
#include "../backends/callstats.h"
#include "../db/pgarray.h"
#include "../db/sched.h"
#include "../db/worker.h"
#include "../lib/clock.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "deliverpool.h"
#include "nodeoutbox.h"
#include "schedstats.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH               32
#define MAX_BACKOFF_SECONDS 300
/* a job its cluster refused this often fails instead of waiting forever */
#define MAX_SUBMIT_ATTEMPTS 8
#define OUTBOX_INTERVAL_MS  1000

/* What one delivery did, recorded in one small system transaction (record). */
struct outcome {
    long long outbox_id;
    bool done;         /* delivered (or nothing left to deliver) */
    const char *error; /* failed: why */
    int delay;         /* ... and when to try again */
    const char *job_id;
    const char *backend_id; /* the backend took the job */
    struct db_transition t; /* a state change instead (t.to != NULL) */
    /* the backend call made, as an audit event (ev.action NULL: none; ev.details owned) */
    struct audit_event ev;
    /* the cluster pulls the job's image: that pull as its own event (NULL: none; owned) */
    json_t *pull;
};

/*
 * The outcome and the audit event of the call that led to it commit together:
 * a crash before the commit loses both, and the delivery tried again records
 * its own call - so no call goes unrecorded and none is recorded twice.
 */
static int record(struct db *db, const struct outcome *o)
{
    const struct db_ctx ctx = {.roles = "system"};
    int e = db_begin(db, &ctx, false);
    if (!e && o->ev.action)
        e = audit_record_system(db, &o->ev, true);
    if (!e && o->pull) {
        struct audit_event pull = {.action = "image.pull",
                                   .resource_type = "job",
                                   .resource_id = o->job_id,
                                   .tenant_slug = o->ev.tenant_slug,
                                   .details = o->pull};
        e = audit_record_system(db, &pull, true);
    }
    if (!e && o->t.to)
        e = db_job_transition(db, &o->t, NULL);
    if (!e && o->backend_id)
        e = db_job_delivered(db, o->job_id, o->backend_id);
    if (!e)
        e = o->done ? db_outbox_done(db, o->outbox_id)
                    : db_outbox_failed(db, o->outbox_id, o->error, o->delay);
    if (!e)
        return db_commit(db);
    db_rollback(db);
    return e;
}


/*
 * Describe the backend call of row j as o's audit event "backend.<what>":
 * e its result, call what it sent (taken over), started its start (now_ms).
 */
static void audit_call(struct outcome *o, const char *what, const struct backend_cluster *cl,
                       const struct db_outbox_job *j, struct backend_call *call, int e,
                       const char *err, double started)
{
    static const char *const actions[][2] = {
        {"submit", "backend.submit"}, {"cancel", "backend.cancel"}, {"preempt", "backend.preempt"}};
    for (size_t k = 0; k < sizeof actions / sizeof actions[0]; k++)
        if (strcmp(actions[k][0], what) == 0)
            o->ev.action = actions[k][1];
    json_t *response = json_object();
    if (e) {
        json_object_set_new(response, "error", json_string(err[0] ? err : aidc_err_name(e)));
    } else {
        const char *bid = o->backend_id ? o->backend_id : j->backend_job_id;
        json_object_set_new(response, "backend_job_id", bid ? json_string(bid) : json_null());
    }
    if (call->adopted) /* an earlier delivery's job, found: nothing was sent */
        json_object_set_new(response, "adopted", json_true());
    json_t *d = json_object();
    json_object_set_new(d, "cluster", json_string(cl->name));
    json_object_set_new(d, "kind", json_string(cl->kind));
    json_object_set_new(d, "run_key", json_string(j->run_key));
    json_object_set_new(d, "request", call->request ? call->request : json_null());
    if (call->lookup)
        json_object_set_new(d, "lookup", call->lookup);
    call->request = call->lookup = NULL;
    json_object_set_new(d, "response", response);
    json_object_set_new(d, "duration_ms", json_integer((json_int_t)(clock_now_ms() - started + 0.5)));
    o->ev.resource_type = "job";
    o->ev.resource_id = o->job_id;
    o->ev.tenant_slug = j->tenant; /* the claim has the tenant's slug */
    o->ev.outcome = e ? "error" : "success";
    o->ev.status = call->status;
    o->ev.details = d;
}

static int submit(const struct config *cfg, const struct backend_ops *ops,
                  const struct backend_cluster *cl, const struct db_outbox_job *j, char *backend_id,
                  size_t idsz, struct backend_call *call, char *err, size_t errsz)
{
    json_t *command = j->command ? json_loads(j->command, 0, NULL) : NULL;
    json_t *env = json_loads(j->env, 0, NULL);
    json_t *mounts = j->mounts ? json_loads(j->mounts, 0, NULL) : NULL;
    int idx[64];
    size_t nidx = j->ngpu_indexes < 64 ? j->ngpu_indexes : 64;
    if (nidx)
        memcpy(idx, j->gpu_indexes, nidx * sizeof *idx);
    struct backend_job job = {
        .id = j->run_key,
        .tenant = j->tenant,
        .project = j->project,
        .user = j->user,
        .name = j->name,
        .image = j->image,
        .image_tagged = j->image_tagged,
        .image_digest = j->image_digest,
        .image_registry = j->registry_url,
        .image_credentials_ref = j->registry_credentials_ref,
        .tenant_number = j->tenant_number,
        .command = command,
        .script = j->script,
        .env = env ? env : json_object(),
        .mounts = mounts,
        .gpus = j->gpus,
        .gpu_type = j->gpu_type,
        .gpu_indexes = idx,
        .ngpu_indexes = nidx,
        .cpus = j->cpus,
        .memory_gib = j->memory_gib,
        .nodes = j->nodes,
        /* a session may be extended up to the longest a session runs: the session
         * watcher ends it at its own limit (sched/sessionwatch.c) */
        .time_limit_minutes = j->app && cfg->sessions_max_minutes > j->time_limit_minutes
                                  ? cfg->sessions_max_minutes
                                  : j->time_limit_minutes,
        .app = j->app,
        .array_count = j->array_count,
        .array_max_parallel = j->array_max_parallel,
        .dependency = j->dependency,
        .grace_seconds = cfg->preempt_grace_seconds,
        .preemptible = j->preemptible,
        .priority = j->priority,
        /* claimed before (the claim counts): an earlier try may have reached the cluster */
        .retry = j->attempts > 1,
        .since = (time_t)j->admitted_at,
    };
    struct timespec t0 = callstats_start();
    backend_fault_slow_submit(&job);
    int e = AIDC_EINVAL;
    if (j->app && !ops->app_endpoint) /* nothing could reach its app */
        snprintf(err, errsz, "clusters of kind %s cannot run interactive sessions", cl->kind);
    else
        e = ops->submit(cl, &job, backend_id, idsz, call, err, errsz);
    callstats_done(t0, cl->name, "submit", e == 0);
    json_decref(command);
    json_decref(mounts);
    if (!env)
        json_decref((json_t *)job.env);
    json_decref(env);
    return e;
}

static void deliver_submit(const struct config *cfg, const struct backend_ops *ops,
                           const struct backend_cluster *cl, const struct db_outbox_job *j,
                           struct outcome *o, char *backend_id, size_t idsz, char *err,
                           size_t errsz)
{
    const char *stop = j->stop;
    o->done = true;
    if (strcmp(j->state, "admitted") != 0 || j->backend_job_id)
        return; /* delivered before, or over already */
    if (stop) { /* stopped before it reached the cluster: it never runs */
        o->t = (struct db_transition){.job_id = o->job_id,
                                      .from = "admitted",
                                      .to = strcmp(stop, "cancel") == 0 ? "cancelled" : "queued",
                                      .reason = strcmp(stop, "cancel") == 0
                                                    ? "cancelled before it started"
                                                    : "requeued: preempted before it started",
                                      .exit_code = -1};
        return;
    }
    struct backend_call call = {0};
    double started = clock_now_ms();
    int e = submit(cfg, ops, cl, j, backend_id, idsz, &call, err, errsz);
    if (e == 0)
        o->backend_id = backend_id;
    if (e == 0 && j->image)
        o->pull = json_pack("{s:s, s:s?, s:s, s:s}", "image", j->image, "digest", j->image_digest,
                            "cluster", cl->name, "backend_job_id", backend_id);
    audit_call(o, "submit", cl, j, &call, e, err, started);
    backend_call_free(&call);
    if (e == 0)
        return;
    /* AIDC_EINVAL: the cluster refuses this job as it is; trying again changes nothing */
    if (e == AIDC_EINVAL) {
        log_warn("job %s: cluster %s refuses it: %s", o->job_id, cl->name, err);
        o->t = (struct db_transition){.job_id = o->job_id,
                                      .from = "admitted",
                                      .to = "failed",
                                      .reason = err,
                                      .exit_code = -1};
        return;
    }
    if (j->attempts >= MAX_SUBMIT_ATTEMPTS) {
        log_warn("job %s: cluster %s refused it %d times, giving up: %s", o->job_id, cl->name,
                 MAX_SUBMIT_ATTEMPTS, err);
        o->t = (struct db_transition){.job_id = o->job_id,
                                      .from = "admitted",
                                      .to = "failed",
                                      .reason = err,
                                      .exit_code = -1};
        return;
    }
    o->done = false;
    o->error = err;
}

static void deliver_stop(const struct backend_ops *ops, const struct backend_cluster *cl,
                         const struct db_outbox_job *j, struct outcome *o, int grace, char *err,
                         size_t errsz)
{
    const char *state = j->state, *bid = j->backend_job_id;
    o->done = true;
    bool active = strcmp(state, "pending") == 0 || strcmp(state, "running") == 0 ||
                  strcmp(state, "admitted") == 0;
    if (!active || !bid)
        return; /* over already, or never delivered (its submit row handles it) */
    const char *run = j->run_key, *action = j->action;
    struct backend_call call = {0};
    double started = clock_now_ms();
    struct timespec t0 = callstats_start();
    bool cancel = strcmp(action, "cancel") == 0;
    int e = cancel ? ops->cancel(cl, run, bid, &call, err, errsz)
                   : ops->preempt(cl, run, bid, grace, &call, err, errsz);
    callstats_done(t0, cl->name, cancel ? "cancel" : "preempt", e == 0);
    audit_call(o, action, cl, j, &call, e, err, started);
    backend_call_free(&call);
    if (e) {
        o->done = false;
        o->error = err;
    }
}

static void deliver(struct db *db, const struct config *cfg, const struct db_outbox_job *j)
{
    struct backend_cluster cl;
    dispatcher_cluster_row(&cl, &j->cluster, cfg);
    char err[512] = "", backend_id[256] = "";
    int attempts = j->attempts;
    struct outcome o = {.outbox_id = j->id, .job_id = j->job_id};
    const struct backend_ops *ops = backend_find(cl.kind);
    if (!ops) {
        snprintf(err, sizeof err, "this aidcd has no backend for clusters of kind %s", cl.kind);
        o.error = err;
    } else if (strcmp(j->action, "submit") == 0) {
        deliver_submit(cfg, ops, &cl, j, &o, backend_id, sizeof backend_id, err, sizeof err);
    } else {
        deliver_stop(ops, &cl, j, &o, cfg->preempt_grace_seconds, err, sizeof err);
    }
    if (!o.done) {
        int shift = attempts < 9 ? attempts : 9;
        o.delay = 1 << shift;
        if (o.delay > MAX_BACKOFF_SECONDS)
            o.delay = MAX_BACKOFF_SECONDS;
        log_warn("%s of job %s to cluster %s failed (attempt %d, again in %d s): %s", j->action,
                 o.job_id, cl.name, attempts, o.delay, err);
    }
    schedstats_delivery(o.done);
    int e = record(db, &o);
    if (e)
        log_warn("cannot record the delivery of outbox row %lld: %s (the lease expires and it is "
                 "delivered again)",
                 o.outbox_id, aidc_err_name(e));
    json_decref(o.ev.details);
    json_decref(o.pull);
    json_decref((json_t *)cl.options);
}

void dispatcher_cluster_row(struct backend_cluster *cl, const struct db_outbox_cluster *row,
                            const struct config *cfg)
{
    json_t *options = json_loads(row->options, 0, NULL);
    *cl = (struct backend_cluster){
        .id = row->id,
        .name = row->name,
        .kind = row->kind,
        .endpoint = row->endpoint,
        .credentials_ref = row->credentials_ref,
        .options = options ? options : json_object(),
        .data_dir = cfg->data_dir,
        .self_exe = cfg->self_exe,
        .storage_root = cfg->storage_root,
        .storage_uid_first = cfg->storage_uid_first,
    };
}

int dispatcher_claim(struct db *db, int (*claim)(struct db *db, void *arg), void *arg)
{
    const struct db_ctx ctx = {.roles = "system"};
    int e = db_begin(db, &ctx, false);
    if (!e)
        e = claim(db, arg);
    if (!e)
        return db_commit(db);
    db_rollback(db);
    return e;
}

/* One claim's rows, handed to the pool: freed when the last is delivered. */
struct job_claim {
    int batch, lease_seconds;
    const char *skip;     /* clusters at their limit of deliveries at once */
    const char *skip_ids; /* rows the pool holds (their lease may have run out) */
    struct db_outbox_jobs rows;
};

static int claim_jobs(struct db *db, void *arg)
{
    struct job_claim *c = arg;
    return db_outbox_claim(db, c->batch, c->lease_seconds, c->skip, c->skip_ids, &c->rows);
}

static void claim_free(void *arg)
{
    struct job_claim *c = arg;
    db_outbox_jobs_free(&c->rows);
    free(c);
}

static void deliver_one(struct db *db, const void *row, void *cfg)
{
    deliver(db, cfg, row);
}

static const char *cluster_of(const void *row)
{
    return ((const struct db_outbox_job *)row)->cluster.id;
}

static void add_cluster(const char *id, void *arr)
{
    pgarray_add(arr, id);
}

static void add_row(const void *row, void *arr)
{
    pgarray_addf(arr, "%lld", ((const struct db_outbox_job *)row)->id);
}

/* The dispatcher's round state: its delivery threads (deliverpool.h). */
struct dispatcher {
    const struct config *cfg;
    struct deliverpool *pool;
};

/*
 * Claim as many job rows as the delivery threads have room for and hand them
 * over: 1 when the claim came full (more may wait) or no thread was free, 0,
 * or an aidc_err. While every thread is busy it waits (up to the interval)
 * for one to come free, so a row admitted meanwhile starts with the next free
 * thread, not after the slowest delivery of a batch.
 */
static int deliver_jobs(struct db *db, const struct dispatcher *d)
{
    const struct config *cfg = d->cfg;
    int room = deliverpool_room(d->pool);
    if (room == 0)
        return deliverpool_wait_room(d->pool, OUTBOX_INTERVAL_MS) ? 1 : 0;
    struct pgarray busy = PGARRAY_INIT, held = PGARRAY_INIT;
    deliverpool_busy_keys(d->pool, add_cluster, &busy);
    deliverpool_each(d->pool, add_row, &held);
    struct job_claim *c = xcalloc(1, sizeof *c);
    *c = (struct job_claim){.batch = room < BATCH ? room : BATCH,
                            .lease_seconds = cfg->outbox_lease_seconds,
                            .skip = busy.n ? pgarray_str(&busy) : NULL,
                            .skip_ids = held.n ? pgarray_str(&held) : NULL};
    int e = dispatcher_claim(db, claim_jobs, c);
    pgarray_free(&busy);
    pgarray_free(&held);
    bool full = !e && c->rows.n == (size_t)c->batch;
    if (e) {
        claim_free(c);
        return e;
    }
    deliverpool_add(d->pool, db, c->rows.v, c->rows.n, sizeof *c->rows.v, c, claim_free);
    return full;
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    const struct dispatcher *d = arg;
    int full = deliver_jobs(db, d);
    if (full < 0)
        return full;
    /* and the node drains: a fault's drain goes out with the preemptions it brings */
    int more = nodeoutbox_round(db, d->cfg);
    if (more < 0)
        return more;
    return full || more ? 1 : 0;
}

/*
 * The previous leader is gone: what it had claimed is not being delivered.
 * This replica's own threads may still deliver rows claimed before it lost the
 * lead: those end first, so that no row in delivery here is released.
 */
static int take_over(struct db *db, void *arg)
{
    const struct dispatcher *d = arg;
    deliverpool_drain(d->pool);
    const struct db_ctx ctx = {.roles = "system"};
    int e = db_begin(db, &ctx, false);
    if (!e)
        e = db_outbox_release(db);
    if (!e)
        return db_commit(db);
    db_rollback(db);
    return e;
}

/* Giving the lead up (stop, an unknown schema): the deliveries begun under it end first,
 * so that no standby releases and delivers again a row in flight here. */
static void give_up(void *arg)
{
    const struct dispatcher *d = arg;
    deliverpool_drain(d->pool);
}

static void dispatcher_free(void *arg)
{
    struct dispatcher *d = arg;
    deliverpool_free(d->pool);
    free(d);
}

struct worker *dispatcher_start(const struct config *cfg)
{
    struct dispatcher *d = xcalloc(1, sizeof *d);
    d->cfg = cfg;
    d->pool = deliverpool_new(cfg->worker_database_url, "dispatcher", cfg->dispatch_concurrency,
                              cfg->dispatch_per_cluster, cluster_of, deliver_one, (void *)cfg);
    struct worker_spec spec = {
        .name = "dispatcher",
        .lead = WORKER_LEAD_DISPATCHER,
        .on_lead = take_over,
        .on_unlead = give_up,
        .channels = {"aidc_outbox", NULL},
        .interval_ms = OUTBOX_INTERVAL_MS,
        .round = round_fn,
        .arg = d,
        .owns_arg = true,
        .free_arg = dispatcher_free,
    };
    return worker_start(cfg->worker_database_url, &spec);
}
