/*
 * auth.h - who is asking: credentials to struct actor.
 *
 * Credentials, in order of precedence: `Authorization: Bearer <token>` (an
 * API token "aidc_..." or a session JWT), else the `aidc_session` cookie
 * (a session JWT; mutating requests must then carry X-Requested-With, see
 * server/dispatch.c). The actor is loaded fresh from the database on every
 * request, so disabling a user, suspending a tenant, revoking a token or
 * logging out takes effect at the next request, on every replica.
 */
#ifndef AIDC_AUTH_H
#define AIDC_AUTH_H

#include "credential.h"
#include "request.h"

/*
 * Authenticate rq into rq->actor. Returns 0 (rq->actor.authenticated tells
 * whether credentials were given), AIDC_EFORBIDDEN with *refusal (a 401 or
 * 403 problem) when the credentials are refused, or AIDC_EUNAVAIL.
 */
int auth_authenticate(struct req *rq, enum problem *refusal);

/*
 * Whether the actor may speak of node: any node, unless its token is bound to
 * one (api/tokens.c); then only that one (host names compare without case).
 */
bool auth_node_allowed(const struct actor *a, const char *node);

/* Scope bits as a jansson array of names (new reference). */
json_t *auth_scopes_json(unsigned scopes);
/* Parse a scope name; 0 if unknown. */
unsigned auth_scope_parse(const char *name);
/* "tenant_admin" / "member" / "viewer" for a tenant role. */
const char *auth_tenant_role_name(int role);
/* Parse a tenant role name; TR_NONE if unknown. */
int auth_tenant_role_parse(const char *name);
/* Parse a global role name; 0 if unknown. */
unsigned auth_global_role_parse(const char *name);

#endif
