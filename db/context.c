/* context.c - the statements that open a request's scope (see context.h). */
#include "context.h"

/*
 * Whether the actor is still what the server believes, in the same breath as
 * the context (the last column says so): first the cheap test - nothing
 * changed anywhere since it was found current (same auth epoch) -, and only
 * if something did, the actor's own: same users.auth_version (roles,
 * memberships, suspension, password, disabling), token not revoked or
 * expired, session not logged out (aidc_actor_current, 0039: a function, so
 * that the statement does not set up those three lookups every time).
 */
#define CTX_CHECK(u, v, t, j, ep)                                                                \
    " e.v, " u "::uuid IS NULL OR e.v = " ep "::bigint"                                          \
    " OR aidc_actor_current(" u "::uuid, " v "::bigint, " t "::uuid, " j "::uuid)"                \
    " FROM aidc_auth_epoch e"

/* The actor and its tenants; then, where needed, the session's own settings. */
#define CTX_SET                                                                                    \
    "SELECT set_config('aidc.user_id', $1, true), set_config('aidc.roles', $2, true),"             \
    " set_config('aidc.all', $3, true), set_config('aidc.read_tenants', $4, true),"
#define CTX_SET_WRITE                                                                              \
    " set_config('aidc.admin_tenants', $5, true), set_config('aidc.member_tenants', $6, true),"    \
    " set_config('aidc.own_jobs_tenants', $12, true),"
/*
 * Behind a transaction pooler the statement timeout and JIT travel with the
 * context as transaction-local settings: a session SET would stay with
 * whichever server connection ran it (and reach other clients), and a new one
 * would not have it. On a connection of its own the session has them from
 * its start (db.c), and setting them again in every transaction cost about a
 * seventh of the context statement (pgbench, docs/performance.md).
 */
#define CTX_SET_TX(t)                                                                              \
    " set_config('statement_timeout', " t ", true), set_config('jit', 'off', true),"

const struct db_stmt db_ctx_stmt = {
    "aidc_ctx", CTX_SET CTX_SET_WRITE CTX_SET_TX("$13") CTX_CHECK("$7", "$8", "$9", "$10", "$11"),
    NCTX + 1};
const struct db_stmt db_ctx_session_stmt = {
    "aidc_ctx_s", CTX_SET CTX_SET_WRITE CTX_CHECK("$7", "$8", "$9", "$10", "$11"), NCTX};

/* Reads need neither the tenants one administers nor those one submits to. */
#define CTX_SET_READ " set_config('aidc.own_jobs_tenants', $10, true),"
const struct db_stmt db_ctx_read_stmt = {
    "aidc_ctx_read", CTX_SET CTX_SET_READ CTX_SET_TX("$11") CTX_CHECK("$5", "$6", "$7", "$8", "$9"),
    NCTX - 1};
const struct db_stmt db_ctx_read_session_stmt = {
    "aidc_ctx_read_s", CTX_SET CTX_SET_READ CTX_CHECK("$5", "$6", "$7", "$8", "$9"), NCTX - 2};

/* A read's settings kept in the session (readctx.c): $1 user, $2 roles, $3 all, $4 the tenants
 * it reads, $5 those where it reads its own jobs only. Not transaction-local: they outlive the
 * read, for the next read of the same actor on this connection. $6: the tag every read's rows
 * carry back, which says they were read under this connection's own settings. */
const struct db_stmt db_ctx_keep_stmt = {
    "aidc_ctx_keep",
    "SELECT set_config('aidc.user_id', $1, false), set_config('aidc.roles', $2, false),"
    " set_config('aidc.all', $3, false), set_config('aidc.read_tenants', $4, false),"
    " set_config('aidc.own_jobs_tenants', $5, false), set_config('aidc.read_tag', $6, false)",
    6};
