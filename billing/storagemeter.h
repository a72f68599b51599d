/*
 * storagemeter.h - the storage worker: every AIDC_STORAGE_SCAN_SECONDS it
 * measures every storage space of every tenant under the storage root
 * (storage/space.h) and meters what each held since its last measurement
 * as GiB-hours (db/storage.h; docs/storage-quotas.md).
 *
 * Spaces are found on disk: the root's folders are tenants (by slug; a
 * folder of no tenant is skipped, never measured), theirs "projects",
 * "home" and "datasets", and theirs the spaces. Nothing is followed through
 * a link: a link standing as a tenant, a kind or a space is no space, and a
 * link inside a space counts as the link itself (storage/space.c). A space
 * that left the disk is forgotten (its quota shows nothing used).
 *
 * One replica measures at a time (the worker's lead, an advisory lock); a
 * measurement is recorded under its space's row lock, so a second one -
 * another replica after a lead change, or a test driving a pass - never
 * meters the same time twice.
 */
#ifndef AIDC_BILLING_STORAGEMETER_H
#define AIDC_BILLING_STORAGEMETER_H

#include "../lib/config.h"

#include <stdatomic.h>

struct db;
struct sbuf;
struct worker;

/* What a pass did. */
struct storagemeter_figures {
    long spaces;     /* measured and recorded */
    long pieces;     /* hour pieces of usage written */
    long incomplete; /* of spaces, walks cut at max_entries */
    long failed;     /* spaces or folders that could not be read (logged) */
};

struct storagemeter_pass {
    const char *root;          /* the storage root (AIDC_STORAGE_ROOT) */
    long long max_entries;     /* the most entries one space's walk visits */
    const char *at;            /* RFC 3339: when the measurements count as taken; NULL: now */
    const atomic_bool *cancel; /* stop between spaces when set (NULL: never) */
};

/*
 * One pass on db (outside a transaction; each space is recorded in a
 * transaction of its own). A missing root is an empty one. 0 with *fig
 * filled (a space that cannot be read is counted there and logged, not an
 * error), or an aidc_err when the database failed (the pass stops there; what
 * was recorded stays). The pass is recorded as whole - what finalizing an
 * invoice waits for - only when it was not cancelled. For the worker and tests.
 */
int storagemeter_run(struct db *db, const struct storagemeter_pass *pass,
                     struct storagemeter_figures *fig);

/* Start the worker (cfg->storage_root, storage_scan_seconds, storage_scan_max_entries). */
struct worker *storagemeter_start(const struct config *cfg);

/* The worker's figures for /metrics (Prometheus text appended to sb). */
void storagemeter_metrics(struct sbuf *sb);

#endif
