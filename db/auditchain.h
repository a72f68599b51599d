/*
 * auditchain.h (db) - reading the audit chain and its signed checkpoints,
 * for verification (audit/verify.h), exports and GET /audit/checkpoints.
 *
 * Lists hand out typed rows whose strings point into the list: they live
 * until its _free, which accepts a zeroed list.
 */
#ifndef AIDC_DB_AUDITCHAIN_H
#define AIDC_DB_AUDITCHAIN_H

#include "db.h"
#include "rowjson.h"

#include <stdbool.h>
#include <stddef.h>

/* A checkpoint: the chain head at position seq, as stored and signed. */
struct db_audit_checkpoint {
    long long id, seq;
    const char *ts;        /* RFC 3339 UTC, as the signature covers it */
    const char *head_hash; /* hex */
    const char *alg;       /* "ed25519", "hmac-sha256" or "none" */
    const char *key_id;
    const char *signature; /* hex */
};
struct db_audit_checkpoints {
    struct db_audit_checkpoint *v;
    size_t n;
    void *owner; /* what the strings point into (db/ only) */
};
void db_audit_checkpoints_free(struct db_audit_checkpoints *l);

/* Checkpoints with from_seq <= seq <= to_seq, by seq then id. 0 or errors as db_query. */
int db_audit_checkpoints_between(struct db *db, long long from_seq, long long to_seq,
                                 struct db_audit_checkpoints *out);
/*
 * One page of checkpoints, newest first, keyset on id (before_id NULL: the
 * first page): up to limit items as GET /audit/checkpoints shows them, each
 * keyed by its id. *out is the caller's on success (db_rows_free).
 */
int db_audit_checkpoints_page(struct db *db, const char *before_id, int limit, struct db_rows *out);

/*
 * The end of the chain - its last position, or the last one retention
 * recorded - into *last, and in *beyond the checkpoint past that end
 * reaching furthest (none: n = 0, as it should be). One statement, one
 * snapshot. 0 or errors as db_query.
 */
int db_audit_chain_end(struct db *db, long long *last, struct db_audit_checkpoints *beyond);

/* An entry of the chain and the event it covers. */
struct db_audit_entry {
    long long seq, event_id;
    const char *hash, *prev_hash; /* hex */
    const char *json;             /* the event as the chain hashes it; NULL: it is gone */
};
struct db_audit_entries {
    struct db_audit_entry *v;
    size_t n;
    void *owner; /* what the strings point into (db/ only) */
};
void db_audit_entries_free(struct db_audit_entries *l);
/* Up to limit chain entries with after_seq < seq <= upto_seq, by seq. 0 or errors as db_query. */
int db_audit_chain_batch(struct db *db, long long after_seq, long long upto_seq, int limit,
                         struct db_audit_entries *out);

/* The chain positions of events written in [from, to) (NULL: open); any false: none. */
struct db_audit_seq_range {
    bool any;
    long long first, last;
};
int db_audit_seq_range(struct db *db, const char *from, const char *to,
                       struct db_audit_seq_range *out);

/* A run of chain positions that retention removed, and the hash at its end. */
struct db_audit_run {
    long long first_seq, last_seq;
    const char *last_hash; /* hex as recorded */
};
struct db_audit_runs {
    struct db_audit_run *v;
    size_t n;
    void *owner; /* what the strings point into (db/ only) */
};
void db_audit_runs_free(struct db_audit_runs *l);
/* Every recorded run, by first_seq. 0 or errors as db_query. */
int db_audit_retention_runs(struct db *db, struct db_audit_runs *out);

/* Events after the sealed frontier (waiting for the sealer) into *n. */
int db_audit_unsealed_count(struct db *db, long long *n);

extern const struct db_stmt *const db_auditchain_stmts[];

#endif
