/*
 * admitter.h - the admission worker: loads the snapshot (db/sched.c), runs
 * the admission function (sched/admission.c) and writes its decisions -
 * admissions with their outbox rows, preemption requests, reasons and
 * estimated starts of the waiting - in one transaction. One replica at a
 * time (a transaction-scoped advisory lock per pass); woken by NOTIFY
 * aidc_jobs (submit, cancel, job end, requeue) and by a timer.
 */
#ifndef AIDC_ADMITTER_H
#define AIDC_ADMITTER_H

#include "../db/schedsnap.h"

#include <stdbool.h>
#include <stddef.h>

struct config;
struct db;
struct worker;

struct admitter_stats {
    size_t queued, active;         /* in the snapshot */
    size_t fetched;                /* queued rows read whole (db_sched_snapshot_cached) */
    size_t admitted, preempted;    /* written */
    size_t borrowed;               /* of the admitted, beyond their tenant's guarantee */
    size_t waits_written;          /* reasons/estimates that changed */
    size_t waits_pending;          /* changed too, left for the next pass (a cap per pass) */
    double load_ms, decide_ms, write_ms;
    bool skipped;                  /* another replica held the lock */
};

/* One pass in its own transaction. stats may be NULL. */
int admitter_pass(struct db *db, const struct config *cfg, struct admitter_stats *stats);
/* The same with the queued jobs kept in cache between passes, read as how says
 * (db/schedsnap.h). The worker's passes are these. */
int admitter_pass_cached(struct db *db, const struct config *cfg, struct db_queue_cache *cache,
                         enum db_queue_read how, struct admitter_stats *stats);
struct worker *admitter_start(const struct config *cfg);

#endif
