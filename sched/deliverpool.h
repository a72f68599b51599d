/*
 * deliverpool.h - the dispatcher's concurrent delivery: a batch of claimed
 * outbox rows handed to a few threads, each with a database connection of its
 * own (the delivery records its outcome in its own transaction), at most
 * per_key of them at once on rows with the same key (a cluster), so a slow or
 * unreachable cluster holds no more than its share of the threads.
 *
 * It changes nothing of exactly-once: every row of a batch was claimed once
 * (leased, attempts counted) before the batch starts, a claim holds at most
 * one row per job (db_outbox_claim: an earlier row of a job goes first), and
 * a row is delivered by exactly one thread. The calling thread delivers too,
 * over its own connection, so a pool of n needs n - 1 extra connections.
 */
#ifndef AIDC_DELIVERPOOL_H
#define AIDC_DELIVERPOOL_H

#include <stddef.h>

struct db;
struct deliverpool;

/* Deliver one item over db (this thread's connection). */
typedef void deliverpool_fn(struct db *db, const void *item, void *arg);
/* The key whose items are limited together (a cluster's id); borrowed from item. */
typedef const char *deliverpool_key(const void *item);

/*
 * A pool of threads delivering at most threads items at once (1: all in the
 * caller, nothing started), per_key of them with the same key. Connections to
 * url are opened lazily (db/db.h), named aidcd-<name>-<i>. Never NULL.
 */
struct deliverpool *deliverpool_new(const char *url, const char *name, int threads, int per_key);
/*
 * Run fn(db, item, arg) once for each of n items of size sz; returns when all
 * are done. db is the caller's connection for the items it runs itself.
 */
void deliverpool_run(struct deliverpool *p, struct db *db, const void *items, size_t n, size_t sz,
                     deliverpool_key *key, deliverpool_fn *fn, void *arg);
/* Close the connections and free the pool (NULL: nothing). Not while a run is in progress. */
void deliverpool_free(struct deliverpool *p);

#endif
