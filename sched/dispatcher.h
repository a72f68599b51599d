/*
 * dispatcher.h - the worker that carries admission decisions and stop
 * requests to the clusters: it claims due outbox rows (a lease, so several
 * replicas can share the work and a crash only delays a row), calls the
 * cluster's backend, and records the delivery - or the failure, tried again
 * with exponential backoff. Backends make delivery idempotent (the backend
 * job carries the platform's run key), so a retry never starts a job twice.
 * Every backend call it makes is an audit event (backend.submit, .cancel,
 * .preempt: what was sent, what came back), written in the transaction that
 * records the delivery.
 */
#ifndef AIDC_DISPATCHER_H
#define AIDC_DISPATCHER_H

struct backend_cluster;
struct config;
struct db;
struct db_outbox_cluster;
struct worker;

/*
 * Claim outbox rows: run claim(db, arg) in a system transaction of its own,
 * so the lease holds before any row is delivered (outside any transaction).
 * 0 or an aidc_err.
 */
int dispatcher_claim(struct db *db, int (*claim)(struct db *db, void *arg), void *arg);
/*
 * The backend_cluster of an outbox row's cluster. The strings are row's;
 * options is a new reference (json_decref it).
 */
void dispatcher_cluster_row(struct backend_cluster *cl, const struct db_outbox_cluster *row,
                            const struct config *cfg);
struct worker *dispatcher_start(const struct config *cfg);

#endif
