/*
 * idproviders.h - identity providers people sign in with (platform admins
 * configure them) and the public list the sign-in page offers.
 * docs/identity.md has the settings of each kind.
 */
#ifndef AIDC_API_IDPROVIDERS_H
#define AIDC_API_IDPROVIDERS_H

#include "../server/request.h"

int api_idp_create(struct req *rq, struct resp *rs);
int api_idp_list(struct req *rq, struct resp *rs);
int api_idp_get(struct req *rq, struct resp *rs);
int api_idp_update(struct req *rq, struct resp *rs);
int api_idp_delete(struct req *rq, struct resp *rs);
/* GET /auth/providers (no auth): the enabled ones, with where each signs in. */
int api_idp_public(struct req *rq, struct resp *rs);

/* Whether url's host is this machine's loopback (http:// is allowed there only). */
bool api_idp_url_loopback(const char *url);

/* https://, or http:// on the loopback; nothing that could break out of a URL. */
bool api_idp_url_https_or_loopback(const char *url);

#endif
