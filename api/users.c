/*
 * users.c - user accounts. Passwords are hashed before the transaction's
 * first statement is sent, so the scrypt work never holds a transaction open.
 * An admin cannot lock the platform out: the last enabled platform admin can
 * neither be disabled nor lose the role, and nobody disables themselves.
 * Granting a global role needs dual approval (api/approvals.h); removing one
 * does not.
 */
#include "users.h"

#include "../db/users.h"
#include "../lib/err.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/auth.h"
#include "../server/password.h"
#include "../server/validate.h"
#include "approvals.h"
#include "paging.h"

#include <microhttpd.h>
#include <string.h>

static bool is_global_role(const char *s)
{
    return auth_global_role_parse(s) != 0;
}

static const struct vfield create_fields[] = {
    {"username", V_STRING, V_REQUIRED, 0, 0, validate_username, PROBLEM_V_USERNAME},
    {"password", V_STRING, V_REQUIRED, 0, 0, NULL, 0},
    {"email", V_STRING, V_NULLABLE, 0, 0, validate_email, PROBLEM_V_EMAIL},
    {"display_name", V_STRING, V_NULLABLE, 0, 200, NULL, 0},
    {"roles", V_STRING_ARRAY, 0, 0, 3, is_global_role, PROBLEM_USER_ROLE_UNKNOWN},
};

static const struct vfield update_fields[] = {
    {"password", V_STRING, 0, 0, 0, NULL, 0},
    {"email", V_STRING, 0, 0, 0, validate_email, PROBLEM_V_EMAIL},
    {"display_name", V_STRING, 0, 0, 200, NULL, 0},
    {"roles", V_STRING_ARRAY, 0, 0, 3, is_global_role, PROBLEM_USER_ROLE_UNKNOWN},
    {"disabled", V_BOOL, 0, 0, 0, NULL, 0},
};

/* Global roles of a JSON array of role names, as bits. */
static unsigned role_bits(const json_t *roles)
{
    unsigned bits = 0;
    size_t i;
    json_t *r;
    json_array_foreach(roles, i, r) bits |= auth_global_role_parse(json_string_value(r));
    return bits;
}

/* Roles array as a canonical comma-separated list (sorted, no duplicates). */
static char *roles_csv(const json_t *roles)
{
    char buf[64];
    actor_roles_csv(role_bits(roles), buf, sizeof buf);
    return xstrdup(buf);
}

static int user_not_found(struct resp *rs, const char *username)
{
    return api_problem(rs, PROBLEM_USER_NOT_FOUND, json_pack("{s:s}", "username", username));
}

static int check_username_param(struct req *rq, struct resp *rs, const char **out)
{
    *out = req_param(rq, "username");
    if (!validate_username(*out)) {
        api_field_problem(rs, "username", PROBLEM_V_USERNAME, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}

/*
 * The new user exists (out, its audit details d: both stolen); its roles
 * wait for approval as PATCH /users/{username} {"roles": [...]}, the request
 * that grants them. Answers 202 {"approval": {...}, "user": {...}}.
 */
static int request_grant(struct req *rq, struct resp *rs, const char *username, const json_t *roles,
                         json_t *out, json_t *d)
{
    char names[64], summary[160];
    actor_roles_csv(role_bits(roles), names, sizeof names);
    snprintf(summary, sizeof summary, "grant %s to the new user \"%s\"", names, username);
    char *path = xasprintf("/api/v1/users/%s", username);
    json_t *body = json_pack("{s:O}", "roles", (json_t *)roles);
    int e = body ? approval_request(rq, rs, "PATCH", path, body, summary) : AIDC_EINTERNAL;
    json_decref(body);
    free(path);
    if (e) {
        json_decref(out);
        json_decref(d);
        return e;
    }
    json_object_set_new(d, "roles_pending_approval", json_deep_copy(roles));
    resp_audit(rs, "user", username, d);
    json_object_set_new(rs->body, "user", out);
    return 0;
}

int api_user_create(struct req *rq, struct resp *rs)
{
    json_t *b = rq->json;
    bool ok = validate_object(b, create_fields, sizeof create_fields / sizeof create_fields[0], rs);
    ok = validate_password(vstr(b, "password"), "password", rs) && ok;
    if (!ok)
        return api_fail_fields(rs);
    const char *username = vstr(b, "username");
    char *hash = password_hash(vstr(b, "password"));
    if (!hash)
        return AIDC_EINTERNAL;
    char *roles = roles_csv(json_object_get(b, "roles"));
    /* every global role is granted only with a second admin's approval: the
     * user is created without them, and their grant waits (see below) */
    bool grant = roles[0] && !rq->approval_id;
    json_t *out = NULL;
    int e = db_user_create(rq->db, username, hash, vstr(b, "email"), vstr(b, "display_name"),
                           grant ? "" : roles, rq->actor.user_id, &out);
    free(hash);
    free(roles);
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_USER_EXISTS, json_pack("{s:s}", "username", username));
    if (e)
        return e;
    char *loc = xasprintf("/api/v1/users/%s", username);
    resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
    free(loc);
    json_t *d = json_deep_copy(out);
    if (grant)
        return request_grant(rq, rs, username, json_object_get(b, "roles"), out, d);
    resp_audit(rs, "user", username, d);
    return resp_json(rs, MHD_HTTP_CREATED, out);
}

int api_user_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    e = db_user_list(rq->db, pg.after, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

int api_user_get(struct req *rq, struct resp *rs)
{
    const char *username;
    int e = check_username_param(rq, rs, &username);
    if (e)
        return e;
    json_t *out = NULL;
    e = db_user_get(rq->db, username, &out);
    if (e == AIDC_ENOTFOUND)
        return user_not_found(rs, username);
    return e ? e : resp_json(rs, MHD_HTTP_OK, out);
}

/* Refuse changes that would lock out the acting admin or the platform. */
static int guard_admins(struct req *rq, struct resp *rs, const char *username, bool disabling,
                        const char *roles)
{
    bool self = rq->actor.username && strcmp(rq->actor.username, username) == 0;
    bool dropping_admin = roles && !strstr(roles, "platform_admin");
    if (self && disabling)
        return api_problem(rs, PROBLEM_USER_DISABLE_SELF, NULL);
    if (self && dropping_admin)
        return api_problem(rs, PROBLEM_USER_REMOVE_OWN_ADMIN, NULL);
    if (!disabling && !dropping_admin)
        return 0;
    json_t *cur = NULL;
    int e = db_user_get(rq->db, username, &cur);
    if (e)
        return e;
    bool is_admin = false;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(cur, "roles"), i, r) is_admin |=
        strcmp(json_string_value(r), "platform_admin") == 0;
    json_decref(cur);
    int others = 0;
    if (is_admin && (e = db_user_other_admins(rq->db, username, &others)) != 0)
        return e;
    if (is_admin && others == 0)
        return api_problem(rs, PROBLEM_USER_LAST_ADMIN, json_pack("{s:s}", "username", username));
    return 0;
}

/* The global roles the array `want` would add to what username has now. */
static int new_roles(struct req *rq, const char *username, const json_t *want, unsigned *added)
{
    json_t *cur = NULL;
    int e = db_user_get(rq->db, username, &cur);
    if (e)
        return e;
    *added = role_bits(want) & ~role_bits(json_object_get(cur, "roles"));
    json_decref(cur);
    return 0;
}

/*
 * This change grants roles: it waits for a second admin's approval, as it
 * is. A password cannot wait with it (the request is stored as it is, and a
 * password is stored nowhere but as its hash).
 */
static int request_roles(struct req *rq, struct resp *rs, const char *username, unsigned added)
{
    if (vhas(rq->json, "password")) {
        api_field_problem(rs, "password", PROBLEM_USER_PASSWORD_WITH_GRANT, NULL);
        return api_fail_fields(rs);
    }
    char names[64], summary[160];
    actor_roles_csv(added, names, sizeof names);
    snprintf(summary, sizeof summary, "grant %s to user \"%s\"", names, username);
    int e = approval_required(rq, rs, summary);
    return e < 0 ? e : 0;
}

int api_user_update(struct req *rq, struct resp *rs)
{
    const char *username;
    int e = check_username_param(rq, rs, &username);
    if (e)
        return e;
    json_t *b = rq->json;
    bool ok = validate_object(b, update_fields, sizeof update_fields / sizeof update_fields[0], rs);
    ok = validate_password(vstr(b, "password"), "password", rs) && ok;
    if (!ok)
        return api_fail_fields(rs);
    if (json_object_size(b) == 0)
        return api_problem(rs, PROBLEM_NOTHING_TO_CHANGE, NULL);
    json_t *dj = json_object_get(b, "disabled");
    const char *disabled = dj ? (json_is_true(dj) ? "true" : "false") : NULL;
    char *roles = vhas(b, "roles") ? roles_csv(json_object_get(b, "roles")) : NULL;
    char *hash = NULL;
    json_t *out = NULL;
    unsigned granted = 0;
    if (vstr(b, "password") && !(hash = password_hash(vstr(b, "password")))) {
        e = AIDC_EINTERNAL;
        goto out;
    }
    e = roles && !rq->approval_id ? new_roles(rq, username, json_object_get(b, "roles"), &granted)
                                  : 0;
    if (!e)
        e = guard_admins(rq, rs, username, json_is_true(dj), roles);
    if (e == AIDC_ENOTFOUND)
        e = user_not_found(rs, username);
    if (e)
        goto out;
    if (granted) { /* the whole change waits for a second admin */
        e = request_roles(rq, rs, username, granted);
        goto out;
    }
    e = db_user_update(rq->db, username, vstr(b, "display_name"), vstr(b, "email"), hash, disabled,
                       roles, rq->actor.user_id, &out);
    if (e == AIDC_ENOTFOUND)
        e = user_not_found(rs, username);
    if (e)
        goto out;
    json_t *d = json_deep_copy(b); /* the password is redacted by the audit writer */
    resp_audit(rs, "user", username, d);
    resp_json(rs, MHD_HTTP_OK, out);
out:
    free(roles);
    free(hash);
    return e;
}
