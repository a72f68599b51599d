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

struct config;
struct db;
struct worker;

/* Deliver the due rows (a batch): > 0 when more are waiting. */
int dispatcher_round(struct db *db, const struct config *cfg);
struct worker *dispatcher_start(const struct config *cfg);

#endif
