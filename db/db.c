/*
 * db.c - a pipelined libpq connection with prepared statements.
 *
 * Invariant: every batch sent to the server ends with a Sync before its results
 * are read, and `pending` lists, in order, what the server will answer: one
 * entry per statement and one per Sync. Reading always drains the whole list,
 * so the connection is idle (nothing pending) whenever control returns to a
 * caller that waited, and an entry's error is attributed to the right caller.
 */
#include "db.h"
#include "context.h"
#include "dbint.h"
#include "dbstats.h"
#include "pgerr.h"
#include "prefetch.h"
#include "readctx.h"

#include "../lib/clock.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/ptrset.h"
#include "../lib/xalloc.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct db_stmt st_begin = {"aidc_begin", "BEGIN", 0};
static const struct db_stmt st_commit = {"aidc_commit", "COMMIT", 0};
static const struct db_stmt st_rollback = {"aidc_rollback", "ROLLBACK", 0};
static const struct db_stmt *const core_stmts[] = {&st_begin,
                                                   &st_commit,
                                                   &st_rollback,
                                                   &db_ctx_stmt,
                                                   &db_ctx_read_stmt,
                                                   &db_ctx_session_stmt,
                                                   &db_ctx_read_session_stmt,
                                                   NULL};

void db_set_pool(struct db *db, enum db_pool pool)
{
    if (db->up) {
        dbstats_connection(db->pool, -1);
        dbstats_connection(pool, 1);
    }
    db->pool = pool;
}

void db_set_busy(struct db *db, bool busy)
{
    if (busy != db->busy)
        dbstats_busy(db->pool, busy ? 1 : -1);
    db->busy = busy;
}

struct db *db_open(const char *url, const char *application_name)
{
    struct db *db = xcalloc(1, sizeof *db);
    db->url = xstrdup(url);
    db->appname = xstrdup(application_name ? application_name : "aidcd");
    snprintf(db->timeout_param, sizeof db->timeout_param, "0");
    return db;
}

static void ctx_clear(struct db *db)
{
    prefetch_clear(db);
    for (int i = 0; i < NCTX; i++) {
        free(db->ctxp[i]);
        db->ctxp[i] = NULL;
    }
}

/*
 * Forget the connection. An open transaction that already got answers dies
 * with it (scope_lost: never reconnect silently under it - its statements so
 * far are gone and later ones must not run outside it). One that got none yet
 * is opened again on the next connection (nothing of it reached the database).
 */
void dbint_drop_conn(struct db *db)
{
    if (db->in_tx && !db->autoctx) {
        if (db->batches > 0)
            db->scope_lost = true;
        else
            db->reopen = true;
    }
    if (db->conn)
        PQfinish(db->conn);
    if (db->up)
        dbstats_connection(db->pool, -1);
    db->conn = NULL;
    db->up = false;
    db->npending = 0;
    prefetch_clear(db);
    ptrset_clear(&db->prepared);
    readctx_conn_lost(db);
    db->tx_failed = false;
    db->tx_err = 0;
}

void db_close(struct db *db)
{
    if (!db)
        return;
    db->in_tx = false;
    db_set_busy(db, false);
    dbint_drop_conn(db);
    ctx_clear(db);
    for (int i = 0; i < db->nchannels; i++)
        free(db->channels[i]);
    free(db->url);
    free(db->appname);
    ptrset_free(&db->prepared);
    readctx_free(db);
    free(db);
}

bool db_is_up(const struct db *db)
{
    return db->up;
}

bool db_in_tx(const struct db *db)
{
    return db->in_tx;
}

unsigned long db_round_trips(const struct db *db)
{
    return db->round_trips;
}

const struct db_error *db_last_error(const struct db *db)
{
    return &db->last;
}

void dbint_set_error(struct db *db, const PGresult *r, const char *fallback)
{
    memset(&db->last, 0, sizeof db->last);
    const char *s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (s)
        snprintf(db->last.sqlstate, sizeof db->last.sqlstate, "%s", s);
    s = r ? PQresultErrorField(r, PG_DIAG_CONSTRAINT_NAME) : NULL;
    if (s)
        snprintf(db->last.constraint, sizeof db->last.constraint, "%s", s);
    s = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!s)
        s = db->conn ? PQerrorMessage(db->conn) : fallback;
    snprintf(db->last.message, sizeof db->last.message, "%s", s ? s : fallback);
    size_t n = strlen(db->last.message);
    while (n > 0 && db->last.message[n - 1] == '\n')
        db->last.message[--n] = '\0';
}

/* SQLSTATE -> aidc error code: the one place that knows the mapping. */
int dbint_conn_lost(struct db *db)
{
    log_warn("database connection lost: %s", db->last.message);
    dbint_drop_conn(db);
    return AIDC_EUNAVAIL;
}

static bool push(struct db *db, enum pend_kind k)
{
    if (db->npending >= MAX_PENDING)
        return false;
    db->pending[db->npending++] = k;
    return true;
}

/*
 * Read the answers to everything pending. The PEND_WANT result (if any) is
 * returned through *want. Returns 0 or the first error among CHECK/WANT
 * entries.
 */
int dbint_drain(struct db *db, PGresult **want)
{
    int first_err = 0;
    if (want)
        *want = NULL;
    for (int i = 0; i < db->npending; i++) {
        enum pend_kind k = db->pending[i];
        if (k == PEND_SYNC) {
            PGresult *r = PQgetResult(db->conn);
            ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
            if (st != PGRES_PIPELINE_SYNC) {
                dbint_set_error(db, r, "lost synchronisation with the server");
                PQclear(r);
                db->npending = 0;
                return dbint_conn_lost(db);
            }
            PQclear(r);
            continue;
        }
        PGresult *r;
        int got = 0;
        /* a failed Prepare is not prepared, and errs as its statement would */
        enum pend_kind ek = k == PEND_PREP && i + 1 < db->npending ? db->pending[i + 1] : k;
        while ((r = PQgetResult(db->conn)) != NULL) {
            ExecStatusType st = PQresultStatus(r);
            got++;
            const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE); /* 42P05: had it */
            if (db->pending[i] == PEND_PREP && st != PGRES_COMMAND_OK &&
                !(state && strcmp(state, "42P05") == 0))
                ptrset_del(&db->prepared, db->pend_stmt[i]);
            if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
                if (k == PEND_CTX && PQntuples(r) == 1) {
                    bool current = PQgetvalue(r, 0, PQnfields(r) - 1)[0] == 't';
                    db->ctx_epoch = strtoll(PQgetvalue(r, 0, PQnfields(r) - 2), NULL, 10);
                    db->ctx_found_epoch = db->ctx_epoch;
                    if (!current)
                        db->ctx_actor_stale = true;
                    if (!current ||
                        (db->ctx_need_epoch >= 0 && db->ctx_epoch != db->ctx_need_epoch))
                        db->ctx_state = DB_CTX_STALE;
                    else if (db->ctx_state == DB_CTX_UNKNOWN)
                        db->ctx_state = DB_CTX_CURRENT;
                }
                if (k == PEND_WANT && want && !*want) {
                    *want = r;
                    continue;
                }
                if (k == PEND_KEEP) {
                    prefetch_answered(db, i, r);
                    continue;
                }
            } else if (st == PGRES_PIPELINE_ABORTED) {
                if (!first_err && ek != PEND_LAX)
                    first_err = db->tx_err ? db->tx_err : AIDC_EINTERNAL;
            } else {
                dbint_set_error(db, r,
                                db->pending[i] == PEND_PREP ? "cannot prepare" : "query failed");
                if (db->pending[i] == PEND_PREP)
                    log_error("cannot prepare %s: %s", db->pend_stmt[i]->name, db->last.message);
                int e = pgerr_map(db->last.sqlstate);
                if (PQstatus(db->conn) == CONNECTION_BAD) {
                    PQclear(r);
                    db->npending = 0;
                    return dbint_conn_lost(db);
                }
                if (ek == PEND_LAX) {
                    log_warn("background statement failed: %s", db->last.message);
                } else if (!first_err) {
                    first_err = e;
                }
                if (db->in_tx && ek != PEND_LAX) {
                    db->tx_failed = true;
                    db->tx_err = e;
                }
            }
            PQclear(r);
        }
        if (k == PEND_KEEP)
            prefetch_done(db, i); /* no answer kept: its query runs as any other */
        if (got == 0 && PQstatus(db->conn) == CONNECTION_BAD) {
            dbint_set_error(db, NULL, "connection lost");
            db->npending = 0;
            return dbint_conn_lost(db);
        }
    }
    db->npending = 0;
    if (first_err && want && *want) {
        PQclear(*want);
        *want = NULL;
    }
    return first_err;
}

/* Prepare stmt ahead of its first use on this connection (PEND_PREP). */
static bool send_prepare(struct db *db, const struct db_stmt *stmt)
{
    if (db->npending >= MAX_PENDING ||
        !PQsendPrepare(db->conn, stmt->name, stmt->sql, stmt->nparams, NULL))
        return false;
    db->pend_stmt[db->npending] = stmt;
    db->pending[db->npending++] = PEND_PREP;
    ptrset_add(&db->prepared, stmt);
    return true;
}

int dbint_send_stmt(struct db *db, const struct db_stmt *stmt, const char *const *params,
                    enum pend_kind k)
{
    bool prep = !db->txpool && !ptrset_has(&db->prepared, stmt);
    if (db->npending >= MAX_PENDING - 1 - (int)prep) {
        /* the answers would no longer line up with their callers */
        log_error("too many statements in flight sending %s", stmt->name);
        return AIDC_EINTERNAL;
    }
    int sent =
        db->txpool
            ? PQsendQueryParams(db->conn, stmt->sql, stmt->nparams, NULL, params, NULL, NULL, 0)
            : (!prep || send_prepare(db, stmt)) &&
                  PQsendQueryPrepared(db->conn, stmt->name, stmt->nparams, params, NULL, NULL, 0);
    if (!sent || !push(db, k)) {
        dbint_set_error(db, NULL, "cannot send statement");
        if (PQstatus(db->conn) == CONNECTION_BAD || prep) /* a lone Prepare: answers astray */
            return dbint_conn_lost(db);
        log_error("cannot send statement %s: %s", stmt->name, db->last.message);
        return AIDC_EINTERNAL;
    }
    return 0;
}

int dbint_sync_and_drain(struct db *db, PGresult **want)
{
    if (!PQpipelineSync(db->conn) || !push(db, PEND_SYNC)) {
        dbint_set_error(db, NULL, "cannot flush to the server");
        return dbint_conn_lost(db);
    }
    db->round_trips++;
    int e = dbint_drain(db, want);
    if (db->up)
        db->batches++;
    return e;
}

static int connect_now(struct db *db)
{
    /* keepalives and tcp_user_timeout: a database that vanishes without a
     * word (network cut, host down) must not hang a worker forever */
    const char *keys[] = {"connect_timeout",  "keepalives",
                          "keepalives_idle",  "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout",
                          "application_name", "client_encoding",
                          "dbname",           NULL};
    const char *vals[] = {"5", "1", "30", "10", "3", "60000", db->appname, "UTF8", db->url, NULL};
    db->conn = PQconnectdbParams(keys, vals, 1);
    if (!db->conn || PQstatus(db->conn) != CONNECTION_OK) {
        dbint_set_error(db, NULL, "cannot connect");
        dbint_drop_conn(db);
        return AIDC_EUNAVAIL;
    }
    PQsetNoticeReceiver(db->conn, pgerr_notice, NULL);
    /* Session settings PgBouncer tracks per client, so they survive pooling. JIT
     * off: it compiles every statement whose plan merely looks costly, and for
     * aidc's statements compiling takes longer than running (an invoice: ~1 s
     * of JIT for 25 ms of work, tests/bench/billing.sh). The server's TCP
     * keepalives: a session whose aidcd host vanished (power, network) ends in
     * about 25 s instead of the kernel's two hours - and with it a worker's
     * leader lock, so a standby leads (docs/ha.md). */
    char setup[768];
    int n = db->txpool /* PgBouncer keeps these two per client (they are reported settings) */
                ? snprintf(setup, sizeof setup, "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'")
                : snprintf(setup, sizeof setup,
                           "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD';"
                           " SET statement_timeout = %d;"
                           " SET plan_cache_mode = force_generic_plan; SET jit = off;"
                           " SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5;"
                           " SET tcp_keepalives_count = 3; SET tcp_user_timeout = 25000",
                           db->statement_timeout_ms);
    /* and LISTEN (channels are identifiers checked by db_listen): one round trip */
    for (int i = 0; i < db->nchannels && n > 0 && (size_t)n < sizeof setup; i++)
        n += snprintf(setup + n, sizeof setup - (size_t)n, "; LISTEN %s", db->channels[i]);
    PGresult *r = n > 0 && (size_t)n < sizeof setup ? PQexec(db->conn, setup) : NULL;
    bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        dbint_set_error(db, r, "cannot set the session or listen");
    PQclear(r);
    if (!ok || !PQenterPipelineMode(db->conn)) {
        dbint_drop_conn(db);
        return AIDC_EUNAVAIL;
    }
    db->up = true;
    db->generation++;
    db->note_mixed = true;
    dbstats_connection(db->pool, 1);
    return 0;
}


/* Connect if not connected; reopen a transaction that had not started yet. */
int dbint_ensure_up(struct db *db)
{
    if (db->bound && (!db->up || db->generation != db->bound)) {
        snprintf(db->last.message, sizeof db->last.message, "its bound session ended");
        return AIDC_EUNAVAIL;
    }
    if (db->up)
        return 0;
    double now = clock_now_ms();
    /*
     * After a failed attempt, try again at most once a second - unless another
     * connection of the same use got through since: the server is back, and
     * waiting out the second would answer 503 while it serves.
     */
    unsigned long connects = dbstats_connects(db->pool);
    if (now < db->next_attempt && connects == db->connects_seen)
        return AIDC_EUNAVAIL;
    int e = connect_now(db);
    if (e) {
        /* from the attempt's end: one that timed out (connect_timeout) must not leave it past */
        db->next_attempt = clock_now_ms() + 1000;
        db->connects_seen = connects;
        log_warn("database unavailable: %s", db->last.message);
        return e;
    }
    db->next_attempt = 0;
    dbstats_connected(db->pool);
    if (db->connected_once)
        dbstats_reconnected();
    db->connected_once = true;
    memset(&db->last, 0, sizeof db->last);
    if (db->reopen && db->in_tx) {
        db->reopen = false;
        e = dbint_send_stmt(db, &st_begin, NULL, PEND_CHECK);
        if (!e)
            e = dbint_send_ctx(db);
    }
    return e;
}

int db_ensure(struct db *db)
{
    return dbint_ensure_up(db);
}

int db_ensure_alive(struct db *db)
{
    if (db->up && db->npending == 0) {
        /* an idle connection has nothing to read: anything readable is the end of it */
        struct pollfd p = {.fd = PQsocket(db->conn), .events = POLLIN};
        if (poll(&p, 1, 0) > 0 &&
            (!PQconsumeInput(db->conn) || PQstatus(db->conn) == CONNECTION_BAD)) {
            dbint_set_error(db, NULL, "connection closed by the server");
            dbint_conn_lost(db);
        }
    }
    return dbint_ensure_up(db);
}

void db_set_statement_timeout(struct db *db, int ms)
{
    db->statement_timeout_ms = ms;
    snprintf(db->timeout_param, sizeof db->timeout_param, "%d", ms);
}

void db_set_txpool(struct db *db, bool on)
{
    db->txpool = on;
}

unsigned db_generation(const struct db *db)
{
    return db->up ? db->generation : 0;
}

void db_bind_session(struct db *db, unsigned generation)
{
    db->bound = generation;
}

/* The statement timeout goes last, and only behind a pooler (context.c). */
int dbint_send_ctx(struct db *db)
{
    if (db->autoctx) {
        const char *p[NCTX - 1] = {db->ctxp[0],  db->ctxp[1],  db->ctxp[2],      db->ctxp[3],
                                   db->ctxp[6],  db->ctxp[7],  db->ctxp[8],      db->ctxp[9],
                                   db->ctxp[10], db->ctxp[11], db->timeout_param};
        return dbint_send_stmt(db, db->txpool ? &db_ctx_read_stmt : &db_ctx_read_session_stmt, p,
                         PEND_CTX);
    }
    const char *p[NCTX + 1];
    memcpy(p, db->ctxp, sizeof db->ctxp);
    p[NCTX] = db->timeout_param;
    return dbint_send_stmt(db, db->txpool ? &db_ctx_stmt : &db_ctx_session_stmt, p, PEND_CTX);
}

int db_begin(struct db *db, const struct db_ctx *ctx, bool readonly)
{
    db->scope_lost = false;
    db->reopen = false;
    db->batches = 0;
    int e = dbint_ensure_up(db);
    if (e)
        return e;
    if (db->in_tx) {
        log_error("db_begin inside a transaction");
        return AIDC_EINTERNAL;
    }
    ctx_clear(db);
    const struct db_ctx none = {0};
    if (!ctx)
        ctx = &none;
    char version[24], epoch[24];
    snprintf(version, sizeof version, "%lld", ctx->check_version);
    snprintf(epoch, sizeof epoch, "%lld", ctx->check_epoch);
    /* what the global roles let the actor do to every tenant (see 0001_init.sql) */
    const char *roles = ctx->roles ? ctx->roles : "";
    const char *all = strstr(roles, "platform_admin") || strstr(roles, "system") ? "admin"
                      : strstr(roles, "finance") || strstr(roles, "auditor")     ? "read"
                                                                                 : "";
    const char *p[NCTX] = {
        ctx->user_id ? ctx->user_id : "",
        roles,
        all,
        ctx->read_tenants ? ctx->read_tenants : "",
        ctx->admin_tenants ? ctx->admin_tenants : "",
        ctx->member_tenants ? ctx->member_tenants : "",
        ctx->check_user,
        ctx->check_user ? version : NULL,
        ctx->check_token,
        ctx->check_jti,
        ctx->check_user ? epoch : NULL,
        ctx->own_jobs_tenants ? ctx->own_jobs_tenants : "",
    };
    for (int i = 0; i < NCTX; i++)
        db->ctxp[i] = p[i] ? xstrdup(p[i]) : NULL;
    db->in_tx = true;
    db->autoctx = readonly;
    db->tx_failed = false;
    db->tx_err = 0;
    db->ctx_state = DB_CTX_UNKNOWN;
    db->ctx_epoch = -1;
    db->ctx_found_epoch = -1;
    db->ctx_need_epoch = ctx->remembered_at ? *ctx->remembered_at : -1;
    db->ctx_actor_stale = false;
    if (readonly)
        return 0; /* each statement carries the context: one round trip per read */
    e = dbint_send_stmt(db, &st_begin, NULL, PEND_CHECK);
    if (!e)
        e = dbint_send_ctx(db);
    if (e)
        db->in_tx = false;
    return e;
}

long long db_ctx_epoch(const struct db *db)
{
    return db->ctx_epoch;
}

long long db_ctx_found_epoch(const struct db *db)
{
    return db->ctx_found_epoch > db->ctx_epoch ? db->ctx_found_epoch : db->ctx_epoch;
}

int db_ctx_verify(struct db *db)
{
    if (!db->in_tx || db->ctx_state != DB_CTX_UNKNOWN || !db->up)
        return db->ctx_state;
    int e = db->autoctx ? dbint_send_ctx(db) : 0;
    if (!e)
        e = dbint_sync_and_drain(db, NULL);
    if (e) {
        if (!db->autoctx) {
            db->tx_failed = true;
            db->tx_err = e;
        }
        return DB_CTX_UNKNOWN;
    }
    return db->ctx_state;
}

bool db_ctx_only_pin_moved(const struct db *db)
{
    return db->ctx_state == DB_CTX_STALE && !db->ctx_actor_stale && db->ctx_need_epoch >= 0;
}

static int query_once(struct db *db, const struct db_stmt *stmt, const char *const *params,
                      PGresult **r)
{
    int e = db->scope_lost ? AIDC_EUNAVAIL : dbint_ensure_up(db);
    if (!e && db->in_tx && db->tx_failed)
        e = db->tx_err ? db->tx_err : AIDC_EINTERNAL;
    if (!e && db->nkept && (e = prefetch_take(db, stmt, params, r)) == 0 && *r)
        return 0;
    if (!e && db->in_tx && db->autoctx && !db->txpool) {
        e = readctx_query(db, stmt, params, r);
        if (e != READCTX_IN_TWO)
            return e;
        e = 0;
    }
    if (!e && db->in_tx && db->autoctx)
        e = dbint_send_ctx(db);
    bool cleared = false;
    if (!e && !db->in_tx)
        e = readctx_clear(db, &cleared); /* outside any scope: no actor's reads */
    if (!e)
        e = dbint_send_stmt(db, stmt, params, PEND_WANT);
    if (!e)
        e = dbint_sync_and_drain(db, r);
    if (cleared)
        readctx_cleared(db, !e);
    return e;
}

PGresult *db_query(struct db *db, const struct db_stmt *stmt, const char *const *params, int *err)
{
    PGresult *r = NULL;
    bool was_up = db->up;
    int e = query_once(db, stmt, params, &r);
    /* 57P01..57P03: the server ended our session (shutdown, restart): it is gone */
    if (e == AIDC_EUNAVAIL && db->up && strncmp(db->last.sqlstate, "57P", 3) == 0)
        dbint_conn_lost(db);
    /*
     * A connection whose server went away while it idled (a restart, a
     * failover) is only found out by using it. If nothing of value was lost
     * with it - no answered round trip of an open transaction - reconnect at
     * once and run the statement again, so the first request after a restart
     * does not fail.
     */
    if (e == AIDC_EUNAVAIL && was_up && !db->up && !db->scope_lost) {
        log_info("database connection was lost; reconnecting");
        db->next_attempt = 0;
        e = query_once(db, stmt, params, &r);
    }
    if (!e && !r) {
        dbint_set_error(db, NULL, "no result");
        e = AIDC_EINTERNAL;
    }
    /* a request whose actor is not what the server believed, or that runs on what it
     * remembered at another epoch, stops at once: its answer would be thrown away,
     * and a handler must not act (on files, say) for it meanwhile */
    if (!e && db->in_tx && db->ctx_state == DB_CTX_STALE) {
        PQclear(r);
        r = NULL;
        e = AIDC_ESTALE;
        if (!db->autoctx) {
            db->tx_failed = true;
            db->tx_err = e;
        }
    }
    if (e && e != AIDC_ECONFLICT && e != AIDC_EINVAL && e != AIDC_EUNAVAIL && e != AIDC_ERETRY &&
        e != AIDC_ESTALE)
        log_error("statement %s failed: %s (%s)", stmt->name, db->last.message, db->last.sqlstate);
    if (err)
        *err = e;
    return e ? NULL : r;
}

int db_exec(struct db *db, const struct db_stmt *stmt, const char *const *params)
{
    int e;
    PGresult *r = db_query(db, stmt, params, &e);
    PQclear(r);
    return e;
}

int db_exec_recover(struct db *db, const struct db_stmt *stmt)
{
    prefetch_clear(db);    /* answers from before the savepoint's rollback */
    db->tx_failed = false; /* a failure of stmt itself marks the transaction again */
    db->tx_err = 0;
    return db_exec(db, stmt, NULL);
}

int db_queue(struct db *db, const struct db_stmt *stmt, const char *const *params)
{
    if (db->scope_lost)
        return AIDC_EUNAVAIL;
    if (!db->up || !db->in_tx || db->autoctx) {
        log_error("db_queue(%s) outside a transaction", stmt->name);
        return AIDC_EINTERNAL;
    }
    if (db->npending >= MAX_PENDING - 4) {
        int e = dbint_sync_and_drain(db, NULL);
        if (e)
            return e;
    }
    return dbint_send_stmt(db, stmt, params, PEND_CHECK);
}

/* End a read-only scope: nothing was opened on the server. */
static bool end_autoctx(struct db *db)
{
    if (!db->autoctx)
        return false;
    db->in_tx = db->autoctx = false;
    return true;
}

int db_commit(struct db *db)
{
    prefetch_clear(db); /* kept answers belong to the scope */
    db->reopen = false; /* queued statements of an unanswered batch are gone too */
    if (db->scope_lost) {
        db->scope_lost = false;
        db->in_tx = false;
        return AIDC_EUNAVAIL; /* the transaction died with its connection */
    }
    if (!db->in_tx || end_autoctx(db))
        return 0;
    if (!db->up) {
        db->in_tx = false;
        return AIDC_EUNAVAIL;
    }
    int e;
    if (db->tx_failed) {
        e = db->tx_err ? db->tx_err : AIDC_EINTERNAL;
        db_rollback(db);
        return e;
    }
    e = dbint_send_stmt(db, &st_commit, NULL, PEND_CHECK);
    if (!e)
        e = dbint_sync_and_drain(db, NULL);
    if (e && db->up) {
        /* A failed queued statement aborted the transaction: COMMIT became a
         * no-op rollback on the server, but a pipeline abort may leave it open. */
        db->in_tx = true;
        db->tx_failed = true;
        db_rollback(db);
    }
    db->in_tx = false;
    return e;
}

void db_commit_nowait(struct db *db)
{
    if (db->txpool) {
        /* A pooler may hand the server to another client at the answer of the
         * COMMIT: never leave a second batch riding behind it. */
        (void)db_commit(db);
        return;
    }
    prefetch_clear(db);
    db->scope_lost = false;
    db->reopen = false;
    if (!db->in_tx || end_autoctx(db))
        return;
    if (!db->up) {
        db->in_tx = false;
        return;
    }
    if (db->tx_failed) {
        db_rollback(db);
        return;
    }
    db->in_tx = false;
    /* The answers are read (and errors logged) by the next use of db. */
    for (int i = 0; i < db->npending; i++)
        if (db->pending[i] == PEND_CHECK || db->pending[i] == PEND_CTX)
            db->pending[i] = PEND_LAX;
    if (dbint_send_stmt(db, &st_commit, NULL, PEND_LAX) == 0 &&
        (!PQpipelineSync(db->conn) || !push(db, PEND_SYNC)))
        dbint_conn_lost(db);
}

void db_rollback(struct db *db)
{
    prefetch_clear(db);
    db->scope_lost = false;
    db->reopen = false;
    if (end_autoctx(db))
        return;
    if (!db->in_tx || !db->up) {
        db->in_tx = false;
        return;
    }
    db->in_tx = false;
    db->tx_failed = false;
    for (int i = 0; i < db->npending; i++)
        if (db->pending[i] != PEND_SYNC && db->pending[i] != PEND_PREP)
            db->pending[i] = PEND_LAX;
    if (dbint_send_stmt(db, &st_rollback, NULL, PEND_LAX) == 0) {
        if (!PQpipelineSync(db->conn) || !push(db, PEND_SYNC))
            dbint_conn_lost(db);
        else {
            db->round_trips++;
            (void)dbint_drain(db, NULL); /* keep the connection idle between requests */
        }
    }
}

int db_prepare_all(struct db *db)
{
    int e = db->txpool ? 0 : dbint_ensure_up(db);
    for (size_t m = 0; !e && !db->txpool && (m == 0 || db_registry[m - 1]); m++) {
        const struct db_stmt *const *list = m == 0 ? core_stmts : db_registry[m - 1];
        for (size_t i = 0; !e && list[i]; i++)
            if (!ptrset_has(&db->prepared, list[i]))
                e = !send_prepare(db, list[i])        ? AIDC_EINTERNAL
                    : db->npending >= MAX_PENDING - 2 ? dbint_sync_and_drain(db, NULL)
                                                      : 0;
    }
    if (!e && db->npending)
        e = dbint_sync_and_drain(db, NULL);
    return e;
}
