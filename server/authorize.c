/*
 * authorize.c - who may call a route (see authorize.h).
 *
 * The order of the checks is part of the contract (server/dispatch.c states
 * the whole pipeline): what the credential itself allows comes first, then
 * the tenant. Everything here reads only its arguments.
 */
#include "authorize.h"

#include "auth.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"

#include <stdio.h>
#include <string.h>

static bool is_read_method(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

enum authorize_tenant authorize_tenant_find(const struct actor *a, const char *slug,
                                            struct tenant_ref *t)
{
    for (size_t i = 0; i < a->nmemberships; i++) {
        const struct membership *m = &a->memberships[i];
        if (strcmp(m->slug, slug) != 0)
            continue;
        snprintf(t->id, sizeof t->id, "%s", m->tenant_id);
        t->slug = xstrdup(slug);
        t->role = m->role;
        t->suspended = m->suspended;
        /* a platform-wide role reads every tenant's jobs, its own tenant's too */
        t->own_jobs_only =
            m->role == TR_MEMBER && !m->members_see_all_jobs && !(a->roles & GR_ANY_GLOBAL);
        return AUTHZ_TENANT_MEMBER;
    }
    return (a->roles & GR_ANY_GLOBAL) ? AUTHZ_TENANT_LOOKUP : AUTHZ_TENANT_HIDDEN;
}

static int refuse(enum problem *refusal, enum problem p)
{
    *refusal = p;
    return AIDC_EFORBIDDEN;
}

static bool role_allows(const struct actor *a, const struct route *rt, const struct tenant_ref *t)
{
    if (a->roles & rt->global_roles)
        return true;
    if (t->id[0] && rt->tenant_role != TR_NONE && t->role >= rt->tenant_role)
        return true;
    return (rt->flags & RF_ANY_USER) != 0;
}

int authorize_route(const struct actor *a, const struct route *rt, const struct tenant_ref *t,
                    const struct authz_req *r, enum problem *refusal)
{
    if (rt->flags & RF_PUBLIC)
        return 0;
    if (!a->authenticated)
        return refuse(refusal, PROBLEM_AUTH_REQUIRED);
    /* a browser sends the cookie with any site's form; only the portal sends this header */
    if (a->via_cookie && !is_read_method(r->method) && !r->portal_header)
        return refuse(refusal, PROBLEM_PORTAL_HEADER);
    if (a->via_token && !rt->scope && !(a->scopes & ~(unsigned)SC_MACHINE))
        return refuse(refusal, PROBLEM_MACHINE_SCOPES_ONLY);
    if (a->via_token && rt->scope && !(a->scopes & rt->scope))
        return refuse(refusal, PROBLEM_SCOPE_MISSING);
    if (!t)
        return 0;
    if (!role_allows(a, rt, t))
        return refuse(refusal, PROBLEM_ROLE);
    /* platform admins act on a suspended tenant; the other global roles only read it */
    if (t->id[0] && t->suspended && !(a->roles & GR_PLATFORM_ADMIN) &&
        !(is_read_method(r->method) && (a->roles & GR_ANY_GLOBAL)))
        return refuse(refusal, PROBLEM_TENANT_SUSPENDED);
    return 0;
}

json_t *authorize_refusal_params(enum problem p, const struct route *rt, const struct tenant_ref *t)
{
    if (p == PROBLEM_SCOPE_MISSING) {
        json_t *need = auth_scopes_json(rt->scope);
        const char *name = json_string_value(json_array_get(need, 0));
        json_t *params = json_pack("{s:s}", "scope", name ? name : "required");
        json_decref(need);
        return params;
    }
    if (p == PROBLEM_TENANT_SUSPENDED && t && t->slug)
        return json_pack("{s:s}", "tenant", t->slug);
    return NULL;
}
