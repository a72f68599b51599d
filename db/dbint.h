/*
 * dbint.h (db) - what db.c and context.c share and nobody else sees: the
 * connection's state, and the pipeline primitives the one-statement read
 * (context.c) is sent with.
 */
#ifndef AIDC_DB_DBINT_H
#define AIDC_DB_DBINT_H

#include "context.h"

#include <time.h>

enum pend_kind {
    PEND_CHECK,   /* a queued statement: errors matter to the transaction */
    PEND_WANT,    /* the statement whose result the caller is waiting for */
    PEND_LAX,     /* a statement nobody waits for: errors are only logged */
    PEND_SYNC,    /* a Sync */
    PEND_CTX,     /* the context statement: its row says whether the actor is current */
    PEND_WANTCTX, /* PEND_WANT with the context folded in (context.h) */
};

#define MAX_PENDING  64
#define MAX_CHANNELS 4

struct db {
    PGconn *conn;
    char *url;
    char *appname;
    bool up;
    bool in_tx;          /* a request scope is open (a transaction, or autoctx) */
    bool autoctx;        /* read-only scope: no BEGIN, the context goes with each statement */
    bool tx_failed;      /* a statement of the open transaction failed */
    int ctx_state;       /* enum db_ctx_state of the open scope */
    long long ctx_epoch; /* aidc_auth_epoch seen by the last context statement */
    char *ctxp[NCTX];
    struct db_ctx_wraps *wraps; /* statements with a prepared one-statement read form */
    int tx_err;                 /* ...with this code */
    bool connected_once;
    bool scope_lost; /* the connection broke inside a transaction: it is gone */
    bool reopen;     /* send BEGIN and the context again on the next connection */
    int batches;     /* round trips answered in the open scope */
    int statement_timeout_ms;
    char timeout_param[16]; /* statement_timeout_ms as text, for the context */
    bool txpool;            /* behind a transaction pooler: unnamed statements, no session state */
    unsigned generation;    /* connections made so far: a new one lost session locks */
    unsigned bound;         /* db_bind_session: only this connection may serve */
    enum db_pool pool;      /* what it serves, for /metrics */
    bool busy;
    char *channels[MAX_CHANNELS]; /* LISTENed on every new connection */
    int nchannels;
    time_t next_attempt;
    enum pend_kind pending[MAX_PENDING];
    int npending;
    struct db_error last;
};

/* Note that the server will answer one more thing (false: too many in flight). */
bool db_push(struct db *db, enum pend_kind k);
/* Send stmt (prepared, or its text behind a transaction pooler); its answer is pending as k. */
int db_send_stmt(struct db *db, const struct db_stmt *stmt, const char *const *params,
                 enum pend_kind k);
/* Sync and read every pending answer (the PEND_WANT one into *want). */
int db_sync_drain(struct db *db, PGresult **want);
/* The context statement of the open scope. */
int db_send_ctx(struct db *db);
/* db_ctx_read_stmt's parameters, from the open scope, into p[0..NCTX-2]. */
void db_read_ctx_params(const struct db *db, const char **p);
/* A read in a read scope: the context and stmt, in one statement where it can be. */
int db_send_read(struct db *db, const struct db_stmt *stmt, const char *const *params);

#endif
