/*
 * dbstats.h - counts of database connections for /metrics: open per use
 * (enum db_pool), serving a request now, reconnections, and successful
 * connects per use (db.c: one connection back lets its siblings retry at once).
 * Process-wide atomic counters that db.c keeps up to date.
 */
#ifndef AIDC_DBSTATS_H
#define AIDC_DBSTATS_H

#include "db.h"

void dbstats_connection(enum db_pool pool, int delta);
void dbstats_busy(enum db_pool pool, int delta);
void dbstats_reconnected(void);
void dbstats_connected(enum db_pool pool);
unsigned long dbstats_connects(enum db_pool pool);

#endif
