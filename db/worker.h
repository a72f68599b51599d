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

#include <stdatomic.h>
#include <stdbool.h>

struct db;
struct sbuf;

/*
 * Workers that lead on one replica at a time. The lead is a session-scoped
 * advisory lock on the worker's own connection: a replica that dies (even
 * SIGKILL) loses its connection and with it the lock, and a standby - which
 * tries every STANDBY interval and at each notification - takes over within
 * about a second. A reconnect loses the lock too: the worker asks for it
 * again before its next round. The rounds keep their own guards (row claims,
 * state-guarded updates, transaction locks), so an overlap - a leader cut off
 * from the database while a standby took over - does no harm either.
 */
enum worker_lead {
    WORKER_LEAD_NONE = 0, /* runs on every replica */
    WORKER_LEAD_ADMITTER,
    WORKER_LEAD_DISPATCHER,
    WORKER_LEAD_SYNCER,
    WORKER_LEAD_METER,
    WORKER_LEAD_SEALER,
    WORKER_LEAD_REGSYNC,
    WORKER_LEAD_STORAGE,
    WORKER_LEAD_SESSIONS,
    WORKER_LEAD_EFFICIENCY,
    WORKER_LEAD_NOTIFIER,
    WORKER_LEAD_ARRAYCANCEL,
    WORKER_LEAD_COUNT
};

struct worker_spec {
    const char *name;        /* for logs and the connection's application_name */
    const char *channels[4]; /* LISTEN channels, NULL-terminated */
    int interval_ms;         /* longest sleep between rounds */
    /*
     * One round. notified: woken by a notification (not only the timer).
     * Returns > 0 to run again at once (more work is waiting), 0 to sleep,
     * or < 0 (an aidc_err) to try again after a second.
     */
    int (*round)(struct db *db, bool notified, void *arg);
    void *arg;
    enum worker_lead lead; /* WORKER_LEAD_NONE: no lead to take */
    /* Called once each time this replica takes the lead, before its first round:
     * take over what the previous leader left half done. */
    int (*on_lead)(struct db *db, void *arg);
    /* Called before this replica gives the lead up of its own accord (stop, a
     * schema it does not know), while it still holds it: finish what was begun
     * under the lead (the dispatcher's deliveries in flight). NULL: nothing. */
    void (*on_unlead)(void *arg);
    /* arg is malloc'd round state the worker owns: freed when it stops, or at once
     * when it cannot start (so a module's start is its spec, and its stop worker_stop) */
    bool owns_arg;
    /* how an owned arg is freed (NULL: free()), e.g. when it holds connections */
    void (*free_arg)(void *arg);
    /* set (true) when the worker is asked to stop, so that a long round - a walk of
     * the storage spaces - can end early; NULL: none. Lives as long as arg. */
    atomic_bool *cancel;
};

struct worker;

/* Start a worker over its own connection to url. NULL when no thread could start. */
struct worker *worker_start(const char *url, const struct worker_spec *spec);
/* Ask it to stop, wait for the round in progress, release everything (and its arg
 * when it owns it). NULL: nothing. */
void worker_stop(struct worker *w);
/* aidc_worker_leader{worker}, aidc_worker_leader_changes_total, aidc_worker_rounds_failed_total. */
void worker_metrics(struct sbuf *sb);

#endif
