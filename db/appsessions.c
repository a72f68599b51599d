/* appsessions.c - interactive sessions as the database keeps them (see appsessions.h). */
#include "appsessions.h"

#include "../lib/err.h"
#include "schedrows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOB_ENDED "('succeeded', 'failed', 'cancelled')"

/* the session as the API shows it, of the rows s (app_sessions) and j (its job) */
#define SESSION_COLS                                                                               \
    "s.id, t.slug AS tenant, p.slug AS project, j.username AS \"user\", s.app,"                    \
    " CASE WHEN s.end_reason IS NOT NULL OR j.state IN " JOB_ENDED " THEN 'ended'"                 \
    "      WHEN j.state = 'running' AND s.ready_at IS NOT NULL"                                    \
    "           AND s.endpoint_run = " RUN_KEY(                                                    \
        "j") " THEN 'ready'"                                                                       \
             "      WHEN j.state = 'running' THEN 'starting' ELSE 'queued' END AS state,"          \
             " j.id::text AS job, s.idle_minutes,"                                                 \
             " j.started_at + j.time_limit_minutes * interval '1 minute' AS expires_at,"           \
             " coalesce(s.end_reason, j.reason) AS reason, s.created_at, s.ready_at,"              \
             " s.last_activity_at, s.user_id::text AS _user"
#define SESSION_FROM                                                                               \
    " FROM app_sessions s JOIN jobs j ON j.id = s.job_id JOIN tenants t ON t.id = s.tenant_id"     \
    " JOIN projects p ON p.id = j.project_id"

static const struct db_stmt st_insert = {
    "appsession_insert",
    "INSERT INTO app_sessions (id, tenant_id, job_id, user_id, app, idle_minutes, secret)"
    " VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5, $6::int, $7) RETURNING id::text",
    7};
static const struct db_stmt st_get = {
    "appsession_get",
    "SELECT " SESSION_COLS SESSION_FROM " WHERE s.tenant_id = $1::uuid AND s.id = $2::uuid", 2};
static const struct db_stmt st_list = {
    "appsession_list",
    "SELECT * FROM (SELECT " SESSION_COLS
    ", s.created_at::text || '|' || s.id AS _cursor" SESSION_FROM
    " WHERE s.tenant_id = $1::uuid AND ($3::text IS NULL OR j.username = $3)"
    " AND ($4::timestamptz IS NULL OR (s.created_at, s.id) < ($4::timestamptz, $5::uuid))"
    " ORDER BY s.created_at DESC, s.id DESC) x"
    " WHERE $2::text IS NULL OR x.state = $2 LIMIT $6::int + 1",
    6};
static const struct db_stmt st_end = {
    "appsession_end",
    "UPDATE app_sessions SET end_reason = $2 WHERE id = $1::uuid AND end_reason IS NULL", 2};
static const struct db_stmt st_extend = {
    "appsession_extend",
    "WITH s AS (SELECT j.id, j.time_limit_minutes FROM app_sessions s JOIN jobs j ON j.id = "
    "s.job_id"
    "            WHERE s.tenant_id = $1::uuid AND s.id = $2::uuid AND s.end_reason IS NULL"
    "              AND j.state NOT IN " JOB_ENDED " FOR UPDATE OF j),"
    " u AS (UPDATE jobs j SET time_limit_minutes = s.time_limit_minutes + $3::int,"
    "         updated_at = now() FROM s"
    "       WHERE j.id = s.id AND s.time_limit_minutes + $3::int <= $4::int"
    "       RETURNING j.id, j.tenant_id, j.state),"
    " e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)"
    "       SELECT id, tenant_id, state, state, 'time limit extended by ' || $3 || ' minutes'"
    "       FROM u)"
    " SELECT s.time_limit_minutes, EXISTS (SELECT 1 FROM u),"
    /* a queued job's limit decides where it may run: the admitter reads it again (a pass
     * that only submits woke would keep the old one) */
    "  CASE WHEN EXISTS (SELECT 1 FROM u WHERE u.state = 'queued')"
    "       THEN pg_notify('aidc_jobs', 'extended') END FROM s",
    4};
static const struct db_stmt st_link = {
    "appsession_link",
    "INSERT INTO app_session_keys (hash, session_id, user_id, kind, expires_at)"
    " VALUES (decode($1, 'hex'), $2::uuid, $3::uuid, 'link', now() + $4::int * interval '1 "
    "second')",
    4};
/* the link is spent whatever follows: a link is good for one try */
static const struct db_stmt st_spend = {
    "appsession_spend",
    "WITH l AS (UPDATE app_session_keys k SET used_at = now()"
    "            WHERE k.hash = decode($1, 'hex') AND k.kind = 'link' AND k.used_at IS NULL"
    "              AND k.expires_at > now() RETURNING k.session_id, k.user_id),"
    " s AS (SELECT s.id, l.user_id, u.username, t.slug, s.user_id = l.user_id AS owner,"
    "         least(j.started_at + j.time_limit_minutes * interval '1 minute',"
    "               now() + $3::int * interval '1 second') AS until"
    "       FROM l JOIN app_sessions s ON s.id = l.session_id JOIN jobs j ON j.id = s.job_id"
    "       JOIN users u ON u.id = l.user_id JOIN tenants t ON t.id = s.tenant_id"
    "       WHERE s.end_reason IS NULL AND j.state NOT IN " JOB_ENDED " AND NOT u.disabled),"
    " c AS (INSERT INTO app_session_keys (hash, session_id, user_id, kind, expires_at)"
    "       SELECT decode($2, 'hex'), s.id, s.user_id, 'cookie', s.until FROM s RETURNING 1)"
    " SELECT s.id::text, s.user_id::text, s.username, s.slug, s.owner FROM s, c",
    3};
/* the owner, or a platform admin (audited when it enters: the relay) */
static const struct db_stmt st_admit = {
    "appsession_admit",
    "WITH k AS (SELECT k.session_id, k.user_id FROM app_session_keys k JOIN users u"
    "            ON u.id = k.user_id WHERE k.hash = decode($1, 'hex') AND k.kind = 'cookie'"
    "              AND k.expires_at > now() AND NOT u.disabled),"
    " s AS (SELECT s.id, s.app, s.endpoint_host, s.endpoint_port, s.secret, s.user_id,"
    "         s.ready_at IS NOT NULL AND s.endpoint_run = " RUN_KEY(
        "j") " AND j.state = 'running'"
             "           AS ready,"
             "         s.end_reason IS NULL AND j.state NOT IN " JOB_ENDED " AS live"
             "       FROM app_sessions s JOIN jobs j ON j.id = s.job_id WHERE s.id = $2::uuid),"
             " a AS (UPDATE app_sessions x SET last_activity_at = now() FROM k"
             "       WHERE x.id = k.session_id AND k.session_id = $2::uuid"
             "         AND x.last_activity_at < now() - interval '5 seconds' RETURNING 1)"
             " SELECT k.session_id = s.id, s.app, s.endpoint_host, s.endpoint_port, s.secret,"
             "  k.user_id::text, s.ready,"
             "  s.live AND (k.user_id = s.user_id OR EXISTS (SELECT 1 FROM user_roles r"
             "              WHERE r.user_id = k.user_id AND r.role = 'platform_admin'))"
             " FROM k JOIN s ON true",
    2};
static const struct db_stmt st_touch = {
    "appsession_touch",
    "UPDATE app_sessions SET last_activity_at = now()"
    " WHERE id = $1::uuid AND last_activity_at < now() - interval '5 seconds'",
    1};
static const struct db_stmt st_watch = {
    "appsession_watch",
    "SELECT s.id, s.job_id, s.tenant_id, s.app, " RUN_KEY(
        "j") ", j.state, j.backend_job_id,"
             " s.endpoint_run, s.endpoint_host, s.endpoint_port,"
             " s.ready_at IS NOT NULL AND s.endpoint_run = " RUN_KEY(
                 "j") ","
                      " CASE WHEN j.state = 'running' AND j.started_at IS NOT NULL"
                      "      THEN floor(extract(epoch FROM now() - j.started_at))::bigint ELSE -1 "
                      "END,"
                      " floor(extract(epoch FROM now() - s.last_activity_at))::bigint,"
                      " CASE WHEN j.state = 'running' AND j.started_at IS NOT NULL THEN "
                      "floor(extract(epoch FROM"
                      "   j.started_at + j.time_limit_minutes * interval '1 minute' - "
                      "now()))::bigint END,"
                      " s.idle_minutes, s.secret, cl.id, cl.name, cl.kind, cl.endpoint, "
                      "cl.credentials_ref,"
                      " cl.options::text, coalesce(j.reason, j.state), t.slug"
                      " FROM app_sessions s JOIN jobs j ON j.id = s.job_id JOIN tenants t ON t.id "
                      "= s.tenant_id"
                      " LEFT JOIN clusters cl ON cl.id = j.cluster_id"
                      " WHERE s.end_reason IS NULL ORDER BY s.created_at LIMIT $1::int",
    1};
enum {
    W_ID,
    W_JOB,
    W_TENANT,
    W_APP,
    W_RUN,
    W_STATE,
    W_BACKEND_ID,
    W_EP_RUN,
    W_EP_HOST,
    W_EP_PORT,
    W_READY,
    W_RUNNING,
    W_IDLE,
    W_EXPIRES,
    W_IDLE_MIN,
    W_SECRET,
    W_CLUSTER,
    W_JOB_REASON = W_CLUSTER + 6,
    W_TENANT_SLUG,
};
static const struct db_stmt st_endpoint = {
    "appsession_endpoint",
    "UPDATE app_sessions SET"
    " last_activity_at = CASE WHEN $5::bool AND (ready_at IS NULL OR endpoint_run IS DISTINCT FROM "
    "$2)"
    "                    THEN now() ELSE last_activity_at END,"
    " ready_at = CASE WHEN NOT $5::bool THEN NULL"
    "                 WHEN endpoint_run = $2 AND ready_at IS NOT NULL THEN ready_at ELSE now() END,"
    " endpoint_run = $2, endpoint_host = $3, endpoint_port = $4::int WHERE id = $1::uuid",
    5};
static const struct db_stmt st_keys_expire = {
    "appsession_keys_expire", "DELETE FROM app_session_keys WHERE expires_at < now()", 0};

const struct db_stmt *const db_appsessions_stmts[] = {
    &st_insert, &st_get,   &st_list,  &st_end,      &st_extend,      &st_link, &st_spend,
    &st_admit,  &st_touch, &st_watch, &st_endpoint, &st_keys_expire, NULL};

static int read_one(PGresult *r, struct db_appsession *out)
{
    memset(out, 0, sizeof *out);
    if (PQntuples(r) == 0)
        return AIDC_ENOTFOUND;
    const char *user = rowjson_get(r, 0, "_user");
    snprintf(out->user_id, sizeof out->user_id, "%s", user ? user : "");
    out->obj = rowjson_object(r, 0);
    if (!out->obj)
        return AIDC_EINTERNAL;
    snprintf(out->job_id, sizeof out->job_id, "%s",
             json_string_value(json_object_get(out->obj, "job")) ?: "");
    snprintf(out->state, sizeof out->state, "%s",
             json_string_value(json_object_get(out->obj, "state")) ?: "");
    return 0;
}

int db_appsession_get(struct db *db, const char *tenant_id, const char *id,
                      struct db_appsession *out)
{
    memset(out, 0, sizeof *out);
    const char *p[2] = {tenant_id, id};
    int e;
    PGresult *r = db_query(db, &st_get, p, &e);
    if (!r)
        return e;
    e = read_one(r, out);
    PQclear(r);
    return e;
}

int db_appsession_insert(struct db *db, const char *id, const char *tenant_id, const char *job_id,
                         const char *user_id, const char *app, int idle_minutes, const char *secret,
                         struct db_appsession *out)
{
    memset(out, 0, sizeof *out);
    char idle[16];
    snprintf(idle, sizeof idle, "%d", idle_minutes);
    const char *p[7] = {id, tenant_id, job_id, user_id, app, idle, secret};
    int e;
    PGresult *r = db_query(db, &st_insert, p, &e);
    if (!r)
        return e;
    bool made = PQntuples(r) == 1;
    PQclear(r);
    return made ? db_appsession_get(db, tenant_id, id, out) : AIDC_EINTERNAL;
}

void db_appsession_free(struct db_appsession *s)
{
    json_decref(s->obj);
    s->obj = NULL;
}

int db_appsession_list(struct db *db, const char *tenant_id, const char *state, const char *user,
                       const char *after_ts, const char *after_id, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[6] = {tenant_id, state, user, after_ts, after_id, lim};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

int db_appsession_end(struct db *db, const char *id, const char *reason)
{
    const char *p[2] = {id, reason};
    return db_exec(db, &st_end, p);
}

int db_appsession_extend(struct db *db, const char *tenant_id, const char *id, int minutes,
                         int max_total, int *limit)
{
    char m[16], mx[16];
    snprintf(m, sizeof m, "%d", minutes);
    snprintf(mx, sizeof mx, "%d", max_total);
    const char *p[4] = {tenant_id, id, m, mx};
    int e;
    PGresult *r = db_query(db, &st_extend, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    *limit = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
    bool done = PQgetvalue(r, 0, 1)[0] == 't';
    PQclear(r);
    return done ? 0 : AIDC_ECONFLICT;
}

int db_appsession_link(struct db *db, const char *id, const char *user_id, const char *hash_hex,
                       int ttl)
{
    char t[16];
    snprintf(t, sizeof t, "%d", ttl);
    const char *p[4] = {hash_hex, id, user_id, t};
    return db_exec(db, &st_link, p);
}

int db_appsession_spend_link(struct db *db, const char *link_hex, const char *cookie_hex,
                             int max_seconds, struct db_appsession_entry *out)
{
    memset(out, 0, sizeof *out);
    char mx[16];
    snprintf(mx, sizeof mx, "%d", max_seconds);
    const char *p[3] = {link_hex, cookie_hex, mx};
    int e;
    PGresult *r = db_query(db, &st_spend, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    snprintf(out->session_id, sizeof out->session_id, "%s", PQgetvalue(r, 0, 0));
    snprintf(out->user_id, sizeof out->user_id, "%s", PQgetvalue(r, 0, 1));
    snprintf(out->username, sizeof out->username, "%s", PQgetvalue(r, 0, 2));
    snprintf(out->tenant, sizeof out->tenant, "%s", PQgetvalue(r, 0, 3));
    out->owner = PQgetvalue(r, 0, 4)[0] == 't';
    PQclear(r);
    return 0;
}

int db_appsession_admit(struct db *db, const char *cookie_hex, const char *session_id,
                        struct db_appsession_target *out)
{
    memset(out, 0, sizeof *out);
    const char *p[2] = {cookie_hex, session_id};
    int e;
    PGresult *r = db_query(db, &st_admit, p, &e);
    if (!r)
        return e;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    if (PQgetvalue(r, 0, 0)[0] != 't') {
        PQclear(r);
        return AIDC_EFORBIDDEN;
    }
    if (PQgetvalue(r, 0, 7)[0] != 't') { /* ended, or the user may no longer enter */
        PQclear(r);
        return AIDC_ENOTFOUND;
    }
    snprintf(out->app, sizeof out->app, "%s", PQgetvalue(r, 0, 1));
    snprintf(out->host, sizeof out->host, "%s", PQgetvalue(r, 0, 2));
    out->port = PQgetisnull(r, 0, 3) ? 0 : (int)strtol(PQgetvalue(r, 0, 3), NULL, 10);
    snprintf(out->secret, sizeof out->secret, "%s", PQgetvalue(r, 0, 4));
    snprintf(out->user_id, sizeof out->user_id, "%s", PQgetvalue(r, 0, 5));
    out->ready = PQgetvalue(r, 0, 6)[0] == 't';
    PQclear(r);
    return 0;
}

int db_appsession_touch(struct db *db, const char *id)
{
    const char *p[1] = {id};
    return db_exec(db, &st_touch, p);
}

static void read_watch(struct rowreader *rd, void *row)
{
    struct db_appsession_watch *w = row;
    rowreader_uuid(rd, W_ID, w->id);
    rowreader_uuid(rd, W_JOB, w->job_id);
    rowreader_uuid(rd, W_TENANT, w->tenant_id);
    snprintf(w->app, sizeof w->app, "%s", rowreader_text0(rd, W_APP));
    w->run_key = rowreader_text0(rd, W_RUN);
    w->job_state = rowreader_text0(rd, W_STATE);
    w->backend_job_id = rowreader_text(rd, W_BACKEND_ID);
    w->endpoint_run = rowreader_text(rd, W_EP_RUN);
    w->endpoint_host = rowreader_text(rd, W_EP_HOST);
    w->endpoint_port = rowreader_int(rd, W_EP_PORT);
    w->ready = rowreader_bool(rd, W_READY);
    w->running_for = rowreader_ll(rd, W_RUNNING);
    w->idle_for = rowreader_ll(rd, W_IDLE);
    w->expires_in = rowreader_null(rd, W_EXPIRES) ? -1 : rowreader_ll(rd, W_EXPIRES);
    w->idle_minutes = rowreader_int(rd, W_IDLE_MIN);
    w->secret = rowreader_text0(rd, W_SECRET);
    rowreader_outbox_cluster(rd, W_CLUSTER, &w->cluster);
    w->job_reason = rowreader_text0(rd, W_JOB_REASON);
    w->tenant = rowreader_text0(rd, W_TENANT_SLUG);
}

int db_appsession_watch_list(struct db *db, int limit, struct db_appsession_watches *out)
{
    memset(out, 0, sizeof *out);
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[1] = {lim};
    int e;
    PGresult *r = db_query(db, &st_watch, p, &e);
    if (!r)
        return e;
    void *v = NULL;
    e = rowreader_all(r, sizeof *out->v, read_watch, &v, &out->n, &out->strings, st_watch.name);
    out->v = v;
    PQclear(r);
    return e;
}

void db_appsession_watches_free(struct db_appsession_watches *w)
{
    free(w->v);
    db_strings_free(w->strings);
    memset(w, 0, sizeof *w);
}

int db_appsession_set_endpoint(struct db *db, const char *id, const char *run, const char *host,
                               int port, bool ready)
{
    char pt[16];
    snprintf(pt, sizeof pt, "%d", port);
    const char *p[5] = {id, run, host, pt, ready ? "true" : "false"};
    return db_exec(db, &st_endpoint, p);
}

int db_appsession_keys_expire(struct db *db)
{
    return db_exec(db, &st_keys_expire, NULL);
}
