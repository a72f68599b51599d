/*
 * gpufaults.h - GPU health in the database: the nodes of each cluster (as
 * its backend last listed them), faulty GPUs, what they take out of the
 * inventory, jobs stopped because of a fault, node drains through the
 * outbox, and the faulty-GPU figure of /metrics.
 *
 * Invariant: cluster_inventory.total is what the backend reported minus the
 * GPUs open faults take out of service (migrations/0008_gpu_faults.sql,
 * aidc_gpus_out); every change of faults or nodes is followed by
 * db_gpu_inventory_apply in the same transaction.
 */
#ifndef AIDC_DB_GPUFAULTS_H
#define AIDC_DB_GPUFAULTS_H

#include "db.h"
#include "rowjson.h"
#include "sched.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * Replace the nodes of cluster_id with these (array literals of equal
 * length: names, GPU types, first indexes, GPU counts, usable flags);
 * per_gpu: the cluster leaves single GPUs out (aidc assigns indexes).
 */
int db_gpu_nodes_put(struct db *db, const char *cluster_id, const char *names,
                     const char *types, const char *firsts, const char *counts,
                     const char *usable, bool per_gpu);
/* Bring cluster_id's inventory totals in line with its open faults. */
int db_gpu_inventory_apply(struct db *db, const char *cluster_id);
/*
 * How many GPU indexes node has on cluster_id (the end of its last range)
 * into *ngpus; *known is false when it is not one of the cluster's nodes.
 */
int db_gpu_node_gpus(struct db *db, const char *cluster_id, const char *node, int *ngpus,
                     bool *known);

/* A fault recorded or resolved. */
struct db_gpu_fault_hit {
    long long id;
    int gpu_index; /* -1: every GPU of the node */
};
struct db_gpu_fault_hits {
    struct db_gpu_fault_hit *v; /* malloc'd */
    size_t n;
};
void db_gpu_fault_hits_free(struct db_gpu_fault_hits *h);

/*
 * Record faults of node: the GPU indexes in gpus (an int[] literal; a NULL
 * element: every GPU of the node). A GPU with an open fault keeps it (a
 * repeated alert). since: RFC 3339 or NULL (now). The new faults into *out
 * (free with db_gpu_fault_hits_free).
 */
int db_gpu_fault_add(struct db *db, const char *cluster_id, const char *node, const char *gpus,
                     const char *reason, const char *source, const char *alert, const char *since,
                     const char *by, struct db_gpu_fault_hits *out);
/*
 * Resolve the open faults of node: those of the indexes in gpus (an int[]
 * literal; a NULL element is the fault of every GPU), or all of them (gpus
 * NULL). The faults resolved into *out (free with db_gpu_fault_hits_free).
 */
int db_gpu_fault_resolve(struct db *db, const char *cluster_id, const char *node, const char *gpus,
                         const char *by, struct db_gpu_fault_hits *out);
/*
 * Where aidc assigns GPU indexes: ask the active GPU jobs of cluster_id
 * that hold a GPU of node with an open fault to stop and be requeued (the
 * reclaim path: stop_requested 'preempt', a job event naming the fault, an
 * outbox row). The ids of the jobs asked, as a uuid[] literal, into
 * ids (malloc'd).
 */
int db_gpu_fault_stop_assigned(struct db *db, const char *cluster_id, const char *node,
                               int grace_seconds, char **ids);
/*
 * As db_gpu_fault_stop_assigned, for the GPU jobs of cluster_id whose
 * backend ids are in backend_ids (a text[] literal: the runs the cluster
 * reports on node), naming the node's earliest open fault; none when the
 * node has no open fault any more.
 */
int db_gpu_fault_stop_runs(struct db *db, const char *cluster_id, const char *node,
                           const char *backend_ids, int grace_seconds, char **ids);
/*
 * Where aidc assigns GPU indexes: ask every active GPU job holding a GPU with
 * an open fault, and not stopping yet, to stop (as db_gpu_fault_stop_assigned,
 * over all clusters). For the admitter's passes: one that read its snapshot
 * before a fault committed may have handed the faulty GPU out after the
 * report looked for jobs on it. ids as there.
 */
int db_gpu_fault_sweep(struct db *db, int grace_seconds, char **ids);
/*
 * Queue the drain of node (it has open faults and its last node row is not
 * a drain) or its undrain (no open fault, and its last row is a drain);
 * *action receives what was queued ("drain", "undrain", or "" for nothing).
 */
int db_gpu_node_drain_sync(struct db *db, const char *cluster_id, const char *node,
                           const char *reason, char *action, size_t n);
/*
 * Faults of cluster_id after id `after` (NULL: from the first), by id, at
 * most limit + 1 rows as JSON with their keys: state "open", "resolved" or
 * "all".
 */
int db_gpu_fault_list(struct db *db, const char *cluster_id, const char *state, const char *after,
                      int limit, struct db_rows *out);

/* A claimed node row of the outbox; strings as the array's. */
struct db_node_outbox {
    long long id;
    const char *action; /* drain, undrain */
    int attempts;       /* this claim included */
    const char *node;
    const char *reason; /* NULL: none given */
    struct db_outbox_cluster cluster;
};
struct db_node_outboxes {
    struct db_node_outbox *v;
    size_t n;
    struct db_strings *strings;
};
/*
 * Node rows of the outbox due now, claimed for lease_seconds (rows of one
 * node in order), into *out (free with db_node_outboxes_free).
 */
int db_gpu_outbox_claim(struct db *db, int limit, int lease_seconds, struct db_node_outboxes *out);
void db_node_outboxes_free(struct db_node_outboxes *rows);

extern const struct db_stmt *const db_gpufaults_stmts[];

#endif
