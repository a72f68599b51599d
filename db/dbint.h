/*
 * dbint.h - what db.c shares with db/dbwait.c (LISTEN and NOTIFY): the
 * connection's state and the helpers that keep its invariant (db.c's head).
 * Not for the rest of aidc, which sees struct db through db.h only.
 */
#ifndef AIDC_DB_DBINT_H
#define AIDC_DB_DBINT_H

#include "context.h"
#include "db.h"

#include "../lib/ptrset.h"

#include <libpq-fe.h>
#include <stdbool.h>

enum pend_kind {
    PEND_CHECK, /* a queued statement: errors matter to the transaction */
    PEND_WANT,  /* the statement whose result the caller is waiting for */
    PEND_LAX,   /* a statement nobody waits for: errors are only logged */
    PEND_SYNC,  /* a Sync */
    PEND_CTX,   /* the context statement: its row says whether the actor is current */
    PEND_PREP,  /* a Prepare sent just before the statement's first use on this connection:
                   its errors count as that statement's (the next entry) */
    PEND_KEEP,  /* a prefetched statement (prefetch.h): its answer is kept; errors as CHECK */
};

#define MAX_PENDING  64
#define MAX_CHANNELS 4
#define MAX_KEPT     4

/* A prefetched statement of the open transaction (prefetch.h). */
struct db_kept {
    const struct db_stmt *stmt; /* NULL: taken, or never used */
    char **params;              /* copies of its parameters; NULL ones are SQL NULL */
    PGresult *r;                /* its answer, once read */
    bool sent;                  /* in flight: the next drain reads its answer */
};

struct readctx;

struct db {
    PGconn *conn;
    char *url;
    char *appname;
    bool up;
    bool in_tx;          /* a request scope is open (a transaction, or autoctx) */
    bool autoctx;        /* read-only scope: no BEGIN, the context goes with each statement */
    bool tx_failed;      /* a statement of the open transaction failed */
    int ctx_state;       /* enum db_ctx_state of the open scope */
    long long ctx_epoch; /* aidc_auth_epoch the scope's reads were made at */
    long long ctx_found_epoch; /* ... and seen by its last context statement */
    long long ctx_need_epoch; /* db_ctx.remembered_at of the open scope, or -1 */
    bool ctx_actor_stale;     /* the actor's own check failed in the open scope */
    char *ctxp[NCTX];
    int tx_err; /* ...with this code */
    bool connected_once;
    bool scope_lost; /* the connection broke inside a transaction: it is gone */
    bool reopen;     /* send BEGIN and the context again on the next connection */
    int batches;     /* round trips answered in the open scope */
    unsigned long round_trips; /* waits for answers, ever (db_round_trips) */
    int statement_timeout_ms;
    char timeout_param[16]; /* statement_timeout_ms as text, for the context */
    bool txpool;            /* behind a transaction pooler: unnamed statements, no session state */
    unsigned generation;    /* connections made so far: a new one lost session locks */
    unsigned bound;         /* db_bind_session: only this connection may serve */
    enum db_pool pool;      /* what it serves, for /metrics */
    bool busy;
    char *channels[MAX_CHANNELS]; /* LISTENed on every new connection */
    int nchannels;
    /* since db_notified_only: the first payload taken, and whether another came
     * (or a new connection, which may have missed some) */
    char note[16];
    unsigned notes;
    bool note_mixed;
    double next_attempt; /* clock_now_ms: no connect before it (after a failed one) */
    unsigned long connects_seen; /* its pool's successful connects before its last failed one */
    enum pend_kind pending[MAX_PENDING];
    const struct db_stmt *pend_stmt[MAX_PENDING]; /* PEND_PREP: which statement */
    int npending;
    unsigned char pend_kept[MAX_PENDING]; /* PEND_KEEP: which kept slot */
    struct db_kept kept[MAX_KEPT];
    int nkept;
    struct ptrset prepared; /* statements prepared on this connection */
    struct readctx *readctx; /* readctx.c: the session's read context, the wrapped reads */
    struct db_error last;
};

/* Connect if not connected; reopen a transaction that had not started yet. */
int dbint_ensure_up(struct db *db);
/* Read the answers to everything pending (the PEND_WANT one through *want). */
int dbint_drain(struct db *db, PGresult **want);
/* Log, drop the connection: AIDC_EUNAVAIL. */
int dbint_conn_lost(struct db *db);
void dbint_set_error(struct db *db, const PGresult *r, const char *fallback);
void dbint_drop_conn(struct db *db);
/* Send stmt (prepared at its first use on the connection) as pending entry k. */
int dbint_send_stmt(struct db *db, const struct db_stmt *stmt, const char *const *params,
                    enum pend_kind k);
/* Sync, then read every answer (dbint_drain). */
int dbint_sync_and_drain(struct db *db, PGresult **want);
/* Send the open scope's context statement (PEND_CTX). */
int dbint_send_ctx(struct db *db);

#endif
