/* context.c - the statements that open a request's scope (see context.h). */
#include "context.h"
#include "dbint.h"

#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The context, and in the same breath whether the actor it describes is still
 * what the server believes: same auth_version (no change of roles,
 * memberships, suspension, password or disabling since it was loaded), token
 * not revoked or expired, session not logged out. The last column says so.
 */
/*
 * Whether the actor is still what the server believes: first the cheap test -
 * nothing changed anywhere since it was found current (same auth epoch) -,
 * and only if something did, the actor's own: same users.auth_version (roles,
 * memberships, suspension, password, disabling), token not revoked or
 * expired, session not logged out.
 */
#define CTX_CHECK(u, v, t, j, ep)                                                                  \
    " e.v, " u "::uuid IS NULL OR e.v = " ep "::bigint"                                            \
    " OR (EXISTS (SELECT 1 FROM users WHERE id = " u "::uuid"                                      \
    "     AND auth_version = " v "::bigint AND NOT disabled)"                                      \
    " AND (" t "::uuid IS NULL OR EXISTS (SELECT 1 FROM api_tokens WHERE id = " t "::uuid"         \
    "     AND revoked_at IS NULL AND expires_at > now()))"                                         \
    " AND (" j "::uuid IS NULL OR NOT EXISTS (SELECT 1 FROM revoked_sessions WHERE jti = " j       \
    "     ::uuid)))"                                                                               \
    " FROM aidc_auth_epoch e"

/*
 * The statement timeout and JIT travel with the context as transaction-local
 * settings too: behind a transaction pooler a session SET would stay with
 * whichever server connection ran it (and reach other clients), and a new one
 * would not have it.
 */
const struct db_stmt db_ctx_stmt = {
    "aidc_ctx",
    "SELECT set_config('aidc.user_id', $1, true), set_config('aidc.roles', $2, true),"
    " set_config('aidc.all', $3, true), set_config('aidc.read_tenants', $4, true),"
    " set_config('aidc.admin_tenants', $5, true), set_config('aidc.member_tenants', $6, true),"
    " set_config('aidc.own_jobs_tenants', $12, true),"
    " set_config('statement_timeout', $13, true), set_config('jit', 'off', true)," CTX_CHECK(
        "$7", "$8", "$9", "$10", "$11"),
    NCTX + 1};

/* Reads need neither the tenants one administers nor those one submits to. */
const struct db_stmt db_ctx_read_stmt = {
    "aidc_ctx_read",
    "SELECT set_config('aidc.user_id', $1, true), set_config('aidc.roles', $2, true),"
    " set_config('aidc.all', $3, true), set_config('aidc.read_tenants', $4, true),"
    " set_config('aidc.own_jobs_tenants', $10, true),"
    " set_config('statement_timeout', $11, true), set_config('jit', 'off', true)," CTX_CHECK(
        "$5", "$6", "$7", "$8", "$9"),
    NCTX - 1};

/* Words that make a statement more than a plain read (the SQL here spells keywords in capitals). */
static const char *const not_read[] = {
    "INSERT ",     "UPDATE ",     "DELETE ",    "MERGE ", " FOR UPDATE", " FOR SHARE",
    " FOR NO KEY", " FOR KEY",    "LOCK ",      ";",      "nextval(",    "setval(",
    "set_config(", "pg_advisory", "pg_notify(", "NOTIFY", NULL};

static bool plain_read(const char *sql)
{
    if (strncmp(sql, "SELECT ", 7) != 0 && strncmp(sql, "WITH ", 5) != 0)
        return false;
    for (size_t i = 0; not_read[i]; i++)
        if (strstr(sql, not_read[i]))
            return false;
    return true;
}

char *db_ctx_wrap_sql(const struct db_stmt *stmt)
{
    if (!plain_read(stmt->sql))
        return NULL;
    struct sbuf sb = {0};
    sbuf_puts(&sb, "SELECT q.*, c._aidc_epoch, c._aidc_current FROM (");
    /* the context's own $1..$11, moved behind the query's */
    for (const char *s = db_ctx_read_stmt.sql; *s; s++) {
        if (*s == '$' && isdigit((unsigned char)s[1])) {
            char *end;
            long n = strtol(s + 1, &end, 10);
            sbuf_printf(&sb, "$%ld", n + stmt->nparams);
            s = end - 1;
        } else {
            sbuf_putc(&sb, *s);
        }
    }
    sbuf_printf(&sb,
                " OFFSET 0) c(s1, s2, s3, s4, s5, s6, s7, _aidc_epoch, _aidc_current)"
                " LEFT JOIN LATERAL (SELECT o.*, true AS _aidc_row FROM (%s) o"
                " WHERE c._aidc_current IS NOT NULL OFFSET 0) q ON true",
                stmt->sql);
    return sbuf_steal(&sb);
}

void db_ctx_wrap_name(const struct db_stmt *stmt, char *out, size_t outsz)
{
    snprintf(out, outsz, "c:%s", stmt->name);
}

PGresult *db_ctx_unwrap(PGresult *r)
{
    int nf = PQnfields(r) - DB_CTX_WRAP_EXTRA, nt = PQntuples(r);
    PGresult *out = nf >= 0 ? PQcopyResult(r, 0) : NULL;
    PGresAttDesc *att = out ? calloc((size_t)nf + 1, sizeof *att) : NULL;
    bool ok = att != NULL;
    for (int f = 0; ok && f < nf; f++)
        att[f] = (PGresAttDesc){PQfname(r, f), PQftable(r, f), PQftablecol(r, f), PQfformat(r, f),
                                PQftype(r, f), PQfsize(r, f),  PQfmod(r, f)};
    ok = ok && PQsetResultAttrs(out, nf, att);
    int row = 0;
    for (int t = 0; ok && t < nt; t++) {
        if (PQgetisnull(r, t, nf)) /* the placeholder of an empty answer */
            continue;
        for (int f = 0; ok && f < nf; f++)
            ok = PQgetisnull(r, t, f)
                     ? PQsetvalue(out, row, f, NULL, -1)
                     : PQsetvalue(out, row, f, PQgetvalue(r, t, f), PQgetlength(r, t, f));
        row++;
    }
    free(att);
    PQclear(r);
    if (!ok) {
        PQclear(out);
        return NULL;
    }
    return out;
}

#define WRAP_SLOTS 1024 /* more than the statements there are: open addressing stays short */

struct db_ctx_wraps {
    const struct db_stmt *stmt[WRAP_SLOTS];
    unsigned char state[WRAP_SLOTS];
};

struct db_ctx_wraps *db_ctx_wraps_new(void)
{
    return xcalloc(1, sizeof(struct db_ctx_wraps));
}

void db_ctx_wraps_free(struct db_ctx_wraps *w)
{
    free(w);
}

void db_ctx_wraps_clear(struct db_ctx_wraps *w)
{
    if (w)
        memset(w, 0, sizeof *w);
}

static size_t wrap_slot(const struct db_ctx_wraps *w, const struct db_stmt *stmt)
{
    size_t i = ((uintptr_t)stmt >> 4) % WRAP_SLOTS;
    for (size_t n = 0; n < WRAP_SLOTS && w->stmt[i] && w->stmt[i] != stmt; n++)
        i = (i + 1) % WRAP_SLOTS;
    return i;
}

enum db_ctx_wrap db_ctx_wraps_get(const struct db_ctx_wraps *w, const struct db_stmt *stmt)
{
    size_t i = wrap_slot(w, stmt);
    return w->stmt[i] == stmt ? (enum db_ctx_wrap)w->state[i] : DB_WRAP_UNKNOWN;
}

void db_ctx_wraps_set(struct db_ctx_wraps *w, const struct db_stmt *stmt, enum db_ctx_wrap s)
{
    size_t i = wrap_slot(w, stmt);
    if (w->stmt[i] && w->stmt[i] != stmt)
        return; /* full: that statement keeps being asked about, and keeps two statements */
    w->stmt[i] = stmt;
    w->state[i] = (unsigned char)s;
}

/* db_ctx_read_stmt's parameters into p */
void db_read_ctx_params(const struct db *db, const char **p)
{
    const char *v[NCTX - 1] = {db->ctxp[0],  db->ctxp[1],  db->ctxp[2],      db->ctxp[3],
                               db->ctxp[6],  db->ctxp[7],  db->ctxp[8],      db->ctxp[9],
                               db->ctxp[10], db->ctxp[11], db->timeout_param};
    memcpy(p, v, sizeof v);
}

/*
 * Prepare stmt's one-statement read form on this connection (its own round
 * trip, once per connection). A statement PostgreSQL will not take wrapped
 * keeps the two-statement form; the request goes on either way.
 */
static enum db_ctx_wrap prepare_wrapped(struct db *db, const struct db_stmt *stmt)
{
    char *sql = db_ctx_wrap_sql(stmt);
    enum db_ctx_wrap w = DB_WRAP_NO;
    char name[96];
    db_ctx_wrap_name(stmt, name, sizeof name);
    bool failed = db->tx_failed;
    int err = db->tx_err;
    if (sql && PQsendPrepare(db->conn, name, sql, stmt->nparams + NCTX - 1, NULL) &&
        db_push(db, PEND_CHECK)) {
        if (db_sync_drain(db, NULL) == 0)
            w = DB_WRAP_READY;
        else if (db->up)
            log_warn("statement %s stays two statements: %s", stmt->name, db->last.message);
    }
    free(sql);
    db->tx_failed = failed;
    db->tx_err = err;
    if (db->up)
        db_ctx_wraps_set(db->wraps, stmt, w);
    return w;
}

/* A read in a read scope: the context and stmt, in one statement where it can be. */
int db_send_read(struct db *db, const struct db_stmt *stmt, const char *const *params)
{
    enum db_ctx_wrap w =
        db->txpool || stmt->nparams > 64 - NCTX ? DB_WRAP_NO : db_ctx_wraps_get(db->wraps, stmt);
    if (w == DB_WRAP_UNKNOWN)
        w = prepare_wrapped(db, stmt);
    if (!db->up)
        return AIDC_EUNAVAIL;
    if (w != DB_WRAP_READY) {
        int e = db_send_ctx(db);
        return e ? e : db_send_stmt(db, stmt, params, PEND_WANT);
    }
    const char *p[64];
    if (stmt->nparams)
        memcpy(p, params, (size_t)stmt->nparams * sizeof *p);
    db_read_ctx_params(db, p + stmt->nparams);
    char name[96];
    db_ctx_wrap_name(stmt, name, sizeof name);
    const struct db_stmt wrapped = {name, NULL, stmt->nparams + NCTX - 1};
    return db_send_stmt(db, &wrapped, p, PEND_WANTCTX);
}
