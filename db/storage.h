/*
 * storage.h - statements of the storage worker: the latest measurement of
 * each storage space (storage_spaces) and its metering into hour pieces of
 * GiB-hours (storage_usage), which usage reports and invoices read beside
 * the jobs' intervals (db/billing.c). The rules are in
 * migrations/0018_storage.sql and docs/storage-quotas.md.
 *
 * Times are RFC 3339 text; NULL for "now" (the database's clock).
 */
#ifndef AIDC_DB_STORAGE_H
#define AIDC_DB_STORAGE_H

#include "db.h"

#include <stdbool.h>

extern const struct db_stmt *const db_storage_stmts[];

/* What a space's kind is called in storage_spaces: "project", "home", "dataset". */
#define DB_STORAGE_KIND_MAX 8

/*
 * The start of a pass: *at_out (RFC 3339, UTC, microseconds) is at, or the
 * database's now() when at is NULL; *since is how many seconds ago the last
 * whole pass began (a huge number when there was none).
 */
int db_storage_clock(struct db *db, const char *at, char at_out[40], double *since);
/* The id of the tenant whose slug is slug; AIDC_ENOTFOUND when there is none. */
int db_storage_tenant(struct db *db, const char *slug, char id[37]);

struct db_storage_figures {
    const char *tenant_id;
    const char *kind; /* "project", "home" or "dataset" */
    const char *name; /* the space's folder: a project slug, a user name, a dataset */
    long long bytes, entries;
    bool complete;  /* false: the walk stopped at its bound, the figures are a lower bound */
    const char *at; /* when it was measured (NULL: now) */
};

/*
 * Record one measurement (in the caller's transaction, which holds the
 * space's row locked until it ends): the space's latest
 * figures, and - when it was measured before, earlier than at - the time
 * since then at these bytes as hour pieces of storage_usage. A measurement
 * no later than the recorded one changes nothing (*pieces = 0). A project
 * space is tied to its tenant's project of that slug (the live one, else
 * the last deleted one, else none). *pieces: the hour pieces written.
 */
int db_storage_record(struct db *db, const struct db_storage_figures *f, long *pieces);
/*
 * Forget the spaces of tenant_id that are no longer on disk: present is a
 * PostgreSQL text[] literal of "kind/name" ("{project/vision,home/alice}").
 */
int db_storage_forget(struct db *db, const char *tenant_id, const char *present);
/* A whole pass that began at at is done (the later of it and the last one is kept). */
int db_storage_scan_done(struct db *db, const char *at);

#endif
