/*
 * db.h - one PostgreSQL connection, its prepared statements and transactions.
 *
 * A struct db belongs to exactly one thread (an HTTP worker or a background
 * worker); it is never shared. It connects lazily, prepares each statement of
 * the db/ modules at its first use on a connection, and reconnects by itself after a
 * failure (at most one attempt per second, so a dead database costs requests
 * nothing but a fast 503).
 *
 * The connection stays in libpq pipeline mode: statements whose result only
 * needs checking for errors (BEGIN, the tenant context, audit inserts, COMMIT
 * of a read-only transaction) are queued and travel with the next statement
 * whose result is needed, so a request transaction costs about one network
 * round trip per result the handler actually reads.
 *
 * Transactions carry the row-level-security context (db_ctx): who acts, with
 * which global roles, and which tenants it may read, administer or submit to.
 */
#ifndef AIDC_DB_H
#define AIDC_DB_H

#include <libpq-fe.h>
#include <stdbool.h>

/* A named prepared statement. Defined as a static const in its db/ module. */
struct db_stmt {
    const char *name;
    const char *sql;
    int nparams;
};

/* The row-level-security context of a transaction; NULL fields mean "none". */
struct db_ctx {
    const char *user_id;        /* acting user's UUID */
    const char *roles;          /* global roles, comma-separated (or "system") */
    const char *read_tenants;   /* tenant UUIDs the actor may read, comma-separated */
    const char *admin_tenants;  /* ... may administer (tenant_admin) */
    const char *member_tenants; /* ... may submit to (member or tenant_admin) */
    /* ... where the actor reads only its own jobs (a member, unless the tenant lets its
     * members see each other's: tenants.members_see_all_jobs) */
    const char *own_jobs_tenants;
    /* the actor as the server believes it is (NULL check_user: nothing to check) */
    const char *check_user;
    long long check_version; /* users.auth_version when the actor was loaded */
    long long check_epoch;   /* aidc_auth_epoch when it was last found current */
    const char *check_token; /* API token id, or NULL */
    const char *check_jti;   /* session id, or NULL */
    /* What the server remembered at this aidc_auth_epoch and used for the request (a
     * tenant resolved for a platform-wide role): a context that meets another epoch
     * is DB_CTX_STALE, whatever the actor's own check says. NULL: nothing. */
    const long long *remembered_at;
};

enum db_ctx_state {
    DB_CTX_UNKNOWN = 0, /* not answered yet */
    DB_CTX_CURRENT = 1, /* the actor is what the server believed */
    DB_CTX_STALE = 2,   /* it changed (or the credential ended): reload it */
};

/* What the last failed statement said; fields are empty when not known. */
struct db_error {
    char sqlstate[6];
    char constraint[64];
    char message[256];
};

struct db;

/* A lazily-connecting handle for url (nothing is sent yet). */
struct db *db_open(const char *url, const char *application_name);
void db_close(struct db *db);

/*
 * Connect if not connected. Returns 0, or
 * AIDC_EUNAVAIL when the database cannot be reached (retried at most once a
 * second; calls in between fail at once).
 */
int db_ensure(struct db *db);
/*
 * db_ensure, after looking whether the server closed an idle connection (a
 * poll of its socket): for connections whose server may go away between two
 * uses, where finding out at the first statement would cost the request.
 */
int db_ensure_alive(struct db *db);
/*
 * LISTEN on channel (an identifier: [a-z_]) on every connection db makes
 * from now on. For background workers woken by NOTIFY.
 */
void db_listen(struct db *db, const char *channel);
/*
 * Wait up to timeout_ms for a notification on the channels db listens on, or
 * for wake_fd (if >= 0) to become readable. Connects first if needed.
 * Returns 1 when notified (all pending notifications are consumed), 0 on
 * timeout or wake-up, AIDC_EUNAVAIL when the database is unreachable.
 */
int db_wait(struct db *db, int timeout_ms, int wake_fd);
/*
 * Whether no notification db_wait took since the last call carried another
 * payload than this one (none at all counts), with no new connection made
 * meanwhile (one may have missed some). Starts over.
 */
bool db_notified_only(struct db *db, const char *payload);
/* statement_timeout of the sessions opened from now on (0 = server default). */
void db_set_statement_timeout(struct db *db, int ms);
/*
 * Behind a transaction pooler (PgBouncer pool_mode=transaction): statements
 * go unnamed with their text (no prepared statement lives on a server
 * connection we may not get back), and no session setting is made beyond
 * those the pooler keeps per client. Call before the first use.
 */
void db_set_txpool(struct db *db, bool on);
/* Which connection this is (0 while down): a change means session state -
 * advisory locks, LISTENs - was lost with the old one. */
unsigned db_generation(const struct db *db);
/*
 * Bind db to connection `generation` (0 unbinds): while bound, a lost
 * connection is not replaced under the caller - every statement fails with
 * AIDC_EUNAVAIL until it unbinds. A worker binds while it leads: its round
 * must not go on, on a new connection (after a failover, on the new primary),
 * without the session lock that made it the leader.
 */
void db_bind_session(struct db *db, unsigned generation);
/* True after a successful db_ensure until the connection is found broken. */
bool db_is_up(const struct db *db);

/*
 * Open a request scope with ctx. Normally a transaction (BEGIN and the context
 * are queued: sent with the next query). With readonly, no transaction is
 * opened: the context travels with each statement, which runs in the implicit
 * transaction of its pipeline batch - one round trip per read.
 */
int db_begin(struct db *db, const struct db_ctx *ctx, bool readonly);
/*
 * Whether the scope's actor is current (enum db_ctx_state), asking the
 * database if no statement has answered it yet.
 */
int db_ctx_verify(struct db *db);
/* Whether a DB_CTX_STALE answer came only from db_ctx.remembered_at: the actor
 * itself was found current (at db_ctx_found_epoch), what was remembered was not. */
bool db_ctx_only_pin_moved(const struct db *db);
/* The platform's auth epoch the scope's reads were made at (-1: unknown): what a
 * request remembers of what it read holds from there (db/readctx.h). */
long long db_ctx_epoch(const struct db *db);
/* The latest epoch at which the scope's actor was found current (-1: unknown): where
 * the actor is remembered when only a pin moved. At least db_ctx_epoch. */
long long db_ctx_found_epoch(const struct db *db);
/* Commit and wait for the outcome: 0, or the error that ended the transaction. */
int db_commit(struct db *db);
/* Commit without waiting (read-only work; a failure is only logged). */
void db_commit_nowait(struct db *db);
/* Roll back if a transaction is open. */
void db_rollback(struct db *db);
bool db_in_tx(const struct db *db);
/*
 * The round trips db has waited for since it was opened: every batch sent
 * with a Sync whose answers it read before going on. A new connection's
 * handshake and settings are not counted, nor a commit that did not wait.
 * The access log shows a request's share (docs/operations.md).
 */
unsigned long db_round_trips(const struct db *db);

/*
 * Run stmt with params (nparams of the statement; NULL = SQL NULL) and wait for
 * its result. Outside a transaction it runs alone. Returns the result (the
 * caller PQclear()s it) or NULL with *err set (AIDC_ECONFLICT for a unique or
 * foreign-key violation, AIDC_EINVAL for bad input values, AIDC_EFORBIDDEN for
 * a row-level-security refusal, AIDC_ERETRY for serialization failures,
 * AIDC_EUNAVAIL when the connection is lost, AIDC_EINTERNAL otherwise).
 */
PGresult *db_query(struct db *db, const struct db_stmt *stmt, const char *const *params, int *err);
/*
 * Send stmt with params now, inside an open transaction, to travel with the next
 * statement whose answer is awaited; the db_query of the same statement and
 * parameters later in the transaction takes the answer without a round trip of
 * its own (db/prefetch.h). The answer is as of that round trip: prefetch only
 * what the transaction does not write before reading it. Its error, if any,
 * fails the transaction as a queued statement's would. Elsewhere (no
 * transaction, a read scope, a connection not up) or when it cannot be sent,
 * nothing is kept and the query runs when asked.
 */
void db_prefetch(struct db *db, const struct db_stmt *stmt, const char *const *params);
/* Like db_query, for statements returning nothing of interest: 0 or an error. */
int db_exec(struct db *db, const struct db_stmt *stmt, const char *const *params);
/*
 * Run stmt - a ROLLBACK TO SAVEPOINT - even after a statement of the
 * transaction failed (which makes every other statement fail at once); when
 * it succeeds the transaction is usable again.
 */
int db_exec_recover(struct db *db, const struct db_stmt *stmt);
/*
 * Queue stmt without waiting; its error (if any) surfaces at the next
 * db_query/db_commit of the transaction. Only valid inside a transaction.
 */
int db_queue(struct db *db, const struct db_stmt *stmt, const char *const *params);

/* Details of the most recent failure (valid until the next call). */
const struct db_error *db_last_error(const struct db *db);

/* Number of reconnects done by all connections since start (for /metrics). */
unsigned long db_reconnect_count(void);
/* What a connection serves (/metrics: aidc_db_connections{pool}). */
enum db_pool { DB_POOL_WORKER, DB_POOL_PRIMARY, DB_POOL_READ, DB_POOL_COUNT };
void db_set_pool(struct db *db, enum db_pool pool);
/* Mark db as serving a request now (aidc_db_connections_busy). */
void db_set_busy(struct db *db, bool busy);
long db_busy_count(enum db_pool pool);
/* Connections open now, over all threads (for /metrics). */
long db_connection_count(enum db_pool pool);

/*
 * Every prepared statement of every db/ module, NULL-terminated lists (defined
 * in db/registry.c). A connection prepares each at its first use there; a
 * statement that does not prepare fails that use (logged: "cannot prepare").
 */
extern const struct db_stmt *const *const db_registry[];
/*
 * Connect and prepare every statement of db_registry not prepared yet: 0, or the
 * error of the first that the schema refuses (logged with its name). For the
 * test that every statement fits the migrated schema (db/test_statements).
 */
int db_prepare_all(struct db *db);

#endif
