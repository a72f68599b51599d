/* audit.c (db) - reading, sealing, checking and exporting the audit log (see audit.h). */
#include "audit.h"

#include "../server/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RFC3339(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/*
 * An event as the API shows it and the chain hashes it: every stored column
 * is in it, so no column can change unnoticed. e is the event, c its chain
 * entry (NULL columns while unsealed).
 */
#define EVENT_JSON                                                                            \
    "json_build_object('id', e.id, 'seq', c.seq, 'hash', encode(c.hash, 'hex'),"              \
    " 'ts', " RFC3339("e.ts") ","                                                             \
    " 'actor', json_build_object('user', e.actor_username, 'user_id', e.actor_user_id,"       \
    "   'token_id', e.actor_token_id, 'roles', e.actor_roles),"                               \
    " 'tenant', e.tenant_slug, 'tenant_id', e.tenant_id, 'source_ip', host(e.source_ip),"     \
    " 'user_agent', e.user_agent, 'request_id', e.request_id, 'action', e.action,"            \
    " 'resource', json_build_object('type', e.resource_type, 'id', e.resource_id),"           \
    " 'outcome', e.outcome, 'status', e.status, 'details', e.details,"                        \
    " 'record_id', e.record_id)"

#define CHAIN_JOIN "LEFT JOIN audit_chain c ON c.event_ts = e.ts AND c.event_id = e.id"

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
    "      e.details) @@ websearch_to_tsquery('simple', $9))"                                 \
    " AND ($10::text IS NULL OR e.resource_type = $10)"                                       \
    " AND ($11::text IS NULL OR e.resource_id = $11)"

/*
 * A search: one page of (ts, id) from aidc_audit_search() (see 0004_audit.sql:
 * it plans for the actual filters, ordered by the index of the most selective
 * equality filter given), then the events. $15 names that lead.
 */
static const struct db_stmt st_search = {
    "audit_search",
    "SELECT " EVENT_JSON " AS json, e.ts::text || '|' || e.id AS _cursor"
    " FROM aidc_audit_search($1, $2, $3, $4, $5, $6::inet, $7::timestamptz, $8::timestamptz, $9,"
    "  $10, $11, $12::timestamptz, $13::bigint, $14::int, $15) s"
    " JOIN audit_events e ON e.ts = s.ts AND e.id = s.id " CHAIN_JOIN " ORDER BY s.ord",
    15};

/* A node record as GET /audit/commands shows it. */
#define COMMAND_JSON                                                                          \
    "jsonb_build_object('id', e.id, 'ts', " RFC3339("e.ts") ", 'kind', substr(e.action, 6),"  \
    " 'host', e.resource_id, 'tenant', e.tenant_slug, 'source_ip', host(e.source_ip),"        \
    " 'record_id', e.record_id, 'ingested_by', e.actor_username, 'seq', c.seq,"               \
    " 'hash', encode(c.hash, 'hex')) || e.details"

#define COMMANDS(name, lead)                                                                  \
    {name,                                                                                    \
     "SELECT " COMMAND_JSON " AS json, e.ts::text || '|' || e.id AS _cursor"                 \
     " FROM audit_events e " CHAIN_JOIN " WHERE e.action LIKE 'node.%'"                       \
     " AND ($1::text IS NULL OR e.resource_id = $1)"                                          \
     " AND ($2::text IS NULL OR e.details ->> 'user' = $2)"                                   \
     " AND ($3::text IS NULL OR e.tenant_slug = $3)"                                          \
     " AND ($4::text IS NULL OR aidc_audit_tsv(e.action, e.resource_type, e.resource_id,"     \
     "      e.details) @@ websearch_to_tsquery('simple', $4))"                                \
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

static const struct db_stmt st_export = {
    "audit_export",
    "SELECT " EVENT_JSON " AS json, c.seq AS _seq, encode(c.prev_hash, 'hex') AS _prev,"
    " e.ts::text AS _ts, e.id AS _id FROM audit_events e"
    /* bounded on both sides, or a merge join would read the chain from its start per batch */
    " LEFT JOIN audit_chain c ON c.event_ts = e.ts AND c.event_id = e.id"
    "  AND ($12::timestamptz IS NULL OR c.event_ts >= $12) AND c.event_ts <= $14::timestamptz"
    " WHERE " FILTERS
    " AND ($12::timestamptz IS NULL OR (e.ts >= $12 AND (e.ts, e.id) > ($12, $13::bigint)))"
    " AND e.ts <= $14::timestamptz"
    " ORDER BY e.ts, e.id LIMIT $15",
    15};

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

static const struct db_stmt st_unsealed = {
    "audit_unsealed",
    "SELECT e.id, e.ts, " EVENT_JSON " AS json,"
    " extract(epoch FROM clock_timestamp() - e.ts) AS age"
    " FROM audit_events e LEFT JOIN audit_chain c ON false"
    " WHERE e.ts >= $1::timestamptz AND (e.ts, e.id) > ($1::timestamptz, $2::bigint)"
    " AND e.ts < $3::timestamptz ORDER BY e.ts, e.id LIMIT $4",
    4};

static const struct db_stmt st_seal = {
    "audit_seal",
    "SELECT aidc_audit_seal($1::bigint, $2::bigint[], $3::timestamptz[], $4::bytea[])", 4};

static const struct db_stmt st_now = {"audit_now", "SELECT clock_timestamp()", 0};

static const struct db_stmt st_head = {
    "audit_head", "SELECT seq, encode(hash, 'hex'), upto_ts, upto_id FROM aidc_audit_head()", 0};

static const struct db_stmt st_partitions = {
    "audit_partitions", "SELECT aidc_audit_partitions(now(), 3)", 0};

static const struct db_stmt st_retention = {
    "audit_retention", "SELECT aidc_audit_retention($1::int)", 1};

static const struct db_stmt st_cp_insert = {
    "audit_checkpoint_insert",
    "INSERT INTO audit_checkpoints (ts, seq, head_hash, alg, key_id, signature)"
    " VALUES ($1::timestamptz, $2::bigint, decode($3, 'hex'), $4, $5, decode($6, 'hex'))",
    6};

static const struct db_stmt st_cp_last = {
    "audit_checkpoint_last",
    "SELECT seq, extract(epoch FROM clock_timestamp() - ts)::bigint AS _age_s"
    " FROM audit_checkpoints ORDER BY id DESC LIMIT 1",
    0};

static const struct db_stmt st_chain_batch = {
    "audit_chain_batch",
    "SELECT c.seq, encode(c.hash, 'hex') AS hash, encode(c.prev_hash, 'hex') AS prev_hash,"
    " c.event_id, CASE WHEN e.id IS NOT NULL THEN " EVENT_JSON " END AS json"
    " FROM audit_chain c LEFT JOIN audit_events e ON e.ts = c.event_ts AND e.id = c.event_id"
    " WHERE c.seq > $1::bigint AND c.seq <= $2::bigint ORDER BY c.seq LIMIT $3",
    3};

#define CHECKPOINT_COLS                                                                       \
    "id, " RFC3339("ts") " AS ts, seq, encode(head_hash, 'hex') AS head_hash, alg, key_id,"   \
    " encode(signature, 'hex') AS signature"

static const struct db_stmt st_cp_between = {
    "audit_checkpoints_between",
    "SELECT " CHECKPOINT_COLS " FROM audit_checkpoints WHERE seq BETWEEN $1::bigint AND $2::bigint"
    " ORDER BY seq, id",
    2};

/*
 * The end of the whole chain - its last position, or the last one that
 * retention recorded when it dropped everything - and the checkpoint
 * reaching furthest past that end (NULL columns: none, as it should be).
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

static const struct db_stmt st_cp_page = {
    "audit_checkpoints_page",
    "SELECT " CHECKPOINT_COLS " FROM audit_checkpoints"
    " WHERE ($1::bigint IS NULL OR id < $1) ORDER BY id DESC LIMIT $2",
    2};

static const struct db_stmt st_seq_range = {
    "audit_seq_range",
    "SELECT min(seq), max(seq) FROM audit_chain"
    " WHERE ($1::timestamptz IS NULL OR event_ts >= $1) AND ($2::timestamptz IS NULL OR event_ts < $2)",
    2};

static const struct db_stmt st_retention_runs = {
    "audit_retention_runs",
    "SELECT (r ->> 'first_seq')::bigint, (r ->> 'last_seq')::bigint, r ->> 'last_hash'"
    " FROM audit_events e, jsonb_array_elements(e.details -> 'runs') r"
    " WHERE e.action = 'audit.retention' ORDER BY 1",
    0};

static const struct db_stmt st_unsealed_count = {
    "audit_unsealed_count",
    "SELECT count(*) FROM audit_events e, aidc_audit_head() h"
    " WHERE e.ts >= h.upto_ts AND (e.ts, e.id) > (h.upto_ts, h.upto_id)",
    0};

static const struct db_stmt st_ingest = {
    "audit_ingest",
    "SELECT aidc_audit_ingest($1::jsonb, $2::uuid, $3, $4::uuid,"
    " coalesce(string_to_array(nullif($5, ''), ','), '{}'), $6::inet, $7, $8)",
    8};

const struct db_stmt *const db_audit_stmts[] = {
    &st_search,
    &st_commands[0],  &st_commands[1], &st_commands[2], &st_export,   &st_unsealed,
    &st_seal,         &st_head,       &st_partitions, &st_retention,     &st_cp_insert,
    &st_cp_last,      &st_chain_batch, &st_cp_between, &st_cp_page,      &st_seq_range,
    &st_retention_runs, &st_unsealed_count, &st_ingest, &st_now, &st_frontier, &st_chain_end,
    NULL};

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

PGresult *db_audit_search(struct db *db, const struct db_audit_filter *f, const char *after_ts,
                          const char *after_id, const char *limit, int *err)
{
    const char *p[15];
    filter_params(f, p);
    p[11] = after_ts;
    p[12] = after_id;
    p[13] = limit;
    /* an address leads only when it is one (a network spans many, in another order) */
    bool one_address = f->source_ip && !strchr(f->source_ip, '/');
    p[14] = f->resource_id ? "resource"
            : f->actor     ? "actor"
            : one_address  ? "address"
            : f->tenant    ? "tenant"
            : f->action    ? "action"
            : f->q         ? "words"
                           : "time";
    return db_query(db, &st_search, p, err);
}

PGresult *db_audit_commands(struct db *db, const struct db_audit_cmd_filter *f,
                            const char *after_ts, const char *after_id, const char *limit,
                            int *err)
{
    const char *p[11] = {f->host, f->user,   f->tenant,  f->q,     f->from, f->to,
                         f->job_id, f->kind, after_ts,   after_id, limit};
    return db_query(db, &st_commands[f->host ? 1 : f->user ? 2 : 0], p, err);
}

PGresult *db_audit_export(struct db *db, const struct db_audit_filter *f, const char *after_ts,
                          const char *after_id, const char *until, const char *limit, int *err)
{
    const char *p[15];
    filter_params(f, p);
    p[11] = after_ts;
    p[12] = after_id;
    p[13] = until;
    p[14] = limit;
    return db_query(db, &st_export, p, err);
}

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

PGresult *db_audit_unsealed(struct db *db, const struct db_audit_head *h, const char *frontier,
                            const char *limit, int *err)
{
    char id[24];
    snprintf(id, sizeof id, "%lld", h->upto_id);
    const char *p[4] = {h->upto_ts, id, frontier, limit};
    return db_query(db, &st_unsealed, p, err);
}

int db_audit_seal(struct db *db, const char *old_seq, const char *ids_array,
                  const char *ts_array, const char *hash_array, bool *moved)
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
    if (PQntuples(r) != 1) {
        PQclear(r);
        return AIDC_EINTERNAL;
    }
    h->seq = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(h->hash, sizeof h->hash, "%s", PQgetvalue(r, 0, 1));
    snprintf(h->upto_ts, sizeof h->upto_ts, "%s", PQgetvalue(r, 0, 2));
    h->upto_id = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
    PQclear(r);
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
    *dropped = PQntuples(r) == 1 ? (int)strtol(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    return 0;
}

int db_audit_checkpoint_insert(struct db *db, const char *ts, const char *seq,
                               const char *head_hex, const char *alg, const char *key_id,
                               const char *sig_hex)
{
    const char *p[6] = {ts, seq, head_hex, alg, key_id, sig_hex};
    return db_exec(db, &st_cp_insert, p);
}

PGresult *db_audit_checkpoint_last(struct db *db, int *err)
{
    return db_query(db, &st_cp_last, NULL, err);
}

PGresult *db_audit_chain_batch(struct db *db, const char *after_seq, const char *upto_seq,
                               const char *limit, int *err)
{
    const char *p[3] = {after_seq, upto_seq, limit};
    return db_query(db, &st_chain_batch, p, err);
}

PGresult *db_audit_checkpoints_between(struct db *db, const char *from_seq, const char *to_seq,
                                       int *err)
{
    const char *p[2] = {from_seq, to_seq};
    return db_query(db, &st_cp_between, p, err);
}

PGresult *db_audit_chain_end(struct db *db, int *err)
{
    return db_query(db, &st_chain_end, NULL, err);
}

PGresult *db_audit_checkpoints_page(struct db *db, const char *before_id, const char *limit,
                                    int *err)
{
    const char *p[2] = {before_id, limit};
    return db_query(db, &st_cp_page, p, err);
}

PGresult *db_audit_seq_range(struct db *db, const char *from, const char *to, int *err)
{
    const char *p[2] = {from, to};
    return db_query(db, &st_seq_range, p, err);
}

PGresult *db_audit_retention_runs(struct db *db, int *err)
{
    return db_query(db, &st_retention_runs, NULL, err);
}

PGresult *db_audit_unsealed_count(struct db *db, int *err)
{
    return db_query(db, &st_unsealed_count, NULL, err);
}

int db_audit_ingest(struct db *db, const char *records_json, const struct db_audit_who *who,
                    long long *accepted)
{
    const char *p[8] = {records_json,   who->user_id,   who->username,   who->token_id,
                        who->roles,     who->source_ip, who->user_agent, who->request_id};
    int e = 0;
    PGresult *r = db_query(db, &st_ingest, p, &e);
    if (!r)
        return e;
    *accepted = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    return 0;
}
