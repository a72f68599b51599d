/*
 * gauges.h - the platform-wide state /metrics reports (queue lengths, GPUs,
 * cluster health, outbox backlog, audit and metering lags), read from the
 * database at scrape time so every replica reports the same values, leader
 * or not.
 */
#ifndef AIDC_DB_GAUGES_H
#define AIDC_DB_GAUGES_H

#include "db.h"

/*
 * One row per sample: metric, label name, label value, second label name,
 * second label value (NULL when unused), value (float8). Needs the system
 * context (db_begin with roles "system").
 */
PGresult *db_gauges(struct db *db, int *err);

extern const struct db_stmt *const db_gauges_stmts[];

#endif
