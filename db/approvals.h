/*
 * approvals.h - approval requests (dual control). Row-level security lets
 * only platform admins see or change them; every function runs in the
 * caller's request scope.
 *
 * An approval is returned as the object of API.md: its operation (method,
 * path, action, summary, body), who asked and who decided (usernames), the
 * reason, the times and the result. A pending request whose expires_at has
 * passed is shown as "expired" at once; the row itself is marked so by
 * db_approval_sweep (lazily, by the next write).
 */
#ifndef AIDC_DB_APPROVALS_H
#define AIDC_DB_APPROVALS_H

#include "db.h"
#include "rowjson.h"

#include <jansson.h>
#include <stdbool.h>

/* What is to be approved: an API request as it will be run. */
struct db_approval_new {
    const char *method, *path, *action, *summary;
    const char *body;         /* JSON text, or NULL for none */
    const char *requested_by; /* user id */
    int ttl_hours;
};

/* A locked approval, for deciding it. */
struct db_approval_row {
    json_t *obj;    /* the API object (new reference) */
    char state[16]; /* the stored state (pending, approved, rejected, expired) */
    bool overdue;   /* pending, but expires_at has passed */
    char requested_by[37];
    char *method, *path, *action;
    char *body; /* JSON text, or NULL */
};

void db_approval_row_free(struct db_approval_row *r);

/* Mark every pending request whose time has run out as expired. */
int db_approval_sweep(struct db *db);
/*
 * Record a pending request for n, or find the pending one for the same
 * method, path and body. *out is the approval; *created tells which.
 * AIDC_ERETRY when a concurrent request created it and it is not visible yet.
 */
int db_approval_insert(struct db *db, const struct db_approval_new *n, json_t **out, bool *created);
/* The approval id; AIDC_ENOTFOUND when there is none. */
int db_approval_get(struct db *db, const char *id, json_t **out);
/* Lock approval id for a decision (FOR UPDATE); AIDC_ENOTFOUND when none. */
int db_approval_lock(struct db *db, const char *id, struct db_approval_row *out);
/*
 * Decide a locked pending approval: state "approved" or "rejected", by user
 * id decided_by, with reason and result (JSON text; both may be NULL).
 * AIDC_ECONFLICT when it is no longer pending.
 */
int db_approval_decide(struct db *db, const char *id, const char *state, const char *decided_by,
                       const char *reason, const char *result, json_t **out);
/*
 * Up to limit+1 approvals, newest first, after the cursor (created_at text
 * and id, both NULL for the first page), in state (NULL: any). The state
 * filter sees overdue pending requests as expired.
 */
int db_approval_list(struct db *db, const char *state, const char *after_ts, const char *after_id,
                     int limit, struct db_rows *out);

/*
 * A savepoint around an approved operation: its handler may fail after
 * writing, and nothing of a failed operation may stay.
 */
int db_approval_savepoint(struct db *db);
int db_approval_savepoint_rollback(struct db *db);
int db_approval_savepoint_release(struct db *db);

extern const struct db_stmt *const db_approvals_stmts[];

#endif
