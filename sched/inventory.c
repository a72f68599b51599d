/* inventory.c - inventory refresh (see inventory.h). */
#include "inventory.h"

#include "../backends/callstats.h"
#include "../backends/backend.h"
#include "../db/clusters.h"
#include "../db/gpufaults.h"
#include "../db/pgarray.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"

#include <stdio.h>

#define MAX_RESOURCES 64

struct node_rows {
    struct pgarray names, types, firsts, counts, usable;
};

static void add_node(void *arg, const struct backend_node *n)
{
    struct node_rows *nr = arg;
    pgarray_add(&nr->names, n->name);
    pgarray_add(&nr->types, n->gpu_type);
    pgarray_addf(&nr->firsts, "%d", n->first);
    pgarray_addf(&nr->counts, "%d", n->gpus);
    pgarray_add(&nr->usable, n->usable ? "t" : "f");
}

/*
 * The cluster's nodes as its backend lists them, where it can (what GPU
 * faults may name). A backend that cannot list them now keeps the nodes of
 * the last refresh: the inventory is still refreshed, and a fault on a node
 * known before can still be reported.
 */
static int refresh_nodes(struct db *db, const struct backend_ops *ops,
                         const struct backend_cluster *bc)
{
    if (!ops || !ops->nodes)
        return 0;
    struct node_rows nr = {PGARRAY_INIT, PGARRAY_INIT, PGARRAY_INIT, PGARRAY_INIT, PGARRAY_INIT};
    char err[512] = "";
    int e = 0;
    if (ops->nodes(bc, add_node, &nr, err, sizeof err) != 0)
        log_warn("cannot list the nodes of cluster %s: %s", bc->name, err);
    else
        e = db_gpu_nodes_put(db, bc->id, pgarray_str(&nr.names), pgarray_str(&nr.types),
                             pgarray_str(&nr.firsts), pgarray_str(&nr.counts),
                             pgarray_str(&nr.usable), ops->gpu_range != NULL);
    struct pgarray *all[] = {&nr.names, &nr.types, &nr.firsts, &nr.counts, &nr.usable};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pgarray_free(all[i]);
    return e;
}

int inventory_refresh(struct db *db, const struct backend_ops *ops,
                      const struct backend_cluster *bc)
{
    struct backend_resource res[MAX_RESOURCES];
    char err[512] = "";
    int n = -1;
    if (ops) {
        struct timespec t0 = callstats_start();
        n = ops->inventory(bc, res, MAX_RESOURCES, err, sizeof err);
        callstats_done(t0, bc->name, "inventory", n >= 0);
    } else
        snprintf(err, sizeof err, "this aidcd has no backend for clusters of kind %s", bc->kind);
    if (n < 0) {
        log_warn("cluster %s is unhealthy: %s", bc->name, err);
        return db_cluster_synced(db, bc->id, false, err, "", "");
    }
    int e = refresh_nodes(db, ops, bc);
    if (e)
        return e;
    struct sbuf names = SBUF_INIT, totals = SBUF_INIT;
    for (int i = 0; i < n; i++) {
        sbuf_printf(&names, "%s%s", i ? "," : "", res[i].name);
        sbuf_printf(&totals, "%s%lld", i ? "," : "", res[i].total);
    }
    e = db_cluster_synced(db, bc->id, true, NULL, sbuf_str(&names), sbuf_str(&totals));
    sbuf_free(&names);
    sbuf_free(&totals);
    /* what the backend reported, less the GPUs faults hold (nodes drained since no longer count) */
    return e ? e : db_gpu_inventory_apply(db, bc->id);
}
