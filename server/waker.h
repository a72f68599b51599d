/*
 * waker.h - wake the workers after a request's transaction committed, from a
 * thread of its own.
 *
 * A submit used to NOTIFY aidc_jobs inside its transaction. PostgreSQL commits
 * notifying transactions one at a time, under a database-wide lock held until
 * the commit record is on disk, so every submit waited for the WAL flush of the
 * one before it (docs/performance.md). The request now only marks the channel
 * (waker_poke, after its COMMIT answered); this thread sends one NOTIFY for all
 * the marks that came in while it was sending the last one, on its own
 * connection and without waiting for the flush - and, in a burst, no more
 * than two per admission_coalesce_ms, the admitter's own pace (waker.c). The
 * listeners see the committed work when the notification reaches them. One that
 * cannot be sent (the database away) is tried again every second until it is,
 * or the waker stops; one lost in a crash leaves the work to the workers' timed
 * passes.
 */
#ifndef AIDC_WAKER_H
#define AIDC_WAKER_H

#include <stdbool.h>

struct config;

enum waker_channel {
    WAKER_JOBS = 1, /* aidc_jobs: a job was submitted (the admitter, the meter) */
};

/* Start the thread (its connection opens at the first poke); false on failure. */
bool waker_start(const struct config *cfg);
/* Ask for a notification on channels (a mask of enum waker_channel); never waits
 * on the database. Without a started waker, nothing happens. */
void waker_poke(unsigned channels);
/* Send what is still asked for, then stop the thread and close its connection. */
void waker_stop(void);

#endif
