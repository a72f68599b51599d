/*
 * appsessions.h - interactive sessions (migration 0019, docs/sessions.md) as
 * the database keeps them: the session beside its job, the keys that let a
 * browser into it (stored as SHA-256: db never sees a key itself), and what
 * the session watcher and the relay read and write.
 *
 * A session's state is derived, never stored: "ended" once it has an end
 * reason or its job ended, "ready" once its app answered for the job's
 * current run, "starting" while the job runs, else "queued".
 */
#ifndef AIDC_DB_APPSESSIONS_H
#define AIDC_DB_APPSESSIONS_H

#include "db.h"
#include "rowjson.h"
#include "sched.h"

#include <jansson.h>
#include <stdbool.h>

/* A session as the API shows it, and what the API decides with. */
struct db_appsession {
    json_t *obj; /* the session's fields; "job" holds its job's id (the API fills it) */
    char job_id[37];
    char user_id[37]; /* "" when the user is gone */
    char state[12];   /* queued, starting, ready, ended */
};

/* Insert session id of job_id (in the job's transaction); *out as db_appsession_get. */
int db_appsession_insert(struct db *db, const char *id, const char *tenant_id, const char *job_id,
                         const char *user_id, const char *app, int idle_minutes, const char *secret,
                         struct db_appsession *out);
/* Session id of tenant_id; AIDC_ENOTFOUND when none (or not visible). */
int db_appsession_get(struct db *db, const char *tenant_id, const char *id,
                      struct db_appsession *out);
void db_appsession_free(struct db_appsession *s);
/*
 * Up to limit+1 sessions, newest first, after the cursor (created_at text and
 * id); state (queued|starting|ready|ended) and user may be NULL.
 */
int db_appsession_list(struct db *db, const char *tenant_id, const char *state, const char *user,
                       const char *after_ts, const char *after_id, int limit, struct db_rows *out);
/* Record why a session ended (the first reason stays). */
int db_appsession_end(struct db *db, const char *id, const char *reason);
/*
 * Give a live session minutes more (its job's time limit), never past
 * max_total minutes in all: AIDC_ECONFLICT when it would (*limit receives the
 * job's limit now), AIDC_ENOTFOUND when no such live session.
 */
int db_appsession_extend(struct db *db, const char *tenant_id, const char *id, int minutes,
                         int max_total, int *limit);
/* A single-use link of user_id into session id, valid ttl seconds. */
int db_appsession_link(struct db *db, const char *id, const char *user_id, const char *hash_hex,
                       int ttl);

/* ---- the relay (system context) -------------------------------------------------- */

/*
 * Spend the link whose hash is link (unused, unexpired) and make a cookie key
 * (cookie, valid until the session's job can end at the latest, max_seconds
 * at most) for the same user and session. AIDC_ENOTFOUND: no such link, spent
 * or expired.
 */
struct db_appsession_entry {
    char session_id[37], user_id[37], username[64], tenant[64];
    bool owner; /* the user is the session's owner (else a platform admin) */
};
int db_appsession_spend_link(struct db *db, const char *link_hex, const char *cookie_hex,
                             int max_seconds, struct db_appsession_entry *out);

/* Where the relay sends a request of a cookie's holder. */
struct db_appsession_target {
    char app[8];
    char host[254];
    int port;
    char secret[49];
    char user_id[37];
    bool ready; /* the app answered for the current run, and the job runs */
};
/*
 * The session id as the holder of cookie may enter it: the cookie is the
 * session's, unexpired, its user still enabled and allowed (the owner, or a
 * platform admin), the session not ended. Marks the session active (at most
 * every few seconds). AIDC_ENOTFOUND: no such entry; AIDC_EFORBIDDEN: the
 * cookie is another session's.
 */
int db_appsession_admit(struct db *db, const char *cookie_hex, const char *session_id,
                        struct db_appsession_target *out);
/* Traffic went through session id (an open WebSocket): it is not idle. */
int db_appsession_touch(struct db *db, const char *id);

/* ---- the session watcher (system context) ---------------------------------------- */

/* A live session with what watching it needs. */
struct db_appsession_watch {
    char id[37], job_id[37], tenant_id[37], app[8];
    const char *run_key;        /* the job's current run */
    const char *job_state;      /* the job's */
    const char *backend_job_id; /* NULL: not delivered */
    const char *endpoint_run;   /* the run the endpoint is of, NULL: none yet */
    const char *endpoint_host;
    int endpoint_port;
    bool ready;
    long long running_for; /* seconds since the job's run started (-1: not running) */
    long long idle_for;    /* seconds since the last traffic */
    long long expires_in;  /* seconds until its time limit (started + limit) */
    int idle_minutes;
    const char *secret;
    const char *job_reason;           /* the job's reason, or its state */
    const char *tenant;               /* its tenant's slug */
    struct db_outbox_cluster cluster; /* id "" when not placed */
};
struct db_strings;
struct db_appsession_watches {
    struct db_appsession_watch *v;
    size_t n;
    struct db_strings *strings;
};
/* Every live session (no end reason, job not ended), at most limit. */
int db_appsession_watch_list(struct db *db, int limit, struct db_appsession_watches *out);
void db_appsession_watches_free(struct db_appsession_watches *w);
/* The app of session id answers at host:port for run (ready: it answered a probe). */
int db_appsession_set_endpoint(struct db *db, const char *id, const char *run, const char *host,
                               int port, bool ready);
/* Drop expired keys (the janitor). */
int db_appsession_keys_expire(struct db *db);

extern const struct db_stmt *const db_appsessions_stmts[];

#endif
