/* extlogin.c - signing in through an identity provider (see extlogin.h). */
#include "extlogin.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "../server/validate.h"
#include "identity.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int role_rank(const char *r)
{
    if (strcmp(r, "tenant_admin") == 0)
        return 3;
    if (strcmp(r, "member") == 0)
        return 2;
    return strcmp(r, "viewer") == 0 ? 1 : 0;
}

/* A claim matches a value when it is that string, or an array holding it. */
static bool claim_has(const json_t *claim, const char *value)
{
    if (json_is_string(claim))
        return strcmp(json_string_value(claim), value) == 0;
    size_t i;
    const json_t *v;
    json_array_foreach(claim, i, v) if (json_is_string(v) &&
                                        strcmp(json_string_value(v), value) == 0) return true;
    return false;
}

json_t *extlogin_grants(const json_t *rules, const json_t *claims)
{
    json_t *best = json_object(); /* tenant -> role */
    size_t i;
    const json_t *rule;
    json_array_foreach(rules, i, rule)
    {
        /* {"claim": c, "value": v}, or {"group": g}: "groups" holds g */
        const char *claim = json_string_value(json_object_get(rule, "claim"));
        const char *value = json_string_value(json_object_get(rule, "value"));
        const char *group = json_string_value(json_object_get(rule, "group"));
        if (!claim && group) {
            claim = "groups";
            value = group;
        }
        const char *tenant = json_string_value(json_object_get(rule, "tenant"));
        const char *role = json_string_value(json_object_get(rule, "role"));
        if (!claim || !value || !tenant || !role || role_rank(role) == 0)
            continue;
        if (!claim_has(json_object_get(claims, claim), value))
            continue;
        const char *had = json_string_value(json_object_get(best, tenant));
        if (!had || role_rank(role) > role_rank(had))
            json_object_set_new(best, tenant, json_string(role));
    }
    json_t *out = json_array();
    const char *tenant;
    json_t *role;
    json_object_foreach(best, tenant, role)
        json_array_append_new(out, json_pack("{s:s, s:O}", "tenant", tenant, "role", role));
    json_decref(best);
    return out;
}

bool extlogin_username(const char *from, char *out, size_t outsz)
{
    size_t n = 0;
    if (!from || outsz < 2)
        return false;
    for (const char *c = from; *c && *c != '@' && n < 56 && n + 1 < outsz; c++) {
        unsigned char ch = (unsigned char)tolower((unsigned char)*c);
        if (n == 0 && !(ch >= 'a' && ch <= 'z'))
            continue; /* a user name starts with a letter */
        out[n++] =
            (char)((isalnum(ch) && ch < 0x80) || ch == '.' || ch == '_' || ch == '-' ? ch : '-');
    }
    out[n] = '\0';
    return n > 0 && validate_username(out);
}

int extlogin_complete(struct req *rq, struct resp *rs, const json_t *rules,
                      const struct extlogin_person *p, struct db_external_user *out, char **jwt)
{
    memset(out, 0, sizeof *out);
    char name[64];
    if (!extlogin_username(p->username, name, sizeof name))
        return api_problem(
            rs, PROBLEM_SSO_USERNAME,
            json_pack("{s:s}", "claim", p->username_claim ? p->username_claim : "username"));
    json_t *grants = extlogin_grants(rules, p->claims);
    char *gtext = json_dumps(grants, JSON_COMPACT);
    if (!gtext) {
        json_decref(grants);
        return AIDC_EINTERNAL;
    }
    const struct db_external_login in = {.provider = p->provider,
                                         .subject = p->subject,
                                         .name_hint = name,
                                         .email = p->email,
                                         .display_name = p->display_name,
                                         .grants = gtext};
    int e = db_idp_external_login(rq->db, &in, out);
    free(gtext);
    if (e) {
        json_decref(grants);
        return e;
    }
    snprintf(rq->actor.user_id, sizeof rq->actor.user_id, "%s", out->id);
    free(rq->actor.username);
    rq->actor.username = xstrdup(out->username);
    resp_audit(rs, "user", out->username,
               json_pack("{s:s, s:s, s:b, s:o}", "username", out->username, "provider", p->provider,
                         "created", out->created, "roles", grants));
    if (out->disabled) {
        json_object_set_new(rs->audit.details, "reason", json_string("user is disabled"));
        return api_problem(rs, PROBLEM_SSO_DISABLED, NULL);
    }
    return api_identity_session_start(rq, rs, out->id, out->epoch, jwt);
}
