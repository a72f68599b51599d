/* approvals.c - approval requests (dual control; see approvals.h). */
#include "approvals.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "rowjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An overdue pending request is expired, whether or not the row says so yet. */
#define OVERDUE "(a.state = 'pending' AND a.expires_at <= now())"

/* The API object of an approval a (requester ru, decider du). */
#define APPROVAL_COLS                                                                              \
    "a.id, CASE WHEN " OVERDUE " THEN 'expired' ELSE a.state END AS state,"                        \
    " json_build_object('method', a.method, 'path', a.path, 'action', a.action,"                   \
    "   'summary', a.summary, 'body', a.body) AS operation,"                                       \
    " ru.username AS requested_by, du.username AS decided_by, a.reason, a.created_at,"             \
    " CASE WHEN " OVERDUE " THEN a.expires_at ELSE a.decided_at END AS decided_at,"                \
    " a.expires_at, a.result"
#define APPROVAL_JOINS                                                                             \
    " JOIN users ru ON ru.id = a.requested_by LEFT JOIN users du ON du.id = a.decided_by"

static const struct db_stmt st_sweep = {
    "approval_sweep",
    "UPDATE approvals SET state = 'expired', decided_at = expires_at"
    " WHERE state = 'pending' AND expires_at <= now()",
    0};
/* Either the new row or, when the same operation is already pending, that one. */
static const struct db_stmt st_insert = {
    "approval_insert",
    "WITH ins AS (INSERT INTO approvals (method, path, action, summary, body, requested_by,"
    "               expires_at)"
    "             VALUES ($1, $2, $3, $4, $5::jsonb, $6::uuid,"
    "                     now() + make_interval(hours => $7::int))"
    "             ON CONFLICT (method, path, md5(coalesce(body::text, '')))"
    "               WHERE state = 'pending' DO NOTHING RETURNING *)"
    " SELECT " APPROVAL_COLS ", true AS _created FROM ins a" APPROVAL_JOINS " UNION ALL"
    " SELECT " APPROVAL_COLS ", false FROM approvals a" APPROVAL_JOINS
    " WHERE NOT EXISTS (SELECT 1 FROM ins) AND a.state = 'pending' AND a.method = $1"
    "   AND a.path = $2 AND a.body IS NOT DISTINCT FROM $5::jsonb",
    7};
static const struct db_stmt st_get = {
    "approval_get",
    "SELECT " APPROVAL_COLS " FROM approvals a" APPROVAL_JOINS " WHERE a.id = $1::uuid", 1};
static const struct db_stmt st_lock = {
    "approval_lock",
    "SELECT " APPROVAL_COLS ", a.state AS _state, " OVERDUE " AS _overdue,"
    " a.requested_by AS _requested_by, a.method AS _method, a.path AS _path,"
    " a.action AS _action, a.body::text AS _body"
    " FROM approvals a" APPROVAL_JOINS " WHERE a.id = $1::uuid FOR UPDATE OF a",
    1};
static const struct db_stmt st_decide = {
    "approval_decide",
    "WITH u AS (UPDATE approvals SET state = $2, decided_by = $3::uuid, reason = $4,"
    "             decided_at = now(), result = $5::jsonb"
    "           WHERE id = $1::uuid AND state = 'pending' RETURNING *)"
    " SELECT " APPROVAL_COLS " FROM u a" APPROVAL_JOINS,
    5};
static const struct db_stmt st_list = {
    "approval_list",
    "SELECT " APPROVAL_COLS ", a.created_at::text || '|' || a.id AS _cursor"
    " FROM approvals a" APPROVAL_JOINS " WHERE ($1::text IS NULL OR CASE WHEN " OVERDUE
    " THEN 'expired' ELSE a.state END = $1)"
    " AND ($2::timestamptz IS NULL OR (a.created_at, a.id) < ($2::timestamptz, $3::uuid))"
    " ORDER BY a.created_at DESC, a.id DESC LIMIT $4::int + 1",
    4};
static const struct db_stmt st_savepoint = {"approval_savepoint", "SAVEPOINT aidc_approval", 0};
static const struct db_stmt st_savepoint_rollback = {"approval_savepoint_rollback",
                                                     "ROLLBACK TO SAVEPOINT aidc_approval", 0};
static const struct db_stmt st_savepoint_release = {"approval_savepoint_release",
                                                    "RELEASE SAVEPOINT aidc_approval", 0};

const struct db_stmt *const db_approvals_stmts[] = {&st_sweep,
                                                    &st_insert,
                                                    &st_get,
                                                    &st_lock,
                                                    &st_decide,
                                                    &st_list,
                                                    &st_savepoint,
                                                    &st_savepoint_rollback,
                                                    &st_savepoint_release,
                                                    NULL};

void db_approval_row_free(struct db_approval_row *r)
{
    json_decref(r->obj);
    free(r->method);
    free(r->path);
    free(r->action);
    free(r->body);
    memset(r, 0, sizeof *r);
}

int db_approval_sweep(struct db *db)
{
    return db_exec(db, &st_sweep, NULL);
}

int db_approval_insert(struct db *db, const struct db_approval_new *n, json_t **out, bool *created)
{
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%d", n->ttl_hours);
    const char *p[7] = {n->method, n->path, n->action, n->summary, n->body, n->requested_by, ttl};
    int e;
    PGresult *r = db_query(db, &st_insert, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        /* DO NOTHING met a row this statement's snapshot cannot see: a
         * concurrent request for the same operation committed just now */
        PQclear(r);
        return AIDC_ERETRY;
    }
    const char *c = rowjson_get(r, 0, "_created");
    *created = c && c[0] == 't';
    *out = rowjson_object(r, 0);
    PQclear(r);
    return *out ? 0 : AIDC_EINTERNAL;
}

int db_approval_get(struct db *db, const char *id, json_t **out)
{
    const char *p[1] = {id};
    return rowjson_query_one(db, &st_get, p, out);
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

int db_approval_lock(struct db *db, const char *id, struct db_approval_row *out)
{
    const char *p[1] = {id};
    int e;
    memset(out, 0, sizeof *out);
    PGresult *r = db_query(db, &st_lock, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    const char *state = rowjson_get(r, 0, "_state");
    const char *overdue = rowjson_get(r, 0, "_overdue");
    const char *by = rowjson_get(r, 0, "_requested_by");
    snprintf(out->state, sizeof out->state, "%s", state ? state : "");
    out->overdue = overdue && overdue[0] == 't';
    snprintf(out->requested_by, sizeof out->requested_by, "%s", by ? by : "");
    out->method = dup_or_null(rowjson_get(r, 0, "_method"));
    out->path = dup_or_null(rowjson_get(r, 0, "_path"));
    out->action = dup_or_null(rowjson_get(r, 0, "_action"));
    out->body = dup_or_null(rowjson_get(r, 0, "_body"));
    out->obj = rowjson_object(r, 0);
    PQclear(r);
    if (!out->obj || !out->method || !out->path || !out->action) {
        db_approval_row_free(out);
        return AIDC_EINTERNAL;
    }
    return 0;
}

int db_approval_decide(struct db *db, const char *id, const char *state, const char *decided_by,
                       const char *reason, const char *result, json_t **out)
{
    const char *p[5] = {id, state, decided_by, reason, result};
    int e = rowjson_query_one(db, &st_decide, p, out);
    return e == AIDC_ENOTFOUND ? AIDC_ECONFLICT : e;
}

int db_approval_list(struct db *db, const char *state, const char *after_ts, const char *after_id,
                     int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[4] = {state, after_ts, after_id, lim};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

int db_approval_savepoint(struct db *db)
{
    return db_exec(db, &st_savepoint, NULL);
}

int db_approval_savepoint_rollback(struct db *db)
{
    return db_exec_recover(db, &st_savepoint_rollback);
}

int db_approval_savepoint_release(struct db *db)
{
    return db_exec(db, &st_savepoint_release, NULL);
}
