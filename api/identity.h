/* identity.h - login, logout, "who am I" and the caller's own sessions. */
#ifndef AIDC_API_IDENTITY_H
#define AIDC_API_IDENTITY_H

#include "../server/request.h"

int api_identity_login(struct req *rq, struct resp *rs);
int api_identity_logout(struct req *rq, struct resp *rs);
int api_identity_me(struct req *rq, struct resp *rs);
/* PUT /me/password: with the current password; ends every session, answers a new one. */
int api_identity_password(struct req *rq, struct resp *rs);
/* GET /me/sessions: the caller's live logins, newest first. */
int api_identity_sessions(struct req *rq, struct resp *rs);
/* DELETE /me/sessions/{id}: end one of them at once (the current one: a logout). */
int api_identity_session_end(struct req *rq, struct resp *rs);

/*
 * Sign user_id in (at session epoch): a session recorded for its owner's list,
 * its cookie set in rs, its id in the audit details; the JWT (malloc'd) in
 * *jwt when jwt is not NULL. For every way of signing in (api/extlogin.c).
 */
int api_identity_session_start(struct req *rq, struct resp *rs, const char *user_id, long epoch,
                               char **jwt);

/* Whether cookies get "Secure" (AIDC_COOKIE_SECURE; auto: unless on the loopback). */
bool api_identity_cookie_secure(const struct req *rq);

#endif
