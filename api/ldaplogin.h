/*
 * ldaplogin.h - POST /auth/login with "provider": the password checked by an
 * LDAP or Active Directory server (lib/ldapauth.h: search-then-bind over
 * LDAPS or StartTLS), the person then signed in as any provider's is
 * (api/extlogin.h: roles from the directory's groups).
 */
#ifndef AIDC_API_LDAPLOGIN_H
#define AIDC_API_LDAPLOGIN_H

#include "../server/request.h"

#include <stdbool.h>

/*
 * Sign username in through LDAP provider `provider`. 0 with the session
 * started (cookie in rs, JWT in *jwt); 0 with *refused set when the directory
 * refused the person (the caller counts the failure and answers the same 401
 * as a wrong password); else a problem in rs (auth.provider_unknown,
 * auth.provider_unavailable, sso.*) or an aidc_err.
 */
int ldaplogin_run(struct req *rq, struct resp *rs, const char *provider, const char *username,
                  const char *password, bool *refused, char **jwt);

#endif
