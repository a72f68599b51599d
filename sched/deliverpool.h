/*
 * deliverpool.h - the dispatcher's concurrent delivery: standing threads,
 * each with a database connection of its own (a delivery records its outcome
 * in its own transaction), fed claimed outbox rows as they come, at most
 * per_key of them at once on rows with the same key (a cluster), so a slow or
 * unreachable cluster holds no more than its share of the threads.
 *
 * The dispatcher claims only as many rows as the pool has room for, whenever
 * a thread comes free: a row admitted while others are still being delivered
 * starts at once instead of waiting for the slowest delivery of a batch. The
 * pool holds at most `threads` claimed rows, each started as soon as a slot of
 * its key is free. A row may wait behind a few deliveries of its own cluster,
 * past its lease even: the dispatcher's claims leave every row the pool holds
 * alone (deliverpool_each), so it is still delivered once.
 *
 * It changes nothing of exactly-once: every row was claimed once (leased,
 * attempts counted) before it is handed over, a claim holds at most one row
 * per job and never a row behind an undelivered one of the same job
 * (db_outbox_claim), and a row is delivered by exactly one thread.
 */
#ifndef AIDC_DELIVERPOOL_H
#define AIDC_DELIVERPOOL_H

#include <stdbool.h>
#include <stddef.h>

struct db;
struct deliverpool;

/* Deliver one item over db (the delivering thread's connection). */
typedef void deliverpool_fn(struct db *db, const void *item, void *arg);
/* The key whose items are limited together (a cluster's id); borrowed from item. */
typedef const char *deliverpool_key(const void *item);
/* Called once when every item of one deliverpool_add is done, outside the pool's lock. */
typedef void deliverpool_release(void *owner);

/*
 * A pool of up to threads delivering threads, per_key of them on items with
 * the same key. No thread starts, and no connection to url opens, before the
 * first item comes (a replica that never leads holds none); each connection is
 * named aidcd-<name>-<i>. Never NULL.
 */
struct deliverpool *deliverpool_new(const char *url, const char *name, int threads, int per_key,
                                    deliverpool_key *key, deliverpool_fn *fn, void *arg);
/* How many more items it takes now: its threads less the items it holds (the
 * threads start at the first call, so that the room is what did start). */
int deliverpool_room(struct deliverpool *p);
/*
 * Wait up to timeout_ms for room (an item done); true when there is. Returns
 * at once while there is room.
 */
bool deliverpool_wait_room(struct deliverpool *p, int timeout_ms);
/*
 * The keys that take no more item now (per_key of their items held), each
 * passed to fn under the pool's lock: a claim leaves their rows alone.
 */
void deliverpool_busy_keys(struct deliverpool *p, void (*fn)(const char *key, void *arg),
                           void *arg);
/*
 * Hand over n items of size sz that live in owner (at most deliverpool_room);
 * returns at once. release(owner) runs when the last of them is done. Where no
 * thread can start, db (the caller's connection) delivers them before it
 * returns.
 */
void deliverpool_add(struct deliverpool *p, struct db *db, const void *items, size_t n, size_t sz,
                     void *owner, deliverpool_release *release);
/* Call fn for every item it holds (waiting or in delivery), under the pool's lock. */
void deliverpool_each(struct deliverpool *p, void (*fn)(const void *item, void *arg), void *arg);
/* Wait until every item handed over is done. */
void deliverpool_drain(struct deliverpool *p);
/* Deliver what it holds, stop its threads, close their connections (NULL: nothing). */
void deliverpool_free(struct deliverpool *p);

#endif
