/*
 * extlogin.h - signing in a person an identity provider vouched for (an
 * OpenID Connect ID token, an LDAP bind): the provider's role rules turned
 * into tenant roles, the aidc user found by the provider's subject (or made
 * at the first sign-in), a session started. Shared by api/oidc.c and the
 * LDAP path of POST /auth/login.
 */
#ifndef AIDC_API_EXTLOGIN_H
#define AIDC_API_EXTLOGIN_H

#include "../db/idproviders.h"
#include "../server/request.h"

#include <jansson.h>

struct extlogin_person {
    const char *provider; /* its name */
    const char *subject;  /* stable: "sub", the entry's DN */
    const char *username; /* what the provider calls the person (made a user name) */
    const char *email;    /* verified only; NULL: none */
    const char *display_name;
    const json_t *claims;       /* what "claim" rules look at; "group" rules read "groups" */
    const char *username_claim; /* for the problem when username is unusable */
};

/*
 * The grants of rules for claims: a JSON array of {"tenant","role"}, one per
 * tenant (the highest role any matching rule gives). A new reference.
 */
json_t *extlogin_grants(const json_t *rules, const json_t *claims);

/*
 * A user name for what a provider calls someone: lower-cased, characters
 * outside [a-z0-9._-] made '-', up to the first '@', starting with a letter,
 * at most 56 characters (aidc may add "-N" to make it free). false when
 * nothing usable is left.
 */
bool extlogin_username(const char *from, char *out, size_t outsz);

/*
 * Sign p in: 0 with the session's cookie in rs (its JWT in *jwt, malloc'd,
 * when jwt is not NULL) and the user in *out, the request's actor set to it
 * (the audit event names who signed in); else a problem in rs (sso.username,
 * sso.disabled) or an aidc_err.
 */
int extlogin_complete(struct req *rq, struct resp *rs, const json_t *rules,
                      const struct extlogin_person *p, struct db_external_user *out, char **jwt);

#endif
