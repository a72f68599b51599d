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
 * The rows of node on cluster_id (gpu_type, first_index, gpus, usable),
 * into *out; none when the node is not known.
 */
int db_gpu_node_get(struct db *db, const char *cluster_id, const char *node, PGresult **out);

/*
 * Record faults of node: the GPU indexes in gpus (an int[] literal; a NULL
 * element: every GPU of the node). A GPU with an open fault keeps it (a
 * repeated alert). since: RFC 3339 or NULL (now). Rows of the new faults
 * (id, gpu_index) into *out.
 */
int db_gpu_fault_add(struct db *db, const char *cluster_id, const char *node, const char *gpus,
                     const char *reason, const char *source, const char *alert,
                     const char *since, const char *by, PGresult **out);
/*
 * Resolve the open faults of node: those of the indexes in gpus (an int[]
 * literal; a NULL element is the fault of every GPU), or all of them (gpus
 * NULL). Rows of the faults resolved (id, gpu_index) into *out.
 */
int db_gpu_fault_resolve(struct db *db, const char *cluster_id, const char *node,
                         const char *gpus, const char *by, PGresult **out);
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
 * most limit + 1 rows with a "_cursor": state "open", "resolved" or "all".
 */
int db_gpu_fault_list(struct db *db, const char *cluster_id, const char *state,
                      const char *after, int limit, PGresult **out);

/*
 * Node rows of the outbox due now, claimed for lease_seconds (rows of one
 * node in order): id, action, attempts, node, reason, and the cluster's id,
 * name, kind, endpoint, credentials_ref, options (json text).
 */
int db_gpu_outbox_claim(struct db *db, int limit, int lease_seconds, PGresult **out);

/*
 * Faulty GPUs per cluster and type, for the gauge aidc_gpus_faulty{cluster,
 * gpu_type}: rows (cluster, gpu_type, gpus), under any actor (a SECURITY
 * DEFINER function reads them).
 */
int db_gpu_faulty_by_type(struct db *db, PGresult **out);

extern const struct db_stmt *const db_gpufaults_stmts[];

#endif
