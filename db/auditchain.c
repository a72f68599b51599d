/* auditchain.c (db) - reading the audit chain and its checkpoints (see auditchain.h). */
#include "auditchain.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "auditsql.h"
#include "pgcol.h"

#include <stdio.h>
#include <stdlib.h>

static const struct db_stmt st_chain_batch = {
    "audit_chain_batch",
    "SELECT c.seq, encode(c.hash, 'hex') AS hash, encode(c.prev_hash, 'hex') AS prev_hash,"
    " c.event_id, CASE WHEN e.id IS NOT NULL THEN " EVENT_JSON " END AS json"
    " FROM audit_chain c LEFT JOIN audit_events e ON e.ts = c.event_ts AND e.id = c.event_id"
    " WHERE c.seq > $1::bigint AND c.seq <= $2::bigint ORDER BY c.seq LIMIT $3",
    3};
enum entry_col { EN_SEQ, EN_HASH, EN_PREV_HASH, EN_EVENT_ID, EN_JSON };

static const struct db_stmt st_cp_between = {
    "audit_checkpoints_between",
    "SELECT " CHECKPOINT_COLS " FROM audit_checkpoints WHERE seq BETWEEN $1::bigint AND $2::bigint"
    " ORDER BY seq, id",
    2};

/*
 * The end of the whole chain - its last position, or the last one that
 * retention recorded when it dropped everything - and the checkpoint
 * reaching furthest past that end (NULL columns: none, as it should be).
 * Its first columns are CHECKPOINT_COLS'.
 */
static const struct db_stmt st_chain_end = {
    "audit_chain_end",
    "SELECT k.id, k.ts, k.seq, k.head_hash, k.alg, k.key_id, k.signature, x.last"
    " FROM (SELECT greatest((SELECT max(seq) FROM audit_chain),"
    "   (SELECT max((r ->> 'last_seq')::bigint) FROM audit_events e,"
    "     jsonb_array_elements(e.details -> 'runs') r WHERE e.action = 'audit.retention'),"
    "   0) AS last) x"
    " LEFT JOIN LATERAL (SELECT " CHECKPOINT_COLS " FROM audit_checkpoints"
    "   WHERE seq > x.last ORDER BY seq DESC, id DESC LIMIT 1) k ON true",
    0};
enum { END_LAST = CP_SIGNATURE + 1 };

/* As the API shows a checkpoint (rowjson: the columns' names and types), keyed by id. */
static const struct db_stmt st_cp_page = {
    "audit_checkpoints_page",
    "SELECT " CHECKPOINT_COLS ", id::text AS _cursor FROM audit_checkpoints"
    " WHERE ($1::bigint IS NULL OR id < $1) ORDER BY id DESC LIMIT $2",
    2};

static const struct db_stmt st_seq_range = {"audit_seq_range",
                                            "SELECT min(seq), max(seq) FROM audit_chain"
                                            " WHERE ($1::timestamptz IS NULL OR event_ts >= $1) "
                                            "AND ($2::timestamptz IS NULL OR event_ts < $2)",
                                            2};
enum range_col { RG_MIN, RG_MAX };

static const struct db_stmt st_retention_runs = {
    "audit_retention_runs",
    "SELECT (r ->> 'first_seq')::bigint, (r ->> 'last_seq')::bigint, r ->> 'last_hash'"
    " FROM audit_events e, jsonb_array_elements(e.details -> 'runs') r"
    " WHERE e.action = 'audit.retention' ORDER BY 1",
    0};
enum run_col { RUN_FIRST, RUN_LAST, RUN_HASH };

static const struct db_stmt st_unsealed_count = {
    "audit_unsealed_count",
    "SELECT (SELECT count(*) FROM audit_events e, aidc_audit_head() h"
    " WHERE e.ts >= h.upto_ts AND (e.ts, e.id) > (h.upto_ts, h.upto_id))"
    " + (SELECT count(*) FROM audit_inbox)",
    0};

const struct db_stmt *const db_auditchain_stmts[] = {
    &st_chain_batch, &st_cp_between,     &st_chain_end,      &st_cp_page,
    &st_seq_range,   &st_retention_runs, &st_unsealed_count, NULL};

void db_audit_checkpoints_free(struct db_audit_checkpoints *l)
{
    PQclear(l->owner);
    free(l->v);
    l->v = NULL;
    l->n = 0;
    l->owner = NULL;
}

/* Row i of r (CHECKPOINT_COLS first) into *c; false when a number is none. */
static bool checkpoint_row(const PGresult *r, int i, struct db_audit_checkpoint *c)
{
    c->ts = PQgetvalue(r, i, CP_TS);
    c->head_hash = PQgetvalue(r, i, CP_HEAD_HASH);
    c->alg = PQgetvalue(r, i, CP_ALG);
    c->key_id = PQgetvalue(r, i, CP_KEY_ID);
    c->signature = PQgetvalue(r, i, CP_SIGNATURE);
    return pgcol_ll(r, i, CP_ID, 0, &c->id) == 0 && pgcol_ll(r, i, CP_SEQ, 0, &c->seq) == 0;
}

/* The first n rows of r as checkpoints; r is the list's (or cleared). */
static int checkpoints_from(PGresult *r, int n, struct db_audit_checkpoints *out)
{
    struct db_audit_checkpoints l = {.v = xcalloc((size_t)n + 1, sizeof *l.v), .owner = r};
    for (int i = 0; i < n; i++, l.n++)
        if (!checkpoint_row(r, i, &l.v[i])) {
            db_audit_checkpoints_free(&l);
            return AIDC_EINTERNAL;
        }
    *out = l;
    return 0;
}

int db_audit_checkpoints_between(struct db *db, long long from_seq, long long to_seq,
                                 struct db_audit_checkpoints *out)
{
    char a[24], b[24];
    snprintf(a, sizeof a, "%lld", from_seq);
    snprintf(b, sizeof b, "%lld", to_seq);
    const char *p[2] = {a, b};
    int e = 0;
    PGresult *r = db_query(db, &st_cp_between, p, &e);
    return r ? checkpoints_from(r, PQntuples(r), out) : e;
}

int db_audit_checkpoints_page(struct db *db, const char *before_id, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[2] = {before_id, lim};
    return rowjson_query_rows(db, &st_cp_page, p, false, out);
}

int db_audit_chain_end(struct db *db, long long *last, struct db_audit_checkpoints *beyond)
{
    int e = 0;
    PGresult *r = db_query(db, &st_chain_end, NULL, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1 || pgcol_ll(r, 0, END_LAST, 0, last) != 0) {
        PQclear(r);
        return AIDC_EINTERNAL;
    }
    return checkpoints_from(r, PQgetisnull(r, 0, CP_ID) ? 0 : 1, beyond);
}

void db_audit_entries_free(struct db_audit_entries *l)
{
    PQclear(l->owner);
    free(l->v);
    l->v = NULL;
    l->n = 0;
    l->owner = NULL;
}

int db_audit_chain_batch(struct db *db, long long after_seq, long long upto_seq, int limit,
                         struct db_audit_entries *out)
{
    char a[24], b[24], lim[16];
    snprintf(a, sizeof a, "%lld", after_seq);
    snprintf(b, sizeof b, "%lld", upto_seq);
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[3] = {a, b, lim};
    int e = 0;
    PGresult *r = db_query(db, &st_chain_batch, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    struct db_audit_entries l = {.v = xcalloc((size_t)n + 1, sizeof *l.v), .owner = r};
    for (int i = 0; i < n; i++, l.n++) {
        struct db_audit_entry *en = &l.v[i];
        en->hash = PQgetvalue(r, i, EN_HASH);
        en->prev_hash = PQgetvalue(r, i, EN_PREV_HASH);
        en->json = PQgetisnull(r, i, EN_JSON) ? NULL : PQgetvalue(r, i, EN_JSON);
        if (pgcol_ll(r, i, EN_SEQ, 0, &en->seq) != 0 ||
            pgcol_ll(r, i, EN_EVENT_ID, 0, &en->event_id) != 0) {
            db_audit_entries_free(&l);
            return AIDC_EINTERNAL;
        }
    }
    *out = l;
    return 0;
}

int db_audit_seq_range(struct db *db, const char *from, const char *to,
                       struct db_audit_seq_range *out)
{
    const char *p[2] = {from, to};
    int e = 0;
    PGresult *r = db_query(db, &st_seq_range, p, &e);
    if (!r)
        return e;
    /* an aggregate: one row, NULL when no entry is in the range */
    out->any = PQntuples(r) == 1 && !PQgetisnull(r, 0, RG_MIN);
    out->first = out->last = 0;
    if (out->any &&
        (pgcol_ll(r, 0, RG_MIN, 0, &out->first) != 0 || pgcol_ll(r, 0, RG_MAX, 0, &out->last) != 0))
        e = AIDC_EINTERNAL;
    PQclear(r);
    return e;
}

void db_audit_runs_free(struct db_audit_runs *l)
{
    PQclear(l->owner);
    free(l->v);
    l->v = NULL;
    l->n = 0;
    l->owner = NULL;
}

int db_audit_retention_runs(struct db *db, struct db_audit_runs *out)
{
    int e = 0;
    PGresult *r = db_query(db, &st_retention_runs, NULL, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    struct db_audit_runs l = {.v = xcalloc((size_t)n + 1, sizeof *l.v), .owner = r};
    for (int i = 0; i < n; i++, l.n++) {
        struct db_audit_run *run = &l.v[i];
        run->last_hash = PQgetvalue(r, i, RUN_HASH);
        if (pgcol_ll(r, i, RUN_FIRST, 0, &run->first_seq) != 0 ||
            pgcol_ll(r, i, RUN_LAST, 0, &run->last_seq) != 0) {
            db_audit_runs_free(&l);
            return AIDC_EINTERNAL;
        }
    }
    *out = l;
    return 0;
}

int db_audit_unsealed_count(struct db *db, long long *n)
{
    int e = 0;
    PGresult *r = db_query(db, &st_unsealed_count, NULL, &e);
    if (!r)
        return e;
    *n = 0;
    if (PQntuples(r) == 1 && pgcol_ll(r, 0, 0, 0, n) != 0)
        e = AIDC_EINTERNAL;
    PQclear(r);
    return e;
}
