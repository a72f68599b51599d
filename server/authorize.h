/*
 * authorize.h - whether an actor may call a route: the one decision that the
 * dispatcher makes for every request and that api/approvals.c makes again,
 * for the approver and for the requester, when an approved operation runs.
 * Two copies of it would drift apart; so both call these functions.
 *
 * Pure: no database, no HTTP. The caller authenticates the actor and looks
 * up a tenant its memberships do not name (authorize_tenant_find says when).
 */
#ifndef AIDC_AUTHORIZE_H
#define AIDC_AUTHORIZE_H

#include "request.h"
#include "router.h"

#include <stdbool.h>

/* What of the request the decision reads, besides actor, route and tenant. */
struct authz_req {
    const char *method; /* GET and HEAD read; any other method changes something */
    bool portal_header; /* it carries X-Requested-With: aidc-portal (the CSRF rule) */
};

/* How an actor sees the tenant a route's {tenant} names. */
enum authorize_tenant {
    AUTHZ_TENANT_MEMBER, /* a member: t was filled from its membership */
    AUTHZ_TENANT_LOOKUP, /* a platform-wide role sees every tenant: the caller looks the
                          * tenant up and fills t (id, slug, suspended; role TR_NONE) */
    AUTHZ_TENANT_HIDDEN, /* neither: 404, as if the tenant did not exist */
};

/*
 * How a sees tenant slug. For a member, t gets the tenant's id, slug
 * (malloc'd), a's role there, whether it is suspended and whether a reads
 * only its own jobs there; t is left as it is otherwise.
 */
enum authorize_tenant authorize_tenant_find(const struct actor *a, const char *slug,
                                            struct tenant_ref *t);

/*
 * Whether a may call rt: 0, or AIDC_EFORBIDDEN with *refusal set (with
 * params from authorize_refusal_params). In this order: authentication
 * (unless rt is public), the CSRF rule of cookie sessions, machine-only
 * tokens, the token's scope, and when t is not NULL the role (global, or
 * the tenant role in t) and a suspended tenant. t NULL stops before the
 * tenant: the dispatcher asks so before it looks the tenant up, so that a
 * token without the scope learns nothing of which tenants exist. A t with
 * an empty id: the route names no tenant.
 */
int authorize_route(const struct actor *a, const struct route *rt, const struct tenant_ref *t,
                    const struct authz_req *r, enum problem *refusal);

/* The params of refusal p of rt in t (t may be NULL): new reference, or NULL. */
json_t *authorize_refusal_params(enum problem p, const struct route *rt,
                                 const struct tenant_ref *t);

#endif
