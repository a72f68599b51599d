/* notify.c - notification preferences and the outbox (see notify.h). */
#include "notify.h"

#include "../lib/err.h"
#include "../lib/xalloc.h"
#include "pgcol.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The preferences as shown: each webhook's secret replaced by secret_set. */
#define PREFS_VIEW                                                                                 \
    "SELECT x.email, to_jsonb(x.events) AS events, to_jsonb(x.projects) AS projects,"              \
    " (SELECT coalesce(jsonb_agg((w - 'secret') || jsonb_build_object('secret_set',"               \
    "                  coalesce(w->>'secret', '') <> '') ORDER BY i), '[]'::jsonb)"                \
    "    FROM jsonb_array_elements(x.webhooks) WITH ORDINALITY AS h(w, i)) AS webhooks,"           \
    " x.updated_at"

static const struct db_stmt st_get = {
    "notify_prefs_get",
    PREFS_VIEW " FROM (SELECT p.* FROM notification_prefs p WHERE p.user_id = $1::uuid"
               " UNION ALL SELECT $1::uuid, false, '{}', '{}', '[]'::jsonb, NULL"
               " WHERE NOT EXISTS (SELECT 1 FROM notification_prefs WHERE user_id = $1::uuid)) x",
    1};

/* a stored webhook of the user with the given URL (its secret is kept) */
#define STORED(url)                                                                                \
    "(SELECT o->'secret' FROM notification_prefs p, jsonb_array_elements(p.webhooks) o"            \
    "  WHERE p.user_id = $1::uuid AND o->>'url' = " url " AND coalesce(o->>'secret', '') <> ''"    \
    "  LIMIT 1)"

static const struct db_stmt st_unsigned = {
    "notify_prefs_unsigned",
    "SELECT w->>'url' FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS h(w, i)"
    " WHERE NOT w ? 'secret' AND " STORED("w->>'url'") " IS NULL ORDER BY i LIMIT 1",
    2};

static const struct db_stmt st_put = {
    "notify_prefs_put",
    "WITH hooks AS (SELECT coalesce(jsonb_agg(CASE WHEN w ? 'secret' THEN w"
    "                 ELSE w || jsonb_build_object('secret', " STORED(
        "w->>'url'") ") END"
                     "                 ORDER BY i), '[]'::jsonb) AS h"
                     "               FROM jsonb_array_elements($5::jsonb) WITH ORDINALITY AS a(w, "
                     "i)),"
                     " x AS (INSERT INTO notification_prefs AS p (user_id, email, events, "
                     "projects, webhooks)"
                     "       SELECT $1::uuid, $2::boolean,"
                     "              ARRAY(SELECT jsonb_array_elements_text($3::jsonb)),"
                     "              ARRAY(SELECT jsonb_array_elements_text($4::jsonb)), hooks.h "
                     "FROM hooks"
                     "       ON CONFLICT (user_id) DO UPDATE SET email = excluded.email, events = "
                     "excluded.events,"
                     "          projects = excluded.projects, webhooks = excluded.webhooks, "
                     "updated_at = now()"
                     "       RETURNING p.*) " PREFS_VIEW " FROM x",
    5};

static const struct db_stmt st_list = {
    "notify_deliveries",
    "SELECT n.id, n.event, n.channel, CASE WHEN n.channel = 'webhook' THEN n.target END AS url,"
    " n.state, n.attempts, n.last_status, n.last_error, n.created_at,"
    " CASE WHEN n.state = 'pending' THEN n.next_at END AS next_attempt_at, n.delivered_at,"
    " n.created_at::text || '|' || n.id AS _cursor"
    " FROM notifications n WHERE n.user_id = $1::uuid"
    " AND ($2::timestamptz IS NULL OR (n.created_at, n.id) < ($2::timestamptz, $3::uuid))"
    " ORDER BY n.created_at DESC, n.id DESC LIMIT $4::int + 1",
    4};

enum {
    C_ID,
    C_CHANNEL,
    C_TARGET,
    C_EVENT,
    C_BODY,
    C_EMAIL,
    C_USER,
    C_SECRET,
    C_EMAIL_ON,
    C_ATT,
    C_USER_ID
};
static const struct db_stmt st_claim = {
    "notify_claim",
    "WITH c AS (SELECT id FROM notifications"
    "           WHERE id IN (SELECT id FROM (SELECT id, next_at, row_number() OVER"
    "                          (PARTITION BY user_id ORDER BY next_at, id) AS k"
    "                          FROM notifications WHERE state = 'pending' AND next_at <= now()"
    "                            AND NOT user_id = ANY ($3::uuid[])) d"
    /* no user takes more than a quarter of one claim, none of $3 (users with enough in
       flight) any: one user's slow receivers do not crowd out everyone else's */
    "                        WHERE d.k <= greatest($1::int / 4, 1) ORDER BY d.next_at LIMIT "
    "$1::int)"
    "             AND state = 'pending' AND next_at <= now()"
    "           FOR UPDATE SKIP LOCKED),"
    " u AS (UPDATE notifications n SET attempts = n.attempts + 1,"
    "         next_at = now() + make_interval(secs => $2::int)"
    "       FROM c WHERE n.id = c.id RETURNING n.*)"
    " SELECT u.id, u.channel, u.target, u.event,"
    "   json_build_object('id', u.id, 'event', u.event, 'created_at', u.created_at,"
    "                     'data', u.payload)::text,"
    "   us.email, us.username,"
    "   (SELECT w->>'secret' FROM notification_prefs p, jsonb_array_elements(p.webhooks) w"
    "     WHERE p.user_id = u.user_id AND w->>'url' = u.target LIMIT 1),"
    "   coalesce((SELECT p.email FROM notification_prefs p WHERE p.user_id = u.user_id), false)"
    "     AND NOT us.disabled,"
    "   u.attempts, u.user_id"
    " FROM u JOIN users us ON us.id = u.user_id ORDER BY u.next_at, u.id",
    3};

static const struct db_stmt st_finish = {
    "notify_finish",
    "UPDATE notifications SET state = $2, last_status = nullif($3::int, 0),"
    " last_error = left($4, 1024), next_at = now() + make_interval(secs => $5::float8),"
    " delivered_at = CASE WHEN $2 = 'delivered' THEN now() END"
    " WHERE id = $1::uuid",
    5};

static const struct db_stmt st_budgets = {"notify_budgets", "SELECT aidc_notify_budgets()", 0};
/* job.idle, at most 100 a sweep (the rest next minute) */
static const struct db_stmt st_idle = {"notify_idle", "SELECT aidc_notify_idle_jobs(100)", 0};
static const struct db_stmt st_allocation = {"notify_allocation",
                                             "SELECT aidc_notify_allocation($1::uuid)", 1};
static const struct db_stmt st_cleanup = {
    "notify_cleanup",
    "WITH d AS (DELETE FROM notifications WHERE created_at < now() - interval '30 days'"
    "           AND state <> 'pending' RETURNING 1)"
    " DELETE FROM notification_budget_marks WHERE period < now() - interval '3 months'",
    0};

const struct db_stmt *const db_notify_stmts[] = {
    &st_get,    &st_unsigned, &st_put,        &st_list,    &st_claim,
    &st_finish, &st_budgets,  &st_idle, &st_allocation, &st_cleanup, NULL};

int db_notify_prefs_get(struct db *db, const char *user_id, json_t **out)
{
    const char *p[1] = {user_id};
    return rowjson_query_one(db, &st_get, p, out);
}

int db_notify_prefs_unsigned(struct db *db, const char *user_id, const json_t *webhooks, char **url)
{
    *url = NULL;
    char *w = json_dumps(webhooks, JSON_COMPACT);
    if (!w)
        return AIDC_EINTERNAL;
    const char *p[2] = {user_id, w};
    int e;
    PGresult *r = db_query(db, &st_unsigned, p, &e);
    free(w);
    if (!r)
        return e;
    if (PQntuples(r) > 0)
        *url = pgcol_text(r, 0, 0);
    PQclear(r);
    return 0;
}

int db_notify_prefs_put(struct db *db, const char *user_id, bool email, const json_t *events,
                        const json_t *projects, const json_t *webhooks, json_t **out)
{
    char *ev = json_dumps(events, JSON_COMPACT);
    char *pr = json_dumps(projects, JSON_COMPACT);
    char *wh = json_dumps(webhooks, JSON_COMPACT);
    int e = AIDC_EINTERNAL;
    if (ev && pr && wh) {
        const char *p[5] = {user_id, email ? "true" : "false", ev, pr, wh};
        e = rowjson_query_one(db, &st_put, p, out);
    }
    free(ev);
    free(pr);
    free(wh);
    return e;
}

int db_notify_deliveries(struct db *db, const char *user_id, const char *after,
                         const char *after_id, int limit, struct db_rows *out)
{
    char lim[16];
    snprintf(lim, sizeof lim, "%d", limit);
    const char *p[4] = {user_id, after, after_id, lim};
    return rowjson_query_rows(db, &st_list, p, false, out);
}

static int read_claimed(const PGresult *r, int row, struct db_notification *n)
{
    n->id = pgcol_text(r, row, C_ID);
    n->channel = pgcol_text(r, row, C_CHANNEL);
    n->target = pgcol_text(r, row, C_TARGET);
    n->event = pgcol_text(r, row, C_EVENT);
    n->body = pgcol_text(r, row, C_BODY);
    n->email = pgcol_text(r, row, C_EMAIL);
    n->username = pgcol_text(r, row, C_USER);
    n->secret = pgcol_text(r, row, C_SECRET);
    n->email_on = pgcol_bool(r, row, C_EMAIL_ON);
    n->user_id = pgcol_text(r, row, C_USER_ID);
    long long a = 0;
    if (pgcol_ll(r, row, C_ATT, 0, &a) != 0 || !n->id || !n->channel || !n->target || !n->event ||
        !n->body || !n->email || !n->username)
        return AIDC_EINTERNAL;
    n->attempts = (int)a;
    return 0;
}

int db_notify_claim(struct db *db, int limit, int lease_s, const char *skip_users,
                    struct db_notifications *out)
{
    memset(out, 0, sizeof *out);
    char lim[16], lease[16];
    snprintf(lim, sizeof lim, "%d", limit);
    snprintf(lease, sizeof lease, "%d", lease_s);
    const char *p[3] = {lim, lease, skip_users ? skip_users : "{}"};
    int e;
    PGresult *r = db_query(db, &st_claim, p, &e);
    if (!r)
        return e;
    int rows = PQntuples(r);
    if (rows > 0)
        out->v = xcalloc((size_t)rows, sizeof *out->v);
    for (int i = 0; i < rows && !e; i++) {
        e = read_claimed(r, i, &out->v[i]);
        out->n++;
    }
    PQclear(r);
    if (e)
        db_notifications_free(out);
    return e;
}

void db_notification_free(struct db_notification *n)
{
    free(n->id);
    free(n->channel);
    free(n->target);
    free(n->event);
    free(n->body);
    free(n->email);
    free(n->username);
    free(n->user_id);
    if (n->secret)
        explicit_bzero(n->secret, strlen(n->secret));
    free(n->secret);
    memset(n, 0, sizeof *n);
}

void db_notifications_free(struct db_notifications *all)
{
    for (size_t i = 0; i < all->n; i++)
        db_notification_free(&all->v[i]);
    free(all->v);
    memset(all, 0, sizeof *all);
}

int db_notify_finish(struct db *db, const char *id, const char *state, long status,
                     const char *error, double retry_s)
{
    char st[24], rt[32];
    snprintf(st, sizeof st, "%ld", status);
    snprintf(rt, sizeof rt, "%.3f", retry_s);
    const char *p[5] = {id, state, st, error, rt};
    return db_exec(db, &st_finish, p);
}

int db_notify_budgets(struct db *db)
{
    return db_exec(db, &st_budgets, NULL);
}

int db_notify_idle(struct db *db)
{
    return db_exec(db, &st_idle, NULL);
}

int db_notify_allocation(struct db *db, const char *request_id)
{
    const char *p[1] = {request_id};
    return db_exec(db, &st_allocation, p);
}

int db_notify_cleanup(struct db *db)
{
    return db_exec(db, &st_cleanup, NULL);
}
