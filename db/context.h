/*
 * context.h - the context statement db.c sends at the start of every request
 * scope: the actor and its tenants as transaction-local settings that the
 * row-level security policies read, and whether the actor is still current.
 */
#ifndef AIDC_DB_CONTEXT_H
#define AIDC_DB_CONTEXT_H

#include "db.h"

#define NCTX 12 /* parameters of the context statement, before the statement timeout */

/* Parameters $1..$12 (see db_begin), $13 the statement timeout in ms. */
extern const struct db_stmt db_ctx_stmt;
/* For reads: $1..$4, $5..$9 the check, $10 the own-jobs tenants, $11 the statement timeout. */
extern const struct db_stmt db_ctx_read_stmt;
/* The same without the statement timeout, for a connection whose session has it (and JIT off). */
extern const struct db_stmt db_ctx_session_stmt;
extern const struct db_stmt db_ctx_read_session_stmt;
/* A read's settings for the session, not the transaction (readctx.h): $1..$4, $5 own jobs. */
extern const struct db_stmt db_ctx_keep_stmt;

#endif
