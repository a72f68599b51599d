/* auditseal.c (db) - the sealer's statements (see auditseal.h). */
#include "auditseal.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "auditsql.h"
#include "pgcol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Events after the sealed frontier that no open transaction can precede:
 * written before the grace period and before the oldest transaction still
 * open in another session of this database (an event's ts is the clock at
 * its INSERT, never before its transaction began). Sessions of other roles
 * show no transaction start; only the application role writes events.
 */
static const struct db_stmt st_frontier = {
    "audit_frontier",
    "SELECT least(clock_timestamp() - make_interval(secs => $1::int / 1000.0), min(a.xact_start))"
    " FROM pg_stat_activity a"
    " WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()"
    " AND a.backend_type = 'client backend' AND a.xact_start IS NOT NULL",
    1};

static const struct db_stmt st_inbox_move = {"audit_inbox_move", "SELECT aidc_audit_inbox_move()",
                                             0};

static const struct db_stmt st_unsealed = {
    "audit_unsealed",
    "SELECT e.id, e.ts, " EVENT_JSON " AS json"
    " FROM audit_events e LEFT JOIN audit_chain c ON false"
    " WHERE e.ts >= $1::timestamptz AND (e.ts, e.id) > ($1::timestamptz, $2::bigint)"
    " AND e.ts < $3::timestamptz ORDER BY e.ts, e.id LIMIT $4",
    4};
enum unsealed_col { UN_ID, UN_TS, UN_JSON };

static const struct db_stmt st_seal = {
    "audit_seal",
    "SELECT aidc_audit_seal($1::bigint, $2::bigint[], $3::timestamptz[], $4::bytea[])", 4};

static const struct db_stmt st_head = {
    "audit_head", "SELECT seq, encode(hash, 'hex'), upto_ts, upto_id FROM aidc_audit_head()", 0};
enum head_col { HD_SEQ, HD_HASH, HD_UPTO_TS, HD_UPTO_ID };

static const struct db_stmt st_partitions = {"audit_partitions",
                                             "SELECT aidc_audit_partitions(now(), 3)", 0};

static const struct db_stmt st_retention = {"audit_retention",
                                            "SELECT aidc_audit_retention($1::int)", 1};

static const struct db_stmt st_cp_insert = {
    "audit_checkpoint_insert",
    "INSERT INTO audit_checkpoints (ts, seq, head_hash, alg, key_id, signature)"
    " VALUES ($1::timestamptz, $2::bigint, decode($3, 'hex'), $4, $5, decode($6, 'hex'))",
    6};

static const struct db_stmt st_cp_last = {
    "audit_checkpoint_last",
    "SELECT seq, extract(epoch FROM clock_timestamp() - ts)::bigint AS age_s"
    " FROM audit_checkpoints ORDER BY id DESC LIMIT 1",
    0};
enum cp_last_col { CL_SEQ, CL_AGE_S };

const struct db_stmt *const db_auditseal_stmts[] = {
    &st_frontier,   &st_inbox_move, &st_unsealed,  &st_seal,    &st_head,
    &st_partitions, &st_retention,  &st_cp_insert, &st_cp_last, NULL};

int db_audit_frontier(struct db *db, const char *grace_ms, char *out, size_t n)
{
    const char *p[1] = {grace_ms};
    int e = 0;
    PGresult *r = db_query(db, &st_frontier, p, &e);
    if (!r)
        return e;
    snprintf(out, n, "%s", PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "-infinity");
    PQclear(r);
    return 0;
}

int db_audit_inbox_move(struct db *db, long long *moved)
{
    int e = 0;
    PGresult *r = db_query(db, &st_inbox_move, NULL, &e);
    if (!r)
        return e;
    *moved = 0;
    if (PQntuples(r) == 1 && pgcol_ll(r, 0, 0, 0, moved) != 0)
        e = AIDC_EINTERNAL;
    PQclear(r);
    return e;
}

void db_audit_unsealed_free(struct db_audit_unsealed_rows *rows)
{
    PQclear(rows->owner);
    free(rows->v);
    rows->v = NULL;
    rows->n = 0;
    rows->owner = NULL;
}

int db_audit_unsealed(struct db *db, const struct db_audit_head *h, const char *frontier, int limit,
                      struct db_audit_unsealed_rows *out)
{
    char id[24], lim[16];
    snprintf(id, sizeof id, "%lld", h->upto_id);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[4] = {h->upto_ts, id, frontier, lim};
    int e = 0;
    PGresult *r = db_query(db, &st_unsealed, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    struct db_audit_unsealed_rows rows = {.v = xcalloc((size_t)n + 1, sizeof *rows.v), .owner = r};
    for (int i = 0; i < n; i++, rows.n++) {
        struct db_audit_unsealed_row *row = &rows.v[i];
        row->ts = PQgetvalue(r, i, UN_TS);
        row->json = PQgetvalue(r, i, UN_JSON);
        if (pgcol_ll(r, i, UN_ID, 0, &row->id) != 0) {
            db_audit_unsealed_free(&rows);
            return AIDC_EINTERNAL;
        }
    }
    *out = rows;
    return 0;
}

int db_audit_seal(struct db *db, const char *old_seq, const char *ids_array, const char *ts_array,
                  const char *hash_array, bool *moved)
{
    const char *p[4] = {old_seq, ids_array, ts_array, hash_array};
    int e = 0;
    PGresult *r = db_query(db, &st_seal, p, &e);
    if (!r)
        return e;
    *moved = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0);
    PQclear(r);
    return 0;
}

int db_audit_head(struct db *db, struct db_audit_head *h)
{
    int e = 0;
    PGresult *r = db_query(db, &st_head, NULL, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1 || pgcol_ll(r, 0, HD_SEQ, 0, &h->seq) != 0 ||
        pgcol_ll(r, 0, HD_UPTO_ID, 0, &h->upto_id) != 0) {
        PQclear(r);
        return AIDC_EINTERNAL;
    }
    snprintf(h->hash, sizeof h->hash, "%s", PQgetvalue(r, 0, HD_HASH));
    snprintf(h->upto_ts, sizeof h->upto_ts, "%s", PQgetvalue(r, 0, HD_UPTO_TS));
    PQclear(r);
    return 0;
}

int db_audit_partitions(struct db *db)
{
    return db_exec(db, &st_partitions, NULL);
}

int db_audit_retention(struct db *db, const char *days, int *dropped)
{
    const char *p[1] = {days};
    int e = 0;
    PGresult *r = db_query(db, &st_retention, p, &e);
    if (!r)
        return e;
    long long n = 0;
    if (PQntuples(r) == 1 && pgcol_ll(r, 0, 0, 0, &n) != 0)
        e = AIDC_EINTERNAL;
    *dropped = (int)n;
    PQclear(r);
    return e;
}

int db_audit_checkpoint_insert(struct db *db, const char *ts, const char *seq, const char *head_hex,
                               const char *alg, const char *key_id, const char *sig_hex)
{
    const char *p[6] = {ts, seq, head_hex, alg, key_id, sig_hex};
    return db_exec(db, &st_cp_insert, p);
}

int db_audit_checkpoint_last(struct db *db, struct db_audit_last_checkpoint *out)
{
    int e = 0;
    PGresult *r = db_query(db, &st_cp_last, NULL, &e);
    if (!r)
        return e;
    out->found = PQntuples(r) > 0;
    out->seq = out->age_s = 0;
    if (out->found && (pgcol_ll(r, 0, CL_SEQ, 0, &out->seq) != 0 ||
                       pgcol_ll(r, 0, CL_AGE_S, 0, &out->age_s) != 0))
        e = AIDC_EINTERNAL;
    PQclear(r);
    return e;
}
