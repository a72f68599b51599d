/*
 * dbstats.h - counts of database connections for /metrics: open per use
 * (enum db_pool), serving a request now, reconnections. Process-wide atomic
 * counters that db.c keeps up to date.
 */
#ifndef AIDC_DBSTATS_H
#define AIDC_DBSTATS_H

#include "db.h"

void dbstats_connection(enum db_pool pool, int delta);
void dbstats_busy(enum db_pool pool, int delta);
void dbstats_reconnected(void);

#endif
