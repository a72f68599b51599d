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

/*
 * A read in one statement. A read scope used to send the context statement and
 * then the query: two statements in one round trip, and PostgreSQL's protocol
 * work for the second (Bind, Describe, Execute, a snapshot) cost about as much
 * as the query itself. The wrapped form runs the context as a subquery that the
 * query is joined to LATERALly: PostgreSQL must produce the context's row (and
 * so run its set_config calls) before it runs the query, which refers to it,
 * so every row-level-security qual of the query reads the request's context.
 * The answer carries the context's check in its last columns; db_ctx_unwrap
 * takes them (and the placeholder row of an empty answer) away again.
 *
 *   SELECT q.*, c.epoch, c.current FROM (<context> OFFSET 0) c
 *   LEFT JOIN LATERAL (SELECT o.*, true AS row FROM (<query>) o
 *                      WHERE c.current IS NOT NULL OFFSET 0) q ON true
 *
 * The query's parameters stay $1..$n; the context's follow as $n+1..$n+11
 * (db_ctx_read_stmt's order). Only plain reads are wrapped: a statement that
 * writes, locks or is not a single SELECT keeps the two-statement form.
 */
#define DB_CTX_WRAP_EXTRA 3 /* columns the wrapper appends: row, epoch, current */

/* The wrapped SQL of stmt (free it), or NULL when stmt is not a plain read. */
char *db_ctx_wrap_sql(const struct db_stmt *stmt);
/* The prepared name of stmt's wrapped form: "c:" and its name. */
void db_ctx_wrap_name(const struct db_stmt *stmt, char *out, size_t outsz);
/* The answer as the unwrapped query would give it (r is consumed); NULL if out of memory. */
PGresult *db_ctx_unwrap(PGresult *r);

/* Which statements a connection has a prepared wrapped form of. */
enum db_ctx_wrap { DB_WRAP_UNKNOWN, DB_WRAP_READY, DB_WRAP_NO };
struct db_ctx_wraps;
struct db_ctx_wraps *db_ctx_wraps_new(void);
void db_ctx_wraps_free(struct db_ctx_wraps *w);
void db_ctx_wraps_clear(struct db_ctx_wraps *w); /* a new connection: nothing prepared */
enum db_ctx_wrap db_ctx_wraps_get(const struct db_ctx_wraps *w, const struct db_stmt *stmt);
void db_ctx_wraps_set(struct db_ctx_wraps *w, const struct db_stmt *stmt, enum db_ctx_wrap s);

#endif
