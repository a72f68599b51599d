/*
 * worker.h - a background worker: a thread with its own database
 * connection that runs rounds of work, woken by NOTIFY on its channels, by
 * a timer, or at once when a round says there is more to do.
 *
 * The admitter, dispatcher and syncer (sched/) are workers. A round that
 * fails (database down) is tried again a second later; the connection
 * reconnects by itself (db/db.c) and LISTENs again, and since notifications
 * sent meanwhile are lost, every wake-up runs a full round, never one
 * driven by the notification's payload.
 */
#ifndef AIDC_WORKER_H
#define AIDC_WORKER_H

#include <stdbool.h>

struct db;

struct worker_spec {
    const char *name;         /* for logs and the connection's application_name */
    const char *channels[4];  /* LISTEN channels, NULL-terminated */
    int interval_ms;          /* longest sleep between rounds */
    /*
     * One round. notified: woken by a notification (not only the timer).
     * Returns > 0 to run again at once (more work is waiting), 0 to sleep,
     * or < 0 (an aidc_err) to try again after a second.
     */
    int (*round)(struct db *db, bool notified, void *arg);
    void *arg;
};

struct worker;

/* Start a worker over its own connection to url. NULL when no thread could start. */
struct worker *worker_start(const char *url, const struct worker_spec *spec);
/* Ask it to stop, wait for the round in progress, release everything. */
void worker_stop(struct worker *w);

#endif
