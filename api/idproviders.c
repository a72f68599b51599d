/*
 * idproviders.c - configuring identity providers. A provider is one JSON
 * object: name, kind, display_name, enabled, its kind's settings and its
 * role rules. PATCH merges the fields given into the current object and
 * checks the result as a whole, as a create would.
 *
 * Nothing secret is stored: client_secret_ref and bind_password_ref say
 * where aidcd reads the secret (file:/path, env:NAME), like a cluster's
 * credentials_ref.
 */
#include "idproviders.h"

#include "../db/idproviders.h"
#include "../lib/config.h"
#include "../lib/credref.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "oidcmeta.h"
#include "paging.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RULES 200

static bool is_name(const char *s)
{
    size_t n = strlen(s);
    return n >= 2 && n <= 32 && validate_slug(s);
}

static const struct vfield common_fields[] = {
    {"name", V_STRING, V_REQUIRED, 0, 0, is_name, PROBLEM_IDP_NAME},
    {"kind", V_STRING, V_REQUIRED, 0, 0, NULL, 0},
    {"display_name", V_STRING, V_REQUIRED, 1, 100, NULL, 0},
    {"enabled", V_BOOL, 0, 0, 0, NULL, 0},
    {"role_rules", V_ANY, 0, 0, 0, NULL, 0},
};
#define NCOMMON (sizeof common_fields / sizeof common_fields[0])

static bool is_ref(const char *s)
{
    return credref_valid(s);
}

static bool is_scope(const char *s)
{
    if (!s[0])
        return false;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c <= 0x20 || *c >= 0x7f || *c == '"' || *c == '\\')
            return false;
    return true;
}

static bool is_abs_path(const char *s)
{
    return s[0] == '/' && !strstr(s, "/../") && !strchr(s, '\n');
}

static const struct vfield oidc_fields[] = {
    {"issuer", V_STRING, V_REQUIRED, 1, 512, NULL, 0},
    {"client_id", V_STRING, V_REQUIRED, 1, 255, is_scope, PROBLEM_IDP_SCOPES},
    {"client_secret_ref", V_STRING, V_REQUIRED, 1, 1024, is_ref, PROBLEM_IDP_SECRET_REF},
    {"scopes", V_STRING_ARRAY, 0, 1, 20, is_scope, PROBLEM_IDP_SCOPES},
    {"username_claim", V_STRING, 0, 1, 64, NULL, 0},
};
static const struct vfield ldap_fields[] = {
    {"url", V_STRING, V_REQUIRED, 1, 512, NULL, 0},
    {"start_tls", V_BOOL, 0, 0, 0, NULL, 0},
    {"ca_file", V_STRING, V_NULLABLE, 1, 1024, is_abs_path, PROBLEM_IDP_PATH},
    {"bind_dn", V_STRING, V_REQUIRED, 1, 1024, NULL, 0},
    {"bind_password_ref", V_STRING, V_REQUIRED, 1, 1024, is_ref, PROBLEM_IDP_SECRET_REF},
    {"user_base", V_STRING, V_REQUIRED, 1, 1024, NULL, 0},
    {"user_filter", V_STRING, 0, 1, 1024, NULL, 0},
    {"group_base", V_STRING, V_NULLABLE, 0, 1024, NULL, 0},
    {"group_filter", V_STRING, 0, 1, 1024, NULL, 0},
};
#define NOIDC (sizeof oidc_fields / sizeof oidc_fields[0])
#define NLDAP (sizeof ldap_fields / sizeof ldap_fields[0])

/* The host of an http(s)/ldap(s) URL, into host: false when there is none. */
static bool url_host(const char *url, char *host, size_t hostsz)
{
    const char *p = strstr(url, "://");
    if (!p)
        return false;
    p += 3;
    const char *end = p + strcspn(p, "/?#");
    const char *at = memchr(p, '@', (size_t)(end - p));
    if (at)
        return false; /* no credentials in URLs */
    const char *colon;
    if (*p == '[') {
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (!close)
            return false;
        p++;
        colon = close;
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        if (!colon)
            colon = end;
    }
    size_t n = (size_t)(colon - p);
    if (n == 0 || n >= hostsz)
        return false;
    memcpy(host, p, n);
    host[n] = '\0';
    return true;
}

bool api_idp_url_loopback(const char *url)
{
    char host[256];
    if (!url_host(url, host, sizeof host))
        return false;
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

bool api_idp_url_https_or_loopback(const char *url)
{
    if (strpbrk(url, " \t\r\n\"<>"))
        return false;
    return strncmp(url, "https://", 8) == 0 ||
           (strncmp(url, "http://", 7) == 0 && api_idp_url_loopback(url));
}

static bool issuer_ok(const char *s)
{
    char host[256];
    if (strpbrk(s, "?# \t\r\n") || !url_host(s, host, sizeof host))
        return false;
    if (strncmp(s, "https://", 8) == 0)
        return true;
    return strncmp(s, "http://", 7) == 0 && api_idp_url_loopback(s);
}

static bool filter_ok(const char *f, const char *placeholder)
{
    size_t n = strlen(f);
    return n >= 2 && f[0] == '(' && f[n - 1] == ')' && strstr(f, placeholder);
}

/* A rule: {"claim": name, "value": v} or {"group": name} (a "value" beside it, if
 * any, the same name), with "tenant" and "role". */
static bool rule_ok(const json_t *r)
{
    const json_t *claim = json_object_get(r, "claim"), *group = json_object_get(r, "group");
    const char *value = json_string_value(json_object_get(r, "value"));
    const char *tenant = json_string_value(json_object_get(r, "tenant"));
    const char *role = json_string_value(json_object_get(r, "role"));
    size_t keys = 2 + (claim != NULL) + (group != NULL) + (json_object_get(r, "value") != NULL);
    if (!json_is_object(r) || json_object_size(r) != keys || !claim == !group || !tenant ||
        !validate_slug(tenant) || !role ||
        (strcmp(role, "tenant_admin") != 0 && strcmp(role, "member") != 0 &&
         strcmp(role, "viewer") != 0))
        return false;
    const json_t *name = claim ? claim : group;
    if (!json_is_string(name) || json_string_length(name) == 0 || json_string_length(name) > 256)
        return false;
    if (claim)
        return value && value[0] && strlen(value) <= 256;
    return !json_object_get(r, "value") || (value && strcmp(value, json_string_value(group)) == 0);
}

static void check_rules(const json_t *rules, struct resp *rs)
{
    if (!rules)
        return;
    if (!json_is_array(rules)) {
        api_field_problem(rs, "role_rules", PROBLEM_IDP_RULE, NULL);
        return;
    }
    if (json_array_size(rules) > MAX_RULES) {
        api_field_problem(rs, "role_rules", PROBLEM_V_ITEMS,
                          json_pack("{s:i, s:i}", "min", 0, "max", MAX_RULES));
        return;
    }
    size_t i;
    const json_t *r;
    json_array_foreach(rules, i, r) if (!rule_ok(r))
    {
        char *f = xasprintf("role_rules[%zu]", i);
        api_field_problem(rs, f, PROBLEM_IDP_RULE, NULL);
        free(f);
    }
}

/* The settings of o's kind, checked; the fields of the other kind refused. */
static void check_kind(const json_t *o, const char *kind, struct resp *rs)
{
    bool oidc = strcmp(kind, "oidc") == 0;
    const struct vfield *mine = oidc ? oidc_fields : ldap_fields,
                        *other = oidc ? ldap_fields : oidc_fields;
    size_t nmine = oidc ? NOIDC : NLDAP, nother = oidc ? NLDAP : NOIDC;
    for (size_t i = 0; i < nother; i++)
        if (json_object_get(o, other[i].name)) {
            bool shared = false; /* no name is in both tables today */
            for (size_t k = 0; k < nmine; k++)
                shared = shared || strcmp(mine[k].name, other[i].name) == 0;
            if (!shared)
                api_field_problem(rs, other[i].name, PROBLEM_IDP_OTHER_KIND,
                                  json_pack("{s:s}", "kind", kind));
        }
    /* validate_object sees the kind's fields and the common ones only */
    json_t *part = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        bool known = false;
        for (size_t i = 0; i < NCOMMON; i++)
            known = known || strcmp(common_fields[i].name, k) == 0;
        for (size_t i = 0; i < nother; i++)
            known = known || strcmp(other[i].name, k) == 0;
        if (!known)
            json_object_set(part, k, v);
    }
    (void)validate_object(part, mine, nmine, rs);
    json_decref(part);
    if (oidc) {
        const char *iss = vstr(o, "issuer");
        if (iss && !issuer_ok(iss))
            api_field_problem(rs, "issuer", PROBLEM_IDP_ISSUER, NULL);
        const json_t *sc = json_object_get(o, "scopes");
        bool has_openid = !sc;
        size_t i;
        json_t *s;
        json_array_foreach(sc, i, s) has_openid =
            has_openid || (json_is_string(s) && strcmp(json_string_value(s), "openid") == 0);
        if (json_is_array(sc) && !has_openid)
            api_field_problem(rs, "scopes", PROBLEM_IDP_SCOPES, NULL);
        return;
    }
    const char *url = vstr(o, "url");
    char host[256];
    bool ldaps = url && strncmp(url, "ldaps://", 8) == 0;
    if (url && ((!ldaps && strncmp(url, "ldap://", 7) != 0) || strpbrk(url, "?# ,") ||
                !url_host(url, host, sizeof host)))
        api_field_problem(rs, "url", PROBLEM_IDP_LDAP_URL, NULL);
    else if (url && !ldaps && json_is_false(json_object_get(o, "start_tls")) &&
             !api_idp_url_loopback(url))
        api_field_problem(rs, "start_tls", PROBLEM_IDP_CLEARTEXT, NULL);
    const char *uf = vstr(o, "user_filter"), *gf = vstr(o, "group_filter");
    if (uf && !filter_ok(uf, "{username}"))
        api_field_problem(rs, "user_filter", PROBLEM_IDP_FILTER,
                          json_pack("{s:s}", "placeholder", "{username}"));
    if (gf && !filter_ok(gf, "{dn}"))
        api_field_problem(rs, "group_filter", PROBLEM_IDP_FILTER,
                          json_pack("{s:s}", "placeholder", "{dn}"));
}

/* Defaults a provider gets when they are left out. */
static void defaults(json_t *o)
{
    if (strcmp(vstr(o, "kind"), "oidc") == 0) {
        if (!json_object_get(o, "scopes"))
            json_object_set_new(o, "scopes", json_pack("[s,s,s]", "openid", "profile", "email"));
        if (!json_object_get(o, "username_claim"))
            json_object_set_new(o, "username_claim", json_string("preferred_username"));
        return;
    }
    const char *url = vstr(o, "url");
    if (!json_object_get(o, "start_tls"))
        json_object_set_new(o, "start_tls", json_boolean(url && strncmp(url, "ldap://", 7) == 0));
    if (!json_object_get(o, "user_filter"))
        json_object_set_new(o, "user_filter",
                            json_string("(&(objectClass=inetOrgPerson)(uid={username}))"));
    if (!json_object_get(o, "group_filter"))
        json_object_set_new(o, "group_filter",
                            json_string("(&(objectClass=groupOfNames)(member={dn}))"));
    if (!json_object_get(o, "ca_file"))
        json_object_set_new(o, "ca_file", json_null());
    if (!json_object_get(o, "group_base"))
        json_object_set_new(o, "group_base", json_null());
}

/* Check the whole provider o (defaults filled in): true when it is good. */
static bool check_provider(json_t *o, struct resp *rs)
{
    json_t *common = json_object();
    for (size_t i = 0; i < NCOMMON; i++) {
        json_t *v = json_object_get(o, common_fields[i].name);
        if (v)
            json_object_set(common, common_fields[i].name, v);
    }
    (void)validate_object(common, common_fields, NCOMMON, rs);
    json_decref(common);
    const char *kind = vstr(o, "kind");
    if (kind && strcmp(kind, "oidc") != 0 && strcmp(kind, "ldap") != 0) {
        api_field_problem(rs, "kind", PROBLEM_IDP_KIND, NULL);
        kind = NULL;
    }
    check_rules(json_object_get(o, "role_rules"), rs);
    if (kind) {
        defaults(o);
        check_kind(o, kind, rs);
    }
    return rs->err.nfields == 0;
}

/* The write of a checked provider; settings: its kind's fields (a new text). */
static char *settings_of(const json_t *o)
{
    bool oidc = strcmp(vstr(o, "kind"), "oidc") == 0;
    const struct vfield *f = oidc ? oidc_fields : ldap_fields;
    size_t n = oidc ? NOIDC : NLDAP;
    json_t *s = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(o, f[i].name);
        if (v)
            json_object_set(s, f[i].name, v);
    }
    char *t = json_dumps(s, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(s);
    return t;
}

static int write_provider(struct req *rq, struct resp *rs, json_t *o, bool create)
{
    if (!check_provider(o, rs))
        return api_fail_fields(rs);
    const json_t *rules = json_object_get(o, "role_rules");
    char *settings = settings_of(o);
    char *rtext = rules ? json_dumps(rules, JSON_COMPACT) : xstrdup("[]");
    const json_t *en = json_object_get(o, "enabled");
    const struct db_idp_write w = {.name = vstr(o, "name"),
                                   .kind = vstr(o, "kind"),
                                   .display_name = vstr(o, "display_name"),
                                   .enabled = !en || json_is_true(en),
                                   .settings = settings,
                                   .role_rules = rtext};
    json_t *out = NULL;
    int e = settings && rtext
                ? (create ? db_idp_create(rq->db, &w, &out) : db_idp_update(rq->db, &w, &out))
                : AIDC_EINTERNAL;
    free(settings);
    free(rtext);
    if (e == AIDC_ECONFLICT)
        return api_problem(rs, PROBLEM_IDP_EXISTS, json_pack("{s:s}", "provider", w.name));
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_IDP_NOT_FOUND, json_pack("{s:s}", "provider", w.name));
    if (e)
        return e;
    resp_audit(rs, "identity_provider", w.name,
               json_pack("{s:s, s:b, s:O}", "kind", w.kind, "enabled", w.enabled, "role_rules",
                         json_object_get(out, "role_rules")));
    if (create) {
        char *loc = xasprintf("/api/v1/identity-providers/%s", w.name);
        resp_header(rs, MHD_HTTP_HEADER_LOCATION, loc);
        free(loc);
    }
    return resp_json(rs, create ? MHD_HTTP_CREATED : MHD_HTTP_OK, out);
}

int api_idp_create(struct req *rq, struct resp *rs)
{
    json_t *o = json_deep_copy(rq->json);
    int e = write_provider(rq, rs, o, true);
    json_decref(o);
    return e;
}

static int name_param(struct req *rq, struct resp *rs, const char **out)
{
    *out = req_param(rq, "name");
    if (!is_name(*out)) {
        api_field_problem(rs, "name", PROBLEM_IDP_NAME, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}

int api_idp_list(struct req *rq, struct resp *rs)
{
    struct page pg;
    int e = paging_parse(rq, rs, &pg);
    if (e)
        return e;
    e = db_idp_list(rq->db, pg.after, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

static int load(struct req *rq, struct resp *rs, const char *name, json_t **out)
{
    int e = db_idp_get(rq->db, name, out);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_IDP_NOT_FOUND, json_pack("{s:s}", "provider", name));
    return e;
}

int api_idp_get(struct req *rq, struct resp *rs)
{
    const char *name;
    json_t *o = NULL;
    int e = name_param(rq, rs, &name);
    if (!e)
        e = load(rq, rs, name, &o);
    return e ? e : resp_json(rs, MHD_HTTP_OK, o);
}

int api_idp_update(struct req *rq, struct resp *rs)
{
    const char *name;
    json_t *o = NULL;
    int e = name_param(rq, rs, &name);
    if (!e)
        e = load(rq, rs, name, &o);
    if (e)
        return e;
    const char *kind = vstr(rq->json, "kind"), *newname = vstr(rq->json, "name");
    if (kind && strcmp(kind, vstr(o, "kind")) != 0)
        api_field_problem(rs, "kind", PROBLEM_IDP_KIND_FIXED, NULL);
    if (newname && strcmp(newname, name) != 0)
        api_field_problem(rs, "name", PROBLEM_IDP_KIND_FIXED, NULL);
    if (rs->err.nfields) {
        json_decref(o);
        return api_fail_fields(rs);
    }
    json_object_del(o, "created_at");
    json_object_del(o, "updated_at");
    const char *k;
    json_t *v;
    json_object_foreach(rq->json, k, v)
    {
        /* null clears a nullable setting; the check says which may be */
        json_object_set(o, k, v);
    }
    e = write_provider(rq, rs, o, false);
    json_decref(o);
    return e;
}

int api_idp_delete(struct req *rq, struct resp *rs)
{
    const char *name;
    int e = name_param(rq, rs, &name);
    if (e)
        return e;
    e = db_idp_delete(rq->db, name);
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_IDP_NOT_FOUND, json_pack("{s:s}", "provider", name));
    if (e)
        return e;
    resp_audit(rs, "identity_provider", name, NULL);
    return resp_json(rs, MHD_HTTP_NO_CONTENT, NULL);
}

int api_idp_public(struct req *rq, struct resp *rs)
{
    json_t *items = NULL;
    int e = db_idp_public(rq->db, &items);
    if (e)
        return e;
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        bool oidc = strcmp(json_string_value(json_object_get(p, "kind")), "oidc") == 0;
        char *url =
            oidc ? xasprintf("/api/v1/auth/oidc/%s/login", name) : xstrdup("/api/v1/auth/login");
        json_object_set_new(p, "login_url", json_string(url));
        free(url);
        /* where the portal offers to end the provider's session too (OIDC RP-initiated
         * logout), when the provider publishes one */
        const char *end = json_string_value(json_object_get(p, "end_session_endpoint"));
        const char *client = json_string_value(json_object_get(p, "client_id"));
        if (end && client && api_idp_url_https_or_loopback(end)) {
            char *ec = oidcmeta_urlencode(client), *eb = oidcmeta_urlencode(rq->cfg->public_url);
            char *lo = xasprintf("%s%cclient_id=%s&post_logout_redirect_uri=%s", end,
                                 strchr(end, '?') ? '&' : '?', ec, eb);
            json_object_set_new(p, "logout_url", json_string(lo));
            free(lo);
            free(ec);
            free(eb);
        }
        json_object_del(p, "end_session_endpoint");
        json_object_del(p, "client_id");
    }
    return resp_json(rs, MHD_HTTP_OK, json_pack("{s:o}", "items", items));
}
