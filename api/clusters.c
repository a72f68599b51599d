/*
 * clusters.c - registering clusters and reading their inventory. The
 * inventory itself is refreshed by the syncer worker (server/syncer.c): a
 * new cluster, or a sync request, wakes it through NOTIFY aidc_sync.
 */
#include "clusters.h"

#include "../backends/backend.h"
#include "../backends/prometheus.h"
#include "../db/clusters.h"
#include "../db/sched.h"
#include "../lib/config.h"
#include "../lib/credref.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../sched/inventory.h"
#include "../server/validate.h"
#include "paging.h"

#include <microhttpd.h>
#include <string.h>

static bool is_kind(const char *s)
{
    return strcmp(s, "local") == 0 || strcmp(s, "slurm") == 0 || strcmp(s, "kubernetes") == 0;
}

/* "file:/absolute/path" or "env:NAME" (or empty): where the secret lives on this host. */
static bool is_credentials_ref(const char *s)
{
    return s[0] == '\0' || credref_valid(s);
}

static const struct vfield create_fields[] = {
    {"name", V_STRING, V_REQUIRED, 0, 0, validate_slug, PROBLEM_V_SLUG},
    {"kind", V_STRING, V_REQUIRED, 0, 0, is_kind, PROBLEM_CLUSTER_KIND},
    {"endpoint", V_STRING, V_NULLABLE, 0, 2048, NULL, 0},
    {"credentials_ref", V_STRING, V_NULLABLE, 0, 0, is_credentials_ref,
     PROBLEM_CLUSTER_CREDENTIALS_REF},
    {"options", V_OBJECT, 0, 0, 0, NULL, 0},
};

/*
 * A cluster whose GPUs aidc assigns (the local executor) has its inventory in
 * its options: write it with the cluster, so jobs can be submitted at once.
 */
static int local_inventory(struct req *rq, const struct backend_ops *ops, const json_t *cluster)
{
    struct backend_cluster bc = {
        .id = json_string_value(json_object_get(cluster, "id")),
        .name = json_string_value(json_object_get(cluster, "name")),
        .kind = ops->kind,
        .options = json_object_get(cluster, "options"),
        .data_dir = rq->cfg->data_dir,
        .self_exe = rq->cfg->self_exe,
    };
    return inventory_refresh(rq->db, ops, &bc);
}

int api_cluster_create(struct req *rq, struct resp *rs)
{
    if (!validate_object(rq->json, create_fields, sizeof create_fields / sizeof create_fields[0],
                         rs))
        return api_fail_fields(rs);
    const char *name = vstr(rq->json, "name"), *kind = vstr(rq->json, "kind");
    const struct backend_ops *ops = backend_find(kind);
    if (!ops) {
        api_field_problem(rs, "kind", PROBLEM_CLUSTER_KIND_UNAVAILABLE,
                          json_pack("{s:s}", "kind", kind));
        return api_fail_fields(rs);
    }
    /* a cluster aidc talks to over the network needs an address and a secret */
    const char *endpoint = vstr(rq->json, "endpoint"), *cred = vstr(rq->json, "credentials_ref");
    if (!ops->gpu_range && (!endpoint || (strncmp(endpoint, "http://", 7) != 0 &&
                                          strncmp(endpoint, "https://", 8) != 0)))
        api_field_problem(rs, "endpoint", PROBLEM_CLUSTER_ENDPOINT_REQUIRED,
                          json_pack("{s:s}", "kind", kind));
    /* a bearer token must not cross the network in clear */
    if (strcmp(kind, "kubernetes") == 0 && endpoint && strncmp(endpoint, "https://", 8) != 0)
        api_field_problem(rs, "endpoint", PROBLEM_CLUSTER_ENDPOINT_HTTPS, NULL);
    if (!ops->gpu_range && (!cred || !cred[0]))
        api_field_problem(rs, "credentials_ref", PROBLEM_CLUSTER_CREDENTIALS_REQUIRED,
                          json_pack("{s:s}", "kind", kind));
    if (rs->err.nfields)
        return api_fail_fields(rs); /* 422, the entries' status */
    json_t *options = json_object_get(rq->json, "options");
    options = options ? json_deep_copy(options) : json_object();
    char msg[256];
    /* the cluster's Prometheus (docs/efficiency.md) is aidc's setting, not the backend's */
    json_t *metrics = json_incref(json_object_get(options, "metrics"));
    (void)json_object_del(options, "metrics");
    bool ok = !metrics || prometheus_metrics_check(metrics, msg, sizeof msg);
    ok = ok && ops->check_options(options, msg, sizeof msg);
    if (ok && metrics)
        ok = json_object_set(options, "metrics", metrics) == 0;
    json_decref(metrics);
    if (!ok) {
        json_decref(options);
        api_field_problem(rs, "options", PROBLEM_CLUSTER_OPTIONS,
                          json_pack("{s:o}", "reason", problem_text(msg)));
        return api_fail_fields(rs);
    }
    char *opts = json_dumps(options, JSON_COMPACT);
    json_decref(options);
    json_t *out = NULL;
    bool second_local = false;
    int e = opts ? db_cluster_create(rq->db, name, kind, vstr(rq->json, "endpoint"),
                                     vstr(rq->json, "credentials_ref"), opts, &out, &second_local)
                 : AIDC_EINTERNAL;
    free(opts);
    if (e == AIDC_ECONFLICT && second_local)
        return api_problem(rs, PROBLEM_CLUSTER_LOCAL_EXISTS, NULL);
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_CLUSTER_EXISTS, json_pack("{s:s}", "cluster", name));
    if (e)
        return e;
    e = ops->gpu_range ? local_inventory(rq, ops, out) : 0;
    if (!e)
        e = db_sched_wake(rq->db, "aidc_sync");
    if (e) {
        json_decref(out);
        return e;
    }
    if (ops->gpu_range) { /* show the inventory just written */
        json_decref(out);
        out = NULL;
        e = db_cluster_get(rq->db, name, &out);
        if (e)
            return e;
    }
    char *loc = xasprintf("/api/v1/clusters/%s", name);
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    resp_audit(rs, "cluster", name,
               json_pack("{s:s, s:s, s:O}", "name", name, "kind", kind, "options",
                         json_object_get(out, "options")));
    return resp_json(rs, MHD_HTTP_CREATED, out);
}

/*
 * How a cluster is reached and why it failed are for platform admins: an
 * endpoint, the name of a credential file and a backend's error text tell
 * an attacker inside a tenant where to go next. Everyone else sees what a
 * submit needs: name, kind, health and inventory.
 */
static const char *const operator_only[] = {"endpoint", "credentials_ref", "options", "last_error",
                                            NULL};

static bool sees_operations(const struct req *rq)
{
    /* a platform admin's token without the admin scope reads like anyone's */
    return (rq->actor.roles & GR_PLATFORM_ADMIN) && (rq->actor.scopes & SC_ADMIN);
}

int api_cluster_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    e = db_cluster_list(rq->db, pg.after, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, sees_operations(rq) ? NULL : operator_only);
}

int api_cluster_name(struct req *rq, struct resp *rs, const char **out)
{
    *out = req_param(rq, "name");
    if (!validate_slug(*out)) {
        api_field_problem(rs, "name", PROBLEM_V_SLUG, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}

int api_cluster_get(struct req *rq, struct resp *rs)
{
    const char *name;
    int e = api_cluster_name(rq, rs, &name);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_cluster_get(rq->db, name, &out);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_CLUSTER_NOT_FOUND, json_pack("{s:s}", "cluster", name));
    if (e)
        return e;
    for (size_t k = 0; !sees_operations(rq) && operator_only[k]; k++)
        (void)json_object_del(out, operator_only[k]);
    return resp_json(rs, MHD_HTTP_OK, out);
}

int api_cluster_sync(struct req *rq, struct resp *rs)
{
    const char *name;
    int e = api_cluster_name(rq, rs, &name);
    if (e)
        return e;
    char id[37], kind[16];
    e = db_cluster_lookup(rq->db, name, id, kind, sizeof kind, NULL);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_CLUSTER_NOT_FOUND, json_pack("{s:s}", "cluster", name));
    if (!e)
        e = db_sched_wake(rq->db, "aidc_sync");
    if (e)
        return e;
    resp_audit(rs, "cluster", name, NULL);
    return resp_json(rs, MHD_HTTP_ACCEPTED,
                     json_pack("{s:s, s:s}", "cluster", name, "sync", "requested"));
}
