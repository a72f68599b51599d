/*
 * files.h - what the files API asks the database about a storage space:
 * the tenant's number (its files' owner), whether the project or member it
 * names exists, and the space's storage limit.
 */
#ifndef AIDC_DB_FILES_H
#define AIDC_DB_FILES_H

#include <stdbool.h>

struct db;
struct db_stmt;

struct db_files_space {
    long long tenant_number;
    bool exists;          /* the project (not deleted) or the member; datasets: always */
    char project_id[37];  /* projects: its id */
    double limit_gib;     /* storage_gib of the project / home_storage_gib of the tenant; < 0: none */
    long long measured_bytes; /* the storage worker's last measurement, -1: none yet */
};

/*
 * The space kind ("projects", "home", "datasets") name of tenant_id (in the
 * request's transaction: row-level security applies). 0, or an aidc_err
 * (AIDC_ENOTFOUND: no such tenant).
 */
int db_files_space(struct db *db, const char *tenant_id, const char *kind, const char *name,
                   struct db_files_space *out);

extern const struct db_stmt *const db_files_stmts[];

#endif
