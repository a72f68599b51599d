/* ldaplogin.c - signing in with a directory's password (see ldaplogin.h). */
#include "ldaplogin.h"

#include "../db/idproviders.h"
#include "../lib/credref.h"
#include "../lib/err.h"
#include "../lib/ldapauth.h"
#include "../lib/log.h"
#include "../lib/xalloc.h"
#include "extlogin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const char *setting(const struct db_idp *p, const char *k)
{
    return json_string_value(json_object_get(p->settings, k));
}

/* What rules look at: the directory's names for the person, and its groups. */
static json_t *claims_of(const struct ldapauth_user *u)
{
    json_t *groups = json_array();
    for (size_t i = 0; i < u->ngroups; i++)
        json_array_append_new(groups, json_string(u->groups[i]));
    json_t *c =
        json_pack("{s:s, s:s, s:o}", "sub", u->dn, "username", u->username, "groups", groups);
    if (c && u->email)
        json_object_set_new(c, "email", json_string(u->email));
    return c;
}

int ldaplogin_run(struct req *rq, struct resp *rs, const char *provider, const char *username,
                  const char *password, bool *refused, char **jwt)
{
    *refused = false;
    struct db_idp p;
    int e = db_idp_find(rq->db, provider, &p);
    if (!e && (!p.enabled || strcmp(p.kind, "ldap") != 0)) {
        db_idp_free(&p);
        e = AIDC_ENOTFOUND;
    }
    if (e == AIDC_ENOTFOUND)
        return api_problem(rs, PROBLEM_AUTH_PROVIDER_UNKNOWN,
                           json_pack("{s:s}", "provider", provider));
    if (e)
        return e;
    char why[256] = "";
    int se = 0;
    char *secret = credref_line(setting(&p, "bind_password_ref"), &se, why, sizeof why);
    enum ldapauth_result r = LDAPAUTH_UNAVAILABLE;
    struct ldapauth_user u = {0};
    if (secret) {
        const char *gb = setting(&p, "group_base");
        const struct ldapauth_config cfg = {
            .url = setting(&p, "url"),
            .start_tls = json_is_true(json_object_get(p.settings, "start_tls")),
            .ca_file = setting(&p, "ca_file"),
            .bind_dn = setting(&p, "bind_dn"),
            .bind_password = secret,
            .user_base = setting(&p, "user_base"),
            .user_filter = setting(&p, "user_filter"),
            .group_base = gb,
            .group_filter = setting(&p, "group_filter"),
            .timeout_s = 5,
        };
        r = ldapauth_login(&cfg, username, password, &u, why, sizeof why);
        explicit_bzero(secret, strlen(secret));
        free(secret);
    }
    json_object_set_new(rs->audit.details, "provider", json_string(provider));
    if (r == LDAPAUTH_REJECTED) {
        json_object_set_new(rs->audit.details, "reason", json_string(why));
        *refused = true;
        db_idp_free(&p);
        return 0;
    }
    if (r != LDAPAUTH_OK) {
        log_warn("LDAP sign-in through %s: %s", provider, why);
        db_idp_free(&p);
        return api_problem(rs, PROBLEM_AUTH_PROVIDER_UNAVAILABLE,
                           json_pack("{s:s}", "provider", provider));
    }
    json_t *claims = claims_of(&u);
    const struct extlogin_person person = {.provider = provider,
                                           .subject = u.dn,
                                           .username = u.username,
                                           /* a directory's mail is its operators' word */
                                           .email = u.email,
                                           .display_name = u.display_name,
                                           .claims = claims,
                                           .username_claim = "uid"};
    struct db_external_user out;
    e = claims ? extlogin_complete(rq, rs, p.role_rules, &person, &out, jwt) : AIDC_EINTERNAL;
    json_decref(claims);
    ldapauth_user_free(&u);
    db_idp_free(&p);
    return e;
}
