/*
 * sessions.h - a user's login sessions as its owner sees them (where and when
 * each began). Whether a session is valid is decided elsewhere (db/identity.h:
 * signature, expiry, revoked_sessions, session_epoch); ending one adds it to
 * revoked_sessions.
 */
#ifndef AIDC_DB_SESSIONS_H
#define AIDC_DB_SESSIONS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <time.h>

struct db_session_new {
    const char *jti;
    const char *user_id;
    long epoch;          /* the user's session_epoch the session was minted with */
    time_t expires;
    const char *source_ip;  /* "" or NULL: unknown */
    const char *user_agent; /* NULL: none sent */
};
int db_session_record(struct db *db, const struct db_session_new *s);
/*
 * The user's live sessions, newest first, after cursor (created_at|jti);
 * "current" marks current_jti (NULL: none is).
 */
int db_session_list(struct db *db, const char *user_id, const char *current_jti,
                    const char *after_ts, const char *after_id, int limit, struct db_rows *out);
/*
 * End one live session of the user: it is revoked at once. *out describes it
 * (created_at, source_ip, user_agent, expires_at); AIDC_ENOTFOUND when the
 * user has no such live session.
 */
int db_session_end(struct db *db, const char *user_id, const char *jti, json_t **out);

extern const struct db_stmt *const db_sessions_stmts[];

#endif
