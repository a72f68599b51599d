/*
 * drift.c - the drift report (see drift.h): the jobs the cluster lists for
 * aidc's user that aidc does not know, and aidc's active jobs the cluster no
 * longer lists, so operators can trust the ledger. It asks the cluster at
 * once (one listing call, bounded by the backend's timeouts): an operator's
 * question, not a request path of jobs.
 *
 * The route runs without a request transaction (RF_NO_TX): the cluster is
 * read in one short transaction and the ledger in another, and the backend
 * is asked in between with none open, as backends/backend.h wants of every
 * backend call. The ledger is read after the listing because it is chosen
 * by what the cluster listed.
 */
#include "drift.h"

#include "clusters.h"

#include "../backends/backend.h"
#include "../backends/callstats.h"
#include "../db/clusters.h"
#include "../db/pgarray.h"
#include "../lib/config.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../server/dispatch.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct listing {
    struct pgarray ids, jobs;
    json_t *listed; /* backend id -> {"name", "state"} */
};

static const char *state_name(int state)
{
    static const char *const names[] = {"unknown",   "pending", "running",
                                        "succeeded", "failed",  "stopped"};
    return state >= 0 && state <= BS_STOPPED ? names[state] : "unknown";
}

static void on_job(void *arg, const char *backend_id, const char *run_key,
                   const struct backend_status *st)
{
    struct listing *l = arg;
    pgarray_add(&l->ids, backend_id);
    char id[37];
    snprintf(id, sizeof id, "%.36s", run_key);
    if (crypto_uuid_valid(id)) /* a run key is "<job id>" or "<job id>-r<N>" */
        pgarray_add(&l->jobs, id);
    json_object_set_new(l->listed, backend_id,
                        json_pack("{s:s, s:s}", "name", run_key, "state", state_name(st->state)));
}

/*
 * Run read (a statement or two of db/) in a transaction of its own, as the
 * caller (row-level security), committed before the caller goes on. An
 * actor changed since it was loaded is AIDC_ESTALE: the dispatcher loads it
 * again and runs the request again, as it does for a request transaction.
 */
static int in_short_tx(struct req *rq, int (*read)(struct req *rq, void *arg), void *arg)
{
    int e = dispatch_begin_read(rq);
    if (e)
        return e;
    e = read(rq, arg);
    if ((!e || e == AIDC_ENOTFOUND) && db_ctx_verify(rq->db) == DB_CTX_STALE)
        e = AIDC_ESTALE;
    if (e) {
        db_rollback(rq->db);
        return e;
    }
    return db_commit(rq->db);
}

struct cluster_read {
    const char *name;
    struct db_cluster c;
};

static int read_cluster(struct req *rq, void *arg)
{
    struct cluster_read *cr = arg;
    return db_cluster_find(rq->db, cr->name, &cr->c);
}

struct ledger_read {
    const char *cluster_id;
    struct listing *l;
    struct db_ledger ledger;
};

static int read_ledger(struct req *rq, void *arg)
{
    struct ledger_read *lr = arg;
    return db_cluster_ledger(rq->db, lr->cluster_id, pgarray_str(&lr->l->ids),
                             pgarray_str(&lr->l->jobs), &lr->ledger);
}

/* The answer, from the cluster's list and aidc's ledger. */
static json_t *report(const char *name, struct listing *l, const struct db_ledger *ledger)
{
    json_t *known_backend = json_object(), *known_job = json_object();
    json_t *missing = json_array(), *unknown = json_array();
    for (size_t i = 0; i < ledger->n; i++) {
        const struct db_ledger_job *j = &ledger->v[i];
        const char *id = j->id, *state = j->state, *bid = j->backend_job_id;
        json_object_set_new(known_job, id, json_true());
        if (bid)
            json_object_set_new(known_backend, bid, json_true());
        bool active = strcmp(state, "pending") == 0 || strcmp(state, "running") == 0 ||
                      strcmp(state, "admitted") == 0;
        if (active && bid && !json_object_get(l->listed, bid))
            json_array_append_new(missing,
                                  json_pack("{s:s, s:s, s:s, s:s}", "id", id, "tenant", j->tenant,
                                            "state", state, "backend_job_id", bid));
    }
    const char *bid;
    json_t *v;
    json_object_foreach(l->listed, bid, v)
    {
        char id[37];
        snprintf(id, sizeof id, "%.36s", json_string_value(json_object_get(v, "name")));
        if (json_object_get(known_backend, bid) || json_object_get(known_job, id))
            continue; /* this run, or an earlier run of a job aidc knows */
        json_array_append_new(unknown, json_pack("{s:s, s:O, s:O}", "backend_job_id", bid, "name",
                                                 json_object_get(v, "name"), "state",
                                                 json_object_get(v, "state")));
    }
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *out = json_pack("{s:s, s:s, s:I, s:o, s:o}", "cluster", name, "checked_at", now,
                            "cluster_jobs", (json_int_t)json_object_size(l->listed),
                            "unknown_to_aidc", unknown, "missing_in_cluster", missing);
    json_decref(known_backend);
    json_decref(known_job);
    return out;
}

int api_cluster_drift(struct req *rq, struct resp *rs)
{
    const char *name;
    int e = api_cluster_name(rq, rs, &name);
    if (e)
        return e;
    struct cluster_read cr = {.name = name};
    e = in_short_tx(rq, read_cluster, &cr);
    if (e)
        db_cluster_free(&cr.c); /* read, then found stale or not committed: read again */
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_CLUSTER_NOT_FOUND, json_pack("{s:s}", "cluster", name));
    if (e)
        return e;
    const struct db_cluster *c = &cr.c;
    const struct backend_ops *ops = backend_find(c->kind);
    if (!ops || !ops->poll_changed) {
        e = api_problem(rs, PROBLEM_CLUSTER_NO_DRIFT, json_pack("{s:s}", "kind", c->kind));
        db_cluster_free(&cr.c);
        return e;
    }
    json_t *options = json_loads(c->options_json, 0, NULL);
    struct backend_cluster bc = {.id = c->id,
                                 .name = name,
                                 .kind = c->kind,
                                 .endpoint = c->endpoint,
                                 .credentials_ref = c->credentials_ref,
                                 .options = options ? options : json_object(),
                                 .data_dir = rq->cfg->data_dir,
                                 .self_exe = rq->cfg->self_exe};
    struct listing l = {PGARRAY_INIT, PGARRAY_INIT, json_object()};
    char err[512] = "";
    struct timespec t0 = callstats_start();
    int pe = ops->poll_changed(&bc, 0, on_job, &l, err, sizeof err);
    callstats_done(t0, name, "poll", pe == 0);
    struct ledger_read lr = {.cluster_id = c->id, .l = &l};
    if (pe)
        e = api_problem(rs, PROBLEM_CLUSTER_NO_ANSWER,
                        json_pack("{s:s, s:o}", "cluster", name, "reason", problem_text(err)));
    else
        e = in_short_tx(rq, read_ledger, &lr);
    if (!e)
        e = resp_json(rs, MHD_HTTP_OK, report(name, &l, &lr.ledger));
    db_ledger_free(&lr.ledger);
    pgarray_free(&l.ids);
    pgarray_free(&l.jobs);
    json_decref(l.listed);
    if (!options)
        json_decref((json_t *)bc.options);
    json_decref(options);
    db_cluster_free(&cr.c);
    return e;
}
