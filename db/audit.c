/* audit.c (db) - reading and exporting the audit log (see audit.h). */
#include "audit.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "auditsql.h"
#include "pgcol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* $1..$11: struct db_audit_filter, in its order. */
#define FILTERS                                                                               \
    " ($1::text IS NULL OR e.actor_username = $1)"                                            \
    " AND ($2::text IS NULL OR e.tenant_slug = $2)"                                           \
    " AND ($3::text IS NULL OR e.action = $3)"                                                \
    " AND ($4::text IS NULL OR e.action LIKE $4)"                                             \
    " AND ($5::text IS NULL OR e.outcome = $5)"                                               \
    " AND ($6::inet IS NULL OR e.source_ip <<= $6)"                                           \
    " AND ($7::timestamptz IS NULL OR e.ts >= $7)"                                            \
    " AND ($8::timestamptz IS NULL OR e.ts < $8)"                                             \
    " AND ($9::text IS NULL OR aidc_audit_tsv(e.action, e.resource_type, e.resource_id,"      \
    "      e.details) @@ aidc_audit_query($9))"                                               \
    " AND ($10::text IS NULL OR e.resource_type = $10)"                                       \
    " AND ($11::text IS NULL OR e.resource_id = $11)"

/* The inbox's events (unsealed: no chain entry) that FILTERS keep. */
#define INBOX_MATCHES " FROM audit_inbox e LEFT JOIN audit_chain c ON false WHERE " FILTERS

/*
 * A search: one page of (ts, id) from aidc_audit_search() (see 0004_audit.sql:
 * it plans for the actual filters, ordered by the index of the most selective
 * equality filter given), then the events, with the matches still in the
 * inbox (a second or so of events, read whole). The function is STABLE, so
 * both read one snapshot: a moved event is in exactly one of them. $15 names
 * the lead.
 */
static const struct db_stmt st_search = {
    "audit_search",
    "SELECT x.json, x._cursor FROM ("
    " SELECT " EVENT_JSON " AS json, e.ts::text || '|' || e.id AS _cursor, e.ts, e.id"
    " FROM aidc_audit_search($1, $2, $3, $4, $5, $6::inet, $7::timestamptz, $8::timestamptz, $9,"
    "  $10, $11, $12::timestamptz, $13::bigint, $14::int, $15) s"
    " JOIN audit_events e ON e.ts = s.ts AND e.id = s.id " CHAIN_JOIN
    " UNION ALL SELECT " EVENT_JSON ", e.ts::text || '|' || e.id, e.ts, e.id" INBOX_MATCHES
    " AND ($12::timestamptz IS NULL OR (e.ts, e.id) < ($12::timestamptz, $13::bigint))) x"
    " ORDER BY x.ts DESC, x.id DESC LIMIT $14::int",
    15};

/* A node record as GET /audit/commands shows it. */
#define COMMAND_JSON                                                                          \
    "jsonb_build_object('id', e.id, 'ts', " RFC3339("e.ts") ", 'kind', substr(e.action, 6),"  \
    " 'host', e.resource_id, 'tenant', e.tenant_slug, 'source_ip', host(e.source_ip),"        \
    " 'record_id', e.record_id, 'ingested_by', e.actor_username, 'seq', c.seq,"               \
    " 'hash', encode(c.hash, 'hex')) || e.details"

/* node.* events come only from the agents' ingest, which writes audit_events itself
 * (not the inbox): this reads the one table. */
#define COMMANDS(name, lead)                                                                  \
    {name,                                                                                    \
     "SELECT " COMMAND_JSON " AS json, e.ts::text || '|' || e.id AS _cursor"                 \
     " FROM audit_events e " CHAIN_JOIN " WHERE e.action LIKE 'node.%'"                       \
     " AND ($1::text IS NULL OR e.resource_id = $1)"                                          \
     " AND ($2::text IS NULL OR e.details ->> 'user' = $2)"                                   \
     " AND ($3::text IS NULL OR e.tenant_slug = $3)"                                          \
     " AND ($4::text IS NULL OR aidc_audit_tsv(e.action, e.resource_type, e.resource_id,"     \
     "      e.details) @@ aidc_audit_query($4))"                                              \
     " AND ($5::timestamptz IS NULL OR e.ts >= $5)"                                           \
     " AND ($6::timestamptz IS NULL OR e.ts < $6)"                                            \
     " AND ($7::text IS NULL OR e.details ->> 'job_id' = $7)"                                 \
     " AND ($8::text IS NULL OR e.action = 'node.' || $8)"                                    \
     " AND ($9::timestamptz IS NULL OR (e.ts, e.id) < ($9, $10::bigint))"                     \
     " ORDER BY " lead "e.ts DESC, e.id DESC LIMIT $11",                                      \
     11}

/* As the searches: led by the host's or the node user's index when one is given. */
static const struct db_stmt st_commands[3] = {
    COMMANDS("audit_commands", ""),
    COMMANDS("audit_commands_host", "e.resource_id DESC, "),
    COMMANDS("audit_commands_user", "(e.details ->> 'user') DESC, "),
};

/* Both tables in one statement (one snapshot): a moved event is in one of them. */
static const struct db_stmt st_export = {
    "audit_export",
    "(SELECT " EVENT_JSON " AS json, c.seq AS _seq, encode(c.prev_hash, 'hex') AS _prev,"
    " e.ts::text AS _ts, e.id AS _id, e.ts AS _order FROM audit_events e"
    /* bounded on both sides, or a merge join would read the chain from its start per batch */
    " LEFT JOIN audit_chain c ON c.event_ts = e.ts AND c.event_id = e.id"
    "  AND ($12::timestamptz IS NULL OR c.event_ts >= $12) AND c.event_ts <= $14::timestamptz"
    " WHERE " FILTERS
    " AND ($12::timestamptz IS NULL OR (e.ts >= $12 AND (e.ts, e.id) > ($12, $13::bigint)))"
    " AND e.ts <= $14::timestamptz"
    " ORDER BY e.ts, e.id LIMIT $15)"
    " UNION ALL (SELECT " EVENT_JSON ", NULL, NULL, e.ts::text, e.id, e.ts" INBOX_MATCHES
    " AND ($12::timestamptz IS NULL OR (e.ts, e.id) > ($12, $13::bigint))"
    " AND e.ts <= $14::timestamptz)"
    " ORDER BY _order, _id LIMIT $15",
    15};
enum export_col { EX_JSON, EX_SEQ, EX_PREV, EX_TS, EX_ID };

static const struct db_stmt st_now = {"audit_now", "SELECT clock_timestamp()", 0};

static const struct db_stmt st_ingest = {
    "audit_ingest",
    "SELECT aidc_audit_ingest($1::jsonb, $2::uuid, $3, $4::uuid,"
    " coalesce(string_to_array(nullif($5, ''), ','), '{}'), $6::inet, $7, $8)",
    8};

const struct db_stmt *const db_audit_stmts[] = {
    &st_search, &st_commands[0], &st_commands[1], &st_commands[2],
    &st_export, &st_ingest,      &st_now,         NULL};

static void filter_params(const struct db_audit_filter *f, const char **p)
{
    p[0] = f->actor;
    p[1] = f->tenant;
    p[2] = f->action;
    p[3] = f->action_prefix;
    p[4] = f->outcome;
    p[5] = f->source_ip;
    p[6] = f->from;
    p[7] = f->to;
    p[8] = f->q;
    p[9] = f->resource_type;
    p[10] = f->resource_id;
}

int db_audit_search(struct db *db, const struct db_audit_filter *f, const char *after_ts,
                    const char *after_id, int limit, struct db_rows *out)
{
    const char *p[15];
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    filter_params(f, p);
    p[11] = after_ts;
    p[12] = after_id;
    p[13] = lim;
    /* an address leads only when it is one (a network spans many, in another order) */
    bool one_address = f->source_ip && !strchr(f->source_ip, '/');
    p[14] = f->resource_id ? "resource"
            : f->actor     ? "actor"
            : one_address  ? "address"
            : f->tenant    ? "tenant"
            : f->action    ? "action"
            : f->q         ? "words"
                           : "time";
    return rowjson_query_rows(db, &st_search, p, true, out);
}

int db_audit_commands(struct db *db, const struct db_audit_cmd_filter *f, const char *after_ts,
                      const char *after_id, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[11] = {f->host,   f->user, f->tenant, f->q,     f->from, f->to,
                         f->job_id, f->kind, after_ts,  after_id, lim};
    return rowjson_query_rows(db, &st_commands[f->host ? 1 : f->user ? 2 : 0], p, true, out);
}

void db_audit_export_free(struct db_audit_export_batch *b)
{
    PQclear(b->owner);
    free(b->v);
    b->v = NULL;
    b->n = 0;
    b->owner = NULL;
}

int db_audit_export(struct db *db, const struct db_audit_filter *f, const char *after_ts,
                    long long after_id, const char *until, int limit,
                    struct db_audit_export_batch *out)
{
    const char *p[15];
    char id[24], lim[16];
    snprintf(id, sizeof id, "%lld", after_id);
    snprintf(lim, sizeof lim, "%d", limit);
    filter_params(f, p);
    p[11] = after_ts;
    p[12] = after_ts ? id : NULL;
    p[13] = until;
    p[14] = lim;
    int e = 0;
    PGresult *r = db_query(db, &st_export, p, &e);
    if (!r)
        return e;
    int n = PQntuples(r);
    struct db_audit_export_batch b = {.v = xcalloc((size_t)n + 1, sizeof *b.v), .owner = r};
    for (int i = 0; i < n; i++, b.n++) {
        struct db_audit_export_row *row = &b.v[i];
        row->json = PQgetvalue(r, i, EX_JSON);
        row->sealed = !PQgetisnull(r, i, EX_SEQ);
        row->prev_hash = PQgetvalue(r, i, EX_PREV);
        row->ts = PQgetvalue(r, i, EX_TS);
        if (pgcol_ll(r, i, EX_SEQ, 0, &row->seq) != 0 || pgcol_ll(r, i, EX_ID, 0, &row->id) != 0) {
            db_audit_export_free(&b);
            return AIDC_EINTERNAL;
        }
    }
    *out = b;
    return 0;
}

int db_audit_now(struct db *db, char *out, size_t n)
{
    int e = 0;
    PGresult *r = db_query(db, &st_now, NULL, &e);
    if (!r)
        return e;
    snprintf(out, n, "%s", PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "infinity");
    PQclear(r);
    return 0;
}

int db_audit_ingest(struct db *db, const char *records_json, const struct db_audit_who *who,
                    long long *accepted)
{
    const char *p[8] = {records_json, who->user_id,   who->username,   who->token_id,
                        who->roles,   who->source_ip, who->user_agent, who->request_id};
    int e = 0;
    PGresult *r = db_query(db, &st_ingest, p, &e);
    if (!r)
        return e;
    *accepted = 0;
    if (PQntuples(r) == 1 && pgcol_ll(r, 0, 0, 0, accepted) != 0)
        e = AIDC_EINTERNAL;
    PQclear(r);
    return e;
}
