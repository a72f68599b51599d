/* sessions.c - a user's login sessions (see sessions.h). */
#include "sessions.h"

#include "rowjson.h"

#include <stdio.h>

static const struct db_stmt st_record = {
    "session_record",
    "INSERT INTO sessions (jti, user_id, epoch, expires_at, source_ip, user_agent)"
    " VALUES ($1::uuid, $2::uuid, $3::int, to_timestamp($4::bigint),"
    "         nullif($5, '')::inet, $6)",
    6};

/* Live: not expired, not revoked, minted with the user's current epoch. */
#define LIVE                                                                                      \
    " s.expires_at > now()"                                                                       \
    " AND s.epoch = (SELECT session_epoch FROM users WHERE id = s.user_id)"                       \
    " AND NOT EXISTS (SELECT 1 FROM revoked_sessions r WHERE r.jti = s.jti)"

#define SESSION_COLS                                                                              \
    "s.jti AS id, s.created_at, s.expires_at, host(s.source_ip) AS source_ip, s.user_agent"

static const struct db_stmt st_list = {
    "session_list",
    "SELECT " SESSION_COLS ", coalesce(s.jti = $5::uuid, false) AS current,"
    " s.created_at::text || '|' || s.jti AS _cursor"
    " FROM sessions s WHERE s.user_id = $1::uuid AND" LIVE
    " AND ($2::timestamptz IS NULL OR (s.created_at, s.jti) < ($2::timestamptz, $3::uuid))"
    " ORDER BY s.created_at DESC, s.jti DESC LIMIT $4::int + 1",
    5};

static const struct db_stmt st_end = {
    "session_end",
    "WITH s AS (SELECT * FROM sessions s WHERE s.jti = $2::uuid AND s.user_id = $1::uuid AND" LIVE
    "),"
    " r AS (INSERT INTO revoked_sessions (jti, expires_at) SELECT jti, expires_at FROM s"
    "       ON CONFLICT (jti) DO NOTHING)"
    " SELECT " SESSION_COLS " FROM s",
    2};

const struct db_stmt *const db_sessions_stmts[] = {&st_record, &st_list, &st_end, NULL};

int db_session_record(struct db *db, const struct db_session_new *s)
{
    char epoch[24], expires[24];
    snprintf(epoch, sizeof epoch, "%ld", s->epoch);
    snprintf(expires, sizeof expires, "%lld", (long long)s->expires);
    const char *p[6] = {s->jti, s->user_id, epoch, expires, s->source_ip ? s->source_ip : "",
                        s->user_agent};
    return db_exec(db, &st_record, p);
}

int db_session_list(struct db *db, const char *user_id, const char *current_jti,
                    const char *after_ts, const char *after_id, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[5] = {user_id, after_ts, after_id, lim, current_jti};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

int db_session_end(struct db *db, const char *user_id, const char *jti, json_t **out)
{
    const char *p[2] = {user_id, jti};
    return rowjson_query_one(db, &st_end, p, out);
}
