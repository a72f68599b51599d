/*
 * oidcmeta.h - what an OpenID provider publishes, fetched with libcurl and
 * kept in the database: its discovery document (issuer checked against the
 * configured one, endpoints on https unless the issuer is on the loopback)
 * and its keys (JWKS); and the token request of the code flow.
 */
#ifndef AIDC_API_OIDCMETA_H
#define AIDC_API_OIDCMETA_H

#include "../db/idproviders.h"
#include "../lib/idtoken.h"

#include <jansson.h>

/* How long what a provider published is kept. */
#define OIDCMETA_TTL_S 3600

/*
 * p's discovery document, fetched when not kept or older than the TTL
 * (borrowed from p, which keeps it). 0; AIDC_EUNAVAIL when the provider
 * cannot be reached or answers something unusable (err says what).
 */
int oidcmeta_discovery(struct db *db, struct db_idp *p, const json_t **doc, char *err,
                       size_t errsz);
/*
 * p's keys parsed (free with idtoken_jwks_free): refetched when not kept,
 * older than the TTL, or when refetch is set (a key id missing: the provider
 * rotated). A refetch costs one request per sign-in at most, and an ID
 * token reaches aidc only from the provider's token endpoint, so nobody else
 * can make aidc fetch. Errors as oidcmeta_discovery.
 */
int oidcmeta_keys(struct db *db, struct db_idp *p, bool refetch, struct idtoken_keys **keys,
                  char *err, size_t errsz);

struct oidcmeta_tokens {
    char *id_token;
    char *access_token; /* may be NULL */
};
/*
 * Exchange code at the token endpoint (client_secret_basic, the PKCE
 * verifier). 0 with the tokens; AIDC_EUNAVAIL when unreachable;
 * AIDC_EFORBIDDEN when the provider refused (err has its error code).
 */
int oidcmeta_exchange(const struct db_idp *p, const char *secret, const char *code,
                      const char *redirect_uri, const char *verifier, struct oidcmeta_tokens *out,
                      char *err, size_t errsz);
void oidcmeta_tokens_free(struct oidcmeta_tokens *t);

/* s percent-encoded for a query or a form (RFC 3986 unreserved kept); malloc'd. */
char *oidcmeta_urlencode(const char *s);

#endif
