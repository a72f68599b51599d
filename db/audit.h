/*
 * audit.h (db) - reading and exporting the audit log, and storing node
 * records. The sealer's statements are in auditseal.h, the chain's and its
 * checkpoints' in auditchain.h.
 *
 * Events come back as JSON text built by PostgreSQL in the API's shape
 * (one place, EVENT_JSON in auditsql.h), which is also what the chain
 * hashes: see audit/chain.h.
 */
#ifndef AIDC_DB_AUDIT_H
#define AIDC_DB_AUDIT_H

#include "db.h"
#include "rowjson.h"

#include <stdbool.h>
#include <stddef.h>

/* The filters of GET /audit/events and its export; NULL = not filtered. */
struct db_audit_filter {
    const char *actor, *tenant, *action, *action_prefix, *outcome, *source_ip;
    const char *from, *to, *q, *resource_type, *resource_id;
};

/* The filters of GET /audit/commands. */
struct db_audit_cmd_filter {
    const char *host, *user, *tenant, *q, *from, *to, *job_id, *kind;
};

/*
 * One page of events, newest first: up to limit rows, each item the event,
 * its key "ts|id". after_ts/after_id: the keyset cursor (NULL: first page).
 * *out is the caller's (db_rows_free) on success. 0 or errors as db_query.
 */
int db_audit_search(struct db *db, const struct db_audit_filter *f, const char *after_ts,
                    const char *after_id, int limit, struct db_rows *out);
/* As db_audit_search, for node records (GET /audit/commands). */
int db_audit_commands(struct db *db, const struct db_audit_cmd_filter *f, const char *after_ts,
                      const char *after_id, int limit, struct db_rows *out);

/* An event of an export. Its strings live as long as its batch. */
struct db_audit_export_row {
    const char *json;      /* the event as the API shows it */
    bool sealed;           /* chained: seq and prev_hash are set */
    long long seq;         /* its chain position */
    const char *prev_hash; /* hex of the hash before it ("" while unsealed) */
    const char *ts;        /* its time as PostgreSQL prints it: the next cursor */
    long long id;
};

/* A batch of an export; zeroed = empty. */
struct db_audit_export_batch {
    struct db_audit_export_row *v;
    size_t n;
    void *owner; /* what the strings point into (db/ only) */
};

/*
 * Export: up to limit events after the (after_ts, after_id) keyset cursor
 * (after_ts NULL: from the start) written at or before until, in (ts, id)
 * order - the chain's order. *out (zeroed or freed before) is the caller's
 * on success. 0 or errors as db_query.
 */
int db_audit_export(struct db *db, const struct db_audit_filter *f, const char *after_ts,
                    long long after_id, const char *until, int limit,
                    struct db_audit_export_batch *out);
void db_audit_export_free(struct db_audit_export_batch *b);

/* The database's clock (timestamptz text) into out. */
int db_audit_now(struct db *db, char *out, size_t n);

/* Who stores node records (the agent's credential and address). */
struct db_audit_who {
    const char *user_id, *username, *token_id, *roles, *source_ip, *user_agent, *request_id;
};

/* Store node records (a JSON array, validated); *accepted new rows. */
int db_audit_ingest(struct db *db, const char *records_json, const struct db_audit_who *who,
                    long long *accepted);

extern const struct db_stmt *const db_audit_stmts[];

#endif
