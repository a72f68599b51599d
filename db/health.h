/* health.h - the readiness probe's query. */
#ifndef AIDC_DB_HEALTH_H
#define AIDC_DB_HEALTH_H

#include "db.h"

/* Highest applied migration version into *version. */
int db_health_schema_version(struct db *db, int *version);

extern const struct db_stmt *const db_health_stmts[];

#endif
