/* gpufaults.c - GPU faults of a cluster (see gpufaults.h). */
#include "gpufaults.h"

#include "../backends/backend.h"
#include "../db/clusters.h"
#include "../db/gpufaults.h"
#include "../db/sched.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../server/auth.h"
#include "clusters.h"
#include "faultreport.h"
#include "paging.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cluster_ref {
    const char *name;
    char id[37], kind[16];
    const struct backend_ops *ops;
};

static int cluster_of(struct req *rq, struct resp *rs, struct cluster_ref *c)
{
    int e = api_cluster_name(rq, rs, &c->name);
    if (e)
        return e;
    e = db_cluster_lookup(rq->db, c->name, c->id, c->kind, sizeof c->kind, NULL);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_CLUSTER_NOT_FOUND, json_pack("{s:s}", "cluster", c->name));
    c->ops = backend_find(c->kind);
    return e;
}

/* How many GPU indexes node has on the cluster (*known false: not one of its nodes). */
static int node_gpus(struct req *rq, const char *cluster_id, const char *node, int *ngpus,
                     bool *known)
{
    return db_gpu_node_gpus(rq->db, cluster_id, node, ngpus, known);
}

/* The nodes a request touched, with the reason to drain them for. */
struct touched {
    char **names, **reasons;
    size_t n;
};

static void touch(struct touched *t, const char *node, const char *reason)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->names[i], node) == 0) {
            if (reason && !t->reasons[i])
                t->reasons[i] = xstrdup(reason);
            return;
        }
    t->names = xreallocarray(t->names, t->n + 1, sizeof *t->names);
    t->reasons = xreallocarray(t->reasons, t->n + 1, sizeof *t->reasons);
    t->names[t->n] = xstrdup(node);
    t->reasons[t->n++] = reason ? xstrdup(reason) : NULL;
}

static void touched_free(struct touched *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->names[i]);
        free(t->reasons[i]);
    }
    free(t->names);
    free(t->reasons);
}

/*
 * What the faults of the touched nodes bring about, into out: the jobs on
 * faulty GPUs asked to stop (where aidc assigns GPUs), drains and undrains
 * queued (where the cluster drains nodes), the inventory without the faulty
 * GPUs, and a new admission pass.
 */
static int consequences(struct req *rq, const struct cluster_ref *c, const struct touched *t,
                        json_t *out)
{
    json_t *stopped = json_array(), *drains = json_array();
    json_object_set_new(out, "jobs_stopped", stopped);
    json_object_set_new(out, "drains", drains);
    int e = 0;
    for (size_t i = 0; !e && i < t->n; i++) {
        if (c->ops && c->ops->gpu_range) {
            char *ids = NULL;
            e = db_gpu_fault_stop_assigned(rq->db, c->id, t->names[i],
                                           rq->cfg->preempt_grace_seconds, &ids);
            char *save = NULL;
            for (char *id = e ? NULL : strtok_r(ids, "{,}", &save); id;
                 id = strtok_r(NULL, "{,}", &save))
                json_array_append_new(stopped, json_string(id));
            free(ids);
        }
        if (!e && c->ops && c->ops->drain) {
            char action[16] = "";
            e = db_gpu_node_drain_sync(rq->db, c->id, t->names[i],
                                       t->reasons[i] ? t->reasons[i] : "GPU fault", action,
                                       sizeof action);
            if (!e && action[0])
                json_array_append_new(
                    drains, json_pack("{s:s, s:s}", "node", t->names[i], "action", action));
        }
    }
    if (!e)
        e = db_gpu_inventory_apply(rq->db, c->id);
    return e ? e : db_sched_wake(rq->db, "aidc_jobs");
}

/* One report: recorded or resolved into result; *recorded counts new faults. */
static int apply_item(struct req *rq, const struct cluster_ref *c, const char *node,
                      const struct faultreport *fr, const struct faultreport_item *it,
                      json_t *result, int *recorded)
{
    char gpus[16];
    if (it->gpu >= 0)
        snprintf(gpus, sizeof gpus, "{%d}", it->gpu);
    else
        snprintf(gpus, sizeof gpus, "{NULL}");
    struct db_gpu_fault_hits h = {0};
    int e = it->firing ? db_gpu_fault_add(rq->db, c->id, node, gpus, it->reason, fr->source,
                                          it->alert, it->since, rq->actor.username, &h)
                       : db_gpu_fault_resolve(rq->db, c->id, node, gpus, rq->actor.username, &h);
    if (e)
        return e;
    bool hit = h.n > 0;
    json_object_set_new(
        result, "result",
        json_string(it->firing ? (hit ? "recorded" : "known") : (hit ? "resolved" : "not open")));
    if (hit)
        json_object_set_new(result, "fault_id", json_integer((json_int_t)h.v[0].id));
    *recorded += it->firing && hit;
    db_gpu_fault_hits_free(&h);
    return 0;
}

/*
 * Find item's node among the cluster's: a webhook's FQDN also matches by its
 * first label (node names are often short host names). On a problem, the
 * operator's form fails the request; an alert is skipped (*why and *params
 * set: the problem it is skipped for).
 */
static int check_item(struct req *rq, struct resp *rs, const struct cluster_ref *c,
                      const struct faultreport *fr, const struct faultreport_item *it, char *node,
                      size_t nsz, enum problem *why, json_t **params)
{
    int ngpus = 0;
    bool known = false;
    snprintf(node, nsz, "%s", it->node);
    int e = node_gpus(rq, c->id, node, &ngpus, &known);
    char *dot = fr->webhook ? strchr(node, '.') : NULL;
    if (!e && !known && dot) {
        *dot = '\0';
        e = node_gpus(rq, c->id, node, &ngpus, &known);
    }
    if (e)
        return e;
    json_t *p = NULL;
    if (!known) {
        *why = PROBLEM_GPU_FAULT_NODE_UNKNOWN;
        p = json_pack("{s:s, s:s}", "node", it->node, "cluster", c->name);
        if (!fr->webhook)
            return api_problem(rs, *why, p);
    } else if (it->gpu >= ngpus) {
        *why = ngpus ? PROBLEM_GPU_FAULT_GPU_RANGE : PROBLEM_GPU_FAULT_NODE_NO_GPUS;
        p = ngpus ? json_pack("{s:I, s:s, s:I}", "gpu", (json_int_t)it->gpu, "node", node, "last",
                              (json_int_t)(ngpus - 1))
                  : json_pack("{s:I, s:s}", "gpu", (json_int_t)it->gpu, "node", node);
        if (!fr->webhook) {
            api_field_problem(rs, "gpus", *why, p);
            return api_fail_fields(rs);
        }
    }
    *params = p;
    return 0;
}

/* The problem of a body faultreport_parse refused, by its reason. */
static enum problem parse_problem(enum faultreport_error e)
{
    switch (e) {
    case FAULTREPORT_E_UNKNOWN_FIELD:
        return PROBLEM_V_UNKNOWN_FIELD;
    case FAULTREPORT_E_NODE:
        return PROBLEM_GPU_FAULT_NODE_NAME;
    case FAULTREPORT_E_REASON:
        return PROBLEM_V_TEXT;
    case FAULTREPORT_E_SOURCE:
        return PROBLEM_GPU_FAULT_SOURCE;
    case FAULTREPORT_E_GPUS:
        return PROBLEM_GPU_FAULT_GPUS;
    case FAULTREPORT_E_GPUS_ITEM:
        return PROBLEM_GPU_FAULT_GPUS_ITEM;
    case FAULTREPORT_E_GPUS_TOO_MANY:
        return PROBLEM_GPU_FAULT_GPUS_TOO_MANY;
    case FAULTREPORT_E_VERSION:
        return PROBLEM_GPU_FAULT_WEBHOOK_VERSION;
    case FAULTREPORT_E_ALERTS:
        return PROBLEM_GPU_FAULT_ALERTS;
    case FAULTREPORT_E_ALERTS_TOO_MANY:
        return PROBLEM_GPU_FAULT_ALERTS_TOO_MANY;
    case FAULTREPORT_E_ALERT_SHAPE:
        return PROBLEM_GPU_FAULT_ALERT_SHAPE;
    case FAULTREPORT_E_ALERT_STATUS:
        return PROBLEM_GPU_FAULT_ALERT_STATUS;
    case FAULTREPORT_E_ALERT_NODE:
        return PROBLEM_GPU_FAULT_ALERT_NODE;
    case FAULTREPORT_E_ALERT_GPU:
        return PROBLEM_GPU_FAULT_ALERT_GPU;
    case FAULTREPORT_E_BODY:
        return PROBLEM_BODY_NOT_OBJECT;
    case FAULTREPORT_E_NONE:
        break;
    }
    return PROBLEM_V_INVALID;
}

/* Its params: the bound its text names, if any. */
static json_t *parse_params(enum faultreport_error e)
{
    json_int_t max;
    switch (e) {
    case FAULTREPORT_E_REASON:
        max = FAULTREPORT_MAX_REASON;
        break;
    case FAULTREPORT_E_GPUS_ITEM:
    case FAULTREPORT_E_ALERT_GPU:
        max = FAULTREPORT_MAX_GPU_INDEX;
        break;
    case FAULTREPORT_E_GPUS_TOO_MANY:
        max = FAULTREPORT_MAX_GPUS;
        break;
    case FAULTREPORT_E_ALERTS_TOO_MANY:
        max = FAULTREPORT_MAX_ALERTS;
        break;
    default:
        return NULL;
    }
    return json_pack("{s:I}", "max", max);
}

int api_gpu_fault_report(struct req *rq, struct resp *rs)
{
    struct cluster_ref c = {0};
    int e = cluster_of(rq, rs, &c);
    if (e)
        return e;
    struct faultreport fr;
    struct touched t = {0};
    char field[64], msg[256];
    int st = faultreport_parse(rq->json, &fr, field, sizeof field, msg, sizeof msg);
    json_t *results = json_array(), *out = NULL;
    int recorded = 0;
    size_t ignored = 0;
    if (st != FAULTREPORT_OK && fr.error == FAULTREPORT_E_BODY) {
        e = api_problem(rs, PROBLEM_BODY_NOT_OBJECT, NULL);
        goto out;
    }
    if (st != FAULTREPORT_OK) { /* 400, or 413 for too many GPUs or alerts: the entry's */
        api_field_problem(rs, field, parse_problem(fr.error), parse_params(fr.error));
        e = api_fail_fields(rs);
        goto out;
    }
    for (size_t i = 0; i < fr.n; i++)
        if (!auth_node_allowed(&rq->actor, fr.items[i].node)) {
            e = fr.webhook ? api_problem(rs, PROBLEM_GPU_FAULT_TOKEN_NODE_ALERT,
                                         json_pack("{s:I, s:s, s:s}", "index", (json_int_t)i + 1,
                                                   "node", fr.items[i].node ? fr.items[i].node : "",
                                                   "token_node", rq->actor.token_node))
                           : api_problem(rs, PROBLEM_GPU_FAULT_TOKEN_NODE,
                                         json_pack("{s:s, s:s}", "token_node", rq->actor.token_node,
                                                   "node", fr.items[i].node));
            goto out;
        }
    for (size_t i = 0; !e && i < fr.n; i++) {
        const struct faultreport_item *it = &fr.items[i];
        json_t *res = json_pack("{s:s?, s:o, s:s, s:s?}", "node", it->node, "gpu",
                                it->gpu >= 0 ? json_integer(it->gpu) : json_null(), "status",
                                it->firing ? "firing" : "resolved", "reason", it->reason);
        json_array_append_new(results, res);
        char node[256];
        enum problem why = PROBLEM_COUNT; /* none: the alert is taken */
        json_t *params = NULL;
        if (it->error) {
            why = parse_problem(it->why);
            params = parse_params(it->why);
        } else {
            e = check_item(rq, rs, &c, &fr, it, node, sizeof node, &why, &params);
        }
        if (!e && why != PROBLEM_COUNT) {
            char at[32];
            snprintf(at, sizeof at, "alerts[%zu]", i);
            api_field_problem(rs, at, why, params);
            json_object_set_new(res, "result", json_string("ignored"));
            json_object_set_new(res, "error",
                                json_string(rs->err.fields[rs->err.nfields - 1].message));
            ignored++;
            continue;
        }
        if (!e)
            e = apply_item(rq, &c, node, &fr, it, res, &recorded);
        if (!e)
            touch(&t, node, it->firing ? it->reason : NULL);
    }
    if (e)
        goto out;
    /* nothing in the webhook could be read: Alertmanager shows the error, retrying cannot help */
    if (ignored == fr.n) {
        rs->err.status = MHD_HTTP_UNPROCESSABLE_CONTENT;
        e = api_fail_fields(rs);
        goto out;
    }
    api_error_clear(&rs->err); /* the skipped alerts are in the answer's results */
    out = json_pack("{s:s, s:s, s:O}", "cluster", c.name, "source", fr.source, "results", results);
    e = consequences(rq, &c, &t, out);
    if (e)
        goto out;
    if (fr.webhook)
        resp_audit(rs, "cluster", c.name, json_deep_copy(out));
    else {
        char *res = xasprintf("%s/%s", c.name, fr.items[0].node);
        resp_audit(rs, "node", res, json_deep_copy(out));
        free(res);
    }
    if (recorded) {
        char *loc = xasprintf("/api/v1/clusters/%s/gpu-faults", c.name);
        resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
        free(loc);
    }
    e = resp_json(rs, recorded ? MHD_HTTP_CREATED : MHD_HTTP_OK, out);
    out = NULL;
out:
    json_decref(out);
    json_decref(results);
    touched_free(&t);
    faultreport_free(&fr);
    return e;
}

int api_gpu_fault_list(struct req *rq, struct resp *rs)
{
    struct cluster_ref c = {0};
    int e = cluster_of(rq, rs, &c);
    if (e)
        return e;
    const char *state = req_query(rq, "state");
    if (!state)
        state = "open";
    if (strcmp(state, "open") != 0 && strcmp(state, "resolved") != 0 && strcmp(state, "all") != 0) {
        api_field_problem(rs, "state", PROBLEM_V_ONE_OF,
                          json_pack("{s:s}", "allowed", "open, resolved, all"));
        return api_fail_fields(rs);
    }
    struct page pg;
    e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    if (pg.after && (!pg.after[0] || strspn(pg.after, "0123456789") != strlen(pg.after) ||
                     strlen(pg.after) > 18)) {
        paging_free(&pg);
        api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
        return api_fail_fields(rs);
    }
    e = db_gpu_fault_list(rq->db, c.id, state, pg.after, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

int api_gpu_fault_resolve(struct req *rq, struct resp *rs)
{
    struct cluster_ref c = {0};
    int e = cluster_of(rq, rs, &c);
    if (e)
        return e;
    const char *node = req_param(rq, "node"), *gpu = req_query(rq, "gpu");
    if (!backend_node_name_valid(node))
        api_field_problem(rs, "node", PROBLEM_GPU_FAULT_NODE_NAME, NULL);
    char *end = NULL;
    long g = gpu ? strtol(gpu, &end, 10) : -1;
    if (gpu && (!*gpu || *end || g < 0 || g > FAULTREPORT_MAX_GPU_INDEX || gpu[0] == '+'))
        api_field_problem(rs, "gpu", PROBLEM_GPU_FAULT_GPU_INDEX,
                          json_pack("{s:I}", "max", (json_int_t)FAULTREPORT_MAX_GPU_INDEX));
    if (rs->err.nfields)
        return api_fail_fields(rs);
    if (!auth_node_allowed(&rq->actor, node))
        return api_problem(
            rs, PROBLEM_GPU_FAULT_TOKEN_NODE,
            json_pack("{s:s, s:s}", "token_node", rq->actor.token_node, "node", node));
    int ngpus = 0;
    bool known = false;
    e = node_gpus(rq, c.id, node, &ngpus, &known);
    char gpus[16];
    snprintf(gpus, sizeof gpus, "{%ld}", g);
    struct db_gpu_fault_hits h = {0};
    if (!e)
        e = db_gpu_fault_resolve(rq->db, c.id, node, gpu ? gpus : NULL, rq->actor.username, &h);
    if (e)
        return e;
    json_t *resolved = json_array();
    for (size_t i = 0; i < h.n; i++)
        json_array_append_new(
            resolved,
            json_pack("{s:I, s:o}", "id", (json_int_t)h.v[i].id, "gpu",
                      h.v[i].gpu_index < 0 ? json_null() : json_integer(h.v[i].gpu_index)));
    /* a node that left the cluster may still have faults to resolve */
    bool none = h.n == 0;
    db_gpu_fault_hits_free(&h);
    if (!known && none) {
        json_decref(resolved);
        return api_problem(rs, PROBLEM_GPU_FAULT_NODE_UNKNOWN,
                           json_pack("{s:s, s:s}", "node", node, "cluster", c.name));
    }
    json_t *out =
        json_pack("{s:s, s:s, s:o}", "cluster", c.name, "node", node, "resolved", resolved);
    struct touched t = {0};
    touch(&t, node, NULL);
    e = consequences(rq, &c, &t, out);
    touched_free(&t);
    if (e) {
        json_decref(out);
        return e;
    }
    char *res = xasprintf("%s/%s", c.name, node);
    resp_audit(rs, "node", res, json_deep_copy(out));
    free(res);
    return resp_json(rs, MHD_HTTP_OK, out);
}
