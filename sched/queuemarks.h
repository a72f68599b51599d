/*
 * queuemarks.h - the marks of queue positions (0003_queue.sql): every
 * hundredth queued job of a GPU type, from which a job's position is counted
 * instead of from the head of the queue. An admission pass writes those that
 * moved - merged against the marks it read, by type and position - so that a
 * burst appending to the queue adds a mark or two instead of rewriting them all,
 * and rewrites a moved mark in place (0036_queue_marks_in_place.sql).
 */
#ifndef AIDC_QUEUEMARKS_H
#define AIDC_QUEUEMARKS_H

#include "../db/schedsnap.h"

#include <stdbool.h>

struct db;

/*
 * Write the marks of the queue d read, less the jobs admitted[row] (one flag
 * per row of d->queued), against the marks d read. 0 or an AIDC_E* error.
 */
int queuemarks_write(struct db *db, const struct db_snapshot *d, const bool *admitted);

#endif
