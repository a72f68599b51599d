/* context.c - the statements that open a request's scope (see context.h). */
#include "context.h"

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
#define CTX_CHECK(u, v, t, j, ep)                                                                \
    " e.v, " u "::uuid IS NULL OR e.v = " ep "::bigint"                                          \
    " OR (EXISTS (SELECT 1 FROM users WHERE id = " u "::uuid"                                    \
    "     AND auth_version = " v "::bigint AND NOT disabled)"                                    \
    " AND (" t "::uuid IS NULL OR EXISTS (SELECT 1 FROM api_tokens WHERE id = " t "::uuid"        \
    "     AND revoked_at IS NULL AND expires_at > now()))"                                       \
    " AND (" j "::uuid IS NULL OR NOT EXISTS (SELECT 1 FROM revoked_sessions WHERE jti = " j      \
    "     ::uuid)))"                                                                             \
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
    " set_config('statement_timeout', $13, true), set_config('jit', 'off', true),"
    CTX_CHECK("$7", "$8", "$9", "$10", "$11"),
    NCTX + 1};

/* Reads need neither the tenants one administers nor those one submits to. */
const struct db_stmt db_ctx_read_stmt = {
    "aidc_ctx_read",
    "SELECT set_config('aidc.user_id', $1, true), set_config('aidc.roles', $2, true),"
    " set_config('aidc.all', $3, true), set_config('aidc.read_tenants', $4, true),"
    " set_config('aidc.own_jobs_tenants', $10, true),"
    " set_config('statement_timeout', $11, true), set_config('jit', 'off', true),"
    CTX_CHECK("$5", "$6", "$7", "$8", "$9"),
    NCTX - 1};
