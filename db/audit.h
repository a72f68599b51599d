/*
 * audit.h (db) - reading, sealing, checking and exporting the audit log.
 *
 * Events come back as JSON text built by PostgreSQL in the API's shape
 * (one place, DB_AUDIT_EVENT_JSON in audit.c), which is also what the chain
 * hashes: see audit/chain.h.
 */
#ifndef AIDC_DB_AUDIT_H
#define AIDC_DB_AUDIT_H

#include "db.h"

#include <libpq-fe.h>
#include <stdbool.h>

/* The filters of GET /audit/events and its export; NULL = not filtered. */
struct db_audit_filter {
    const char *actor, *tenant, *action, *action_prefix, *outcome, *source_ip;
    const char *from, *to, *q, *resource_type, *resource_id;
};

/* The filters of GET /audit/commands. */
struct db_audit_cmd_filter {
    const char *host, *user, *tenant, *q, *from, *to, *job_id, *kind;
};

/* Newest first; rows: json, _cursor ("ts|id"). after_ts/after_id: the keyset cursor (NULL: first page). */
PGresult *db_audit_search(struct db *db, const struct db_audit_filter *f, const char *after_ts,
                          const char *after_id, const char *limit, int *err);
PGresult *db_audit_commands(struct db *db, const struct db_audit_cmd_filter *f,
                            const char *after_ts, const char *after_id, const char *limit,
                            int *err);

/*
 * Export: events after the (after_ts, after_id) keyset cursor (NULL: from
 * the start) written at or before until, in (ts, id) order - the chain's
 * order. Rows: json, _seq, _prev (NULL while unsealed), _ts, _id.
 */
PGresult *db_audit_export(struct db *db, const struct db_audit_filter *f, const char *after_ts,
                          const char *after_id, const char *until, const char *limit, int *err);

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
/* Sealer: events after the head and before frontier, oldest first. Rows: id, ts, json, age (s). */
PGresult *db_audit_unsealed(struct db *db, const struct db_audit_head *h, const char *frontier,
                            const char *limit, int *err);
/* Append to the chain; *moved = false when the head moved meanwhile (another sealer). */
int db_audit_seal(struct db *db, const char *old_seq, const char *ids_array,
                  const char *ts_array, const char *hash_array, bool *moved);
int db_audit_partitions(struct db *db);
/* The database's clock (timestamptz text) into out. */
int db_audit_now(struct db *db, char *out, size_t n);
/* Drop whole months older than days; *dropped partitions. */
int db_audit_retention(struct db *db, const char *days, int *dropped);
int db_audit_checkpoint_insert(struct db *db, const char *ts, const char *seq,
                               const char *head_hex, const char *alg, const char *key_id,
                               const char *sig_hex);
/* The newest checkpoint. Rows: seq, _age_s (seconds since). */
PGresult *db_audit_checkpoint_last(struct db *db, int *err);

/* Verification: chain entries with after_seq < seq <= upto_seq. Rows: seq, hash, prev_hash, event_id, json. */
PGresult *db_audit_chain_batch(struct db *db, const char *after_seq, const char *upto_seq,
                               const char *limit, int *err);
/* Checkpoints with from_seq <= seq <= to_seq by seq. Rows: id, ts, seq, head_hash, alg, key_id, signature. */
PGresult *db_audit_checkpoints_between(struct db *db, const char *from_seq, const char *to_seq,
                                       int *err);
/*
 * The end of the chain (its last position, or the last one retention recorded) and the
 * checkpoint past that end reaching furthest (NULL: none). Row: id, ts, seq, head_hash,
 * alg, key_id, signature (as above), last.
 */
PGresult *db_audit_chain_end(struct db *db, int *err);
/* Newest first, keyset on id. Rows as above. */
PGresult *db_audit_checkpoints_page(struct db *db, const char *before_id, const char *limit,
                                    int *err);
/* The chain positions of events written in [from, to) (NULL: open). Row: min, max. */
PGresult *db_audit_seq_range(struct db *db, const char *from, const char *to, int *err);
/* Runs of chain positions that retention removed. Rows: first_seq, last_seq, last_hash. */
PGresult *db_audit_retention_runs(struct db *db, int *err);
/* Row: n - events after the sealed frontier. */
PGresult *db_audit_unsealed_count(struct db *db, int *err);

/* Who stores node records (the agent's credential and address). */
struct db_audit_who {
    const char *user_id, *username, *token_id, *roles, *source_ip, *user_agent, *request_id;
};

/* Store node records (a JSON array, validated); *accepted new rows. */
int db_audit_ingest(struct db *db, const char *records_json, const struct db_audit_who *who,
                    long long *accepted);

extern const struct db_stmt *const db_audit_stmts[];

#endif
