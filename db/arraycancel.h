/*
 * arraycancel.h - the tasks of a cancelled array, ended in bounded batches
 * (migrations/0030_array_cancel_batches.sql). The parent's cancel marks it
 * (jobs.array_cancel: the reason its tasks end with); the array-cancel
 * worker (sched/arraycancel.c) calls these in its own transactions, with
 * the "system" context.
 */
#ifndef AIDC_DB_ARRAYCANCEL_H
#define AIDC_DB_ARRAYCANCEL_H

#include "db.h"

#include <stdbool.h>

/*
 * One marked array, locked for this transaction (an array another worker
 * holds is skipped): the first after `after` (the one tried last; NULL: the
 * first), wrapping around; its id into parent (37 bytes); *found false when
 * none is marked.
 */
int db_arraycancel_next(struct db *db, const char *after, char parent[37], bool *found);
/*
 * End up to limit of parent's open tasks, lowest index first, skipping rows
 * another transaction holds: a queued task is cancelled with the parent's
 * reason, one in a backend is asked to stop (one of a whole array is stopped
 * by the cluster with its array: no outbox row of its own). How many were
 * ended or asked into *n.
 */
int db_arraycancel_batch(struct db *db, const char *parent, int limit, long *n);
/*
 * Unmark parent when no task of it is left to end or ask; *done says
 * whether it was.
 */
int db_arraycancel_finish(struct db *db, const char *parent, bool *done);

extern const struct db_stmt *const db_arraycancel_stmts[];

#endif
