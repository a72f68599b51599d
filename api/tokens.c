/*
 * tokens.c - API tokens for CI pipelines and agents.
 *
 * A token never has more rights than its creator: it carries only scopes its
 * creator's roles use (scopes_allowed below), a token created with a token
 * only scopes its creator has, and a token bound to a tenant acts only inside
 * that tenant with its owner's role there. A machine token (audit:ingest,
 * gpu-faults:write) may be bound to a node: it then writes only records and
 * fault reports of that node.
 */
#include "tokens.h"

#include "../backends/backend.h"
#include "../db/tokens.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/auth.h"
#include "../server/token.h"
#include "../server/validate.h"
#include "paging.h"

#include <microhttpd.h>
#include <string.h>

#define TOKEN_DEFAULT_DAYS 90
#define TOKEN_MAX_DAYS     730

static bool is_scope(const char *s)
{
    return auth_scope_parse(s) != 0;
}

static const struct vfield create_fields[] = {
    {"name", V_STRING, V_REQUIRED, 1, 100, NULL, 0},
    {"scopes", V_STRING_ARRAY, V_REQUIRED, 1, 10, is_scope, PROBLEM_TOKEN_SCOPE_UNKNOWN},
    {"expires_in_days", V_INT, 0, 1, TOKEN_MAX_DAYS, NULL, 0},
    {"tenant", V_STRING, V_NULLABLE, 0, 0, validate_slug, PROBLEM_V_TENANT},
    {"node", V_STRING, V_NULLABLE, 1, 253, backend_node_name_valid, PROBLEM_V_HOST},
};

static const struct membership *membership_of(const struct actor *a, const char *slug)
{
    for (size_t i = 0; i < a->nmemberships; i++)
        if (strcmp(a->memberships[i].slug, slug) == 0)
            return &a->memberships[i];
    return NULL;
}

/* Whether a has a membership of at least role (in the one tenant bound to, if any). */
static bool has_tenant_role(const struct actor *a, const struct membership *bound, int role)
{
    if (bound)
        return bound->role >= role;
    for (size_t i = 0; i < a->nmemberships; i++)
        if (a->memberships[i].role >= role)
            return true;
    return false;
}

/*
 * The scopes a's roles allow a new token (bound to the tenant of membership
 * bound, or NULL) to carry. API.md: scopes narrow the owner's rights, so a
 * token carries no scope its creator's roles do not use. Read off the route
 * table (api/routes.c), leaving out the routes every user has for their own
 * account (tokens, password, sessions), which need admin:
 *   - jobs:read, jobs:write, images:read, images:write, usage:read: every user.
 *     Their routes check the role in the tenant on every request, and a
 *     user's memberships come and go (a CI token made before joining).
 *   - admin: platform_admin, auditor (reads the users) or tenant_admin of a
 *     tenant (its members, projects, project quotas).
 *   - billing:write: platform_admin or finance.
 *   - audit:read: platform_admin or auditor.
 *   - audit:ingest, gpu-faults:write: platform_admin (a node agent's and
 *     Alertmanager's tokens are a platform admin's, narrowed).
 * A token bound to a tenant acts without global roles and with its owner's
 * role there only: so only that role counts for it.
 */
static unsigned scopes_allowed(const struct actor *a, const struct membership *bound)
{
    unsigned roles = bound ? 0 : a->roles;
    unsigned ok = SC_JOBS_READ | SC_JOBS_WRITE | SC_IMAGES_READ | SC_IMAGES_WRITE | SC_USAGE_READ;
    if ((roles & (GR_PLATFORM_ADMIN | GR_AUDITOR)) || has_tenant_role(a, bound, TR_ADMIN))
        ok |= SC_ADMIN;
    if (roles & (GR_PLATFORM_ADMIN | GR_FINANCE))
        ok |= SC_BILLING_WRITE;
    if (roles & (GR_PLATFORM_ADMIN | GR_AUDITOR))
        ok |= SC_AUDIT_READ;
    if (roles & GR_PLATFORM_ADMIN)
        ok |= SC_AUDIT_INGEST | SC_GPU_FAULTS;
    return ok;
}

/* The 403 p naming the first (in canonical order) of the scopes in bits. */
static int scope_refused(struct resp *rs, enum problem p, unsigned bits)
{
    json_t *names = auth_scopes_json(bits);
    const char *first = json_string_value(json_array_get(names, 0));
    int e = api_problem(rs, p, json_pack("{s:s}", "scope", first ? first : ""));
    json_decref(names);
    return e;
}

int api_token_create(struct req *rq, struct resp *rs)
{
    if (!validate_object(rq->json, create_fields, sizeof create_fields / sizeof create_fields[0],
                         rs))
        return api_fail_fields(rs);
    json_t *scopes = json_object_get(rq->json, "scopes");
    unsigned bits = 0;
    size_t i;
    json_t *s;
    json_array_foreach(scopes, i, s) bits |= auth_scope_parse(json_string_value(s));
    if ((bits & ~rq->actor.scopes) != 0)
        return scope_refused(rs, PROBLEM_TOKEN_SCOPE_NOT_HELD, bits & ~rq->actor.scopes);
    const char *tenant = vstr(rq->json, "tenant");
    const struct membership *m = tenant ? membership_of(&rq->actor, tenant) : NULL;
    if (tenant && !m) {
        api_field_problem(rs, "tenant", PROBLEM_TOKEN_TENANT_NOT_MEMBER,
                          json_pack("{s:s}", "tenant", tenant));
        return api_fail_fields(rs);
    }
    if (rq->actor.token_tenant[0] && (!m || strcmp(m->tenant_id, rq->actor.token_tenant) != 0))
        return api_problem(rs, PROBLEM_TOKEN_BOUND_CREATE, NULL);
    unsigned beyond = bits & ~scopes_allowed(&rq->actor, m);
    if (beyond)
        return scope_refused(rs, PROBLEM_TOKEN_SCOPE_ROLE, beyond);
    const char *node = vstr(rq->json, "node");
    if (node && (bits & ~(unsigned)SC_MACHINE) != 0) {
        api_field_problem(rs, "node", PROBLEM_TOKEN_NODE_SCOPES, NULL);
        return api_fail_fields(rs);
    }
    json_t *days_j = json_object_get(rq->json, "expires_in_days");
    int days = days_j ? (int)json_integer_value(days_j) : TOKEN_DEFAULT_DAYS;

    struct sbuf csv = SBUF_INIT;
    json_t *canon = auth_scopes_json(bits);
    json_array_foreach(canon, i, s)
    {
        if (csv.len)
            sbuf_putc(&csv, ',');
        sbuf_puts(&csv, json_string_value(s));
    }
    json_decref(canon);
    char secret[TOKEN_LEN + 1], hash[65];
    json_t *out = NULL;
    int e = token_generate(secret, hash);
    const struct db_token_new t = {.user_id = rq->actor.user_id,
                                   .tenant_id = m ? m->tenant_id : NULL,
                                   .name = vstr(rq->json, "name"),
                                   .token_hash = hash,
                                   .scopes = sbuf_str(&csv),
                                   .expires_in_days = days,
                                   .parent_id = rq->actor.via_token ? rq->actor.token_id : NULL,
                                   .node = node};
    if (!e)
        e = db_token_create(rq->db, &t, &out);
    sbuf_free(&csv);
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_TOKEN_COLLISION, NULL);
    if (e)
        return e;
    resp_audit(rs, "token", json_string_value(json_object_get(out, "id")),
               json_pack("{s:O, s:O, s:O, s:O}", "name", json_object_get(out, "name"), "scopes",
                         json_object_get(out, "scopes"), "tenant", json_object_get(out, "tenant"),
                         "node", json_object_get(out, "node")));
    json_object_set_new(out, "token", json_string(secret));
    return resp_json(rs, MHD_HTTP_CREATED, out);
}

/* A tenant-bound token sees and manages only its own tenant's tokens. */
static const char *bound_tenant(const struct req *rq)
{
    return rq->actor.token_tenant[0] ? rq->actor.token_tenant : NULL;
}

int api_token_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse_keyed(rq, rs, &pg);
    if (e)
        return e;
    e = db_token_list(rq->db, rq->actor.user_id, bound_tenant(rq), pg.after, pg.after_id, pg.limit,
                      &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

int api_token_delete(struct req *rq, struct resp *rs)
{
    const char *id = req_param(rq, "id");
    if (!crypto_uuid_valid(id)) {
        api_field_problem(rs, "id", PROBLEM_V_UUID, NULL);
        return api_fail_fields(rs);
    }
    json_t *out = NULL;
    int e = db_token_revoke(rq->db, rq->actor.user_id, bound_tenant(rq), id, &out);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_TOKEN_NOT_FOUND, json_pack("{s:s}", "id", id));
    if (e)
        return e;
    resp_audit(rs, "token", id,
               json_pack("{s:O, s:O}", "name", json_object_get(out, "name"), "descendants_revoked",
                         json_object_get(out, "descendants")));
    json_decref(out);
    return resp_json(rs, MHD_HTTP_NO_CONTENT, NULL);
}
