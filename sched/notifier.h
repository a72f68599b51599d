/*
 * notifier.h - the notifier (docs/notifications.md): the worker that
 * delivers the notifications outbox. It leads on one replica at a time,
 * wakes on NOTIFY aidc_notify (a new row) and every few seconds (retries
 * that came due), and keeps up to 16 deliveries in flight at once (libcurl's
 * multi interface), each claimed with SKIP LOCKED and bounded by
 * AIDC_NOTIFY_TIMEOUT_SECONDS; one that ends is recorded at once and its
 * slot takes the next due delivery, so a slow or dead receiver holds its own
 * slot and no other delivery; a user with 4 in flight gets no more until one
 * ends, so one user's dead receivers cannot fill the slots. A failed
 * attempt is retried after AIDC_NOTIFY_BACKOFF_SECONDS, doubled each time up
 * to AIDC_NOTIFY_BACKOFF_MAX_SECONDS, until AIDC_NOTIFY_MAX_ATTEMPTS: then the
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
