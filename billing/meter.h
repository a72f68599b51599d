/*
 * meter.h - the metering worker: cuts runs into hour intervals
 * (usage_intervals) as they close and, for open runs, at each hour boundary
 * once their cluster has reported them running past it; records each
 * cluster's GPU capacity per hour for utilization reports. One replica
 * meters at a time (an advisory lock); the statement itself is safe against
 * a second cutter and against a run closing meanwhile (db/billing.c).
 */
#ifndef AIDC_BILLING_METER_H
#define AIDC_BILLING_METER_H

#include "../lib/config.h"

struct db;
struct meter;
struct sbuf;

struct worker;
struct worker *meter_start(const struct config *cfg);

/*
 * One metering pass on db (outside a transaction): cut up to max runs.
 * Returns how many runs were cut, or an aidc_err. For the worker and tests.
 */
int meter_run(struct db *db, int max);
/* The worker's figures for /metrics (Prometheus text appended to sb). */
void meter_metrics(struct sbuf *sb);

#endif
