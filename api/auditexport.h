/*
 * export.h - streaming audit exports (GET /api/v1/audit/events/export).
 *
 * Rows are read in keyset batches in (ts, id) order - the chain's order, so
 * the events not yet chained come last - each batch in a short transaction of its own on the
 * connection's HTTP thread, and written out as they are sent: memory stays constant whatever the
 * number of rows, and no transaction stays open while a slow client reads. The export ends at the
 * newest event that existed when it began.
 *
 * NDJSON: one event per line with "seq", "prev_hash" and "hash"; after the
 * event at a checkpoint's position, that checkpoint as {"checkpoint": {...}};
 * last, a trailer {"export": {...}} with the row count, the SHA-256 of every
 * line before it and (with a signing key) its signature - a truncated or
 * edited export fails `aidcd audit verify-export`. CSV: RFC 4180 with the
 * chain hashes; cells that a spreadsheet would run as a formula are
 * prefixed with "'".
 */
#ifndef AIDC_AUDIT_EXPORT_H
#define AIDC_AUDIT_EXPORT_H

#include "../audit/sign.h"
#include "../db/audit.h"
#include "../server/request.h"

/* Fill rs with the streamed export of f (copied) for rq. 0 or an aidc_err. */
int auditexport_start(struct req *rq, struct resp *rs, const struct db_audit_filter *f, bool csv,
                      const struct sign_key *key);

#endif
