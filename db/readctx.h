/*
 * readctx.h - a read in one statement (db.c's read scope, on a connection of
 * its own; behind a transaction pooler the two-statement form stays).
 *
 * A read scope used to send two statements per read: the context (the actor
 * and its tenants as transaction-local settings, and whether the actor is
 * still current) and the query. The second statement's protocol and executor
 * work was a fifth of PostgreSQL's CPU per authenticated GET
 * (docs/performance.md). Here the context is kept in the session instead -
 * set_config(..., false), sent only when the next read's actor or tenants
 * differ from what the session holds - and the query is sent wrapped so that
 * its rows carry aidc_auth_epoch, read in the query's own snapshot. Rows whose
 * epoch is the actor's own were read for a current actor, as the context
 * statement's cheap test says; no rows, or another epoch, and the context
 * statement runs after all (its full check; an actor current afterwards was
 * current before, as changes to an actor only move forward).
 *
 * What the session holds is known at all times or assumed unknown: a new
 * session may start with settings of its own (a role's or database's
 * defaults), so its first read sets every one; a read that fails may have
 * rolled the settings back, so the next one sets them again; and a statement
 * outside any scope, which must see no actor at all, has them cleared first
 * (readctx_clear). Transactions set every setting of their own as
 * transaction-local values, above the session's. The settings go with a tag,
 * random per connection and new at each setting, that every row read carries
 * back: rows read under settings the connection did not make (a transaction
 * pooler that AIDC_DB_POOL_MODE does not name, handing it another client's
 * server session) are never answered, and the read is made again under its
 * own. The epoch a read answers with (db_ctx_epoch) is its rows', not the
 * later one of a check that followed them: what a request remembers of the
 * read must not hold past what the read saw.
 */
#ifndef AIDC_DB_READCTX_H
#define AIDC_DB_READCTX_H

#include "dbint.h"

/* What readctx_query answers for a statement it does not read in one: the caller
 * sends the context statement and stmt as two (no error; nothing was sent). */
#define READCTX_IN_TWO 1
/* Run stmt in the open read scope of db (not behind a pooler): its rows in *r, or
 * READCTX_IN_TWO. */
int readctx_query(struct db *db, const struct db_stmt *stmt, const char *const *params,
                  PGresult **r);
/* Queue what makes the session hold no actor, if it may hold one (*sent), in the batch
 * of the statement outside any scope that needs it: with it, or not at all. */
int readctx_clear(struct db *db, bool *sent);
/* That batch was answered (ok) or failed: what the session holds is then known, or not. */
void readctx_cleared(struct db *db, bool ok);
/* The connection is gone: a new session holds nothing. */
void readctx_conn_lost(struct db *db);
/* db_close: free what was kept. */
void readctx_free(struct db *db);

#endif
