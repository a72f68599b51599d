/*
 * drift.c - the drift report (see drift.h): the jobs the cluster lists for
 * aidc's user that aidc does not know, and aidc's active jobs the cluster no
 * longer lists, so operators can trust the ledger. It asks the cluster at
 * once (one listing call, bounded by the backend's timeouts): an operator's
 * question, not a request path of jobs.
 */
#include "drift.h"

#include "clusters.h"

#include "../backends/callstats.h"
#include "../backends/backend.h"
#include "../db/clusters.h"
#include "../db/pgarray.h"
#include "../server/config.h"
#include "../server/crypto.h"
#include "../server/err.h"
#include "../server/xalloc.h"

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
    static const char *const names[] = {"unknown", "pending", "running", "succeeded", "failed",
                                        "stopped"};
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

static int find_cluster(struct req *rq, const char *name, PGresult **all, int *row)
{
    int e = db_cluster_all(rq->db, all);
    *row = -1;
    for (int i = 0; !e && i < PQntuples(*all); i++)
        if (strcmp(PQgetvalue(*all, i, 1), name) == 0)
            *row = i;
    return e;
}

/* The answer, from the cluster's list and aidc's rows (id, tenant, state, backend id). */
static json_t *report(const char *name, struct listing *l, const PGresult *ledger)
{
    json_t *known_backend = json_object(), *known_job = json_object();
    json_t *missing = json_array(), *unknown = json_array();
    for (int i = 0; i < PQntuples(ledger); i++) {
        const char *id = PQgetvalue(ledger, i, 0), *state = PQgetvalue(ledger, i, 2);
        const char *bid = PQgetisnull(ledger, i, 3) ? NULL : PQgetvalue(ledger, i, 3);
        json_object_set_new(known_job, id, json_true());
        if (bid)
            json_object_set_new(known_backend, bid, json_true());
        bool active = strcmp(state, "pending") == 0 || strcmp(state, "running") == 0 ||
                      strcmp(state, "admitted") == 0;
        if (active && bid && !json_object_get(l->listed, bid))
            json_array_append_new(missing, json_pack("{s:s, s:s, s:s, s:s}", "id", id, "tenant",
                                                     PQgetvalue(ledger, i, 1), "state", state,
                                                     "backend_job_id", bid));
    }
    const char *bid;
    json_t *v;
    json_object_foreach(l->listed, bid, v) {
        char id[37];
        snprintf(id, sizeof id, "%.36s", json_string_value(json_object_get(v, "name")));
        if (json_object_get(known_backend, bid) || json_object_get(known_job, id))
            continue; /* this run, or an earlier run of a job aidc knows */
        json_array_append_new(unknown, json_pack("{s:s, s:O, s:O}", "backend_job_id", bid,
                                                 "name", json_object_get(v, "name"), "state",
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
    PGresult *all = NULL;
    int row;
    e = find_cluster(rq, name, &all, &row);
    if (!e && row < 0)
        e = api_problem(rs, PROBLEM_CLUSTER_NOT_FOUND, json_pack("{s:s}", "cluster", name));
    const struct backend_ops *ops = e ? NULL : backend_find(PQgetvalue(all, row, 2));
    if (!e && (!ops || !ops->poll_changed))
        e = api_problem(rs, PROBLEM_CLUSTER_NO_DRIFT,
                        json_pack("{s:s}", "kind", PQgetvalue(all, row, 2)));
    if (e) {
        PQclear(all);
        return e;
    }
    json_t *options = json_loads(PQgetvalue(all, row, 5), 0, NULL);
    struct backend_cluster bc = {
        .id = PQgetvalue(all, row, 0), .name = name, .kind = PQgetvalue(all, row, 2),
        .endpoint = PQgetvalue(all, row, 3), .credentials_ref = PQgetvalue(all, row, 4),
        .options = options ? options : json_object(), .data_dir = rq->cfg->data_dir,
        .self_exe = rq->cfg->self_exe};
    struct listing l = {PGARRAY_INIT, PGARRAY_INIT, json_object()};
    char err[512] = "";
    PGresult *ledger = NULL;
    struct timespec t0 = callstats_start();
    int pe = ops->poll_changed(&bc, 0, on_job, &l, err, sizeof err);
    callstats_done(t0, name, "poll", pe == 0);
    if (pe)
        e = api_problem(rs, PROBLEM_CLUSTER_NO_ANSWER,
                        json_pack("{s:s, s:o}", "cluster", name, "reason", problem_text(err)));
    else
        e = db_cluster_ledger(rq->db, bc.id, pgarray_str(&l.ids), pgarray_str(&l.jobs), &ledger);
    if (!e && ledger)
        e = resp_json(rs, MHD_HTTP_OK, report(name, &l, ledger));
    PQclear(ledger);
    pgarray_free(&l.ids);
    pgarray_free(&l.jobs);
    json_decref(l.listed);
    if (!options)
        json_decref((json_t *)bc.options);
    json_decref(options);
    PQclear(all);
    return e;
}
