/*
 * oidc.h - single sign-on with OpenID Connect: the authorization code flow
 * with PKCE (S256), state and nonce (docs/identity.md).
 *
 * GET /auth/oidc/{name}/login remembers a sign-in (state as its SHA-256,
 * nonce, PKCE verifier; 10 minutes, single use), binds it to the browser
 * with a cookie scoped to the callback, and sends the browser to the
 * provider. GET /auth/oidc/{name}/callback takes the sign-in back (a state
 * replayed, expired or from another browser ends there), exchanges the code
 * (client secret, verifier), verifies the ID token (lib/idtoken.h: keys of
 * the provider's JWKS, iss, aud, azp, exp, iat, nonce, at_hash), signs the
 * person in (api/extlogin.h) and sends the browser to the portal. Failures
 * end on the portal's sign-in page with the problem's code; every end is
 * audited as auth.login.
 *
 * The provider's discovery document and JWKS are kept in the database an
 * hour (every replica shares them); a key id not in the JWKS refetches it
 * once: that is how a key rotation is followed.
 */
#ifndef AIDC_API_OIDC_H
#define AIDC_API_OIDC_H

#include "../server/request.h"

int api_oidc_login(struct req *rq, struct resp *rs);
int api_oidc_callback(struct req *rq, struct resp *rs);

#endif
