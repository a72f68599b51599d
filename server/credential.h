/*
 * credential.h - the credential a request presents, read from its headers
 * without checking it: `Authorization: Bearer <token>` first, else the
 * session cookie. Pure text handling (no database, no keys), so it is
 * fuzzed on its own (tests/fuzz/fuzz_auth.c); server/auth.c checks what it
 * finds.
 */
#ifndef AIDC_CREDENTIAL_H
#define AIDC_CREDENTIAL_H

#define AUTH_COOKIE "aidc_session"

/* The value of the first cookie called name in a Cookie header value, or NULL (malloc'd). */
char *credential_cookie(const char *cookie_header, const char *name);
/* The session JWT in a Cookie header value, or NULL (malloc'd). */
char *credential_cookie_session(const char *cookie_header);

/*
 * The token of authorization (a Bearer header; may be NULL), else of the
 * session cookie in cookie (may be NULL): *token points into authorization
 * or is *cookie_tok (malloc'd, the caller frees it); NULL or "" when the
 * request is anonymous. Returns -1 when authorization names another scheme
 * than Bearer, else 0.
 */
int credential_from_headers(const char *authorization, const char *cookie, const char **token,
                            char **cookie_tok);

#endif
