/*
 * prefetch.h - statements sent ahead of the round trip that answers them
 * (db.c's transactions; db_prefetch in db.h is the entry point).
 *
 * A handler that knows the reads it will make - a submit reads the project's
 * id, the cluster candidates and both quotas, one after the other - paid a
 * round trip for each: on two CPUs, a third of aidcd's time in a submit burst
 * went to sending a pipeline and waiting for its answer (docs/performance.md).
 * A prefetched statement goes out with the next statement whose answer is
 * awaited; its answer is kept in the transaction until the db_query of the
 * same statement and parameters takes it, so the caller's code and the
 * module's row parsing stay as they were. Kept answers belong to the
 * transaction: a scope's end, a savepoint's rollback (db_exec_recover) or a lost
 * connection forgets them, and a query that finds none runs as it always did.
 * An answer is as of its round trip: a caller prefetches only what it does not
 * write before it reads it.
 */
#ifndef AIDC_DB_PREFETCH_H
#define AIDC_DB_PREFETCH_H

#include "dbint.h"

/* Keep r, the answer of pending entry i (PEND_KEEP), for its taker: the caller no
 * longer owns it. */
void prefetch_answered(struct db *db, int i, PGresult *r);
/* Pending entry i (PEND_KEEP) was read: if no answer was kept (it failed, or the
 * pipeline was aborted before it), say which statement it was and let its query run. */
void prefetch_done(struct db *db, int i);
/*
 * The kept answer of stmt with params, into *r (NULL: none kept; run it). An
 * answer still in flight is read first. 0 or the error that reading met.
 */
int prefetch_take(struct db *db, const struct db_stmt *stmt, const char *const *params,
                  PGresult **r);
/* Forget every kept answer (the scope ended, or its connection). */
void prefetch_clear(struct db *db);

#endif
