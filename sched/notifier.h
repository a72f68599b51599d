/*
 * notifier.h - the notifier (docs/notifications.md): the worker that
 * delivers the notifications outbox. It leads on one replica at a time,
 * wakes on NOTIFY aidc_notify (a new row) and every few seconds (retries
 * that came due), claims a batch of due deliveries with SKIP LOCKED and runs
 * them all at once (libcurl's multi interface), each bounded by
 * AIDC_NOTIFY_TIMEOUT_SECONDS: a slow or dead receiver costs its own
 * delivery that long and no other one more. A failed attempt is retried
 * after AIDC_NOTIFY_BACKOFF_SECONDS, doubled each time up to
 * AIDC_NOTIFY_BACKOFF_MAX_SECONDS, until AIDC_NOTIFY_MAX_ATTEMPTS: then the
 * delivery is failed. Once a minute it also records budget.80/budget.100
 * (db_notify_budgets), and once an hour forgets old deliveries.
 */
#ifndef AIDC_NOTIFIER_H
#define AIDC_NOTIFIER_H

struct config;
struct worker;

struct worker *notifier_start(const struct config *cfg);
/* Seconds to wait before attempt number attempts + 1, after attempts failed ones. */
double notifier_backoff(const struct config *cfg, int attempts);

#endif
