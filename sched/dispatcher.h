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

#include <libpq-fe.h>

struct backend_cluster;
struct config;
struct db;
struct worker;

/* Deliver the due rows (a batch): > 0 when more are waiting. */
int dispatcher_round(struct db *db, const struct config *cfg);
/*
 * One batch of an outbox: claim up to batch rows for the lease in a system
 * transaction of its own, then deliver each outside any transaction.
 * Returns 1 when a full batch came (more may wait), 0, or an aidc_err.
 */
int dispatcher_claim_deliver(struct db *db, const struct config *cfg, int batch,
                             int (*claim)(struct db *db, int limit, int lease_s, PGresult **out),
                             void (*deliver)(struct db *db, const struct config *cfg,
                                             const PGresult *r, int i));
/*
 * The cluster of an outbox row, from its columns id, name, kind, endpoint,
 * credentials_ref and options (JSON text) in that order from column first.
 * The strings are r's; options is a new reference (json_decref it).
 */
void dispatcher_cluster_row(struct backend_cluster *cl, const PGresult *r, int i, int first,
                            const struct config *cfg);
struct worker *dispatcher_start(const struct config *cfg);

#endif
