/*
 * auditseal.h (db) - the sealer's statements: the chain head, the events
 * waiting to be chained, appending to the chain, checkpoints, partitions
 * and retention (see audit/sealer.h).
 */
#ifndef AIDC_DB_AUDITSEAL_H
#define AIDC_DB_AUDITSEAL_H

#include "db.h"

#include <stdbool.h>
#include <stddef.h>

/* The chain head: position, hash (hex), and the last event chained. */
struct db_audit_head {
    long long seq;
    char hash[65];
    char upto_ts[48];
    long long upto_id;
};
int db_audit_head(struct db *db, struct db_audit_head *h);

/*
 * Sealer: how far it may chain - before the grace period and before the start
 * of every transaction open in another session (an event's ts is the clock
 * at its INSERT, never before its transaction began). Must be read before
 * the snapshot that reads the events: a transaction that commits in between
 * is then visible to it. out: timestamptz text.
 */
int db_audit_frontier(struct db *db, const char *grace_ms, char *out, size_t n);

/*
 * Sealer: move every event of the inbox into audit_events (in the open
 * transaction); *moved: how many. After db_audit_frontier(), so that every
 * event below the frontier is moved before the sealer reads them.
 */
int db_audit_inbox_move(struct db *db, long long *moved);

/* An event waiting for the sealer. Its strings live as long as its list. */
struct db_audit_unsealed_row {
    long long id;
    const char *ts;   /* as PostgreSQL prints it (the seal's timestamptz[] takes it back) */
    const char *json; /* the event as the chain hashes it, without seq */
};
struct db_audit_unsealed_rows {
    struct db_audit_unsealed_row *v;
    size_t n;
    void *owner; /* what the strings point into (db/ only) */
};
/*
 * Sealer: up to limit events after the head and before frontier, oldest
 * first. *out is the caller's on success (db_audit_unsealed_free). 0 or
 * errors as db_query.
 */
int db_audit_unsealed(struct db *db, const struct db_audit_head *h, const char *frontier, int limit,
                      struct db_audit_unsealed_rows *out);
void db_audit_unsealed_free(struct db_audit_unsealed_rows *rows);
/* Append to the chain; *moved = false when the head moved meanwhile (another sealer). */
int db_audit_seal(struct db *db, const char *old_seq, const char *ids_array, const char *ts_array,
                  const char *hash_array, bool *moved);
int db_audit_partitions(struct db *db);
/* Drop whole months older than days; *dropped partitions. */
int db_audit_retention(struct db *db, const char *days, int *dropped);
int db_audit_checkpoint_insert(struct db *db, const char *ts, const char *seq, const char *head_hex,
                               const char *alg, const char *key_id, const char *sig_hex);

/* The newest checkpoint: found false when there is none. */
struct db_audit_last_checkpoint {
    bool found;
    long long seq;
    long long age_s; /* seconds since it was written */
};
int db_audit_checkpoint_last(struct db *db, struct db_audit_last_checkpoint *out);

extern const struct db_stmt *const db_auditseal_stmts[];

#endif
