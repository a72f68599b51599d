/*
 * gauges.h - the platform-wide state /metrics reports (queue lengths, GPUs,
 * cluster health, outbox backlog, audit and metering lags), read from the
 * database at scrape time so every replica reports the same values, leader
 * or not.
 */
#ifndef AIDC_DB_GAUGES_H
#define AIDC_DB_GAUGES_H

#include "db.h"

#include <stddef.h>

#define DB_GAUGE_LABELS 2

/* One sample. */
struct db_gauge {
    char *metric;
    char *label[DB_GAUGE_LABELS]; /* label names, NULL when unused (the first before the second) */
    char *label_value[DB_GAUGE_LABELS]; /* "" when SQL NULL */
    /* the float8 as PostgreSQL writes it (shortest exact form): the exposition
     * format takes it as it is, where printing a double again could change it */
    char *value;
};
struct db_gauges {
    struct db_gauge *v;
    size_t n;
};

/*
 * Every sample, metric by metric. Needs the system context (db_begin with
 * roles "system"). Free with db_gauges_free (also after a failure).
 */
int db_gauges(struct db *db, struct db_gauges *out);
void db_gauges_free(struct db_gauges *g);

extern const struct db_stmt *const db_gauges_stmts[];

#endif
