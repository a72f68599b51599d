/*
 * inventory.h - ask a cluster's backend what it offers and record it (and
 * the cluster's health) in the database. Used by the syncer, and by POST
 * /clusters for the local executor, whose inventory is its own options.
 */
#ifndef AIDC_INVENTORY_H
#define AIDC_INVENTORY_H

struct db;
struct backend_ops;
struct backend_cluster;

/* ops NULL: the kind has no backend here (recorded as unhealthy). 0 or a database error. */
int inventory_refresh(struct db *db, const struct backend_ops *ops, const struct backend_cluster *bc);

#endif
