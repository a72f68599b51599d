/* health.c - readiness. */
#include "health.h"

#include <stdlib.h>

static const struct db_stmt st_version = {
    "health_schema_version", "SELECT coalesce(max(version), 0) FROM aidc_schema_migrations", 0};

const struct db_stmt *const db_health_stmts[] = {&st_version, NULL};

int db_health_schema_version(struct db *db, int *version)
{
    int e;
    PGresult *r = db_query(db, &st_version, NULL, &e);
    if (!r)
        return e;
    *version = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}
