/* auth.c - credentials to actor (see auth.h). */
#include "auth.h"

#include "../db/identity.h"
#include "authcache.h"
#include "credential.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "session.h"
#include "token.h"
#include "../lib/xalloc.h"

#include <microhttpd.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char *const scope_names[] = {"jobs:read",    "jobs:write",   "images:read",
                                          "images:write", "usage:read",   "billing:write",
                                          "audit:read",   "audit:ingest", "admin",
                                          "gpu-faults:write"};
#define NSCOPES (sizeof scope_names / sizeof scope_names[0])

unsigned auth_scope_parse(const char *name)
{
    for (unsigned i = 0; i < NSCOPES; i++)
        if (strcmp(name, scope_names[i]) == 0)
            return 1u << i;
    return 0;
}

json_t *auth_scopes_json(unsigned scopes)
{
    json_t *a = json_array();
    for (unsigned i = 0; a && i < NSCOPES; i++)
        if (scopes & (1u << i))
            json_array_append_new(a, json_string(scope_names[i]));
    return a;
}

const char *auth_tenant_role_name(int role)
{
    switch (role) {
    case TR_ADMIN: return "tenant_admin";
    case TR_MEMBER: return "member";
    case TR_VIEWER: return "viewer";
    default: return "none";
    }
}

int auth_tenant_role_parse(const char *name)
{
    for (int r = TR_VIEWER; r <= TR_ADMIN; r++)
        if (strcmp(name, auth_tenant_role_name(r)) == 0)
            return r;
    return TR_NONE;
}

unsigned auth_global_role_parse(const char *name)
{
    if (strcmp(name, "platform_admin") == 0)
        return GR_PLATFORM_ADMIN;
    if (strcmp(name, "finance") == 0)
        return GR_FINANCE;
    if (strcmp(name, "auditor") == 0)
        return GR_AUDITOR;
    return 0;
}


/* Keep only the membership a tenant-bound token is bound to. */
static void narrow_to_token_tenant(struct actor *a)
{
    size_t keep = 0;
    for (size_t i = 0; i < a->nmemberships; i++) {
        if (strcmp(a->memberships[i].tenant_id, a->token_tenant) == 0) {
            struct membership m = a->memberships[i];
            a->memberships[i] = a->memberships[keep];
            a->memberships[keep++] = m;
        }
    }
    for (size_t i = keep; i < a->nmemberships; i++)
        free(a->memberships[i].slug);
    a->nmemberships = keep;
    a->roles = 0; /* a tenant token acts only inside its tenant */
}

static int refuse(enum problem *refusal, enum problem p)
{
    *refusal = p;
    return AIDC_EFORBIDDEN;
}

static enum problem status_problem(enum identity_status s, bool token)
{
    switch (s) {
    case IDENT_DISABLED: return PROBLEM_USER_DISABLED;
    case IDENT_REVOKED: return token ? PROBLEM_TOKEN_REVOKED : PROBLEM_SESSION_ENDED;
    case IDENT_EXPIRED: return PROBLEM_TOKEN_EXPIRED;
    default: return token ? PROBLEM_TOKEN_INVALID : PROBLEM_SESSION_INVALID;
    }
}

int auth_authenticate(struct req *rq, enum problem *refusal)
{
    struct actor *a = &rq->actor;
    const char *bearer = NULL;
    char *cookie_tok = NULL;
    int e = 0;
    enum identity_status st = IDENT_UNKNOWN;

    if (credential_from_headers(rq->authorization, rq->cookie, &bearer, &cookie_tok) != 0)
        return refuse(refusal, PROBLEM_AUTH_SCHEME);
    a->via_cookie = cookie_tok != NULL;
    if (!bearer || !*bearer) {
        free(cookie_tok);
        return 0; /* anonymous */
    }
    bool via_cookie = a->via_cookie;
    time_t now = time(NULL);
    char key[65];
    crypto_sha256_hex(bearer, strlen(bearer), key);
    if (!rq->no_auth_cache && authcache_get(key, now, a)) {
        a->via_cookie = via_cookie;
        a->from_cache = true;
        a->authenticated = true;
        free(cookie_tok);
        return 0; /* checked against the database with the request's own statements */
    }

    if (strncmp(bearer, TOKEN_PREFIX, strlen(TOKEN_PREFIX)) == 0) {
        if (!token_is_wellformed(bearer)) {
            e = refuse(refusal, PROBLEM_TOKEN_MALFORMED);
            goto out;
        }
        char hash[65];
        token_hash(bearer, hash);
        e = db_identity_token(rq->db, hash, a, &st);
        if (e)
            goto out;
        if (st != IDENT_OK) {
            e = refuse(refusal, status_problem(st, true));
            goto out;
        }
        if (a->token_tenant[0]) {
            narrow_to_token_tenant(a);
            if (a->nmemberships == 0) {
                e = refuse(refusal, PROBLEM_TOKEN_MEMBERSHIP_ENDED);
                goto out;
            }
            if (a->memberships[0].suspended) {
                e = refuse(refusal, PROBLEM_TOKEN_TENANT_SUSPENDED);
                goto out;
            }
        }
    } else {
        struct session_claims c;
        if (session_verify(bearer, time(NULL), &c) != 0) {
            e = refuse(refusal, PROBLEM_SESSION_EXPIRED);
            goto out;
        }
        e = db_identity_session(rq->db, c.sub, c.jti, c.epoch, a, &st);
        if (e)
            goto out;
        if (st != IDENT_OK) {
            e = refuse(refusal, status_problem(st, false));
            goto out;
        }
        a->session_expires = c.exp;
    }
    a->authenticated = true;
    memcpy(a->cache_key, key, sizeof key);
    authcache_put(key, a, now, a->via_token ? a->token_expires : a->session_expires);
out:
    if (e == AIDC_EFORBIDDEN) {
        /* keep who it was (for the audit event) but not as authenticated */
        a->authenticated = false;
    } else if (e && e != AIDC_EUNAVAIL) {
        log_error("authentication failed: %s", aidc_err_name(e));
    }
    free(cookie_tok);
    return e;
}

bool auth_node_allowed(const struct actor *a, const char *node)
{
    return !a->token_node[0] || (node && strcasecmp(node, a->token_node) == 0);
}
