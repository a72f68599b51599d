/* inventory.c - inventory refresh (see inventory.h). */
#include "inventory.h"

#include "../backends/callstats.h"
#include "../backends/backend.h"
#include "../db/clusters.h"
#include "../server/log.h"
#include "../server/sbuf.h"

#include <stdio.h>

#define MAX_RESOURCES 64

int inventory_refresh(struct db *db, const struct backend_ops *ops, const struct backend_cluster *bc)
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
    struct sbuf names = SBUF_INIT, totals = SBUF_INIT;
    for (int i = 0; i < n; i++) {
        sbuf_printf(&names, "%s%s", i ? "," : "", res[i].name);
        sbuf_printf(&totals, "%s%lld", i ? "," : "", res[i].total);
    }
    int e = db_cluster_synced(db, bc->id, true, NULL, sbuf_str(&names), sbuf_str(&totals));
    sbuf_free(&names);
    sbuf_free(&totals);
    return e;
}
