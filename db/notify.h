/*
 * notify.h - notification preferences, the notifications outbox and its
 * delivery log (docs/notifications.md, migrations/0024_notifications.sql).
 *
 * Preferences are a user's own: every function takes the user's id and the
 * row-level security policy holds it to that row. Webhook secrets go in
 * (db_notify_prefs_put) but never come out to the API: the preferences read
 * shows "secret_set" instead. Only the notifier's claim reads them.
 */
#ifndef AIDC_DB_NOTIFY_H
#define AIDC_DB_NOTIFY_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

extern const struct db_stmt *const db_notify_stmts[];

/*
 * The user's preferences as the API shows them (new object: email, events,
 * projects, webhooks [{url, events, secret_set}], updated_at), the defaults
 * when the user saved none.
 */
int db_notify_prefs_get(struct db *db, const char *user_id, json_t **out);
/*
 * The first URL of webhooks (an array of {url, events[, secret]}) that has no
 * secret and is not one of the user's stored webhooks (whose secret it keeps):
 * a new copy in *url, or NULL when every webhook has one. 0 or an error.
 */
int db_notify_prefs_unsigned(struct db *db, const char *user_id, const json_t *webhooks,
                             char **url);
/*
 * Store the preferences (events, projects: arrays of strings; webhooks as
 * above, a missing secret kept from the stored webhook of the same URL) and
 * return them as db_notify_prefs_get does.
 */
int db_notify_prefs_put(struct db *db, const char *user_id, bool email, const json_t *events,
                        const json_t *projects, const json_t *webhooks, json_t **out);
/* The user's deliveries, newest first, keyed (created_at, id) after after/after_id. */
int db_notify_deliveries(struct db *db, const char *user_id, const char *after,
                         const char *after_id, int limit, struct db_rows *out);

/* One claimed delivery (the notifier's). */
struct db_notification {
    char *id;
    char *channel; /* "email" or "webhook" */
    char *target;  /* the webhook's URL; "" for e-mail */
    char *event;
    char *body;  /* the JSON document delivered: {id, event, created_at, data} */
    char *email; /* the user's address ("" when none) */
    char *username;
    char *user_id;
    char *secret;  /* the webhook's secret; NULL when the webhook was removed since */
    bool email_on; /* e-mail still on in the user's preferences */
    int attempts;  /* counting this one */
};
struct db_notifications {
    struct db_notification *v;
    size_t n;
};
/*
 * Claim up to limit due deliveries (SKIP LOCKED: replicas and rounds never
 * share one), counting an attempt each and leasing them for lease_s seconds:
 * one whose attempt never reports (a crash) is due again after its lease. No
 * user gets more than a quarter of limit, and none of skip_users (a PostgreSQL
 * array of user ids, "{...}"; NULL: none) any.
 */
int db_notify_claim(struct db *db, int limit, int lease_s, const char *skip_users,
                    struct db_notifications *out);
/* Release one claimed delivery's strings (the secret wiped). */
void db_notification_free(struct db_notification *n);
void db_notifications_free(struct db_notifications *all);
/*
 * Record an attempt's outcome: state "delivered", "failed" (no more
 * attempts) or "pending" (again in retry_s seconds); status the HTTP or SMTP
 * answer (0: none), error NULL on success.
 */
int db_notify_finish(struct db *db, const char *id, const char *state, long status,
                     const char *error, double retry_s);
/* budget.80 / budget.100 for the tenants and projects that crossed them this month. */
int db_notify_budgets(struct db *db);
/*
 * job.idle to the owners of running jobs the efficiency worker found idle and
 * nobody told yet (each told once per idle spell: idle_noticed_at is set).
 */
int db_notify_idle(struct db *db);
/* allocation.expiring for one allocation request (the janitor's notice). */
int db_notify_allocation(struct db *db, const char *request_id);
/* Forget deliveries that ended more than 30 days ago, and old budget marks. */
int db_notify_cleanup(struct db *db);

#endif
